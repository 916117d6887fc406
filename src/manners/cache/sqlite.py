"""Processes on one machine share a SQLite file in WAL mode.

Every change is one transaction, so a process killed mid-write leaves the file as
it was before that write.  Locks and slots are taken inside ``BEGIN IMMEDIATE``,
which SQLite serialises across processes.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from . import CacheError
from .entry import Entry

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, data TEXT NOT NULL, keep_until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS locks (key TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS slots (key TEXT PRIMARY KEY, next_at REAL NOT NULL);
"""


class SQLiteStore:
    def __init__(self, path: Path, busy_timeout: float = 10.0) -> None:
        self.location = f"sqlite://{path}"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: safe when a process dies
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(f"cannot open the SQLite cache {path}: {exc}") from None

    async def get(self, key: str) -> Entry | None:
        row = self._run("SELECT data FROM entries WHERE key = ?", (key,)).fetchone()
        return Entry.loads(row[0]) if row else None

    async def put(self, key: str, entry: Entry) -> None:
        self._run(
            "INSERT OR REPLACE INTO entries (key, data, keep_until) VALUES (?, ?, ?)",
            (key, entry.dumps(), entry.keep_until),
        )

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        with self._immediate():
            now = time.time()
            row = self._db.execute("SELECT expires_at FROM locks WHERE key = ?", (key,)).fetchone()
            if row is not None and row[0] > now:
                return False
            self._db.execute("INSERT OR REPLACE INTO locks VALUES (?, ?, ?)", (key, token, now + ttl))
            return True

    async def release(self, key: str, token: str) -> None:
        self._run("DELETE FROM locks WHERE key = ? AND token = ?", (key, token))

    async def book(self, key: str, spacing: float, not_before: float = 0.0) -> float:
        with self._immediate():
            now = time.time()
            row = self._db.execute("SELECT next_at FROM slots WHERE key = ?", (key,)).fetchone()
            slot = max(now, not_before, row[0] if row else 0.0)
            self._db.execute("INSERT OR REPLACE INTO slots VALUES (?, ?)", (key, slot + spacing))
            return slot

    async def close(self) -> None:
        self._db.close()

    def _run(self, sql: str, args: tuple[object, ...]) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, args)
        except sqlite3.Error as exc:
            raise CacheError(f"the SQLite cache {self.location} failed: {exc}") from None

    def _immediate(self) -> _Transaction:
        return _Transaction(self._db, self.location)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error."""

    def __init__(self, db: sqlite3.Connection, location: str) -> None:
        self._db = db
        self._location = location

    def __enter__(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise CacheError(f"the SQLite cache {self._location} is locked: {exc}") from None

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")
