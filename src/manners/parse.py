"""The tolerant line parser: bytes in, lines with numbers and classified keys out.

The grammar is Google's (``robots.cc``): ``#`` starts a comment, ASCII white space is
trimmed, the key ends at the first ``:``, and a missing colon is forgiven when a line
has exactly two words.  Keys are classified by prefix, case-insensitively, with the
typos Google accepts.  Every other module reads the file through this one, so the
fast agent-targeted scans and the full parse cannot disagree about what a line says.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

#: Google's line buffer is 2083 * 8 bytes including the terminating NUL.
MAX_LINE_BYTES = 2083 * 8 - 1

# Key prefixes, in the order Google tests them.  A key *starting* with one of these
# counts (so "Disallowed:" is a Disallow line, as it is for Google).
USER_AGENT_KEYS = ("user-agent", "useragent", "user agent")
VIRTUAL_AGENT_KEYS = ("virtual-agent",)
ALLOW_KEYS = ("allow",)
DISALLOW_KEYS = ("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw")
SITEMAP_KEYS = ("sitemap", "site-map")
# Fields outside Google's parser: matched whole, with common spellings.
OTHER_KEYS = {
    "crawl-delay": "crawl-delay",
    "crawldelay": "crawl-delay",
    "crawl_delay": "crawl-delay",
    "request-rate": "request-rate",
    "requestrate": "request-rate",
    "request_rate": "request-rate",
    "check": "check",
}

_WS = r"[ \t\v\f]"


# Characters that mean themselves under every profile: RFC 3986's unreserved and
# reserved sets without the pattern operators "*" and "$" and the escape "%".
PLAIN = r"A-Za-z0-9\-._~:/?\[\]@!&'()+,;="


def _line_re(prefixes: tuple[str, ...], plain: bool = False) -> re.Pattern[str]:
    """A line whose key starts with one of ``prefixes``: group 1 the key, then the value.

    The pattern begins at the LF that ends the previous line (prepared text starts
    with one), so ``re`` skips from line to line with its fast literal scan; a CR
    may stand before that LF.  The value is in one of the later groups, the others
    empty (see ``value_of``).  With ``plain``, a value made only of PLAIN characters
    comes in a group of its own: it needs no spelling and holds no operator, so a
    matcher can take it as a prefix without looking at it again.  Any other value
    comes as its PLAIN beginning and the rest: whatever a profile makes of the
    pattern, a path that does not start with that beginning cannot match it.
    """
    alt = "|".join(re.escape(p) for p in prefixes)
    value = r"((?:[^#\r\n]*[^#\s])?)[^#\r\n]*"
    if plain:  # the plain value whole, or a value as its plain beginning and the rest
        value = rf"(?:([{PLAIN}]*)(?={_WS}*(?:[#\r\n]|\Z))|([{PLAIN}]*){value})"
    return re.compile(
        rf"\n{_WS}*({alt})(?:[^:#\r\n]*:{_WS}*{value}"  # key: value
        rf"|[^ \t:#\r\n]*[ \t]+([^ \t:#\r\n]+){_WS}*(?=[#\r\n]|\Z))",  # key value, no colon at all
        re.ASCII | re.IGNORECASE,
    )


AGENT_LINE = _line_re(USER_AGENT_KEYS + VIRTUAL_AGENT_KEYS)
#: groups: key, plain value, beginning and rest of another value, value of a line with no colon
RULE_LINE = _line_re(ALLOW_KEYS + DISALLOW_KEYS, plain=True)
SITEMAP_LINE = _line_re(SITEMAP_KEYS)
#: Crawl-delay, Request-rate and Check lines, whose keys are matched whole (see classify)
FIELD_LINE = re.compile(
    rf"\n{_WS}*(?:{'|'.join(re.escape(k) for k in OTHER_KEYS)})"
    rf"(?:{_WS}*:|[ \t]+[^ \t:#\r\n]+{_WS}*(?=[#\r\n]|\Z))",
    re.ASCII | re.IGNORECASE,
)
ANY_LINE = re.compile(
    rf"{_WS}*(?:([^:#\n]*):{_WS}*([^#\n]*)"
    rf"|([^ \t:#\n]+)[ \t]+([^ \t:#\n]+){_WS}*(?:#.*)?$)",
    re.ASCII,
)


class Line(NamedTuple):
    """One line of the file that carries a key and a value."""

    number: int
    pos: int  # offset of the LF before the line in the prepared text
    kind: str  # user-agent, virtual-agent, allow, disallow, sitemap, crawl-delay, ...
    key: str  # the key as written
    value: str  # the value, trimmed, as written


class Prepared(NamedTuple):
    """The text every scan reads, and what was done to get it."""

    text: str  # starts with an extra LF, so that every line follows one; LF or CRLF ends
    truncated_at: int | None  # byte offset where max_bytes cut the input
    bom: bool
    invalid_utf8: bool
    long_lines: tuple[int, ...]  # numbers of lines cut at MAX_LINE_BYTES


def classify(key: str) -> str:
    """Name the field a key stands for, with Google's prefix and typo rules."""
    low = key.lower()
    if low.startswith(USER_AGENT_KEYS):
        return "user-agent"
    if low.startswith(ALLOW_KEYS):
        return "allow"
    if low.startswith(DISALLOW_KEYS):
        return "disallow"
    if low.startswith(SITEMAP_KEYS):
        return "sitemap"
    if low.startswith(VIRTUAL_AGENT_KEYS):
        return "virtual-agent"
    return OTHER_KEYS.get(low, "unknown")


