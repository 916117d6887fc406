"""manners.robotparser against the standard library's documentation of urllib.robotparser.

Every method the documentation lists is tested here, with ``read()`` against nginx on
loopback; the cases where RFC 9309 answers otherwise than urllib's first-match reading are
tested for RFC 9309's answer (docs/robotparser.md lists them).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import urllib.robotparser
from collections.abc import Iterator
from pathlib import Path

import pytest

from manners import __version__, robotparser
from servers import Hit, free_port, nginx, timed_log

RobotFileParser = robotparser.RobotFileParser


def parsed(text: str) -> robotparser.RobotFileParser:
    parser = RobotFileParser()
    parser.parse(text.splitlines(keepends=True))
    return parser


# -- the same API ---------------------------------------------------------------------------


def test_it_has_everything_urllib_robotparser_has() -> None:
    assert set(urllib.robotparser.__all__) <= set(dir(robotparser))
    assert robotparser.RequestRate is urllib.robotparser.RequestRate
    ours, theirs = robotparser.RobotFileParser, urllib.robotparser.RobotFileParser
    for name, method in inspect.getmembers(theirs, inspect.isfunction):
        if name.startswith("_") and name != "__str__":
            continue
        assert hasattr(ours, name), name
        wanted = list(inspect.signature(method).parameters)
        assert list(inspect.signature(getattr(ours, name)).parameters)[: len(wanted)] == wanted, name
    parser = RobotFileParser("https://example.org/robots.txt")
    assert (parser.url, parser.host, parser.path) == (
        "https://example.org/robots.txt",
        "example.org",
        "/robots.txt",
    )
    assert (parser.allow_all, parser.disallow_all) == (False, False)


def test_can_fetch_is_false_and_mtime_zero_before_any_read_or_parse() -> None:
    parser = RobotFileParser("https://example.org/robots.txt")
    assert parser.mtime() == 0
    assert not parser.can_fetch("mybot", "https://example.org/")
    assert parser.crawl_delay("mybot") is None
    assert parser.request_rate("mybot") is None
    assert parser.site_maps() is None
    assert str(parser) == ""


def test_parse_sets_mtime_and_modified_sets_it_again() -> None:
    before = time.time()
    parser = parsed("User-agent: *\nDisallow: /private/\n")
    assert before <= parser.mtime() <= time.time()
    parser.last_checked = 1.0
    parser.modified()
    assert parser.mtime() >= before


def test_parse_takes_lines_as_readlines_or_splitlines_give_them() -> None:
    text = "User-agent: *\r\nDisallow: /private/\r\n"
    for lines in (
        text.splitlines(),
        text.splitlines(keepends=True),
        [line.encode() for line in text.splitlines()],
    ):
        parser = RobotFileParser()
        parser.parse(lines)
        assert not parser.can_fetch("mybot", "/private/x")
        assert parser.can_fetch("mybot", "/public")


def test_parse_again_replaces_the_file() -> None:
    parser = parsed("User-agent: *\nDisallow: /a\n")
    parser.parse(["User-agent: *", "Disallow: /b"])
    assert parser.can_fetch("mybot", "/a") and not parser.can_fetch("mybot", "/b")


@pytest.mark.quick
def test_can_fetch_takes_urls_and_paths() -> None:
    parser = parsed("User-agent: *\nDisallow: /private/\n")
    assert not parser.can_fetch("mybot", "https://example.org/private/x")
    assert not parser.can_fetch("mybot", "/private/x")
    assert not parser.can_fetch("mybot", "private/x")  # urllib's relative form
    assert parser.can_fetch("mybot", "https://example.org/")
    assert parser.can_fetch("mybot", "")  # the root


def test_crawl_delay_and_request_rate_of_the_robots_group() -> None:
    parser = parsed(
        "User-agent: figtree\nCrawl-delay: 3\nRequest-rate: 9/30\nDisallow: /tmp\n\n"
        "User-agent: *\nCrawl-delay: 1.5\nRequest-rate: 1/10m\n"
    )
    assert parser.crawl_delay("FigTree Robot libwww-perl/5.04") == 3
    assert isinstance(parser.crawl_delay("figtree"), int)
    rate = parser.request_rate("figtree/1.0")
    assert isinstance(rate, urllib.robotparser.RequestRate)
    assert (rate.requests, rate.seconds) == (9, 30)
    assert parser.crawl_delay("otherbot") == 1.5  # urllib knows whole seconds only
    assert parser.request_rate("otherbot") == (1, 600)  # and no units
    invalid = parsed("User-agent: *\nCrawl-delay: pears\nRequest-rate: 9/banana\n")
    assert invalid.crawl_delay("mybot") is None
    assert invalid.request_rate("mybot") is None


def test_site_maps_from_anywhere_in_the_file() -> None:
    parser = parsed(
        "Sitemap: https://example.org/a.xml\nUser-agent: *\nDisallow: /x\nSitemap: https://example.org/b.xml\n"
    )
    assert parser.site_maps() == ["https://example.org/a.xml", "https://example.org/b.xml"]
    assert parsed("User-agent: *\nDisallow:\n").site_maps() is None


# A file both readings agree on: str() prints it as urllib does (named groups first, * last; an
# empty Disallow as "Allow: "; paths as urllib's quote(unquote(path)) leaves them).
SAME_READING = (
    "# Comments and sitemaps are not printed.\nSitemap: https://example.org/s.xml\n"
    "User-agent: *\nCrawl-delay: 1\nRequest-rate: 3/15\nDisallow: /cyberworld/map/ # infinite\n"
    "Allow: /tmp/open\nDisallow: /tmp/\n\n"
    "User-agent: cybermapper\nUser-agent: FigTree/1.0\nDisallow:\n\n"
    "user-agent: figtree\ndisallow: /%7ejoe/index.html\nDisallow: /a%3cd\nAllow: /caf\u00e9 menu\n"
)


def urllib_parsed(text: str) -> urllib.robotparser.RobotFileParser:
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(text.splitlines())
    return parser


def test_str_prints_a_file_as_urllib_does() -> None:
    printed = str(parsed(SAME_READING))
    assert printed == str(urllib_parsed(SAME_READING))
    assert printed.startswith("User-agent: cybermapper\nUser-agent: FigTree/1.0\nAllow: \n\n")
    assert "Disallow: /~joe/index.html\nDisallow: /a%3Cd\nAllow: /caf%C3%A9%20menu\n\n" in printed


def test_str_prints_rules_as_rfc_9309_reads_them() -> None:
    """Where the readings differ (docs/robotparser.md's table): every group, wildcards, %2F and
    Crawl-delay 1.5 kept; urllib prints /%2A.pdf%24 and /a/b, and drops the rest."""
    text = (
        "User-agent: *\nCrawl-delay: 1.5\nDisallow: /*.pdf$\nDisallow: /a%2Fb\n\n"
        "User-agent: *\nDisallow: /second\n\nUser-agent: lonely\n"
    )
    assert str(parsed(text)) == (
        "User-agent: lonely\n\n"
        "User-agent: *\nCrawl-delay: 1.5\nDisallow: /*.pdf$\nDisallow: /a%2Fb\n\n"
        "User-agent: *\nDisallow: /second"
    )
    assert str(urllib_parsed(text)) == "User-agent: *\nDisallow: /%2A.pdf%24\nDisallow: /a/b"


def test_bad_arguments_get_clear_errors() -> None:
    parser = parsed("User-agent: *\nDisallow: /x\n")
    with pytest.raises(TypeError, match="useragent must be a str"):
        parser.can_fetch(None, "/x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="url must be a str"):
        parser.can_fetch("mybot", b"/x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not the whole file"):
        parser.parse("User-agent: *\nDisallow: /x\n")
    with pytest.raises(ValueError, match=r"no robots\.txt address"):
        RobotFileParser().read()
    with pytest.raises(ValueError, match=r"robots\.txt can be fetched for"):
        RobotFileParser("ftp://example.org/robots.txt").read()
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        RobotFileParser(timeout=0)


# -- where RFC 9309 answers otherwise than urllib's first-match reading ---------------------

DIFFERENCES = [
    # (what, robots.txt, agent, url, RFC 9309's answer)
    ("the longest match decides", "User-agent: *\nDisallow: /folder/\nAllow: /folder/page.html\n",
     "mybot", "/folder/page.html", True),
    ("Allow wins a tie", "User-agent: *\nDisallow: /page\nAllow: /page\n", "mybot", "/page", True),
    ("* is a wildcard", "User-agent: *\nDisallow: /*.pdf\n", "mybot", "/docs/a.pdf", False),
    ("$ ends a pattern", "User-agent: *\nDisallow: /*.pdf$\nDisallow: /x$\n", "mybot", "/docs/a.pdf", False),
    ("$ ends a pattern (no more)", "User-agent: *\nDisallow: /*.pdf$\n", "mybot", "/docs/a.pdf?x=1", True),
    ("a product token, not a substring", "User-agent: bot\nDisallow: /\n", "mybot", "/x", True),
    ("the exact token's group", "User-agent: Googlebot\nDisallow: /\n\nUser-agent: Googlebot-Mobile\n",
     "Googlebot-mobile", "/x", True),
    ("groups for one agent merge", "User-agent: *\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n",
     "mybot", "/b", False),
    ("a blank line ends no group", "User-agent: mybot\n\nDisallow: /x\n", "mybot", "/x", False),
    ("a fragment is not in the path", "User-agent: *\nDisallow: /hash%23f\n", "mybot", "/hash#f", True),
    ("%2F is not /", "User-agent: *\nDisallow: /a%2Fb\n", "mybot", "/a/b", True),
    ("%3F is not ?", "User-agent: *\nDisallow: /q?x=%3F\n", "mybot", "/q?x=?", True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("what", "text", "agent", "url", "allowed"), DIFFERENCES, ids=[d[0] for d in DIFFERENCES]
)
def test_rfc_9309_answers(what: str, text: str, agent: str, url: str, allowed: bool) -> None:
    assert parsed(text).can_fetch(agent, url) is allowed


def test_the_same_answers_where_both_agree() -> None:
    parser = parsed(
        "User-agent: *\nDisallow: /cyberworld/map/ # infinite\nDisallow: /tmp/\n\n"
        "User-agent: cybermapper\nDisallow:\n\n"
        "User-agent: figtree\nDisallow: /%7ejoe/index.html\nDisallow: /a%3cd\n"
    )
    assert parser.can_fetch("mybot", "/") and parser.can_fetch("mybot", "/tmp")
    assert not parser.can_fetch("mybot", "/cyberworld/map/index.html") and not parser.can_fetch(
        "mybot", "/tmp/x"
    )
    assert parser.can_fetch("cybermapper", "/cyberworld/map/index.html")
    assert not parser.can_fetch("figtree", "/~joe/index.html")  # %7e is ~, an unreserved character
    assert not parser.can_fetch("figtree", "/a%3Cd")  # hex digits in either case


def test_decide_names_the_deciding_line() -> None:
    decision = parsed("User-agent: *\nDisallow: /folder/\nAllow: /folder/page.html\n").decide(
        "mybot", "/folder/x"
    )
    assert (decision.allowed, decision.line, decision.rule) == (False, 2, "Disallow: /folder/")


# -- read(): RFC 9309 §2.3.1 over HTTP ------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One nginx with a location per answer; its timed access log."""
    root = tmp_path_factory.mktemp("www")
    (root / "robots.txt").write_bytes(
        b"User-agent: mybot\nDisallow: /private/\nCrawl-delay: 2\nDisallow: /non-utf8/\xf0\n"
        b"Sitemap: https://example.org/s.xml\n"
    )
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "robots.txt").write_text("User-agent: *\nDisallow: /\n")
    (root / "same").mkdir()
    (root / "same" / "robots.txt").write_text(SAME_READING, encoding="utf-8")
    log = root.parent / "access.log"
    block = (
        f"access_log {log} timed;"
        " location = /robots.txt { default_type text/plain; }"
        " location = /403/robots.txt { return 403; }"
        " location = /500/robots.txt { return 500; }"
        " location = /429/robots.txt { return 429; }"
        " location = /moved/robots.txt { return 301 /robots.txt; }"
        " location = /loop/robots.txt { return 302 /loop/robots.txt; }"
        " location = /elsewhere/robots.txt { default_type text/plain; }"
        " location = /same/robots.txt { default_type text/plain; }"
    )
    with nginx([block], root) as (port,):
        yield f"http://127.0.0.1:{port}", log


