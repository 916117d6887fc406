"""links.py: the crawler's fast link extraction gives the old answers, in bounded time and memory.

The old answers are computed here the old way (gemtext.links + urls.normalise, and
gophermap.parse_menu + urls.normalise, as crawler.py did), with request_problem applied
to both; properties compare the two on generated pages and on the real files under
data/corpus/smallnet, and check the fast normalisation against urls.normalise.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data_paths import SMALLNET
from manners.crawl import gemtext, links, urls
from manners.crawl.gophermap import parse_menu
from manners.crawl.links import (
    Found,
    Link,
    Skipped,
    _Normaliser,
    gemtext_links,
    gemtext_links_async,
    menu_links,
    menu_links_async,
    request_problem,
)
from manners.crawl.urls import gopher_ref, normalise

T = TypeVar("T")


# -- the old way -------------------------------------------------------------------------


Skips = list[tuple[str, str]]  # (target, reason)


def refusal(exc: ValueError) -> str:
    return f"it cannot be read as a URL the crawler can request ({exc})."


def old_gemtext(text: str, base: str) -> tuple[list[tuple[str, str | None]], Skips, str | None]:
    """(url, item type) of each link, the skipped targets and why, the title: as crawler.py did it."""
    found: dict[str, str | None] = {}
    skipped: dict[str, str] = {}
    for link in gemtext.links(text):
        try:
            url = normalise(link.target, base)
        except ValueError as exc:
            skipped.setdefault(link.target, refusal(exc))
            continue
        problem = request_problem(url)
        if problem is not None:
            skipped.setdefault(link.target, problem)
            continue
        found.setdefault(url, gopher_ref(url).item_type if url.startswith("gopher:") else None)
    return list(found.items()), list(skipped.items()), gemtext.title(text)


def old_menu(body: bytes) -> tuple[list[tuple[str, str | None]], list[str], Skips, str | None, str | None]:
    """(url, type) of the items, the mirrors' URLs, the skipped targets and why, title and error."""
    menu = parse_menu(body)
    items: dict[str, str | None] = {}
    mirrors: dict[str, None] = {}
    skipped: dict[str, str] = {}
    for item in menu.items:
        if item.url is None:
            continue
        try:
            url = normalise(item.url)
        except ValueError as exc:
            skipped.setdefault(item.url, refusal(exc))
            continue
        problem = request_problem(url)
        if problem is not None:
            skipped.setdefault(item.url, problem)
            continue
        if item.mirror:
            mirrors.setdefault(url)
        elif item.external:
            items.setdefault(url, gopher_ref(url).item_type if url.startswith("gopher:") else None)
        else:
            assert url == item.url  # a gopher_url is normal already
            items.setdefault(url, item.item_type)
    assert tuple(u for u in menu.links() if u in items) == tuple(
        u for u in items if u in menu.links()
    )  # the oracle keeps parse_menu's order
    return (
        list(items.items()),
        [u for u in mirrors if u not in items],
        list(skipped.items()),
        menu.title,
        menu.error,
    )


def assert_gemtext_agrees(text: str, base: str) -> Found:
    found = gemtext_links(text, base, max_links=10**9)
    expected, skipped, title = old_gemtext(text, base)
    assert [(link.url, link.item_type) for link in found.links] == expected
    assert not any(link.mirror for link in found.links)
    assert [(s.target, s.reason) for s in found.skipped] == [(t[:200], why) for t, why in skipped[:100]]
    assert found.skipped_count == len(skipped)
    assert found.title == title and found.error is None and found.more == 0
    return found


def assert_menu_agrees(body: bytes) -> Found:
    found = menu_links(body, max_links=10**9)
    items, mirrors, skipped, title, error = old_menu(body)
    assert [(link.url, link.item_type) for link in found.links if not link.mirror] == items
    assert [link.url for link in found.links if link.mirror] == mirrors
    assert [(s.target, s.reason) for s in found.skipped] == [(t[:200], why) for t, why in skipped[:100]]
    assert found.skipped_count == len(skipped)
    assert (found.title, found.error, found.more) == (title, error, 0)
    return found


