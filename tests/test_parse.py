"""The line grammar, fields, diagnostics and limits common to every profile."""

from __future__ import annotations

import datetime as dt
import random
import time

import pytest

import manners

pytestmark = pytest.mark.quick

FILE = "User-agent: *\nDisallow: /private\nAllow: /private/ok\n"


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_line_ends(eol: str) -> None:
    robots = manners.parse(FILE.replace("\n", eol).encode())
    d = robots.decide("/private/x")
    assert (d.allowed, d.line, d.rule) == (False, 2, "Disallow: /private")
    assert robots.decide("/private/ok").line == 3


def test_bom_is_skipped_and_reported() -> None:
    robots = manners.parse(b"\xef\xbb\xbf" + FILE.encode())
    assert not robots.allowed("/private")
    assert [d.code for d in robots.diagnostics] == ["bom"]
    assert not manners.parse("\ufeff" + FILE).allowed("/private")


def test_comments_case_and_whitespace() -> None:
    text = "# head\n  uSeR-aGeNt :  FooBot   # who\n\tDISALLOW\t:\t/Private  # why\n"
    robots = manners.parse(text)
    assert not robots.allowed("/Private/x", "foobot")
    assert robots.allowed("/private/x", "foobot")  # values keep their case
    assert robots.decide("/Private", "FOOBOT").rule == "Disallow: /Private"


def test_googles_forgiven_mistakes() -> None:
    robots = manners.parse(
        "useragent FooBot\ndissallow /a\nDisallowed: /b\nuser agent: BarBot\ndisallow: /c\n"
    )
    assert not robots.allowed("/a", "FooBot")
    assert not robots.allowed("/b", "FooBot")
    assert not robots.allowed("/c", "BarBot")
    assert robots.allowed("/c", "FooBot")
    codes = [d.code for d in robots.diagnostics]
    assert codes.count("missing-colon") == 2
    assert codes.count("typo") == 4


def test_groups_merge_and_agents_share_groups() -> None:
    text = (
        "User-agent: a\nDisallow: /x\n\nUser-agent: b\nUser-agent: c\nDisallow: /y\n"
        "Crawl-delay: 2\nUser-agent: d\nDisallow: /z\n\nUser-agent: A\nDisallow: /w\n"
    )
    robots = manners.parse(text)
    assert not robots.allowed("/x", "a") and not robots.allowed("/w", "a")
    assert not robots.allowed("/y", "b") and not robots.allowed("/y", "c")
    assert robots.allowed("/z", "c")  # "d" starts a new group after the rules
    assert [g.names for g in robots.groups()] == [{"a"}, {"b", "c"}, {"d"}, {"a"}]
    assert [g.lines for g in robots.groups()][:2] == [(1, 3), (4, 7)]


def test_unknown_fields_never_end_a_group() -> None:
    robots = manners.parse("User-agent: a\nFoo: bar\nUser-agent: b\nDisallow: /\n")
    assert not robots.allowed("/x", "a")


@pytest.mark.parametrize("field", ["Crawl-delay: 60", "crawl-delay 60", "Request-rate: 1/60", "Check: 60"])
def test_crawl_delay_request_rate_and_check_end_an_agent_run(field: str) -> None:
    """Issue 10 item 2: 'User-agent: A / Crawl-delay / User-agent: B / ...' is two groups (as
    urllib.robotparser, Protego and the file's author read it), except under google."""
    text = f"User-agent: slurp\n{field}\nUser-agent: *\nCrawl-delay: 1\nDisallow: /cgi-bin/\n"
    for profile in ("rfc9309", "gemini", "gemini-targeted", "gopher"):
        robots = manners.parse(text, profile)
        assert robots.crawl_delay("otherbot") == 1.0
        assert robots.allowed("/x", "otherbot") and not robots.allowed("/cgi-bin/x", "otherbot")
        assert robots.allowed("/cgi-bin/x", "slurp")  # slurp's group has no rules
        assert robots.request_rate("otherbot") is None
    assert [g.lines for g in manners.parse(text).groups()] == [(1, 2), (3, 5)]
    google = manners.parse(text, "google")  # Google groups by rules only: one group
    assert not google.allowed("/cgi-bin/x", "slurp")
    assert [g.lines for g in google.groups("google")] == [(1, 5)]


