"""A page's links, found and normalised fast, in bounded time and memory (pure).

Every page the crawler fetches comes through here, so this is its inner loop.  What a
link *is* stays defined where it was, and the answers here are the same: a gemtext
link is a ``gemtext.links`` line resolved with ``urls.normalise(target, base)``; a
menu's links are ``gophermap.parse_menu``'s (``URL:`` targets through
``urls.normalise``).  What changes is the cost:

- One regular-expression pass over the page finds the link lines: no list of lines
  and no object per line, so a million-line menu costs the memory of its bytes.
- The shapes nearly every link has (an absolute path of safe characters, a plain
  relative name, a gemini:// or gopher:// URL already in normal form) are normalised
  by gluing the target onto a prefix that ``urls.normalise`` itself computed for the
  page; any other shape goes to ``urls.normalise``.  The property tests hold the two
  roads to the same answer.
- A target is normalised once per page, and past ``max_links`` distinct links the
  rest are only counted.
- The ``_async`` variants give the event loop back every few milliseconds, so a
  5 MiB page never stalls the other connections.

A link the crawler could never request is no link: it goes to ``Found.skipped`` with
the reason (``urls.normalise`` refused it, or ``request_problem`` names what is wrong).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Generator
from dataclasses import dataclass
from urllib.parse import quote

from . import urls
from .gophermap import parse_menu, port_number

MAX_REQUEST_BYTES = 1024  # the longest URL (and Gopher selector) we send
SKIPPED_KEPT = 100  # Skipped entries kept per page; skipped_count has them all
TARGET_CUT = 200  # characters of a skipped target kept
# A target this long (fragment cut, ends stripped) normalises to more than 1,024 bytes
# unless dot segments shrink it (%-escapes shrink at most 3 to 1), and normalising it
# could hold the event loop: it is skipped unread.
LONGEST_TARGET = 8 * MAX_REQUEST_BYTES
SLICE = 0.005  # seconds of work between two returns to the event loop (async variants)
WINDOW = 1 << 16  # characters of page scanned between two looks at the clock


@dataclass(frozen=True)
class Link:
    """One distinct link of a page, ready for the frontier."""

    url: str  # normalised absolute URL (urls.normalise result), any scheme
    item_type: str | None  # Gopher item type of a gopher:// URL ("1" when the path is empty), else None
    mirror: bool = False  # a Gopher "+" line (alternative of the previous item): recorded, not crawled


@dataclass(frozen=True)
class Skipped:
    """A link that can never be requested, and why: reported, never queued."""

    target: str  # the link as written, cut to 200 characters
    reason: str  # one sentence: why it can never be requested


@dataclass(frozen=True)
class Found:
    """What a page links to."""

    links: list[Link]  # distinct by url, page order, at most max_links (mirrors count too)
    more: int  # link lines past max_links: counted, not normalised
    skipped: list[Skipped]  # at most SKIPPED_KEPT kept; skipped_count has the total
    skipped_count: int
    title: str | None  # gemtext: first "# " heading; menu: first i-line with selector TITLE
    error: str | None = None  # a menu whose first item is type 3: its error message


# -- request_problem ----------------------------------------------------------------------


def request_problem(url: str) -> str | None:
    """None when ``url`` can be requested cleanly, else the reason in one sentence.

    A request line that a server would read differently from what the URL says (a CR or
    LF ends it early, a TAB starts a search the item does not take) or that is longer
    than servers take is never sent: better one skipped record than a confused server.
    """
    return _inspect(url)[0]


def _inspect(url: str) -> tuple[str | None, str | None]:
    """(request_problem, Gopher item type or None)."""
    item_type = None
    if urls.scheme(url) == "gopher":
        try:
            ref = urls.gopher_ref(url)
        except ValueError as exc:
            return f"it cannot be read as a Gopher URL ({exc}).", None
        item_type = ref.item_type
        line = ref.selector if ref.search is None else ref.selector + ref.search
        if "\r" in line or "\n" in line or "\0" in line:
            return _BROKEN, item_type
        if "\t" in ref.selector or (ref.search is not None and item_type != "7"):
            return _searching(item_type), item_type
        try:
            size = len(urls.selector_bytes(ref.selector))
        except UnicodeEncodeError:
            return "its selector holds characters that cannot be sent as bytes.", item_type
        if size > MAX_REQUEST_BYTES:
            return _long_selector(size), item_type
    size = len(url) if len(url) * 4 <= MAX_REQUEST_BYTES else _utf8_size(url)
    if size > MAX_REQUEST_BYTES:
        return _long_url(size), item_type
    return None, item_type


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


_BROKEN = "its selector holds a CR, LF or NUL, which would end or break the request line."


def _searching(item_type: str) -> str:
    return f"it sends a type-{item_type} item a search part (a TAB, %09), which only a type-7 search takes."


def _long_selector(size: int) -> str:
    return f"its selector is {size:,} bytes long, over the {MAX_REQUEST_BYTES:,} a request may carry."


def _long_url(size: int) -> str:
    return f"the URL is {size:,} bytes long, over the {MAX_REQUEST_BYTES:,} a request may carry."


# -- shapes normalised without urls.normalise ---------------------------------------------


def _chars(chars: str) -> str:
    """``chars`` written for a regular-expression character class."""
    return "".join(re.escape(c) for c in chars)


_QUERY_SAFE = urls._QUERY_SAFE
_P = _chars(urls._PATH_SAFE)  # left as they are in a path: no escape, no "%"
_Q = _chars(urls._QUERY_SAFE)  # ... in a query (and in a whole Gopher path)
_SEGMENT = _chars(urls._PATH_SAFE.replace(":", "").replace("/", ""))  # no ":": "a:b" has a scheme
_FIRST = _chars(urls._PATH_SAFE.replace(":", "").replace("/", "").replace(".", ""))  # no dot segment
_TARGET = re.compile(
    rf"(?:(/(?!/)[{_P}]*(?:\?[{_Q}]*)?)"  # 1: an absolute path (and query)
    rf"|([{_FIRST}][{_SEGMENT}]*(?:/[{_P}]*)?(?:\?[{_Q}]*)?)"  # 2: a relative name (and query)
    # 3-6: a gemini:// or gopher:// URL with a host that may be in normal form
    rf"|(gemini|gopher)://([a-z0-9.\-]+(?::[0-9]{{1,5}})?)(/[{_P}]*)?(\?[{_Q}]*)?"
    r")(?:#.*)?",  # a fragment: dropped
    re.DOTALL,
)


def _prefix(base: str, probe: str) -> str | None:
    """What ``urls.normalise`` puts before ``probe`` resolved against ``base``, or None."""
    try:
        url = urls.normalise(probe, base)
    except ValueError:
        return None
    return url[: -len(probe)] if url.endswith(probe) else None


def _normal_head(head: str) -> bool:
    """Whether ``scheme://authority`` is already as ``urls.normalise`` writes it."""
    try:
        return urls.normalise(head + "/") == head + "/"
    except ValueError:
        return False