# -- the fast normalisation is urls.normalise ----------------------------------------------

BASES = [
    "gemini://h/dir/page.gmi",
    "gemini://h",
    "gemini://H.Example:1966/a/b/",
    "gemini://h:1965/a/../b/./c?q=1#f",
    "gemini://[::1]/x/",
    "gemini://h/%7e/a%2fb/",
    "gemini://caf\u00e9.example/\u00fc/",
    "gopher://h/1/dir/",
    "gopher://h/",
    "gopher://h",
    "gopher://h:7070/0/a%20b/c",
    "gopher://H:70/1",
    "gopher://[2001:db8::1]/7/s%09q",
    "https://user@h/x/y",
    "gemini://h:0/bad-port",
    "relative/base",
]
PIECES = [
    "/", "/", "/", "a", "b", "Z", "x.gmi", "dir/", ".", "..", "./", "../", "/.", "/..",
    "%", "%2e", "%2E", "%2F", "%41", "%7e", "%zz", "%09", "%0D", "%00", "?", "?q=1", "#", "#frag",
    "\u00e9", "\u00fc", "\u4e2d", "\udcff", " ", "\r", "\x01", ":", "@", "!", "~", "-", "_", "+", "'", "=",
    "gemini://", "gopher://", "GEMINI://", "Gopher://", "http://", "mailto:", "h", "H", "example.org",
    "[::1]", "[::FFFF:1.2.3.4]", "[v1.x]", ":1965", ":70", ":0", ":99999", ":070", ":", "1", "0", "7",
    "//", "xn--caf-dma", "a:b", "user@", "%C3%A9", "%20", "%3F", "%23", "%25", "%FF", "%7E", "%c3", "HTTPS://",
    "a" * 63, "b" * 64, "..", ".", "-",
]  # fmt: skip
TARGETS = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.text(max_size=30),
    st.from_regex(r"/[a-z0-9/._~-]{0,20}(\?[a-z=&]{0,8})?", fullmatch=True),
    st.from_regex(
        r"(gemini|gopher)://[a-z0-9.-]{1,12}(:[0-9]{1,5})?(/[a-z0-9/._~%-]{0,16})?", fullmatch=True
    ),
)


@settings(max_examples=3000, deadline=None)
@given(TARGETS, st.sampled_from(BASES))
def test_fast_normalisation_is_urls_normalise(target: str, base: str) -> None:
    fast = _Normaliser(base).fast(target)
    try:
        expected = normalise(target, base)
    except ValueError:
        assert fast is None  # where normalise refuses, the fast path never answers
        return
    assert fast is None or fast == expected


@settings(max_examples=1000, deadline=None)
@given(TARGETS)
def test_fast_normalisation_without_base(target: str) -> None:
    fast = _Normaliser(None).fast(target)
    try:
        expected = normalise(target)
    except ValueError:
        assert fast is None
        return
    assert fast is None or fast == expected


@pytest.mark.parametrize(
    ("target", "base"),
    [
        ("/a/b.gmi", "gemini://h/dir/"),
        ("/", "gemini://h:1966/x"),
        ("/a:b@c!$&'()*+,;=~?q=1&r=/?", "gemini://h/"),
        ("/caf%C3%A9/a%20b%2F", "gemini://h/"),  # escapes that stay as they are
        ("page.gmi", "gemini://h/dir/x"),
        ("sub/page.gmi?x#y", "gemini://h/dir/x"),
        ("../up.gmi", "gemini://h/a/b/c"),
        ("./../../x/", "gemini://h/a/b/c"),
        ("gemini://example.org/x/y", "gemini://h/"),
        ("gemini://example.org:1966", "gemini://h/"),
        ("GEMINI://Example.ORG:1965/x", "gemini://h/"),  # its head normalised once, then reused
        ("https://www.example.com/x?id=1", "gemini://h/"),
        ("gemini://example.org?q=1", "gemini://h/"),  # no path: "/" and the query
        ("gopher://example.org?x", "gemini://h/"),  # a "?" item type
        ("gopher://example.org/0/a/../b", "gemini://h/"),
        ("gopher://example.org/1", "gemini://h/"),
        ("gopher://example.org:70/0/a%20b", "gemini://h/"),
        ("/0/a/./b", "gopher://h/1/"),
        ("/1", "gopher://h/1/x"),
        ("x.txt", "gopher://h/1/dir/"),
        ("../x.txt", "gopher://h/1/dir/"),  # kept: Gopher has no dot segments
    ],
)
def test_fast_path_takes_the_common_shapes(target: str, base: str) -> None:
    fast = _Normaliser(base).fast(target)
    assert fast is not None and fast == normalise(target, base)


