"""One line of a server's access log, read: the formats real Gemini, Gopher and Web servers write.

Each format was read from what the server itself wrote on loopback (the samples below, and the
tests, are its own lines), not from memory: a parser is a function from one line to a
:class:`Hit`, to :data:`NOISE` for a line the server writes that records no request (its start,
an error after a request it already logged), or to None for a line it does not read.
:func:`detect` names the format of a file from its first lines.  Nothing here opens a file
(:mod:`.sources` does).

Text the client sent (a URL, a selector, a User-Agent) is kept as the client sent it: a
server's own escapes (nginx's ``\\x1B``, agate's ``\\u{1b}``) are undone, so that the rules of a
robots.txt see what the robot asked for.  It may hold control characters and terminal escapes:
escape it when showing it (:func:`manners.terminal.safe`).

What a format does not record is said in :attr:`Format.lacks`, in words a report can give
(:data:`LACKS`): a log without times cannot judge pacing, and the report says so instead of
guessing.
"""

from __future__ import annotations

import calendar
import enum
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

__all__ = [
    "FORMATS",
    "LACKS",
    "NOISE",
    "Format",
    "Hit",
    "Noise",
    "Parsed",
    "detect",
    "lacking",
]


@dataclass(frozen=True, slots=True)
class Hit:
    """One request, as much of it as the log line tells."""

    when: float | None  # epoch seconds; None: the format records no time
    client: str | None  # the client's address as logged (IPv4 or IPv6, brackets removed)
    scheme: str  # "gemini", "gopher", "http", "https", or "web" (a Web log that does not say which)
    host: str | None  # the authority asked for (``host`` or ``host:port``), when logged
    target: str  # the URL, path or selector as requested, the server's escapes undone
    status: str | None  # as logged: "20", "44", "200", "429"; None: the format logs none
    agent: str | None  # the Web User-Agent; None when not sent, or the format has none
    size: int | None  # bytes sent, when logged
    file: str = ""  # where the line came from
    line: int = 0


class Noise(enum.Enum):
    """A line the server writes that records no request."""

    LINE = "noise"


NOISE = Noise.LINE
Parsed = Hit | Noise | None
Parser = Callable[[str, str, int], Parsed]


@dataclass(frozen=True)
class Format:
    """A log format: its ``--format`` name, who writes it, its parser and what it never records."""

    name: str
    server: str
    scheme: str  # the scheme of its requests ("gemini", "gopher", "web")
    parse: Parser
    lacks: frozenset[str]  # names of Hit fields the format never records
    notes: tuple[str, ...] = ()  # what else a reader of its verdicts should know


#: What a log without each field cannot show, in the words a report gives.
LACKS: dict[str, str] = {
    "when": "no times: pacing cannot be judged, nor which dated robots.txt was in force at a request",
    "client": "no client addresses: clients cannot be told apart, so no robot can be named",
    "status": "no statuses: whether a client waited after being told to slow down cannot be seen",
    "agent": "no User-Agent: robots are told apart by address alone",
    "size": "no sizes",
    "host": "no host: every request is taken to be for the one site",
}


def lacking(fmt: Format) -> list[str]:
    """What ``fmt`` cannot show, one sentence a missing field, then its notes."""
    return [LACKS[field] for field in LACKS if field in fmt.lacks] + list(fmt.notes)


# --------------------------------------------------------------------------- shared pieces

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                                        "Oct", "Nov", "Dec"), 1)}  # fmt: skip
_CLF_TIME = re.compile(r"(\d\d)/([A-Z][a-z]{2})/(\d{4}):(\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)\Z")
_times: dict[str, float | None] = {}  # a log has many lines a second: each stamp read once