def _gopher_type(url: str) -> str:
    """The item type of a gopher:// URL whose path holds no %-escape."""
    slash = url.find("/", 9)  # after "gopher://"
    return url[slash + 1] if slash + 1 < len(url) else "1"


class _Normaliser:
    """``urls.normalise(target, base)`` for one base, fast for the common shapes.

    The prefixes come from ``urls.normalise`` itself (with probe targets "/x" and
    "x"), so the base's scheme, host, port and directory are spelled exactly as it
    spells them; a target that is safe characters only and holds no dot segment
    (Gopher keeps those anyway), no "%" and no scheme normalises to prefix + target.
    """

    def __init__(self, base: str | None) -> None:
        self.base = base
        self.absolute = _prefix(base, "/x") if base is not None else None  # "scheme://host[:port]"
        self.relative = _prefix(base, "x") if base is not None else None
        self.gopher = (self.absolute or self.relative or "").startswith("gopher:")
        self.heads: dict[str, bool] = {}
        # a base with no scheme makes urls.normalise refuse every target, absolute ones too
        self.refuses = base is not None and urls.scheme(base) is None

    def fast(self, target: str) -> str | None:
        """The normalised URL, or None when the target needs ``urls.normalise``."""
        m = _TARGET.fullmatch(target)
        if m is None or self.refuses:
            return None
        kept = m[1]
        if kept is not None:
            if self.absolute is None:
                return None
            if self.gopher:
                return self.absolute + ("/" if kept == "/1" else kept)  # /1 is the root menu
            return None if "/." in kept else self.absolute + kept
        kept = m[2]
        if kept is not None:
            if self.relative is None:
                return None
            if self.gopher:
                return None if kept == "1" else self.relative + kept
            return None if "/." in kept else self.relative + kept
        head = target[: m.end(4)]
        normal = self.heads.get(head)
        if normal is None:
            normal = self.heads[head] = _normal_head(head)
        if not normal:
            return None
        path, query = m[5], m[6]
        if m[3] == "gemini":
            if path is not None and "/." in path:
                return None
            return head + (path or "/") + (query or "")
        rest = (path or "/") + (query or "")
        return head + ("/" if rest == "/1" else rest)

    def slow(self, target: str) -> tuple[str, str | None] | str:
        """(URL, item type) through ``urls.normalise``, or why the target is skipped."""
        text = target.strip(urls._STRIP)
        hash_ = text.find("#")
        if hash_ >= 0:
            text = text[: hash_ + 1]  # the fragment is dropped anyway: never read it
        if len(text) > LONGEST_TARGET:
            return f"it is {len(text):,} characters long, far over the {MAX_REQUEST_BYTES:,} bytes a request may carry."  # noqa: E501
        try:
            url = urls.normalise(text, self.base)
        except ValueError as exc:
            return f"it cannot be read as a URL the crawler can request ({exc})."
        problem, item_type = _inspect(url)
        return problem if problem is not None else (url, item_type)


