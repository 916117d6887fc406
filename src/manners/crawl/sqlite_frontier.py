"""The crawl frontier of one process: every URL once, with its state, in one SQLite file.

``SQLiteFrontier`` keeps everything in one WAL-mode file.  Each state change is atomic, so a
process killed at any instant (SIGKILL included) leaves the file as it was before or after that
change, never in between; ``recover()`` at start-up then returns what was in flight to the
queue.  The calls are plain synchronous sqlite3 calls made in the event loop's thread (a hop to
an executor thread would cost as much as the work, plus a connection shared between threads).
The commit is four fifths of a small change's cost, so changes asked for in the same turn of
the event loop share one ``BEGIN IMMEDIATE`` transaction (group commit): each caller resumes
only once its change is committed, so what it does next (the next lease, say) still follows a
durable state.  (One change waits for nobody: a request's start stamped as it left joins the
next commit, since the process spaces its next request by its own clock.)  The only wait, for
another process's write lock, happens in asyncio as in the SQLite cache.

Hot paths are indexed: a partial index over queued URLs by (authority, not_before, id) makes
leasing O(log n), and a per-authority row carrying its queue length, the earliest time one of
its URLs is ready (``eligible_at``, parks included) and when it was last leased makes
``ready_authorities`` a walk over an index, most queued first (a crawl lasts as long as its
biggest host: those start first), then least recently leased.  Nothing of the URL
set is kept in Python, so memory stays bounded whatever the crawl's size.

The tables and their migration are ``sqlite_schema``'s; the values handed out (``Lease``,
``Visit``) are ``leases``'; ``frontier.open_frontier`` chooses this or the fleet's Redis frontier.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sqlite3
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..cache import HOLD_POLL, Held, Hold, LeaseLost
from ..cache.sqlite import (
    SLOTS_SCHEMA,
    begin_immediate,
    book_slot,
    claim_slot,
    connect,
    run_transaction,
    stamp_start,
)
from .frontier_errors import FrontierError, retrieved
from .frontier_protocol import WORKERS_KEPT
from .leases import DONE, IN_FLIGHT, PAGES, QUEUED, Lease, Revisits, Visit
from .sqlite_schema import ELIGIBLE, SCHEMA, SCHEMA_VERSION, migrate
from .urls import authority

if TYPE_CHECKING:
    from .frontier_protocol import Frontier

T = TypeVar("T")

# Commits in a row that may leave the log unfolded because a request waits on them (``_write``):
# each writes a page or two of log, so it grows by a fraction of ``FOLD_PAGES`` at most.
UNFOLDED_MAX = 16

_Change = tuple[Callable[[sqlite3.Connection], Any], "asyncio.Future[Any]"]  # a change and its caller


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
        self._unfolded = False  # a change pending lets a request leave: its commit folds no log
        self._unfolded_in_a_row = 0
        self._committer: asyncio.Task[None] | None = None
        try:
            self._db = connect(path, busy_timeout, SCHEMA + SLOTS_SCHEMA)
            if self._db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                self._write_now(migrate)
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
            left = db.execute(
                f"UPDATE authorities SET queued = queued - 1, in_flight = in_flight + 1, last_leased = ?,"
                f" eligible_at = {ELIGIBLE} WHERE authority = ? RETURNING queued",
                (self._turn, authority),
            ).fetchall()
            visits, interval, digest, capture_at, misses = row[6:]
            return Lease(row[1], row[2], row[3], row[4], row[5], token, visits, interval, digest, capture_at,
                         misses, int(left[0][0]))  # fmt: skip

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
                    change = f"queued = queued - 1, eligible_at = {ELIGIBLE}"
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
                f" eligible_at = {ELIGIBLE} WHERE authority = ?",
                (row[1],),
            )

        await self._write(again)

    async def recover(
        self, owner: str | None = None, running: float = 0.0, until: Mapping[str, float] | None = None
    ) -> int:
        if owner is None:

            def back(db: sqlite3.Connection) -> int:
                # a run that ended with these in flight: no commit after them took their hosts'
                # starts along (``_write``), and their servers may still be answering them
                if until is None:
                    db.execute(
                        "INSERT INTO starts SELECT DISTINCT authority, ?1 FROM urls WHERE state = 'in_flight'"
                        " ON CONFLICT (key) DO UPDATE SET at = max(at, ?1)",
                        (time.time() + running,),
                    )
                else:
                    db.executemany(
                        "INSERT INTO starts VALUES (?, ?)"
                        " ON CONFLICT (key) DO UPDATE SET at = max(at, excluded.at)",
                        until.items(),
                    )
                return _unlease(db, "state = 'in_flight'", (), attempt=False)

            return await self._write(back)
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
                db.execute(f"UPDATE authorities SET eligible_at = {ELIGIBLE} WHERE authority = ?", (name,))
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
                    f" eligible_at = {ELIGIBLE} WHERE authority = ?",
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

    async def ready_authorities(
        self, now: float, exclude: Collection[str], limit: int, *, leased: bool | None = None
    ) -> list[str]:
        if limit <= 0:
            return []
        skip = set(exclude)
        rows = self._db.execute(
            "SELECT authority FROM authorities INDEXED BY authorities_size"
            " WHERE eligible_at IS NOT NULL AND eligible_at <= ?"
            + {None: "", False: " AND last_leased = 0", True: " AND last_leased > 0"}[leased]
            + " ORDER BY queued DESC, last_leased LIMIT ?",
            (now, limit + len(skip)),
        ).fetchall()
        return [name for (name,) in rows if name not in skip][:limit]

    async def busiest(self, n: int) -> list[tuple[str, int]]:
        if n <= 0:
            return []
        rows = self._db.execute(  # authorities_size, walked from its start: n rows read, no more
            "SELECT authority, queued FROM authorities INDEXED BY authorities_size"
            " WHERE eligible_at IS NOT NULL ORDER BY queued DESC, last_leased LIMIT ?",
            (n,),
        ).fetchall()
        return [(str(name), int(queued)) for name, queued in rows if queued > 0]

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
            db.execute(f"UPDATE authorities SET eligible_at = {ELIGIBLE} WHERE authority = ?", (authority,))

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

    def claim(
        self, authority: str, spacing: float, held: Held | None = None, hold: Hold | None = None
    ) -> Awaitable[float]:
        if spacing <= 0 and held is None and hold is None:  # a start stamped: nothing to wait for
            at = time.time()
            self._write(lambda db: stamp_start(db, authority, at), lazy=True)
            granted: asyncio.Future[float] = asyncio.get_running_loop().create_future()
            granted.set_result(0.0)  # at once: one process's own clock spaces its next request
            return granted

        def take(db: sqlite3.Connection) -> float:
            if held is not None:
                url, token, _ = held
                row = db.execute(
                    "SELECT 1 FROM urls WHERE url = ? AND state = 'in_flight' AND token = ?", (url, token)
                ).fetchone()
                if row is None:
                    return -1.0  # the lease is no longer held: no slot
            if hold is not None:
                now = time.time()
                row = db.execute(
                    "SELECT token, until FROM holds WHERE authority = ? AND until > ?", (authority, now)
                ).fetchone()
                if row is not None and row[0] != hold[0]:
                    return max(min(spacing, float(row[1]) - now), HOLD_POLL)  # another request holds it
            left = claim_slot(db, authority, spacing)
            if left > 0:
                return left
            if held is not None:
                db.execute("UPDATE urls SET lease_until = ? WHERE url = ?", (time.time() + held[2], held[0]))
            if hold is not None:
                db.execute(
                    "INSERT OR REPLACE INTO holds VALUES (?, ?, ?)",
                    (authority, hold[0], time.time() + hold[1]),
                )
            return 0.0

        return self._write(take, fold=False)

    def renew_hold(self, authority: str, token: str, ttl: float, *, stamp: bool = False) -> Awaitable[bool]:
        def renew(db: sqlite3.Connection) -> bool:
            now = time.time()
            changed = db.execute(
                "UPDATE holds SET until = ? WHERE authority = ? AND token = ? AND until > ?",
                (now + ttl, authority, token, now),
            ).rowcount
            if changed and stamp:
                stamp_start(db, authority, now)
            return changed > 0

        return self._write(renew, fold=False)  # the request leaves once this is committed

    def release_hold(
        self, authority: str, token: str, spacing: float, ago: float = 0.0, pause: float = 0.0
    ) -> Awaitable[bool]:
        def release(db: sqlite3.Connection) -> bool:
            now = time.time()
            gone = db.execute(
                "DELETE FROM holds WHERE authority = ? AND token = ? AND until > ?", (authority, token, now)
            ).rowcount
            if not gone:
                return False
            # no claim before the pause is over
            _stamp_start(db, authority, spacing, max(now - max(0.0, ago), now + pause - spacing))
            return True

        return self._write(release)

    def slow(self, authority: str, spacing: float, pause: float) -> Awaitable[None]:
        def note(db: sqlite3.Connection) -> None:
            _stamp_start(db, authority, spacing, time.time() + max(0.0, pause) - spacing)

        return self._write(note)

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
        if self._pending:  # lazy changes no commit took along
            await self._commit()
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

    def _write(
        self, work: Callable[[sqlite3.Connection], T], lazy: bool = False, fold: bool = True
    ) -> asyncio.Future[T]:
        """Queue ``work`` for a transaction shared with the changes asked for in the same turn of the
        event loop (group commit); the future is done once it is committed.

        ``lazy``: no commit of its own, it joins the next one asked for (a crawl asks for one a
        request at least; ``close`` commits what is left).  For what nothing waits on but a
        process that dies before it is committed may lose: a host's start, stamped as its
        request left (the claim that granted the slot stamped one a moment before).

        ``fold=False``: a request leaves once ``work`` is committed, so that commit leaves the
        log's folding to the next (``run_transaction``); in a busy fleet every commit may hold
        such a change, so one in ``UNFOLDED_MAX`` folds anyway, and the log stays bounded."""
        self._unfolded |= not fold
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        done.add_done_callback(retrieved)
        self._pending.append((work, done))
        if not lazy and (self._committer is None or self._committer.done()):
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
                batch, self._pending, self._unfolded = self._pending, [], False
                _deliver(batch, [exc] * len(batch))
                continue
            batch, self._pending = self._pending, []
            fold = not self._unfolded or self._unfolded_in_a_row >= UNFOLDED_MAX
            self._unfolded, self._unfolded_in_a_row = False, 0 if fold else self._unfolded_in_a_row + 1
            results: list[object]
            try:
                results = run_transaction(self._db, _all(batch), what, FrontierError, fold=fold)
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
                db.execute(f"UPDATE authorities SET eligible_at = {ELIGIBLE} WHERE authority = ?", (name,))
            return sum(int(n) for _, n in per_authority)

        return await self._write(cap)


def _stamp_start(db: sqlite3.Connection, authority: str, spacing: float, start: float) -> None:
    """``authority``'s start at ``start`` unless later (``stamp_start``), its next slot ``spacing``
    after it unless booked later: what ends a hold (``release_hold``), and a 44's wait (``slow``)."""
    stamp_start(db, authority, start)
    at = db.execute("SELECT at FROM starts WHERE key = ?", (authority,)).fetchone()[0]
    row = db.execute("SELECT next_at FROM slots WHERE key = ?", (authority,)).fetchone()
    next_at = max(at + spacing, row[0] if row else 0.0)
    db.execute("INSERT OR REPLACE INTO slots VALUES (?, ?)", (authority, next_at))


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


def _deliver(batch: list[_Change], results: list[object]) -> None:
    """Each caller its result, or its exception (a caller cancelled meanwhile has gone)."""
    for (_, done), result in zip(batch, results, strict=True):
        if done.done():
            continue
        if isinstance(result, Exception):
            done.set_exception(result)
        else:
            done.set_result(result)


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
        change = f"queued = queued + 1, kept = kept + {int(first)}, eligible_at = {ELIGIBLE}"
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
            f" eligible_at = {ELIGIBLE} WHERE authority = ?",
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


if TYPE_CHECKING:
    _conforms: type[Frontier] = SQLiteFrontier  # mypy checks the protocol is met
