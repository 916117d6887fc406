"""``manners crawl audit DIR...``: a crawl's manners, proved from the workers' own files.

Every worker writes a ledger, ``requests-WORKER.jsonl``, with a line flushed *before* each
request leaves (robots.txt and caps.txt included), so the ledgers hold every request the
crawl ever sent, even one whose answer never came back because its worker died.  What the
crawler says it settled (``pages*.jsonl``) cannot show that; the ledgers can, and merged by
time across all workers and all DIRs they show what the fleet did to each host together,
which no single worker can see.  From them (the pages files second) this module proves:

- **spacing**: per authority, each request came no sooner after the one before it (by any
  worker) than the spacing in force (the ledger line's ``spacing``: ``--min-delay``,
  Crawl-delay, Request-rate), and never before a pending ``44`` slow-down ended (the ledger's
  ``not_before``, and the wait a ``44`` page in a pages file asked for);
- **each URL once**: every page URL requested twice, and why: in flight (the repeats a fleet
  allows) at a worker's death (its worker never settled it, sent its host nothing more, and was
  silent from the next request on), or after its worker wrote that it lost the lease
  (``lease-lost``) or could not commit the settling (``unsettled``); asked again after a
  temporary failure or a settled error (a retry the crawler is meant to make); a revisit once
  due; or fetched twice (a violation);
- **robots.txt obeyed**: no URL settled as ``disallowed`` was ever requested, and no page of
  an authority was requested before its robots.txt was read: asked for, or a copy taken from
  the shared cache while in force (a ledger robots line with ``source`` ``cache``: no request).

With the crawl's frontier the totals are reconciled too (:mod:`.totals`).  Sans-IO:
:func:`read_lines`, :func:`ledger_entry` and :func:`pages_record` (:mod:`.audit_lines`) turn
bytes into values and :func:`judge` (:mod:`.audit_judging`) turns values into a :class:`Report`
(:mod:`.audit_findings`), all pure; this module only adds reading the files (:func:`audit`),
showing the report (:func:`as_json`, :func:`render_text`) and the command (:func:`run`).  Exit
status: 0 when nothing is wrong, 1 on any violation, 2 for a usage error (a DIR that is not
there, no ledger in it, a malformed line: one sentence naming the file and line).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..terminal import safe, safe_json
from ..vocabulary import timestamp
from . import totals
from .audit_findings import (
    Disallowed,
    Duplicate,
    Host,
    Report,
    RobotsLate,
    TooClose,
    Worker,
    many,
)
from .audit_judging import asked_wait, judge, reconcile
from .audit_lines import (
    TOLERANCE,
    TURN,
    AuditError,
    Copy,
    Event,
    Record,
    Request,
    ledger_entry,
    ledger_line,
    pages_record,
    read_lines,
)
from .frontier_errors import FrontierError
from .records import LEDGERS, PAGES, log_files, series_of

__all__ = [
    "HOSTS_SHOWN",
    "LEDGERS",
    "PAGES",
    "SHOWN",
    "TOLERANCE",
    "TURN",
    "AuditError",
    "Copy",
    "Disallowed",
    "Duplicate",
    "Event",
    "Host",
    "Record",
    "Report",
    "Request",
    "RobotsLate",
    "TooClose",
    "Worker",
    "add_parser",
    "as_json",
    "asked_wait",
    "audit",
    "judge",
    "ledger_entry",
    "ledger_line",
    "main",
    "pages_record",
    "read_lines",
    "reconcile",
    "render_text",
    "run",
]

SHOWN = 50  # violations of one kind listed in the text output; --json lists them all
HOSTS_SHOWN = 20  # hosts listed in the text output, closest to their limit first


# -- the files (the I/O edge) ------------------------------------------------------------------


def audit(dirs: Sequence[Path], frontier: str | None = None, name: str | None = None) -> Report:
    """Read every ledger and pages file in ``dirs`` and judge them together; AuditError (one
    sentence) for a DIR that is not there, one with no ledger, or a damaged line.  With
    ``frontier`` (a ``frontier.sqlite3``, a DIR holding one, or a Redis URL with the crawl's
    ``name``), or when the one DIR given holds a single process's ``frontier.sqlite3``, the
    totals are reconciled with the frontier's counts (``Report.reconciled``)."""
    if not dirs:
        raise AuditError("name the crawl directories to audit: manners crawl audit DIR...")
    requests: list[Request] = []
    copies: list[Copy] = []
    events: list[Event] = []
    records: list[Record] = []
    torn: list[str] = []
    dirs = list(dict.fromkeys(dirs))  # a DIR named twice is read once
    for d in dirs:
        if not d.is_dir():
            raise AuditError(f"{d} is no directory: name a crawl's --out")
        ledgers = _files(d, LEDGERS)
        if not ledgers:
            raise AuditError(
                f"{d} holds no ledger (requests-*.jsonl), so nothing shows what was requested:"
                " audit a crawl made by a manners that keeps one"
            )
        for path in ledgers:
            lines, cut = read_lines(_read(path), str(path))
            for n, obj in lines:
                entry = ledger_entry(obj, f"{path}:{n}", str(d))
                if isinstance(entry, Request):
                    requests.append(entry)
                elif isinstance(entry, Copy):
                    copies.append(entry)
                else:
                    events.append(entry)
            if cut is not None:
                torn.append(f"{path}:{cut}")
        for path in _files(d, PAGES):
            stem, _ = series_of(path)
            owner = stem.removeprefix("pages-") if stem != "pages" else None
            lines, cut = read_lines(_read(path), str(path))
            records += (pages_record(obj, f"{path}:{n}", owner) for n, obj in lines)
            if cut is not None:
                torn.append(f"{path}:{cut}")
    report = judge([str(d) for d in dirs], requests, records, torn, copies, events)
    if frontier is None and len(dirs) == 1 and (dirs[0] / "frontier.sqlite3").is_file():
        frontier = str(dirs[0] / "frontier.sqlite3")
    if frontier is None:
        return report
    try:
        where, counts = totals.read_counts(frontier, name)
    except FrontierError as exc:
        raise AuditError(str(exc)) from None
    return dataclasses.replace(report, reconciled=reconcile(where, counts, requests, records))