def utf8(s: str) -> bytes:
    """Encode text that may carry undecodable bytes (surrogate escapes) back to bytes."""
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass")


def prepare(data: bytes | bytearray | memoryview | str, max_bytes: int | None) -> Prepared:
    """Decode, cap, strip the BOM, make lone CRs LFs and put an LF in front.

    Bytes that are not UTF-8 survive as surrogate escapes, so patterns can be
    %-encoded byte for byte exactly as Google does.  When ``max_bytes`` cuts the
    input, the partial last line is dropped: half an ``Allow`` would allow too much.
    """
    truncated_at = None
    invalid = bom = False
    if isinstance(data, str):
        text = data
        if text[:1] == "\ufeff":
            text, bom = text[1:], True
        if max_bytes is not None and len(text) > max_bytes // 4:
            raw = utf8(text)
            if len(raw) > max_bytes:
                text = raw[:max_bytes].decode("utf-8", "surrogateescape")
                truncated_at = max_bytes
    else:
        raw = bytes(data)
        # Google skips any prefix of the UTF-8 BOM.
        n = 3 if raw[:3] == b"\xef\xbb\xbf" else 2 if raw[:2] == b"\xef\xbb" else raw[:1] == b"\xef"
        if n:
            raw, bom = raw[n:], True
        if max_bytes is not None and len(raw) > max_bytes:
            raw = raw[:max_bytes]
            truncated_at = max_bytes
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "surrogateescape")
            invalid = True
    if truncated_at is not None:
        end = max(text.rfind("\n"), text.rfind("\r"))
        text = text[: end + 1] if end >= 0 else ""
    # CRLF stays (every scan treats the CR as white space before the LF); lone CRs
    # end lines too, so only then is the text rewritten.
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    long_lines: tuple[int, ...] = ()
    if _has_long_line(text):
        text, long_lines = _cut_long_lines(text)
    return Prepared("\n" + text, truncated_at, bom, invalid, long_lines)


def _has_long_line(text: str) -> bool:
    """Whether some line may pass MAX_LINE_BYTES, without splitting the text.

    A line that long holds a whole aligned window of ``chunk`` characters with no LF
    (a character is at most 4 bytes, so non-ASCII text needs smaller windows).
    """
    chunk = MAX_LINE_BYTES // 2 if text.isascii() else MAX_LINE_BYTES // 8
    find = text.find
    return any(find("\n", i, i + chunk) < 0 for i in range(0, len(text) - chunk + 1, chunk))


def _cut_long_lines(text: str) -> tuple[str, tuple[int, ...]]:
    lines = text.split("\n")
    cut = []
    for i, line in enumerate(lines):
        if len(line) > MAX_LINE_BYTES // 4:
            raw = utf8(line.removesuffix("\r"))
            if len(raw) > MAX_LINE_BYTES:
                lines[i] = raw[:MAX_LINE_BYTES].decode("utf-8", "surrogateescape")
                cut.append(i + 1)
    return "\n".join(lines), tuple(cut)


