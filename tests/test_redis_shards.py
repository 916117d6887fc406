"""``together``: calls run side by side on a crawl's shards, none outliving its caller, even
when the caller is cancelled while it waits for the others after a failure (quick, in-process)."""

from __future__ import annotations

import asyncio

import pytest

from manners.crawl.redis_shards import together

pytestmark = pytest.mark.quick


class Down(Exception):
    pass


async def _fails_at_once() -> None:
    raise Down("the cluster is down")


async def _fails_later(started: list[str]) -> None:
    started.append("later")
    await asyncio.sleep(0.3)
    raise Down("the cluster is down")


def test_a_caller_cancelled_while_it_waits_after_a_failure_leaves_no_call_running() -> None:
    """One shard call fails at once, another fails later: ``together`` waits for the second, and
    its caller is cancelled meanwhile (a worker drained).  The second call must be over when the
    caller is, or it fails after the crawl has ended, printed as asyncio shuts down."""

    async def main() -> tuple[int, list[asyncio.Task[object]]]:
        before = asyncio.all_tasks()
        started: list[str] = []
        caller = asyncio.ensure_future(together([_fails_at_once(), _fails_later(started)]))
        while not started:
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)  # the first failure is in; the caller waits on the second
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        left = [t for t in asyncio.all_tasks() - before if t is not asyncio.current_task()]
        return len(started), [t for t in left if not t.done()]

    started, running = asyncio.run(main())
    assert started == 1
    assert running == []


def test_results_come_in_order_and_a_failure_is_raised_after_the_others_end() -> None:
    async def value(v: int, after: float) -> int:
        await asyncio.sleep(after)
        return v

    async def main() -> None:
        assert await together([value(1, 0.02), value(2, 0.0), value(3, 0.01)]) == [1, 2, 3]
        ended: list[int] = []

        async def slow() -> None:
            await asyncio.sleep(0.1)
            ended.append(1)

        with pytest.raises(Down):
            await together([_fails_at_once(), slow()])
        assert ended == [1]

    asyncio.run(main())