@pytest.mark.parametrize("base", ["gemini://h/dir/", "gopher://h/1/dir/"])
@pytest.mark.parametrize("case", [str.upper, str.lower])
def test_every_escape(base: str, case: Callable[[str], str]) -> None:
    """Each of the 256 escapes in a path, a relative name and a URL: where urls.normalise keeps
    it as written, the fast path takes it; elsewhere it leaves it alone."""
    norm = _Normaliser(base)
    kept = 0
    for byte in range(256):
        escape = case(f"%{byte:02X}")
        for target in (f"/a{escape}b", f"a{escape}", f"gemini://x/{escape}", f"gopher://x/0{escape}"):
            expected = normalise(target, base)
            fast = norm.fast(target)
            stays = expected.endswith(target.rsplit("/", 1)[-1]) and request_problem(expected) is None
            assert fast == (expected if stays else None), (target, expected, fast)
            kept += stays
    # the escapes, in upper case, of what a URL cannot hold raw (in lower case: those of digits only)
    assert kept > (300 if case is str.upper else 100)


@pytest.mark.parametrize(
    ("target", "base"),
    [
        ("/a/../b", "gemini://h/"),  # dot segments
        ("a/./b", "gemini://h/"),
        ("/%41", "gemini://h/"),  # an escaped unreserved character
        ("/%c3%a9", "gemini://h/"),  # lower-case hex
        ("/100%", "gemini://h/"),
        ("/0/%2F", "gopher://h/"),  # Gopher decodes escapes of what may stay raw
        ("/0/a%09b", "gopher://h/"),  # a search part, left to request_problem
        ("/caf\u00e9", "gemini://h/"),  # not ASCII
        ("//other/x", "gemini://h/"),  # an authority
        ("gemini://[::1]/", "gemini://h/"),  # an IP literal
        ("https://user@h/", "gemini://h/"),  # user information
        ("mailto:a@b", "gemini://h/"),  # a scheme we do not know
        ("a:b", "gemini://h/"),
        ("1", "gopher://h/"),  # gopher://h/1 is gopher://h/
        ("x", "relative/base"),  # normalise refuses every target
        ("gemini://h/", "relative/base"),
    ],
)
def test_fast_path_leaves_the_rest_to_normalise(target: str, base: str) -> None:
    assert _Normaliser(base).fast(target) is None


# -- gemtext -----------------------------------------------------------------------------

ODD_LINES = ["```", "``` alt", "# Title", "#", "# ", "## Sub", "#\tSpaced ", "=>", "=> ", "=>\r", "=>\r\r",
             "text", "", "\r", " => /not-a-link", "* item"]  # fmt: skip
LINE_TARGETS = TARGETS.map(lambda t: t.replace(" ", "").replace("\t", "").replace("\n", ""))
GEM_LINES = st.one_of(
    LINE_TARGETS.map(lambda t: f"=> {t}"),
    LINE_TARGETS.map(lambda t: f"=>{t} label"),
    LINE_TARGETS.map(lambda t: f"=>\t {t}\t a label \r"),
    st.sampled_from(ODD_LINES),
    st.text(max_size=20),
)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(GEM_LINES, max_size=25), st.sampled_from(["\n", "\r\n"]), st.sampled_from(BASES[:14]))
def test_gemtext_links_agree_with_the_old_way(lines: list[str], newline: str, base: str) -> None:
    assert_gemtext_agrees(newline.join(lines), base)