def logged(log: Path, before: int, count: int = 1) -> list[Hit]:
    """The log's requests once ``count`` more than ``before`` are in it (5 s at most): nginx writes
    a request's line after its answer has gone, so a client can be done before the line is."""
    deadline = time.monotonic() + 5
    while len(hits := timed_log(log)) < before + count and time.monotonic() < deadline:
        time.sleep(0.02)
    return hits


def test_read_a_file_with_the_user_agent_given(site: tuple[str, Path]) -> None:
    base, log = site
    before = len(timed_log(log))
    parser = RobotFileParser(base + "/robots.txt", user_agent="mybot/1.0 (+http://example.org/bot)")
    parser.read()
    assert parser.mtime() > 0 and not parser.allow_all and not parser.disallow_all
    assert not parser.can_fetch("mybot", base + "/private/x")
    assert not parser.can_fetch("mybot", base + "/non-utf8/%F0")  # a raw non-UTF-8 octet, read as %F0
    assert parser.can_fetch("mybot", base + "/public")
    assert parser.crawl_delay("mybot") == 2
    assert parser.site_maps() == ["https://example.org/s.xml"]
    assert logged(log, before)[-1].user_agent == "mybot/1.0 (+http://example.org/bot)"
    other = RobotFileParser()
    other.set_url(base + "/robots.txt", user_agent="otherbot/2.0")
    other.read()
    assert logged(log, before, 2)[-1].user_agent == "otherbot/2.0"
    RobotFileParser(base + "/robots.txt").read()
    assert logged(log, before, 3)[-1].user_agent == f"manners/{__version__}"  # not Python-urllib


