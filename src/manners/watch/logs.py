"""One line of a server's access log, read: the formats real Gemini, Gopher and Web servers write.

Each format was read from what the server itself wrote on loopback (the samples below, and the
tests, are its own lines), not from memory: a parser is a function from one line to a
:class:`Hit`, to :data:`NOISE` for a line the server writes that records no request (its start,
an error after a request it already logged), or to None for a line it does not read.
:func:`detect` names the format of a file from its first lines.  Nothing here opens a file
(:mod:`.sources` does), and no line is read here: the engine reads it
(:func:`manners._core.parse_log_line`), as fast as a log of millions of lines needs.

Text the client sent (a URL, a selector, a User-Agent) is kept as the client sent it: a
server's own escapes (nginx's ``\\x1B``, agate's ``\\u{1b}``) are undone, so that the rules of a
robots.txt see what the robot asked for.  It may hold control characters and terminal escapes:
escape it when showing it (:func:`manners.terminal.safe`).

What a format does not record is said in :attr:`Format.lacks`, in words a report can give
(:data:`LACKS`): a log without times cannot judge pacing, and the report says so instead of
guessing.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from manners._core import parse_log_line

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


# --------------------------------------------------------------------------- the parsers

# Each format's lines are read by the engine (manners-core's watch::logs, as the regular
# expressions that were here read them: a log is millions of lines); what each server writes is
# told here, with its own lines.


def _parse(fmt: str, line: str, file: str, number: int) -> Parsed:
    got = parse_log_line(fmt, line)
    if got is None:
        return None
    if isinstance(got, str):  # "noise"
        return NOISE
    return Hit(*got, file, number)


# --------------------------------------------------------------------------- Gemini


# jetforce 1.0.0, on its standard output (the command line, or jetforce as a library):
#   127.0.0.1 [29/Nov/2026:11:13:57 +0000] "gemini://localhost/robots.txt" 20 "text/plain" 49
# The time is when the connection began, to the second; the URL is written as sent (quotes
# too, unescaped), the meta with its quotes escaped.  A request that is not UTF-8 or too long
# is not logged at all.  An IPv4 client of a server bound to "::" is logged "::ffff:127.0.0.1".
def parse_jetforce(line: str, file: str = "", number: int = 0) -> Parsed:
    return _parse("jetforce", line, file, number)


# molly-brown (Debian 0.0~git20210124), its AccessLog: tab-separated, time in RFC 3339 (UTC):
#   2026-11-29T11:14:34Z<TAB>127.0.0.1<TAB>20<TAB>gemini://localhost/robots.txt
# IPv6 clients in brackets ("[::1]"); a request it could not parse as a URL is logged "-" (59),
# a connection closed before its request "-" (40: noise); the URL as Go re-writes it
# (percent-encoded).
def parse_molly_brown(line: str, file: str = "", number: int = 0) -> Parsed:
    return _parse("molly-brown", line, file, number)


# agate 3.3 (cargo install agate), through env_logger on its standard error; the client only
# with --log-ip (else "-"):
#   [2026-11-29T11:15:45Z INFO  agate] 127.0.0.1:19652 127.0.0.1 "gemini://localhost/" 20 "text/gemini"
# The request is escaped by Rust's escape_default (\u{1b}, \", \t); one that is not UTF-8 is
# logged as "" (59); a failed TLS handshake as "" 00 "TLS error" (no request: noise).
def parse_agate(line: str, file: str = "", number: int = 0) -> Parsed:
    return _parse("agate", line, file, number)


# --------------------------------------------------------------------------- Gopher


# gophernicus 3.1.1 with -l FILE ("Apache-compatible combined"): the item type it chose written
# before the path it served, and a User-Agent that is always the same words:
#   127.0.0.1 localhost:17071 - [29/Nov/2026:11:13:21 +0000] "GET 0/robots.txt HTTP/1.0" 200 34 ""
#   "Unknown gopher client"  (one line)
# The selector is not logged as sent: "robots.txt" and "/robots.txt" are both "0/robots.txt";
# a search string (after a tab) is left out; quotes and control bytes are written raw.
def parse_gophernicus(line: str, file: str = "", number: int = 0) -> Parsed:
    return _parse("gophernicus", line, file, number)


# pygopherd 3.1.0 with logmethod = file (its standard output), or syslog (then with the
# syslog's time in front): the client, which protocol and handler served it, the selector
# (a slash put in front); a selector it had no handler for is one EXCEPTION line:
#   127.0.0.1 [GopherProtocol/FileHandler]: /robots.txt
#   127.0.0.1 [GopherProtocol/None] EXCEPTION FileNotFound: '/nope' does not exist (no handler found)
def parse_pygopherd(line: str, file: str = "", number: int = 0) -> Parsed:
    return _parse("pygopherd", line, file, number)


# --------------------------------------------------------------------------- Web


# nginx's and Apache's "combined" (and "common", which ends before the referrer; and Apache's
# "vhost_combined", which starts with the virtual host and port):
#   127.0.0.1 - - [29/Nov/2026:11:14:13 +0000] "GET /robots.txt HTTP/1.1" 200 34 "-" "Foo/1.0 (+http://x)"
# nginx writes ", \ and bytes outside printable ASCII as \xHH; Apache writes \" \\ \n ... and
# \xhh for other controls, and UTF-8 raw.
def parse_combined(line: str, file: str = "", number: int = 0) -> Parsed:
    return _parse("combined", line, file, number)


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
