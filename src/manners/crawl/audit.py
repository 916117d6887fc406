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
:func:`read_lines`, :func:`ledger_entry` and :func:`pages_record` turn bytes into
values and :func:`judge` turns values into a :class:`Report`, all pure; :func:`audit` only
adds reading the files, and :func:`run` printing.  Exit status: 0 when nothing is wrong, 1 on
any violation, 2 for a usage error (a DIR that is not there, no ledger in it, a malformed
line: one sentence naming the file and line).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from ..cache.entry import TTL
from ..terminal import safe, safe_json
from ..vocabulary import timestamp
from . import totals, urls
from .crawler import SLOW_DOWN_BASE
from .frontier import FrontierError
from .meaning import seconds
from .records import log_files, series_of
from .totals import Reconciliation

#: Seconds a gap may fall short of the one required: a ledger line is timed just before its
#: request is written, so clock jitter and timer granularity show up as a few milliseconds.
TOLERANCE = 0.02
#: The files read in each DIR: every worker's ledger, and every pages file (``pages.jsonl`` is
#: a single-process crawl's), with the numbered files each rolled on to (``pages.00001.jsonl``,
#: ``requests-WORKER.00001.jsonl``: ``records.log_files`` reads each series in order).
LEDGERS = ("requests.jsonl", "requests-*.jsonl", "requests.*.jsonl")
PAGES = ("pages.jsonl", "pages-*.jsonl", "pages.*.jsonl")
#: Seconds a page's request may leave after the robots.txt copy it was decided under expired: it
#: waited for its turn at the host in between (the crawler's default --max-delay).
TURN = 300.0
SHOWN = 50  # violations of one kind listed in the text output; --json lists them all
HOSTS_SHOWN = 20  # hosts listed in the text output, closest to their limit first

Repeat = Literal["death", "in-flight", "retry", "revisit", "twice"]  # why a URL was requested again
ALLOWED_IN_FLIGHT: tuple[Repeat, ...] = ("death", "in-flight")  # the repeats a fleet allows
REQUESTS = ("page", "robots", "caps")  # the ledger's kinds of request; other lines are events
SAID = 3  # reasons one repeated URL's text line gives at most (the rest are counted)


class AuditError(Exception):
    """The audit cannot be made: one sentence for the operator (exit status 2)."""


@dataclass(frozen=True, slots=True)
class Request:
    """One ledger line: a request about to leave."""

    t: float  # seconds since the epoch, as the worker's clock had it
    authority: str
    url: str
    kind: str  # page, robots or caps
    worker: str
    spacing: float | None  # seconds required since the host's previous request; None: not said
    not_before: float | None  # a pending slow-down: nothing to the host before this moment
    dir: str
    lease: str | None = None  # the lease's token the request was made under (pages)

    def as_json(self) -> dict[str, object]:
        return {"url": self.url, "kind": self.kind, "worker": self.worker, "at": timestamp(self.t)}


@dataclass(frozen=True, slots=True)
class Copy:
    """A ledger's robots line with ``source`` ``cache``: the worker decided by a robots.txt copy it
    found in the shared cache (fetched by another worker, or an earlier run) and made no request."""

    t: float  # when the worker took it up
    authority: str
    url: str
    worker: str
    fetched_at: float  # when that copy was fetched
    expires_at: float  # when it had to be read again (``fetched_at`` + a day when not said)
    dir: str

    def covers(self, t: float) -> bool:
        """A page requested at ``t`` was decided under this copy, read in time and in force (a page
        is decided before it waits for its turn at the host: up to ``TURN`` seconds later)."""
        taken = self.fetched_at <= self.t + TOLERANCE
        return taken and self.t <= t + TOLERANCE and t <= self.expires_at + TURN


@dataclass(frozen=True, slots=True)
class Event:
    """A ledger line that is no request: ``lease-lost`` (its worker learnt that a lease it held
    was no longer its own and dropped that URL's work), or a kind this audit does not know."""

    t: float
    kind: str
    url: str | None
    worker: str | None
    lease: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class Record:
    """What the audit needs of one pages record (the rest of it is ignored)."""

    url: str
    outcome: str
    at: float  # fetched_at
    worker: str | None  # the record's own, else its file's (pages-WORKER.jsonl); None: unknown
    status: int | None
    reason: str | None
    rule: str | None
    robots: str | None
    line: int | None
    due: float | None = None  # a revisiting crawl's record: when the URL was due again
    revisiting: bool = False  # the record is a revisiting crawl's (it has ``visit``)
    was: str | None = None  # an ``unsettled`` line: the outcome of the line before, not committed
    linked: bool = False  # a link recorded as skipped (it has ``parent``): no URL of the frontier's


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
                first = f"{_many(self.revisits, 'revisit')}, each once due{closest} (the first {due})"
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


