"""Processes on one machine share a SQLite file in WAL mode.

Every change is one ``BEGIN IMMEDIATE`` transaction, so a process killed mid-write
leaves the file as it was before that write, and locks and slots are serialised
across processes.  When another process holds the write lock, the wait happens
in asyncio (short sleeps, then retry), never in SQLite's own busy handler, which
would stall every task of this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from .entry import Entry
from .errors import CacheError

T = TypeVar("T")

# The log is folded into the file at the commit that finds it this many pages long (see ``connect``).
FOLD_PAGES = 128

# Request slots (``book_slot``, ``claim_slot``): the cache's, and a SQLite crawl frontier's.
SLOTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS slots (key TEXT PRIMARY KEY, next_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS starts (key TEXT PRIMARY KEY, at REAL NOT NULL);
"""
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, data BLOB NOT NULL, keep_until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS locks (key TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at REAL NOT NULL);
"""
    + SLOTS_SCHEMA
)


class SQLiteStore:
    def __init__(self, path: Path, busy_timeout: float = 10.0) -> None:
        self.location = f"sqlite://{path}"
        self._busy_timeout = busy_timeout
        try:
            self._db = connect(path, busy_timeout, _SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(f"cannot open the SQLite cache {path}: {exc}") from None

    async def get(self, key: str) -> Entry | None:
        def read(db: sqlite3.Connection) -> tuple[str] | None:
            return db.execute("SELECT data FROM entries WHERE key = ?", (key,)).fetchone()  # type: ignore[no-any-return]

        # WAL readers neither take nor wait for the write lock: a read is one statement.
        # Only if the file is busy anyway (recovering a WAL) does it wait as writes do.
        try:
            row = read(self._db)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise CacheError(f"the SQLite cache {self.location} failed: {exc}") from None
            row = await self._write(read)
        except sqlite3.Error as exc:
            raise CacheError(f"the SQLite cache {self.location} failed: {exc}") from None
        return Entry.loads(row[0]) if row else None

    async def put(self, key: str, entry: Entry) -> None:
        data = entry.dumps()
        await self._write(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", (key, data, entry.keep_until)
            )
        )

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        def take(db: sqlite3.Connection) -> bool:
            now = time.time()
            row = db.execute("SELECT expires_at FROM locks WHERE key = ?", (key,)).fetchone()
            if row is not None and row[0] > now:
                return False
            db.execute("INSERT OR REPLACE INTO locks VALUES (?, ?, ?)", (key, token, now + ttl))
            return True

        return await self._write(take)

    async def release(self, key: str, token: str) -> None:
        await self._write(
            lambda db: db.execute("DELETE FROM locks WHERE key = ? AND token = ?", (key, token))
        )

    async def book(self, key: str, spacing: float, wait: float = 0.0) -> float:
        return await self._write(lambda db: book_slot(db, key, spacing, wait))

    async def claim(self, key: str, spacing: float) -> float:
        return await self._write(lambda db: claim_slot(db, key, spacing), fold=False)

    async def close(self) -> None:
        self._db.close()

    async def _write(self, work: Callable[[sqlite3.Connection], T], fold: bool = True) -> T:
        """Run ``work`` in one BEGIN IMMEDIATE transaction, waiting in asyncio while the file is busy."""
        what = f"the SQLite cache {self.location}"
        for pause in begin_immediate(self._db, self._busy_timeout, what, CacheError):
            await asyncio.sleep(pause)
        return run_transaction(self._db, work, what, CacheError, fold=fold)


def book_slot(db: sqlite3.Connection, key: str, spacing: float, wait: float) -> float:
    """``Store.book`` in a transaction of ``db`` (``SLOTS_SCHEMA``): seconds from now to the slot,
    which is also no sooner than ``spacing`` after the last start claimed (a request claimed
    later than its slot, or stamped as it left: a slot before that would only be refused)."""
    now = time.time()
    row = db.execute(
        "SELECT max(coalesce((SELECT next_at FROM slots WHERE key = ?1), 0),"
        " coalesce((SELECT at FROM starts WHERE key = ?1), 0) + ?2)",
        (key, spacing),
    ).fetchone()
    slot = max(now, now + wait, row[0])
    db.execute("INSERT OR REPLACE INTO slots VALUES (?, ?)", (key, slot + spacing))
    return float(slot - now)


def claim_slot(db: sqlite3.Connection, key: str, spacing: float) -> float:
    """``Store.claim`` in a transaction of ``db``: 0 when claimed, else the seconds left."""
    now = time.time()
    row = db.execute("SELECT at FROM starts WHERE key = ?", (key,)).fetchone()
    left = (row[0] if row else 0.0) + spacing - now
    if left > 0:
        return float(left)
    db.execute("INSERT OR REPLACE INTO starts VALUES (?, ?)", (key, now))
    return 0.0


def stamp_start(db: sqlite3.Connection, key: str, at: float) -> float:
    """``key``'s request started at ``at`` (a claim with no spacing, stamped later): never moves
    the start back.  0.0, as such a claim answers."""
    db.execute(
        "INSERT INTO starts VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET at = max(at, ?2)", (key, at)
    )
    return 0.0


def connect(path: Path, busy_timeout: float, schema: str) -> sqlite3.Connection:
    """Open (or create) ``path`` in WAL mode with ``schema``, for ``begin_immediate`` transactions.

    Workers starting together may set up a new file at the same moment; SQLite then answers
    "locked" at once, without waiting, so the set-up is tried again for up to ``busy_timeout``.
    OSError or sqlite3.Error when the file cannot be used.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    give_up = time.monotonic() + busy_timeout
    pause = 0.001
    while True:
        db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: safe when a process dies
            # A crawl commits a few times per request (its slots, leases, settlings): the log is
            # folded into the file every 512 KiB, not SQLite's 4 MiB, and cut back to 1 MiB after,
            # so a crawl near a full disk does not need megabytes of log to go on (folding
            # every 4 MiB would save a seventh of a crawl's SQLite time, and fail the resume of a
            # crawl whose disk filled: tests/test_crawl_hostile.py).
            db.execute(f"PRAGMA wal_autocheckpoint={FOLD_PAGES}")
            db.execute("PRAGMA journal_size_limit=1048576")
            db.executescript(schema)
            db.execute("PRAGMA busy_timeout=0")  # from here on, waits are the caller's (begin_immediate)
            return db
        except sqlite3.OperationalError as exc:
            db.close()
            busy = "locked" in str(exc) or "busy" in str(exc)
            if not busy or time.monotonic() > give_up:
                raise
        except BaseException:
            db.close()
            raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def begin_immediate(
    db: sqlite3.Connection, busy_timeout: float, what: str, error: type[Exception]
) -> Iterator[float]:
    """Begin a BEGIN IMMEDIATE transaction, yielding a pause each time another process holds the lock.

    The caller sleeps each pause as it can (``time.sleep`` or ``asyncio.sleep``).  ``error``
    (with ``what``, the file's name for people) when the lock is held longer than
    ``busy_timeout`` or SQLite fails otherwise.
    """
    give_up = time.monotonic() + busy_timeout
    pause = 0.0002
    while True:
        try:
            db.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise error(f"{what} failed: {exc}") from None
            if time.monotonic() > give_up:
                raise error(f"{what} stayed locked for {busy_timeout:g} s") from None
            yield pause
            pause = min(pause * 2, 0.005)


def run_transaction(
    db: sqlite3.Connection,
    work: Callable[[sqlite3.Connection], T],
    what: str,
    error: type[Exception],
    *,
    fold: bool = True,
) -> T:
    """``work`` inside the transaction ``begin_immediate`` began: COMMIT, or ROLLBACK if it raises.

    ``fold=False`` for a transaction that grants a request its start (``claim_slot``): its
    COMMIT does not fold the log into the file, the next write's does.  A fold syncs the file
    to disk: up to 44 ms measured on this project's 2-core machine.  The start is stamped
    before the commit, so the request would leave that much later than stamped, and that much
    closer to the next one granted ``spacing`` after the stamp (another process's, perhaps).
    """
    try:
        result = work(db)
        if not fold:
            db.execute("PRAGMA wal_autocheckpoint=0")
        try:
            db.execute("COMMIT")  # may fail too (a full disk): then it is rolled back like the work
        finally:
            if not fold:
                db.execute(f"PRAGMA wal_autocheckpoint={FOLD_PAGES}")
    except BaseException as exc:
        with contextlib.suppress(sqlite3.Error):  # a failed COMMIT may have ended the transaction
            db.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise error(f"{what} failed: {exc}") from None
        raise
    return result
