"""``manners watch``'s report shown: a table for people, and the same in JSON for scripts.

The report (:class:`~manners.watch.verdicts.Report`) holds text a client sent (URLs,
selectors, product tokens): every such character reaches the terminal through
:class:`~manners.output.Out`, which escapes it (:func:`manners.terminal.safe`), and JSON through
:func:`manners.terminal.safe_json`.  The JSON speaks the project's one vocabulary (docs/json.md):
moments as RFC 3339 UTC with milliseconds, ``url`` for what was asked, ``line`` for a rule's
line, a robots.txt version named by the moment it came into force (``null``: from the start).

Pure of the command line: what was read and judged is given (:class:`Watched`), nothing is
read or fetched here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from manners.output import Out
from manners.vocabulary import timestamp
from manners.watch.clients import Grouping
from manners.watch.sources import FileRead, Unparsed
from manners.watch.verdicts import Breach, Example, Pacing, Report, RobotVerdict, SlowDown
from manners.watch.versions import Version, shown_when

__all__ = ["CHANGES", "SHOWN_EXAMPLES", "Watched", "as_json", "cells", "change_json", "change_line", "show"]

SHOWN_EXAMPLES = 3  # offending requests shown under each impolite robot, of each kind
#: What ``--follow`` says of a verdict that changed: its name in JSON, its words for people.
CHANGES = {"impolite": "impolite", "charged": "charged more"}


@dataclass(frozen=True)
class Watched:
    """A report and what it was made from: the files read, the versions, the bounds."""

    report: Report
    files: Sequence[FileRead]
    shown: Sequence[Unparsed]  # the first unparseable lines, escaped
    versions: Sequence[Version]
    grouping: Grouping
    since: float | None = None
    until: float | None = None
    notes: Sequence[str] = field(default_factory=tuple)  # the command's own (bounds not applied ...)

    def all_notes(self) -> list[str]:
        """The judge's notes, the command's, then what could not be read, counted."""
        said = [*self.report.notes, *self.notes]
        for f in self.files:
            if f.unparsed:
                overlong = f" ({f.overlong} longer than any log line)" if f.overlong else ""
                said.append(f"{f.path}: {_n(f.unparsed, 'line')} no format reads{overlong}, not judged")
        return said


# -- for people ------------------------------------------------------------------------------


def who(r: RobotVerdict) -> str:
    return f"{r.client} {r.token}" if r.token else r.client


def _n(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _robots_cell(r: RobotVerdict) -> str:
    if not r.robots_fetches:
        return "never"
    said = "first" if r.robots_first else "not first"
    if r.robots_fetches > 1:
        said += f", {r.robots_fetches}x"
    if r.refetched is False:
        said += f", stale ({r.stale})"
    return said


def _broke_cell(r: RobotVerdict) -> str:
    parts = [
        f"line {b.line}: {_n(b.requests, 'request')}"
        + (f" for {b.reading}" if b.reading != "*" else "")
        + (f" (of {b.version})" if b.version != "always" else "")
        for b in r.breaches
        if b.rule == "disallowed"
    ]
    return "; ".join(parts) or "-"


def _pacing_cell(r: RobotVerdict) -> str:
    if not r.pacing:
        return "not judged" if r.first is None else "-"
    several = len(r.pacing) > 1
    parts = []
    for p in r.pacing:
        where = f"{p.host or 'the site'}: " if several else ""
        gap = "one request" if p.shortest is None else f"min {p.shortest:g} s"
        asked = f" of {p.asked:g} s asked" if p.asked else ""
        closer = f", {p.closer} closer" if p.closer else ""
        parts.append(where + gap + asked + closer)
    return "; ".join(parts)


def _slow_cell(r: RobotVerdict) -> str:
    if not r.slow_downs:
        return "-"
    return "; ".join(f"told {s.told}, waited {s.waited}, ignored {s.ignored}" for s in r.slow_downs)


HEADER = [["robot"], ["verdict"], ["requests"], ["robots.txt"], ["disallowed", "requests"], ["roles"],
          ["pacing"], ["slow", "down"]]  # fmt: skip


def cells(r: RobotVerdict) -> list[str]:
    """One robot's row of the table (raw text: the table escapes it)."""
    return [who(r), r.verdict, str(r.requests), _robots_cell(r), _broke_cell(r), r.roles or "-",
            _pacing_cell(r), _slow_cell(r)]  # fmt: skip


def _example(e: Example) -> str:
    return f"      {e.file}:{e.line}  {e.target}"


def _evidence(r: RobotVerdict) -> list[str]:
    """What an impolite robot did, each rule broken with the first requests that broke it."""
    lines = [f"{who(r)} ({r.kind}): impolite, {r.robot_because}"]
    for reason, examples in _reasons(r):
        lines.append(f"  {reason}")
        lines += [_example(e) for e in examples[:SHOWN_EXAMPLES]]
    if r.roles:
        lines.append(f"  roles: {r.roles}")
    lines += [f"  note: {note}" for note in r.notes]
    return lines


def _reasons(r: RobotVerdict) -> list[tuple[str, tuple[Example, ...]]]:
    """Each of the robot's reasons with its examples, in the order the judge gave the reasons."""
    kinds: list[tuple[Example, ...]] = [b.examples for b in r.breaches if b.rule == "disallowed"]
    kinds += [p.examples for p in r.pacing if p.closer]
    kinds += [s.examples for s in r.slow_downs if s.ignored]
    return list(zip(r.reasons, kinds, strict=False))


