"""Politeness on the frontier: each request's turn at its host, and the host held while it runs.

One request at a time per host, spaced as its robots.txt asks, for one process as for a fleet:
the slots are booked in the frontier, so every worker that shares it spaces a host as one
process would.  A 44 (slow down) holds the host back for every worker (told through the
frontier), and robots.txt is fetched under the same rules as a page.  Apart from the run so
that how a host is spaced can be read, and changed, in one place; it knows nothing of pages.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

from ..cache import take_slot
from ..cache.entry import Entry
from ..fetch import FetchResult, fetch_robots
from ..robot import Robot
from . import urls
from .frontier import Frontier, Lease
from .records import Ledger
from .tasks import cancelled

SLOW_META = "slow:"  # frontier meta: until when an authority asked (44) for nothing more, fleet-wide


class Pacing:
    """The turns of one worker's requests: ``turn`` waits for a slot, ``holding`` holds the host.

    ``shared``: the frontier is a fleet's (hosts are held, and a 44 told, for the other workers);
    ``lease``: seconds a lease is extended by when a slot is claimed under it; ``ledger``: where a
    robots.txt request is written before it leaves."""

    def __init__(self, frontier: Frontier, ledger: Ledger, shared: bool, lease: float) -> None:
        self.frontier = frontier
        self.ledger = ledger
        self.shared = shared
        self.lease = lease
        self.asked: dict[str, float] = {}  # authority -> the end of a 44's wait, until a request honours it
        self.honoured: dict[str, float] = {}  # authority -> the last such end a request of ours honoured

    async def slowed(self, auth: str, until: float) -> None:
        """A 44 from ``auth``: nothing more goes to it before ``until``, from this worker and, told
        through the frontier, from every worker of the fleet."""
        self.asked[auth] = until
        if self.shared:
            await self.frontier.set_meta(SLOW_META + auth, repr(until))

    async def turn(
        self, auth: str, spacing: float, entry: Entry | None = None, lease: Lease | None = None
    ) -> float | None:
        """Wait for this worker's turn at ``auth``, ``spacing`` after the last request to it by
        any worker, and after any wait the server asked for (a 44 here, or told by another worker
        through the frontier; robots.txt's Retry-After).  Returns the end of the server's wait
        that this request is the first of ours to honour (the ledger's ``not_before``), or None.

        A 44 another worker met after this one booked its slot would not hold this request back,
        so on a fleet the frontier is asked once more, when the slot comes, before it is claimed.

        ``lease``: the lease the request is made under; the slot is claimed only while it is held
        (and it is extended in the same step), else LeaseLost and no request leaves."""
        until = self.asked.get(auth, 0.0)
        if entry is not None and entry.outcome == "retry" and entry.retry_after:
            until = max(until, entry.fetched_at + entry.retry_after)

        async def told() -> float:
            nonlocal until
            slowed = float(await self.frontier.get_meta(SLOW_META + auth) or 0.0)
            until = max(until, slowed)
            return slowed - time.time()

        held = (lease.url, lease.token, self.lease) if lease is not None and lease.token else None
        await take_slot(self.frontier, auth, spacing, until - time.time(), told=told if self.shared else None,
                        held=held)  # fmt: skip
        if until <= 0 or self.honoured.get(auth) == until:
            return None
        self.honoured[auth] = until
        self.asked.pop(auth, None)
        return until

    @contextlib.asynccontextmanager
    async def holding(self, auth: str, spacing: float) -> AsyncIterator[Callable[[], None]]:
        """One request at a time per host, fleet-wide, spaced from when it truly ended.

        Yields the callback the client calls once its connection is made: ``auth``'s start is
        stamped then (claimed with no spacing), in one process as in a fleet, so the next request
        is spaced from when this one truly left, not from when its slot was granted (the name
        lookup, the connection and a busy event loop come in between, and a kill may come
        before the end).

        While the request runs and its answer is read, ``auth`` is claimed with no spacing every
        half spacing (such a claim always succeeds, as if a request started then), and once more
        at the end, so no other worker's claim succeeds until ``spacing`` after this request is
        done with: by then a 44 is in the frontier for the next worker to see, and a request
        that left late (its worker's event loop busy between claim and send) is no closer to the
        next.  A single process needs none of it: its one task per host sends the next request
        only after this one's answer."""
        holder = self.hold(auth, spacing)
        stamps: list[asyncio.Future[float]] = []

        def connected() -> None:
            stamps.append(asyncio.ensure_future(self.frontier.claim(auth, 0.0)))

        try:
            yield connected
        finally:
            if holder is not None:
                await cancelled(holder)
            if stamps:
                await asyncio.wait(stamps)  # its failure is the next call's to meet
            if holder is not None:
                await self.frontier.claim(auth, 0.0)

    def hold(self, auth: str, spacing: float) -> asyncio.Task[None] | None:
        """On a fleet, claim ``auth`` with no spacing now and every half spacing, until cancelled."""
        if not self.shared or spacing <= 0:
            return None

        async def hold() -> None:
            while True:
                await self.frontier.claim(auth, 0.0)
                await asyncio.sleep(spacing / 2)

        return asyncio.ensure_future(hold())

    async def fetch_robots(self, location: str, robot: Robot) -> FetchResult:
        """robots.txt fetched for the robot as it would fetch it, each request having its turn as a
        page has (the host's spacing as known, else --min-delay; a 44 the fleet was told; on a
        fleet, the host held while it runs) and written to the ledger before it leaves: a Gopher
        server's several selectors and a Gemini redirect's hops are each a request.  Its hosts
        are claimed once more when it has ended: the next request, often the first page, is
        spaced from the end of this one, whatever its name lookup took before it left."""
        asked: list[str] = []
        honoured = await self.turn(urls.authority(location), robot.delay(location))
        holder: asyncio.Task[None] | None = None

        async def before(url: str) -> None:
            nonlocal honoured, holder
            auth, spacing = urls.authority(url), robot.delay(url)
            if holder is not None:  # the one before has had its answer
                await cancelled(holder)
            if asked:  # the first had its turn before the fetch's deadlines began
                honoured = await self.turn(auth, spacing)
            asked.append(auth)
            self.ledger.note(url, "robots", None, spacing, honoured)
            holder = self.hold(auth, spacing)

        try:
            return await fetch_robots(location, robot.agent, robot.timeout, robot.max_bytes,
                                      spacing=robot.min_delay, before=before)  # fmt: skip
        finally:
            if holder is not None:
                await cancelled(holder)
            for auth in dict.fromkeys(asked):
                await self.frontier.claim(auth, 0.0)
