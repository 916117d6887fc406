"""What ``manners watch`` found, as data: a verdict per robot and its evidence.

Frozen dataclasses of plain values (str, int, float, None, tuples of these), so the command
line can render them as a table, write them as JSON (``dataclasses.asdict``) or turn the
impolite clients into an nftables set, and ``--follow`` can compare two reports.  Times are
epoch seconds; a robots.txt version is named by the moment it came into force, in RFC 3339
(``always`` for the one in force from the start).  Made by :mod:`manners.watch.judge`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Breach", "Example", "Others", "Pacing", "Report", "RobotVerdict", "SlowDown"]


@dataclass(frozen=True, slots=True)
class Example:
    """One offending request: where the log has it, what was asked, and when."""

    file: str
    line: int
    target: str  # as the client sent it: may hold control characters (escape it to show it)
    when: float | None


@dataclass(frozen=True, slots=True)
class Breach:
    """Requests a rule forbade: which reading forbade them, by which line of which version."""

    rule: str  # "disallowed": by the rules that bind the robot (its verdict); "role": by a Gemini role's
    reading: str  # "*", the robot's product token (Web), or a virtual agent ("archiver")
    line: int | None  # the deciding line of the version in force at the first of them
    version: str  # that version: the moment it came into force (RFC 3339), or "always"
    requests: int
    examples: tuple[Example, ...]  # the first few


@dataclass(frozen=True, slots=True)
class Pacing:
    """A robot's pace at one host, against the spacing robots.txt asked of it."""

    host: str  # "" when the log names no host
    asked: float  # the longest spacing (s) Crawl-delay or Request-rate asked of it there; 0: none
    shortest: float | None  # the shortest gap (s) between two of its requests as logged; None: one request
    closer: int  # requests provably closer than asked (see the report's notes for the tolerance)
    requests: int
    examples: tuple[Example, ...]


@dataclass(frozen=True, slots=True)
class SlowDown:
    """What a robot did after being told to slow down (Gemini ``44``, Web ``429`` or ``503``)."""

    host: str
    told: int  # such answers it was given
    waited: int  # next requests after one that came at least the assumed wait later
    ignored: int  # next requests that came sooner
    wait: float  # the wait assumed (s): the log does not hold what the server asked
    examples: tuple[Example, ...]


@dataclass(frozen=True, slots=True)
class RobotVerdict:
    """One robot: a client (an address or block, with its product token on the Web), its verdict
    (``polite`` or ``impolite``) and the evidence."""

    client: str  # "192.0.2.7", or "192.0.2.0/24" when grouped
    token: str | None  # the User-Agent's product token (Web); None: no token, or Gemini and Gopher
    kind: str  # "gemini", "gopher" or "web"
    verdict: str  # "polite" or "impolite"
    reasons: tuple[str, ...]  # why impolite, one sentence a rule: which rule, how many requests
    robot_because: str  # "it asked for robots.txt", or the pace that no person keeps
    requests: int
    first: float | None
    last: float | None
    robots_fetches: int  # requests for robots.txt
    robots_first: bool  # its first request was for robots.txt
    refetched: bool | None  # read it again within every 24 h of its activity; None: not judged
    stale: int  # requests more than 24 h after its last robots.txt
    charged: int  # requests the rules that bind it forbade (by every version it could have read)
    breaches: tuple[Breach, ...]  # "disallowed" ones first, then "role" ones (Gemini)
    kept_roles: tuple[str, ...]  # Gemini virtual agents the file has rules for that it kept
    broke_roles: tuple[str, ...]
    roles: str  # "kept indexer and researcher; broke archiver: line 7, 3 requests"; "" when no roles
    pacing: tuple[Pacing, ...]
    slow_downs: tuple[SlowDown, ...]
    notes: tuple[str, ...]  # what could not be judged for it, and why

    @property
    def offences(self) -> int:
        """Requests held against it: forbidden, closer than asked, sooner than a slow-down allowed."""
        return self.charged + sum(p.closer for p in self.pacing) + sum(s.ignored for s in self.slow_downs)


@dataclass(frozen=True, slots=True)
class Others:
    """The clients not judged: people, or robots too slow and too discreet to tell from them."""

    clients: int
    requests: int
    unattributed: int  # requests logged without a client address


@dataclass(frozen=True, slots=True)
class Report:
    """Every robot, most offending first, and the rest summed up."""

    robots: tuple[RobotVerdict, ...]
    others: Others
    versions: tuple[str, ...]  # the robots.txt versions judged by, by the moment each came into force
    notes: tuple[str, ...]  # how the judging was done: thresholds, tolerances, what the logs lack

    @property
    def impolite(self) -> tuple[RobotVerdict, ...]:
        return tuple(r for r in self.robots if r.verdict == "impolite")
