"""What ``manners site`` found: the report an audit returns, shared by the command and ``manners serve``.

An audit (:func:`manners.admin.site.audit_site`) asks one server a few polite questions and
hands the replies to pure checks (``gopher``, ``gemini``, ``http``).  Each check that fails is
a :class:`Finding` that names the :class:`Rule` it rests on (the document, its section and its
very words) and what the server sent, escaped.  The report also holds the robots.txt as a
robot read it, lint's findings on it, and the matrix of who may fetch what.

Severity follows the words, as RFC 2119 reads them: a MUST, SHALL or PROHIBITED the server
breaks is an error; a SHOULD or RECOMMENDED a warning; the rest (words addressed to crawlers,
things worth knowing) information.  One exception, a warning at least: an answer for
robots.txt that keeps every robot off the whole server (HTTP 5xx or 429, Gemini 4x, no answer),
whose words are the crawler's "MUST assume complete disallow" but whose cost is the server's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ...diagnostics import ACCESS_WORDS as ACCESS_WORDS  # RFC 9309 §2.3, shared with lint
from ...diagnostics import rests_on
from ...robots import Decision, Diagnostic
from ...terminal import safe
from ...vocabulary import timestamp

if TYPE_CHECKING:
    from ...fetch import FetchResult
    from .usage import Header, SiteUsage

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
EXCERPT = 240  # characters of a reply quoted in a finding

# The documents the rules come from, as a finding names them.
DRAFT = "the Gopher draft"  # "a contemporary specification of the Gopher communications protocol"
PROPOSAL = "the Gopher robots proposal (2019-05-24)"  # "Robots and Gopher", alexschroeder.ch
COMPANION = "the Gemini companion robots.txt"  # "robots.txt for Gemini", gemini.circumlunar.space
RFC9309 = "RFC 9309"
AUDIT = "manners site"  # what the audit itself reports, resting on no document

# RFC 9309's words that more than one scheme's checks rest on (it applies to any URI scheme, §1).
REDIRECT_WORDS = (
    "The crawlers SHOULD follow at least five consecutive redirects, even across authorities (for example,"
    " hosts in the case of HTTP). [...] If there are more than five consecutive redirects, crawlers MAY"
    " assume that the robots.txt file is unavailable."
)
UNAVAILABLE_WORDS = (
    "If a server status code indicates that the robots.txt file is unavailable to the crawler, then the"
    " crawler MAY access any resources on the server."
)
UNREACHABLE_WORDS = (
    "If the robots.txt file is unreachable due to server or network errors, this means the robots.txt file"
    " is undefined and the crawler MUST assume complete disallow. For example, in the context of HTTP, server"
    " errors are identified by status codes in the 500-599 range."
)


def lint_basis(d: Diagnostic) -> tuple[str, str] | None:
    """The document and words one of lint's findings rests on, for an error (None otherwise)."""
    return rests_on(d)


@dataclass(frozen=True)
class Rule:
    """One check: a stable code, the severity its words give, and the words themselves."""

    code: str
    severity: Severity
    basis: str  # the document and section, e.g. 'RFC 9309 §2.3'
    words: str  # the words the check rests on, verbatim

    def found(
        self,
        message: str,
        *,
        sent: bytes | str | None = None,
        line: int | None = None,
        asked: str | None = None,
    ) -> Finding:
        """A finding of this rule: ``message`` in words, ``sent`` what the server sent (quoted,
        escaped and cut here), ``line`` the line it is about, ``asked`` the request it answered."""
        shown = sent if sent is None or isinstance(sent, str) else excerpt(sent)
        return Finding(self.code, self.severity, message, self.basis, self.words, shown, line, asked)


@dataclass(frozen=True)
class Finding:
    """What the audit found: the rule's code, severity, basis and words, and the case at hand."""

    code: str
    severity: Severity
    message: str  # in words, for people
    basis: str  # the document and section the rule rests on
    words: str  # their very words
    sent: str | None = None  # what the server sent, escaped (``\\x0d\\x0a``) and cut
    line: int | None = None  # the line of the reply it is about
    asked: str | None = None  # the request (a URL, or a Gopher selector) whose answer it is about

    def as_json(self) -> dict[str, Any]:
        """The finding in the keys of every command's findings, and the rest of it."""
        return {
            "line": self.line,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "basis": self.basis,
            "words": self.words,
            "sent": self.sent,
            "asked": self.asked,
        }


def excerpt(data: bytes, limit: int = EXCERPT) -> str:
    """``data`` as text to quote: every control character escaped (line ends too, so that a
    bare LF shows), cut at ``limit`` characters with '…'."""
    text = data[: limit * 4].decode("utf-8", "surrogateescape")
    cut = len(text) > limit or len(data) > limit * 4
    return safe(text[:limit]) + ("…" if cut else "")


@dataclass(frozen=True)
class Reply:
    """One request and what came back: every byte read, up to the audit's cap."""

    asked: str  # the selector (Gopher) or URL as sent
    data: bytes = b""
    error: str | None = None  # why nothing usable came back (the network, a deadline, not sent)


UNANSWERED = Rule(
    "site-unanswered",
    "info",
    AUDIT,
    "Every request has a deadline; the checks that need an answer that did not come are left out.",
)


def unanswered(replies: list[Reply]) -> list[Finding]:
    """One finding per request that got no answer: the checks that needed it were not made."""
    return [
        UNANSWERED.found(
            f"no answer to {_shown(r.asked)}: {r.error}; the checks that need it are left out", asked=r.asked
        )
        for r in replies
        if r.error is not None
    ]


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, with an 's' unless ``n`` is one."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _shown(asked: str) -> str:
    return "the empty selector (the root menu)" if asked == "" else repr_text(asked)