# -- the scan ----------------------------------------------------------------------------


class _Collect:
    """Distinct links in page order, skipped targets, and the count past max_links."""

    def __init__(self, max_links: int) -> None:
        self.max_links = max_links
        self.seen: dict[str, Link] = {}
        self.full = max_links <= 0
        self.more = 0
        self.skipped: list[Skipped] = []
        self.skipped_count = 0
        self.done: set[str] = set()  # targets already handled (the per-call memo)
        self.done_max = 4 * max(max_links, 0) + 1024  # a memo of bounded size
        self.refused: set[str] = set()  # targets skipped so far

    def skip(self, target: str, reason: str) -> None:
        """Record a target that can never be requested, once per page."""
        if target in self.refused:
            return
        if len(self.refused) < self.done_max:
            self.refused.add(target)
        self.skipped_count += 1
        if len(self.skipped) < SKIPPED_KEPT:
            self.skipped.append(Skipped(target[:TARGET_CUT], reason))

    def add(self, url: str, item_type: str | None, mirror: bool = False) -> None:
        old = self.seen.get(url)
        if old is None:
            self.seen[url] = Link(url, item_type, mirror)
            self.full = len(self.seen) >= self.max_links
        elif old.mirror and not mirror:
            # the crawler follows an item and records an alternative: an item beats a
            # mirror of the same URL, at the item's place (as Menu.links orders them)
            del self.seen[url]
            self.seen[url] = Link(url, item_type)

    def found(self, title: str | None, error: str | None = None) -> Found:
        return Found(list(self.seen.values()), self.more, self.skipped, self.skipped_count, title, error)


def _clock(budget: float | None) -> float:
    return time.perf_counter() + budget if budget is not None else float("inf")


# -- gemtext -----------------------------------------------------------------------------

# A link line (1: its target), a preformatting toggle (2), a level-1 heading (3: its text).
_GEM_ALL = re.compile(r"^(?:=>[ \t]*([^ \t\n]+)|(```)|#(?!#)([^\n]*))", re.MULTILINE)
_GEM_LINKS = re.compile(r"^(?:=>[ \t]*([^ \t\n]+)|(```))", re.MULTILINE)  # once the title is known


def gemtext_links(text: str, base: str, max_links: int = 10_000) -> Found:
    """The links of a gemtext page fetched from ``base``, resolved and normalised."""
    return _run(_gemtext(text, base, max_links, None))


async def gemtext_links_async(text: str, base: str, max_links: int = 10_000) -> Found:
    """``gemtext_links``, giving the event loop back every few milliseconds."""
    return await _run_async(_gemtext(text, base, max_links, SLICE))


