"""The crawler's pure parts: URLs, Gopher menus, gemtext, what a status means.

Gopher and Gemini replies are the real servers' own bytes where we have them
(data/corpus/smallnet/server_transcripts), and properties cover the rest.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_paths import CAPTURES
from manners.crawl.gemtext import Link, links, title
from manners.crawl.gophermap import (
    BINARY_TYPES,
    NEVER_TYPES,
    TEXT_TYPES,
    error_reply,
    fetchable,
    parse_menu,
    text_body,
)
from manners.crawl.meaning import charset, gemini_action, gopher_action, media_type
from manners.crawl.urls import (
    GopherRef,
    authority,
    gopher_ref,
    gopher_url,
    normalise,
    resolve,
    selector_bytes,
    selector_text,
)
from manners.fetch.outcome import gemini_header

pytestmark = pytest.mark.quick


def capture(name: str) -> bytes:
    return (CAPTURES / name).read_bytes()


# -- URL normalisation ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("GEMINI://Example.ORG", "gemini://example.org/"),
        ("gemini://example.org:1965/", "gemini://example.org/"),
        ("gemini://example.org:1966/", "gemini://example.org:1966/"),
        ("gemini://example.org/a/./b/../c", "gemini://example.org/a/c"),
        ("gemini://example.org/a/b/../../../c", "gemini://example.org/c"),
        ("gemini://example.org/page#section", "gemini://example.org/page"),
        ("gemini://example.org/%7euser/%41%2f%2a", "gemini://example.org/~user/A%2F%2A"),
        ("gemini://example.org/%2e%2E/x", "gemini://example.org/x"),  # decoded, then dots removed
        ("gemini://example.org/a b/é", "gemini://example.org/a%20b/%C3%A9"),
        ("gemini://example.org/100%", "gemini://example.org/100%25"),
        ("gemini://example.org/search?hello world#x", "gemini://example.org/search?hello%20world"),
        ("gemini://example.org/?", "gemini://example.org/?"),  # an empty query is still a query
        ("gemini://Bücher.Example/", "gemini://xn--bcher-kva.example/"),
        ("gemini://[0:0::1]:1965/", "gemini://[::1]/"),
        ("gemini://[::1]:7000/x", "gemini://[::1]:7000/x"),
        ("gemini://127.0.0.1/", "gemini://127.0.0.1/"),
        ("  gemini://example.org/x\r\n", "gemini://example.org/x"),
        ("https://Example.org:443", "https://example.org/"),
        ("gopher://Example.ORG", "gopher://example.org/"),
        ("gopher://example.org:70/", "gopher://example.org/"),
        ("gopher://example.org/1", "gopher://example.org/"),
        ("gopher://example.org/1/", "gopher://example.org/1/"),  # selector "/" is not selector ""
        ("gopher://example.org:7070/0/a%20b", "gopher://example.org:7070/0/a%20b"),
        ("gopher://example.org/0/%61%2Fb", "gopher://example.org/0/a/b"),  # same bytes sent
        ("gopher://example.org/0/a/../b", "gopher://example.org/0/a/../b"),  # selectors are opaque
        ("gopher://example.org/0/cgi?x=1#frag", "gopher://example.org/0/cgi?x=1"),
        ("gopher://example.org/0/cgi%3Fx=1", "gopher://example.org/0/cgi?x=1"),
        ("gopher://example.org/7/find%09two words", "gopher://example.org/7/find%09two%20words"),
        ("gopher://[::1]:70/0/x", "gopher://[::1]/0/x"),
    ],
)
def test_normalise(url: str, expected: str) -> None:
    assert normalise(url) == expected
    assert normalise(expected) == expected


@pytest.mark.parametrize(
    "url",
    [
        "/relative/path",
        "mailto:someone@example.org",
        "gemini:///no-host",
        "gemini://example.org:99999/",
        "gemini://example.org:0/",
        "gemini://example.org:x/",
        "gemini://user@example.org/",
        "gemini://exa mple.org/",
        "gemini://[not-ipv6]/",
        "gemini://a..b/",
    ],
)
def test_normalise_refuses(url: str) -> None:
    with pytest.raises(ValueError):
        normalise(url)


BASE = "gemini://a/b/c/d;p?q"


@pytest.mark.parametrize(
    ("reference", "expected"),
    [  # RFC 3986 §5.4, with the base's scheme gemini (which urljoin cannot resolve)
        ("g:h", "g:h"),
        ("g", "gemini://a/b/c/g"),
        ("./g", "gemini://a/b/c/g"),
        ("g/", "gemini://a/b/c/g/"),
        ("/g", "gemini://a/g"),
        ("//g", "gemini://g"),
        ("?y", "gemini://a/b/c/d;p?y"),
        ("g?y", "gemini://a/b/c/g?y"),
        ("#s", "gemini://a/b/c/d;p?q#s"),
        ("g?y#s", "gemini://a/b/c/g?y#s"),
        (";x", "gemini://a/b/c/;x"),
        ("", "gemini://a/b/c/d;p?q"),
        (".", "gemini://a/b/c/"),
        ("./", "gemini://a/b/c/"),
        ("..", "gemini://a/b/"),
        ("../", "gemini://a/b/"),
        ("../g", "gemini://a/b/g"),
        ("../..", "gemini://a/"),
        ("../../g", "gemini://a/g"),
        ("../../../g", "gemini://a/g"),
        ("../../../../g", "gemini://a/g"),
        ("/./g", "gemini://a/g"),
        ("/../g", "gemini://a/g"),
        ("g.", "gemini://a/b/c/g."),
        (".g", "gemini://a/b/c/.g"),
        ("..g", "gemini://a/b/c/..g"),
        ("./../g", "gemini://a/b/g"),
        ("./g/.", "gemini://a/b/c/g/"),
        ("g/./h", "gemini://a/b/c/g/h"),
        ("g/../h", "gemini://a/b/c/h"),
        ("g;x=1/./y", "gemini://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "gemini://a/b/c/y"),
        ("g?y/./x", "gemini://a/b/c/g?y/./x"),
        ("g#s/../x", "gemini://a/b/c/g#s/../x"),
        ("gemini:g", "gemini:g"),  # strict parser
    ],
)
def test_resolve_rfc3986_examples(reference: str, expected: str) -> None:
    assert resolve(reference, BASE) == expected


def test_normalise_resolves_gemtext_links() -> None:
    page = "gemini://localhost/docs/index.gmi"
    assert normalise("../about.gmi#top", page) == "gemini://localhost/about.gmi"
    assert normalise("sub/", page) == "gemini://localhost/docs/sub/"
    assert normalise("//other.example:1965/x", page) == "gemini://other.example/x"
    assert normalise("gopher://localhost:7070/1/", page) == "gopher://localhost:7070/1/"
    assert normalise("?q=1", "gemini://localhost") == "gemini://localhost/?q=1"
    assert normalise("x", "gemini://localhost") == "gemini://localhost/x"
    with pytest.raises(ValueError):
        normalise("mailto:me@example.org", page)


def test_resolving_against_gopher_keeps_dot_segments() -> None:
    assert normalise("../x", "gopher://h/1/dir/") == "gopher://h/1/dir/../x"
    assert normalise("/0/file", "gopher://h:7070/1/dir") == "gopher://h:7070/0/file"


def test_authority() -> None:
    assert authority("gemini://Example.org/x") == "gemini://example.org:1965"
    assert authority("gemini://example.org:1966/") == "gemini://example.org:1966"
    assert authority("gopher://example.org") == "gopher://example.org:70"
    assert authority("gopher://[::1]:7070/0/x") == "gopher://[::1]:7070"


# -- Gopher URLs (RFC 4266) ----------------------------------------------------------


def test_gopher_ref() -> None:
    assert gopher_ref("gopher://h") == GopherRef("h", 70, "1", "", None)
    assert gopher_ref("gopher://h/") == GopherRef("h", 70, "1", "", None)
    assert gopher_ref("gopher://h:7070/0/robots.txt") == GopherRef("h", 7070, "0", "/robots.txt", None)
    assert gopher_ref("gopher://h/00/x") == GopherRef("h", 70, "0", "0/x", None)  # type char repeated
    assert gopher_ref("gopher://h/0a%20b%25c") == GopherRef("h", 70, "0", "a b%c", None)
    assert gopher_ref("gopher://h/0cgi?a=1#f") == GopherRef("h", 70, "0", "cgi?a=1", None)
    ref = gopher_ref("gopher://h/7/search%09two words")
    assert ref == GopherRef("h", 70, "7", "/search", "two words")
    assert ref.request() == b"/search\ttwo words\r\n"
    assert gopher_ref("gopher://h/0/x").request() == b"/x\r\n"
    with pytest.raises(ValueError):
        gopher_ref("gemini://h/")


def test_gopher_url_escapes_what_it_must() -> None:
    assert gopher_url("Example.org", 70, "1", "") == "gopher://example.org/"
    assert gopher_url("h", 7070, "0", "/a b#c%d?e") == "gopher://h:7070/0/a%20b%23c%25d?e"
    assert gopher_url("h", 70, "7", "/s", "x y") == "gopher://h/7/s%09x%20y"
    assert gopher_url("::1", 70, "0", "/x") == "gopher://[::1]/0/x"
    assert gopher_url("h", 70, "I", "/é.png") == "gopher://h/I/%C3%A9.png"
    with pytest.raises(ValueError):
        gopher_url("h", 70, "", "/x")
    with pytest.raises(ValueError):
        gopher_url("h", 0, "0", "/x")


def test_selectors_that_are_not_utf8_round_trip() -> None:
    raw = b"/caf\xe9.txt"  # Latin-1
    url = gopher_url("h", 70, "0", selector_text(raw))
    assert url == "gopher://h/0/caf%E9.txt"
    assert selector_bytes(gopher_ref(url).selector) == raw
    assert gopher_ref(url).request() == raw + b"\r\n"


SELECTORS = st.text(st.characters(blacklist_characters="\t\r\n", blacklist_categories=("Cs",)), max_size=30)


@given(
    st.sampled_from("0145679ghIdsx;"),
    SELECTORS,
    st.one_of(st.none(), SELECTORS),
    st.integers(1, 65535),
)
def test_gopher_url_round_trips(item_type: str, selector: str, search: str | None, port: int) -> None:
    url = gopher_url("example.org", port, item_type, selector, search)
    ref = gopher_ref(url)
    if not (item_type == "1" and selector == "" and search is None):
        assert (ref.item_type, ref.selector, ref.search, ref.port) == (item_type, selector, search, port)
    assert normalise(url) == url


URL_CHARS = st.sampled_from([*"abcAB09-._~!$&'()*+,;=:@/?#%[] é\t", "%2e", "%2F", "%7E", "..", "./"])
URL_TAILS = st.lists(URL_CHARS, max_size=25).map("".join)


@given(
    st.sampled_from(["gemini", "GEMINI", "gopher", "https", "x-other"]),
    st.sampled_from(["example.org", "EXAMPLE.org", "[::1]", "127.0.0.1", "bücher.example", "h:1965", "h:70"]),
    URL_TAILS,
)
def test_normalise_is_idempotent(scheme: str, host: str, tail: str) -> None:
    try:
        once = normalise(f"{scheme}://{host}/{tail}")
    except ValueError:
        return
    assert normalise(once) == once


@given(st.text(max_size=60), st.sampled_from(["gemini://h/a/b", "gopher://h/1/a/", "https://h/x?y"]))
def test_normalise_any_text_is_idempotent_or_refused(text: str, base: str) -> None:
    try:
        once = normalise(text, base)
    except ValueError:
        return
    assert normalise(once) == once


# -- Gopher menus ----------------------------------------------------------------------


def test_pygopherd_menu_with_gopher_plus_fields() -> None:
    menu = parse_menu(capture("pygopherd-3.1.0_root-menu.bin"))
    assert menu.error is None and menu.title is None
    assert [(i.item_type, i.display, i.selector, i.plus) for i in menu.items] == [
        ("1", "docs", "/docs", "+"),
        ("1", "private", "/private", "+"),
    ]
    assert menu.links() == ("gopher://127.0.0.1:7071/1/docs", "gopher://127.0.0.1:7071/1/private")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("gophernicus-3.1.1_missing-dir-trailing-slash.bin", "Error: File or directory not found! (null)"),
        ("pygopherd-3.1.0_missing-file.bin", "'/nonexistent.txt' does not exist (no handler found)"),
        ("pygopherd-3.1.0_sel-0-robots.txt.bin", "'/0/robots.txt' does not exist (no handler found)"),
    ],
)
def test_type3_menus_are_errors(name: str, message: str) -> None:
    data = capture(name)
    menu = parse_menu(data)
    assert menu.error == message
    assert menu.title is None  # gophernicus' 3 line has selector TITLE, but only an i line titles
    assert menu.links() == ()
    assert error_reply(data) == message
    assert gopher_action("1", data).kind == "error"


@pytest.mark.parametrize(
    "name", ["gophernicus-3.1.1_missing-file.bin", "gophernicus-3.1.1_sel-0-robots.txt.bin"]
)
def test_gophernicus_plain_error_page(name: str) -> None:
    data = capture(name)
    assert error_reply(data) == "Error: File or directory not found! (null)"
    action = gopher_action("0", data)
    assert action.kind == "error" and "not found" in action.reason


@pytest.mark.parametrize(
    "name",
    [
        "gophernicus-3.1.1_sel-robots.txt.bin",
        "pygopherd-3.1.0_sel-robots.txt.bin",
        "gophernicus-3.1.1_caps.txt.bin",
        "pygopherd-3.1.0_root-menu.bin",
    ],
)
def test_real_files_and_menus_are_not_errors(name: str) -> None:
    data = capture(name)
    assert error_reply(data) is None
    assert gopher_action("0", data).kind == "store"


def test_caps_txt_capture_is_text() -> None:
    data = capture("gophernicus-3.1.1_caps.txt.bin")
    assert text_body(data) == data
    assert text_body(data).startswith(b"CAPS\r\n")


SAMPLE_MENU = (
    b"iA hole with a title\tTITLE\texample.com\t0\r\n"
    b"iWelcome, reader.\t\texample.com\t0\r\n"
    b"1Docs\t/docs\tHole.Example\t70\r\n"
    b"0About\t/about.txt\thole.example\t70\t+\r\n"
    b"5Software\t/soft.zip\thole.example\t70\r\n"
    b"+Mirror one\t/mirror/soft.zip\tmirror.example\t7070\r\n"
    b"+Mirror two\t/soft.zip\tmirror2.example\t70\r\n"
    b"hWeb page\tURL:http://www.example.com/\thole.example\t70\r\n"
    b"1Capsule\tURL:gemini://capsule.example/\thole.example\t70\r\n"
    b"7Search\t/search\thole.example\t70\r\n"
    b"8Telnet\t\tbbs.example\t23\r\n"
    b"0Broken port\t/x\thole.example\tseventy\r\n"
    b"0Port too big\t/x\thole.example\t70000\r\n"
    b"0Missing fields\t/x\r\n"
    b"Just text, no tabs\r\n"
    b"iAnother title\tTITLE\texample.com\t0\r\n"
    b"\r\n"
    b"1Docs again\t/docs\thole.example\t70\r\n"
    b".\r\n"
)


def test_menu_items() -> None:
    menu = parse_menu(SAMPLE_MENU)
    assert menu.title == "A hole with a title"
    assert menu.error is None
    by_line = {item.line: item for item in menu.items}
    assert 17 not in by_line and 19 not in by_line  # the blank line and the final "."
    assert by_line[1].item_type == "i" and by_line[1].url is None
    assert by_line[3].url == "gopher://hole.example/1/docs" and by_line[3].host == "Hole.Example"
    assert by_line[4].plus == "+" and by_line[4].url == "gopher://hole.example/0/about.txt"
    mirror = by_line[6]
    assert (mirror.item_type, mirror.mirror, mirror.url) == (
        "5",
        True,
        "gopher://mirror.example:7070/5/mirror/soft.zip",
    )
    assert by_line[7].item_type == "5" and by_line[7].mirror
    web = by_line[8]
    assert (web.external, web.url) == (True, "http://www.example.com/")
    assert (by_line[9].external, by_line[9].url) == (True, "gemini://capsule.example/")
    assert by_line[10].url == "gopher://hole.example/7/search"
    assert by_line[12].url is None and by_line[12].port == 0 and by_line[12].item_type == "0"  # unlinkable
    assert by_line[13].url is None
    assert (by_line[14].item_type, by_line[14].display, by_line[14].url) == ("i", "Missing fields", None)
    assert (by_line[15].item_type, by_line[15].display) == ("i", "Just text, no tabs")
    assert menu.links() == (
        "gopher://hole.example/1/docs",
        "gopher://hole.example/0/about.txt",
        "gopher://hole.example/5/soft.zip",
        "http://www.example.com/",
        "gemini://capsule.example/",
        "gopher://hole.example/7/search",
        "gopher://bbs.example:23/8",
    )


def test_menu_line_endings_and_terminator_do_not_matter() -> None:
    lf = SAMPLE_MENU.replace(b"\r\n", b"\n")
    for variant in (lf, SAMPLE_MENU.removesuffix(b".\r\n"), lf.removesuffix(b".\n"), lf + b"\n\n"):
        assert parse_menu(variant) == parse_menu(SAMPLE_MENU)


def test_menu_edge_cases() -> None:
    assert parse_menu(b"") == parse_menu(b".\r\n")
    assert parse_menu(b"").items == () and parse_menu(b"").error is None
    first_plus = parse_menu(b"+Orphan mirror\t/x\th\t70\r\n").items[0]
    assert (first_plus.item_type, first_plus.mirror, first_plus.url) == ("+", True, None)
    assert parse_menu(b"3\t\terror.host\t1\r\n").error == "error"
    assert parse_menu(b"3Gone\r\n").error == "Gone"  # a short 3 line still says error
    assert parse_menu(b"0File\t/f\t\t70\r\n").items[0].url is None  # no host
    info = parse_menu(b"iURL:not a link\tURL:gemini://x/\th\t70\n").items[0]
    assert info.url is None and not info.external
    assert parse_menu("1Caf\xe9\t/caf\xe9\th\t70\n".encode("latin-1")).items[0].display == "Caf\ufffd"


@settings(max_examples=300)
@given(st.binary(max_size=400))
def test_parse_menu_never_raises(data: bytes) -> None:
    menu = parse_menu(data)
    for item in menu.items:
        assert len(item.item_type) == 1 and item.line >= 1
    error_reply(data)
    text_body(data)


MENU_PIECES = st.sampled_from(
    [
        b"\t",
        b"\r\n",
        b"\n",
        b".",
        b"1",
        b"i",
        b"3",
        b"+",
        b"h",
        b"URL:",
        b"TITLE",
        b"70",
        b"host",
        b"/x",
        b"\xff",
    ]
)


@settings(max_examples=300)
@given(st.lists(MENU_PIECES, max_size=40).map(b"".join))
def test_parse_menu_never_raises_on_menu_like_bytes(data: bytes) -> None:
    menu = parse_menu(data)
    for url in menu.links():
        assert url.startswith("gopher://") or any(item.external for item in menu.items)


@pytest.mark.parametrize(
    ("data", "body"),
    [
        (b"line\r\n.\r\n", b"line\r\n"),
        (b"line\n.\n", b"line\n"),
        (b"line\n.", b"line\n"),
        (b"line\n.\n\n", b"line\n"),
        (b".\r\n", b""),
        (b"line\n", b"line\n"),
        (b"line\n..\n", b"line\n..\n"),
        (b"ends with a.\n", b"ends with a.\n"),
        (b"a\n.\nb\n", b"a\n.\nb\n"),  # a "." that does not end the reply is content
        (b"", b""),
    ],
)
def test_text_body(data: bytes, body: bytes) -> None:
    assert text_body(data) == body


def test_error_reply_shapes() -> None:
    assert error_reply(b"") is None
    assert error_reply(b"Error: gone\r\n") == "Error: gone"
    assert error_reply(b"Error: the first of\nmany\nlines\nof a real\nlog file\n") is None
    assert error_reply(b"3 reasons to use Gopher\nare many\n") is None  # a text starting with 3
    assert error_reply(b"3Bad \x1b[31mred\t\terror.host\t1\r\n") == "Bad ?[31mred"  # no raw escapes


def test_item_type_policy() -> None:
    assert set("0146hpx") == TEXT_TYPES  # the draft: 4, 6, h, p, x "SHOULD send as text"
    assert set("59gIds;cm") == BINARY_TYPES
    assert set("728Ti3") == NEVER_TYPES
    assert not (TEXT_TYPES & BINARY_TYPES or TEXT_TYPES & NEVER_TYPES or BINARY_TYPES & NEVER_TYPES)
    for t in TEXT_TYPES:
        assert fetchable(t, []) and fetchable(t, ["indexer"])
    for t in BINARY_TYPES:
        assert fetchable(t, ["archiver"]) and fetchable(t, "archiver")
        assert not fetchable(t, ["indexer"]) and not fetchable(t, [])
    for t in [*NEVER_TYPES, "+", "M", "P", "?"]:
        assert not fetchable(t, ["archiver", "indexer"])


# -- Gemtext ---------------------------------------------------------------------------

GEMTEXT = """\
# The capsule
Some text with => an arrow that is no link.
=> gemini://localhost/a.gmi A link
=>b.gmi
=>\tc.gmi\t  Tabbed   label  \r
=>    ../d.gmi#part
=>
=>   \t
```fake
=> gemini://localhost/fake.gmi Not a link
# Not the title
```
=> e.gmi after the block
## A second-level heading
"""


def test_links() -> None:
    assert links(GEMTEXT) == [
        Link(3, "gemini://localhost/a.gmi", "A link"),
        Link(4, "b.gmi", ""),
        Link(5, "c.gmi", "Tabbed   label"),
        Link(6, "../d.gmi#part", ""),
        Link(13, "e.gmi", "after the block"),
    ]


def test_links_resolve_against_the_page() -> None:
    page = "gemini://localhost/dir/index.gmi"
    assert [normalise(link.target, page) for link in links(GEMTEXT)] == [
        "gemini://localhost/a.gmi",
        "gemini://localhost/dir/b.gmi",
        "gemini://localhost/dir/c.gmi",
        "gemini://localhost/d.gmi",
        "gemini://localhost/dir/e.gmi",
    ]


def test_unclosed_preformatted_block_hides_the_rest() -> None:
    assert links("```\n=> a.gmi\n") == []
    assert links("```\n```\n=> a.gmi\n") == [Link(3, "a.gmi", "")]


def test_title() -> None:
    assert title(GEMTEXT) == "The capsule"
    assert title("## Sub\n#NoSpace\n# Later\n") == "NoSpace"
    assert title("#\n#   \n# Real\n") == "Real"
    assert title("```\n# hidden\n```\ntext\n") is None
    assert title("") is None


@given(st.text(max_size=300))
def test_gemtext_never_raises(text: str) -> None:
    for link in links(text):
        assert link.target and not any(c in link.target for c in " \t")
    title(text)


# -- What a Gemini status means --------------------------------------------------------


def test_gemini_table() -> None:
    url = "gemini://localhost/dir/page.gmi"
    assert gemini_action(10, "Your name?", url).kind == "input"
    assert gemini_action(11, "Password", url).kind == "input"
    stored = gemini_action(20, "text/gemini; charset=utf-8", url)
    assert (stored.kind, stored.mime) == ("store", "text/gemini; charset=utf-8")
    assert gemini_action(20, "", url).mime == "text/gemini"
    moved = gemini_action(30, "../other.gmi", url)
    assert (moved.kind, moved.target, moved.permanent) == ("redirect", "gemini://localhost/other.gmi", False)
    gone = gemini_action(31, "gemini://Elsewhere.example:1965/x#f", url)
    assert (gone.kind, gone.target, gone.permanent) == ("redirect", "gemini://elsewhere.example/x", True)
    assert gemini_action(31, "https://example.org/", url).target == "https://example.org/"
    for status in (40, 41, 42, 43):
        assert gemini_action(status, "busy", url).kind == "retry"
    for status in (50, 51, 52, 53, 59):
        assert gemini_action(status, "no", url).kind == "error"
    for status in (60, 61, 62):
        assert gemini_action(status, "cert", url).kind == "certificate"


def test_slow_down() -> None:
    url = "gemini://localhost/"
    assert gemini_action(44, "5", url).wait == 5.0
    assert gemini_action(44, " 2.5 ", url).wait == 2.5
    for meta in ("", "soon", "-3", "nan", "inf"):
        action = gemini_action(44, meta, url)
        assert (action.kind, action.wait) == ("slow-down", None)


def test_unknown_statuses_go_by_their_first_digit() -> None:
    url = "gemini://localhost/"
    assert gemini_action(12, "?", url).kind == "input"
    assert gemini_action(21, "text/plain", url).kind == "store"
    assert gemini_action(39, "/x", url).kind == "redirect"
    assert gemini_action(49, "", url).kind == "retry"
    assert gemini_action(57, "", url).kind == "error"
    assert gemini_action(69, "", url).kind == "certificate"
    for status in (0, 7, 70, 99, 100):
        assert gemini_action(status, "", url).kind == "error"


def test_redirect_without_usable_target_is_an_error() -> None:
    assert gemini_action(30, "", "gemini://localhost/").kind == "error"
    assert gemini_action(31, "gemini://bad host/", "gemini://localhost/").kind == "error"


def test_reason_is_safe_to_show() -> None:
    action = gemini_action(51, "Not \x1b[2J found", "gemini://localhost/")
    assert action.reason == "51 not found: Not ?[2J found"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("jetforce-1.0.0_docs.bin", "redirect"),
        ("jetforce-1.0.0_missing.txt.bin", "error"),
        ("jetforce-1.0.0_robots.txt.bin", "store"),
        ("jetforce-1.0.0_wrong-host.bin", "error"),
    ],
)
def test_jetforce_captures(name: str, kind: str) -> None:
    header = gemini_header(capture(name))
    assert header is not None
    status, meta, _ = header
    action = gemini_action(status, meta, "gemini://localhost/docs")
    assert action.kind == kind
    if kind == "redirect":
        assert action.target == "gemini://localhost/docs/" and action.permanent
    if kind == "store":
        assert media_type(action.mime or "") == "text/plain"


def test_media_type_and_charset() -> None:
    assert media_type("Text/Gemini; charset=UTF-8") == "text/gemini"
    assert charset('text/gemini; lang=en; charset="ISO-8859-1"') == "iso-8859-1"
    assert charset("text/gemini") == "utf-8"