# -- reading (pure: bytes in, values out) -----------------------------------------------------


def read_lines(data: bytes, name: str) -> tuple[list[tuple[int, dict[str, Any]]], int | None]:
    """Each line of a JSON Lines file as (line number, object), and the number of a torn last line
    skipped (None: none was).  A line is written with its newline in one flushed write, so a last
    line without one that is no JSON object was cut by a crash mid-write; anywhere else, a line
    that is no JSON object is an AuditError naming ``name`` and the line."""
    lines = data.split(b"\n")
    last = lines.pop()  # b"" when the file ends with a newline
    out = [(n, _object(raw, name, n)) for n, raw in enumerate(lines, 1) if raw.strip()]
    if not last.strip():
        return out, None
    try:
        out.append((len(lines) + 1, _object(last, name, len(lines) + 1)))
    except AuditError:
        return out, len(lines) + 1
    return out, None


def _object(raw: bytes, name: str, n: int) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise AuditError(f"{name}:{n} is no JSON line ({why}): the file is damaged") from None
    if not isinstance(value, dict):
        raise AuditError(f"{name}:{n} is no JSON object: the file is damaged")
    return value


def ledger_line(obj: dict[str, Any], where: str, dir: str) -> Request:
    """A ledger's request line (``where``: "FILE:LINE", for the sentence when it is malformed)."""
    return Request(
        t=_number(obj, "t", where),
        authority=_text(obj, "authority", where),
        url=_text(obj, "url", where),
        kind=_text(obj, "kind", where),
        worker=_text(obj, "worker", where),
        spacing=_number(obj, "spacing", where, null=True),
        not_before=_number(obj, "not_before", where, null=True),
        dir=dir,
        lease=_optional_text(obj, "lease"),
    )


def ledger_entry(obj: dict[str, Any], where: str, dir: str) -> Request | Copy | Event:
    """Any ledger line: a request (page, robots fetched, caps), a robots.txt copy taken from the
    cache (a robots line with ``source`` ``cache``: no request), or an event (``lease-lost``, or a
    kind not known here: no request either)."""
    kind = obj.get("kind")
    if kind == "robots" and obj.get("source") == "cache":
        fetched = _moment_of(obj, "fetched_at", where)
        assert fetched is not None
        expires = _moment_of(obj, "expires_at", where, null=True)
        return Copy(
            t=_number(obj, "t", where),
            authority=_text(obj, "authority", where),
            url=_text(obj, "url", where),
            worker=_text(obj, "worker", where),
            fetched_at=fetched,
            expires_at=expires if expires is not None else fetched + TTL,
            dir=dir,
        )
    if not isinstance(kind, str) or kind in REQUESTS:
        return ledger_line(obj, where, dir)  # a damaged line is named as a request's would be
    return Event(
        t=_number(obj, "t", where),
        kind=kind,
        url=_optional_text(obj, "url"),
        worker=_optional_text(obj, "worker"),
        lease=_optional_text(obj, "lease"),
        reason=_optional_text(obj, "reason"),
    )