def _gemtext(text: str, base: str, max_links: int, budget: float | None) -> Generator[None, None, Found]:
    """The scan; it yields when ``budget`` seconds of work have passed since the last yield."""
    out = _Collect(max_links)
    norm = _Normaliser(base)
    seen, done, done_max = out.seen, out.done, out.done_max
    fast, add = norm.fast, out.add
    pattern = _GEM_ALL
    title: str | None = None
    pre = False
    deadline = _clock(budget)
    size = len(text)
    pos = 0
    while pos < size:
        end = text.find("\n", pos + WINDOW)
        end = size if end < 0 else end + 1
        for m in pattern.finditer(text, pos, end):
            group = m.lastindex
            if group == 1:
                if pre:
                    continue
                target = m[1]
                if target[-1] == "\r":  # a CR ending the line is not the target's
                    after = m.end()
                    if after == size or text[after] == "\n":
                        target = target[:-1]
                        if not target:
                            continue
                if target in done:
                    continue
                if len(done) < done_max:
                    done.add(target)
                if out.full:
                    out.more += 1
                    continue
                url = fast(target)
                if url is not None:
                    if url in seen:
                        continue
                    if len(url) > MAX_REQUEST_BYTES:
                        problem, item_type = _inspect(url)
                        if problem is not None:
                            out.skip(target, problem)
                            continue
                        add(url, item_type)
                    else:
                        add(url, _gopher_type(url) if url.startswith("gopher:") else None)
                    continue
                result = norm.slow(target)
                if isinstance(result, str):
                    out.skip(target, result)
                else:
                    add(*result)
                if time.perf_counter() > deadline:
                    yield
                    deadline = _clock(budget)
            elif group == 2:
                pre = not pre
            elif not pre:
                heading = m[3].removesuffix("\r").strip(" \t")
                if heading:
                    title = heading
                    pattern = _GEM_LINKS
                    pos = m.end()
                    break
        else:
            pos = end
        if time.perf_counter() > deadline:
            yield
            deadline = _clock(budget)
    return out.found(title)


# -- Gopher menus --------------------------------------------------------------------------

_QB = _Q.encode("ascii")
_FAST_TYPES = _chars("".join(c for c in urls._QUERY_SAFE if c not in "+i3")).encode("ascii")
# A menu line with four fields or more, whose type is not i or 3:
#   1-3: type, selector, host TAB port of one whose type and selector need no escaping;
#   4-7: type, display, selector, host TAB port of any other;
# and 8-9: type and display of any line whose selector is TITLE (until the title is known).
_MENU_FAST = rb"([" + _FAST_TYPES + rb"])[^\t\n]*\t((?!URL:)[" + _QB + rb"]*)\t([^\t\n]*\t[^\t\n]*)"
_MENU_SLOW = rb"([^\n3i])([^\t\n]*)\t([^\t\n]*)\t([^\t\n]*\t[^\t\n]*)"
_MENU_TITLE = rb"([^\n])([^\t\n]*)\tTITLE(?=\t|\r?\n|\r?\Z)"
_MENU_ALL = re.compile(rb"^(?:" + _MENU_FAST + rb"|" + _MENU_SLOW + rb"|" + _MENU_TITLE + rb")", re.M)
_MENU_LINKS = re.compile(rb"^(?:" + _MENU_FAST + rb"|" + _MENU_SLOW + rb")", re.M)
# A line parse_menu skips: white space, or a lone "." (bytes.strip's white space).
_BLANK = rb"[ \t\r\x0b\x0c]*\.?[ \t\r\x0b\x0c]*$"
_FIRST_ITEM = re.compile(rb"^(?!" + _BLANK + rb")[^\n]*", re.M)
# The last item line before the end of the searched range (matched from its start: the
# greedy ".*" jumps to the end and steps back, so the cost is the distance walked).
_LAST_ITEM = re.compile(rb"(?s:.*)^(?!" + _BLANK + rb")([^\n]*)", re.M)
_LAST_NOT_PLUS = re.compile(rb"(?s:.*)^(?!" + _BLANK + rb")(?!\+)([^\n]*)", re.M)
_WHITE = frozenset(b" \t\r\x0b\x0c")


def menu_links(body: bytes, max_links: int = 10_000) -> Found:
    """The links of a Gopher type-1 reply, as ``gophermap.parse_menu`` reads it."""
    return _run(_menu(body, max_links, None))


async def menu_links_async(body: bytes, max_links: int = 10_000) -> Found:
    """``menu_links``, giving the event loop back every few milliseconds."""
    return await _run_async(_menu(body, max_links, SLICE))


