"""A page's links, found and normalised fast, in bounded time and memory (pure).

Every page the crawler fetches comes through here, so this is its inner loop.  What a
link *is* stays defined where it was, and the answers here are the same: a gemtext
link is a ``gemtext.links`` line resolved with ``urls.normalise(target, base)``; a
menu's links are ``gophermap.parse_menu``'s (``URL:`` targets through
``urls.normalise``).  What changes is the cost:

- The engine (``manners._core.GemtextScan`` and ``MenuScan``, over manners-core's
  ``smallnet`` module, the GIL released) reads the page line by line: no list of lines
  and no object per line, so a million-line menu costs the memory of its bytes.
- The shapes nearly every link has (an absolute path, a relative name, "../" and a
  name, a gemini://, gopher:// or http(s):// URL with a plain host name) are normalised
  there by gluing the target onto a prefix that ``urls.normalise`` itself computed for
  the page (or for the URL's scheme://host, once per host), their ASCII escapes
  normalised as ``urls.normalise`` does (Gopher: only those it keeps); any other target
  comes back here as an event, for ``urls.normalise``, once per page.  The property
  tests hold the two roads to the same answer.
- Past ``max_links`` distinct links the rest are only counted.
- The links come out as lists of strings and are made Links in batches, from C.
- The ``_async`` variants give the event loop back every few milliseconds, so a
  5 MiB page never stalls the other connections.

A link the crawler could never request is no link: it goes to ``Found.skipped`` with
the reason (``urls.normalise`` refused it, or ``request_problem`` names what is wrong).
Links are distinct by URL, the first one kept, except that an item and a Gopher "+"
mirror with the same URL make one Link, the item's, where the item is (the crawler
follows items and only records mirrors).
"""

from __future__ import annotations

import asyncio
import collections
import gc
import itertools
import re
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .._core import GemtextScan, MenuScan
from . import urls
from .client import MAX_REQUEST
from .gophermap import parse_menu, port_number

MAX_REQUEST_BYTES = MAX_REQUEST  # the longest URL (and Gopher selector) we send; the client checks again
SKIPPED_KEPT = 100  # Skipped entries kept per page; skipped_count has them all
TARGET_CUT = 200  # characters of a skipped target kept
# A target this long (fragment cut, ends stripped) normalises to more than 1,024 bytes
# unless dot segments shrink it (%-escapes shrink at most 3 to 1), and normalising it
# could hold the event loop: it is skipped unread.
LONGEST_TARGET = 8 * MAX_REQUEST_BYTES
SLICE = 0.005  # seconds of work between two returns to the event loop (async variants)
MEMO_MAX = 50_000  # entries per memo (hosts, directories, targets): memory stays bounded
WINDOW = 1 << 16  # bytes of page the engine scans between two looks at the clock


@dataclass(frozen=True, slots=True)
class Link:
    """One distinct link of a page, ready for the frontier."""

    url: str  # normalised absolute URL (urls.normalise result), any scheme
    item_type: str | None  # a gopher:// URL's item type as urls.gopher_ref reads it ("1": empty path)
    mirror: bool = False  # a Gopher "+" line (alternative of the previous item): recorded, not crawled


# The scans make Links by filling their slots from C (map over the slot setters): the same
# objects as Link(url, item_type, mirror) in under half the time, since a frozen dataclass's
# __init__ calls object.__setattr__ once per field.
_new = object.__new__
_set_url = Link.__dict__["url"].__set__
_set_type = Link.__dict__["item_type"].__set__
_set_mirror = Link.__dict__["mirror"].__set__


@dataclass(frozen=True)
class Skipped:
    """A link that can never be requested, and why: reported, never queued."""

    target: str  # the link as written, cut to 200 characters
    reason: str  # one sentence: why it can never be requested


@dataclass(frozen=True)
class Found:
    """What a page links to."""

    links: list[Link]  # distinct by url, page order, at most max_links (mirrors count too)
    more: int  # link lines past max_links (less those plainly repeating a kept link): counted, not normalised
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
        if ref.search is not None and item_type != "7":  # gopher_ref split the selector at its TAB
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


def _too_long(size: int) -> str:
    return f"it is {size:,} characters long, far over the {MAX_REQUEST_BYTES:,} bytes a request may carry."


def _long_url(size: int) -> str:
    return f"the URL is {size:,} bytes long, over the {MAX_REQUEST_BYTES:,} a request may carry."


# -- shapes normalised without urls.normalise ---------------------------------------------


