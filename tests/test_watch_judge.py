"""Judging robots from their requests (manners.watch.judge, .clients, .versions, .verdicts), in
process: requests built by hand, or read from log lines as nginx and jetforce write them, and
robots.txt versions given as text.  Each test names a behaviour and fails without it.
"""

from __future__ import annotations

import pytest

from manners.watch.clients import Grouping, client_of, parse_group
from manners.watch.judge import EXAMPLES, SLOW_DOWN_WAIT, Judge, judge
from manners.watch.logs import FORMATS, LACKS, Hit
from manners.watch.verdicts import Report, RobotVerdict
from manners.watch.versions import Version, Versions, parse_when, shown_when, split_robots

pytestmark = pytest.mark.quick

T = 1795950837.0  # 29/Nov/2026:11:13:57 +0000

GEMINI_ROBOTS = """User-agent: *
Disallow: /private

User-agent: archiver
Disallow: /old

User-agent: indexer
Disallow: /noindex
"""  # lines: 2 is *'s Disallow, 5 archiver's, 8 indexer's


def gemini(client: str, path: str, when: float | None, status: str = "20", line: int = 0) -> Hit:
    return Hit(when, client, "gemini", "localhost", f"gemini://localhost{path}", status, None, None,
               "access.log", line)  # fmt: skip


def one(text: str = GEMINI_ROBOTS) -> Versions:
    return Versions([Version(text)])


def robot(report: Report, client: str, token: str | None = None) -> RobotVerdict:
    found = [r for r in report.robots if r.client == client and r.token == token]
    assert len(found) == 1, (client, token, [(r.client, r.token) for r in report.robots])
    return found[0]


def crawl(client: str, paths: list[str], start: float = T, every: float = 10.0, robots: bool = True,
          line: int = 1) -> list[Hit]:  # fmt: skip
    """A client's requests ``every`` seconds apart, robots.txt first when ``robots``."""
    asked = (["/robots.txt"] if robots else []) + paths
    return [gemini(client, p, start + i * every, line=line + i) for i, p in enumerate(asked)]


# --------------------------------------------------------------------------- rules


def test_a_robot_that_never_reads_robots_txt_and_fetches_a_disallowed_page_is_impolite() -> None:
    # 30 requests 2 s apart: more than a person makes in a minute, so a robot without robots.txt
    paths = [f"/page{i}" for i in range(25)] + ["/private/a", "/private/b", "/private/c", "/private/d", "/x"]
    report = judge(crawl("192.0.2.1", paths, every=2.0, robots=False), one())
    rude = robot(report, "192.0.2.1")
    assert rude.verdict == "impolite"
    assert rude.robot_because.startswith("it made more than 20 requests within 60 s")
    assert rude.robots_fetches == 0 and not rude.robots_first
    assert rude.charged == 4
    [breach] = [b for b in rude.breaches if b.rule == "disallowed"]
    assert (breach.reading, breach.line, breach.requests, breach.version) == ("*", 2, 4, "always")
    assert [(e.file, e.line) for e in breach.examples] == [("access.log", 26), ("access.log", 27),
                                                         ("access.log", 28)]  # fmt: skip
    assert len(breach.examples) == EXAMPLES  # a few, not every one
    assert rude.reasons == ("disallowed for * by line 2 of the robots.txt of always: 4 requests",)


def test_a_robot_that_reads_robots_txt_and_keeps_it_is_polite() -> None:
    report = judge(crawl("192.0.2.2", ["/", "/about", "/old/ok"]), one("User-agent: *\nDisallow: /private\n"))
    kept = robot(report, "192.0.2.2")
    assert kept.verdict == "polite" and kept.reasons == () and kept.charged == 0
    assert kept.robots_first and kept.robots_fetches == 1
    assert kept.robot_because == "it asked for robots.txt"
    assert kept.refetched is None  # its activity spans less than 24 h: not judged
    assert report.impolite == ()


def test_a_person_is_not_a_robot() -> None:
    hits = [gemini("198.51.100.9", p, T + i * 30) for i, p in enumerate(["/", "/private/x", "/about"])]
    report = judge(hits, one())
    assert report.robots == ()
    assert (report.others.clients, report.others.requests) == (1, 3)


def test_robots_txt_read_late_and_not_refetched_within_a_day_is_evidence() -> None:
    hits = [gemini("192.0.2.3", "/", T), gemini("192.0.2.3", "/robots.txt", T + 5)]
    hits += [gemini("192.0.2.3", "/about", T + 5 + 2 * 86400)]
    found = robot(judge(hits, one()), "192.0.2.3")
    assert not found.robots_first
    assert found.refetched is False and found.stale == 1
    assert found.verdict == "polite"  # evidence, not a charge