def _line_type(raw: bytes, previous: str | None) -> str:
    """A menu line's item type as parse_menu gives it (``raw`` without its newline)."""
    raw = raw.removesuffix(b"\r")
    item_type = raw[:1].decode("utf-8", "replace")
    if item_type == "+" and previous is not None:
        item_type = previous
    if raw.count(b"\t", 1) < 3 and item_type not in ("i", "3"):
        item_type = "i"
    return item_type


def _place(field: bytes) -> str:
    """The prefix ``gopher://host[:port]/`` of a menu line's host TAB port field as
    urls.gopher_url writes it, or "" when the line is unlinkable (parse_menu gives it no URL)."""
    host_field, _, port_field = field.partition(b"\t")
    host = host_field.decode("utf-8", "replace").strip()
    port = port_number(port_field.decode("utf-8", "replace").strip())
    if not port:
        return ""
    try:
        return urls.gopher_url(host, port, "x", "")[:-1]
    except ValueError:  # a host that cannot be one
        return ""


class _Menu:
    """The state of a menu scan that a "+" line needs: the last item before it."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.last: re.Match[bytes] | None = None  # the last matched item line
        self.typed: re.Match[bytes] | None = None  # ... if it is not a fast one: its type is
        self.typed_as = ""

    def type_of_last(self) -> str | None:
        last = self.last
        if last is None:
            return None
        if last is self.typed:
            return self.typed_as
        return chr(last[1][0])  # a fast line: its type is its first byte, ASCII

    def before(self, start: int) -> str | None:
        """The item type of the item before the line at ``start``, as parse_menu has it.

        Between the last matched line and ``start`` lie only lines the scan passed over:
        blank ones, ``i`` and ``3`` lines, and lines of fewer than four fields (a "+"
        line among them is one of those: a long "+" line is always matched)."""
        lo = self.last.end() if self.last is not None else 0
        m = _LAST_ITEM.match(self.body, lo, start)
        if m is None:
            return self.type_of_last()
        if m[1][:1] != b"+":
            return _line_type(m[1], None)
        m = _LAST_NOT_PLUS.match(self.body, lo, start)
        item_type = self.type_of_last() if m is None else _line_type(m[1], None)
        # then one short "+" line or more: each takes the type before it ("+" if none) and,
        # being short, becomes "i" unless that is "i" or "3"
        return item_type if item_type in ("i", "3") else "i"

    def remember(self, m: re.Match[bytes], item_type: str) -> None:
        self.last = self.typed = m
        self.typed_as = item_type

    def blank(self, start: int) -> bool:
        end = self.body.find(b"\n", start)
        return not self.body[start : end if end >= 0 else len(self.body)].strip()

    def short(self, start: int) -> bool:
        end = self.body.find(b"\n", start)
        raw = self.body[start : end if end >= 0 else len(self.body)].removesuffix(b"\r")
        return raw.count(b"\t", 1) < 3


def _menu(body: bytes, max_links: int, budget: float | None) -> Generator[None, None, Found]:
    """The scan; it yields when ``budget`` seconds of work have passed since the last yield."""
    out = _Collect(max_links)
    norm = _Normaliser(None)
    state = _Menu(body)
    seen, add = out.seen, out.add
    places: dict[bytes, str] = {}  # host TAB port field: its URL prefix, "" when unlinkable
    external: dict[str, tuple[str, str | None] | None] = {}  # URL: target: (URL, type), None if skipped
    error = None
    first = _FIRST_ITEM.search(body)
    if first is not None and first[0][:1] == b"3":
        error = parse_menu(first[0]).error  # parse_menu's own words for it
    pattern = _MENU_ALL
    title: str | None = None
    deadline = _clock(budget)
    size = len(body)
    pos = 0
    while pos < size:
        end = body.find(b"\n", pos + WINDOW)
        end = size if end < 0 else end + 1
        for m in pattern.finditer(body, pos, end):
            group = m.lastindex
            if group == 3:  # type and selector need no escaping, not "+", not URL:
                state.last = m
                field = m[3]
                place = places.get(field)
                if place is None:
                    place = places[field] = _place(field)
                if not place:
                    continue
                if out.full:
                    out.more += 1
                    continue
                path = m[1] + m[2]
                url = place if path == b"1" else place + path.decode("ascii")
                old = seen.get(url)
                if old is not None and not old.mirror:
                    continue
                if len(url) > MAX_REQUEST_BYTES:
                    size_ = len(m[2])
                    out.skip(url, _long_selector(size_) if size_ > MAX_REQUEST_BYTES else _long_url(len(url)))
                    continue
                add(url, chr(path[0]))
                continue
            if group == 9:  # a TITLE line not matched as a link line
                start = m.start()
                item_type = m[8].decode("utf-8", "replace")
                if item_type == "+":
                    item_type = state.before(start) or "+"
                if state.short(start) and item_type not in ("i", "3"):
                    item_type = "i"
                state.remember(m, item_type)
                display = m[9].decode("utf-8", "replace").strip()
                if item_type == "i" and display:
                    title = display
                    pattern = _MENU_LINKS
                    pos = m.end()
                    break
                continue
            # group 7: any other line of four fields or more
            start = m.start()
            raw_type = m[4]
            if raw_type[0] in _WHITE and state.blank(start):
                continue  # parse_menu skips a line of white space
            item_type = raw_type.decode("utf-8", "replace")
            mirror = item_type == "+"
            if mirror:
                item_type = state.before(start) or "+"
            state.remember(m, item_type)
            selector = m[6]
            if title is None and item_type == "i" and selector == b"TITLE":
                display = m[5].decode("utf-8", "replace").strip()
                if display:
                    title = display
                    pattern = _MENU_LINKS
                    pos = m.end()
                    break
            if selector.startswith(b"URL:"):
                if item_type in ("i", "3"):
                    continue
                target = urls.selector_text(selector)[4:].strip()
                if not target:
                    continue
                if target in external:
                    known = external[target]
                    if known is not None and not mirror:  # an item beats a mirror of the same URL
                        add(known[0], known[1])
                    continue
                if out.full:
                    out.more += 1
                    continue
                known = _external(out, norm, target)
                if len(external) < out.done_max:
                    external[target] = known
                if known is not None:
                    add(known[0], known[1], mirror)
                if time.perf_counter() > deadline:
                    yield
                    deadline = _clock(budget)
                continue
            if item_type in ("i", "3", "+"):
                continue
            field = m[7]
            place = places.get(field)
            if place is None:
                place = places[field] = _place(field)
            if not place:
                continue
            if out.full:
                out.more += 1
                continue
            # what urls.gopher_url writes after the authority (and urls.normalise keeps)
            path = item_type + urls.selector_text(selector)
            url = place + ("" if path == "1" else quote(path, safe=_QUERY_SAFE, errors="surrogateescape"))
            if url in seen and (mirror or not seen[url].mirror):
                continue
            if b"\r" in selector or b"\0" in selector:  # no LF: it would have ended the line
                out.skip(url, _BROKEN)
            elif len(selector) > MAX_REQUEST_BYTES:
                out.skip(url, _long_selector(len(selector)))
            elif len(url) > MAX_REQUEST_BYTES:
                out.skip(url, _long_url(len(url)))
            else:
                add(url, item_type, mirror)
        else:
            pos = end
        if time.perf_counter() > deadline:
            yield
            deadline = _clock(budget)
    return out.found(title, error)


def _external(out: _Collect, norm: _Normaliser, target: str) -> tuple[str, str | None] | None:
    """A ``URL:`` selector's target normalised on its own (no base): (URL, item type), or
    None when it is skipped (and recorded so)."""
    url = norm.fast(target)
    if url is not None:
        if len(url) <= MAX_REQUEST_BYTES:
            return url, (_gopher_type(url) if url.startswith("gopher:") else None)
        problem, item_type = _inspect(url)
        if problem is None:
            return url, item_type
        out.skip(target, problem)
        return None
    result = norm.slow(target)
    if isinstance(result, str):
        out.skip(target, result)
        return None
    return result


# -- running a scan ----------------------------------------------------------------------


def _run(scan: Generator[None, None, Found]) -> Found:
    while True:
        try:
            next(scan)
        except StopIteration as stop:
            result: Found = stop.value
            return result


async def _run_async(scan: Generator[None, None, Found]) -> Found:
    while True:
        try:
            next(scan)
        except StopIteration as stop:
            result: Found = stop.value
            return result
        await asyncio.sleep(0)  # the other tasks run now