def test_rules_before_any_agent_are_ignored_on_the_web() -> None:
    robots = manners.parse("Disallow: /\nUser-agent: a\nDisallow: /a\n")
    assert robots.allowed("/x", "b") and robots.allowed("/x", "a")
    assert "rule-outside-group" in {d.code for d in robots.diagnostics}


def test_agent_is_a_product_token() -> None:
    robots = manners.parse("User-agent: Googlebot/2.1 (+http://www.google.com/bot.html)\nDisallow: /\n")
    assert not robots.allowed("/x", "googlebot")
    assert not robots.allowed("/x", "Googlebot/2.1")  # the caller's product token is googlebot
    assert "agent-token" in {d.code for d in robots.diagnostics}
    google = manners.parse(
        "User-agent: Googlebot/2.1 (+http://www.google.com/bot.html)\nDisallow: /\n", "google"
    )  # Google: the caller passes a token
    assert google.allowed("/x", "Googlebot/2.1") and not google.allowed("/x", "googlebot")


@pytest.mark.parametrize(
    "agent", ["mybot/1.0 (+http://x)", " mybot ", "MyBot", "mybot;compatible", "mybot(x)", "mybot\t2"]
)
@pytest.mark.parametrize("profile", ["rfc9309", "gemini", "gemini-targeted", "gopher", "1994"])
def test_a_full_user_agent_header_names_its_product_token(agent: str, profile: str) -> None:
    """Issue 10 item 1: every Scrapy user passes the whole header."""
    robots = manners.parse("User-agent: mybot\nDisallow: /\n\nUser-agent: *\nDisallow: /cgi-bin\n", profile)
    target = {"gemini": "gemini://h/a", "gopher": "gopher://h/0/a"}.get(profile.split("-")[0], "http://h/a")
    assert not robots.allowed(target, agent)
    assert robots.decide(target, agent).line == 2


@pytest.mark.parametrize("profile", ["rfc9309", "gemini", "gopher", "1994", "google"])
def test_a_name_that_is_no_token_matches_no_named_group(profile: str) -> None:
    """AB42bot (digits) names no group, as Google's parser and its suite have it: '*' decides."""
    robots = manners.parse("User-agent: AB42bot\nDisallow: /\n\nUser-agent: *\nAllow: /\n", profile)
    assert robots.allowed("/a", "AB42bot")
    assert robots.allowed("/a", "42")
    if profile != "1994":  # 1994 compares the record's whole name, "ab42bot"
        assert not robots.allowed("/a", "AB")  # the file's line names the token "ab"


def test_longest_match_and_allow_on_ties() -> None:
    robots = manners.parse("User-agent: *\nDisallow: /a\nAllow: /a\nDisallow: /ab\nAllow: /*c\n")
    assert robots.allowed("/a")
    assert not robots.allowed("/ab")
    assert robots.allowed("/abc")  # "/*c" (3 octets) ties "/ab" and is an Allow
    assert robots.decide("/abc").rule == "Allow: /*c"


def test_wildcards_and_anchor() -> None:
    robots = manners.parse("User-agent: *\nDisallow: /*.php$\nDisallow: /fish*\nDisallow: /a$b\n")
    assert not robots.allowed("/index.php")
    assert robots.allowed("/index.php?x=1")
    assert not robots.allowed("/fishheads")
    assert not robots.allowed("/a$b")  # "$" inside a pattern is a literal
    assert robots.allowed("/ab")


def test_empty_rules_match_nothing() -> None:
    robots = manners.parse("User-agent: *\nDisallow:\nAllow:\n")
    assert robots.allowed("/")
    assert robots.decide("/").line is None


def test_rfc9309_normalisation() -> None:
    robots = manners.parse("User-agent: *\nDisallow: /caf\u00e9\nDisallow: /%7euser\nDisallow: /a%2fb\n")
    assert not robots.allowed("http://x/caf%C3%A9")
    assert not robots.allowed("http://x/caf\u00e9/menu")
    assert not robots.allowed("http://x/~user")
    assert not robots.allowed("http://x/a%2Fb")
    assert robots.allowed("http://x/a/b")  # a reserved character stays %-encoded
    star = manners.parse("User-agent: *\nDisallow: /file-%2A.html\nDisallow: /foo-%24\n")
    assert not star.allowed("https://www.example.com/file-*.html")
    assert not star.allowed("https://www.example.com/foo-$")
    assert star.allowed("https://www.example.com/file-x.html")