def repr_text(text: str) -> str:
    """Text from a server or a request, quoted and escaped for a message."""
    return "'" + safe(text) + "'"


_BARE = re.compile(rb"(?<!\r)\n|\r(?!\n)")
_LINE_END = re.compile(rb"\r\n|\n|\r")


def bare_line_ends(data: bytes) -> tuple[int, int | None]:
    """How many line ends in ``data`` are a bare LF or a bare CR, and the line of the first."""
    found = _BARE.search(data)
    if found is None:
        return 0, None
    return len(_BARE.findall(data)), len(_LINE_END.findall(data, 0, found.start())) + 1


def line_at(data: bytes, number: int) -> bytes:
    """Line ``number`` (1-based) of ``data``, any line end, with its line end."""
    lines = re.split(rb"(?<=\n)|(?<=\r)(?!\n)", data)
    return lines[number - 1] if 0 < number <= len(lines) else b""


# -- who may fetch what --------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A robot of the matrix: a name and the roles (virtual agents) it acts in."""

    name: str  # as the matrix shows it
    agent: str  # the User-agent it matches as
    roles: tuple[str, ...]
    why: str  # every robot, a virtual agent, named in robots.txt (line N), --agent


@dataclass(frozen=True)
class Row:
    """A URL of the server and what each column decides for it."""

    url: str
    found: str  # how it was found: crawl, home page, sitemap, given
    decisions: tuple[Decision, ...]  # one per column

    @property
    def disagree(self) -> bool:
        return len({d.allowed for d in self.decisions}) > 1


@dataclass(frozen=True)
class Sample:
    """Where the matrix's URLs came from."""

    how: str  # crawl, home page and sitemaps, given, none
    limit: int  # pages the sample may hold (--sample N), or the URLs given
    note: str | None = None  # what cut it short, when something did


# -- the report ----------------------------------------------------------------------------


@dataclass
class SiteReport:
    """Everything one audit found about one server.

    ``reachable`` is False when the server did not answer the first request (then ``problem``
    says why and nothing else was asked); ``robots`` is the robots.txt as a robot reads it,
    with its outcome, whatever happened; ``findings`` are the audit's own checks, errors first;
    ``diagnostics`` are ``manners lint``'s on that file; ``columns`` and ``matrix`` say who may
    fetch which of the server's URLs, and which line decides; ``usage`` the usage preferences
    robots.txt states for the robot asked about, at the root and the matrix's URLs, and
    ``content_usage`` the Content-Usage header field robots.txt came with (Web servers only).
    """

    url: str
    scheme: str
    profile: str  # the reading the matrix and lint use (by scheme)
    robots: FetchResult
    reachable: bool = True
    problem: str | None = None
    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    matrix: list[Row] = field(default_factory=list)
    sample: Sample = field(default_factory=lambda: Sample("none", 0))
    usage: SiteUsage | None = None  # what robots.txt states for the robot asked about (HTTP(S) only)
    content_usage: Header | None = None  # the Content-Usage header of robots.txt's answer, if any
    requests: int = 0  # requests sent to the server (the sample's included)
    spacing: float = 0.0  # seconds kept between two of them
    started_at: float = 0.0  # epoch seconds
    took: float = 0.0  # seconds

    def counts(self) -> dict[str, int]:
        """Findings by severity, lint's included."""
        every = [f.severity for f in self.findings] + [d.severity for d in self.diagnostics]
        return {s: every.count(s) for s in SEVERITIES}

    @property
    def failed(self) -> bool:
        """An error-level finding: the server breaks a MUST, SHALL or PROHIBITED (or the file
        is no robots.txt at all, in lint's words)."""
        return self.counts()["error"] > 0

    def as_json(self) -> dict[str, Any]:
        """The report in the keys every command's JSON shares (docs/json.md)."""
        return {
            "url": self.url,
            "scheme": self.scheme,
            "reachable": self.reachable,
            "problem": self.problem,
            "started_at": timestamp(self.started_at),
            "took": round(self.took, 3),
            "requests": self.requests,
            "spacing": self.spacing,
            "robots_txt": robots_block(self.robots),
            "profile": self.profile,
            "counts": self.counts(),
            "findings": [f.as_json() for f in self.findings],
            "diagnostics": [_diagnostic(d) for d in self.diagnostics],
            "sample": {"how": self.sample.how, "limit": self.sample.limit, "note": self.sample.note},
            "columns": [
                {"name": c.name, "agent": c.agent, "roles": list(c.roles), "why": c.why} for c in self.columns
            ],
            "matrix": [
                {
                    "url": r.url,
                    "found": r.found,
                    "disagree": r.disagree,
                    "agents": {
                        c.name: {"allowed": d.allowed, "line": d.line}
                        for c, d in zip(self.columns, r.decisions, strict=True)
                    },
                }
                for r in self.matrix
            ],
            "usage": None if self.usage is None else self.usage.as_json(),
            "content_usage": None if self.content_usage is None else self.content_usage.as_json(),
        }


def _diagnostic(d: Diagnostic) -> dict[str, Any]:
    basis, words = lint_basis(d) or (None, None)
    return {**d._asdict(), "basis": basis, "words": words}


def robots_block(result: FetchResult) -> dict[str, Any]:
    """The robots.txt a robot read, as every command's JSON says it (``manners.source.about``)."""
    from ...cache.entry import entry_after
    from ...crawl.urls import authority
    from ...robot import Policy
    from ...source import Source, about

    entry = entry_after(None, result, result.fetched_at)
    policy = Policy(authority(result.url), entry, result.robots, False, 0.0)
    return about(Source(result.robots, result.body, entry.url, policy))