def _files(d: Path, patterns: Iterable[str]) -> list[Path]:
    return log_files(d, patterns)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise AuditError(f"cannot read {path}: {exc.strerror or exc}") from None


# -- output ---------------------------------------------------------------------------------------


def as_json(report: Report) -> dict[str, object]:
    """The report as docs/json.md's ``json: manners crawl audit`` block documents it."""
    return {
        "dirs": list(report.dirs),
        "tolerance": TOLERANCE,
        "requests": report.requests,
        "workers": [w.as_json() for w in report.workers],
        "hosts": [h.as_json() for h in report.hosts],
        "too_close": [c.as_json() for c in report.too_close],
        "duplicates": [d.as_json() for d in report.duplicates],
        "disallowed_requested": [d.as_json() for d in report.disallowed_requested],
        "robots_first_violations": [r.as_json() for r in report.robots_first_violations],
        "torn_lines": list(report.torn_lines),
        "robots_cached": report.robots_cached,
        "events": report.events,
        "in_flight": sum(d.in_flight for d in report.duplicates),
        "reconciled": report.reconciled.as_json() if report.reconciled is not None else None,
        "violations": report.violations,
    }


def render_text(report: Report) -> str:
    """A short summary for people: violations first, then repeats that are no violation, the
    hosts closest to their limit, and the verdict.  Every text from a file is made safe."""
    out: list[str] = []

    def listed(items: Sequence[Any], label: str, say: Callable[[Any], str]) -> None:
        out.extend(f"{label}: {safe(say(item))}" for item in items[:SHOWN])
        if len(items) > SHOWN:
            out.append(f"{label}: ... and {len(items) - SHOWN} more (--json lists them all)")

    def request(r: Request) -> str:
        return f"{r.url} by worker {r.worker} at {timestamp(r.t)}"

    def too_close(c: TooClose) -> str:
        if c.earlier is None or c.gap is None:
            return f"{request(c.later)}: {c.why()}"
        return f"{request(c.later)}, {c.gap:.3f} s after {request(c.earlier)}: {c.why()}"

    def late(r: RobotsLate) -> str:
        asked = f"first asked at {timestamp(r.robots_at)}" if r.robots_at is not None else "never asked"
        if r.cached_at is not None:
            asked += f"; a cached copy taken at {timestamp(r.cached_at)} did not cover it"
        before = f"{r.pages_before} page requests before it"
        return f"{r.authority}: {request(r.first)} ({before}; robots.txt {asked})"

    def disallowed(d: Disallowed) -> str:
        rule = f" ({d.record.rule}, {d.record.robots})" if d.record.rule and d.record.robots else ""
        return f"{request(d.request)}, settled as disallowed{rule}"

    def repeated(d: Duplicate) -> str:
        return f"{d.url} ({len(d.requests)} times): {d.why()}"

    repeats = [d for d in report.duplicates if not d.violation]
    in_flight = sum(d.in_flight for d in report.duplicates)
    listed(report.too_close, "VIOLATION too close", too_close)
    listed([d for d in report.duplicates if d.violation], "VIOLATION requested again", repeated)
    listed(report.disallowed_requested, "VIOLATION disallowed yet requested", disallowed)
    listed(report.robots_first_violations, "VIOLATION a page before robots.txt", late)
    listed(repeats, "requested again (no violation)", repeated)
    listed(report.torn_lines, "skipped a torn last line (a crash mid-write)", str)
    closest = sorted(report.hosts, key=_margin)[:HOSTS_SHOWN]
    for h in closest:
        gap = f"smallest gap {h.smallest_gap:.3f} s" if h.smallest_gap is not None else "one request"
        need = f", {h.required_gap:g} s required" if h.required_gap is not None else ""
        verdict = "ok" if h.ok else f"{h.violations} too close"
        out.append(
            f"host {safe(h.authority)}: {many(h.requests, 'request')} by {many(h.workers, 'worker')},"
            f" {gap}{need}: {verdict}"
        )
    if len(report.hosts) > len(closest):
        out.append(f"... and {len(report.hosts) - len(closest)} more hosts, further from their limits")
    if report.reconciled is not None:
        out.extend(safe(line) for line in totals.lines(report.reconciled))
    n = report.violations
    out.append(
        f"{many(report.requests, 'request')} by {many(len(report.workers), 'worker')}"
        f" in {many(len(report.dirs), 'directory', 'directories')} to {many(len(report.hosts), 'host')}: "
        + (many(n, "violation") if n else "no violation")
        + f" ({many(len(report.duplicates), 'URL')} asked more than once, {len(repeats)} of them allowed"
        + (f", {in_flight} of them in flight" if in_flight else "")
        + ")"
        + (
            f"; robots.txt taken from the cache {many(report.robots_cached, 'time')}"
            if report.robots_cached
            else ""
        )
    )
    return "\n".join(out)


