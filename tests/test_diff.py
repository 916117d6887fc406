"""``manners diff``: the verdicts an edit flips, the groups and rules it changes, and the command.

The flips are checked against an independent oracle, Google's C++ parser (fast-robotstxt),
asked about every URL and agent on both sides of edits made to real files of the web corpus
(a rule removed, a group added, an agent renamed); and the shortcut that skips robots whose
rules did not change is checked against asking every robot under every profile.  The command
runs as a real subprocess, against files, standard input, a real crawl's pages.jsonl (jetforce)
and a live robots.txt (nginx).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import robotstxt  # fast-robotstxt, a test dependency: its absence must fail, not skip

import manners
from corpus import WEB, binding_rewrite, rule_paths
from data_paths import SMALLNET
from manners.admin.diff import Asker, Diff, GroupSide, RuleChange, RuleSide, diff, group_changes
from manners.readers import sample_paths
from manners.robots import verdict
from manners.targets import as_read_by
from servers import jetforce, nginx
from test_cli import ENTRY
from test_cli import manners as run
from test_cli_json import agrees

OLD = """\
User-agent: *
Disallow: /private
Disallow: /tmp

User-agent: Googlebot
Allow: /
Disallow: /g

Virtual-agent: indexer
Disallow: /idx
"""
NEW = """\
User-agent: *
Disallow: /private
Allow: /tmp

User-agent: Googlebot-News
Allow: /
Disallow: /g

Virtual-agent: indexer
Disallow: /idx