# --------------------------------------------------------------------------- versions


V1 = "User-agent: *\nDisallow: /private\n"
V2 = "User-agent: *\nDisallow: /private\nDisallow: /new\n"  # /new forbidden from T + 100, line 3


def edited() -> Versions:
    return Versions([Version(V1), Version(V2, T + 100)])


def test_a_robot_that_goes_on_after_an_edit_it_never_fetched_is_not_charged() -> None:
    hits = [gemini("192.0.2.4", "/robots.txt", T), gemini("192.0.2.4", "/new/a", T + 200),
            gemini("192.0.2.4", "/new/b", T + 210)]  # fmt: skip
    found = robot(judge(hits, edited()), "192.0.2.4")
    assert found.verdict == "polite" and found.charged == 0


def test_a_robot_that_fetched_the_edited_file_and_then_broke_it_is_charged() -> None:
    hits = [gemini("192.0.2.5", "/robots.txt", T), gemini("192.0.2.5", "/robots.txt", T + 150),
            gemini("192.0.2.5", "/new/a", T + 200, line=9)]  # fmt: skip
    found = robot(judge(hits, edited()), "192.0.2.5")
    assert found.verdict == "impolite" and found.charged == 1
    [breach] = found.breaches
    assert (breach.line, breach.version) == (3, shown_when(T + 100))
    assert breach.version == "2026-11-29T11:15:37Z"
    assert [e.line for e in breach.examples] == [9]


def test_a_fetch_older_than_a_day_no_longer_excuses() -> None:
    hits = [gemini("192.0.2.6", "/robots.txt", T), gemini("192.0.2.6", "/new/a", T + 86400 + 60)]
    found = robot(judge(hits, edited()), "192.0.2.6")
    assert found.charged == 1


def test_requests_before_any_dated_version_are_not_judged() -> None:
    versions = Versions([Version(V2, T + 100)])
    hits = [gemini("192.0.2.7", "/robots.txt", T), gemini("192.0.2.7", "/private/x", T + 50)]
    found = robot(judge(hits, versions), "192.0.2.7")
    assert found.charged == 0 and "not judged" in found.notes[0]


def test_versions_in_force_and_whens_parsed_strictly() -> None:
    versions = Versions([Version(V2, T + 100), Version(V1)])
    assert [v.text for v in versions.items] == [V1, V2]
    assert (versions.at(T), versions.at(T + 100), versions.at(T + 1e6)) == (0, 1, 1)
    assert parse_when("2026-11-29") == 1795910400.0
    assert parse_when("2026-11-29T12:13:57+01:00") == T
    assert split_robots("old@robots.txt@2026-11-29T11:13:57Z") == ("old@robots.txt", T)
    assert split_robots("robots.txt") == ("robots.txt", None)
    for bad in ("2026-11-29T11:13:57", "20261129", "2026-02-30", "yesterday"):
        with pytest.raises(ValueError, match=r"^'.*' is not a (real date or )?time: give one in RFC 3339"):
            parse_when(bad)
    with pytest.raises(ValueError, match=r"only one robots\.txt may be given without @WHEN"):
        Versions([Version(V1), Version(V2)])
    with pytest.raises(ValueError, match=r"in --robots 'r\.txt@soon', 'soon' is not a time"):
        split_robots("r.txt@soon")


# --------------------------------------------------------------------------- pacing


def test_a_robot_that_ignores_crawl_delay_is_charged_with_the_requests_closer_than_asked() -> None:
    rules = "User-agent: *\nCrawl-delay: 5\n"
    rude = crawl("192.0.2.10", [f"/p{i}" for i in range(6)], every=1.0)
    kept = crawl("192.0.2.11", [f"/p{i}" for i in range(6)], every=5.0)  # exactly as asked
    # 4 s then 6 s, as logged: each 4 s may be 4.99 s, and every two gaps keep 10 s
    close = [gemini("192.0.2.12", "/robots.txt", T - 10)]
    close += [gemini("192.0.2.12", f"/p{i}", T + at) for i, at in enumerate((0, 4, 10, 14, 20, 24))]
    steady_fast = crawl("192.0.2.13", [f"/p{i}" for i in range(6)], every=4.0)  # two gaps: 8 s < 10 s
    report = judge(rude + kept + close + steady_fast, one(rules))
    found = robot(report, "192.0.2.10")
    [pace] = found.pacing
    assert (pace.host, pace.asked, pace.shortest, pace.closer, pace.requests) == ("localhost", 5.0, 1.0, 5, 6)
    assert found.verdict == "impolite"
    assert found.reasons == ("closer than the 5 s asked at localhost: 5 requests",)
    assert [e.line for e in pace.examples] == [3, 4, 5]
    assert robot(report, "192.0.2.11").verdict == "polite"
    assert robot(report, "192.0.2.12").verdict == "polite"  # second-resolution times: benefit of the doubt
    assert robot(report, "192.0.2.13").pacing[0].closer == 4  # but a steady 4 s is faster than 5 s