@contextlib.contextmanager
def windows_of(size: int) -> Iterator[None]:
    """Scan in windows of ``size`` characters, so that window edges fall everywhere."""
    saved = links.WINDOW
    links.WINDOW = size
    try:
        yield
    finally:
        links.WINDOW = saved


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(GEM_LINES, max_size=25), st.sampled_from(["\n", "\r\n"]), st.integers(1, 30))
def test_gemtext_links_agree_across_window_edges(lines: list[str], newline: str, window: int) -> None:
    with windows_of(window):
        assert_gemtext_agrees(newline.join(lines), "gemini://h/dir/page")


ASCII_ESCAPES = st.lists(
    st.sampled_from(
        ["a", "Z", "/", ".", "..", "?", ":", "%", "%7e", "%7E", "%2e", "%2F", "%zz", "%4", "<", "|", "\\"]
    ),
    min_size=1,
    max_size=8,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.one_of(ASCII_ESCAPES, ASCII_ESCAPES.map(lambda t: "/" + t)), max_size=6),
    st.sampled_from(["", "gemini://h", "https://Example.org:8443", "gopher://h/1"]),
    st.sampled_from(BASES[:14]),
)
def test_engine_escapes_agree(targets: list[str], head: str, base: str) -> None:
    """The engine normalises ASCII escapes and characters itself: as urls.normalise does."""
    prefix = head + "/" if head and targets and not targets[0].startswith("/") else head
    assert_gemtext_agrees("".join(f"=> {prefix}{t}\n" for t in targets), base)


def test_gemtext_example() -> None:
    text = (
        "# A capsule\r\n"
        "=> /a/b.gmi A page\r\n"
        "=>foo.gmi\r\n"
        "=> gemini://Example.ORG:1965/x\r\n"
        "=> gemini://example.org/x#again\r\n"
        "=> mailto:someone@example.org Mail\r\n"
        "```\r\n=> /preformatted\r\n```\r\n"
        "=> ../up\r\n"
        "=> gopher://h/0/x%09y\r\n"
        "=> gopher://h/7/s%09q\r\n"
        "=>\r\r\n"
        "=> \r\n"
    )
    found = assert_gemtext_agrees(text, "gemini://h/dir/page")
    assert found.links == [
        Link("gemini://h/a/b.gmi", None),
        Link("gemini://h/dir/foo.gmi", None),
        Link("gemini://example.org/x", None),
        Link("gemini://h/up", None),
        Link("gopher://h/7/s%09q", "7"),
        Link("gemini://h/dir/page", None),  # "=>\r\r": the target "\r" is the page itself
    ]
    assert [s.target for s in found.skipped] == ["mailto:someone@example.org", "gopher://h/0/x%09y"]
    assert "search part" in found.skipped[1].reason and found.title == "A capsule"


@pytest.mark.parametrize(
    ("text", "base", "url"),
    [
        ("=> /1\n", "gopher://h/1/x", "gopher://h/"),
        ("=> 1\n", "gopher://h/", "gopher://h/"),
        ("=> 1\n", "gopher://h/1/dir/", "gopher://h/1/dir/1"),
        ("=> gopher://h/1#top\n", "gemini://h/", "gopher://h/"),
        ("=> ../0/x\n", "gopher://h/1/dir/", "gopher://h/1/dir/../0/x"),
    ],
)
def test_gemtext_gopher_root(text: str, base: str, url: str) -> None:
    assert [link.url for link in assert_gemtext_agrees(text, base).links] == [url]


def test_gemtext_max_links_counts_the_rest() -> None:
    text = "".join(f"=> /p{i % 50}\n" for i in range(200)) + "# Late title\n=> mailto:x\n"
    found = gemtext_links(text, "gemini://h/", max_links=10)
    assert [link.url for link in found.links] == [f"gemini://h/p{i}" for i in range(10)]
    assert found.more == 161  # the lines after the 10th link, less those repeating one of the 10
    assert found.skipped_count == 0 and found.title == "Late title"
    none = gemtext_links(text, "gemini://h/", max_links=0)
    assert none.links == [] and none.more == 201