User-agent: newbot
Disallow: /
"""


def cells(d: Diff) -> set[tuple[str, str, tuple[str, ...], str, bool]]:
    """Every flip robot by robot: (url, agent, roles, profile, allowed now)."""
    return {(url, agent, roles, profile, new.allowed) for url, agent, roles, profile, _, new in d.cells()}


# -- the pure part -------------------------------------------------------------------------------


def test_a_removed_rule_flips_exactly_what_it_decided() -> None:
    old = manners.parse("User-agent: *\nDisallow: /a\nDisallow: /b\n")
    new = manners.parse("User-agent: *\nDisallow: /b\n")
    d = diff(old, new, ["/a", "/a/x", "/b", "/c", "https://example.org/a?q"])
    assert cells(d) == {(u, "*", (), "rfc9309", True) for u in ("/a", "/a/x", "https://example.org/a?q")}
    flip = d.flips[0]
    assert (flip.old.allowed, flip.old.line, flip.old.rule) == (False, 2, "Disallow: /a")
    assert (flip.new.allowed, flip.new.line, flip.new.reason) == (
        True,
        None,
        "no rule for user-agent * matches",
    )
    assert d.flipped and d.counts[0].agent == "*" and (d.counts[0].urls, d.counts[0].allowed) == (3, 3)
    (group,) = d.groups
    assert group.change == "changed" and group.rules == (
        RuleChange("removed", RuleSide(2, "Disallow: /a"), None),
    )


def test_lines_that_moved_are_no_flip_and_no_change() -> None:
    old = manners.parse("User-agent: a\nDisallow: /x\nAllow: /x/y\n\nUser-agent: *\nDisallow: /z\n")
    new = manners.parse("# moved\nUser-agent: *\nDisallow: /z\n\nUser-agent: a\nAllow: /x/y\ndisallow: /x\n")
    d = diff(old, new, ["/x", "/x/y", "/z", "/"])
    assert not d.flipped and d.groups == () and d.agents == ("*", "a")
    assert [c.urls for c in d.counts] == [0, 0]


@pytest.mark.quick
def test_groups_and_rules_added_removed_changed_and_renamed() -> None:
    old = manners.parse(
        "Disallow: /pre\nUser-agent: *\nDisallow: /tmp\nDisallow: /same\n\n"
        "User-agent: Googlebot\nDisallow: /g\n\nUser-agent: gone\nDisallow: /gone\n"
    )
    new = manners.parse(
        "User-agent: *\nDisallow: /same\nAllow: /tmp\nDisallow: /more\n\n"
        "User-agent: Googlebot-News\nDisallow: /g\n\nUser-agent: newbot\nDisallow: /\n"
    )
    changes = group_changes(old, new, "rfc9309")
    assert [(g.change, g.old, g.new) for g in changes] == [
        ("removed", GroupSide((1, 1), (), ()), None),  # the rules before any User-agent line
        ("changed", GroupSide((2, 5), ("*",), ()), GroupSide((1, 5), ("*",), ())),
        ("changed", GroupSide((6, 8), ("Googlebot",), ()), GroupSide((6, 8), ("Googlebot-News",), ())),
        ("removed", GroupSide((9, 10), ("gone",), ()), None),
        ("added", None, GroupSide((9, 10), ("newbot",), ())),
    ]
    assert changes[0].rules == (RuleChange("removed", RuleSide(1, "Disallow: /pre"), None),)
    assert changes[1].rules == (
        RuleChange("changed", RuleSide(3, "Disallow: /tmp"), RuleSide(3, "Allow: /tmp")),
        RuleChange("added", None, RuleSide(4, "Disallow: /more")),
    )
    assert changes[2].rules == ()  # renamed: the same rules
    assert changes[3].rules == (RuleChange("removed", RuleSide(10, "Disallow: /gone"), None),)
    assert changes[4].rules == (RuleChange("added", None, RuleSide(10, "Disallow: /")),)


def test_agents_roles_and_profiles_asked() -> None:
    d = diff(manners.parse(OLD), manners.parse(NEW), ["gemini://h/idx", "/idx", "/tmp"], agents=["MyBot"])
    assert d.agents == ("*", "MyBot", "googlebot", "googlebot-news", "newbot")
    assert d.roles == (("indexer",), ("archiver",), ("researcher",), ("webproxy",))
    assert d.profiles == ("gemini", "rfc9309")
    found = cells(d)
    # Gemini reads Virtual-agent lines: only a robot acting as indexer got /idx before, and
    # googlebot-news, which had no group, now has its own (which does not disallow /idx)
    assert ("gemini://h/idx", "googlebot-news", ("indexer",), "gemini", True) in found
    assert ("gemini://h/idx", "*", ("indexer",), "gemini", True) not in found  # still the indexer group
    assert ("gemini://h/idx", "*", ("archiver",), "gemini", True) not in found
    # RFC 9309 reads no Virtual-agent line (it ends Googlebot's group): no role is asked
    assert {roles for _, _, roles, profile, _ in found if profile == "rfc9309"} == {()}
    assert ("/tmp", "*", (), "rfc9309", True) in found and ("/tmp", "MyBot", (), "rfc9309", True) in found
    # robots that decide alike on both sides share one flip
    (tmp,) = [f for f in d.flips if f.url == "/tmp" and f.new.line == 3]
    assert tmp.agents == (Asker("*", ()), Asker("MyBot", ()))
    # the roles given: one alone, several at once
    d = diff(
        manners.parse(OLD), manners.parse(NEW), ["gemini://h/x"], roles=["mirror", ("indexer", "archiver")]
    )
    assert d.roles[-2:] == (("mirror",), ("indexer", "archiver"))
    d = diff(manners.parse(OLD), manners.parse(NEW), ["/idx"], profiles=["gemini", "google"])
    assert d.profiles == ("gemini", "google") and d.profile == "gemini"


def test_without_urls_each_rule_s_own_path_of_both_files_is_asked() -> None:
    d = diff(manners.parse(OLD), manners.parse(NEW))
    assert d.urls == ("/private", "/tmp", "/", "/g", "/idx")
    assert {f.url for f in d.flips} == {"/private", "/tmp", "/", "/g", "/idx"}


def test_a_file_that_could_not_be_read_is_compared_as_robots_read_it() -> None:
    new = manners.parse("User-agent: *\nDisallow: /private\n")
    d = diff(verdict(False, "robots.txt is unreachable"), new, ["/private", "/open"])
    assert cells(d) == {("/open", a, (), "rfc9309", True) for a in ("*",)}
    assert d.flips[0].old.reason == "robots.txt is unreachable"
    d = diff(verdict(True, "robots.txt is missing"), new, ["/private", "/open"], agents=["mybot"])
    assert cells(d) == {("/private", a, (), "rfc9309", False) for a in ("*", "mybot")}


def test_a_bare_path_is_read_from_the_root_but_by_gopher_as_a_selector() -> None:
    old = manners.parse("User-agent: *\nDisallow: /1/secret\n")
    new = manners.parse("User-agent: *\n")
    assert [f.url for f in diff(old, new, ["1/secret"]).flips] == ["1/secret"]  # as /1/secret
    assert [f.url for f in diff(old, new, ["/1/secret"], profiles=["gopher"]).flips] == ["/1/secret"]
    assert diff(old, new, ["1/secret"], profiles=["gopher"]).flips == ()  # the selector 1/secret


# -- real files, edited -----------------------------------------------------------------------------

EOL = re.compile(r"(\r\n|\r|\n)")
TOKEN = re.compile(r"[a-z_-]+")  # names Google's parser and ours read alike


def sample() -> list[Path]:
    """40 files of the web corpus spread over it (by name), each with 3 to 200 rules and a
    named group: of every 10th file, those that qualify, taken evenly."""
    found = []
    for path in sorted(WEB.iterdir())[::10]:
        robots = manners.parse(text(path), "google", max_bytes=None)
        rules = sum(ln.kind in ("allow", "disallow") and bool(ln.value) for ln in robots.lines())
        if 3 <= rules <= 200 and any(g.names - {"*"} for g in robots.groups()):
            found.append(path)
    return found[:: len(found) // 40][:40]


def text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")


def edited(body: str, number: int, line: str | None) -> str:
    """``body`` with line ``number`` (as the engine counts lines) replaced, or removed (None)."""
    parts = EOL.split(body)  # line, end, line, end, ...
    lines = parts[0::2]
    ends = [*parts[1::2], ""]
    if line is None:
        del lines[number - 1], ends[number - 1]
    else:
        lines[number - 1] = line
    return "".join(a + b for a, b in zip(lines, ends, strict=True))


def edits(body: str) -> dict[str, str]:
    """The three edits of one file: a rule removed, a group added, an agent renamed."""
    robots = manners.parse(body, "google", max_bytes=None)
    rules = [ln for ln in robots.lines() if ln.kind in ("allow", "disallow") and ln.value]
    agents = [ln for ln in robots.lines() if ln.kind == "user-agent"]
    middle = rules[len(rules) // 2]
    assert middle.value in EOL.split(body)[2 * (middle.number - 1)]  # the engine's line numbers
    named = next((ln for ln in agents if ln.value != "*"), agents[0])
    assert named.value in EOL.split(body)[2 * (named.number - 1)]
    return {
        "rule removed": edited(body, middle.number, None),
        "group added": body.rstrip("\r\n") + f"\n\nUser-agent: mannersbot\nDisallow: {rules[0].value}\n",
        "agent renamed": edited(body, named.number, "User-agent: renamedbot"),
    }


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str, str, str]]:
    """(host, edit, old body, new body) for each file of the sample and each edit."""
    files = sample()
    assert len(files) == 40
    return [(path.name, name, text(path), new) for path in files for name, new in edits(text(path)).items()]


def test_every_flip_and_no_false_one_against_google_s_parser(pairs: list[tuple[str, str, str, str]]) -> None:
    matcher = robotstxt.RobotsMatcher()
    asked: dict[tuple[str, str, str], bool] = {}

    def google(body: str, agent: str, url: str) -> bool:
        key = (body, agent, url)
        if key not in asked:
            asked[key] = matcher.is_allowed(body, agent, url)
        return asked[key]

    flips_by_edit: dict[str, int] = {}
    for host, edit, old_body, new_body in pairs:
        old = manners.parse(old_body, "google", max_bytes=None)
        new = manners.parse(new_body, "google", max_bytes=None)
        paths = dict.fromkeys([*rule_paths(old), *rule_paths(new)])
        urls = [u for u in (f"https://{host}{p}" for p in paths) if binding_rewrite(u) == u]
        d = diff(old, new, urls, agents=["nobodybot"], profiles=["google"])
        agents = [a for a in d.agents if TOKEN.fullmatch(a)]
        assert {"nobodybot", "mannersbot" if edit == "group added" else "nobodybot"} <= set(agents)
        ours = {(url, agent, now) for url, agent, _, _, now in cells(d) if agent in agents}
        theirs = {
            (url, agent, now)
            for url in urls
            for agent in agents
            if google(old_body, agent, url) != (now := google(new_body, agent, url))
        }
        assert ours == theirs, (host, edit, ours ^ theirs)
        flips_by_edit[edit] = flips_by_edit.get(edit, 0) + len(theirs)
    # every kind of edit flipped something somewhere, so the agreement is not of empty sets
    assert all(flips_by_edit[e] >= 20 for e in ("rule removed", "group added", "agent renamed")), (
        flips_by_edit
    )


def every_robot_asked(old: manners.RobotsTxt, new: manners.RobotsTxt, urls: list[str], profile: str) -> None:
    """``diff`` against asking every robot, in every role, about every URL: the same flips,
    each with the same decisions on both sides."""
    d = diff(old, new, urls, agents=["nobodybot"], profiles=[profile])
    o, n = old.reread(profile), new.reread(profile)
    role_sets = [(), *d.roles] if manners.PROFILES[profile].virtual_agents else [()]
    every = set()
    for url in urls:
        target = as_read_by(url, profile)
        for agent in d.agents:
            for roles in role_sets:
                before, after = o.decide(target, agent, roles), n.decide(target, agent, roles)
                if before.allowed != after.allowed:
                    every.add((url, agent, roles, profile, after.allowed))
                    (flip,) = [f for f in d.flips if f.url == url and Asker(agent, roles) in f.agents]
                    assert (flip.old, flip.new) == (before, after)
    assert cells(d) == every


@pytest.mark.parametrize("profile", ["rfc9309", "gemini", "gemini-targeted", "gopher", "1994"])
def test_robots_left_out_could_not_have_flipped(pairs: list[tuple[str, str, str, str]], profile: str) -> None:
    """The shortcuts (robots whose rules are the same on both sides are not asked; robots
    placed alike are asked once; only about the URLs a changed rule matches) against asking
    every robot, in every role, about every URL."""
    for host, _, old_body, new_body in pairs:
        old, new = manners.parse(old_body), manners.parse(new_body)
        paths = list(dict.fromkeys([*rule_paths(old), *rule_paths(new)]))
        every_robot_asked(old, new, [f"gemini://{host}{p}" for p in paths[:20]] + paths[20:], profile)


def smallnet_edits(body: str) -> list[str]:
    """Edits of a small-net file: each rule removed in turn, a group added, each agent and
    virtual agent renamed (to another role, for a virtual agent)."""
    lines = manners.parse(body, "gemini", max_bytes=None).lines()
    out = [edited(body, ln.number, None) for ln in lines if ln.kind in ("allow", "disallow")]
    out.append(body.rstrip("\r\n") + "\n\nUser-agent: mannersbot\nDisallow: /private\n")
    out += [edited(body, ln.number, "User-agent: renamedbot") for ln in lines if ln.kind == "user-agent"]
    out += [edited(body, ln.number, "Virtual-agent: archiver") for ln in lines if ln.kind == "virtual-agent"]
    return out


@pytest.mark.parametrize("profile", ["gemini", "gemini-targeted", "gopher"])
def test_small_net_files_edited_against_asking_every_robot(profile: str) -> None:
    """Virtual agents, rules before any group, typed Gopher selectors: every small-net file
    of the corpus, edited every way, asked about gemini://, gopher:// (typed) URLs and paths."""
    files = sorted(SMALLNET.glob("*.txt"))
    assert len(files) >= 18
    for path in files:
        body = path.read_bytes().decode("utf-8", "replace")
        for new_body in smallnet_edits(body):
            old, new = manners.parse(body), manners.parse(new_body)
            paths = list(dict.fromkeys([*sample_paths(old), *sample_paths(new), "/", "/x"]))
            urls = [*paths]
            for p in paths:
                bare = p.lstrip("/")
                urls += [
                    f"gemini://h/{bare}",
                    f"gopher://h/1/{bare}",
                    f"gopher://h/0{bare}",
                    f"gopher://h/{bare}",
                ]
            every_robot_asked(old, new, urls, profile)


