"""The crawl frontier on Redis: one crawl shared by a fleet of workers on many machines.

``RedisFrontier`` speaks the same ``Frontier`` protocol as ``SQLiteFrontier``, with the same
meaning, so the crawler runs unchanged on either.  What a fleet adds: leases expire on the
Redis server's clock and any live worker returns a dead one's to the queue (``reclaim``), request
slots are booked fleet-wide per authority (``book``/``claim``), and workers leave a heartbeat.

Layout (``N`` is the crawl's name; every key starts with it).  An authority belongs to one of
``SHARDS`` shards (CRC-32 of its name), and all keys of a shard carry the hash tag ``{N:k}``:

- ``N:{N:k}:u:AUTH``  hash, URL -> its record, packed with cmsgpack: state, depth, attempts,
  redirects, not_before, id, parent, outcome, and a revisiting crawl's visits, interval, digest,
  capture_at, misses (records written before those five existed read them as absent).  The
  seen-set: every URL of AUTH, in any state.
- ``N:{N:k}:q:AUTH``  sorted set of AUTH's queued URLs, scored by not_before; each member is the
  URL behind its id in ten digits, so ties go in the order the URLs were added (as in SQLite).
- ``N:{N:k}:a:AUTH``  hash: ``seq`` (last id), ``done``, ``kept`` (URLs settled and queued again
  for a revisit), ``turn`` (last leased, server time), ``parked`` (until, the crawler's clock) and
  ``reason``.
- ``N:{N:k}:due``     sorted set, AUTH -> when its next URL is ready (its earliest not_before or
  its park's end); only authorities with something queued.
- ``N:{N:k}:turn``    sorted set, the same authorities -> when they were last leased.
- ``N:{N:k}:size``    sorted set, the same authorities -> how many URLs each has queued
  (``busiest``: the progress display's and status's biggest hosts).
- ``N:{N:k}:parked``  sorted set, AUTH -> end of its park.
- ``N:{N:k}:revisit`` sorted set, URL -> due, of the queued URLs visited before (for status).
- ``N:{N:k}:leases``  sorted set, URL in flight -> lease expiry (server time);
  ``N:{N:k}:held`` hash, URL in flight -> (token, owner, AUTH).
- ``N:{N:k}:outbox``  hash, page URL -> JSON of its links bound for other shards, until queued.
- ``N:{N:k}:counts``  hash: ``queued``, ``in_flight``, ``done`` and ``o:OUTCOME`` (``o:pages``).
- ``N:{N:k}:auths``   set of the shard's authorities (walked by ``requeue`` only).
- ``N:{N:k}:slot:AUTH`` and ``N:{N:k}:start:AUTH``: the request slots of ``book`` and ``claim``;
  ``N:{N:k}:hold:AUTH``: the token of the request holding AUTH, expiring on its own.
- ``N:{N:k}:crawl``   the shard's marker: when the crawl was made (see "A Redis that forgets").
- ``N:meta``, ``N:hosts`` (certificate fingerprints), ``N:workers`` (heartbeats),
  ``N:layout`` (the shard count the crawl was made with) and ``N:lost`` (why the crawl was
  found lost, if it was): single keys.

Why an authority lives in its shard's slot rather than in a slot of its own: every change is one
Lua script on one node, and that script updates the shard's indexes (``due``, ``turn``,
``leases``) and counters in the same atomic step as the URL records.  The fleet-wide indexes
are then exact, never a hint that a worker dying between two calls could leave stale (an
authority never leased again, a dead worker's lease never reclaimed), and a fleet-wide question
(which authorities are ready, which leases expired, the counts) asks ``SHARDS`` keys, with
neither cross-slot scripts nor KEYS/SCAN.  The price: a crawl's data lives in ``SHARDS`` slots,
so at most that many cluster nodes share its load (16 is plenty for the 3 to 6 masters a fleet
uses; ``N:layout`` refuses a crawl made with another count).

A page settles with its links in one step: the settling script marks the URL done and queues
the links of its own shard (a page's own site, above all) atomically; the links of other shards
go to the shard's outbox in that same script.  The worker then queues them, one script per
shard (deduplicated against the seen-sets, so repeating it is harmless), and deletes the entry.
A worker dying in between leaves the entry, which the next ``reclaim`` of any worker replays; a
worker that lost the settling's reply and settles again finds the page settled and the entry
there, and queues the links itself.

Clocks: lease expiries and turns are the server's (``TIME`` inside the scripts), so the workers'
clocks need not agree for leases; not_before, parks and the ``now`` of ``ready_authorities`` are
epochs on the crawler's clock, as given (they come from its own time.time()).

Fencing: each lease has a token (in ``held``).  A request slot under a lease is claimed by a
script that checks the token and extends the lease in the same step (``claim`` with ``held``), so
a request leaves only while its lease is held; a settling, a retry or a renewal naming a token no
longer held changes nothing (``LeaseLost``, or the URL among those renewal reports lost).

Holds: one request at a time per host, fleet-wide.  A claim naming a hold takes ``hold:AUTH``
(its token, expiring on its own) in the same script as the slot and the lease check; no other
claim naming a hold succeeds while it is there; ``renew_hold`` extends it while the request runs
and ``release_hold`` ends it, stamping AUTH's start and next slot on the server's clock in the
same script, so the next request is spaced from when this one ended.  A 44 puts AUTH's start
where its wait ends (``slow``), so every claim reads it in the step that claims.  A stale token
renews and releases nothing; a dead worker's hold expires.

A Redis that forgets: making a crawl writes a marker in each shard (``N:{N:k}:crawl``, read with
EXISTS, which leaves its LRU clock alone, so an eviction takes it among the first), and every
script that leases, settles, claims, renews or counts checks it before writing anything, as a
lease checks its URL's record: a crawl whose keys are gone is ``CrawlLost``, never an empty
crawl, and ``N:lost`` says so to the next worker and to ``status``.

Faults: every call has socket deadlines and none is retried (a script whose reply was lost may
have been applied): a Redis that is down makes calls raise ``FrontierError``, and the crawler
decides whether to wait.  Each script is safe to repeat: settling a settled URL changes nothing,
queueing a known URL does nothing, a retry of a URL not in flight does nothing.  A refusal (a
password, a command an ACL denies) is a ``lasting`` FrontierError, not waited out.  Run Redis with
``appendonly yes`` (and ``appendfsync always`` to survive a power cut, not just a restart):
``durability`` reads what a Redis keeps, and ``manners crawl`` refuses one that would forget.

Memory: one hash field per URL (its record, a dozen bytes plus its parent), its queue entry while
queued, its lease while in flight; the worker keeps nothing of the URL set in Python.

Where the parts are: the Lua scripts in ``redis_scripts``, the shard arithmetic and fan-out in
``redis_shards``, the clients and their failures in ``redis_client``, the settings check in
``redis_durability`` (``durability`` is re-exported here); the values and the protocol shared
with ``SQLiteFrontier`` in ``leases``, ``frontier_errors`` and ``frontier_protocol``.  None of
them imports ``frontier``, which opens this module: no import circle.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, TypeVar

from ..cache import Held, Hold, LeaseLost
from ..cache.redis import BOOK, CLAIM
from . import redis_scripts as lua
from .frontier_errors import CrawlLost, FrontierError, retrieved
from .frontier_protocol import WORKERS_KEPT
from .leases import DONE, IN_FLIGHT, QUEUED, Lease, Revisits, Visit
from .redis_client import connect, failures
from .redis_durability import durability
from .redis_shards import LAYOUT, SHARDS, pairs_of, per_shard, shard_of, together
from .urls import authority

if TYPE_CHECKING:
    from .frontier_protocol import Frontier

__all__ = ["SHARDS", "WORKERS_KEPT", "KnownHosts", "RedisFrontier", "durability", "open_redis_frontier"]

T = TypeVar("T")

_CHUNK = 1000  # URLs queued per script call: a big add_many must not hold Redis for long
_ALL = "\0all"  # the ordering key of the changes that touch every authority
_MAKING = 5.0  # seconds a joining worker waits for the markers another worker is writing
_CLOCKS = 5.0  # seconds the clocks of a Cluster's nodes may differ by


def _partly(stamps: list[float | None]) -> bool:
    """Some markers there and some not."""
    return None in stamps and any(stamp is not None for stamp in stamps)


class RedisFrontier:
    """The ``Frontier`` on Redis or a Redis Cluster (see the module docstring for its layout).

    Changes are asked for when called, as in SQLite: each waits for the changes asked for
    earlier, through this object, on the authorities it touches (its URL's and its links'), so a
    page settled and the next lease asked for before either is awaited are applied in that order;
    changes on other authorities go at once, side by side.
    """

    def __init__(
        self,
        url: str,
        name: str,
        max_queued: int | None = None,
        *,
        timeout: float = 5.0,
        authority_of: Callable[[str], str] = authority,
    ) -> None:
        if not name or "{" in name or "}" in name:
            raise FrontierError(
                f"bad crawl name {name!r} for a Redis frontier: it must be non-empty, without braces."
            )
        self.name = name
        self.max_queued = max_queued  # URLs queued for one authority at most; more are dropped
        self.dropped = 0  # URLs this worker did not queue because their authority's queue was full
        self._authority_of = authority_of
        self._prefixes = [f"{name}:{{{name}:{k}}}:" for k in range(SHARDS)]
        self._last: dict[str, asyncio.Task[Any]] = {}  # per authority: the last change asked for
        self.location, self._cluster, self._redis, self._sync = connect(url, timeout)
        since = self._server_time()
        made = self._check(lambda: self._sync.set(f"{name}:layout", LAYOUT, nx=True))
        layout = self._check(lambda: self._sync.get(f"{name}:layout"))
        if layout != LAYOUT:
            raise FrontierError(
                f"the crawl {name!r} at {self.location} was made with {layout}, not {LAYOUT}."
            )
        self._mark(bool(made), since)
        script = self._redis.register_script
        self._book, self._claim, self._heartbeat = script(BOOK), script(CLAIM), script(lua.HEARTBEAT)

        def shard(body: str) -> Any:
            return script(lua.LIB + body)

        self._add_script, self._lease_script, self._settle = (
            shard(lua.ADD),
            shard(lua.LEASE),
            shard(lua.SETTLE),
        )
        self._retry, self._reclaim, self._renew = shard(lua.RETRY), shard(lua.RECLAIM), shard(lua.RENEW)
        self._requeue, self._park, self._parked = shard(lua.REQUEUE), shard(lua.PARK), shard(lua.PARKED)
        self._ready, self._oldest, self._due = shard(lua.READY), shard(lua.OLDEST), shard(lua.DUE)
        self._counts, self._outbox = shard(lua.COUNTS), shard(lua.OUTBOX)
        self._held, self._busiest = shard(lua.HELD), shard(lua.BUSIEST)
        self._revisit_settled, self._revisits = shard(lua.REVISIT_SETTLED), shard(lua.REVISITS)
        self._claim_held = shard(lua.CLAIM_HELD)
        self._renew_hold, self._release_hold = shard(lua.RENEW_HOLD), shard(lua.RELEASE_HOLD)
        self._slow = shard(lua.SLOW)

    def _mark(self, made: bool, since: float) -> None:
        """The crawl's markers, one per shard (``N:{N:k}:crawl``), written when the crawl is made and
        checked by the scripts from then on: a Redis that forgot the crawl (restarted without its
        data, keys evicted) is told from an empty crawl.  A crawl made before markers existed gets
        them now; one that was declared lost is refused.

        Workers started together race here, so markers are judged by when they were written (the
        server's clock): the worker that made the crawl (``since``: just before it did) accepts
        markers a worker joining at once wrote after that, and refuses older ones, left by an
        earlier crawl of this name whose other keys Redis lost; a joining worker that finds some
        markers and not others waits a moment for the worker writing them, then calls the crawl
        lost if they stay incomplete."""
        said = self._check(lambda: self._sync.get(f"{self.name}:lost"))
        if said is not None:
            raise CrawlLost(str(said))
        markers = [prefix + "crawl" for prefix in self._prefixes]
        stamps = self._stamps(markers)
        if made:
            if any(stamp is not None and stamp < since - _CLOCKS for stamp in stamps):
                raise self._lost_error()
        else:
            deadline = time.monotonic() + _MAKING
            while _partly(stamps) and time.monotonic() < deadline:
                time.sleep(0.05)
                stamps = self._stamps(markers)
            if _partly(stamps):
                raise self._lost_error()
        if None in stamps:  # a new crawl, or one made by an older manners: from now on it is watched
            stamp = repr(self._server_time())
            for key, there in zip(markers, stamps, strict=True):
                if there is None:
                    self._check(lambda key=key: self._sync.set(key, stamp, nx=True))  # type: ignore[misc]

    def _stamps(self, markers: list[str]) -> list[float | None]:
        """When each marker was written (0 for a value that is no time), None where it is missing."""
        stamps: list[float | None] = []
        for key in markers:
            value = self._check(lambda key=key: self._sync.get(key))  # type: ignore[misc]
            try:
                stamps.append(None if value is None else float(value))
            except (TypeError, ValueError):
                stamps.append(0.0)
        return stamps

    def _server_time(self) -> float:
        """The Redis server's clock (on a Cluster, the node redis-py asks), so markers written by
        workers on different machines are compared on one clock."""
        now = self._check(self._sync.time)
        if isinstance(now, dict):  # a client that asks every node
            now = next(iter(now.values()))
        return float(now[0]) + float(now[1]) / 1e6

    def _lost_error(self) -> CrawlLost:
        return CrawlLost(
            f"the crawl {self.name!r} at {self.location} has lost its data in Redis (its marker keys or"
            " records are gone: Redis restarted without them, or evicted keys under maxmemory), so it"
            " cannot go on: start it again under a new --name, on a Redis that keeps its data"
        )

    # -- adding and settling ------------------------------------------------------------------

    def add(self, url: str, depth: int, parent: str | None = None, redirects: int = 0) -> Awaitable[bool]:
        name = self._authority_of(url)
        return self._ordered({name}, lambda: self._add([(name, url)], depth, parent, redirects, bool))

    def add_many(
        self, urls: Iterable[str], depth: int, parent: str | None = None, redirects: int = 0
    ) -> Awaitable[list[str]]:
        pairs = [(self._authority_of(url), url) for url in urls]
        return self._ordered(
            {name for name, _ in pairs}, lambda: self._add(pairs, depth, parent, redirects, list)
        )

    def lease(self, authority: str, owner: str, ttl: float) -> Awaitable[Lease | None]:
        async def take() -> Lease | None:
            args = (authority, owner, ttl, time.time(), secrets.token_hex(8))
            got = await self._run(self._lease_script, shard_of(authority), *args)
            if got is None:
                return None
            url, depth, attempts, parent, redirects, token, visits, interval, digest, at, misses, n = got
            return Lease(url, int(depth), int(attempts), parent, int(redirects), token, int(visits),
                         _float(interval), digest, _float(at), int(misses), int(n))  # fmt: skip

        return self._ordered({authority}, take)

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
        """Settle ``url`` and queue its links (see the module docstring: outbox), idempotent.

        Returns how many links were new; 0 when ``url`` was settled already, unless the call
        settling it lost its reply before queueing all its links: then this one queues them.
        ``token`` (or ``visit.token``): the lease settled; LeaseLost, nothing changed, when it is
        no longer held.  ``repeat``: the call before lost its reply (its settling may be done)."""
        token = token or (visit.token if visit is not None else "")
        name = self._authority_of(url)
        pairs = [(self._authority_of(link), link) for link in links]

        async def settle() -> int:
            shard = shard_of(name)
            here = [pair for pair in pairs if shard_of(pair[0]) == shard]
            away = [pair for pair in pairs if shard_of(pair[0]) != shard]
            outbox = {"depth": depth, "redirects": redirects, "parent": url, "links": [u for _, u in away]}
            pending, codes, settled = await self._run(
                self._settle, shard, name, url, outcome, int(page), json.dumps(outbox) if away else "",
                *lua.visit_args(visit), token, int(repeat), *self._add_args(depth, url, redirects, here),
            )  # fmt: skip
            if int(settled) < 0:
                raise LeaseLost(f"the lease on {url} is no longer held: its settling was refused")
            new = self._tally(codes)
            if pending and away:
                new += await self._distribute(shard, away, depth, url, redirects)
            return new

        return self._ordered({name, *(n for n, _ in pairs)}, settle)

    async def retry(
        self, url: str, not_before: float, attempt: bool = True, *, token: str = "", repeat: bool = False
    ) -> None:
        name = self._authority_of(url)
        args = (name, url, not_before, int(attempt), token, int(repeat))
        got = await self._ordered({name}, lambda: self._run(self._retry, shard_of(name), *args))
        if int(got) < 0:
            raise LeaseLost(f"the lease on {url} is no longer held: its retry was refused")

    async def requeue(self, outcome: str) -> int:
        return await self._walk(self._requeue, outcome)

    async def revisit_settled(self, due: float) -> int:
        return await self._walk(self._revisit_settled, due)

    async def _walk(self, script: Any, arg: object) -> int:
        """``script`` over every authority's URLs in batches (HSCAN), after every change asked for
        before; how many it moved.  Each batch is atomic, the whole is not, and a repeat finds
        what is left: ``requeue`` and ``revisit_settled`` run once, at the start of a resumed crawl."""

        async def shard(k: int) -> int:
            total = 0
            async for name in self._authorities(k):
                cursor = "0"
                while True:
                    cursor, n = await self._run(script, k, name, arg, cursor)
                    total += int(n)
                    if cursor == "0":
                        break
            return total

        async def walk() -> int:
            return sum(await together(shard(k) for k in range(SHARDS)))

        return await self._ordered({_ALL}, walk)

    async def revisits(self, now: float) -> Revisits:
        found = await self._each_shard(self._revisits, now)
        later = [float(at) for _, at in found if at is not None]
        return Revisits(sum(int(n) for n, _ in found), min(later, default=None))

    # -- leases -------------------------------------------------------------------------------

    async def recover(
        self, owner: str | None = None, running: float = 0.0, until: Mapping[str, float] | None = None
    ) -> int:
        """``owner``'s leases and every expired one back to the queue, as SQLite's; without an
        owner, ``reclaim``: the fleet's other workers may be alive, and their leases stay theirs.
        (``running`` and ``until`` are not needed: a dead worker's holds last a request's deadline.)"""
        return await self._ordered({_ALL}, lambda: self._recover(owner or ""))

    async def reclaim(self) -> int:
        """Every expired lease back to the queue, with one attempt more (its worker died, or hung
        past its lease); and the links of pages settled by a worker that died before queueing
        them.  Any live worker calls it now and then: nothing waits for the dead one."""
        return await self.recover(None)

    async def renew(self, urls: Collection[str], owner: str, ttl: float) -> list[str]:
        """Extend ``owner``'s leases on ``urls`` to ``ttl`` seconds from now (server time); the URLs
        whose lease is no longer held.  ``urls`` may map each URL to its lease's token: then only
        that lease is extended (a URL leased anew to the same owner is not the same lease)."""
        tokens: Mapping[str, str] = urls if isinstance(urls, Mapping) else dict.fromkeys(urls, "")
        by_shard: dict[int, list[str]] = {}
        for url, token in tokens.items():
            by_shard.setdefault(shard_of(self._authority_of(url)), []).extend((url, token))
        found = await together(self._run(self._renew, k, owner, ttl, *mine) for k, mine in by_shard.items())
        return [str(url) for gone in found for url in gone]

    async def oldest_lease(self) -> dict[str, object] | None:
        """The lease expiring first, fleet-wide: ``url``, ``owner`` and ``expires_in`` (seconds,
        negative when overdue), for a display of stuck workers."""
        found = [got for got in await self._each_shard(self._oldest) if got is not None]
        if not found:
            return None
        url, owner, left = min(found, key=lambda got: float(got[2]))
        return {"url": url, "owner": owner, "expires_in": float(left)}

    async def held(self) -> dict[str, int]:
        """Leases held now, by owner, fleet-wide (the sum of each shard's)."""
        found: dict[str, int] = {}
        for flat in await self._each_shard(self._held):
            for owner, n in pairs_of(flat):
                found[str(owner)] = found.get(str(owner), 0) + int(n)
        return found

    # -- authorities --------------------------------------------------------------------------

    async def ready_authorities(
        self, now: float, exclude: Collection[str], limit: int, *, leased: bool | None = None
    ) -> list[str]:
        """Most queued first, then least recently leased (on the server's clock: turns of all the
        fleet's leases); each shard gives its first ``limit`` in turn order (plus its excluded
        ones), merged here."""
        if limit <= 0:
            return []
        skip = set(exclude)
        last = [limit + n for n in per_shard(skip)]
        bottom, top = {None: ("-inf", "+inf"), False: ("-inf", 0), True: ("(0", "+inf")}[leased]
        found = await self._each_shard(self._ready, now, bottom, top, last=last)
        turns = sorted(
            (-int(size), float(t), name)
            for flat in found
            for name, t, size in zip(flat[::3], flat[1::3], flat[2::3], strict=True)
        )
        return [name for _, _, name in turns if name not in skip][:limit]

    async def busiest(self, n: int) -> list[tuple[str, int]]:
        """Each shard's ``n`` biggest (from its ``size`` index), merged: the fleet's ``n`` biggest."""
        if n <= 0:
            return []
        found = await self._each_shard(self._busiest, n)
        sizes = sorted((-int(float(q)), _text(name)) for flat in found for name, q in pairs_of(flat))
        return [(name, -q) for q, name in sizes[:n]]

    async def next_ready_at(self, exclude: Collection[str] = ()) -> float | None:
        skip = set(exclude)
        firsts = await self._each_shard(self._due, last=per_shard(skip))
        due = (float(at) for flat in firsts for name, at in pairs_of(flat) if name not in skip)
        return min(due, default=None)

    async def park(self, authority: str, until: float, reason: str) -> None:
        args = (authority, until, reason, time.time())
        await self._ordered({authority}, lambda: self._run(self._park, shard_of(authority), *args))

    async def parked(self) -> dict[str, tuple[float, str]]:
        found = await self._each_shard(self._parked, time.time())
        return {
            name: (float(until), reason)
            for flat in found
            for name, until, reason in zip(flat[::3], flat[1::3], flat[2::3], strict=True)
        }

    async def host_done(self, authority: str) -> int:
        done, kept = await self._call(self._redis.hmget(self._key("a", authority), "done", "kept"))
        return int(done or 0) + int(kept or 0)

    async def book(self, authority: str, spacing: float, wait: float = 0.0) -> float:
        """The next request slot of ``authority``, fleet-wide: the cache Store's ``book``."""
        return float(await self._call(self._book(keys=[self._key("slot", authority)], args=[spacing, wait])))

    async def claim(
        self, authority: str, spacing: float, held: Held | None = None, hold: Hold | None = None
    ) -> float:
        """Start a request to ``authority`` now if allowed: the cache Store's ``claim``.  ``held``:
        (URL, token, ttl) of the lease the request is made under: granted only while it is held,
        and extended to ``ttl`` in the same script; -1 when it is not.  ``hold``: (token, ttl):
        granted only while no other token holds ``authority``, and held in the same script."""
        if held is None and hold is None:
            return float(await self._call(self._claim(keys=[self._key("start", authority)], args=[spacing])))
        url, token, ttl = held if held is not None else ("", "", 0.0)
        holder, hold_ttl = hold if hold is not None else ("", 0.0)
        args = (authority, spacing, url, token, ttl, holder, hold_ttl)
        return float(await self._run(self._claim_held, shard_of(authority), *args))

    async def renew_hold(self, authority: str, token: str, ttl: float, *, stamp: bool = False) -> bool:
        """The hold ``token`` has on ``authority`` extended to ``ttl`` s from now (server's clock)."""
        args = (authority, token, ttl, "1" if stamp else "")
        return bool(await self._run(self._renew_hold, shard_of(authority), *args))

    async def release_hold(
        self, authority: str, token: str, spacing: float, ago: float = 0.0, pause: float = 0.0
    ) -> bool:
        """The hold ``token`` has on ``authority`` ended; its start (``ago`` seconds before now, or
        ``pause`` less the spacing after now) and next slot stamped on the server's clock."""
        args = (authority, token, spacing, max(0.0, ago), max(0.0, pause))
        return bool(await self._run(self._release_hold, shard_of(authority), *args))

    async def slow(self, authority: str, spacing: float, pause: float) -> None:
        """A 44's wait of ``pause`` seconds from now (server's clock) kept by every claim."""
        await self._run(self._slow, shard_of(authority), authority, spacing, max(0.0, pause))

    # -- figures, workers and memory ----------------------------------------------------------

    async def counts(self) -> dict[str, int]:
        """States under their names; outcomes under theirs (``fetched``, ``disallowed``...).

        Exact, even after crashes: each shard's counters change in the same script as its URLs,
        and the figures are their sum over the shards (each read atomically, the sum not)."""
        figures = {QUEUED: 0, IN_FLIGHT: 0, DONE: 0}
        for flat in await self._each_shard(self._counts):
            for field, n in pairs_of(flat):
                name = field[2:] if field.startswith("o:") else field
                figures[name] = figures.get(name, 0) + int(n)
        return figures

    async def heartbeat(self, worker: str, info: dict[str, object]) -> None:
        """Record that ``worker`` is alive now, on the server's clock (the workers' need not
        agree), with ``info`` (JSON-able); forget those silent for ``WORKERS_KEPT`` seconds."""
        args = [worker, json.dumps(info), WORKERS_KEPT]
        await self._call(self._heartbeat(keys=[f"{self.name}:workers"], args=args))

    async def workers(self) -> dict[str, dict[str, object]]:
        beats = await self._call(self._redis.hgetall(f"{self.name}:workers"))
        seen: dict[str, dict[str, object]] = {}
        for worker, record in sorted(beats.items()):
            beat = json.loads(record)
            seen[worker] = {"last_seen": float(beat["last_seen"]), **beat["info"]}
        return seen

    async def get_meta(self, key: str) -> str | None:
        value = await self._call(self._redis.hget(f"{self.name}:meta", key))
        return None if value is None else str(value)

    async def set_meta(self, key: str, value: str) -> None:
        await self._call(self._redis.hset(f"{self.name}:meta", key, value))

    def known_hosts(self) -> MutableMapping[str, str]:
        return KnownHosts(self)

    async def close(self) -> None:
        pending = set(self._last.values())
        if pending:
            await asyncio.wait(pending)  # what callers were promised is applied first
        await self._redis.aclose()
        self._sync.close()

    # -- machinery ----------------------------------------------------------------------------

    def _key(self, kind: str, authority: str) -> str:
        return f"{self._prefixes[shard_of(authority)]}{kind}:{authority}"

    async def _authorities(self, shard: int) -> AsyncIterator[str]:
        """The authorities of a shard, a batch at a time."""
        cursor = 0
        while True:
            cursor, names = await self._call(
                self._redis.sscan(self._prefixes[shard] + "auths", cursor, count=500)
            )
            for name in names:
                yield name
            if int(cursor) == 0:
                return

    def _ordered(self, names: Collection[str], work: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
        """Start ``work`` now, once the changes asked for earlier on ``names`` are applied (all
        earlier ones for ``_ALL``; and a later change waits for an ``_ALL`` one)."""
        if _ALL in names:
            before = set(self._last.values())
        else:
            before = {self._last[name] for name in (*names, _ALL) if name in self._last}

        async def run() -> T:
            if before:
                await asyncio.wait(before)  # their failures are their callers'
            return await work()

        task = asyncio.ensure_future(run())
        task.add_done_callback(retrieved)
        for name in names:
            self._last[name] = task

        def forget(_: asyncio.Task[T]) -> None:
            for name in names:
                if self._last.get(name) is task:
                    del self._last[name]

        task.add_done_callback(forget)
        return task

    async def _add(
        self,
        pairs: Sequence[tuple[str, str]],
        depth: int,
        parent: str | None,
        redirects: int,
        result: Callable[[list[str]], T],
    ) -> T:
        codes = await self._queue(pairs, depth, parent, redirects)
        return result([url for (_, url), code in zip(pairs, codes, strict=True) if code == 1])

    async def _queue(
        self, pairs: Sequence[tuple[str, str]], depth: int, parent: str | None, redirects: int
    ) -> list[int]:
        """Queue the unknown URLs of (authority, url) ``pairs``, one script per shard and chunk
        (shards side by side); the codes of ``add_urls``, in the order of ``pairs``."""
        by_shard: dict[int, list[int]] = {}
        for i, (name, _) in enumerate(pairs):
            by_shard.setdefault(shard_of(name), []).append(i)
        codes = [0] * len(pairs)

        async def shard(k: int, indexes: list[int]) -> None:
            for start in range(0, len(indexes), _CHUNK):
                part = indexes[start : start + _CHUNK]
                args = self._add_args(depth, parent, redirects, [pairs[i] for i in part])
                for i, code in zip(part, await self._run(self._add_script, k, *args), strict=True):
                    codes[i] = int(code)

        await together(shard(k, indexes) for k, indexes in by_shard.items())
        self._tally(codes)
        return codes

    def _add_args(
        self, depth: int, parent: str | None, redirects: int, pairs: Iterable[tuple[str, str]]
    ) -> list[object]:
        cap = -1 if self.max_queued is None else self.max_queued
        return [
            cap,
            depth,
            redirects,
            int(parent is not None),
            parent or "",
            *(x for pair in pairs for x in pair),
        ]

    def _tally(self, codes: list[int]) -> int:
        """How many of ``add_urls``' codes say new; the dropped ones counted in ``dropped``."""
        self.dropped += codes.count(-1)
        return codes.count(1)

    async def _distribute(
        self, shard: int, pairs: Sequence[tuple[str, str]], depth: int, parent: str, redirects: int
    ) -> int:
        """Queue the links of ``parent``'s outbox entry, then delete it: how many were new."""
        codes = await self._queue(pairs, depth, parent, redirects)
        await self._call(self._redis.hdel(self._prefixes[shard] + "outbox", parent))
        return codes.count(1)

    async def _recover(self, owner: str) -> int:
        moved = await self._each_shard(self._reclaim, owner)
        outboxes = await self._each_shard(self._outbox)
        replays = []
        for shard, entries in enumerate(outboxes):
            for _, body in pairs_of(entries):
                page = json.loads(body)
                pairs = [(self._authority_of(link), link) for link in page["links"]]
                replays.append(
                    self._distribute(shard, pairs, page["depth"], page["parent"], page["redirects"])
                )
        await together(replays)
        return sum(int(n) for n in moved)

    def _run(self, script: Any, shard: int, *args: object) -> Awaitable[Any]:
        """Run a per-shard script on shard ``shard``."""
        prefix = self._prefixes[shard]
        return self._call(script(keys=[prefix + "counts"], args=[prefix, *args]))

    async def _each_shard(self, script: Any, *args: object, last: Sequence[object] = ()) -> list[Any]:
        """Run a per-shard script on every shard (shard k gets ``last[k]`` after ``args``): in one
        pipeline on a single Redis, side by side on a cluster, whose pipelines take no scripts.
        (A call costs the asyncio client some 0.2 ms of CPU: 16 of them would cost 3.)"""
        tails = [[last[k]] if last else [] for k in range(SHARDS)]
        if self._cluster:
            return await together(self._run(script, k, *args, *tail) for k, tail in enumerate(tails))
        # ``async with``: a pipeline that failed before sending (its scripts reloaded after a restart
        # of Redis, and the connection lost) gives its connection back, or is warned of as unclosed.
        async with self._redis.pipeline(transaction=False) as pipe:
            for prefix, tail in zip(self._prefixes, tails, strict=True):
                await script(keys=[prefix + "counts"], args=[prefix, *args, *tail], client=pipe)  # queued
            return list(await self._call(pipe.execute()))

    async def _call(self, pending: Awaitable[T]) -> T:
        import redis.exceptions

        with failures(self.location):
            try:
                return await pending
            except redis.exceptions.ResponseError as exc:
                if lua.LOST not in str(exc):
                    raise
                lost = self._lost_error()
        with contextlib.suppress(Exception):  # said where ``status`` and a joining worker look
            await self._redis.set(f"{self.name}:lost", str(lost))
        raise lost

    def _check(self, call: Callable[[], T]) -> T:
        """A call on the blocking client."""
        with failures(self.location):
            return call()

    async def cap_due(self, latest: float) -> int:
        """Revisits due after ``latest`` brought forward to it, a batch of each shard's ``revisit``
        index at a time (the script checks each URL again, atomically); how many moved."""
        script = self._redis.register_script(lua.LIB + lua.CAP_DUE)

        async def shard(k: int) -> int:
            moved = 0
            while True:
                late = await self._call(
                    self._redis.zrangebyscore(self._prefixes[k] + "revisit", f"({latest!r}", "+inf", 0, 500)
                )
                if not late:
                    return moved
                pairs = [x for url in late for x in (self._authority_of(_text(url)), _text(url))]
                moved += int(await self._run(script, k, repr(latest), *pairs))

        async def walk() -> int:
            return sum(await together(shard(k) for k in range(SHARDS)))

        return await self._ordered({_ALL}, walk)


def _text(value: object) -> str:
    """A member as redis-py gives it (bytes, or str with decode_responses)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _float(value: object) -> float | None:
    return None if value is None else float(str(value))


class KnownHosts(MutableMapping[str, str]):
    """Certificate fingerprints in the crawl's ``N:hosts`` hash, written through at once.

    Synchronous, as the Gemini client consults it mid-handshake: a blocking client does it, one
    round trip per write and per host first asked for (then remembered: it is asked for on every
    request)."""

    def __init__(self, frontier: RedisFrontier) -> None:
        self._frontier = frontier
        self._key = f"{frontier.name}:hosts"
        self._read: dict[str, str] = {}

    def __getitem__(self, host: str) -> str:
        if host not in self._read:
            fingerprint = self._frontier._check(lambda: self._frontier._sync.hget(self._key, host))
            if fingerprint is None:
                raise KeyError(host)
            self._read[host] = str(fingerprint)
        return self._read[host]

    def __setitem__(self, host: str, fingerprint: str) -> None:
        self._frontier._check(lambda: self._frontier._sync.hset(self._key, host, fingerprint))
        self._read[host] = fingerprint

    def __delitem__(self, host: str) -> None:
        if not self._frontier._check(lambda: self._frontier._sync.hdel(self._key, host)):
            raise KeyError(host)
        self._read.pop(host, None)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._frontier._check(lambda: self._frontier._sync.hkeys(self._key))))

    def __len__(self) -> int:
        return int(self._frontier._check(lambda: self._frontier._sync.hlen(self._key)))


def open_redis_frontier(url: str, name: str, max_queued: int | None = None) -> RedisFrontier:
    """The frontier of the crawl ``name`` on the Redis at ``url``: ``redis://host:port/db``,
    ``rediss://...`` (TLS) or ``redis-cluster://host:port`` (a Redis Cluster, named by any of its
    nodes; ``rediss-cluster://`` with TLS).  Raises FrontierError when it cannot be used."""
    return RedisFrontier(url, name, max_queued)


if TYPE_CHECKING:
    _conforms: type[Frontier] = RedisFrontier  # mypy checks the protocol is met
