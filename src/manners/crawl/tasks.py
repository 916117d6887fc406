"""Tasks cancelled for sure: a host holder or a worker that outlives its cancellation holds a host,
or a lease, for the whole fleet.

Apart because both the run (its workers, its upkeep) and the pacing (its host holders) end tasks
this way, and neither should import the other for it.
"""

from __future__ import annotations

import asyncio

CANCEL_AGAIN = 0.2  # seconds a task may take to end once cancelled before it is cancelled again


async def cancelled(*tasks: asyncio.Task[None]) -> None:
    """``tasks`` cancelled, and over.

    Cancelled again while one goes on: a cancellation can be lost in a library's await (redis-py
    sometimes finishes a command and returns its reply to a caller cancelled meanwhile), and a
    task that lost it runs on: here a host holder, holding a host for the whole fleet.  Cancelled
    itself meanwhile, it still sees them over before it says so."""
    pending = {task for task in tasks if not task.done()}
    interrupted = False
    while pending:
        for task in pending:
            task.cancel()
        try:
            _, pending = await asyncio.wait(pending, timeout=CANCEL_AGAIN)
        except asyncio.CancelledError:
            interrupted = True
    for task in tasks:
        if not task.cancelled():
            task.exception()  # retrieved: what a cancelled task raised on its way out is no news
    if interrupted:
        raise asyncio.CancelledError
