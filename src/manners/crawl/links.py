"""A page's links, found and normalised fast, in bounded time and memory (pure).

Every page the crawler fetches comes through here, so this is its inner loop.  What a
link *is* stays defined where it was, and the answers here are the same: a gemtext
link is a ``gemtext.links`` line resolved with ``urls.normalise(target, base)``; a
menu's links are ``gophermap.parse_menu``'s (``URL:`` targets through
``urls.normalise``).  What changes is the cost:

- One regular-expression pass over the page finds the link lines: no list of lines
  and no object per line, so a million-line menu costs the memory of its bytes.
- The shapes nearly every link has (an absolute path, a relative name, "../" and a
  name, a gemini://, gopher:// or http(s):// URL with a plain host name), of characters
  and escapes that normalisation leaves as they are, are normalised by gluing the target
  onto a prefix that ``urls.normalise`` itself computed for the page (or for the URL's
  scheme://host, once per host); any other target goes to ``urls.normalise``, once per
  page.  The property tests hold the two roads to the same answer.
- Past ``max_links`` distinct links the rest are only counted.
- A link is kept as two strings until the end, then made a Link in a batch, from C.
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
import itertools
import re
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, AnyStr
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
MEMO_MAX = 50_000  # entries per memo (hosts, directories, targets): memory stays bounded
WINDOW = 1 << 16  # characters of page scanned between two looks at the clock


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


class _Collect:
    """Distinct links in page order, skipped targets, and the count past max_links.

    A link is kept as url -> item type (a dict holding only strings, which the garbage
    collector does not track) and becomes a Link at the end, in batches (``found``)."""

    def __init__(self, max_links: int) -> None:
        self.max_links = max_links
        self.seen: dict[str, str | None] = {}  # url: Gopher item type
        self.mirrors: set[str] = set()  # those of seen that only a "+" line gave
        self.full = max_links <= 0
        self.more = 0
        self.skipped: list[Skipped] = []
        self.skipped_count = 0
        self.done: set[str] = set()  # targets already handled (the per-call memo)
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

    def add(self, url: str, item_type: str | None, mirror: bool = False) -> None:
        if url not in self.seen:
            self.seen[url] = item_type
            if mirror:
                self.mirrors.add(url)
            self.full = len(self.seen) >= self.max_links
        elif not mirror and url in self.mirrors:
            # the crawler follows an item and records an alternative: an item beats a
            # mirror of the same URL, at the item's place (as Menu.links orders them)
            self.mirrors.discard(url)
            del self.seen[url]
            self.seen[url] = item_type

    def found(
        self, budget: float | None, title: str | None, error: str | None = None
    ) -> Generator[None, None, Found]:
        """The Found, its Links made a batch at a time (a yield between two batches)."""
        order = list(self.seen)
        links: list[Link] = []
        for start in range(0, len(order), _BATCH):
            batch = order[start : start + _BATCH]
            made = list(map(_new, itertools.repeat(Link, len(batch))))
            _drain(map(_set_url, made, batch))
            _drain(map(_set_type, made, map(self.seen.__getitem__, batch)))
            _drain(map(_set_mirror, made, map(self.mirrors.__contains__, batch)))
            links += made
            if budget is not None and start + _BATCH < len(order):
                yield
        return Found(links, self.more, self.skipped, self.skipped_count, title, error)


_BATCH = 10_000  # Links made between two yields (async)
_drain: Callable[[Iterable[Any]], None] = collections.deque(maxlen=0).extend  # runs an iterator out, in C


def _clock(budget: float | None) -> float:
    return time.perf_counter() + budget if budget is not None else float("inf")


# -- gemtext -----------------------------------------------------------------------------

# "=>", white space, an empty group (1) marking where the target starts, then a target of
# one of the _SHAPES (2-7) or any other (8); or a preformatting toggle (9); or a level-1
# heading (10: its text).  A shape must end the target: a fragment may follow it, then white
# space or the line's end (a CR there is the line's, not the target's).  The scan looks for
# "\n" and then one of these: a literal first character lets the regex engine skip through
# the text at memchr speed instead of trying the pattern at every position.
_GEM_LINE = rf"=>[ \t]*()(?:(?:{_SHAPES})(?:#[^ \t\n]*)?(?=[ \t]|\r?\n|\r?\Z)|([^ \t\n]+))|(```)"
_GEM_HEADING = r"|#(?!#)([^\n]*)"
_GEM_ALL = re.compile(rf"\n(?:{_GEM_LINE}{_GEM_HEADING})")
_GEM_LINKS = re.compile(rf"\n(?:{_GEM_LINE})")  # once the title is known
_GEM_FIRST = re.compile(rf"(?:{_GEM_LINE}{_GEM_HEADING})")  # the first line, no "\n" before it


def gemtext_links(text: str, base: str, max_links: int = 10_000) -> Found:
    """The links of a gemtext page fetched from ``base``, resolved and normalised."""
    return _run(_gemtext(text, base, max_links, None))


async def gemtext_links_async(text: str, base: str, max_links: int = 10_000) -> Found:
    """``gemtext_links``, giving the event loop back every few milliseconds."""
    return await _run_async(_gemtext(text, base, max_links, SLICE))


def _lines(
    pattern: re.Pattern[AnyStr], first: re.Pattern[AnyStr], data: AnyStr, pos: int, end: int
) -> Iterator[re.Match[AnyStr]]:
    """The matches of ``pattern`` ("\n" and a line) in data[pos:end], and of ``first`` (the
    same, without the "\n") on the first line when ``pos`` is 0."""
    found = pattern.finditer(data, pos, end)
    if pos == 0:
        m = first.match(data, 0, end)
        if m is not None:
            return itertools.chain((m,), found)
    return found


def _gemtext(text: str, base: str, max_links: int, budget: float | None) -> Generator[None, None, Found]:
    """The scan; it yields when ``budget`` seconds of work have passed since the last yield."""
    out = _Collect(max_links)
    norm = _Normaliser(base)
    seen, done, done_max = out.seen, out.done, out.done_max
    shaped, escapes, gopher = norm.shaped, norm.escapes, norm.gopher
    absolute, relative = norm.absolute, norm.relative
    full = out.full
    pattern = _GEM_ALL
    title: str | None = None
    pre = False
    deadline = _clock(budget)
    size = len(text)
    pos = 0
    while pos < size:
        end = text.find("\n", pos + WINDOW)  # windows end where a line does
        end = size if end < 0 else end
        for m in _lines(pattern, _GEM_FIRST, text, pos, end):
            shape = m.lastindex
            if shape is None or shape > 8:  # a toggle, a heading
                if shape == 9:
                    pre = not pre
                elif not pre:
                    heading = m[10].removesuffix("\r").strip(" \t")
                    if heading:
                        title = heading
                        pattern = _GEM_LINKS
                        pos = m.end()
                        break
                continue
            if pre:
                continue
            # the shapes most links have, inline (as _Normaliser.shaped has them): cheaper
            # than a memo, so not memoised
            url = item_type = None
            if shape == 2:  # an absolute path
                kept = m[2]
                if absolute is not None and not ("%" in kept and escapes(kept)):
                    if gopher:
                        url = absolute + kept if kept != "/1" else absolute + "/"
                        item_type = _gopher_type(url)
                    elif "/." not in kept:
                        url = absolute + kept
            elif shape == 4:  # a URL
                known = norm.url(m[3], m[4])
                if known is not None:
                    url, item_type = known
            elif shape == 5:  # a relative name
                kept = m[5]
                if relative is not None and not ("%" in kept and escapes(kept)):
                    if gopher:
                        if kept != "1":
                            url = relative + kept
                            item_type = _gopher_type(url)
                    elif "/." not in kept:
                        url = relative + kept
            elif shape == 7:  # after "../"
                url = shaped(m, 1)
                if url is not None and gopher:
                    item_type = _gopher_type(url)
            if url is not None:
                if url in seen:
                    continue
                if full:
                    out.more += 1
                    continue
                if len(url) > MAX_REQUEST_BYTES:
                    problem, item_type = _inspect(url)
                    if problem is not None:
                        out.skip(text[m.end(1) : m.end()], problem)
                        continue
                seen[url] = item_type
                full = len(seen) >= max_links
                continue
            # any other target: through urls.normalise, once per page
            target = text[m.end(1) : m.end()]
            if target[-1] == "\r":  # a CR ending the line is not the target's
                after = m.end()
                if after == size or text[after] == "\n":
                    target = target[:-1]
                    if not target:
                        continue
            if target in done:
                continue
            if full:
                out.more += 1
                continue
            if len(done) < done_max:
                done.add(target)
            result = norm.slow(target)
            if isinstance(result, str):
                out.skip(target, result)
            elif result[0] not in seen:
                seen[result[0]] = result[1]
                full = len(seen) >= max_links
            if time.perf_counter() > deadline:
                yield
                deadline = _clock(budget)
        else:
            pos = end
        if time.perf_counter() > deadline:
            yield
            deadline = _clock(budget)
    return (yield from out.found(budget, title))


# -- Gopher menus --------------------------------------------------------------------------

_QB = _chars(urls._QUERY_SAFE).encode("ascii")  # raw in a selector: no "%", which is escaped
_FAST_TYPES = _chars("".join(c for c in urls._QUERY_SAFE if c not in "+i3")).encode("ascii")
# A menu line with four fields or more, whose type is not i or 3:
#   1-3: type, selector, host TAB port of one whose type and selector need no escaping;
#   4-7: type, display, selector, host TAB port of any other;
# and 8-9: type and display of any line whose selector is TITLE (until the title is known).
_MENU_FAST = rb"([" + _FAST_TYPES + rb"])[^\t\n]*\t((?!URL:)[" + _QB + rb"]*)\t([^\t\n]*\t[^\t\n]*)"
_MENU_SLOW = rb"([^\n3i])([^\t\n]*)\t([^\t\n]*)\t([^\t\n]*\t[^\t\n]*)"
_MENU_TITLE = rb"([^\n])([^\t\n]*)\tTITLE(?=\t|\r?\n|\r?\Z)"
# As for gemtext, the scan looks for "\n" and a line; the title alternative is used only in
# windows that hold "\tTITLE" (it is tried on every line the others reject).
_MENU_ALL = re.compile(rb"\n(?:" + _MENU_FAST + rb"|" + _MENU_SLOW + rb"|" + _MENU_TITLE + rb")")
_MENU_LINKS = re.compile(rb"\n(?:" + _MENU_FAST + rb"|" + _MENU_SLOW + rb")")
_MENU_FIRST = re.compile(rb"(?:" + _MENU_FAST + rb"|" + _MENU_SLOW + rb"|" + _MENU_TITLE + rb")")
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
    seen, mirrors, add = out.seen, out.mirrors, out.add
    places: dict[bytes, str] = {}  # host TAB port field: its URL prefix, "" when unlinkable
    external: dict[str, tuple[str, str | None] | None] = {}  # URL: target: (URL, type), None if skipped
    error = None
    first = _FIRST_ITEM.search(body)
    if first is not None and first[0][:1] == b"3":
        error = parse_menu(first[0]).error  # parse_menu's own words for it
    title: str | None = None
    titled = body.find(b"\tTITLE")  # the next place a title may be, -1 if none
    deadline = _clock(budget)
    size = len(body)
    pos = 0
    while pos < size:
        end = body.find(b"\n", pos + WINDOW)  # windows end where a line does
        end = size if end < 0 else end
        if title is None and 0 <= titled < pos:
            titled = body.find(b"\tTITLE", pos)
        pattern = _MENU_ALL if title is None and 0 <= titled < end else _MENU_LINKS
        for m in _lines(pattern, _MENU_FIRST, body, pos, end):
            group = m.lastindex
            if group == 3:  # type and selector need no escaping, not "+", not URL:
                state.last = m
                raw_type, selector, field = m.group(1, 2, 3)
                place = places.get(field)
                if place is None:
                    place = _place(field)
                    if len(places) < MEMO_MAX:
                        places[field] = place
                if not place:
                    continue
                path = (raw_type + selector).decode("ascii")
                url = place + path if path != "1" else place
                if url in seen:
                    if url in mirrors:
                        add(url, path[0])
                    continue
                if out.full:
                    out.more += 1
                    continue
                if len(url) > MAX_REQUEST_BYTES:
                    n = len(selector)
                    out.skip(url, _long_selector(n) if n > MAX_REQUEST_BYTES else _long_url(len(url)))
                    continue
                seen[url] = path[0]
                out.full = len(seen) >= max_links
                continue
            if group == 9:  # a TITLE line not matched as a link line
                start = m.start(8)
                item_type = m[8].decode("utf-8", "replace")
                if item_type == "+":
                    item_type = state.before(start) or "+"
                if state.short(start) and item_type not in ("i", "3"):
                    item_type = "i"
                state.remember(m, item_type)
                display = m[9].decode("utf-8", "replace").strip()
                if item_type == "i" and display:
                    title = display
                    pos = m.end()
                    break
                continue
            # group 7: any other line of four fields or more
            start = m.start(4)
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
                place = _place(field)
                if len(places) < MEMO_MAX:
                    places[field] = place
            if not place:
                continue
            if out.full:
                out.more += 1
                continue
            path = item_type + urls.selector_text(selector)
            if len(selector) > MAX_REQUEST_BYTES:  # not escaped whole: that could take long
                broken = b"\r" in selector or b"\0" in selector
                shown = place + quote(path[:TARGET_CUT], safe=_QUERY_SAFE, errors="surrogateescape")
                out.skip(shown, _BROKEN if broken else _long_selector(len(selector)), key=place + path)
                continue
            # what urls.gopher_url writes after the authority (and urls.normalise keeps)
            url = place + ("" if path == "1" else quote(path, safe=_QUERY_SAFE, errors="surrogateescape"))
            if url in seen:
                if not mirror and url in mirrors:
                    add(url, item_type)
                continue
            if b"\r" in selector or b"\0" in selector:  # no LF: it would have ended the line
                out.skip(url, _BROKEN)
            elif len(url) > MAX_REQUEST_BYTES:
                out.skip(url, _long_url(len(url)))
            else:
                add(url, item_type, mirror)
        else:
            pos = end
        if time.perf_counter() > deadline:
            yield
            deadline = _clock(budget)
    return (yield from out.found(budget, title, error))


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