def _moment_of(obj: dict[str, Any], key: str, where: str, null: bool = False) -> float | None:
    """An RFC 3339 moment as epoch seconds (a naive one taken as UTC)."""
    if null and obj.get(key) is None:
        return None
    text = _text(obj, key, where)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise AuditError(f"{where}: {key!r} is no RFC 3339 moment: the file is damaged") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def pages_record(obj: dict[str, Any], where: str, worker: str | None) -> Record:
    """A pages record, read tolerantly: keys it does not need are ignored.  ``worker``: the
    worker its file belongs to (``pages-WORKER.jsonl``), used when the record names none.  An
    ``unsettled`` line may have no ``fetched_at``: it is NaN then, and the line before stands in
    (:func:`judge`)."""
    unsettled = obj.get("outcome") == "unsettled"
    moment = _moment_of(obj, "fetched_at", where, null=unsettled)
    own = obj.get("worker")
    status, line = obj.get("status"), obj.get("line")
    due = _optional_text(obj, "due")
    try:
        due_at = datetime.fromisoformat(due).timestamp() if due is not None else None
    except ValueError:
        raise AuditError(f"{where}: 'due' is no RFC 3339 moment: the file is damaged") from None
    return Record(
        url=_text(obj, "url", where),
        outcome=_text(obj, "outcome", where),
        at=moment if moment is not None else math.nan,
        worker=own if isinstance(own, str) else worker,
        status=status if isinstance(status, int) and not isinstance(status, bool) else None,
        reason=_optional_text(obj, "reason"),
        rule=_optional_text(obj, "rule"),
        robots=_optional_text(obj, "robots"),
        line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        due=due_at,
        revisiting="visit" in obj,
        was=_optional_text(obj, "was") if unsettled else None,
        linked="parent" in obj,
    )