def test_gemtext_normalises_each_target_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = urls.normalise

    def counting(url: str, base: str | None = None) -> str:
        calls.append(url)
        return real(url, base)

    monkeypatch.setattr(urls, "normalise", counting)  # the module links.py calls
    text = "=> caf\u00e9.gmi\n=> /page\n" * 50 + "=> caf\u00e9.gmi#other\n"
    found = gemtext_links(text, "gemini://h/")
    assert [link.url for link in found.links] == ["gemini://h/caf%C3%A9.gmi", "gemini://h/page"]
    assert calls.count("caf\u00e9.gmi") == 1 and calls.count("caf\u00e9.gmi#") == 1
    assert "/page" not in calls  # the fast path


def test_a_monster_target_is_skipped_unread() -> None:
    target = "/" + "a" * 10_000
    found = gemtext_links(f"=> {target}\n=> /ok\n", "gemini://h/")
    assert [link.url for link in found.links] == ["gemini://h/ok"]
    assert found.skipped == [Skipped(target[:200], found.skipped[0].reason)]
    assert "over the 1,024" in found.skipped[0].reason
    # the one difference from the old way: dot segments that would have shrunk it are not read
    shrinking = "/" + "a/../" * 2000 + "x"
    assert normalise(shrinking, "gemini://h/") == "gemini://h/x"
    assert gemtext_links(f"=> {shrinking}\n", "gemini://h/").skipped_count == 1


# -- Gopher menus --------------------------------------------------------------------------

SAMPLE_MENU = (
    b"iA hole with a title\tTITLE\texample.com\t0\r\n"
    b"1Docs\t/docs\tHole.Example\t70\r\n"
    b"0About\t/about.txt\thole.example\t70\t+\r\n"
    b"5Software\t/soft.zip\thole.example\t70+\r\n"
    b"+Mirror one\t/mirror/soft.zip\tmirror.example\t7070\r\n"
    b"+Mirror two\t/soft.zip\tmirror2.example\t70\r\n"
    b"hWeb page\tURL:http://www.example.com/\thole.example\t70\r\n"
    b"1Capsule\tURL:GEMINI://Capsule.Example:1965/\thole.example\t70\r\n"
    b"7Search\t/search\thole.example\t70\r\n"
    b"0A space\t/a b\thole.example\t70\r\n"
    b"0A CR\t/a\rb\thole.example\t70\r\n"
    b"0Broken port\t/x\thole.example\tseventy\r\n"
    b"0Bad host\t/x\tbad host\t70\r\n"
    b"1Mail\tURL:mailto:a@b\thole.example\t70\r\n"
    b"1Docs again\t/docs\thole.example\t70\r\n"
    b".\r\n"
)


def test_menu_example() -> None:
    found = assert_menu_agrees(SAMPLE_MENU)
    assert found.links == [
        Link("gopher://hole.example/1/docs", "1"),
        Link("gopher://hole.example/0/about.txt", "0"),
        Link("gopher://hole.example/5/soft.zip", "5"),
        Link("gopher://mirror.example:7070/5/mirror/soft.zip", "5", mirror=True),
        Link("gopher://mirror2.example/5/soft.zip", "5", mirror=True),
        Link("http://www.example.com/", None),
        Link("gemini://capsule.example/", None),
        Link("gopher://hole.example/7/search", "7"),
        Link("gopher://hole.example/0/a%20b", "0"),
    ]
    assert found.skipped == [
        Skipped("gopher://hole.example/0/a%0Db", links._BROKEN),
        Skipped("mailto:a@b", found.skipped[1].reason),
    ]
    assert found.title == "A hole with a title" and found.error is None


