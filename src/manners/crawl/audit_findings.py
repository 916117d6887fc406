"""What ``manners crawl audit`` found: the hosts, the violations, the repeats, and the report of them.

Values only (each with its ``as_json``, as docs/json.md's ``json: manners crawl audit`` block
documents it): ``audit_judging`` makes them from what ``audit_lines`` read, ``audit`` shows
them.  Kept apart so that the shape of a report reads in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..vocabulary import timestamp
from .audit_lines import Record, Request
from .totals import Reconciliation

Repeat = Literal["death", "in-flight", "retry", "revisit", "twice"]  # why a URL was requested again
ALLOWED_IN_FLIGHT: tuple[Repeat, ...] = ("death", "in-flight")  # the repeats a fleet allows
SAID = 3  # reasons one repeated URL's text line gives at most (the rest are counted)


@dataclass(frozen=True, slots=True)
class Worker:
    """A worker as its ledger shows it: which one, where, how busy and for how long."""

    worker: str
    dir: str
    requests: int
    first: float
    last: float

    def as_json(self) -> dict[str, object]:
        return {
            "worker": self.worker,
            "dir": self.dir,
            "requests": self.requests,
            "first": timestamp(self.first),
            "last": timestamp(self.last),
        }


@dataclass(frozen=True, slots=True)
class Host:
    """One authority: its closest two requests against what they had to keep, and how many
    of its requests came too soon."""

    authority: str
    requests: int
    workers: int
    smallest_gap: float | None  # None: a single request
    required_gap: float | None  # what the pair with the smallest gap had to keep; None: not said
    violations: int  # requests to it sent too soon

    @property
    def ok(self) -> bool:
        return self.violations == 0

    def as_json(self) -> dict[str, object]:
        return {
            "authority": self.authority,
            "requests": self.requests,
            "workers": self.workers,
            "smallest_gap": _rounded(self.smallest_gap),
            "required_gap": self.required_gap,
            "violations": self.violations,
            "ok": self.ok,
        }


@dataclass(frozen=True, slots=True)
class TooClose:
    """A request sent before its time: too soon after ``earlier``, or before a slow-down ended."""

    authority: str
    earlier: Request | None  # None: the host's first request in the ledgers
    later: Request
    required: float | None  # seconds ``later`` had to keep after ``earlier``
    not_before: float | None  # the slow-down it broke, if it broke one

    @property
    def gap(self) -> float | None:
        return self.later.t - self.earlier.t if self.earlier is not None else None

    def why(self) -> str:
        if self.not_before is not None:
            return f"a 44 asked for nothing before {timestamp(self.not_before)}"
        return f"a spacing of {self.required or 0:g} s was in force"

    def as_json(self) -> dict[str, object]:
        return {
            "authority": self.authority,
            "earlier": self.earlier.as_json() if self.earlier is not None else None,
            "later": self.later.as_json(),
            "gap": _rounded(self.gap),
            "required": self.required,
            "not_before": _moment(self.not_before),
            "why": self.why(),
        }


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A page URL requested more than once, with why each request was followed by another."""

    url: str
    requests: tuple[Request, ...]
    repeats: tuple[tuple[Repeat, str], ...]  # for each request but the last: why it was asked again
    #: for each repeat that was a revisit: seconds after its due time it was asked (>= 0)
    margins: tuple[float, ...] = ()

    @property
    def in_flight_at_death(self) -> bool:
        return any(kind == "death" for kind, _ in self.repeats)

    @property
    def in_flight(self) -> bool:
        """Asked again because the request before was in flight: its worker died, lost its lease,
        or could not commit its settling (the repeats a fleet allows)."""
        return any(kind in ALLOWED_IN_FLIGHT for kind, _ in self.repeats)

    @property
    def violation(self) -> bool:
        return any(kind == "twice" for kind, _ in self.repeats)

    @property
    def revisits(self) -> int:
        return sum(kind == "revisit" for kind, _ in self.repeats)

    def why(self) -> str:
        """In words, summarised: each reason once (violations first, at most ``SAID`` of them
        and the number left), the revisits as one count with the closest to its due time."""
        said = dict.fromkeys(words for kind, words in self.repeats if kind == "twice")
        said.update(dict.fromkeys(words for kind, words in self.repeats if kind not in ("twice", "revisit")))
        reasons = list(said)
        if len(reasons) > SAID:
            reasons = [*reasons[:SAID], f"and {len(reasons) - SAID} more reasons"]
        if self.revisits:
            closest = f", the closest {min(self.margins):.2f} s after it" if self.margins else ""
            first = next(words for kind, words in self.repeats if kind == "revisit")
            if self.revisits > 1:
                due = first.removeprefix("a revisit, ")
                first = f"{many(self.revisits, 'revisit')}, each once due{closest} (the first {due})"
            reasons.append(first)
        return "; ".join(reasons)

    def as_json(self) -> dict[str, object]:
        return {
            "url": self.url,
            "times": len(self.requests),
            "at": [timestamp(r.t) for r in self.requests],
            "workers": [r.worker for r in self.requests],
            "in_flight_at_death": self.in_flight_at_death,
            "in_flight": self.in_flight,
            "revisits": self.revisits,
            "closest_to_due": _rounded(min(self.margins)) if self.margins else None,
            "violation": self.violation,
            "why": self.why(),
        }


@dataclass(frozen=True, slots=True)
class Disallowed:
    """A request for a URL that a pages file settled as disallowed."""

    request: Request
    record: Record  # the record that settled the URL as disallowed

    def as_json(self) -> dict[str, object]:
        r = self.record
        return {**self.request.as_json(), "robots": r.robots, "line": r.line, "rule": r.rule}


@dataclass(frozen=True, slots=True)
class RobotsLate:
    """An authority whose first page request came before any request for its robots.txt."""

    authority: str
    first: Request
    pages_before: int
    robots_at: float | None  # its first robots.txt request; None: never asked
    cached_at: float | None = None  # its first robots.txt copy from the cache; None: none taken

    def as_json(self) -> dict[str, object]:
        return {
            **self.first.as_json(),
            "authority": self.authority,
            "pages_before": self.pages_before,
            "robots_at": _moment(self.robots_at),
            "cached_at": _moment(self.cached_at),
        }


@dataclass(frozen=True)
class Report:
    """What :func:`judge` found; :func:`as_json` and :func:`render_text` show it."""

    dirs: tuple[str, ...]
    workers: tuple[Worker, ...]
    requests: int
    hosts: tuple[Host, ...]
    too_close: tuple[TooClose, ...]
    duplicates: tuple[Duplicate, ...]
    disallowed_requested: tuple[Disallowed, ...]
    robots_first_violations: tuple[RobotsLate, ...]
    torn_lines: tuple[str, ...]  # "FILE:LINE" of each torn last line skipped (a crash mid-write)
    robots_cached: int = 0  # robots lines with source "cache": copies used, no request made
    events: int = 0  # other ledger lines that are no request (lease-lost)
    reconciled: Reconciliation | None = None  # the totals against the frontier's, when it was read

    @property
    def violations(self) -> int:
        return (
            len(self.too_close)
            + sum(d.violation for d in self.duplicates)
            + len(self.disallowed_requested)
            + len(self.robots_first_violations)
        )


def _rounded(gap: float | None) -> float | None:
    return round(gap, 6) if gap is not None else None


def _moment(t: float | None) -> str | None:
    return timestamp(t) if t is not None else None


def many(n: int, one: str, more: str | None = None) -> str:
    """``n`` things, one or more of them: "1 worker", "2 workers", "3 directories"."""
    return f"{n} {one if n == 1 else more or one + 's'}"
