"""Robot: the high-level face.  Fetches through a shared cache, decides, and paces.

A robot keeps the policies it has read in memory until they expire; the store
(memory, SQLite or Redis) is what several workers share: the cached files, the
one-fetch-per-authority lock, and each authority's next free request slot.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NamedTuple, TypeVar

from .agents import require_token
from .cache import Store, open_store, take_slot
from .cache.entry import FIRST_BACKOFF, TTL, Entry, entry_after, expires, policy_of
from .fetch import FetchResult, fetch_robots, robots_locations
from .fetch.locations import split_authority
from .profiles import get_profile
from .robots import RobotsTxt, asked_spacing

log = logging.getLogger("manners")
T = TypeVar("T")
MAX_POLICIES = 10_000  # parsed policies a Robot keeps in memory (least recently used go first)


class RobotDecision(NamedTuple):
    """A Decision, and the robots.txt behind it."""

    allowed: bool
    line: int | None
    rule: str | None
    reason: str
    profile: str
    robots_url: str  # the robots.txt address for the target's authority
    outcome: str  # of the latest fetch: ok, unavailable, unreachable or retry
    fetched_at: float  # when that fetch was made (epoch seconds)
    expires_at: float  # when the robots.txt will be fetched again
    stale: bool  # the latest fetch failed and an older copy (at most 30 days old) answered


@dataclass(frozen=True)
class Policy:
    """What a robot holds for one authority: the cache entry and the file it means."""

    key: str  # scheme://host:port
    entry: Entry  # as the store holds it: body, outcome, status, fetched_at, expires_at, ...
    robots: RobotsTxt  # the policy in force
    stale: bool  # the latest fetch failed and an older copy answers
    spacing: float  # seconds between requests to the authority, for this robot, when it was read
    #: this robot fetched the entry itself; False: it found it in the store, fetched by another
    #: worker or an earlier run (a crawl's ledger says which, for ``manners crawl audit``)
    fetched: bool = False


class Robot:
    """A robot with manners: ``await robot.wait(url)`` before each request, and only if ``allowed``.

    ``cache`` is ``"memory"``, ``"sqlite"`` (default: a file in the user cache
    directory), ``"sqlite:///path/file.db"`` or a ``redis://`` URL.  Spacing per
    authority is the largest of ``min_delay``, the file's Crawl-delay and
    Request-rate for this robot (one given for a window of the day, such as
    ``1/10s 1820-1940``, only inside that window, in UTC), and a pending wait the server asked for, capped at
    ``max_delay``.  The fetch lock of a worker that died frees itself after
    ``lock_timeout`` (default: the fetch ``timeout`` plus 5 s).  ``profile`` fixes
    how files are read (default: by each URL's scheme).  At most ``max_policies``
    parsed files are held in memory, the least recently used dropped first (the
    store keeps them), so a crawl over a million hosts stays bounded.  ``fetcher``
    replaces how a robots.txt address is fetched (default: :func:`fetch_robots`), for
    robots that must go through their own downloader (the Scrapy middleware); it
    must never raise for what a server or the network does.  After a failed fetch
    robots.txt is tried again ``backoff`` seconds later (default 60), then twice as
    long each time, up to a day.  Gopher's robots.txt selectors are tried
    ``min_delay`` apart, as any two requests to a server.
    """

    def __init__(
        self,
        agent: str = "*",
        roles: Iterable[str] | str = (),
        cache: str = "sqlite",
        *,
        min_delay: float = 1.0,
        max_delay: float = 300.0,
        timeout: float = 30.0,
        max_bytes: int = 512_000,
        ttl: float = TTL,
        lock_timeout: float | None = None,
        profile: str | None = None,
        max_policies: int = MAX_POLICIES,
        fetcher: Callable[[str], Awaitable[FetchResult]] | None = None,
        backoff: float = FIRST_BACKOFF,
    ) -> None:
        require_token(agent)  # TypeError for a non-str; ValueError for a name no group could match
        if min_delay < 0 or max_delay < min_delay:
            raise ValueError("need 0 <= min_delay <= max_delay")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"max_bytes must be a positive number of bytes, not {max_bytes!r}")
        if isinstance(max_policies, bool) or not isinstance(max_policies, int) or max_policies < 1:
            raise ValueError(f"max_policies must be a positive number, not {max_policies!r}")
        self.agent = agent
        self.roles = (roles,) if isinstance(roles, str) else tuple(roles)
        self.store: Store = open_store(cache)
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.ttl = min(ttl, TTL)
        self.lock_timeout = lock_timeout if lock_timeout is not None else timeout + 5.0
        self.profile = get_profile(profile).name if profile is not None else None
        self.max_policies = max_policies
        self.fetcher = fetcher
        if not backoff > 0:
            raise ValueError(f"backoff must be a positive number of seconds, not {backoff!r}")
        self.backoff = backoff
        self._known: OrderedDict[str, Policy] = OrderedDict()  # least recently used first
        self._pending: dict[tuple[str, bool], asyncio.Future[Policy]] = {}  # in flight, by (key, refresh)
        self._capped: set[str] = set()  # authorities whose capped delay was reported (of those in _known)

    async def __aenter__(self) -> Robot:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the store, once the robots.txt fetches still running are cancelled: each lets
        go of the store's fetch lock on its way out, which it cannot do in a closed store."""
        running = list(self._pending.values())
        for fetch in running:
            fetch.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await self.store.close()

    # -- the four questions ------------------------------------------------------------

    async def allowed(self, url: str) -> bool:
        """May this robot fetch ``url``?  Reads robots.txt through the cache when needed."""
        known = await self._policy(url)
        return known.robots.allowed(url, self.agent, self.roles)

    async def decide(self, url: str) -> RobotDecision:
        """Like allowed(), with the deciding rule and where the policy came from."""
        known = await self._policy(url)
        d = known.robots.decide(url, self.agent, self.roles)
        e = known.entry
        return RobotDecision(*d, e.url, e.outcome, e.fetched_at, self._expiry(e), known.stale)

    async def wait(self, url: str) -> float:
        """Return when a request to ``url``'s authority is polite, having booked that slot.

        Returns the seconds waited.  Slots are booked in the store, so every
        worker sharing it keeps the spacing together.
        """
        start = time.monotonic()
        known = await self._policy(url)
        key = _key(url)
        e = known.entry
        not_before = e.fetched_at + e.retry_after if e.outcome == "retry" and e.retry_after else 0.0
        spacing = self._spacing(key, known.robots)  # a Request-rate's window may have opened
        await take_slot(self.store, key, spacing, not_before - time.time())
        return time.monotonic() - start

    def delay(self, url: str) -> float:
        """Seconds between requests to ``url``'s authority (``min_delay`` until its robots.txt is read)."""
        key = _key(url)
        known = self._known.get(key)
        return self._spacing(key, known.robots) if known is not None else self.min_delay

    # -- reading the policy --------------------------------------------------------------

    def _spacing(self, key: str, robots: RobotsTxt) -> float:
        read_as = self.profile or key  # the key's scheme picks the profile, as for its targets
        spacing = max(self.min_delay, asked_spacing(robots, self.agent, self.roles, profile=read_as))
        if spacing > self.max_delay:
            if key not in self._capped:
                self._capped.add(key)
                log.warning("%s asks for %.10g s between requests; capped at max_delay=%g s", key, spacing,
                            self.max_delay)  # fmt: skip
            return self.max_delay
        return spacing

    async def policy(self, url: str, *, refresh: bool = False) -> Policy:
        """The policy for ``url``'s authority, read through the cache when needed.

        ``refresh=True`` fetches robots.txt anew even while the cached copy is fresh
        (an admin who just edited it wants the new answer); it still goes through the
        store's fetch lock, so concurrent refreshes of one authority make one fetch.
        """
        return await self._policy(url, refresh)

    async def _policy(self, url: str, refresh: bool = False) -> Policy:
        key = _key(url)
        if not refresh:
            known = self._known.get(key)
            if known is not None and time.time() < self._expiry(known.entry):
                self._known.move_to_end(key)
                return known
        slot = (key, refresh)
        pending = self._pending.get(slot)
        if pending is None:  # one fetch per authority in this process; the store's lock does the rest
            since = time.time() if refresh else None
            # Usually another worker, or an earlier run, has read it: a fresh entry in the
            # store is taken here, without the task that a fetch shared by callers needs.
            entry = await self.store.get(key)
            if not refresh and entry is not None and time.time() < self._expiry(entry):
                return self._remember(key, entry)
            pending = self._pending.get(slot)  # another caller may have begun while this one read
            if pending is None:
                pending = self._pending[slot] = asyncio.ensure_future(self._refresh(key, url, entry, since))
                pending.add_done_callback(functools.partial(self._forget, slot))
        return await asyncio.shield(pending)

    def _expiry(self, entry: Entry) -> float:
        """When ``entry`` must be fetched again for this robot: its own expiry, or this robot's
        ``ttl`` after it was read, whichever comes first.  The store is shared (other robots, other
        runs), so an entry another robot read with a longer life is not kept past this one's
        ``ttl`` (``manners crawl --robots-max-age``).  A failed fetch keeps its backoff: a server's
        Retry-After is honoured whatever the ttl."""
        return expires(entry, time.time(), self.ttl)  # one from a clock that ran ahead: expired

    def _forget(self, slot: tuple[str, bool], done: asyncio.Future[Policy]) -> None:
        if self._pending.get(slot) is done:
            del self._pending[slot]

    async def _refresh(self, key: str, url: str, entry: Entry | None, since: float | None) -> Policy:
        """The policy through the store, from ``entry`` as just read from it; ``since``: only an
        entry fetched after it will do."""

        def due(entry: Entry | None) -> bool:
            if entry is None or time.time() >= self._expiry(entry):
                return True
            return since is not None and entry.fetched_at < since

        store = self.store
        token = secrets.token_hex(8)
        give_up = time.time() + self.lock_timeout + self.timeout
        pause = 0.02
        fetched = False
        while due(entry):
            if await store.acquire(key, token, self.lock_timeout) or time.time() > give_up:
                try:
                    entry = await store.get(key)  # another worker may have just fetched it
                    if due(entry):
                        entry = await self._fetch(url, entry)
                        fetched = True
                        await store.put(key, entry)
                finally:
                    await store.release(key, token)
                break
            await asyncio.sleep(pause)  # another worker holds the lock: wait for its entry
            pause = min(pause * 2, 0.5)
            entry = await store.get(key)
        assert entry is not None
        return self._remember(key, entry, fetched)

    def _remember(self, key: str, entry: Entry, fetched: bool = False) -> Policy:
        """The policy an entry holds, kept in memory as the most recently used; ``fetched``: by
        this robot (else found in the store)."""
        robots, stale = policy_of(entry, time.time(), self.profile)
        known = Policy(key, entry, robots, stale, self._spacing(key, robots), fetched)
        self._known[key] = known
        self._known.move_to_end(key)
        while len(self._known) > self.max_policies:
            dropped, _ = self._known.popitem(last=False)
            self._capped.discard(dropped)
        return known

    async def _fetch(self, url: str, previous: Entry | None) -> Entry:
        """Fetch robots.txt; Gemini certificates are checked against those the store remembers."""
        known_hosts = dict(previous.known_hosts) if previous is not None else {}
        location = robots_locations(url)[0]
        if self.fetcher is not None:
            result = await self.fetcher(location)
        else:
            result = await fetch_robots(location, self.agent, self.timeout, self.max_bytes,
                                        known_hosts=known_hosts, spacing=self.min_delay)  # fmt: skip
        return entry_after(previous, result, time.time(), self.ttl, known_hosts, self.backoff)


class SyncRobot:
    """Robot for scripts: the same calls, blocking.  Owns an event loop; close() it when done.

    Each call runs the loop until its answer is in; a call cut short (Ctrl-C, a
    signal) and close() cancel what was left running, so no task outlives its loop.
    Inside a running event loop (async code, a notebook) it cannot block: use Robot.
    """

    def __init__(self, agent: str = "*", roles: Iterable[str] | str = (), cache: str = "sqlite",
                 **options: Any) -> None:  # fmt: skip
        _no_running_loop()
        self._loop = asyncio.new_event_loop()
        try:
            self.robot = Robot(agent, roles, cache, **options)
        except BaseException:
            self._loop.close()
            raise

    def allowed(self, url: str) -> bool:
        return self._run(self.robot.allowed, url)

    def decide(self, url: str) -> RobotDecision:
        return self._run(self.robot.decide, url)

    def wait(self, url: str) -> float:
        return self._run(self.robot.wait, url)

    def policy(self, url: str, *, refresh: bool = False) -> Policy:
        return self._run(functools.partial(self.robot.policy, refresh=refresh), url)

    def delay(self, url: str) -> float:
        return self.robot.delay(url)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        _no_running_loop()
        try:
            self._loop.run_until_complete(self.robot.close())
        finally:
            self._cancel_left()
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()

    def _run(self, call: Callable[[str], Coroutine[Any, Any, T]], url: str) -> T:
        _no_running_loop()
        if self._loop.is_closed():
            raise RuntimeError("this SyncRobot is closed")
        task = self._loop.create_task(call(url))
        try:
            return self._loop.run_until_complete(task)
        except BaseException:
            self._cancel_left()  # interrupted: the call's task and the fetch it shields
            raise

    def _cancel_left(self) -> None:
        left = asyncio.all_tasks(self._loop)
        for task in left:
            task.cancel()
        if left:
            self._loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))

    def __enter__(self) -> SyncRobot:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self.close()


def _no_running_loop() -> None:
    """SyncRobot blocks a thread to run its own loop: not possible where a loop already runs."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "SyncRobot cannot run inside a running event loop (async code, a Jupyter notebook):"
        " use manners.Robot there, as in `async with manners.Robot(...) as robot:"
        " await robot.allowed(url)`"
    )


def _key(url: str) -> str:
    """The cache key of a URL: scheme, host and port (RFC 9309: robots.txt governs one authority)."""
    scheme, sep, rest = url.partition("://")
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    return _authority_key(scheme.lower() + sep + rest[:end]) if sep else _authority_key(url)


@functools.lru_cache(maxsize=4096)
def _authority_key(origin: str) -> str:
    host, port = split_authority(origin)
    shown = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets, as in a URL
    return f"{origin.split(':', 1)[0]}://{shown}:{port}"