def test_second_resolution_pacing_counts_requests_per_window() -> None:
    rules = "User-agent: *\nCrawl-delay: 1\n"
    burst = [gemini("192.0.2.15", "/robots.txt", T)]
    burst += [gemini("192.0.2.15", f"/p{i}", T + 5) for i in range(3)]
    steady = crawl("192.0.2.14", [f"/p{i}" for i in range(6)], every=1.0)
    report = judge(burst + steady, one(rules))
    assert robot(report, "192.0.2.15").pacing[0].closer == 1  # three in one logged second: two gaps < 2 s
    assert robot(report, "192.0.2.14").pacing[0].closer == 0  # a second apart, as logged: maybe 1 s


def test_a_robot_that_ignores_a_44_is_charged_and_one_that_waits_is_not() -> None:
    def told(client: str, wait: float) -> list[Hit]:
        return [gemini(client, "/robots.txt", T), gemini(client, "/a", T + 10, status="44", line=2),
                gemini(client, "/a", T + 10 + wait, line=3)]  # fmt: skip

    report = judge(told("192.0.2.20", 1.0) + told("192.0.2.21", SLOW_DOWN_WAIT + 5), one())
    rude = robot(report, "192.0.2.20")
    [slow] = rude.slow_downs
    assert (slow.told, slow.waited, slow.ignored, slow.wait) == (1, 0, 1, SLOW_DOWN_WAIT)
    assert [e.line for e in slow.examples] == [3]
    assert rude.verdict == "impolite" and "did not wait after being told to slow down" in rude.reasons[0]
    patient = robot(report, "192.0.2.21")
    assert patient.verdict == "polite" and patient.slow_downs[0].waited == 1
    assert any("44" in note and "no default" in note for note in report.notes)


def test_a_gopher_log_without_times_says_pacing_cannot_be_judged() -> None:
    def gopher(selector: str) -> Hit:
        return Hit(None, "192.0.2.30", "gopher", None, selector, None, None, None, "gopher.log", 1)

    rules = "User-agent: *\nDisallow: /secret\nCrawl-delay: 30\n"
    report = judge([gopher("/robots.txt"), gopher("/a"), gopher("/secret/x")], one(rules),
                   formats=[FORMATS["pygopherd"]])  # fmt: skip
    found = robot(report, "192.0.2.30")
    assert found.pacing == () and LACKS["when"] in found.notes
    assert found.charged == 1 and found.breaches[0].line == 2  # rules still judged: every version forbids
    assert any(note.startswith("pygopherd: no times") for note in report.notes)


# --------------------------------------------------------------------------- clients


def test_polite_clients_of_one_slash_24_grouped_with_24_64_are_one_client() -> None:
    hits = []
    for n in (1, 2, 3):
        hits += crawl(f"203.0.113.{n}", ["/", f"/p{n}"], start=T + n)
    grouped = judge(hits, one(), grouping=parse_group("24,64"))
    [block] = grouped.robots
    assert (block.client, block.requests, block.robots_fetches) == ("203.0.113.0/24", 9, 3)
    assert block.verdict == "polite"
    assert len(judge(hits, one()).robots) == 3  # by default each address alone


def test_ipv6_clients_are_grouped_by_their_slash_64() -> None:
    grouping = Grouping(24, 64)
    assert client_of("2001:db8::1", grouping) == client_of("2001:db8::2:1", grouping) == "2001:db8::/64"
    assert client_of("2001:db8:0:1::1", grouping) == "2001:db8:0:1::/64"
    hits = crawl("2001:db8::1", ["/"]) + crawl("2001:db8::2:1", ["/a"]) + crawl("2001:db8:0:1::1", ["/b"])
    assert sorted(r.client for r in judge(hits, one(), grouping=grouping).robots) == [
        "2001:db8:0:1::/64", "2001:db8::/64"]  # fmt: skip
    assert client_of("2001:db8::1") == "2001:db8::1"  # default: /128