def test_google_s_index_html_allow_is_not_missed() -> None:
    """Google reads ``Allow: /dir/index.html`` as allowing ``/dir/`` too: removing it flips ``/dir/``,
    which the rule's own pattern does not match."""
    old = manners.parse("User-agent: *\nDisallow: /dir/\nAllow: /dir/index.html\n")
    new = manners.parse("User-agent: *\nDisallow: /dir/\n")
    d = diff(old, new, ["/dir/", "/dir/index.html", "/dir/other"], profiles=["google"])
    assert cells(d) == {("/dir/", "*", (), "google", False), ("/dir/index.html", "*", (), "google", False)}


# -- the command ------------------------------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    import os

    clean = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "MANNERS_CACHE")}
    return {**clean, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200"}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "old.txt").write_text(OLD)
    (tmp_path / "new.txt").write_text(NEW)
    return tmp_path / "old.txt", tmp_path / "new.txt"


def test_the_command_lists_flips_with_both_lines_and_counts(
    files: tuple[Path, Path], env: dict[str, str]
) -> None:
    old, new = map(str, files)
    p = run("diff", old, new, "/tmp", "/private", "/elsewhere", env=env)
    assert p.returncode == 1, p.stderr
    out = p.stdout
    assert "now allowed     /tmp  for *\n    old  disallowed  (line 3: Disallow: /tmp)\n" in out
    assert "    new  allowed     (line 3: Allow: /tmp)\n" in out
    assert "now disallowed  /private  for googlebot\n" in out
    assert "now disallowed  /elsewhere  for newbot\n" in out
    assert "~ old line 3: Disallow: /tmp  ->  new line 3: Allow: /tmp" in out
    assert re.search(r"^  newbot +1  \(0 now allowed, 1 now disallowed\)$", out, re.M)
    assert out.rstrip().endswith("3 of 3 URLs flip, for 4 of 4 agents")
    same = run("diff", old, old, "/tmp", env=env)
    assert same.returncode == 0 and "no verdict flips: 1 URL, 2 agents" in same.stdout
    # no URLs given: each rule's own path, in both files
    p = run("diff", old, new, env=env)
    assert p.returncode == 1 and "5 URLs (each rule's own path)" in p.stdout


def test_urls_from_a_file_stdin_and_roles(
    files: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    old, new = map(str, files)
    listed = tmp_path / "urls.txt"
    listed.write_text("gemini://h/idx\n\n/tmp  /g\n")
    data = json.loads(run("diff", old, new, "--urls", str(listed), "--json", env=env).stdout)
    assert data["urls"] == 3 and {f["url"] for f in data["flips"]} == {"gemini://h/idx", "/tmp", "/g"}
    agrees("manners diff", data)
    p = run("diff", old, new, "-", "--json", "--agent", "mybot", "--role", "mirror", env=env,
            stdin=b"gemini://h/idx\n")  # fmt: skip
    data = json.loads(p.stdout)
    assert p.returncode == 1 and data["urls"] == 1 and data["profiles"] == ["gemini"]
    assert ["mirror"] in data["roles"] and any(a["agent"] == "mybot" for a in data["agents"])
    who = [w for f in data["flips"] for w in f["agents"]]
    assert {"agent": "newbot", "roles": ["mirror"]} in who  # a role given is asked
    assert {"agent": "newbot", "roles": ["indexer"]} not in who  # /idx is closed to indexers on both sides
    assert {"agent": "googlebot-news", "roles": ["indexer"]} in who  # its own group now: Allow: /
    assert not any(w["agent"] == "mybot" for w in who)  # as '*' on both sides, still closed
    # a source on standard input
    p = run("diff", "-", new, "/tmp", env=env, stdin=OLD.encode())
    assert p.returncode == 1 and "standard input -> " in p.stdout


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real crawl of a capsule served by jetforce: its directory, with pages.jsonl."""
    root = tmp_path_factory.mktemp("difcrawl")
    capsule = root / "capsule"
    capsule.mkdir()
    (capsule / "robots.txt").write_text("User-agent: *\nDisallow: /private\n")
    (capsule / "index.gmi").write_text("# Home\n=> /a.gmi A\n=> /b.gmi B\n=> /private/x.gmi Private\n")
    (capsule / "a.gmi").write_text("# A\n")
    (capsule / "b.gmi").write_text("# B\n")
    out = root / "crawl"
    with jetforce(capsule) as port:
        p = subprocess.run(
            [str(ENTRY), "crawl", f"gemini://localhost:{port}/", "--agent", "testbot", "--out", str(out),
             "--cache", "memory", "--min-delay", "0", "--timeout", "5", "--no-warc"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return out


def test_urls_from_a_crawl_s_pages_jsonl(crawl: Path, env: dict[str, str], tmp_path: Path) -> None:
    pages = [json.loads(line)["url"] for line in (crawl / "pages.jsonl").read_text().splitlines()]
    assert len(pages) >= 4
    old = tmp_path / "old.txt"
    old.write_text("User-agent: *\nDisallow: /private\n")
    new = tmp_path / "new.txt"
    new.write_text("User-agent: *\nDisallow: /private\nDisallow: /a.gmi\n")
    for given in (crawl / "pages.jsonl", crawl):  # the file, or the crawl's directory
        data = json.loads(run("diff", str(old), str(new), "--urls", str(given), "--json", env=env).stdout)
        assert data["urls"] == len(set(pages))
        (flip,) = data["flips"]
        assert flip["url"].endswith("/a.gmi") and flip["profile"] == "gemini"
        reason = "the longest matching rule for user-agent * disallows it"
        assert flip["new"] == {"allowed": False, "line": 3, "rule": "Disallow: /a.gmi", "reason": reason}
        # under gemini every role is asked: each one flips (none has a group of its own)
        roles = {tuple(w["roles"]) for w in flip["agents"]}
        assert roles == {(), ("indexer",), ("archiver",), ("researcher",), ("webproxy",)}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """nginx serving OLD as robots.txt on one port, and 404 for robots.txt on another."""
    root = tmp_path_factory.mktemp("diffweb")
    (root / "robots.txt").write_text(OLD)
    blocks = ["location = /robots.txt { default_type text/plain; }", "location = /robots.txt { return 404; }"]
    with nginx(blocks, root) as (served, missing):
        yield f"http://127.0.0.1:{served}/", f"http://127.0.0.1:{missing}/"


def test_a_url_source_is_the_live_file(
    live: tuple[str, str], files: tuple[Path, Path], env: dict[str, str]
) -> None:
    served, missing = live
    old, new = map(str, files)
    p = run("diff", served, new, "/tmp", "--json", env=env)
    data = json.loads(p.stdout)
    assert (
        p.returncode == 1 and data["old"]["status"] == 200 and data["old"]["robots"] == served + "robots.txt"
    )
    agrees("manners diff", data)
    assert {f["url"] for f in data["flips"]} == {"/tmp"}
    assert run("diff", served, old, "/tmp", "/private", env=env).returncode == 0  # the live file is OLD
    # a missing robots.txt allows everything, and is compared as that (said first)
    p = run("diff", missing, new, "/private", "/open", "--cache", "memory", env=env)
    assert p.returncode == 1 and "is unavailable: HTTP 404; everything is allowed" in p.stderr
    assert "now disallowed  /private  for *\n" in p.stdout
    assert re.findall(r"^now \w+ +/open .*$", p.stdout, re.M) == ["now disallowed  /open  for newbot"]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["-", "-"], b"", "standard input cannot hold both OLD and NEW"),
        (["{old}", "-", "-"], b"", "standard input cannot hold both the URLs"),
        (["{old}", "/no/such/file"], None, "no such file"),
        (["{old}", "{dir}"], None, "is a directory"),
        (["{old}", "{new}", "example.org/x"], None, "is neither a URL nor a path"),
        (["{old}", "{new}", "ftp://example.org/x"], None, "unknown scheme 'ftp'"),
        (["ftp://example.org/", "{new}"], None, "unknown scheme 'ftp'"),
        (["{old}", "{new}", "--agent", "42"], None, "product token"),
        (["{old}", "{new}", "--urls", "/no/such/list"], None, "no such file '/no/such/list' (--urls)"),
        (["{old}", "{new}", "--urls", "{dir}"], None, "is a directory with no pages.jsonl"),
        (["{old}", "{new}", "--urls", "{bad}"], None, 'no JSON object with a "url"'),
        (["{old}", "{new}", "--urls", "{empty}"], None, "no URLs to compare in the list given"),
        (["{old}", "{new}", "--profile", "yahoo"], None, "invalid choice"),
        (["{old}"], None, "the following arguments are required: NEW"),
        (["{down}", "{new}", "--timeout", "5"], None, "could not be fetched: the connection was refused"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(
    args: list[str],
    stdin: bytes | None,
    message: str,
    files: tuple[Path, Path],
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    import socket

    (tmp_path / "bad.jsonl").write_text('{"url": "/a"}\n{"link": "/b"}\n')
    (tmp_path / "empty.txt").write_text("\n")
    (tmp_path / "dir").mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}/"
    names = {"old": files[0], "new": files[1], "dir": tmp_path / "dir", "bad": tmp_path / "bad.jsonl",
             "empty": tmp_path / "empty.txt", "down": down}  # fmt: skip
    p = run("diff", *(a.format(**names) for a in args), env=env, stdin=stdin)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    said = [ln for ln in p.stderr.splitlines() if not ln.startswith(("usage:", " "))]  # argparse's usage
    assert len(said) == 1 and p.stdout == ""


def test_text_from_the_files_is_escaped(tmp_path: Path, env: dict[str, str]) -> None:
    old = tmp_path / "old.txt"
    old.write_bytes(b"User-agent: *\nDisallow: /\x1b]0;pwned\x07\nDisallow: /\xff\n")
    new = tmp_path / "new.txt"
    new.write_bytes(b"User-agent: *\n")
    p = run("diff", str(old), str(new), env=env)
    assert p.returncode == 1 and "\x1b" not in p.stdout and "\x07" not in p.stdout
    assert "- old line 2: Disallow: /\\x1b]0;pwned\\x07" in p.stdout and "Disallow: /\\xff" in p.stdout
    data = json.loads(run("diff", str(old), str(new), "--json", env=env).stdout)
    agrees("manners diff", data)
    assert data["groups"][0]["rules"][1]["old"]["rule"] == "Disallow: /\\xff"
    assert (
        data["groups"][0]["rules"][0]["old"]["rule"] == "Disallow: /\x1b]0;pwned\x07"
    )  # exact, as JSON escapes


# -- issue 31: the google profile against fast-robotstxt, and groups split in two ----------------


def google_flips(old_body: str, new_body: str, urls: list[str]) -> set[str]:
    """The URLs whose verdict for '*' flips, as fast-robotstxt 1.1.0 answers."""
    matcher = robotstxt.RobotsMatcher()
    return {u for u in urls if matcher.is_allowed(old_body, "*", u) != matcher.is_allowed(new_body, "*", u)}


@pytest.mark.parametrize("rule", ["/café", "/caf%c3%a9"])
def test_google_samples_a_rule_s_own_path_as_it_matches_it(rule: str) -> None:
    """Without URLs, each rule's own path is asked spelled as the google profile spells the
    rule (Google's robots.cc compares a URL as given: a raw '/café' is not the '/caf%C3%A9'
    that ``Disallow: /café`` matches), so removing the rule flips it, as fast-robotstxt says."""
    old_body, new_body = f"User-agent: *\nDisallow: {rule}\nDisallow: /x\n", "User-agent: *\nDisallow: /x\n"
    d = diff(manners.parse(old_body), manners.parse(new_body), profiles=["google"])
    assert d.urls == ("/caf%C3%A9", "/x")
    assert {f.url for f in d.flips} == {"/caf%C3%A9"}
    assert google_flips(old_body, new_body, [f"https://h{u}" for u in d.urls]) == {"https://h/caf%C3%A9"}
    assert d.notes == ()  # fast-robotstxt reads every URL asked as the google profile does
    # other profiles sample it as written: RFC 9309 encodes it itself
    assert diff(manners.parse(old_body), manners.parse(new_body)).urls[0] == rule


SPELLED = [
    # (old rule, URL asked): the google profile (robots.cc) and fast-robotstxt 1.1.0 answer apart
    ("/~user", "https://h/%7Euser", "escape"),
    ("/%7Euser", "https://h/~user", "escaped-rule"),
    ("/café", "https://h/café", "non-ascii"),
    ("/page?", "https://h/page?", "empty-query"),
]


@pytest.mark.parametrize(("rule", "url", "why"), SPELLED)
def test_where_google_s_robots_cc_and_fast_robotstxt_differ_diff_says_so(
    rule: str, url: str, why: str
) -> None:
    """``/%7Euser`` against ``/~user``, a raw ``/café`` and a trailing empty ``?``: the google
    profile keeps Google's robots.cc reading (its conformance suite, which fast-robotstxt
    fails, expects ``%62%61%7A`` not to be ``baz`` and a raw ``ツ`` not to match), so diff
    answers as robots.cc does, and says, naming the URL or rule, that the binding would not."""
    from manners.admin.diff import SPELLINGS

    old_body, new_body = f"User-agent: *\nDisallow: {rule}\n", "User-agent: *\n"
    d = diff(manners.parse(old_body), manners.parse(new_body), [url], profiles=["google"])
    ours = {f.url for f in d.flips}
    assert ours != google_flips(old_body, new_body, [url])  # the difference is real
    # robots.cc compares as given: the rule flips exactly the URL spelled as it is
    assert ours == ({url} if why == "empty-query" else set())
    (note,) = d.notes
    assert note.startswith(f"under google, {SPELLINGS[why]}: ")
    assert note.endswith("old line 2: Disallow: /%7Euser" if why == "escaped-rule" else url)
    # the same URLs under rfc9309: no note (the notes are about the google profile's reading)
    assert diff(manners.parse(old_body), manners.parse(new_body), [url]).notes == ()


def test_the_command_prints_where_google_s_parser_would_answer_otherwise(
    tmp_path: Path, env: dict[str, str]
) -> None:
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text("User-agent: *\nDisallow: /%7Euser\nDisallow: /café\nDisallow: /page?\n")
    new.write_text("User-agent: *\n")
    urls = ["https://h/~user", "https://h/café", "https://h/page?"]
    p = run("diff", str(old), str(new), *urls, "--profile", "google", env=env)
    assert p.returncode == 1, p.stderr
    notes = [ln for ln in p.stdout.splitlines() if ln.startswith("note: under google, ")]
    assert len(notes) == 3 and "https://h/caf\\xc3\\xa9" not in p.stdout
    assert any(n.endswith(": https://h/café") and "octets beyond ASCII" in n for n in notes)
    data = json.loads(run("diff", str(old), str(new), *urls, "--profile", "google", "--json", env=env).stdout)
    agrees("manners diff", data)
    assert data["notes"] == [n.removeprefix("note: ") for n in notes]


SPLIT_OLD = "User-agent: *\nDisallow: /a\nDisallow: /b\n\nUser-agent: bot\nDisallow: /c\n"
SPLIT_NEW = "User-agent: *\nDisallow: /a\n\nUser-agent: bot\nDisallow: /c\n\nUser-agent: *\nDisallow: /b\n"


@pytest.mark.parametrize("profile", ["rfc9309", "google", "gemini", "gemini-targeted", "gopher"])
def test_one_group_split_in_two_for_the_same_agent_is_no_change(profile: str) -> None:
    """Every profile but 1994's combines the groups for the same agents, so splitting one
    ``User-agent: *`` group in two changes nothing, and diff says so (as Google's parser
    answers: the same for every URL)."""
    d = diff(manners.parse(SPLIT_OLD), manners.parse(SPLIT_NEW), agents=["x"], profiles=[profile])
    assert d.groups == () and d.flips == ()
    assert google_flips(SPLIT_OLD, SPLIT_NEW, [f"https://h{u}" for u in ("/a", "/b", "/c", "/")]) == set()
    # a real change in a split group: only it is shown, with each part's lines
    added = SPLIT_NEW + "Disallow: /d\n"
    (change,) = diff(manners.parse(SPLIT_OLD), manners.parse(added), profiles=[profile]).groups
    assert change.old == GroupSide((1, 4), ("*",), ())
    assert change.new == GroupSide((1, 9), ("*",), (), ((1, 3), (7, 9)))
    assert change.rules == (RuleChange("added", None, RuleSide(9, "Disallow: /d")),)


def test_a_group_for_two_agents_split_in_one_for_each_is_no_change() -> None:
    old = manners.parse("User-agent: a\nUser-agent: b\nDisallow: /x\n")
    new = manners.parse("User-agent: a\nDisallow: /x\n\nUser-agent: b\nDisallow: /x\n")
    assert diff(old, new).groups == ()
    # a group with no rules for an agent that had none is a change: it no longer obeys '*'
    old = manners.parse("User-agent: *\nDisallow: /x\n")
    new = manners.parse("User-agent: *\nDisallow: /x\n\nUser-agent: a\n")
    assert [g.change for g in diff(old, new).groups] == ["added"]


def test_under_1994_the_second_record_is_not_read_so_a_split_is_a_change() -> None:
    d = diff(manners.parse(SPLIT_OLD), manners.parse(SPLIT_NEW), ["/b"], profiles=["1994"])
    assert [f.url for f in d.flips] == ["/b"] and len(d.groups) == 2


def test_the_command_shows_no_change_for_a_split_and_the_parts_of_a_changed_one(
    tmp_path: Path, env: dict[str, str]
) -> None:
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text(SPLIT_OLD)
    new.write_text(SPLIT_NEW)
    p = run("diff", str(old), str(new), env=env)
    assert p.returncode == 0 and "no group or rule changed" in p.stdout and " - old line" not in p.stdout
    new.write_text(SPLIT_NEW + "Disallow: /d\n")
    p = run("diff", str(old), str(new), env=env)
    shown = "  changed  User-agent: *  (old lines 1-4, new lines 1-3 and 7-9)\n"
    assert shown + "      + new line 9: Disallow: /d\n" in p.stdout
    data = json.loads(run("diff", str(old), str(new), "--json", env=env).stdout)
    agrees("manners diff", data)
    assert data["groups"][0]["new"]["parts"] == [[1, 3], [7, 9]] and data["groups"][0]["old"]["parts"] == []
