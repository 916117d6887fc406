"""Where robots.txt entries, fetch locks and request slots are kept.

Three stores with one contract: ``memory`` (this process), ``sqlite`` (processes
on one machine, through a WAL-mode file) and ``redis://`` (a fleet).  Each store
must make ``acquire`` and ``book`` atomic across everyone sharing it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Protocol, cast

from .entry import Entry
from .errors import CacheError, LeaseLost

# Seconds added to a host's spacing when a slot is claimed: the start a claim compares with is
# stamped as the slot is claimed, before the connection is begun, and a busy event loop sends
# the request's bytes milliseconds later; a server that stamps requests as they come (or as its
# own loop gets round to accepting them) then sees the next request, on time by the claim, as
# early.  At most a quarter of the spacing: under a spacing of a few tens of milliseconds (time
# compressed, in the benches) a fixed 10 ms would be half of it.  A twentieth (1 ms at 20 ms)
# let a busy bench server log one pair of requests in 66,381, and one in 238,995, 3.4 and 4.8 ms
# closer than the spacing.
CLAIM_MARGIN = 0.01
CLAIM_MARGIN_SHARE = 0.25
# The share of the spacing added instead where the start is stamped once the request is written
# (a crawl's pages): every stamp a server can take of a request's coming (its connection, its
# TLS handshake, its bytes in the kernel) falls before it, and the next connection is begun no
# sooner than the spacing after it, so the spacing is kept on the wire with no margin at all.
# The margin covers only a server that stamps a request when its own loop reads it, a little
# late.  A hundredth: 2 ms at 0.2 s, the default space's spacing at factor 5, where a quarter
# (10 ms) cost its biggest host 5% and a fortieth (5 ms) 2.4%.
WRITTEN_MARGIN_SHARE = 0.01
# Seconds at least between two claims of a worker waiting for a host another request holds.
HOLD_POLL = 0.01


Held = tuple[str, str, float]  # a crawl lease a request is made under: URL, token, seconds it lasts
Hold = tuple[str, float]  # a host held by one request, fleet-wide: its token, seconds it lasts unless renewed


class Slots(Protocol):
    """What keeps request slots: a ``Store``, a crawl's ``Frontier`` (see ``Store`` for the two)."""

    def book(self, key: str, spacing: float, wait: float = 0.0) -> Awaitable[float]: ...

    def claim(self, key: str, spacing: float) -> Awaitable[float]: ...


class HeldSlots(Slots, Protocol):
    """Slots kept with a crawl's leases (a ``Frontier``): a claim names the lease it acts under,
    and may take a hold on the host for the request it starts."""

    def claim(
        self, key: str, spacing: float, held: Held | None = None, hold: Hold | None = None
    ) -> Awaitable[float]: ...


def claim_margin(spacing: float) -> float:
    """Seconds added to ``spacing`` when a slot is booked and claimed (0 for no spacing)."""
    return min(CLAIM_MARGIN, spacing * CLAIM_MARGIN_SHARE) if spacing > 0 else 0.0


def written_margin(spacing: float) -> float:
    """``claim_margin`` for a host whose start is stamped once its request is written."""
    return min(CLAIM_MARGIN, spacing * WRITTEN_MARGIN_SHARE) if spacing > 0 else 0.0


class Ahead(Protocol):
    """What a request needs besides its turn, taken shortly before its slot (``take_slot``)."""

    lead: float  # seconds before the slot it is taken

    @property
    def held(self) -> bool: ...

    async def take(self) -> None: ...

    def give_back(self) -> None: ...


async def take_slot(
    slots: Slots,
    key: str,
    spacing: float,
    wait: float = 0.0,
    *,
    held: Held | None = None,
    hold: Hold | None = None,
    book: bool = True,
    margin: float | None = None,
    ahead: Ahead | None = None,
) -> float:
    """Book ``key``'s next request slot, sleep until it, and claim it (claiming again if the one
    before woke late): the one way a request waits for its turn, whoever shares the slots.

    ``wait``: seconds from now before which no slot may start (a Retry-After, a 44; one another
    worker met is in ``slots``, whose claims refuse it).  Only the seconds ``slots`` answers are
    slept, on this process's monotonic clock: no two clocks are compared.

    ``held``: (URL, lease token, lease seconds) of the crawl lease the request is made under
    (``slots`` is then a ``HeldSlots``): the claim grants the slot only while that lease is held,
    and extends it, in one atomic step; ``LeaseLost`` when it is not, so no request leaves for a
    URL another worker may have leased since.  ``hold``: (token, seconds) of a hold on ``key``
    taken in the same atomic step as the slot (``slots`` is then a ``HeldSlots``): while another
    token holds ``key`` no claim succeeds, so one request at a time leaves for it, whoever sends
    it; the caller releases the hold when its request is over.  Slots are booked and claimed
    ``margin`` (by default ``claim_margin(spacing)``) more than a ``spacing`` above 0.

    ``ahead``: what the request needs besides its turn and may wait for (a place on the wire),
    taken ``ahead.lead`` (at most half the spacing) before the slot and kept for the request;
    given back while a claim refused puts the slot off longer than that.

    ``book=False``: nobody else orders requests to ``key`` (one process's crawl: a host's one
    task, and a robots.txt refresh that claims as it does), so no slot is booked: a write and
    a wait on the store fewer per request.  The first claim is made after ``wait`` (the caller's
    own reckoning of when the host's last request left, plus the spacing), and a claim refused
    says how long is left.

    Returns when (``time.monotonic()``) the claim that was granted was asked: what it holds (the
    lease extended, the hold) is counted from no later than that, whenever its answer was read
    (a process stopped with the answer unread reads it, on waking, as if it were new)."""
    # booked and claimed alike, so a slot on time is claimed at once
    spacing += claim_margin(spacing) if margin is None else margin
    slot = time.monotonic() + (await slots.book(key, spacing, max(wait, 0.0)) if book else wait)
    lead = min(ahead.lead, spacing / 2) if ahead is not None else 0.0
    while True:
        if ahead is not None and not ahead.held:
            while (left := slot - lead - time.monotonic()) > 0:
                await asyncio.sleep(left)
            await ahead.take()
        while (left := slot - time.monotonic()) > 0:
            await asyncio.sleep(left)
        asked = time.monotonic()
        if held is None and hold is None:
            late = await slots.claim(key, spacing)
        else:
            late = await cast(HeldSlots, slots).claim(key, spacing, held, hold)
            if late < 0 and held is not None:
                raise LeaseLost(f"the lease on {held[0]} is no longer held: its request was not sent")
        if late <= 0:
            return asked
        slot = time.monotonic() + late
        if ahead is not None and late > lead:
            ahead.give_back()


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
        slot booked (and, in memory and SQLite, ``spacing`` after the last start claimed, so
        that a slot on time is claimed at once); the one after it starts ``spacing`` later.
        Times are the store's: Redis reads its own clock (``TIME``), so the machines of a fleet
        need not agree on theirs, and a caller only ever sleeps for the seconds it is given.
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


__all__ = [
    "CLAIM_MARGIN",
    "HOLD_POLL",
    "Ahead",
    "CacheError",
    "Entry",
    "Held",
    "Hold",
    "LeaseLost",
    "Store",
    "default_sqlite_path",
    "open_store",
]
