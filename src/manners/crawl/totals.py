"""The whole crawl's totals, as the workers' files give them, against the frontier's counts
(``manners crawl audit --frontier``): a settling the frontier never took, or a request whose
answer was never settled, shows as a difference.  :func:`reconcile` is pure; :func:`read_counts`
reads the frontier (never writing to it), :func:`lines` says it for people."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .frontier import FrontierError, is_shared, open_frontier, shown

STATES = ("pages", "queued", "in_flight", "done")  # counts that are no outcome


@dataclass(frozen=True, slots=True)
class Figure:
    """One total as the workers' files give it and as the frontier counts it."""

    name: str  # an outcome (URLs settled with it), or "pages" (URLs a page was requested for)
    files: int
    frontier: int

    @property
    def agree(self) -> bool:
        return self.files == self.frontier

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "files": self.files, "frontier": self.frontier, "agree": self.agree}


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """The whole crawl's totals, the files' against the frontier's (``--frontier``)."""

    frontier: str  # as named (a Redis URL without its password)
    queued: int
    in_flight: int
    figures: tuple[Figure, ...]
    revisiting: bool  # a revisiting crawl: its outcomes are per visit, only pages are compared

    @property
    def agree(self) -> bool:
        return all(f.agree for f in self.figures)

    def as_json(self) -> dict[str, object]:
        return {
            "frontier": self.frontier,
            "queued": self.queued,
            "in_flight": self.in_flight,
            "figures": [f.as_json() for f in self.figures],
            "agree": self.agree,
        }


def reconcile(
    where: str, counts: dict[str, int], asked: set[str], last: dict[str, str] | None
) -> Reconciliation:
    """The files' totals against the frontier's ``counts`` (``Frontier.counts``): ``asked``, the
    URLs a page was requested for (the ledgers), against its ``pages``; and ``last``, each URL's
    outcome (its last committed record; None for a revisiting crawl, whose outcomes are counted
    per visit) against its outcome counts."""
    figures = [Figure("pages", len(asked), counts.get("pages", 0))]
    if last is not None:
        by_outcome: dict[str, int] = defaultdict(int)
        for outcome in last.values():
            by_outcome[outcome] += 1
        named = {k for k in counts if ":" not in k and k not in STATES}
        for outcome in sorted(named | set(by_outcome)):
            figures.append(Figure(outcome, by_outcome.get(outcome, 0), counts.get(outcome, 0)))
    return Reconciliation(
        where, counts.get("queued", 0), counts.get("in_flight", 0), tuple(figures), last is None
    )


def read_counts(spec: str, name: str | None) -> tuple[str, dict[str, int]]:
    """The frontier as a sentence may name it, and its counts, read; FrontierError (one sentence)
    for a frontier that is not there, or no crawl of that name."""
    if not is_shared(spec):
        path = Path(spec)
        path = path / "frontier.sqlite3" if path.is_dir() else path
        if "://" in spec or not path.is_file():
            raise FrontierError(
                f"{shown(spec)} is no crawl's frontier (a frontier.sqlite3, or a redis:// URL)"
            )
        spec = str(path)
    elif not name:
        raise FrontierError(f"{shown(spec)} holds many crawls: name one with --name CRAWL")

    async def read() -> dict[str, int]:
        opened = open_frontier(spec, None, name if is_shared(spec) else None)
        try:
            if is_shared(spec) and await opened.get_meta("identity") is None:
                raise FrontierError(f"{shown(spec)} holds no crawl named {name!r}")
            return await opened.counts()
        finally:
            await opened.close()

    return shown(spec), asyncio.run(read())


def lines(r: Reconciliation) -> list[str]:
    """The totals' lines: each figure, the files' and the frontier's, and whether all agree (to be
    made safe for a terminal by the caller)."""
    figures = ", ".join(
        f"{f.name} {f.files}" + ("" if f.agree else f" (the frontier says {f.frontier})") for f in r.figures
    )
    unfinished = (
        f"; the crawl is not finished ({r.queued} queued, {r.in_flight} in flight):"
        " totals may differ until then"
        if r.queued or r.in_flight
        else ""
    )
    verdict = "they agree" if r.agree else "THEY DISAGREE"
    lines = [f"totals against the frontier {r.frontier}: {figures}: {verdict}{unfinished}"]
    if r.revisiting:
        lines.append("(a revisiting crawl: outcomes are counted per visit, only pages are compared)")
    return lines