def _chars(chars: str) -> str:
    """``chars`` written for a regular-expression character class."""
    return "".join(re.escape(c) for c in chars)


_QUERY_SAFE = urls._QUERY_SAFE
_P = _chars(urls._PATH_SAFE) + "%"  # kept as they are in a path (a "%" if its escape is: below)
_Q = _chars(urls._QUERY_SAFE) + "%"  # ... in a query, and in a whole Gopher path
_SEGMENT = _P.replace(":", "").replace("/", "")  # no ":" in a first segment: "a:b" has a scheme
_FIRST = _SEGMENT.replace(r"\.", "")  # no "." first: no dot segment
_RELATIVE = rf"[{_FIRST}][{_SEGMENT}]*(?:/[{_P}]*)?(?:\?[{_Q}]*)?"
# The shapes normalised without urls.normalise, six groups: 1 an absolute path (and query);
# 2 scheme://authority and 3 path and query of a URL of a scheme we know, its host a name or
# an IPv4 address; 4 a relative name (and query); 5 "../" and "./", and 6 what follows them.
# (A URL is tried before a relative name: "gemini" would start one, and backtracking out of
# it costs more than the URL's first letters do.)
_SHAPES = (
    rf"(/(?!/)[{_P}]*(?:\?[{_Q}]*)?)"
    rf"|((?i:gemini|gopher|https?)://[A-Za-z0-9.\-]+(?::[0-9]*)?)((?:/[{_P}]*)?(?:\?[{_Q}]*)?)"
    rf"|({_RELATIVE})"
    rf"|((?:\.\.?/)+)((?:{_RELATIVE})?|\?[{_Q}]*)"
)
_TARGET = re.compile(rf"(?:{_SHAPES})(?:#.*)?", re.DOTALL)  # and a fragment: dropped
_HOSTLESS = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:(?!//)")  # a scheme (as urls reads one), no authority
# An escape urls.normalise would rewrite: not two upper-case hex digits, or the escape of an
# unreserved character (decoded); for Gopher, of any character a URL may hold raw (decoded,
# then not escaped again), or of TAB, CR, LF and NUL (which request_problem refuses).
_ESCAPE_CHANGES = re.compile(r"%(?![0-9A-F]{2})|%(?:2[DE]|3[0-9]|4[1-9A-F]|5[0-9AF]|6[1-9A-F]|7[0-9AE])")
_GOPHER_ESCAPE_CHANGES = re.compile(
    r"%(?![0-9A-F]{2})|%(?:0[09AD]|2[146-9A-F]|3[0-9ABDF]|4[0-9A-F]|5[0-9AF]|6[1-9A-F]|7[0-9AE])"
)
# scheme://host[:port] as urls.normalise writes it: lower case, labels of 1-63 characters
# (the IDNA codec's rule for an ASCII name), a port without leading zero
_NORMAL_HEAD = re.compile(r"([a-z]+)://(?:[a-z0-9\-]{1,63}\.)*[a-z0-9\-]{1,63}\.?(?::([1-9][0-9]{0,4}))?")


def _prefix(base: str, probe: str, tail: str) -> str | None:
    """What ``urls.normalise`` writes before ``tail`` when it resolves ``probe`` (which ends
    with ``tail``) against ``base``, or None."""
    try:
        url = urls.normalise(probe, base)
    except ValueError:
        return None
    return url[: -len(tail)] if url.endswith(tail) else None


def _head(head: str) -> tuple[str, bool]:
    """``scheme://authority`` as ``urls.normalise`` writes it, and whether it is Gopher;
    _REFUSED when it refuses it."""
    m = _NORMAL_HEAD.fullmatch(head)
    if m is not None and m[1] in urls.DEFAULT_PORTS:
        port = int(m[2]) if m[2] else None
        if port is None or (port < 65536 and port != urls.DEFAULT_PORTS[m[1]]):
            return head, m[1] == "gopher"
    try:
        url = urls.normalise(head + "/")
    except ValueError:
        return _REFUSED
    return url[:-1], url.startswith("gopher:")


_REFUSED = ("", False)


def _gopher_type(url: str) -> str:
    """The item type of a gopher:// URL."""
    slash = url.find("/", 9)  # after "gopher://"
    if slash + 1 == len(url):
        return "1"
    item_type = url[slash + 1]
    return item_type if item_type != "%" else urls.gopher_ref(url).item_type


class _Normaliser:
    """``urls.normalise(target, base)`` for one base, fast for the common shapes.

    The prefixes come from ``urls.normalise`` itself (with probe targets "/x", "x",
    "../x" and so on), so the base's scheme, host, port and directory are spelled as it
    spells them; a target of characters that need no escaping and escapes that stay as
    they are, with no dot segment but leading ones ("../", kept as written in Gopher),
    normalises to prefix + target.  The hypothesis tests hold this to urls.normalise.
    """

    def __init__(self, base: str | None) -> None:
        self.base = base
        # a base with no scheme makes urls.normalise refuse every target, absolute ones too
        self.refuses = base is not None and urls.scheme(base) is None
        self.absolute = self.relative = None
        if base is not None and not self.refuses:
            self.absolute = _prefix(base, "/x", "/x")  # "scheme://host[:port]"
            self.relative = _prefix(base, "x", "x")  # "scheme://host[:port]/dir/"
        self.gopher = (self.absolute or self.relative or "").startswith("gopher:")
        self.escapes = (_GOPHER_ESCAPE_CHANGES if self.gopher else _ESCAPE_CHANGES).search
        self.dotted: dict[str, str | None] = {}  # "../../": the prefix "../../x" gets
        self.heads: dict[str, tuple[str, bool]] = {}  # scheme://authority: _head's answer
        # why urls.normalise refuses a target with a scheme and no "//" (mailto:, tel:), the
        # same for all of them: there is no host to ask
        self.hostless: str | None = None

    def fast(self, target: str) -> str | None:
        """The normalised URL, or None when the target needs ``urls.normalise``."""
        m = _TARGET.fullmatch(target)
        return None if m is None else self.shaped(m, 0)

    def shaped(self, m: re.Match[str], k: int) -> str | None:
        """``fast`` for a match of ``_SHAPES`` whose groups start after group ``k``."""
        shape = m.lastindex - k  # type: ignore[operator]  # a shape matched: never None
        if shape == 1:
            kept, prefix = m[k + 1], self.absolute
            if self.gopher and kept == "/1":
                kept = "/"  # gopher://h/1 is gopher://h/
        elif shape == 3:
            found = self.url(m[k + 2], m[k + 3])
            return None if found is None else found[0]
        elif shape == 4:
            kept, prefix = m[k + 4], self.relative
            if self.gopher and kept == "1":
                return None  # it is gopher://h/ when the directory is the root
        else:
            dots, kept = m.group(k + 5, k + 6)
            if dots in self.dotted:
                prefix = self.dotted[dots]
            else:
                base = self.base if self.absolute is not None else None
                prefix = _prefix(base, dots + "x", "x") if base is not None else None
                if len(self.dotted) < MEMO_MAX:
                    self.dotted[dots] = prefix
        if prefix is None:
            return None
        if "%" in kept and self.escapes(kept):
            return None
        if not self.gopher and "/." in kept:
            return None
        return prefix + kept

    def url(self, raw: str, rest: str) -> tuple[str, str | None] | None:
        """(URL, Gopher item type) of ``raw`` (scheme://authority) followed by ``rest`` (path
        and query, of the characters _SHAPES allows), or None for urls.normalise to do."""
        known = self.heads.get(raw)
        if known is None:
            known = _head(raw) if not self.refuses else _REFUSED
            if len(self.heads) < MEMO_MAX:
                self.heads[raw] = known
        head, gopher = known
        if not head:
            return None
        if not rest or rest[0] == "?":
            rest = "/" + rest
        if gopher:
            if "%" in rest and _GOPHER_ESCAPE_CHANGES.search(rest):
                return None
            if rest == "/1":
                return head + "/", "1"
            item_type = rest[1] if len(rest) > 1 else "1"
            url = head + rest
            return url, (item_type if item_type != "%" else urls.gopher_ref(url).item_type)
        if "%" in rest and _ESCAPE_CHANGES.search(rest):
            return None
        if "/." in rest:  # a dot segment, perhaps
            return None
        return head + rest, None

    def slow(self, target: str) -> tuple[str, str | None] | str:
        """(URL, item type) through ``urls.normalise``, or why the target is skipped."""
        text = target.strip(urls._STRIP)
        hash_ = text.find("#")
        if hash_ >= 0:
            text = text[: hash_ + 1]  # the fragment is dropped anyway: never read it
        if len(text) > LONGEST_TARGET:
            return _too_long(len(text))
        hostless = _HOSTLESS.match(text) is not None
        if hostless and self.hostless is not None:
            return self.hostless
        try:
            url = urls.normalise(text, self.base)
        except ValueError as exc:
            reason = f"it cannot be read as a URL the crawler can request ({exc})."
            if hostless:
                self.hostless = reason  # and so for every other such target
            return reason
        problem, item_type = _inspect(url)
        return problem if problem is not None else (url, item_type)


# -- the scan ----------------------------------------------------------------------------
#
# The scans run in the engine (manners._core.GemtextScan and MenuScan, over
# manners-core's smallnet module), with the GIL released: they read the page line by line,
# normalise the fast shapes by gluing targets onto the prefixes this module computed, keep
# the distinct links in page order and count the lines past max_links.  What they cannot
# answer they hand back as an event, and the scan resumes where it stopped: a host
# (_head) or a run of "../" (_prefix) to compute once, a target for urls.normalise (once
# per page), a link to check or report.  Events are rare on real pages; the budget of
# WINDOW bytes per step lets the async variants look at the clock.


class _Collect:
    """The skipped targets of a page (each reported once)."""

    def __init__(self) -> None:
        self.skipped: list[Skipped] = []
        self.skipped_count = 0
        self.done_max = MEMO_MAX
        self.refused: set[str] = set()  # targets skipped so far

    def skip(self, target: str, reason: str, key: str | None = None) -> None:
        """Record a target that can never be requested, once per page (per ``key``, the
        target unless given)."""
        key = target if key is None else key
        if key in self.refused:
            return
        if len(self.refused) < self.done_max:
            self.refused.add(key)
        self.skipped_count += 1
        if len(self.skipped) < SKIPPED_KEPT:
            self.skipped.append(Skipped(target[:TARGET_CUT], reason))


def _typed(item_type: str | None) -> str | None:
    """An item type for the engine: "" (decode it from the URL at the end) when it may hold a
    lone surrogate, which the engine's strings cannot."""
    return item_type if item_type is None or item_type.isascii() else ""


def _found(
    scan: GemtextScan | MenuScan,
    out: _Collect,
    budget: float | None,
    title: str | None,
    error: str | None = None,
) -> Generator[None, None, Found]:
    """The Found, its Links made a batch at a time from the engine's lists (a yield between
    two batches)."""
    more = scan.more
    count = scan.finish()
    links: list[Link] = []
    for start in range(0, count, _BATCH):
        batch, types, mirrors, decode = scan.links(start, start + _BATCH)
        for i in decode:  # a gopher:// URL whose type is an escape
            types[i] = _gopher_type(batch[i])
        # A batch of new objects would set off the cyclic garbage collector every 700 of
        # them (and now and then a full pass over the heap), to find no garbage: it is held
        # off for the batch, which is then one young generation among the others.
        collecting = gc.isenabled()
        gc.disable()
        try:
            made = list(map(_new, itertools.repeat(Link, len(batch))))
            _drain(map(_set_url, made, batch))
            _drain(map(_set_type, made, types))
            _drain(map(_set_mirror, made, mirrors))
        finally:
            if collecting:
                gc.enable()
        links += made
        if budget is not None and start + _BATCH < count:
            yield
    return Found(links, more, out.skipped, out.skipped_count, title, error)


_BATCH = 10_000  # Links made between two yields (async)
_drain: Callable[[Iterable[Any]], None] = collections.deque(maxlen=0).extend  # runs an iterator out, in C


def _clock(budget: float | None) -> float:
    return time.perf_counter() + budget if budget is not None else float("inf")


# -- gemtext -----------------------------------------------------------------------------


def gemtext_links(text: str, base: str, max_links: int = 10_000) -> Found:
    """The links of a gemtext page fetched from ``base``, resolved and normalised."""
    return _run(_gemtext(text, base, max_links, None))


async def gemtext_links_async(text: str, base: str, max_links: int = 10_000) -> Found:
    """``gemtext_links``, giving the event loop back every few milliseconds."""
    return await _run_async(_gemtext(text, base, max_links, SLICE))


def _gemtext(text: str, base: str, max_links: int, budget: float | None) -> Generator[None, None, Found]:
    """The scan; it yields when ``budget`` seconds of work have passed since the last yield."""
    out = _Collect()
    norm = _Normaliser(base)
    data = text.encode("utf-8", "surrogatepass")
    scan = GemtextScan(data, norm.absolute, norm.relative, norm.gopher, norm.refuses, max_links)
    step, window = scan.step, WINDOW
    deadline = _clock(budget)
    while True:
        event = step(window)
        kind = event[0]
        if kind == 0:  # the page is read
            break
        if kind == 2:  # scheme://authority as written: its normalised spelling, once
            head, gopher = _head(event[1])
            scan.set_head(event[1], head or None, gopher)
        elif kind == 3:  # "../" and "./": the prefix "../x" gets, once
            scan.set_dots(event[1], _prefix(base, event[1] + "x", "x"))
        elif kind == 4:  # any other target: through urls.normalise, once per page
            target = event[1].decode("utf-8", "surrogatepass")
            result = norm.slow(target)
            if isinstance(result, str):
                out.skip(target, result)
            else:
                scan.add(result[0], _typed(result[1]))
        elif kind == 5:  # a fast URL over a request's length
            url, target = event[1], event[2].decode("utf-8", "surrogatepass")
            problem, item_type = _inspect(url)
            if problem is not None:
                out.skip(target, problem)
            else:
                scan.add(url, _typed(item_type))
        if time.perf_counter() > deadline:
            yield
            deadline = _clock(budget)
    heading = scan.title()
    title = heading.decode("utf-8", "surrogatepass") if heading is not None else None
    return (yield from _found(scan, out, budget, title))


# -- Gopher menus --------------------------------------------------------------------------

# A line parse_menu skips: white space, or a lone "." (bytes.strip's white space).
_BLANK = rb"[ \t\r\x0b\x0c]*\.?[ \t\r\x0b\x0c]*$"
_FIRST_ITEM = re.compile(rb"^(?!" + _BLANK + rb")[^\n]*", re.M)


def menu_links(body: bytes, max_links: int = 10_000) -> Found:
    """The links of a Gopher type-1 reply, as ``gophermap.parse_menu`` reads it."""
    return _run(_menu(body, max_links, None))


async def menu_links_async(body: bytes, max_links: int = 10_000) -> Found:
    """``menu_links``, giving the event loop back every few milliseconds."""
    return await _run_async(_menu(body, max_links, SLICE))


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


def _menu(body: bytes, max_links: int, budget: float | None) -> Generator[None, None, Found]:
    """The scan; it yields when ``budget`` seconds of work have passed since the last yield."""
    out = _Collect()
    norm = _Normaliser(None)
    external: dict[str, tuple[str, str | None] | None] = {}  # URL: target: (URL, type), None if skipped
    error = None
    first = _FIRST_ITEM.search(body)
    if first is not None and first[0][:1] == b"3":
        error = parse_menu(first[0]).error  # parse_menu's own words for it
    scan = MenuScan(bytes(body), max_links)
    step, window = scan.step, WINDOW
    deadline = _clock(budget)
    while True:
        event = step(window)
        kind = event[0]
        if kind == 0:  # the menu is read
            break
        if kind == 2:  # a host TAB port field: its URL prefix, once
            scan.set_place(event[1], _place(event[1]))
        elif kind == 3:  # a URL: selector that is not UTF-8
            target = urls.selector_text(event[1]).strip()
            mirror = event[2]
            if not target:
                pass
            elif target in external:
                known = external[target]
                if known is not None and not mirror:  # an item beats a mirror of the same URL
                    scan.add(known[0], _typed(known[1]), False)
            elif scan.full:
                scan.count_more()
            else:
                known = _external(out, norm, target)
                if len(external) < MEMO_MAX:
                    external[target] = known
                if known is not None:
                    scan.add(known[0], _typed(known[1]), mirror)
        elif kind == 6:  # a new URL: target (stripped) the engine could not normalise
            target, mirror = event[1], event[2]
            known = _external(out, norm, target)
            if known is None:
                scan.remember(target, None, None)
            else:
                scan.remember(target, known[0], _typed(known[1]))
                scan.add(known[0], _typed(known[1]), mirror)
        elif kind == 4:  # a selector too long to send: reported, not escaped whole
            place, item_type, selector = event[1:]
            path = item_type + urls.selector_text(selector)
            broken = b"\r" in selector or b"\0" in selector
            shown = place + quote(path[:TARGET_CUT], safe=_QUERY_SAFE, errors="surrogateescape")
            out.skip(shown, _BROKEN if broken else _long_selector(len(selector)), key=place + path)
        elif kind == 5:  # an item that cannot be requested
            url, problem, size = event[1:]
            reason = _long_url(size) if problem == 2 else _long_selector(size) if problem == 1 else _BROKEN
            out.skip(url, reason)
        if time.perf_counter() > deadline:
            yield
            deadline = _clock(budget)
    return (yield from _found(scan, out, budget, scan.title(), error))


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
