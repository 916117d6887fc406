"""A fleet shares one Redis: entries with expiry, a lock with a timeout, slots booked by script.

Slots are kept on the Redis server's clock: the scripts read ``TIME`` and answer in
seconds from now, so the machines of a fleet need not agree on the time.  Every call
has socket deadlines; a Redis that is down or restarting makes calls fail with
CacheError, never hang.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from .entry import Entry
from .errors import CacheError

T = TypeVar("T")
PREFIX = "manners:"
# Connections one asyncio client keeps to a Redis at most.  redis-py's default pool refuses a
# call past 100 at once ("Too many connections"): a crawl worker of a few hundred tasks (a space
# of thousands of hosts) reached that in its first seconds and took it for Redis being down.
# Redis runs one command at a time, so more connections would not make calls faster.
POOL = 64


def pooled_client(url: str, timeout: float, **options: Any) -> Any:
    """An asyncio client of ``url`` whose call, finding every connection in use, waits for one
    (``timeout`` seconds at most, then a connection error) instead of failing at once.
    ``options``: the connections' own (deadlines, retries, decoding)."""
    import redis.asyncio

    pool = redis.asyncio.BlockingConnectionPool.from_url(
        url, max_connections=POOL, timeout=timeout, **options
    )
    return redis.asyncio.Redis.from_pool(pool)


# The server's clock, in seconds: a script that writes after reading it is replicated by
# its effects (Redis 5 and later), so replicas and the AOF agree.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""
# KEYS[1] slot key; ARGV: spacing, wait (seconds from now).  Returns the seconds from now
# until the slot booked.  Shared with the Redis frontier, whose keys carry a hash tag.
BOOK = (
    _NOW
    + """
local slot = math.max(now, now + tonumber(ARGV[2]), tonumber(redis.call('GET', KEYS[1]) or '0'))
local next_at = slot + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.6f', next_at), 'PX', math.ceil((next_at - now) * 1000) + 60000)
return string.format('%.6f', slot - now)
"""
)
# KEYS[1] start key; ARGV: spacing.  Returns 0 when claimed, else the seconds left.
CLAIM = (
    _NOW
    + """
local left = tonumber(redis.call('GET', KEYS[1]) or '0') + tonumber(ARGV[1]) - now
if left > 0 then return string.format('%.6f', left) end
redis.call('SET', KEYS[1], string.format('%.6f', now), 'PX', math.ceil(tonumber(ARGV[1]) * 1000) + 60000)
return '0'
"""
)
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisStore:
    def __init__(self, url: str, timeout: float = 5.0) -> None:
        self.location = url
        try:
            self._redis: Any = pooled_client(
                url, timeout, socket_timeout=timeout, socket_connect_timeout=timeout, retry_on_timeout=False
            )
        except ImportError:
            raise CacheError("a redis:// cache needs redis-py: pip install 'manners[redis]'") from None
        except ValueError as exc:
            raise ValueError(f"bad Redis URL {url!r}: {exc}") from None
        self._book = self._redis.register_script(BOOK)
        self._release = self._redis.register_script(_RELEASE)
        self._claim = self._redis.register_script(CLAIM)

    async def get(self, key: str) -> Entry | None:
        data = await self._call(self._redis.get(PREFIX + "entry:" + key))
        return Entry.loads(data) if data else None

    async def put(self, key: str, entry: Entry) -> None:
        keep = max(1, math.ceil(entry.keep_until - time.time()))
        await self._call(self._redis.set(PREFIX + "entry:" + key, entry.dumps(), ex=keep))

    async def acquire(self, key: str, token: str, ttl: float) -> bool:
        px = max(1, math.ceil(ttl * 1000))
        return bool(await self._call(self._redis.set(PREFIX + "lock:" + key, token, nx=True, px=px)))

    async def release(self, key: str, token: str) -> None:
        await self._call(self._release(keys=[PREFIX + "lock:" + key], args=[token]))

    async def book(self, key: str, spacing: float, wait: float = 0.0) -> float:
        args = [repr(spacing), repr(wait)]
        return float(await self._call(self._book(keys=[PREFIX + "slot:" + key], args=args)))

    async def claim(self, key: str, spacing: float) -> float:
        return float(await self._call(self._claim(keys=[PREFIX + "start:" + key], args=[repr(spacing)])))

    async def close(self) -> None:
        await self._redis.aclose()

    async def _call(self, pending: Awaitable[T]) -> T:
        import redis.exceptions

        try:
            return await pending
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise CacheError(f"the Redis cache at {self.location} is unreachable: {exc}") from None
        except redis.exceptions.RedisError as exc:
            raise CacheError(f"the Redis cache at {self.location} failed: {exc}") from None