def test_gopher_plus_port_without_tab() -> None:
    """Some servers glue Gopher+'s "+" to the port: "70+" is port 70."""
    item = parse_menu(b"1Docs\t/docs\thole.example\t70+\r\n").items[0]
    assert (item.port, item.plus, item.url) == (70, "+", "gopher://hole.example/1/docs")
    other = parse_menu(b"1Docs\t/docs\thole.example\t7070+\t!\r\n").items[0]
    assert (other.port, other.plus, other.url) == (7070, "!", "gopher://hole.example:7070/1/docs")
    assert parse_menu(b"1Docs\t/docs\th\t+70\r\n").items[0].url is None  # digits first, or no port
    assert parse_menu(b"1Docs\t/docs\th\t70++\r\n").items[0].url is None
    assert menu_links(b"1Docs\t/docs\thole.example\t70+\r\n").links == [
        Link("gopher://hole.example/1/docs", "1")
    ]


@pytest.mark.parametrize(
    ("body", "title"),
    [
        (b"iHello\tTITLE\th\t70\n", "Hello"),
        (b"iHello\tTITLE\n", "Hello"),  # two fields are enough
        (b"0Short\tTITLE\n", "Short"),  # a short line is an i line
        (b"iNot\tTITLE \th\t70\niYes\tTITLE\r\n", "Yes"),
        (b"i  \tTITLE\niSecond\tTITLE", "Second"),  # an empty display gives none
        (b"3Err\tx\th\t1\n+Mirror of 3\tTITLE\niAfter\tTITLE\n", "After"),
        (b"iText\t\th\t70\n+Mirror of i\tTITLE\th\t70\n", "Mirror of i"),
        (b"iText\t\th\t70\n\n.\n+Short mirror of i\tTITLE\n", "Short mirror of i"),
        (b"+Orphan\tTITLE\n", "Orphan"),  # "+" with nothing before, short: an i line
        (b"+Orphan\tTITLE\th\t70\niNext\tTITLE\n", "Next"),  # long: stays "+"
        (b"1Menu\tTITLE\th\t70\n", None),
        (b"1Docs\t/d\th\t70\n+Mirror\tTITLE\th\t70\n", None),
    ],
)
def test_menu_titles(body: bytes, title: str | None) -> None:
    assert assert_menu_agrees(body).title == title


@pytest.mark.parametrize(
    "body",
    [
        b"1A\t/a\th\t70\n+Mirror\t/b\th\t70\n0B\t/b\th\t70\n",  # a mirror, then the same URL as an item
        b"0B\t/b\th\t70\n1A\t/a\th\t70\n+Mirror\t/b\th\t70\n",  # an item, then the same URL as a mirror
        b"1A\t/a\th\t70\n+M\tURL:gemini://x/\th\t70\nhX\tURL:gemini://x/\th\t70\n",
        b"1A\t/a\th\t70\nshort line\n+Mirror of i\t/b\th\t70\n",  # "+" after a short line: type i
        b"3Oops\t\th\t1\nplain text\n+Of 3\t/b\th\t70\n",
        b"1A\t/a\th\t70\n+short\n+long\t/b\th\t70\n",  # short "+" becomes i, so the long one is i
        b"+\t/b\th\t70\n",  # an orphan "+": no link
        b"0A\t/a\th\t70\n\t\t\t\n+B\t/b\th\t70\n",  # a blank line of TABs is no item
        b"0A\t/a\th\t70\n \t\t\t\t \r\n+B\t/b\th\t70\n",  # nor one of four fields
        b" A\t/a\th\t70\n+B\t/b\th\t70\n",  # a " " type
    ],
)
def test_menu_mirrors(body: bytes) -> None:
    assert_menu_agrees(body)


def test_menu_error_and_max_links() -> None:
    assert menu_links(b"\r\n.\r\n3Gone away\t\terror.host\t1\r\n").error == "Gone away"
    assert menu_links(b"1Menu\t/\th\t70\n3Later\t\th\t1\n").error is None
    body = b"".join(b"0Item\t/i%d\th\t70\r\n" % (i % 30) for i in range(100))
    body += b"+Mirror\t/m\th\t70\r\niNo link\t\th\t70\r\n0Bad host\t/x\t\t70\r\n"
    found = menu_links(body, max_links=5)
    assert [link.url for link in found.links] == [f"gopher://h/0/i{i}" for i in range(5)]
    assert found.more == 81  # the item lines after the 5th link, less the 15 repeating one, and the mirror