def test_str_after_read_prints_the_file_as_urllib_does(site: tuple[str, Path]) -> None:
    """Both read the same file from nginx; the URL then picks how it is read (its scheme's profile)."""
    base, _ = site
    url = base + "/same/robots.txt"
    ours, theirs = RobotFileParser(url), urllib.robotparser.RobotFileParser(url)
    ours.read()
    theirs.read()
    assert str(ours) == str(theirs) == str(urllib_parsed(SAME_READING))


def test_read_a_file_named_elsewhere_and_a_bare_authority(site: tuple[str, Path]) -> None:
    base, log = site
    before = len(timed_log(log))
    parser = RobotFileParser(base + "/elsewhere/robots.txt")
    parser.read()
    assert not parser.can_fetch("mybot", base + "/public")
    assert logged(log, before)[-1].path == "/elsewhere/robots.txt"
    bare = RobotFileParser(base)  # urllib would read the home page as robots.txt
    bare.read()
    assert logged(log, before, 2)[-1].path == "/robots.txt"
    assert not bare.can_fetch("mybot", base + "/private/x")


@pytest.mark.parametrize(
    ("path", "allow_all", "disallow_all"),
    [("/403/robots.txt", True, False), ("/500/robots.txt", False, True), ("/429/robots.txt", False, True)],
)
def test_read_statuses(site: tuple[str, Path], path: str, allow_all: bool, disallow_all: bool) -> None:
    base, _ = site
    parser = RobotFileParser(base + path)
    parser.read()
    assert (parser.allow_all, parser.disallow_all) == (allow_all, disallow_all)
    assert parser.can_fetch("mybot", base + "/anything") is allow_all
    assert parser.mtime() == 0  # as urllib: only a file read counts
    assert parser.crawl_delay("mybot") is None
    assert str(parser) == ""  # no file, no entries: urllib prints nothing either


def test_read_follows_redirects_up_to_five(site: tuple[str, Path]) -> None:
    base, log = site
    start = len(timed_log(log))
    moved = RobotFileParser(base + "/moved/robots.txt")
    moved.read()
    assert not moved.can_fetch("mybot", base + "/private/x")
    before = len(logged(log, start, 2))  # the 301 and robots.txt
    loop = RobotFileParser(base + "/loop/robots.txt")
    loop.read()
    assert loop.allow_all  # too many redirects: no robots.txt
    assert len(logged(log, before, 6)) - before == 6  # the first request and five redirects


def test_read_a_server_that_is_not_there_disallows_all_without_raising() -> None:
    parser = RobotFileParser(f"http://127.0.0.1:{free_port()}/robots.txt", timeout=5)
    parser.read()
    assert parser.disallow_all
    assert parser.result is not None and parser.result.status == "connection-refused"
    assert not parser.can_fetch("mybot", "/")


def test_read_inside_a_running_event_loop(site: tuple[str, Path]) -> None:
    base, _ = site

    async def in_a_notebook() -> bool:
        parser = RobotFileParser(base + "/robots.txt")
        parser.read()
        return parser.can_fetch("mybot", base + "/private/x")

    assert asyncio.run(in_a_notebook()) is False
