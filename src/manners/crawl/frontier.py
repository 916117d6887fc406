"""The crawl frontier: every URL once, with its state, kept on disk.

A URL is ``queued``, ``in_flight`` (leased to an owner until an expiry) or ``done`` with an
outcome.  The crawler only speaks the ``Frontier`` protocol (add, lease, done, retry, recover,
park...), so a fleet version on Redis can replace ``SQLiteFrontier`` without touching it.

A fleet adds what several processes need to share one crawl: leases renewed while their fetches
run (``renew``) and taken back from a dead worker once expired (``reclaim``), request slots
booked per authority (``book``/``claim``, so one host is spaced fleet-wide, not per process),
and heartbeats (``heartbeat``/``workers``) for ``manners crawl status``.  ``open_frontier``
picks the implementation: a path is ``SQLiteFrontier`` (one process; these calls work there
too, so the crawler has one code path), a ``redis://`` URL the fleet's ``RedisFrontier``.

``SQLiteFrontier`` keeps everything in one WAL-mode file.  Each state change is atomic, so a
process killed at any instant (SIGKILL included) leaves the file as it was before or after that
change, never in between; ``recover()`` at start-up then returns what was in flight to the
queue.  The calls are plain synchronous sqlite3 calls made in the event loop's thread (a hop to
an executor thread would cost as much as the work, plus a connection shared between threads).
The commit is four fifths of a small change's cost, so changes asked for in the same turn of
the event loop share one ``BEGIN IMMEDIATE`` transaction (group commit): each caller resumes
only once its change is committed, so what it does next (the next lease, say) still follows a
durable state.  The only wait, for another process's write lock, happens in asyncio as in the
SQLite cache.

Hot paths are indexed: a partial index over queued URLs by (authority, not_before, id) makes
leasing O(log n), and a per-authority row carrying its queue length, the earliest time one of
its URLs is ready (``eligible_at``, parks included) and when it was last leased makes
``ready_authorities`` a walk over an index in least-recently-leased order.  Nothing of the URL
set is kept in Python, so memory stays bounded whatever the crawl's size.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
import secrets
import sqlite3
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from ..cache import Held, LeaseLost
from ..cache.sqlite import SLOTS_SCHEMA, begin_immediate, book_slot, claim_slot, connect, run_transaction
from .urls import authority

T = TypeVar("T")
log = logging.getLogger("manners.crawl")

QUEUED = "queued"
IN_FLIGHT = "in_flight"
DONE = "done"
PAGES = "pages"  # in ``outcomes``: URLs for which a page was requested (robots.txt and caps.txt not)
SHARED_SCHEMES = ("redis://", "rediss://", "redis-cluster://", "rediss-cluster://")  # a fleet's frontier
WORKERS_KEPT = 86400.0  # seconds a silent worker's last heartbeat is kept (SQLite)


@dataclass(frozen=True)
class Lease:
    url: str
    depth: int
    attempts: int
    parent: str | None
    redirects: int
    # One lease's own id, new each time the URL is leased: the ledger names it, so a request made
    # under an expired lease and the same URL's next lease tell apart.  Not part of equality.
    token: str = field(default="", compare=False)
    # A revisiting crawl's memory of the URL (``Visit``): times settled so far (0: never), the
    # interval that led to this visit, the payload digest and capture time of the last response
    # kept in full, and "gone" answers in a row.
    visits: int = 0
    interval: float | None = None
    digest: str | None = None
    capture_at: float | None = None
    misses: int = 0


@dataclass(frozen=True)
class Visit:
    """How a revisiting crawl settles a leased URL: back in the queue, due at ``due``, or for good.

    Given to ``Frontier.done`` so that the settling and the re-queueing are one atomic step: a
    kill cannot leave a URL settled and never due again, nor due twice."""

    number: int  # times the URL has been settled, this one included (1: its first visit)
    due: float | None  # when it may be leased again (epoch seconds); None: settled for good
    interval: float | None = None  # the interval that gave ``due`` (doubled while unchanged)
    digest: str | None = None  # the payload digest of the last response (``warc.digest``)
    capture_at: float | None = None  # when the response kept in full with that payload was fetched
    misses: int = 0  # "gone" answers in a row (51, a Gopher error for a selector that was there)
    changed: bool | None = None  # None: no response to compare (disallowed, an error)
    token: str = ""  # the lease settled (``Lease.token``): a fleet settles only the lease it names


@dataclass(frozen=True)
class Revisits:
    """What a revisiting crawl has coming: URLs visited before and due now, and the next due time."""

    due_now: int
    next_due: float | None


class Frontier(Protocol):
    """The crawl's queue and memory: what the crawler may use, and all a fleet must implement."""

    def add(self, url: str, depth: int, parent: str | None = None, redirects: int = 0) -> Awaitable[bool]:
        """Queue ``url`` (already normalised); False when it is already known, in any state."""
        ...

    def add_many(
        self, urls: Iterable[str], depth: int, parent: str | None = None, redirects: int = 0
    ) -> Awaitable[list[str]]:
        """Queue several URLs in one transaction; return those that were new."""
        ...

    def lease(self, authority: str, owner: str, ttl: float) -> Awaitable[Lease | None]:
        """Move the next ready queued URL of ``authority`` to in flight, held by ``owner`` for ``ttl`` s.

        Asked for when called (``add``, ``add_many``, ``lease`` and ``done`` are plain functions
        returning an awaitable): a page settled and the next lease asked for before either is
        awaited are applied in that order, and may share one commit."""
        ...

    async def ready_authorities(self, now: float, exclude: Collection[str], limit: int) -> list[str]:
        """Authorities with a URL ready at ``now``, not parked, not in ``exclude``.

        Least recently leased first, so every authority gets its turn."""
        ...

    async def next_ready_at(self, exclude: Collection[str] = ()) -> float | None:
        """When the next authority outside ``exclude`` gets ready: its earliest not_before or park end.

        None when nothing is queued: the crawler sleeps until then, or until a busy one is free."""
        ...

    def done(
        self,
        url: str,
        outcome: str,
        links: Iterable[str] = (),
        *,
        depth: int = 0,
        redirects: int = 0,
        page: bool = False,
        visit: Visit | None = None,
        token: str = "",
        repeat: bool = False,
    ) -> Awaitable[int]:
        """Settle ``url`` (in flight or queued) with ``outcome``, queueing ``links`` in the same transaction.

        ``token`` (or ``visit.token``): the lease settled.  The settling is fenced: made only while
        that lease is held, else nothing changes (not even the links) and LeaseLost is raised.
        ``repeat``: the call before may have been applied (its reply was lost), so a URL no longer
        in flight may be its own settling, and is taken as such.

        ``links`` are queued at ``depth`` with ``url`` as parent and ``redirects``: a kill can never
        fall between a page being settled and its links being known.  ``page``: a page was
        requested for it (counted under ``pages``, for --max-pages).  Returns how many of the
        links were new.

        ``visit`` (a revisiting crawl): the URL must be in flight; with ``visit.due`` it goes back
        to the queue, due then, with the visit's memory, in the same step; counted under
        ``visit:N`` and ``changed:N`` when a response was compared.  A settle of a URL no longer
        in flight (a repeat whose first reply was lost) changes nothing but the links.
        """
        ...

    async def retry(
        self, url: str, not_before: float, attempt: bool = True, *, token: str = "", repeat: bool = False
    ) -> None:
        """Return an in-flight ``url`` to the queue, not to be leased before ``not_before``.

        ``attempt``: the URL was tried (attempts + 1); False when it waits for its host (robots.txt).
        ``token``: the lease it is under; LeaseLost, nothing changed, when that lease is not held.
        """
        ...

    async def requeue(self, outcome: str) -> int:
        """Queue again every URL settled with ``outcome`` (``--retry-errors``); returns how many."""
        ...

    async def revisit_settled(self, due: float) -> int:
        """Queue again, due at ``due``, every URL settled ``fetched`` or ``redirect`` for good: a
        crawl made without --revisit resumed with it.  Their payloads are unknown, so their next
        visit counts as changed.  Returns how many."""
        ...

    async def revisits(self, now: float) -> Revisits:
        """URLs visited before and queued again: how many are due at ``now``, when the next is."""
        ...

    async def recover(self, owner: str | None = None) -> int:
        """Return leases to the queue: all of them (owner None), else ``owner``'s and every expired one."""
        ...

    def renew(self, urls: Collection[str], owner: str, ttl: float) -> Awaitable[list[str]]:
        """Extend ``owner``'s leases on ``urls`` to ``ttl`` seconds from now (others' are left alone);
        returns the URLs whose lease is no longer held (it expired and was taken back).  ``urls``
        may map each URL to its lease's token, so that only that very lease is extended.

        A worker renews what it holds while the fetches run, so only the leases of a worker that
        died or hung expire."""
        ...

    def reclaim(self) -> Awaitable[int]:
        """Return every expired lease, whoever held it, to the queue (one attempt more); how many.

        Any live worker calls it now and then: a dead worker's URLs come back without it."""
        ...

    def book(self, authority: str, spacing: float, wait: float = 0.0) -> Awaitable[float]:
        """Book the next request slot of ``authority``; how many seconds from now it starts.

        The cache Store's ``book``: the slot is the later of now, ``wait`` seconds from now and
        the end of the last slot booked; the one after it starts ``spacing`` later.  Kept with
        the crawl, so every worker of a fleet books from the same slots."""
        ...

    def claim(self, authority: str, spacing: float, held: Held | None = None) -> Awaitable[float]:
        """Start a request to ``authority`` now if the last one started ``spacing`` ago or more.

        The cache Store's ``claim``: 0 when claimed, else the seconds still to wait.  ``held``:
        (URL, lease token, lease seconds) of the lease the request is made under, checked in the
        same atomic step: -1 when it is no longer held (nothing claimed), else it is extended."""
        ...

    def heartbeat(self, worker: str, info: dict[str, object]) -> Awaitable[None]:
        """Record that ``worker`` is alive now, with ``info`` (JSON-able: host, pid, pages...)."""
        ...

    def workers(self) -> Awaitable[dict[str, dict[str, object]]]:
        """Each worker's last heartbeat: ``last_seen`` (epoch seconds) and what it said."""
        ...

    def oldest_lease(self) -> Awaitable[dict[str, object] | None]:
        """The lease expiring first: ``url``, ``owner`` and ``expires_in`` (seconds; negative when
        overdue); None when nothing is in flight."""
        ...

    def held(self) -> Awaitable[dict[str, int]]:
        """Leases held now, by owner (``manners crawl status``: a dead worker's last heartbeat
        says what it had in flight then; this, what it still holds until they are reclaimed)."""
        ...

    async def park(self, authority: str, until: float, reason: str) -> None:
        """Lease nothing of ``authority`` before ``until`` (a 44, or a wait beyond --max-delay)."""
        ...

    async def parked(self) -> dict[str, tuple[float, str]]:
        """Authorities parked now: until when, and why."""
        ...

    async def counts(self) -> dict[str, int]:
        """URLs per state (queued, in_flight, done) and settled URLs per outcome."""
        ...

    async def host_done(self, authority: str) -> int:
        """URLs of ``authority`` settled so far, those queued again for a revisit included
        (for --max-per-host)."""
        ...

    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...

    def known_hosts(self) -> MutableMapping[str, str]:
        """Gemini certificate fingerprints by ``host:port`` (trust on first use), kept with the frontier."""
        ...

    async def close(self) -> None: ...

    @property
    def dropped(self) -> int:
        """URLs this process did not queue because their authority's queue was full."""
        ...

    async def cap_due(self, latest: float) -> int:
        """Bring every revisit due after ``latest`` forward to ``latest``; how many moved.

        A revisiting crawl calls it with now + --revisit-max: a due time beyond that came from a
        clock that ran ahead (a worker's, or this machine's before it was set back) or from a
        crawl resumed with a smaller --revisit-max, and would leave its page unwatched for longer
        than the crawl allows."""
        ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    authority TEXT NOT NULL,
    state TEXT NOT NULL,
    depth INTEGER NOT NULL,
    parent TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    redirects INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    owner TEXT,
    lease_until REAL,
    outcome TEXT,
    settled_at REAL
);
CREATE INDEX IF NOT EXISTS urls_queue ON urls (authority, not_before, id) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS urls_leases ON urls (lease_until) WHERE state = 'in_flight';
CREATE TABLE IF NOT EXISTS authorities (
    authority TEXT PRIMARY KEY,
    queued INTEGER NOT NULL DEFAULT 0,
    in_flight INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    parked_until REAL NOT NULL DEFAULT 0,
    park_reason TEXT,
    eligible_at REAL,
    last_leased REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS authorities_turn ON authorities (last_leased) WHERE eligible_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS authorities_eligible ON authorities (eligible_at) WHERE eligible_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS authorities_parked ON authorities (parked_until) WHERE parked_until > 0;
CREATE TABLE IF NOT EXISTS outcomes (outcome TEXT PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS fingerprints (
    host TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, first_seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS workers (
    worker TEXT PRIMARY KEY, last_seen REAL NOT NULL, info TEXT NOT NULL
) WITHOUT ROWID;
"""


# Columns added since the first release, with their declarations: every file gains them when it is
# opened (``_migrate``), a new one as one an older manners made; ``user_version`` then says it is done.
_ADDED = {
    "urls": ("visits INTEGER NOT NULL DEFAULT 0", "interval REAL", "digest TEXT", "capture_at REAL",
             "misses INTEGER NOT NULL DEFAULT 0", "token TEXT"),
    "authorities": ("kept INTEGER NOT NULL DEFAULT 0",),
}  # fmt: skip
SCHEMA_VERSION = 2  # 2: urls.token, the lease's token (fencing)
# Revisits waiting for their due time, for ``revisits`` (status): new URLs have visits = 0.
_DUE_INDEX = "CREATE INDEX IF NOT EXISTS urls_due ON urls (not_before) WHERE state = 'queued' AND visits > 0"

_Change = tuple[Callable[[sqlite3.Connection], Any], "asyncio.Future[Any]"]  # a change and its caller


class FrontierError(Exception):
    """The frontier cannot be used.  ``lasting``: calling again will not mend it (Redis refused
    this user a command, or its password), so a fleet's worker stops at once instead of waiting
    it out as it waits out an outage."""

    def __init__(self, message: str, *, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting


class CrawlLost(FrontierError):
    """The crawl's data is gone from its frontier (a Redis restarted without it, keys evicted):
    waiting cannot bring it back, so the worker stops, and never says the crawl is done."""


class SQLiteFrontier:
    """The ``Frontier`` in one SQLite file (see the module docstring for why it is built so)."""

    def __init__(
        self,
        path: Path,
        busy_timeout: float = 10.0,
        authority_of: Callable[[str], str] = authority,
        max_queued: int | None = None,
    ) -> None:
        self.path = path
        self.max_queued = max_queued  # URLs queued for one authority at most; more are dropped
        self.dropped = 0  # URLs not queued because their authority's queue was full
        self._busy_timeout = busy_timeout
        self._authority_of = authority_of
        self._turn = 0.0  # last lease's time, kept strictly increasing so turns never tie
        self._pending: list[_Change] = []
        self._committer: asyncio.Task[None] | None = None
        try:
            self._db = connect(path, busy_timeout, _SCHEMA + SLOTS_SCHEMA)
            if self._db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                self._write_now(_migrate)
        except (OSError, sqlite3.Error) as exc:
            raise FrontierError(f"cannot open the frontier {path}: {exc}") from None

    # -- adding and settling ------------------------------------------------------------------

    def add(self, url: str, depth: int, parent: str | None = None, redirects: int = 0) -> Awaitable[bool]:
        return self._write(lambda db: bool(self._add(db, (url,), depth, parent, redirects)))

    def add_many(
        self, urls: Iterable[str], depth: int, parent: str | None = None, redirects: int = 0
    ) -> Awaitable[list[str]]:
        todo = list(urls)
        return self._write(lambda db: self._add(db, todo, depth, parent, redirects))

    def lease(self, authority: str, owner: str, ttl: float) -> Awaitable[Lease | None]:
        def take(db: sqlite3.Connection) -> Lease | None:
            now = time.time()
            turn = db.execute(
                "SELECT eligible_at FROM authorities WHERE authority = ?", (authority,)
            ).fetchone()
            if turn is None or turn[0] is None or turn[0] > now:
                return None  # nothing queued, or nothing ready yet, or parked
            row = db.execute(
                "SELECT id, url, depth, attempts, parent, redirects, visits, interval, digest, capture_at,"
                " misses FROM urls WHERE authority = ? AND state = 'queued' AND not_before <= ?"
                " ORDER BY not_before, id LIMIT 1",
                (authority, now),
            ).fetchone()
            if row is None:
                return None
            token = secrets.token_hex(8)
            db.execute(
                "UPDATE urls SET state = 'in_flight', owner = ?, lease_until = ?, token = ? WHERE id = ?",
                (owner, now + ttl, token, row[0]),
            )
            self._turn = max(now, self._turn + 1e-6)
            db.execute(
                f"UPDATE authorities SET queued = queued - 1, in_flight = in_flight + 1, last_leased = ?,"
                f" eligible_at = {_ELIGIBLE} WHERE authority = ?",
                (self._turn, authority),
            )
            return Lease(row[1], row[2], row[3], row[4], row[5], token, *row[6:])

        return self._write(take)

    def done(
        self,
        url: str,
        outcome: str,
        links: Iterable[str] = (),
        *,
        depth: int = 0,
        redirects: int = 0,
        page: bool = False,
        visit: Visit | None = None,
        token: str = "",
        repeat: bool = False,
    ) -> Awaitable[int]:
        todo = list(links)
        token = token or (visit.token if visit is not None else "")

        def settle(db: sqlite3.Connection) -> int:
            row = db.execute(
                "SELECT state, authority, visits, token FROM urls WHERE url = ?", (url,)
            ).fetchone()
            if token and (row is None or row[0] != IN_FLIGHT or row[3] != token):
                if repeat and row is not None and row[0] != IN_FLIGHT:
                    return 0  # its own settling, whose reply was lost
                raise LeaseLost(f"the lease on {url} is no longer held: its settling was refused")
            if visit is not None:
                if row is not None and row[0] == IN_FLIGHT and row[2] < visit.number:  # else a repeat
                    _settle_visit(db, url, row[1], first=row[2] == 0, outcome=outcome, page=page, visit=visit)
            elif row is not None and row[0] != DONE:
                db.execute(
                    "UPDATE urls SET state = 'done', outcome = ?, owner = NULL, lease_until = NULL,"
                    " token = NULL, settled_at = ? WHERE url = ?",
                    (outcome, time.time(), url),
                )
                if row[0] == QUEUED:
                    change = f"queued = queued - 1, eligible_at = {_ELIGIBLE}"
                else:
                    change = "in_flight = in_flight - 1"
                db.execute(f"UPDATE authorities SET {change}, done = done + 1 WHERE authority = ?", (row[1],))
                _count(db, [outcome, PAGES] if page else [outcome])
            return len(self._add(db, todo, depth, url, redirects)) if todo else 0

        return self._write(settle)

    async def retry(
        self, url: str, not_before: float, attempt: bool = True, *, token: str = "", repeat: bool = False
    ) -> None:
        def again(db: sqlite3.Connection) -> None:
            row = db.execute("SELECT state, authority, token FROM urls WHERE url = ?", (url,)).fetchone()
            if token and (row is None or row[0] != IN_FLIGHT or row[2] != token):
                if repeat and row is not None and row[0] == QUEUED:
                    return
                raise LeaseLost(f"the lease on {url} is no longer held: its retry was refused")
            if row is None or row[0] != IN_FLIGHT:
                return
            db.execute(
                "UPDATE urls SET state = 'queued', attempts = attempts + ?, not_before = ?,"
                " owner = NULL, lease_until = NULL, token = NULL WHERE url = ?",
                (int(attempt), not_before, url),
            )
            db.execute(
                f"UPDATE authorities SET queued = queued + 1, in_flight = in_flight - 1,"
                f" eligible_at = {_ELIGIBLE} WHERE authority = ?",
                (row[1],),
            )

        await self._write(again)

    async def recover(self, owner: str | None = None) -> int:
        if owner is None:
            return await self._write(lambda db: _unlease(db, "state = 'in_flight'", (), attempt=False))
        return await self._write(
            lambda db: _unlease(
                db,
                "state = 'in_flight' AND (owner = ? OR lease_until <= ?)",
                (owner, time.time()),
                attempt=False,
            )
        )

    def reclaim(self) -> Awaitable[int]:
        return self._write(
            lambda db: _unlease(db, "state = 'in_flight' AND lease_until <= ?", (time.time(),), attempt=True)
        )

    def renew(self, urls: Collection[str], owner: str, ttl: float) -> Awaitable[list[str]]:
        tokens = dict(urls) if isinstance(urls, Mapping) else dict.fromkeys(urls, "")

        def extend(db: sqlite3.Connection) -> list[str]:
            until, gone = time.time() + ttl, []
            for url, token in tokens.items():
                changed = db.execute(
                    "UPDATE urls SET lease_until = ? WHERE url = ? AND state = 'in_flight' AND owner = ?"
                    " AND (? = '' OR token = ?)",
                    (until, url, owner, token, token),
                ).rowcount
                if not changed:
                    gone.append(url)
            return gone

        return self._write(extend)

    async def requeue(self, outcome: str) -> int:
        def again(db: sqlite3.Connection) -> int:
            per_authority = db.execute(
                "SELECT authority, count(*) FROM urls WHERE state = 'done' AND outcome = ?"
                " GROUP BY authority",
                (outcome,),
            ).fetchall()
            db.execute(
                "UPDATE urls SET state = 'queued', outcome = NULL, attempts = 0, not_before = 0,"
                " settled_at = NULL WHERE state = 'done' AND outcome = ?",
                (outcome,),
            )
            total = sum(int(n) for _, n in per_authority)
            for name, n in per_authority:
                db.execute(
                    "UPDATE authorities SET queued = queued + ?, done = done - ?, parked_until = 0,"
                    " park_reason = NULL WHERE authority = ?",
                    (n, n, name),
                )
                db.execute(f"UPDATE authorities SET eligible_at = {_ELIGIBLE} WHERE authority = ?", (name,))
            db.execute("UPDATE outcomes SET n = n - ? WHERE outcome = ?", (total, outcome))
            return total

        return await self._write(again)

    async def revisit_settled(self, due: float) -> int:
        def again(db: sqlite3.Connection) -> int:
            where = "state = 'done' AND outcome = 'fetched'"
            per_authority = db.execute(
                f"SELECT authority, count(*) FROM urls WHERE {where} GROUP BY authority"
            ).fetchall()
            db.execute(
                f"UPDATE urls SET state = 'queued', outcome = NULL, attempts = 0, not_before = ?,"
                f" visits = max(visits, 1) WHERE {where}",
                (due,),
            )
            for name, n in per_authority:
                db.execute(
                    f"UPDATE authorities SET queued = queued + ?, done = done - ?, kept = kept + ?,"
                    f" eligible_at = {_ELIGIBLE} WHERE authority = ?",
                    (n, n, n, name),
                )
            return sum(int(n) for _, n in per_authority)

        return await self._write(again)

    async def revisits(self, now: float) -> Revisits:
        revisit = "state = 'queued' AND visits > 0"  # as urls_due's WHERE, so that index is used
        due = self._db.execute(f"SELECT count(*) FROM urls WHERE {revisit} AND not_before <= ?", (now,))
        n = int(due.fetchone()[0])
        later = f"SELECT min(not_before) FROM urls WHERE {revisit} AND not_before > ?"
        first = self._db.execute(later, (now,)).fetchone()[0]
        return Revisits(n, None if first is None else float(first))

    # -- authorities --------------------------------------------------------------------------

    async def ready_authorities(self, now: float, exclude: Collection[str], limit: int) -> list[str]:
        if limit <= 0:
            return []
        skip = set(exclude)
        rows = self._db.execute(
            "SELECT authority FROM authorities WHERE eligible_at <= ? ORDER BY last_leased LIMIT ?",
            (now, limit + len(skip)),
        ).fetchall()
        return [name for (name,) in rows if name not in skip][:limit]

    async def next_ready_at(self, exclude: Collection[str] = ()) -> float | None:
        skip = set(exclude)
        rows = self._db.execute(
            "SELECT authority, eligible_at FROM authorities WHERE eligible_at IS NOT NULL"
            " ORDER BY eligible_at LIMIT ?",
            (len(skip) + 1,),
        ).fetchall()
        return next((float(at) for name, at in rows if name not in skip), None)

    async def park(self, authority: str, until: float, reason: str) -> None:
        def hold(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO authorities (authority, parked_until, park_reason) VALUES (?, ?, ?)"
                " ON CONFLICT (authority) DO UPDATE SET parked_until = excluded.parked_until,"
                " park_reason = excluded.park_reason",
                (authority, until, reason),
            )
            db.execute(f"UPDATE authorities SET eligible_at = {_ELIGIBLE} WHERE authority = ?", (authority,))

        await self._write(hold)

    async def parked(self) -> dict[str, tuple[float, str]]:
        rows = self._db.execute(
            "SELECT authority, parked_until, park_reason FROM authorities WHERE parked_until > ?",
            (time.time(),),
        ).fetchall()
        return {name: (until, reason or "") for name, until, reason in rows}

    async def host_done(self, authority: str) -> int:
        row = self._db.execute(
            "SELECT done + kept FROM authorities WHERE authority = ?", (authority,)
        ).fetchone()
        return int(row[0]) if row else 0

    # -- request slots, as the cache Store's (see Frontier.book and Frontier.claim) -------------

    # One row per authority in a table without rowids: each booking or claim writes one page of
    # the WAL, where a rowid table with a text key would write its table and its key's index.

    def book(self, authority: str, spacing: float, wait: float = 0.0) -> Awaitable[float]:
        return self._write(lambda db: book_slot(db, authority, spacing, wait))

    def claim(self, authority: str, spacing: float, held: Held | None = None) -> Awaitable[float]:
        def take(db: sqlite3.Connection) -> float:
            if held is None:
                return claim_slot(db, authority, spacing)
            url, token, ttl = held
            row = db.execute(
                "SELECT 1 FROM urls WHERE url = ? AND state = 'in_flight' AND token = ?", (url, token)
            ).fetchone()
            if row is None:
                return -1.0  # the lease is no longer held: no slot
            left = claim_slot(db, authority, spacing)
            if left <= 0:
                db.execute("UPDATE urls SET lease_until = ? WHERE url = ?", (time.time() + ttl, url))
            return left

        return self._write(take)

    # -- workers --------------------------------------------------------------------------------

    def heartbeat(self, worker: str, info: dict[str, object]) -> Awaitable[None]:
        def beat(db: sqlite3.Connection) -> None:
            now = time.time()
            db.execute("INSERT OR REPLACE INTO workers VALUES (?, ?, ?)", (worker, now, json.dumps(info)))
            db.execute("DELETE FROM workers WHERE last_seen < ?", (now - WORKERS_KEPT,))

        return self._write(beat)

    async def workers(self) -> dict[str, dict[str, object]]:
        rows = self._db.execute("SELECT worker, last_seen, info FROM workers ORDER BY worker").fetchall()
        return {str(worker): {"last_seen": float(seen), **json.loads(info)} for worker, seen, info in rows}

    async def held(self) -> dict[str, int]:
        rows = self._db.execute("SELECT owner, count(*) FROM urls WHERE state = 'in_flight' GROUP BY owner")
        return {str(owner): int(n) for owner, n in rows.fetchall() if owner is not None}

    async def oldest_lease(self) -> dict[str, object] | None:
        row = self._db.execute(
            "SELECT url, owner, lease_until FROM urls WHERE state = 'in_flight' ORDER BY lease_until LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        return {"url": row[0], "owner": row[1], "expires_in": float(row[2]) - time.time()}

    # -- figures and memory -------------------------------------------------------------------

    async def counts(self) -> dict[str, int]:
        """States under their names; outcomes under theirs (``fetched``, ``disallowed``...).

        State counts are sums over the authorities (thousands of rows at most: fine for a progress
        display every second), so the hot path keeps one counter less to update.
        """
        sums = self._db.execute("SELECT sum(queued), sum(in_flight), sum(done) FROM authorities").fetchone()
        figures = {state: int(n or 0) for state, n in zip((QUEUED, IN_FLIGHT, DONE), sums, strict=True)}
        figures.update((name, int(n)) for name, n in self._db.execute("SELECT outcome, n FROM outcomes"))
        return figures

    async def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    async def set_meta(self, key: str, value: str) -> None:
        await self._write(lambda db: db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value)))

    def known_hosts(self) -> MutableMapping[str, str]:
        return KnownHosts(self)

    async def close(self) -> None:
        if self._committer is not None and not self._committer.done():
            await self._committer  # what callers were promised is committed first
        self._db.close()

    # -- machinery ----------------------------------------------------------------------------

    def _add(
        self,
        db: sqlite3.Connection,
        urls: Iterable[str],
        depth: int,
        parent: str | None,
        redirects: int,
    ) -> list[str]:
        added: list[str] = []
        per_authority: dict[str, int] = {}
        room: dict[str, int] = {}  # with max_queued: how many more each authority may queue
        for url in urls:
            name = self._authority_of(url)
            if self.max_queued is not None:
                if name not in room:
                    row = db.execute("SELECT queued FROM authorities WHERE authority = ?", (name,)).fetchone()
                    room[name] = self.max_queued - (int(row[0]) if row else 0)
                if room[name] <= 0:
                    if db.execute("SELECT 1 FROM urls WHERE url = ?", (url,)).fetchone() is None:
                        self.dropped += 1
                    continue
            cursor = db.execute(
                "INSERT OR IGNORE INTO urls (url, authority, state, depth, parent, redirects)"
                " VALUES (?, ?, 'queued', ?, ?, ?)",
                (url, name, depth, parent, redirects),
            )
            if cursor.rowcount == 1:
                added.append(url)
                per_authority[name] = per_authority.get(name, 0) + 1
                if name in room:
                    room[name] -= 1
        for name, n in per_authority.items():
            # A new URL is ready at once (not_before 0), so the authority is eligible when its park ends.
            db.execute(
                "INSERT INTO authorities (authority, queued, eligible_at) VALUES (?, ?, 0)"
                " ON CONFLICT (authority) DO UPDATE SET queued = queued + excluded.queued,"
                " eligible_at = max(parked_until, 0)",
                (name, n),
            )
        return added

    def _write_now(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one transaction, blocking: only for the synchronous ``known_hosts`` mapping."""
        what = f"the frontier {self.path}"
        for pause in begin_immediate(self._db, self._busy_timeout, what, FrontierError):
            time.sleep(pause)
        return run_transaction(self._db, work, what, FrontierError)

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Queue ``work`` for a transaction shared with the changes asked for in the same turn of the
        event loop (group commit); the future is done once it is committed."""
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_retrieved)
        self._pending.append((work, done))
        if self._committer is None or self._committer.done():
            self._committer = asyncio.ensure_future(self._commit())
        return done

    async def _commit(self) -> None:
        """Commit what is pending in one BEGIN IMMEDIATE transaction, waiting in asyncio while
        another process holds the file."""
        what = f"the frontier {self.path}"
        while self._pending:
            try:
                for pause in begin_immediate(self._db, self._busy_timeout, what, FrontierError):
                    await asyncio.sleep(pause)
            except FrontierError as exc:
                batch, self._pending = self._pending, []
                _deliver(batch, [exc] * len(batch))
                continue
            batch, self._pending = self._pending, []
            results: list[object]
            try:
                results = run_transaction(self._db, _all(batch), what, FrontierError)
            except Exception as exc:  # all rolled back: each again on its own, so only its caller fails
                results = [exc] if len(batch) == 1 else [_attempt(self._write_now, work) for work, _ in batch]
            _deliver(batch, results)

    async def cap_due(self, latest: float) -> int:
        def cap(db: sqlite3.Connection) -> int:
            late = "state = 'queued' AND visits > 0 AND not_before > ?"  # urls_due's WHERE: its index
            per_authority = db.execute(
                f"SELECT authority, count(*) FROM urls WHERE {late} GROUP BY authority", (latest,)
            ).fetchall()
            db.execute(f"UPDATE urls SET not_before = ? WHERE {late}", (latest, latest))
            for name, _ in per_authority:
                db.execute(f"UPDATE authorities SET eligible_at = {_ELIGIBLE} WHERE authority = ?", (name,))
            return sum(int(n) for _, n in per_authority)

        return await self._write(cap)


def _all(
    batch: list[_Change],
) -> Callable[[sqlite3.Connection], list[object]]:
    return lambda db: [work(db) for work, _ in batch]


def _attempt(
    run: Callable[[Callable[[sqlite3.Connection], T]], T], work: Callable[[sqlite3.Connection], T]
) -> object:
    try:
        return run(work)
    except Exception as exc:
        return exc


def _retrieved(done: asyncio.Future[Any]) -> None:
    """A change's failure is its caller's to handle; a caller that has moved on (a crawl ending on
    that very failure) leaves it unread, which is no reason for asyncio to print it."""
    if not done.cancelled():
        done.exception()


def _deliver(batch: list[_Change], results: list[object]) -> None:
    """Each caller its result, or its exception (a caller cancelled meanwhile has gone)."""
    for (_, done), result in zip(batch, results, strict=True):
        if done.done():
            continue
        if isinstance(result, Exception):
            done.set_exception(result)
        else:
            done.set_result(result)


def _migrate(db: sqlite3.Connection) -> None:
    """Bring a frontier file made by an older manners up to this schema: the columns it lacks (a
    constant default rewrites only the schema, not the table, so this is instant on millions of
    URLs), their index, and ``user_version`` so the next open skips this."""
    for table, columns in _ADDED.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for column in columns:
            if column.split()[0] not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    db.execute(_DUE_INDEX)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _settle_visit(
    db: sqlite3.Connection, url: str, name: str, *, first: bool, outcome: str, page: bool, visit: Visit
) -> None:
    """Settle an in-flight URL of a revisiting crawl: queued again, due at ``visit.due``, or for good.

    ``kept`` counts an authority's URLs settled at least once and queued again, so that
    ``host_done`` (``done + kept``) counts each URL once however many times it is visited."""
    memory = (visit.number, visit.interval, visit.digest, visit.capture_at, visit.misses, url)
    if visit.due is not None:
        db.execute(
            "UPDATE urls SET state = 'queued', not_before = ?, attempts = 0, outcome = NULL, owner = NULL,"
            " lease_until = NULL, settled_at = ?, visits = ?, interval = ?, digest = ?, capture_at = ?,"
            " misses = ? WHERE url = ?",
            (visit.due, time.time(), *memory),
        )
        change = f"queued = queued + 1, kept = kept + {int(first)}, eligible_at = {_ELIGIBLE}"
    else:
        db.execute(
            "UPDATE urls SET state = 'done', outcome = ?, owner = NULL, lease_until = NULL, settled_at = ?,"
            " visits = ?, interval = ?, digest = ?, capture_at = ?, misses = ? WHERE url = ?",
            (outcome, time.time(), *memory),
        )
        change = f"done = done + 1, kept = kept - {int(not first)}"
    db.execute(f"UPDATE authorities SET in_flight = in_flight - 1, {change} WHERE authority = ?", (name,))
    names = [outcome, PAGES] if page else [outcome]
    if visit.changed is not None:
        names.append(f"visit:{visit.number}")
        if visit.changed:
            names.append(f"changed:{visit.number}")
    _count(db, names)


def _count(db: sqlite3.Connection, names: list[str]) -> None:
    """One more under each of ``names`` in ``outcomes`` (outcomes, pages, visit:N, changed:N)."""
    db.executemany(
        "INSERT INTO outcomes VALUES (?, 1) ON CONFLICT (outcome) DO UPDATE SET n = n + 1",
        [(n,) for n in names],
    )


def _unlease(db: sqlite3.Connection, where: str, args: tuple[object, ...], attempt: bool) -> int:
    """The leases ``where`` selects back to the queue (``attempt``: counted as a try); how many."""
    per_authority = db.execute(
        f"SELECT authority, count(*) FROM urls WHERE {where} GROUP BY authority", args
    ).fetchall()
    db.execute(
        f"UPDATE urls SET state = 'queued', attempts = attempts + ?, owner = NULL, lease_until = NULL"
        f" WHERE {where}",
        (int(attempt), *args),
    )
    for name, n in per_authority:
        db.execute(
            f"UPDATE authorities SET queued = queued + ?, in_flight = in_flight - ?,"
            f" eligible_at = {_ELIGIBLE} WHERE authority = ?",
            (n, n, name),
        )
    return sum(int(n) for _, n in per_authority)


class KnownHosts(MutableMapping[str, str]):
    """Certificate fingerprints in the frontier's ``fingerprints`` table, written through at once.

    Synchronous because the Gemini client consults it mid-handshake; each write is one short
    transaction (blocking only if another process holds the file's write lock).  A host's
    fingerprint is read from the file once, then remembered: it is asked for on every request.
    """

    def __init__(self, frontier: SQLiteFrontier) -> None:
        self._frontier = frontier
        self._read: dict[str, str] = {}

    def __getitem__(self, host: str) -> str:
        if host in self._read:
            return self._read[host]
        row = self._frontier._db.execute(
            "SELECT fingerprint FROM fingerprints WHERE host = ?", (host,)
        ).fetchone()
        if row is None:
            raise KeyError(host)
        self._read[host] = str(row[0])
        return self._read[host]

    def __setitem__(self, host: str, fingerprint: str) -> None:
        self._frontier._write_now(
            lambda db: db.execute(
                "INSERT INTO fingerprints VALUES (?, ?, ?) ON CONFLICT (host)"
                " DO UPDATE SET fingerprint = excluded.fingerprint",
                (host, fingerprint, time.time()),
            )
        )
        self._read[host] = fingerprint

    def __delitem__(self, host: str) -> None:
        if host not in self:
            raise KeyError(host)
        self._frontier._write_now(lambda db: db.execute("DELETE FROM fingerprints WHERE host = ?", (host,)))
        self._read.pop(host, None)

    def __iter__(self) -> Iterator[str]:
        rows = self._frontier._db.execute("SELECT host FROM fingerprints ORDER BY host").fetchall()
        return iter([str(host) for (host,) in rows])

    def __len__(self) -> int:
        return int(self._frontier._db.execute("SELECT count(*) FROM fingerprints").fetchone()[0])


# When an authority next has a URL to lease: its earliest queued not_before, or its park's end
# (NULL with nothing queued).  Used inside UPDATE authorities, after the URL rows changed.
_ELIGIBLE = (
    "(SELECT max(u.not_before, authorities.parked_until) FROM urls u"
    " WHERE u.authority = authorities.authority AND u.state = 'queued' ORDER BY u.not_before LIMIT 1)"
)


class Patient:
    """A fleet's frontier, waited for through an outage: calls that fail with FrontierError (Redis
    unreachable) are made again, with back-off, until it answers, so the pages in flight are
    settled once it is back and nothing is lost.  An outage longer than ``patience`` seconds
    (counted from its first failure, whichever call met it) makes every call fail from then on,
    at once: the worker stops, its files intact, and its leases expire for others to reclaim.

    Changes are still asked for when called (the first attempt is made at once), so the order
    the crawler relies on (a page settled, then the next lease) holds as with the frontier
    itself.  Every call of the frontier is safe to repeat (its scripts are idempotent); a lease
    whose reply was lost is a lease nobody holds, which expires and is reclaimed."""

    def __init__(self, inner: Frontier, patience: float = 30.0) -> None:
        self.inner = inner
        self.patience = patience
        self._down_since: float | None = None  # monotonic: the first failure of this outage
        self._gave_up: FrontierError | None = None

    @property
    def dropped(self) -> int:
        return self.inner.dropped

    def add(self, url: str, depth: int, parent: str | None = None, redirects: int = 0) -> Awaitable[bool]:
        return self._call(lambda: self.inner.add(url, depth, parent, redirects))

    def add_many(
        self, urls: Iterable[str], depth: int, parent: str | None = None, redirects: int = 0
    ) -> Awaitable[list[str]]:
        todo = list(urls)
        return self._call(lambda: self.inner.add_many(todo, depth, parent, redirects))

    def lease(self, authority: str, owner: str, ttl: float) -> Awaitable[Lease | None]:
        return self._call(lambda: self.inner.lease(authority, owner, ttl))

    async def ready_authorities(self, now: float, exclude: Collection[str], limit: int) -> list[str]:
        return await self._call(lambda: self.inner.ready_authorities(now, exclude, limit))

    async def next_ready_at(self, exclude: Collection[str] = ()) -> float | None:
        return await self._call(lambda: self.inner.next_ready_at(exclude))

    def done(
        self,
        url: str,
        outcome: str,
        links: Iterable[str] = (),
        *,
        depth: int = 0,
        redirects: int = 0,
        page: bool = False,
        visit: Visit | None = None,
        token: str = "",
        repeat: bool = False,
    ) -> Awaitable[int]:
        todo = list(links)
        settle = functools.partial(self.inner.done, depth=depth, redirects=redirects, page=page, visit=visit,
                                   token=token)  # fmt: skip
        tries = [repeat]

        def call() -> Awaitable[int]:  # a call made again may find its first one applied
            again, tries[0] = tries[0], True
            return settle(url, outcome, todo, repeat=again)

        return self._call(call)

    async def retry(
        self, url: str, not_before: float, attempt: bool = True, *, token: str = "", repeat: bool = False
    ) -> None:
        tries = [repeat]

        def call() -> Awaitable[None]:
            again, tries[0] = tries[0], True
            return self.inner.retry(url, not_before, attempt, token=token, repeat=again)

        await self._call(call)

    async def requeue(self, outcome: str) -> int:
        return await self._call(lambda: self.inner.requeue(outcome))

    async def revisit_settled(self, due: float) -> int:
        return await self._call(lambda: self.inner.revisit_settled(due))

    async def revisits(self, now: float) -> Revisits:
        return await self._call(lambda: self.inner.revisits(now))

    async def recover(self, owner: str | None = None) -> int:
        return await self._call(lambda: self.inner.recover(owner))

    def renew(self, urls: Collection[str], owner: str, ttl: float) -> Awaitable[list[str]]:
        todo = dict(urls) if isinstance(urls, Mapping) else list(urls)
        return self._call(lambda: self.inner.renew(todo, owner, ttl))

    def reclaim(self) -> Awaitable[int]:
        return self._call(self.inner.reclaim)

    def book(self, authority: str, spacing: float, wait: float = 0.0) -> Awaitable[float]:
        return self._call(lambda: self.inner.book(authority, spacing, wait))

    def claim(self, authority: str, spacing: float, held: Held | None = None) -> Awaitable[float]:
        if held is None:
            return self._call(lambda: self.inner.claim(authority, spacing))
        return self._call(lambda: self.inner.claim(authority, spacing, held))

    def heartbeat(self, worker: str, info: dict[str, object]) -> Awaitable[None]:
        return self._call(lambda: self.inner.heartbeat(worker, info))

    def workers(self) -> Awaitable[dict[str, dict[str, object]]]:
        return self._call(self.inner.workers)

    def oldest_lease(self) -> Awaitable[dict[str, object] | None]:
        return self._call(self.inner.oldest_lease)

    def held(self) -> Awaitable[dict[str, int]]:
        return self._call(self.inner.held)

    async def park(self, authority: str, until: float, reason: str) -> None:
        await self._call(lambda: self.inner.park(authority, until, reason))

    async def parked(self) -> dict[str, tuple[float, str]]:
        return await self._call(self.inner.parked)

    async def counts(self) -> dict[str, int]:
        return await self._call(self.inner.counts)

    async def host_done(self, authority: str) -> int:
        return await self._call(lambda: self.inner.host_done(authority))

    async def get_meta(self, key: str) -> str | None:
        return await self._call(lambda: self.inner.get_meta(key))

    async def set_meta(self, key: str, value: str) -> None:
        await self._call(lambda: self.inner.set_meta(key, value))

    def known_hosts(self) -> MutableMapping[str, str]:
        return _PatientHosts(self.inner.known_hosts())

    async def close(self) -> None:
        await self.inner.close()

    def _call(self, call: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        first: Awaitable[T] | FrontierError
        try:
            first = self._gave_up or call()
        except FrontierError as exc:
            first = exc
        done = asyncio.ensure_future(self._through(first, call))
        done.add_done_callback(_retrieved)
        return done

    async def _through(self, first: Awaitable[T] | FrontierError, call: Callable[[], Awaitable[T]]) -> T:
        attempt: Awaitable[T] | FrontierError = first
        pause = 0.05
        while True:
            try:
                if isinstance(attempt, FrontierError):
                    raise attempt
                result = await attempt
            except CrawlLost:
                raise  # no wait brings a lost crawl back
            except FrontierError as exc:
                if exc.lasting and self._gave_up is None:
                    self._gave_up = exc  # a refusal: waiting will not mend it, and no later call may pass
                if self._gave_up is not None:
                    raise self._gave_up from None
                now = time.monotonic()
                if self._down_since is None:
                    self._down_since = now
                    log.warning("%s; waiting for it (%g s at most)", exc, self.patience)
                left = self._down_since + self.patience - now
                if left <= 0:
                    self._gave_up = FrontierError(f"{str(exc).rstrip('.')} (for {self.patience:g} s, so this"
                                                  " worker stops)")  # fmt: skip
                    raise self._gave_up from None
                await asyncio.sleep(min(pause, left))
                pause = min(pause * 2, 2.0)
                try:
                    attempt = self._gave_up or call()
                except FrontierError as again:
                    attempt = again
                continue
            if self._down_since is not None:
                log.warning("the frontier answers again, after %.1f s", time.monotonic() - self._down_since)
                self._down_since = None
            return result

    async def cap_due(self, latest: float) -> int:
        return await self._call(lambda: self.inner.cap_due(latest))


class _PatientHosts(MutableMapping[str, str]):
    """Certificate fingerprints through an outage: the Gemini client asks mid-handshake and cannot
    wait, so what the frontier cannot answer now is answered from what this process has seen
    (trust on first use, for this process), and what it could not write is written when it can."""

    def __init__(self, inner: MutableMapping[str, str]) -> None:
        self.inner = inner
        self._seen: dict[str, str] = {}
        self._unwritten: dict[str, str] = {}

    def __getitem__(self, host: str) -> str:
        try:
            self._flush()
            value = self.inner[host]
        except FrontierError:
            return self._seen[host]
        self._seen[host] = value
        return value

    def __setitem__(self, host: str, fingerprint: str) -> None:
        self._seen[host] = fingerprint
        self._unwritten[host] = fingerprint
        try:
            self._flush()
        except FrontierError:
            log.debug("the frontier is unreachable: %s's fingerprint is written later", host)

    def __delitem__(self, host: str) -> None:
        self._seen.pop(host, None)
        self._unwritten.pop(host, None)
        del self.inner[host]

    def __iter__(self) -> Iterator[str]:
        return iter(self.inner)

    def __len__(self) -> int:
        return len(self.inner)

    def _flush(self) -> None:
        while self._unwritten:
            host, fingerprint = next(iter(self._unwritten.items()))
            self.inner[host] = fingerprint
            del self._unwritten[host]


def is_shared(spec: Path | str | None) -> bool:
    """Whether ``spec`` names a fleet's frontier (Redis), not one process's SQLite file."""
    return isinstance(spec, str) and spec.lower().startswith(SHARED_SCHEMES)


def shown(spec: Path | str) -> str:
    """``spec`` as a sentence may show it: a Redis URL's password is no one's business."""
    return re.sub(r"^([a-z-]+://[^/@:]*):[^/@]*@", r"\1:***@", str(spec), flags=re.IGNORECASE)


@overload
def open_frontier(spec: Path, max_queued: int | None = None, name: str | None = None) -> SQLiteFrontier: ...


@overload
def open_frontier(spec: str, max_queued: int | None = None, name: str | None = None) -> Frontier: ...


def open_frontier(spec: Path | str, max_queued: int | None = None, name: str | None = None) -> Frontier:
    """The frontier of a crawl.

    A path (or a string with no scheme) is a SQLite file, or a directory holding
    ``frontier.sqlite3``; ``redis://``, ``rediss://`` and ``redis-cluster://`` URLs name a Redis
    holding many crawls, so they need the crawl's ``name``.  FrontierError (one sentence)
    when it cannot be used."""
    if isinstance(spec, str) and "://" in spec:
        if not is_shared(spec):
            scheme = spec.split("://", 1)[0]
            raise FrontierError(
                f"a frontier is a SQLite file or a redis://, rediss:// or redis-cluster:// URL, not {scheme}://"
            )
        if not name:
            raise FrontierError("a Redis frontier holds many crawls: name this one (--name CRAWL)")
        from .redis_frontier import open_redis_frontier  # only a fleet needs redis-py

        return open_redis_frontier(spec, name, max_queued)
    path = Path(spec)
    if path.is_dir():
        path = path / "frontier.sqlite3"
    return SQLiteFrontier(path, max_queued=max_queued)


if TYPE_CHECKING:  # mypy checks that both meet the protocol
    _sqlite: type[Frontier] = SQLiteFrontier
    _patient: type[Frontier] = Patient