def _clf_time(text: str) -> float | None:
    """``29/Nov/2026:11:14:13 +0000`` (Common Log Format) as epoch seconds; None if not one."""
    if (cached := _times.get(text, -1.0)) != -1.0:
        return cached
    m = _CLF_TIME.match(text)
    when = None
    if m and m[2] in _MONTHS:
        day, year, hour, minute, second = int(m[1]), int(m[3]), int(m[4]), int(m[5]), int(m[6])
        offset = (int(m[8]) * 60 + int(m[9])) * 60 * (1 if m[7] == "+" else -1)
        try:
            datetime(year, _MONTHS[m[2]], day, hour, minute, second)  # a real date
        except ValueError:
            pass
        else:
            when = float(calendar.timegm((year, _MONTHS[m[2]], day, hour, minute, second)) - offset)
    return _remember(text, when)


def _iso_time(text: str) -> float | None:
    """``2026-11-29T11:14:34Z`` (RFC 3339; fractions and offsets too) as epoch seconds; None if
    not one, or without an offset (a local time names no instant)."""
    if (cached := _times.get(text, -1.0)) != -1.0:
        return cached
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return _remember(text, None)
    return _remember(text, moment.timestamp() if moment.tzinfo is not None else None)


def _remember(text: str, when: float | None) -> float | None:
    if len(_times) > 10_000:
        _times.clear()
    _times[text] = when
    return when


_WEB_ESCAPE = re.compile(r'\\(x[0-9A-Fa-f]{2}|["\\nrtbv])')
_WEB_BYTES = {'"': b'"', "\\": b"\\", "n": b"\n", "r": b"\r", "t": b"\t", "b": b"\b", "v": b"\v"}


def _unescape_web(text: str) -> str:
    """nginx's and Apache's escapes undone: ``\\xHH`` is a byte (several make UTF-8), ``\\"``,
    ``\\\\`` and Apache's ``\\n`` ``\\t`` ... their characters.  A byte sequence that is not
    UTF-8 becomes U+FFFD, as an undecodable byte of the file does."""
    if "\\" not in text:
        return text
    out = bytearray()
    at = 0
    for m in _WEB_ESCAPE.finditer(text):
        out += text[at : m.start()].encode("utf-8", "replace")
        code = m[1]
        out += bytes((int(code[1:], 16),)) if code[0] == "x" else _WEB_BYTES[code]
        at = m.end()
    out += text[at:].encode("utf-8", "replace")
    return out.decode("utf-8", "replace")


_RUST_ESCAPE = re.compile(r"\\(u\{[0-9A-Fa-f]{1,6}\}|[trn0'\"\\])")
_RUST_CHARS = {"t": "\t", "r": "\r", "n": "\n", "0": "\0", "'": "'", '"': '"', "\\": "\\"}


def _rust_char(m: re.Match[str]) -> str:
    code = m[1]
    if code[0] != "u":
        return _RUST_CHARS[code]
    value = int(code[2:-1], 16)
    return chr(value) if value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else "\ufffd"


def _unescape_rust(text: str) -> str:
    """Rust's ``char::escape_default`` undone (agate): ``\\u{1b}``, ``\\t``, ``\\"`` ..."""
    return _RUST_ESCAPE.sub(_rust_char, text) if "\\" in text else text