def test_query_counts_and_fragment_does_not() -> None:
    robots = manners.parse("User-agent: *\nDisallow: /*?sort=\n")
    assert not robots.allowed("http://x/list?sort=asc#top")
    assert robots.allowed("http://x/list#?sort=")


def test_robots_txt_is_always_allowed_except_to_google() -> None:
    text = "User-agent: *\nDisallow: /\n"
    assert manners.parse(text).allowed("http://x/robots.txt")
    assert not manners.parse(text).allowed("http://x/robots.txt?x")
    assert not manners.parse(text, profile="google").allowed("http://x/robots.txt")


def test_google_takes_the_url_as_given_and_knows_index_html() -> None:
    robots = manners.parse("User-agent: *\nAllow: /dir/index.html\nDisallow: /\n", profile="google")
    assert robots.allowed("http://x/dir/")
    assert not robots.allowed("http://x/dir/other")
    assert (
        manners.parse("User-agent: *\nAllow: /dir/index.html\nDisallow: /\n").allowed("http://x/dir/")
        is False
    )
    encoded = manners.parse("User-agent: *\nDisallow: /caf\u00e9\n", profile="google")
    assert not encoded.allowed("http://x/caf%C3%A9")
    assert encoded.allowed("http://x/caf\u00e9")


def test_fields() -> None:
    text = (
        "User-agent: *\nCrawl-delay: 2.5\nRequest-rate: 3/1m\nCheck: 3600\nDisallow: /x\n"
        "User-agent: slow\nCrawl-delay: 10\nCrawl-delay: 20\n"
        "Request-rate: 1/5\nRequest-rate: 1/10s\nDisallow:\n"
        "Sitemap: https://x/a.xml\nsitemap: https://x/b.xml\nSite-map: https://x/a.xml\n"
    )
    robots = manners.parse(text)
    assert robots.crawl_delay() == 2.5
    assert robots.request_rate() == (3, 60.0)
    assert robots.check_interval() == 3600
    assert robots.crawl_delay("slow") == 20
    assert robots.request_rate("slow") == (1, 10.0)
    assert robots.check_interval("slow") is None
    assert robots.sitemaps == ["https://x/a.xml", "https://x/b.xml"]


@pytest.mark.parametrize(
    ("value", "window"),
    [
        ("1/10s 1820-1940", (dt.time(18, 20), dt.time(19, 40))),
        ("1/10 0600-0845", (dt.time(6, 0), dt.time(8, 45))),
        ("1/10 600 - 845", (dt.time(6, 0), dt.time(8, 45))),
        ("1/10", (None, None)),
    ],
)
def test_a_request_rate_keeps_its_window(value: str, window: tuple[dt.time | None, dt.time | None]) -> None:
    """Protego reads (1, 10) and the window of ``1/10s 1820-1940``; so does manners, and says
    nothing is wrong with it."""
    robots = manners.parse(f"User-agent: *\nRequest-rate: {value}\n")
    rate = robots.request_rate()
    assert rate == (1, 10.0) and (rate.requests, rate.seconds) == (1, 10.0)
    assert (rate.start_time, rate.end_time) == window
    assert not robots.diagnostics


def test_the_request_rate_in_force_depends_on_the_time_of_day() -> None:
    robots = manners.parse("User-agent: *\nRequest-rate: 1/60s 2300-0559\nRequest-rate: 1/5s\n")
    assert robots.request_rate() == (1, 60.0)  # the slowest of all
    assert robots.request_rate(at=dt.time(2, 0)) == (1, 60.0)  # past midnight, inside
    assert robots.request_rate(at=dt.time(12, 0)) == (1, 5.0)
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert robots.request_rate(at=dt.datetime(2026, 1, 1, 1, 30, tzinfo=plus_two)) == (1, 60.0)  # 23:30 UTC
    assert manners.asked_spacing(robots, at=dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)) == 5.0
    with pytest.raises(TypeError, match="datetime or a time of day"):
        robots.request_rate(at=12)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["1/5 2400-0100", "1/5 0160-0200", "1/5 0100", "1/5 1-2", "1/5 0100-0200x"])
