"""``MANNERS_PACING = "redis://..."``: one request slot per authority for a whole fleet of Scrapy processes.

Without it, each Scrapy process keeps a robots.txt's Crawl-delay on its own download
slot, so N processes crawling one host (scrapy-redis workers, say) send N times what the
file asks.  With it, every request books its authority's next slot in Redis before it
leaves, the same booking as :meth:`manners.Robot.wait` (``book``, sleep, ``claim``) under
the same key (scheme, host and port), so Scrapy processes and manners robots sharing
the Redis keep one spacing together.  Slots are kept on the Redis server's clock: the
machines need not agree on the time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from ..cache import CacheError, Store, take_slot

log = logging.getLogger(__name__)

SCHEMES = ("redis://", "rediss://")
PATIENCE = 10.0  # seconds a request waits for an unreachable Redis before it is dropped
FIRST_PAUSE, LAST_PAUSE = 0.1, 1.0  # between tries while Redis is unreachable


class PacingError(Exception):
    """No fleet-wide slot could be had (Redis unreachable for longer than the patience)."""


class FleetPacing:
    """Book each request's slot in a shared store; wait for it; claim it.

    While the store fails, requests retry for ``patience`` seconds counted from the
    first failure, shared by every request of the process: once an outage has lasted
    that long, a request tries once and gives up at once, so a Redis that stays down
    drops requests quickly instead of holding each one for the whole patience.  The
    first success after an outage ends it.
    """

    def __init__(self, store: Store, patience: float = PATIENCE) -> None:
        self.store = store
        self.patience = patience
        self._down_since: float | None = None  # monotonic time of the failure that began an outage

    @property
    def location(self) -> str:
        return self.store.location

    async def wait(self, key: str, spacing: float) -> float:
        """Return when a request to authority ``key`` may leave, ``spacing`` seconds after the fleet's last.

        Returns the seconds waited.  Raises :class:`PacingError` when the store stays
        unreachable; no request may then leave, since it could not be paced.
        """
        start = time.monotonic()
        await take_slot(self, key, spacing)
        return time.monotonic() - start

    async def book(self, key: str, spacing: float, wait: float = 0.0) -> float:
        """The store's ``book``, retried through an outage (see the class)."""
        return await self._retry(lambda: self.store.book(key, spacing, wait))

    async def claim(self, key: str, spacing: float) -> float:
        """The store's ``claim``, retried through an outage."""
        return await self._retry(lambda: self.store.claim(key, spacing))

    async def _retry(self, call: Callable[[], Awaitable[float]]) -> float:
        pause = FIRST_PAUSE
        while True:
            try:
                answer = await call()
            except CacheError as exc:
                now = time.monotonic()
                if self._down_since is None:
                    self._down_since = now
                    log.warning("manners pacing: requests wait up to %g s for Redis: %s", self.patience, exc)
                left = self._down_since + self.patience - now
                if left <= 0:
                    raise PacingError(f"no fleet-wide request slot: {exc}") from None
                await asyncio.sleep(min(pause, left))
                pause = min(pause * 2, LAST_PAUSE)
            else:
                if self._down_since is not None:
                    log.info("manners pacing: the Redis at %s answers again", self.location)
                    self._down_since = None
                return answer

    async def close(self) -> None:
        await self.store.close()


def check_location(value: object) -> str:
    """``MANNERS_PACING`` as given, if it names a Redis server; else a ValueError that says what is wanted."""
    if not isinstance(value, str) or not value.startswith(SCHEMES):
        raise ValueError(
            "a redis:// or rediss:// URL is needed (the Redis every Scrapy process of the fleet"
            f" shares), not {value!r}"
        )
    return value