def _authority(url: str) -> str | None:
    """The ``host`` or ``host:port`` of an absolute URL, lower-cased, without user information."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme:
        return None
    end = len(rest)
    for stop in "/?#":
        at = rest.find(stop)
        if at != -1 and at < end:
            end = at
    authority = rest[:end].rpartition("@")[2].lower()
    return authority or None


def _address(text: str) -> str | None:
    """A client address as logged, brackets of an IPv6 one removed; None for ``-`` or nothing."""
    if not text or text == "-":
        return None
    if text[0] == "[" and text[-1] == "]":
        return text[1:-1]
    return text


def _size(text: str) -> int | None:
    return int(text) if text.isdigit() else None


# --------------------------------------------------------------------------- Gemini

# jetforce 1.0.0, on its standard output (the command line, or jetforce as a library):
#   127.0.0.1 [29/Nov/2026:11:13:57 +0000] "gemini://localhost/robots.txt" 20 "text/plain" 49
# The time is when the connection began, to the second; the URL is written as sent (quotes
# too, unescaped), the meta with its quotes escaped.  A request that is not UTF-8 or too long
# is not logged at all.  An IPv4 client of a server bound to "::" is logged "::ffff:127.0.0.1".
_JETFORCE = re.compile(
    r'(?P<client>\S+) \[(?P<t>[^\]]*)\] "(?P<url>.*)" (?P<status>\d+) '
    r'"(?P<meta>(?:[^"\\]|\\.)*)" (?P<size>\d+)\Z',
    re.S,
)
_JETFORCE_NOISE = re.compile(
    r"Generating ad-hoc certificate|You are now riding on|An Experimental Gemini Server|Listening on |"
    r"https://github.com/michael-lazar/jetforce|Server hostname is |Root directory: |"
    r"TLS (?:Certificate|Private)|"
    r"[_/\\ ]{20,}\Z"
)


def parse_jetforce(line: str, file: str = "", number: int = 0) -> Parsed:
    m = _JETFORCE.match(line)
    if m is None:
        return NOISE if _JETFORCE_NOISE.match(line) else None
    when = _clf_time(m["t"])
    if when is None:
        return None
    url = m["url"]
    return Hit(when, _address(m["client"]), "gemini", _authority(url), url, m["status"], None,
               int(m["size"]), file, number)  # fmt: skip


# molly-brown (Debian 0.0~git20210124), its AccessLog: tab-separated, time in RFC 3339 (UTC):
#   2026-11-29T11:14:34Z<TAB>127.0.0.1<TAB>20<TAB>gemini://localhost/robots.txt
# IPv6 clients in brackets ("[::1]"); a request it could not parse as a URL is logged "-" (59),
# a connection closed before its request "-" (40: noise); the URL as Go re-writes it
# (percent-encoded).
_MOLLY = re.compile(
    r"(?P<t>\d{4}-\d\d-\d\dT[^\t]+)\t(?P<client>[^\t]*)\t(?P<status>\d+)\t(?P<url>.*)\Z", re.S
)


def parse_molly_brown(line: str, file: str = "", number: int = 0) -> Parsed:
    m = _MOLLY.match(line)
    if m is None:
        return None
    when = _iso_time(m["t"])
    if when is None:
        return None
    url = m["url"]
    if url == "-" and m["status"] == "40":  # a connection closed before it sent a request
        return NOISE
    return Hit(when, _address(m["client"]), "gemini", _authority(url), url, m["status"], None, None,
               file, number)  # fmt: skip


# agate 3.3 (cargo install agate), through env_logger on its standard error; the client only
# with --log-ip (else "-"):
#   [2026-11-29T11:15:45Z INFO  agate] 127.0.0.1:19652 127.0.0.1 "gemini://localhost/" 20 "text/gemini"
# The request is escaped by Rust's escape_default (\u{1b}, \", \t); one that is not UTF-8 is
# logged as "" (59); a failed TLS handshake as "" 00 "TLS error" (no request: noise).
_AGATE = re.compile(
    r"(?:\[(?P<t>\S+) +[A-Z]+ +agate[^\]]*\] )?(?P<local>\S+) (?P<client>\S+) "
    r'"(?P<req>(?:[^"\\]|\\.)*)" (?P<status>\d\d) "(?P<meta>.*)"(?: error:.*)?\Z',
    re.S,
)
_AGATE_NOISE = re.compile(r"\[\S+ +[A-Z]+ +agate[^\]]*\] ")


def parse_agate(line: str, file: str = "", number: int = 0) -> Parsed:
    m = _AGATE.match(line)
    if m is None:
        return NOISE if _AGATE_NOISE.match(line) else None
    if m["status"] in ("00", "01"):  # a connection that never made a request
        return NOISE
    when = _iso_time(m["t"]) if m["t"] else None
    target = _unescape_rust(m["req"])
    return Hit(when, _address(m["client"]), "gemini", _authority(target), target, m["status"], None,
               None, file, number)  # fmt: skip


# --------------------------------------------------------------------------- Gopher

# gophernicus 3.1.1 with -l FILE ("Apache-compatible combined"): the item type it chose written
# before the path it served, and a User-Agent that is always the same words:
#   127.0.0.1 localhost:17071 - [29/Nov/2026:11:13:21 +0000] "GET 0/robots.txt HTTP/1.0" 200 34 ""
#   "Unknown gopher client"  (one line)
# The selector is not logged as sent: "robots.txt" and "/robots.txt" are both "0/robots.txt";
# a search string (after a tab) is left out; quotes and control bytes are written raw.
_GOPHERNICUS = re.compile(
    r'(?P<client>\S+) (?P<host>\S+) - \[(?P<t>[^\]]*)\] "GET (?P<type>.)(?P<sel>.*) HTTP/1\.0" '
    r'(?P<status>\d+) (?P<size>-?\d+) "(?P<ref>.*)" "Unknown gopher client"\Z',
    re.S,
)


def parse_gophernicus(line: str, file: str = "", number: int = 0) -> Parsed:
    m = _GOPHERNICUS.match(line)
    if m is None:
        return None
    when = _clf_time(m["t"])
    if when is None:
        return None
    return Hit(when, _address(m["client"]), "gopher", m["host"].lower(), m["sel"], m["status"], None,
               _size(m["size"]), file, number)  # fmt: skip


# pygopherd 3.1.0 with logmethod = file (its standard output), or syslog (then with the
# syslog's time in front): the client, which protocol and handler served it, the selector
# (a slash put in front); a selector it had no handler for is one EXCEPTION line:
#   127.0.0.1 [GopherProtocol/FileHandler]: /robots.txt
#   127.0.0.1 [GopherProtocol/None] EXCEPTION FileNotFound: '/nope' does not exist (no handler found)
_SYSLOG = (
    r"(?:(?:(?P<iso>\d{4}-\d\d-\d\dT\S+)|(?P<bsd>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)) "
    r"\S+ pygopherd(?:\[\d+\])?: )?"
)
_PYGOPHERD = re.compile(
    _SYSLOG + r"(?P<client>\S+) \[(?P<proto>\w+)/(?P<handler>\w+)\]"
    r"(?:: (?P<sel>.*)| EXCEPTION FileNotFound: '(?P<missing>.*)' does not exist(?: \(.*\))?)\Z",
    re.S,
)
_PYGOPHERD_NOISE = re.compile(
    _SYSLOG + r"(?:\S+ \[\w+/\w+\] EXCEPTION |Pygopherd starting|mimetypes initialized|Running\.|"
    r"SIGTERM|SIGHUP|Terminating all|Master application|setpgrp\(\)|Chrooted to|Supplemental group|"
    r"Switched to|Application startup)"
)
_PYGOPHERD_SCHEMES = {"HTTPProtocol": "http", "GeminiProtocol": "gemini", "SpartanProtocol": "spartan"}


def parse_pygopherd(line: str, file: str = "", number: int = 0) -> Parsed:
    m = _PYGOPHERD.match(line)
    if m is None:
        return NOISE if _PYGOPHERD_NOISE.match(line) else None
    when = _iso_time(m["iso"]) if m["iso"] else None  # a BSD syslog stamp has no year: no time
    selector = m["sel"] if m["sel"] is not None else m["missing"]
    scheme = _PYGOPHERD_SCHEMES.get(m["proto"], "gopher")
    return Hit(when, _address(m["client"] if m["client"] != "unknown-address" else ""), scheme, None,
               selector, None, None, None, file, number)  # fmt: skip


# --------------------------------------------------------------------------- Web

# nginx's and Apache's "combined" (and "common", which ends before the referrer; and Apache's
# "vhost_combined", which starts with the virtual host and port):
#   127.0.0.1 - - [29/Nov/2026:11:14:13 +0000] "GET /robots.txt HTTP/1.1" 200 34 "-" "Foo/1.0 (+http://x)"
# nginx writes ", \ and bytes outside printable ASCII as \xHH; Apache writes \" \\ \n ... and
# \xhh for other controls, and UTF-8 raw.
_COMBINED = re.compile(
    r"(?:(?P<vhost>\S+:\d+) )?(?P<client>\S+) \S+ \S+ \[(?P<t>[^\]]*)\] "
    r'"(?P<req>(?:[^"\\]|\\.)*)" (?P<status>\d{3}|-) (?P<size>\d+|-)'
    r'(?: "(?P<ref>(?:[^"\\]|\\.)*)" "(?P<ua>(?:[^"\\]|\\.)*)")?(?: .*)?\Z',
    re.S,
)


def parse_combined(line: str, file: str = "", number: int = 0) -> Parsed:
    m = _COMBINED.match(line)
    if m is None:
        return None
    when = _clf_time(m["t"])
    if when is None:
        return None
    request = _unescape_web(m["req"])
    parts = request.split(" ")
    target = parts[1] if len(parts) == 3 else request  # METHOD TARGET PROTOCOL, or what was sent
    ua = m["ua"]
    agent = _unescape_web(ua) if ua is not None and ua != "-" else None
    status = m["status"] if m["status"] != "-" else None
    host = m["vhost"].lower() if m["vhost"] else None
    return Hit(when, _address(m["client"]), "web", host, target, status, agent, _size(m["size"]),
               file, number)  # fmt: skip


# --------------------------------------------------------------------------- the table

_WEB_NOTE = "no scheme: http and https are one site"

#: Every format by its ``--format`` name, the most particular first (a gophernicus line is also
#: a combined line; detect() prefers the first of equals).
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("jetforce", "jetforce (Gemini)", "gemini", parse_jetforce, frozenset({"agent"}),
               ("times to the second, when the connection began", "a request that is not UTF-8 or "
                "longer than 1024 bytes is not logged")),
        Format("molly-brown", "molly-brown (Gemini)", "gemini", parse_molly_brown,
               frozenset({"agent", "size"}),
               ("times to the second", "a request that is not a URL is logged as \"-\"")),
        Format("agate", "agate (Gemini)", "gemini", parse_agate, frozenset({"agent", "size"}),
               ("times to the second, only in env_logger's prefix (absent: no times)",
                "client addresses only with --log-ip (else no client addresses)")),
        Format("gophernicus", "gophernicus (Gopher)", "gopher", parse_gophernicus, frozenset({"agent"}),
               ("the selector as gophernicus served it, not as sent (its item type in front, a search "
                "string left out)", "times to the second")),
        Format("pygopherd", "pygopherd (Gopher)", "gopher", parse_pygopherd,
               frozenset({"when", "status", "agent", "size", "host"}),
               ("times only when logged through syslog with an RFC 3339 stamp",)),
        Format("combined", "nginx or Apache, combined or common (Web)", "web", parse_combined, frozenset(),
               (_WEB_NOTE, "a common log has no User-Agent", "times to the second")),
    )
}  # fmt: skip

DETECT_LINES = 50  # non-empty lines read to name a file's format


def detect(lines: Iterable[str]) -> str | None:
    """The name of the format the first non-empty ``lines`` (at most DETECT_LINES) are written in:
    the one that reads the most of them as requests (then as its own noise), the first of
    FORMATS among equals; None when no format reads any of them."""
    seen = 0
    scores = {name: [0, 0] for name in FORMATS}
    for line in lines:
        if not line.strip():
            continue
        for name, fmt in FORMATS.items():
            parsed = fmt.parse(line, "", 0)
            if isinstance(parsed, Hit):
                scores[name][0] += 1
            elif parsed is NOISE:
                scores[name][1] += 1
        seen += 1
        if seen >= DETECT_LINES:
            break
    best = max(FORMATS, key=lambda name: scores[name])  # max keeps the first of equals
    return best if any(scores[best]) else None