def test_a_bad_window_is_a_bad_request_rate(bad: str) -> None:
    robots = manners.parse(f"User-agent: *\nRequest-rate: {bad}\n")
    assert robots.request_rate() is None
    assert "bad-request-rate" in {d.code for d in robots.diagnostics}


@pytest.mark.parametrize("profile", ["google", "rfc9309", "gemini", "gopher", "1994"])
def test_a_line_is_read_up_to_its_first_nul(profile: str) -> None:
    """Google's robots.cc reads a line as a C string: `Disallow: /a\\0` disallows /a, and so
    `Disallow: /a\\0b` does; every profile reads it so, and lint says something is wrong."""
    for body in (b"User-agent: *\nDisallow: /a\x00\n", b"User-agent: *\r\nDisallow: /a\x00b\r\nAllow: /c\n"):
        robots = manners.parse(body, profile=profile)
        target = "gopher://h/1/a" if profile == "gopher" else "/a"
        assert not robots.allowed(target)
        assert robots.decide(target).line == 2
        assert any(d.severity != "info" for d in robots.diagnostics)


@pytest.mark.parametrize("bad", ["soon", "-1", "nan", "inf", "1e999"])
def test_bad_crawl_delay_is_ignored_and_reported(bad: str) -> None:
    robots = manners.parse(f"User-agent: *\nCrawl-delay: {bad}\n")
    assert robots.crawl_delay() is None
    assert [(d.line, d.code) for d in robots.diagnostics] == [(2, "bad-crawl-delay")]


@pytest.mark.parametrize("bad", ["fast", "0/5", "1/", "/10", "1/10y"])
def test_bad_request_rate(bad: str) -> None:
    robots = manners.parse(f"User-agent: *\nRequest-rate: {bad}\n")
    assert robots.request_rate() is None
    assert "bad-request-rate" in {d.code for d in robots.diagnostics}


def test_max_bytes_drops_the_partial_line_and_says_so() -> None:
    text = "User-agent: *\nDisallow: /a\nAllow: /abcdef\n"
    cut = text.index("Allow") + 8  # inside "Allow: /abcdef"
    robots = manners.parse(text.encode(), max_bytes=cut)
    assert not robots.allowed("/ab")  # half an Allow would have allowed it
    assert [(ln.number, ln.value) for ln in robots.lines()] == [(1, "*"), (2, "/a")]
    assert [d.code for d in robots.diagnostics] == ["truncated"]
    assert manners.parse(text, max_bytes=cut).lines() == robots.lines()


def test_long_lines_are_cut_as_google_does() -> None:
    value = "/" + "a" * 20_000
    robots = manners.parse(f"User-agent: *\nDisallow: {value}\n", profile="google", max_bytes=None)
    kept = 16_663 - len("Disallow: ")
    assert not robots.allowed("http://x" + value[:kept])
    assert not robots.allowed("http://x" + value[:kept] + "zzz")
    assert robots.allowed("http://x" + value[: kept - 1])
    assert "long-line" in {d.code for d in robots.diagnostics}


def test_non_utf8_bytes_are_matched_as_escapes() -> None:
    robots = manners.parse(b"User-agent: *\nDisallow: /caf\xe9\n", profile="google")
    assert not robots.allowed("http://x/caf%E9")
    assert "non-utf8" in {d.code for d in robots.diagnostics}


def test_html_served_as_robots_txt() -> None:
    page = b"<!DOCTYPE html>\n<html><head><title>Not found</title></head><body>Disallow: /</body></html>"
    robots = manners.parse(page)
    assert robots.allowed("/anything")
    assert "html" in {d.code for d in robots.diagnostics}
    assert any(d.severity == "error" for d in robots.diagnostics)


def test_binary_served_as_robots_txt() -> None:
    robots = manners.parse(bytes(range(256)) * 8)
    assert robots.allowed("/x")
    assert "binary" in {d.code for d in robots.diagnostics}