def line_number(text: str, pos: int) -> int:
    """The 1-based number of the line at or after ``pos`` (an LF or a line's start)."""
    return text.count("\n", 0, pos + 1)


def split_line(line: str) -> tuple[str, str] | None:
    """Key and value of one line, or None for blank, comment-only and unparsable lines."""
    m = ANY_LINE.match(line[:-1] if line[-1:] == "\r" else line)
    if m is None:
        return None
    if m[1] is not None:
        key, value = m[1], m[2]
    else:
        key, value = m[3], m[4]
    key = key.strip(_SPACE)
    return (key, value.strip(_SPACE)) if key else None


def iter_lines(text: str, start: int = 0, end: int | None = None) -> list[Line]:
    """Every key/value line between two offsets of the prepared text (each at an LF)."""
    if end is None:
        end = len(text)
    out = []
    number = line_number(text, start)
    pos = start
    for raw in text[start + 1 : end].split("\n"):
        kv = split_line(raw)
        if kv is not None:
            out.append(Line(number, pos, classify(kv[0]), kv[0], kv[1]))
        pos += len(raw) + 1
        number += 1
    return out


class AgentLine(NamedTuple):
    pos: int
    end: int
    virtual: bool
    value: str


def scan_agents(text: str) -> list[AgentLine]:
    """All User-agent and Virtual-agent lines, found without reading the others.

    Every such key contains "agent", so ``str.find`` skips the rest of the file at
    C speed; only lines holding that word are matched against the line grammar.
    ``pos`` is the LF before the line, ``end`` the LF after it.
    """
    if text.isascii():
        hits = _find_all(text.encode("ascii").lower(), b"agent")
    else:  # lower-casing could shift offsets: find the usual spellings, check none is missed
        hits = sorted(i for spelling in ("agent", "Agent", "AGENT") for i in _find_all(text, spelling))
        if len(hits) != utf8(text).lower().count(b"agent"):
            hits = [m.start() for m in re.finditer("agent", text, re.IGNORECASE | re.ASCII)]
    out = []
    last_end = -1
    for h in hits:
        if h <= last_end:
            continue
        ls = text.rfind("\n", 0, h)
        le = text.find("\n", h)
        if le < 0:
            le = len(text)
        last_end = le
        m = AGENT_LINE.match(text, ls, le)
        if m is not None:
            out.append(AgentLine(ls, le, m[1][0] in "vV", value_of(m[2], m[3])))
    return out


_SPACE = " \t\v\f\r"


def value_of(colon_form: str | None, two_words: str | None) -> str:
    """The value from a line match (findall gives "" for the form not taken)."""
    if colon_form:
        return colon_form  # the pattern already left trailing white space out
    return two_words.strip(_SPACE) if two_words else ""


def _find_all(haystack: Any, needle: Any) -> list[int]:
    out = []
    find = haystack.find
    i = find(needle)
    while i >= 0:
        out.append(i)
        i = find(needle, i + 1)
    return out


RuleLine = tuple[str, str, str, str, str]  # RULE_LINE's groups


def rule_value(line: RuleLine) -> str:
    return line[1] or value_of(line[2] + line[3], line[4])


def scan_rules(text: str, start: int, end: int) -> list[RuleLine]:
    """The Allow and Disallow lines of a span, as RULE_LINE's groups."""
    return RULE_LINE.findall(text, start, end)


def rule_offset(text: str, spans: tuple[tuple[int, int], ...], ordinal: int) -> int:
    """Where the ``ordinal``-th rule line of some spans starts: its LF."""
    for start, end in spans:
        for m in RULE_LINE.finditer(text, start, end):
            if ordinal == 0:
                return m.start()
            ordinal -= 1
    raise IndexError("no such rule")


def has_rule(text: str, start: int, end: int, fields: bool = False) -> bool:
    """Whether an Allow or Disallow line (with ``fields``, also a Crawl-delay, Request-rate
    or Check line) starts after the LF at ``start``, before ``end``."""
    if RULE_LINE.search(text, start, end + 1) is not None:
        return True
    return fields and FIELD_LINE.search(text, start, end + 1) is not None


def scan_sitemaps(text: str) -> list[str]:
    out: list[str] = []
    for _, colon_form, two_words in SITEMAP_LINE.findall(text):
        value = value_of(colon_form, two_words)
        if value and value not in out:
            out.append(value)
    return out
