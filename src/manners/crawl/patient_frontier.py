"""``Patient``: a fleet's frontier waited for through an outage of its Redis, for a while.

Kept apart from the frontiers it wraps: it knows only the ``Frontier`` protocol and
``FrontierError``, so it wraps either implementation, and the crawler wraps a shared frontier in
it without this module importing Redis or SQLite code.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, TypeVar

from ..cache import Held, Hold
from .frontier_errors import CrawlLost, FrontierError, retrieved
from .frontier_protocol import Frontier
from .leases import Lease, Revisits, Visit

T = TypeVar("T")
log = logging.getLogger("manners.crawl")


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

    async def ready_authorities(
        self, now: float, exclude: Collection[str], limit: int, *, leased: bool | None = None
    ) -> list[str]:
        return await self._call(lambda: self.inner.ready_authorities(now, exclude, limit, leased=leased))

    async def busiest(self, n: int) -> list[tuple[str, int]]:
        return await self._call(lambda: self.inner.busiest(n))

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

    async def recover(
        self, owner: str | None = None, running: float = 0.0, until: Mapping[str, float] | None = None
    ) -> int:
        return await self._call(lambda: self.inner.recover(owner, running, until))

    def renew(self, urls: Collection[str], owner: str, ttl: float) -> Awaitable[list[str]]:
        todo = dict(urls) if isinstance(urls, Mapping) else list(urls)
        return self._call(lambda: self.inner.renew(todo, owner, ttl))

    def reclaim(self) -> Awaitable[int]:
        return self._call(self.inner.reclaim)

    def book(self, authority: str, spacing: float, wait: float = 0.0) -> Awaitable[float]:
        return self._call(lambda: self.inner.book(authority, spacing, wait))

    def claim(
        self, authority: str, spacing: float, held: Held | None = None, hold: Hold | None = None
    ) -> Awaitable[float]:
        if held is None and hold is None:
            return self._call(lambda: self.inner.claim(authority, spacing))
        return self._call(lambda: self.inner.claim(authority, spacing, held, hold))

    def renew_hold(self, authority: str, token: str, ttl: float, *, stamp: bool = False) -> Awaitable[bool]:
        return self._call(lambda: self.inner.renew_hold(authority, token, ttl, stamp=stamp))

    def release_hold(
        self, authority: str, token: str, spacing: float, ago: float = 0.0, pause: float = 0.0
    ) -> Awaitable[bool]:
        return self._call(lambda: self.inner.release_hold(authority, token, spacing, ago, pause))

    def slow(self, authority: str, spacing: float, pause: float) -> Awaitable[None]:
        return self._call(lambda: self.inner.slow(authority, spacing, pause))

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
        done.add_done_callback(retrieved)
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


if TYPE_CHECKING:
    _conforms: type[Frontier] = Patient  # mypy checks the protocol is met