def test_ipv4_mapped_ipv6_is_folded_into_ipv4() -> None:
    line = '::ffff:192.0.2.40 [29/Nov/2026:11:13:57 +0000] "gemini://localhost/robots.txt" 20 "text/plain" 49'
    hit = FORMATS["jetforce"].parse(line, "jetforce.log", 1)
    assert isinstance(hit, Hit)
    report = judge([hit, gemini("192.0.2.40", "/", T + 5)], one())
    [found] = report.robots
    assert (found.client, found.requests) == ("192.0.2.40", 2)


def test_web_product_tokens_split_one_address_into_robots_each_judged_by_its_own_group() -> None:
    rules = "User-agent: foobot\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n"
    lines = [
        ("Foobot/1.0 (+http://foo.example)", "/robots.txt"),
        ("Barbot/2.0", "/robots.txt"),
        ("Foobot/1.0 (+http://foo.example)", "/b/x"),  # allowed: foobot's group has no /b
        ("Barbot/2.0", "/a/x"),  # allowed: * has no /a
        ("Foobot/1.0 (+http://foo.example)", "/a/x"),  # foobot's line 2
        ("Barbot/2.0", "/b/x"),  # *'s line 5
    ]
    hits = []
    for n, (agent, path) in enumerate(lines, 1):
        text = f'192.0.2.50 - - [29/Nov/2026:11:14:{n:02} +0000] "GET {path} HTTP/1.1" 200 9 "-" "{agent}"'
        hit = FORMATS["combined"].parse(text, "access.log", n)
        assert isinstance(hit, Hit)
        hits.append(hit)
    report = judge(hits, one(rules))
    foo, bar = robot(report, "192.0.2.50", "foobot"), robot(report, "192.0.2.50", "barbot")
    assert [(b.reading, b.line, b.requests) for b in foo.breaches] == [("foobot", 2, 1)]
    assert [(b.reading, b.line, b.requests) for b in bar.breaches] == [("*", 5, 1)]
    assert [e.line for e in foo.breaches[0].examples] == [5]
    assert foo.verdict == bar.verdict == "impolite"


def test_group_option_is_checked() -> None:
    assert parse_group("24,64") == Grouping(24, 64)
    for bad in ("24", "33,64", "24,129", "a,b", "24,64,1"):
        with pytest.raises(ValueError, match=r"^--group takes V4BITS,V6BITS"):
            parse_group(bad)


# --------------------------------------------------------------------------- Gemini roles


def test_a_gemini_robot_that_kept_indexer_but_broke_archiver_is_polite_with_that_evidence() -> None:
    hits = crawl("192.0.2.60", ["/", "/old/a", "/old/b", "/about", "/old/c"])
    found = robot(judge(hits, one()), "192.0.2.60")
    assert found.verdict == "polite" and found.charged == 0
    assert (found.kept_roles, found.broke_roles) == (("indexer",), ("archiver",))
    assert found.roles == "kept indexer; broke archiver: line 5, 3 requests"
    [role] = found.breaches
    assert (role.rule, role.reading, role.line, role.requests) == ("role", "archiver", 5, 3)
    assert [e.line for e in role.examples] == [3, 4, 6]


def test_a_gemini_robot_that_breaks_the_star_rules_is_impolite_whatever_its_role() -> None:
    found = robot(judge(crawl("192.0.2.61", ["/private/x", "/noindex/y"]), one()), "192.0.2.61")
    assert found.verdict == "impolite" and found.charged == 1
    assert found.roles == "kept archiver; broke indexer: line 8, 1 request"


# --------------------------------------------------------------------------- the fold


def test_the_fold_reports_at_any_point_and_sorts_the_most_offending_first() -> None:
    folding = Judge(one())
    for hit in crawl("192.0.2.70", ["/private/a"]):
        folding.feed(hit)
    assert [r.verdict for r in folding.report().robots] == ["impolite"]
    for hit in crawl("192.0.2.71", ["/private/a", "/private/b", "/private/c"], start=T + 100):
        folding.feed(hit)
    for hit in crawl("192.0.2.72", ["/"], start=T + 200):
        folding.feed(hit)
    report = folding.report()
    assert [r.client for r in report.robots] == ["192.0.2.71", "192.0.2.70", "192.0.2.72"]
    assert [r.charged for r in report.robots] == [3, 1, 0]