def _margin(h: Host) -> float:
    """How far a host's closest pair stayed above what it had to keep (violations first)."""
    if h.violations:
        return -math.inf
    if h.smallest_gap is None or h.required_gap is None:
        return math.inf
    return h.smallest_gap - h.required_gap


# -- the command --------------------------------------------------------------------------------


def add_parser(subparsers: Any) -> None:
    """Register ``audit`` on ``subparsers`` (``manners crawl``'s).  Its ``func`` takes the
    ``(args, out)`` that ``manners.cli.main`` passes and returns :func:`run`'s exit status."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "audit",
        help="prove a crawl's manners from its workers' ledgers: spacing, each URL once, robots.txt obeyed",
        description="Prove a crawl's manners from its workers' own files (requests-*.jsonl, then"
        " pages*.jsonl), merged across every DIR given: per host the smallest gap between two requests"
        " against the one required, every URL requested twice and why, every disallowed URL requested,"
        " every page asked before its robots.txt.  Exit status 1 on a violation.",
    )
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="a crawl's --out (any number)")
    p.add_argument(
        "--frontier",
        metavar="F",
        help="reconcile the totals with the crawl's frontier: DIR/frontier.sqlite3 (or DIR), or a"
        " redis:// URL with --name (default: the one DIR's frontier.sqlite3, if it holds one)",
    )
    p.add_argument("--name", metavar="CRAWL", help="the crawl's name on a Redis frontier")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_command)


def _command(args: argparse.Namespace, _out: object = None) -> int:
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Audit ``args.dirs`` and print the report: 0 when nothing is wrong, 1 on a violation, 2 (one
    sentence on stderr) when the audit cannot be made."""
    try:
        report = audit(args.dirs, getattr(args, "frontier", None), getattr(args, "name", None))
    except AuditError as exc:
        print(f"manners crawl audit: {safe(str(exc))}", file=sys.stderr)
        return 2
    print(safe_json(as_json(report)) if args.json else render_text(report))
    return 1 if report.violations else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m manners.crawl.audit DIR... [--json]``."""
    parser = argparse.ArgumentParser(prog="manners crawl")
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["audit", *(sys.argv[1:] if argv is None else argv)])
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
