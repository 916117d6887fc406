"""Where robots.txt entries, fetch locks and request slots are kept.

Three stores with one contract: ``memory`` (this process), ``sqlite`` (processes
on one machine, through a WAL-mode file) and ``redis://`` (a fleet).  Each store
must make ``acquire`` and ``book`` atomic across everyone sharing it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from .entry import Entry


class CacheError(Exception):
    """The shared cache cannot be used (for example, its Redis server is down)."""


class Slots(Protocol):
    """What keeps request slots: a ``Store``, a crawl's ``Frontier`` (see ``Store`` for the two)."""

    def book(self, key: str, spacing: float, wait: float = 0.0) -> Awaitable[float]: ...

    def claim(self, key: str, spacing: float) -> Awaitable[float]: ...


async def take_slot(
    slots: Slots,
    key: str,
    spacing: float,
    wait: float = 0.0,
    *,
    told: Callable[[], Awaitable[float]] | None = None,
) -> None:
    """Book ``key``'s next request slot, sleep until it, and claim it (claiming again if the one
    before woke late): the one way a request waits for its turn, whoever shares the slots.

    ``wait``: seconds from now before which no slot may start (a Retry-After, a 44).  ``told``:
    asked when the slot comes, the seconds the host has asked for since, if any (a 44 another
    worker met); a slot after them is booked instead.  Only the seconds ``slots`` answers are
    slept, on this process's monotonic clock: no two clocks are compared."""
    slot = time.monotonic() + await slots.book(key, spacing, max(wait, 0.0))
    while True:
        while (left := slot - time.monotonic()) > 0:
            await asyncio.sleep(left)
        more = await told() if told is not None else 0.0
        if more > 0:
            slot = time.monotonic() + await slots.book(key, spacing, more)
            continue
        late = await slots.claim(key, spacing)
        if late <= 0:
            return
        slot = time.monotonic() + late


class Store(Slots, Protocol):
    location: str

    async def get(self, key: str) -> Entry | None: ...

    async def put(self, key: str, entry: Entry) -> None: ...

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        """Take the fetch lock of ``key`` for ``ttl`` seconds, if nobody holds it."""

    async def release(self, key: str, token: str) -> None: ...

    async def book(self, key: str, spacing: float, wait: float = 0.0) -> float:
        """Book the next request slot of ``key`` and return how many seconds from now it starts.

        The slot is the later of now, ``wait`` seconds from now and the end of the last
        slot booked; the one after it starts ``spacing`` later.  Times are the store's:
        Redis reads its own clock (``TIME``), so the machines of a fleet need not agree
        on theirs, and a caller only ever sleeps for the seconds it is given.
        """

    async def claim(self, key: str, spacing: float) -> float:
        """Start a request to ``key`` now if the last one started ``spacing`` ago or more.

        Returns 0 when claimed, else the seconds still to wait.  A booked slot
        orders the workers; the claim makes sure a worker that woke late does
        not leave the next one too close behind it.
        """

    async def close(self) -> None: ...


def default_sqlite_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "manners" / "robots.sqlite3"


def open_store(cache: str) -> Store:
    """``"memory"``, ``"sqlite"`` (the user cache dir), ``"sqlite:///path/file.db"``, or a redis:// URL."""
    if cache == "memory":
        from .memory import MemoryStore

        return MemoryStore()
    if cache == "sqlite" or cache.startswith("sqlite://"):
        from .sqlite import SQLiteStore

        path = Path(cache[len("sqlite://") :]) if cache != "sqlite" else default_sqlite_path()
        return SQLiteStore(path)
    if cache.startswith(("redis://", "rediss://", "unix://")):
        from .redis import RedisStore

        return RedisStore(cache)
    raise ValueError(
        f"unknown cache {cache!r}: use 'memory', 'sqlite', 'sqlite:///path/to/file.db' or a redis:// URL"
    )


__all__ = ["CacheError", "Entry", "Store", "default_sqlite_path", "open_store"]
