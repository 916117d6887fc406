"""Patterns and the paths they are matched against.

Matching is linear: a pattern is split at its ``*`` into literal pieces, and each
piece is found leftmost with ``str.find``.  For patterns whose only operator is
``*``, leftmost placement is optimal, so no backtracking is ever needed.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import unquote

from .parse import PLAIN, utf8

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Anything outside unreserved and reserved characters, plus the three with a meaning
# of their own here: "%" (escapes), "*" and "$" (pattern operators).
NEEDS_NORMALISING = re.compile(f"[^{PLAIN}]")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*([^#]*)")


class Rule(NamedTuple):
    """One Allow or Disallow line, compiled for matching."""

    priority: int  # octets in the pattern: the longest match wins
    allow: bool
    pieces: tuple[str, ...]  # the pattern split at "*"; one piece means no wildcard
    anchored: bool  # the pattern ended in "$"
    ordinal: int  # which rule line of its groups it came from (for line numbers)
    value: str  # the pattern as written
    probe: str  # its longest literal piece: a path without it cannot match

    @property
    def text(self) -> str:
        return f"{'Allow' if self.allow else 'Disallow'}: {self.value}"

    def matches(self, path: str) -> bool:
        first = self.pieces[0]
        if not path.startswith(first):
            return False
        if len(self.pieces) == 1:
            return not self.anchored or len(path) == len(first)
        return wild_tail(self.pieces, self.anchored, path)


def wild_tail(pieces: tuple[str, ...], anchored: bool, path: str) -> bool:
    """Whether the pieces after the first (already matched as a prefix) fit the path."""
    pos = len(pieces[0])
    last = len(pieces) - 1
    for i in range(1, last):
        piece = pieces[i]
        found = path.find(piece, pos)
        if found < 0:
            return False
        pos = found + len(piece)
    tail = pieces[last]
    if anchored:
        return len(path) - len(tail) >= pos and path.endswith(tail)
    return path.find(tail, pos) >= 0


def compile_rule(
    allow: bool, pattern: str, ordinal: int, value: str, wildcards: bool, anchor: bool
) -> Rule | None:
    """A rule from an already-normalised pattern; None for an empty one (matches nothing)."""
    if not pattern:
        return None
    priority = len(pattern)
    anchored = anchor and pattern[-1] == "$"
    if anchored:
        pattern = pattern[:-1]
    pieces = tuple(pattern.split("*")) if wildcards and "*" in pattern else (pattern,)
    return Rule(priority, allow, pieces, anchored, ordinal, value, max(pieces, key=len))


def _pct(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in utf8(ch))


def normalise(s: str, *, pattern: bool) -> str:
    """RFC 9309 §2.2.2 via RFC 3986: one spelling for every octet sequence.

    Non-ASCII and characters outside the reserved and unreserved sets are
    %-encoded as UTF-8; escapes of unreserved characters are decoded; the hex of
    the remaining escapes is upper-cased.  In a URL, a literal ``*`` or ``$`` is
    encoded so that only a pattern's own ``%2A`` and ``%24`` can match it; in a
    pattern, ``*`` is the wildcard and only a final ``$`` is the anchor.
    """
    if NEEDS_NORMALISING.search(s) is None:
        return s
    out = []
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch == "%":
            hx = s[i + 1 : i + 3]
            if len(hx) == 2 and all(c in _HEX_DIGITS for c in hx):
                dec = chr(int(hx, 16))
                out.append(dec if dec in _UNRESERVED else "%" + hx.upper())
                i += 3
                continue
            out.append("%25")
        elif ch == "*":
            out.append("*" if pattern else "%2A")
        elif ch == "$":
            out.append("$" if pattern and i == n - 1 else "%24")
        elif NEEDS_NORMALISING.match(ch):
            out.append(_pct(ch))
        else:
            out.append(ch)
        i += 1
    return "".join(out)


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_GOOGLE_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}|[^\x00-\x7f]+")


def google_escape(s: str) -> str:
    """Google's MaybeEscapePattern: %-encode octets >= 0x80, upper-case escape hex."""
    if s.isascii() and "%" not in s:
        return s
    return _GOOGLE_ESCAPE.sub(
        lambda m: m[0].upper() if m[0][0] == "%" else "".join(f"%{b:02X}" for b in utf8(m[0])), s
    )


def url_path(target: str) -> str:
    """Path and query of a URL (fragment dropped); a bare path is taken as a path.

    ValueError for anything else: ``example.org/x`` names no path of any server.
    """
    m = _URL.match(target)
    if m is not None:
        path = m[1]
        return path if path[:1] == "/" else "/" + path
    if target[:1] != "/":
        raise ValueError(
            f"{target[:80]!r} is neither a URL (scheme://host/path) nor a path starting with '/'"
        )
    return target.split("#", 1)[0]


_SCHEME_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?;#]*")


def google_path(url: str) -> str:
    """Google's GetPathParamsQuery, character for character."""
    m = _SCHEME_AUTHORITY.match(url)
    if m is not None:  # the common case, where the general code below agrees
        end = m.end()
        cut = url.find("#", end)
        path = url[end:cut] if cut >= 0 else url[end:]
        if path[:1] == "/":
            return path
        return "/" + path if path else "/"
    search_start = 2 if url[:2] == "//" else 0
    early_path = _find_first_of(url, "/?;", search_start)
    protocol_end = url.find("://", search_start)
    if protocol_end < 0 or (early_path >= 0 and early_path < protocol_end):
        protocol_end = search_start
    else:
        protocol_end += 3
    path_start = _find_first_of(url, "/?;", protocol_end)
    if path_start < 0:
        return "/"
    hash_pos = url.find("#", search_start)
    if 0 <= hash_pos < path_start:
        return "/"
    path = url[path_start : hash_pos if hash_pos >= 0 else len(url)]
    return path if path[0] == "/" else "/" + path


def _find_first_of(s: str, chars: str, start: int) -> int:
    best = -1
    for c in chars:
        i = s.find(c, start)
        if i >= 0 and (best < 0 or i < best):
            best = i
    return best


def gopher_selectors(target: str) -> tuple[str, ...]:
    """What a Gopher robot checks: the selector, and for a URL also its typed form.

    ``gopher://host/1/private`` names item type ``1`` and selector ``/private``
    (RFC 4266); servers write rules against either spelling.  A bare target is a raw
    selector.
    """
    if target[:9].lower() != "gopher://":
        return (target,)
    rest = target[9:].split("#", 1)[0]
    slash = rest.find("/")
    path = rest[slash + 1 :] if slash >= 0 else ""
    if not path:
        return ("", "1")
    selector = unquote(path[1:], errors="surrogateescape").split("\t", 1)[0]
    return (selector, path[0] + selector)