SOFT_404 = b"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>404 Not Found</title>
  <link rel="stylesheet" href="/style.css">
</head>
<body>
  <header><nav><a href="/">Home</a> | <a href="/about">About</a></nav></header>
  <main>
    <h1>Page not found</h1>
    <p>Sorry: the page you asked for is not here.</p>
    <p>Try the <a href="/search">search</a> page.</p>
  </main>
  <footer>Copyright 2026</footer>
</body>
</html>
"""


def test_a_soft_404_page_is_one_error() -> None:
    """Issue 10: "an HTML page, not a robots.txt", not an error and 17 warnings."""
    found = manners.parse(SOFT_404).diagnostics
    assert [(d.line, d.severity, d.code) for d in found] == [(1, "error", "html")]
    assert "HTML page, not a robots.txt" in found[0].message


@pytest.mark.parametrize("seed", range(20))
def test_random_binary_is_binary_not_html(seed: int) -> None:
    data = random.Random(seed).randbytes(2000)
    assert [(d.severity, d.code) for d in manners.parse(data).diagnostics] == [("error", "binary")]


def test_a_control_character_in_a_real_file_is_a_warning_not_binary() -> None:
    found = manners.parse(b"User-agent: *\nDisallow: /\x1b]0;TITLE\x07\n").diagnostics
    assert [(d.line, d.code) for d in found] == [(2, "control-character")]


def test_library_inputs_get_clear_errors() -> None:
    """Issue 10, "Library inputs": never an unrelated traceback."""
    robots = manners.parse("User-agent: *\nDisallow: /private\n")
    with pytest.raises(TypeError, match="target must be a URL or a path"):
        robots.allowed(b"/private")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="target must be a URL or a path"):
        robots.decide(b"/private")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="agent must be a str"):
        robots.allowed("/private", agent=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="agent must be a str"):
        robots.crawl_delay(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="roles must be names"):
        robots.allowed("/private", roles=[None])  # type: ignore[list-item]
    for target in ("example.org/x", "private", "", "*"):
        with pytest.raises(ValueError, match="neither a URL"):
            robots.allowed(target)
        with pytest.raises(ValueError, match="neither a URL"):
            manners.parse("").allowed(target)  # no rule needed to answer: still an error
    assert manners.parse("", "gopher").allowed("about.txt")  # a Gopher target is a raw selector
    for bad in (0, -1):
        with pytest.raises(ValueError, match="max_bytes"):
            manners.parse("", max_bytes=bad)
    for name in ("RFC9309", "Gemini", "GEMINI-TARGETED", "Google"):
        assert manners.parse("", profile=name).profile is manners.PROFILES[name.lower()]
    assert not manners.parse("User-agent: *\nDisallow: /\n", "RFC9309").allowed("/x")
    assert robots.crawl_delay(profile="Gemini") is None


def test_bad_arguments_get_clear_errors() -> None:
    for _ in range(2):  # parse() remembers the names it has looked up, never a bad one
        with pytest.raises(ValueError, match="unknown profile 'web'"):
            manners.parse("", profile="web")
        with pytest.raises(TypeError, match="profile must be a name"):
            manners.parse("", profile=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes or str"):
        manners.parse(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_bytes"):
        manners.parse("", max_bytes=-1)


# Complexity guards, not speed measurements: a backtracking matcher or an uncapped
# parser takes minutes here; these bounds are two orders of magnitude above ours.


@pytest.mark.serial  # a time limit
def test_many_stars_against_a_long_path_is_linear() -> None:
    robots = manners.parse("User-agent: *\nDisallow: /" + "*a" * 400 + "*b\n")
    path = "/" + "a" * 20_000
    start = time.perf_counter()
    assert robots.allowed(path)
    assert robots.allowed(path)
    assert not robots.allowed(path + "b")
    assert time.perf_counter() - start < 0.1


@pytest.mark.serial  # a time limit
def test_twenty_megabytes_parse_within_the_cap() -> None:
    body = b"User-agent: *\n" + b"Disallow: /x\n" * 1_600_000
    start = time.perf_counter()
    robots = manners.parse(body)
    assert not robots.allowed("/x")
    assert robots.diagnostics[0].code == "truncated"
    assert time.perf_counter() - start < 2