MENU_TYPES = st.sampled_from([*"0015791+++iiih3gI ?/", "\t", "\xff", "\u00e9", ".", ""])
MENU_TEXT = st.sampled_from(["", "Docs", "A b", "TITLE", " TITLE", "x\ry", "caf\u00e9", "\xff\xfe"])
SELECTOR_PIECES = [
    "",
    "/",
    "/docs",
    "/a b",
    "TITLE",
    "/a\rb",
    "/a\x00",
    "/%41",
    "/\u00e9",
    "1",
    "?q",
    "#x",
    "/.",
    "URL:gemini://Caps.Example:1965/x",
    "URL:gopher://h/0/a%09b",
    "URL: mailto:x ",
    "URL:",
    "URL:/relative",
    "URL:http://h/" + "y" * 1100,
    "/" + "z" * 1030,
    "/x\udcff",
]
SELECTORS = st.one_of(
    st.sampled_from(SELECTOR_PIECES),
    st.text(alphabet="/ab.%?#: \u00e9", max_size=8),
)
HOSTS = st.sampled_from(["h", "H.Example", "", " h ", "::1", "[::1]", "bad host", "caf\u00e9.example",
                         "a..b", "h@x", "xn--caf-dma.example"])  # fmt: skip
PORTS = st.sampled_from(["70", "70+", " 70 ", "0", "99999", "65535", "7070", "x", "", "070", "+70"])


@st.composite
def menu_lines(draw: st.DrawFn) -> bytes:
    fields: list[str] = [draw(MENU_TEXT), draw(SELECTORS), draw(HOSTS), draw(PORTS)]
    fields = fields[: draw(st.integers(1, 4))] + draw(st.sampled_from([[], ["+"], ["+", "x"]]))
    kind: str = draw(MENU_TYPES)
    line = (kind + "\t".join(fields)).encode("utf-8", "surrogateescape")
    return line.replace("\xff\xfe".encode(), b"\xff\xfe")  # bytes that are not UTF-8


MENU_BODIES = st.lists(
    st.one_of(menu_lines(), st.sampled_from([b"", b".", b" ", b"\t\t\t", b"plain text", b"\r", b" . "])),
    max_size=20,
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MENU_BODIES, st.sampled_from([b"\n", b"\r\n"]), st.booleans())
def test_menu_links_agree_with_parse_menu(lines: list[bytes], newline: bytes, final_dot: bool) -> None:
    assert_menu_agrees(newline.join(lines) + (b"\r\n.\r\n" if final_dot else b""))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MENU_BODIES, st.integers(1, 60))
def test_menu_links_agree_across_window_edges(lines: list[bytes], window: int) -> None:
    with windows_of(window):
        assert_menu_agrees(b"\r\n".join(lines))


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_menu_links_agree_on_any_bytes(body: bytes) -> None:
    assert_menu_agrees(body)


# -- the real files ---------------------------------------------------------------------

CORPUS = sorted(p for p in SMALLNET.rglob("*") if p.is_file())


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_real_files(path: Path) -> None:
    data = path.read_bytes()
    assert_menu_agrees(data)
    for base in ("gemini://h/dir/page.gmi", "gopher://h/1/dir/"):
        assert_gemtext_agrees(data.decode("utf-8", "replace"), base)


def test_real_menus_are_read() -> None:
    """The captures hold real menus: they give links and errors, so the agreement means something."""
    root = menu_links((SMALLNET / "server_transcripts" / "pygopherd-3.1.0_root-menu.bin").read_bytes())
    assert [link.url for link in root.links] == [
        "gopher://127.0.0.1:7071/1/docs",
        "gopher://127.0.0.1:7071/1/private",
    ]
    missing = SMALLNET / "server_transcripts" / "gophernicus-3.1.1_missing-dir-trailing-slash.bin"
    assert menu_links(missing.read_bytes()).error == "Error: File or directory not found! (null)"


