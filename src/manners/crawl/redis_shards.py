"""How a crawl on Redis is cut into shards, and how a call fans out over them and back.

An authority belongs to one of ``SHARDS`` shards (CRC-32 of its name); a fleet-wide question
asks every shard (``together``) and merges their flat replies (``pairs_of``).  Kept apart from
``redis_frontier`` so that the arithmetic of the layout, which ``N:layout`` pins for the life
of a crawl, and the one way calls are run side by side (none outliving its caller) read in one
place.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Awaitable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from .tasks import CANCEL_AGAIN

T = TypeVar("T")

SHARDS = 16  # shards of a crawl: part of its layout, kept in N:layout
LAYOUT = f"shards={SHARDS}"  # what N:layout holds: a crawl made with another count is refused


def shard_of(authority: str) -> int:
    """The shard ``authority`` belongs to."""
    return zlib.crc32(authority.encode("utf-8", "surrogateescape")) % SHARDS


def per_shard(names: Iterable[str]) -> list[int]:
    """How many of ``names`` each shard holds."""
    counts = [0] * SHARDS
    for name in names:
        counts[shard_of(name)] += 1
    return counts


async def together(calls: Iterable[Awaitable[T]]) -> list[T]:
    """The results of ``calls`` run side by side, as ``gather``'s, but no call outlives this one.

    ``gather`` raises the first failure and leaves the other calls running: on a cluster with a
    master gone, they fail in their turn after the crawl has ended, and asyncio prints each
    failure with a traceback as the process exits.  Here, when one fails, the others are awaited
    (each has its socket deadlines) and their failures taken; when this call is cancelled, they
    are cancelled, again while one runs on (redis-py can lose a cancellation), and awaited."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except asyncio.CancelledError:
        await _over(tasks, cancel=True)
        raise
    except BaseException:
        await _over(tasks, cancel=False)
        raise


async def _over(tasks: Sequence[asyncio.Future[Any]], cancel: bool) -> None:
    """``tasks`` ended (cancelled first if ``cancel``), their failures retrieved.

    Cancelled itself while it waits (a worker drained, upkeep ended), it cancels the ones still
    running and still sees them over before it says so: left pending, they would fail after the
    crawl had ended, each printed with a traceback as ``asyncio.run`` shut down."""
    pending = {task for task in tasks if not task.done()}
    interrupted = False
    while pending:
        if cancel:
            for task in pending:
                task.cancel()
        try:
            _, pending = await asyncio.wait(pending, timeout=CANCEL_AGAIN if cancel else None)
        except asyncio.CancelledError:
            interrupted = cancel = True
    for task in tasks:
        if not task.cancelled():
            task.exception()  # taken: it is the first failure's, raised by the caller, or beside it
    if interrupted:
        raise asyncio.CancelledError


def pairs_of(flat: Sequence[T]) -> Iterator[tuple[T, T]]:
    """[a, 1, b, 2] as (a, 1), (b, 2): a flat reply of pairs."""
    return zip(flat[::2], flat[1::2], strict=True)