def _text(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise AuditError(f"{where}: {_missing(obj, key, 'text')}: the file is damaged")
    return value


def _optional_text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _number(obj: dict[str, Any], key: str, where: str, null: bool = False) -> Any:
    value = obj.get(key)
    if value is None and null:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise AuditError(f"{where}: {_missing(obj, key, 'a number')}: the file is damaged")
    return float(value)


def _missing(obj: dict[str, Any], key: str, kind: str) -> str:
    return f"{key!r} is missing" if key not in obj else f"{key!r} is not {kind}"


# -- judging (pure: values in, a report out) --------------------------------------------------


def judge(
    dirs: Sequence[str],
    requests: Iterable[Request],
    records: Iterable[Record],
    torn: Iterable[str] = (),
    copies: Iterable[Copy] = (),
    events: Iterable[Event] = (),
) -> Report:
    """The audit of these ledger lines and pages records, from whatever workers and DIRs:
    ``copies`` are the ledgers' robots.txt copies taken from the cache, ``events`` their lines
    that are no request (``lease-lost``); ``records`` in each file's order (an ``unsettled`` line
    undoes the line before it for its URL)."""
    ordered = sorted(requests, key=lambda r: r.t)  # stable: a tie keeps the files' order
    records = list(records)
    answered = [r for r in records if r.outcome != "unsettled"]
    kept, unsettled = _committed(records)
    cached: dict[str, list[Copy]] = defaultdict(list)
    for c in sorted(copies, key=lambda c: c.t):
        cached[c.authority].append(c)
    events = sorted(events, key=lambda e: e.t)
    by_host: dict[str, list[Request]] = defaultdict(list)
    for r in ordered:
        by_host[r.authority].append(r)
    slow = _slow_downs(answered)
    hosts: list[Host] = []
    too_close: list[TooClose] = []
    late: list[RobotsLate] = []
    for auth in sorted(by_host):
        host, close = _spacing(auth, by_host[auth], slow.get(auth, []))
        hosts.append(host)
        too_close += close
        robots = _robots_first(auth, by_host[auth], cached.get(auth, []))
        if robots is not None:
            late.append(robots)
    return Report(
        dirs=tuple(dirs),
        workers=_workers(ordered),
        requests=len(ordered),
        hosts=tuple(hosts),
        too_close=tuple(too_close),
        duplicates=_duplicates(ordered, kept, unsettled, events, cached),
        disallowed_requested=_disallowed_requested(ordered, kept, cached),
        robots_first_violations=tuple(late),
        torn_lines=tuple(torn),
        robots_cached=sum(map(len, cached.values())),
        events=len(events),
    )


def reconcile(
    where: str, counts: dict[str, int], requests: Iterable[Request], records: Iterable[Record]
) -> Reconciliation:
    """The files' totals against the frontier's ``counts`` (:func:`totals.reconcile`): the URLs the
    ledgers asked a page of, and, but for a revisiting crawl, the outcome of each URL's last
    committed record (a link recorded as skipped is no URL of the frontier's)."""
    kept, _ = _committed(records)
    asked = {r.url for r in requests if r.kind == "page"}
    if any(r.revisiting for r in kept):
        return totals.reconcile(where, counts, asked, None)
    last: dict[str, str] = {}
    for r in sorted(kept, key=lambda r: r.at):
        if not r.linked:
            last[r.url] = r.outcome
    return totals.reconcile(where, counts, asked, last)


def _committed(records: Iterable[Record]) -> tuple[list[Record], list[Record]]:
    """The records whose settling was committed, and the ``unsettled`` lines.  An unsettled line
    undoes its worker's line before it for the URL (the frontier never took that outcome, and will
    hand the URL out again); one without a time of its own takes that line's."""
    kept: list[Record | None] = []
    unsettled: list[Record] = []
    last: dict[tuple[str, str | None], int] = {}
    for r in records:
        if r.outcome != "unsettled":
            last[(r.url, r.worker)] = len(kept)
            kept.append(r)
            continue
        undone = last.pop((r.url, r.worker), None)
        before = kept[undone] if undone is not None else None
        if undone is not None:
            kept[undone] = None
        if math.isnan(r.at):
            r = dataclasses.replace(r, at=before.at if before is not None else -math.inf)
        unsettled.append(r)
    return [r for r in kept if r is not None], unsettled


def _disallowed_requested(
    ordered: list[Request], records: list[Record], cached: dict[str, list[Copy]]
) -> tuple[Disallowed, ...]:
    """Page requests for a URL settled as disallowed under the robots.txt still in force.

    A URL is settled once, so any request of one settled as disallowed is a violation; but a
    revisiting crawl (its records carry ``visit``) decides a URL again when the copy that
    disallowed it has expired: a request of it is fine once its host's robots.txt has been read
    again since (the new file allowed it: fetched, or a newer copy taken from the cache), as is
    one made before it was disallowed."""
    refused: dict[str, list[Record]] = defaultdict(list)
    for record in sorted(records, key=lambda record: record.at):
        if record.outcome == "disallowed":
            refused[record.url].append(record)
    reread: dict[str, list[float]] = defaultdict(list)
    for r in ordered:
        if r.kind == "robots":
            reread[r.authority].append(r.t)
    for auth, copies in cached.items():
        reread[auth] += (c.t for c in copies)
    found = []
    for r in ordered:
        if r.kind != "page" or r.url not in refused:
            continue
        before = [d for d in refused[r.url] if d.at <= r.t + TOLERANCE]
        if not before:
            if not all(d.revisiting for d in refused[r.url]):
                found.append(Disallowed(r, refused[r.url][0]))
            continue
        last = before[-1]
        if last.revisiting and any(last.at < t < r.t for t in reread[r.authority]):
            continue
        found.append(Disallowed(r, last))
    return tuple(found)


def _workers(ordered: list[Request]) -> tuple[Worker, ...]:
    seen: dict[str, list[Request]] = defaultdict(list)
    for r in ordered:
        seen[r.worker].append(r)
    return tuple(Worker(w, rs[0].dir, len(rs), rs[0].t, rs[-1].t) for w, rs in seen.items())


def _slow_downs(records: list[Record]) -> dict[str, list[tuple[float, float]]]:
    """By authority: (when, until) for each 44 a pages file records, in time order.  The wait is
    the seconds the server's meta named; a meta that is no number holds the host for
    SLOW_DOWN_BASE seconds at least (the crawler doubles from there)."""
    found: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in records:
        if r.status != 44:
            continue
        try:
            auth = urls.authority(r.url)
        except ValueError:
            continue
        found[auth].append((r.at, r.at + asked_wait(r.reason)))
    return {auth: sorted(waits) for auth, waits in found.items()}


_WAIT = re.compile(r"\s*44\b[^\d(]*(\d+(?:\.\d+)?)")


def asked_wait(reason: str | None) -> float:
    """The seconds a 44 asked for, from its record's reason ("44 5 (still, after 3 attempts)")."""
    m = _WAIT.match(reason or "")
    wait = seconds(m[1]) if m else None
    return wait if wait is not None else SLOW_DOWN_BASE


def _spacing(
    auth: str, requests: list[Request], slow: list[tuple[float, float]]
) -> tuple[Host, list[TooClose]]:
    """One authority's requests, in time order, against the gap each had to keep after the one
    before: its ``spacing``, and any slow-down pending (a ledger ``not_before`` or a recorded 44)."""
    close: list[TooClose] = []
    smallest: tuple[float, float | None] | None = None  # (gap, required)
    pending = -math.inf  # the latest slow-down known, as of each request
    waits = iter(slow)
    wait = next(waits, None)
    earlier: Request | None = None
    for later in requests:
        while wait is not None and wait[0] <= later.t:
            pending = max(pending, wait[1])
            wait = next(waits, None)
        if later.not_before is not None:
            pending = max(pending, later.not_before)
        since = earlier.t if earlier is not None else -math.inf
        needs = [n for n in (later.spacing, pending - since if pending > since else None) if n is not None]
        required = max(needs) if needs else None
        broke = pending if later.t < pending - TOLERANCE else None
        if earlier is None:
            if broke is not None:
                close.append(TooClose(auth, None, later, None, broke))
        else:
            gap = later.t - earlier.t
            if smallest is None or gap < smallest[0]:
                smallest = (gap, required)
            if broke is not None or (required is not None and gap < required - TOLERANCE):
                close.append(TooClose(auth, earlier, later, required, broke))
        earlier = later
    host = Host(
        auth,
        len(requests),
        len({r.worker for r in requests}),
        smallest[0] if smallest else None,
        smallest[1] if smallest else None,
        len(close),
    )
    return host, close


def _robots_first(auth: str, requests: list[Request], copies: list[Copy]) -> RobotsLate | None:
    """robots.txt must be read before any page of its authority (RFC 9309 §2.3): asked for, or
    a copy taken from the cache that had been fetched before and was still in force (not past
    its expiry) when the page was asked for: no request, and as good as one."""
    robots_at = next((r.t for r in requests if r.kind == "robots"), None)
    early = [
        r
        for r in requests
        if r.kind == "page"
        and (robots_at is None or r.t < robots_at)
        and not any(c.covers(r.t) for c in copies)
    ]
    cached_at = copies[0].t if copies else None
    return RobotsLate(auth, early[0], len(early), robots_at, cached_at) if early else None


def _duplicates(
    ordered: list[Request],
    records: list[Record],
    unsettled: list[Record],
    events: list[Event],
    cached: dict[str, list[Copy]],
) -> tuple[Duplicate, ...]:
    """Every page URL requested more than once, each repeat explained (see :func:`_repeat`)."""
    pages: dict[str, list[Request]] = defaultdict(list)
    settled: dict[str, list[Record]] = defaultdict(list)
    undone: dict[str, list[_Undone]] = defaultdict(list)
    alive = _Alive()
    for r in ordered:
        if r.kind == "page":
            pages[r.url].append(r)
        alive.saw(r.worker, r.t)
        alive.saw((r.worker, r.authority), r.t)
    for rec in records:
        settled[rec.url].append(rec)
        if rec.worker is not None:
            alive.saw(rec.worker, rec.at)
    for rec in unsettled:
        words = (
            f"its settling ({rec.was or 'an outcome'}) was not committed: {rec.reason or 'no reason given'}"
        )
        undone[rec.url].append(_Undone(rec.at, rec.worker, None, words))
    for e in events:
        if e.worker is not None:
            alive.saw(e.worker, e.t)
        if e.kind == "lease-lost" and e.url is not None:
            words = f"it lost its lease ({e.reason or 'no reason given'})"
            undone[e.url].append(_Undone(e.t, e.worker, e.lease, words))
    for copies in cached.values():
        for c in copies:
            alive.saw(c.worker, c.t)
    found = []
    for url, asked in pages.items():
        if len(asked) < 2:
            continue
        repeats = tuple(_repeat(asked, i, settled[url], alive, undone[url]) for i in range(len(asked) - 1))
        margins = tuple(
            asked[i + 1].t - due for i, (kind, _) in enumerate(repeats) if kind == "revisit"
            for due in [_due(asked[i], settled[url])] if due is not None
        )  # fmt: skip
        found.append(Duplicate(url, tuple(asked), repeats, margins))
    return tuple(found)


def _due(a: Request, records: list[Record]) -> float | None:
    """When the record that answered ``a`` made its URL due again (a revisiting crawl's)."""
    answer = next((r for r in records if r.at >= a.t - TOLERANCE and r.worker in (a.worker, None)), None)
    return answer.due if answer is not None else None


class _Undone(NamedTuple):
    """A worker's word that a request of its was left in flight: an ``unsettled`` pages line (its
    settling was not committed) or a ``lease-lost`` ledger line (``lease``: the lease it lost)."""

    at: float
    worker: str | None
    lease: str | None
    words: str


class _Alive(dict[str | tuple[str, str], float]):
    """The last sign of life of each worker (a request sent or a page settled), and of each
    worker with each authority (a request sent to it)."""

    def saw(self, who: str | tuple[str, str], t: float) -> None:
        if t > self.get(who, -math.inf):
            self[who] = t


def _repeat(
    asked: list[Request],
    i: int,
    records: list[Record],
    alive: _Alive,
    undone: Sequence[_Undone] = (),
) -> tuple[Repeat, str]:
    """Why the URL's request ``i`` (``a``) was followed by another (``b``).

    In flight, allowed: ``a``'s worker wrote, after ``a`` and before it asked for the URL again,
    that its settling was not committed (an ``unsettled`` line: the frontier hands the URL out
    again) or that it lost the lease (a ``lease-lost`` line: it dropped the work, and the URL
    went back to the queue).  Else ``a`` was answered when its worker settled the URL after
    sending it and before asking for it again (a record that names no worker counts when it
    came before ``b``), or went on to send the authority another request: a worker sends one
    request at a time to an authority, so ``a`` had come back.  Unanswered, with its worker
    silent from ``b`` on and ``b`` another worker's: in flight at that worker's death, the one
    repeat a fleet allows.  Answered and not settled (a temporary failure is retried without a
    record), or settled as an error or a 40-49 before ``b``: a retry the crawler is meant to
    make.  Settled otherwise: fetched twice, a violation.
    """
    a, b = asked[i], asked[i + 1]
    again = next((r.t for r in asked[i + 1 :] if r.worker == a.worker), math.inf)
    for u in undone:
        mine = u.worker in (a.worker, None) and (u.lease is None or a.lease is None or u.lease == a.lease)
        if mine and a.t - TOLERANCE <= u.at < again:
            return "in-flight", f"in flight: worker {a.worker} asked for it, then {u.words}"
    answer = next(
        (
            r
            for r in records
            if r.at >= a.t - TOLERANCE
            and (r.at < again if r.worker == a.worker else r.worker is None and r.at < b.t)
        ),
        None,
    )
    if answer is None:
        went_on = alive.get((a.worker, a.authority), a.t) > a.t
        if not went_on and b.worker != a.worker and alive.get(a.worker, a.t) < b.t:
            return "death", f"in flight at the death of worker {a.worker}"
        return "retry", f"asked again by worker {b.worker}: no answer was settled (a temporary failure)"
    temporary = answer.status is not None and 40 <= answer.status <= 49
    if answer.revisiting and answer.due is not None:  # --revisit: asked again once due, not before
        if b.t >= answer.due - TOLERANCE:
            return "revisit", f"a revisit, due {timestamp(answer.due)}"
        return "twice", f"revisited {answer.due - b.t:.2f} s before it was due ({timestamp(answer.due)})"
    if (answer.outcome == "error" or temporary) and answer.at <= b.t + TOLERANCE:
        return "retry", f"asked again by worker {b.worker} after {answer.reason or answer.outcome}"
    return "twice", (
        f"fetched twice: worker {a.worker} settled it ({answer.outcome}) and worker {b.worker} asked again"
    )


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
    """The report as the README's ``json: manners crawl audit`` block documents it."""
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
            f"host {safe(h.authority)}: {_many(h.requests, 'request')} by {_many(h.workers, 'worker')},"
            f" {gap}{need}: {verdict}"
        )
    if len(report.hosts) > len(closest):
        out.append(f"... and {len(report.hosts) - len(closest)} more hosts, further from their limits")
    if report.reconciled is not None:
        out.extend(safe(line) for line in totals.lines(report.reconciled))
    n = report.violations
    out.append(
        f"{_many(report.requests, 'request')} by {_many(len(report.workers), 'worker')}"
        f" in {_many(len(report.dirs), 'directory', 'directories')} to {_many(len(report.hosts), 'host')}: "
        + (_many(n, "violation") if n else "no violation")
        + f" ({_many(len(report.duplicates), 'URL')} asked more than once, {len(repeats)} of them allowed"
        + (f", {in_flight} of them in flight" if in_flight else "")
        + ")"
        + (
            f"; robots.txt taken from the cache {_many(report.robots_cached, 'time')}"
            if report.robots_cached
            else ""
        )
    )
    return "\n".join(out)


def _many(n: int, one: str, more: str | None = None) -> str:
    return f"{n} {one if n == 1 else more or one + 's'}"


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