# -- request_problem -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("gemini://h/x", None),
        ("gopher://h/", None),
        ("gopher://h/0/a%20b", None),
        ("gopher://h/7/search%09query", None),  # a search part for a search
        ("gopher://h/7/search%09query%09+", None),
        ("gemini://h/" + "a" * 1013, None),  # 1,024 bytes
        ("gemini://h/" + "a" * 1014, "the URL is 1,025 bytes long"),
        ("http://h/" + "\u00e9" * 600, "the URL is 1,209 bytes long"),
        ("gopher://h/0/a%0Db", "CR, LF or NUL"),
        ("gopher://h/0/a%0Ab", "CR, LF or NUL"),
        ("gopher://h/0/a%00b", "CR, LF or NUL"),
        ("gopher://h/7/s%09a%0Db", "CR, LF or NUL"),
        ("gopher://h/0/a%09b", "a type-0 item a search part"),
        ("gopher://h/1/dir%09", "a type-1 item a search part"),
        ("gopher://h/0/" + "%41" * 400, "the URL is 1,213 bytes long"),  # a short selector, still
        ("gopher://h/0/" + "a" * 1024, "its selector is 1,025 bytes long"),
        ("gopher://h:99999/", "cannot be read as a Gopher URL"),
    ],
)
def test_request_problem(url: str, problem: str | None) -> None:
    found = request_problem(url)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found and found.endswith(".")


# -- time and memory -------------------------------------------------------------------------


def max_gap(work: Callable[[], Awaitable[T]]) -> tuple[T, float]:
    """Run ``work`` beside a heartbeat task; the longest the loop went without a beat.

    The heap the test session built (hypothesis keeps a lot) is frozen first: a full
    collection over it is the session's pause, not the scan's, and would be there for any
    code that allocates."""
    gc.collect()
    gc.freeze()
    try:
        return asyncio.run(_beside_heartbeat(work))
    finally:
        gc.unfreeze()


async def _beside_heartbeat(work: Callable[[], Awaitable[T]]) -> tuple[T, float]:

    gap = 0.0
    done = False

    async def heartbeat() -> None:
        nonlocal gap
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0)
            now = time.perf_counter()
            gap = max(gap, now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0)
    result = await work()
    done = True
    await beat
    return result, gap


FIVE_MIB = 5 * 1024 * 1024


@pytest.mark.serial  # measures how long the loop is held
def test_async_gemtext_holds_the_loop_briefly() -> None:
    text = "=> /x\n" * (FIVE_MIB // 6) + "".join(f"=> caf\u00e9{i}\n" for i in range(3000))
    found, gap = max_gap(lambda: gemtext_links_async(text, "gemini://h/"))
    assert found == gemtext_links(text, "gemini://h/")
    assert len(found.links) == 3001
    assert gap < 0.1


@pytest.mark.serial  # measures how long the loop is held
def test_async_menu_holds_the_loop_briefly() -> None:
    line = b"0A file with a longer display\t/dir/file-%d.txt\thole.example\t70\r\n"
    body = b"".join(line % i for i in range(FIVE_MIB // len(line)))
    found, gap = max_gap(lambda: menu_links_async(body, max_links=50_000))
    assert found == menu_links(body, max_links=50_000)
    assert len(found.links) == 50_000 and found.more > 30_000
    assert gap < 0.1


def test_menu_memory_stays_bounded() -> None:
    """No object per line: 200,000 lines cost the links kept, not the lines read."""
    body = b"".join(b"0Item %d\t/item/%d\thole.example\t70\r\n" % (i, i) for i in range(200_000))
    tracemalloc.start()
    try:
        found = menu_links(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(found.links) == 10_000 and found.more == 190_000
    assert peak < 8 * 1024 * 1024