def show(watched: Watched, out: Out) -> None:
    """The report on a terminal (a table) or as plain lines when piped."""
    report = watched.report
    read = ", ".join(f"{f.path} ({f.format or 'empty'})" for f in watched.files) or "nothing"
    out.line(f"read {read}", "bold")
    versions = ", ".join(f"{v.source} ({shown_when(v.since)})" for v in watched.versions)
    out.line(f"robots.txt: {versions}")
    out.line("")
    if report.robots:
        rows = [cells(r) for r in report.robots]
        marks = [r.verdict == "impolite" for r in report.robots]
        title = f"{_n(len(report.robots), 'robot')}, {len(report.impolite)} impolite (highlighted)"
        gap = out.gap(HEADER, rows)
        if gap is not None:
            out.table(title, HEADER, rows, marks, gap)
        else:  # too narrow for the table: a robot a few lines
            out.line(title)
            for r, row in zip(report.robots, rows, strict=True):
                rude = r.verdict == "impolite"
                out.line(("! " if rude else "  ") + row[0], "bold yellow" if rude else "")
                for head, cell in zip(HEADER[1:], row[1:], strict=True):
                    out.line(f"      {' '.join(head)}: {cell}")
            out.line("")
    else:
        out.line("no robot in the log", "green")
    o = report.others
    others = f"others: {_n(o.clients, 'client')} not judged, {_n(o.requests, 'request')}"
    if o.unattributed:
        others += f"; {_n(o.unattributed, 'request')} logged without a client address"
    out.line(others)
    for r in report.impolite:
        out.line("")
        for n, line in enumerate(_evidence(r)):
            out.line(line, "bold red" if n == 0 else "")
    out.line("")
    out.line("notes:", "dim")
    for note in watched.all_notes():
        out.line(f"  - {note}", "dim")
    if watched.shown:
        out.line("  unparseable lines, the first few (escaped):", "dim")
        for u in watched.shown:
            out.line(f"    {u.file}:{u.line}  {u.text}", "dim")


def change_line(change: str, r: RobotVerdict) -> str:
    """A verdict that changed while following, for people: ``impolite CLIENT (KIND): reasons``
    for a robot newly impolite, ``charged more CLIENT (KIND): reasons`` when its charges grew."""
    return f"{CHANGES[change]} {who(r)} ({r.kind}): {'; '.join(r.reasons)}"


# -- for scripts -----------------------------------------------------------------------------


def _moment(t: float | None) -> str | None:
    return timestamp(t) if t is not None else None


def _examples(examples: tuple[Example, ...]) -> list[dict[str, Any]]:
    return [{"file": e.file, "line": e.line, "url": e.target, "at": _moment(e.when)} for e in examples]


def _breach(b: Breach, since: dict[str, float | None]) -> dict[str, Any]:
    return {"rule": b.rule, "agent": b.reading, "line": b.line, "version": _moment(since.get(b.version)),
            "requests": b.requests, "examples": _examples(b.examples)}  # fmt: skip


def _pacing(p: Pacing) -> dict[str, Any]:
    return {"host": p.host, "asked": p.asked, "shortest": p.shortest, "closer": p.closer,
            "requests": p.requests, "examples": _examples(p.examples)}  # fmt: skip


def _slow(s: SlowDown) -> dict[str, Any]:
    return {"host": s.host, "told": s.told, "waited": s.waited, "ignored": s.ignored, "wait": s.wait,
            "examples": _examples(s.examples)}  # fmt: skip


def _robot(r: RobotVerdict, since: dict[str, float | None]) -> dict[str, Any]:
    return {
        "client": r.client, "token": r.token, "kind": r.kind, "verdict": r.verdict,
        "reasons": list(r.reasons), "robot_because": r.robot_because, "requests": r.requests,
        "first": _moment(r.first), "last": _moment(r.last), "robots_fetches": r.robots_fetches,
        "robots_first": r.robots_first, "refetched": r.refetched, "stale": r.stale, "charged": r.charged,
        "breaches": [_breach(b, since) for b in r.breaches], "kept_roles": list(r.kept_roles),
        "broke_roles": list(r.broke_roles), "roles": r.roles, "pacing": [_pacing(p) for p in r.pacing],
        "slow_downs": [_slow(s) for s in r.slow_downs], "notes": list(r.notes),
    }  # fmt: skip


def _since(watched: Watched) -> dict[str, float | None]:
    return {shown_when(v.since): v.since for v in watched.versions}


def change_json(change: str, r: RobotVerdict, watched: Watched) -> dict[str, Any]:
    """A verdict that changed while following, as one JSON line (docs/json.md, watch change)."""
    return {"change": change, "robot": _robot(r, _since(watched))}


def as_json(watched: Watched) -> dict[str, Any]:
    """The report as the JSON ``manners watch --json`` prints (described in docs/json.md)."""
    report = watched.report
    since = _since(watched)
    o = report.others
    return {
        "logs": [{"path": f.path, "format": f.format, "lines": f.lines, "requests": f.hits, "noise": f.noise,
                  "unparsed": f.unparsed, "overlong": f.overlong} for f in watched.files],
        "unparsed": [{"file": u.file, "line": u.line, "text": u.text} for u in watched.shown],
        "versions": [{"robots": v.source, "since": _moment(v.since)} for v in watched.versions],
        "since": _moment(watched.since),
        "until": _moment(watched.until),
        "group": {"v4": watched.grouping.v4, "v6": watched.grouping.v6},
        "impolite": len(report.impolite),
        "robots": [_robot(r, since) for r in report.robots],
        "others": {"clients": o.clients, "requests": o.requests, "unattributed": o.unattributed},
        "notes": watched.all_notes(),
    }  # fmt: skip
