"""What ``manners serve``'s page is asked and what it answers, as plain data.

:mod:`manners.admin.serve` reads the form into an :class:`Ask` and fills an
:class:`Answer`; :mod:`manners.admin.page` writes them as HTML.  Held here, neither of
the two imports the other's data from the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ..diagnostics import Diagnostic
from ..robots import Decision, Usage
from ..source import Source

if TYPE_CHECKING:
    from .diff import Diff
    from .site import Column, Row, SiteReport


@dataclass(frozen=True)
class Ask:
    """What the form asks, every field checked (see :func:`read_ask`)."""

    draft: str = ""
    live: str = ""
    agents: tuple[str, ...] = ("*",)
    roles: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    profile: str = ""  # "": by the live URL's scheme, as the commands choose
    audit: bool = False  # audit the live server, as manners site does
    sample: int = 0  # pages of the live server to crawl for the URLs when none are given (audits too)
    load: bool = False  # fetch the live file into the draft

    @property
    def empty(self) -> bool:
        return not (self.draft or self.live)

    def query(self) -> str:
        """The GET form of this ask: ``/?`` and this is the answer page's own address."""
        pairs = [("draft", self.draft), ("live", self.live), ("agent", "\n".join(self.agents)),
                 ("role", ", ".join(self.roles)), ("urls", "\n".join(self.urls)),
                 ("profile", self.profile)]  # fmt: skip
        pairs += [("audit", "on")] if self.audit else []
        pairs += [("sample", str(self.sample))] if self.sample else []
        kept = [(k, v) for k, v in pairs if v or k == "role"]  # no role given is no role, not --role's
        return urlencode([(k, v.encode("utf-8", "surrogateescape")) for k, v in kept])


@dataclass
class Shown:
    """A robots.txt on the page: its lines, the findings on them, the notes said first."""

    src: Source
    label: str  # "the draft", or the robots.txt URL
    anchor: str  # the prefix of its lines' ids: "L" (#L12), "live-L" (#live-L12)
    findings: list[Diagnostic] = field(default_factory=list)  # lint's, under the chosen profile
    notes: list[str] = field(default_factory=list)  # unread, cut, or no robots.txt at all


@dataclass
class Reading:
    """One profile's reading of the main file for one robot: a cell block of the side-by-side table."""

    chosen: list[tuple[str, list[tuple[int, int]]]]  # the groups that apply, as explain names them
    reason: str  # why none does
    pace: str  # explain's pace line


@dataclass
class ProfileColumn:
    """One profile's column of the side-by-side table: its findings, and each robot's reading."""

    profile: str
    findings: list[Diagnostic]
    readings: list[Reading]  # one per agent, in the order asked


@dataclass
class Answer:
    ask: Ask
    profile: str
    files: list[Shown]  # the draft and the live file, as asked; the first is what the matrix reads
    targets: list[str]
    target_note: str | None = None
    matrices: list[tuple[str, list[list[Decision]]]] = field(default_factory=list)  # per agent
    usage: list[list[Usage]] = field(default_factory=list)  # per matrix, per target (serve.usage_of)
    profiles: list[ProfileColumn] = field(default_factory=list)
    unread: list[dict[str, Any]] = field(default_factory=list)  # results when nothing was read
    diff: Diff | None = None  # the live file's verdicts against the draft's (manners.admin.diff)
    diff_note: str | None = None
    site: SiteReport | None = None  # the live server's audit (manners.admin.site)
    columns: list[Column] = field(default_factory=list)  # who may fetch what: the robots ...
    rows: list[Row] = field(default_factory=list)  # ... against the targets, as manners site decides

    @property
    def states_usage(self) -> bool:
        """The file states a usage preference for some target and robot: the matrices then
        have a usage column (a file without one looks as it did before there was one)."""
        return any(p.value != "unstated" for row in self.usage for u in row for p in u.categories + u.signals)

    @property
    def live_anchor(self) -> str:
        """The prefix of the live file's line ids (the file fetched, not the draft)."""
        return next((f.anchor for f in self.files if f.src.policy is not None), "L")
