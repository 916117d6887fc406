"""How ``manners crawl audit`` judges a crawl: the ledgers' requests and the pages records in, a report out.

Pure: :func:`judge` proves spacing (each request against the spacing in force and any pending
``44``), each URL once (every repeat explained: in flight at a worker's death, a lost lease, a
retry, a revisit once due, or fetched twice) and robots.txt obeyed; :func:`reconcile` holds the
files' totals against the frontier's.  Kept apart from the reading (``audit_lines``) and the
report (``audit``): the rules of a polite crawl read here alone.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ..vocabulary import timestamp
from . import totals, urls
from .audit_findings import (
    Disallowed,
    Duplicate,
    Host,
    Repeat,
    Report,
    RobotsLate,
    TooClose,
    Worker,
)
from .audit_lines import TOLERANCE, Copy, Event, Record, Request
from .crawler import SLOW_DOWN_BASE
from .meaning import seconds
from .totals import Reconciliation


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
