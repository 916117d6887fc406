"""A SQLite write that grants a request its start does not fold the log into the file.

Folding (a WAL checkpoint) syncs the file to disk: 44 ms seen on this 2-core machine.  The
start is stamped before the commit, so a request whose commit folded left that much after its
stamp, and that much closer to the next request another process was granted ``spacing`` after
it: test_load.py saw two requests to one host 10 ms apart, with a spacing of 50.  The fold is
left to the next write that grants nothing (``run_transaction(fold=False)``).

Seen from outside: the file only grows when a write that grants nothing commits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from manners.cache.entry import Entry
from manners.cache.sqlite import SQLiteStore
from manners.crawl.frontier import open_frontier

PAIRS = 400  # a claim and another write each: about ten folds of 128 pages of log


async def grows(
    path: Path, claim: Callable[[int], Awaitable[float]], other: Callable[[int], Awaitable[object]]
) -> list[str]:
    """Which writes the file grew after, as "claim" and "other", over PAIRS of them."""
    grew = []
    for n in range(PAIRS):
        for kind, write in (("claim", claim), ("other", other)):
            size = path.stat().st_size
            granted = await write(n)
            if kind == "claim":
                assert granted == 0.0
            if path.stat().st_size > size:
                grew.append(kind)
    return grew


@pytest.mark.parametrize("store", ["cache", "frontier"])
def test_the_log_is_folded_by_writes_that_grant_no_start(store: str, tmp_path: Path) -> None:
    path = tmp_path / f"{store}.db"

    async def main() -> list[str]:
        if store == "cache":
            cache = SQLiteStore(path)
            body = b"User-agent: *\nDisallow: /private\n" * 40

            async def put(n: int) -> None:
                e = Entry(
                    f"http://h{n}.example/robots.txt", "ok", "200", "x", 0.0, 1e12, "ok", 0.0, "200", body
                )
                await cache.put(f"http://h{n}.example:80", e)

            try:
                return await grows(path, lambda n: cache.claim(f"http://h{n}.example:80", 1.0), put)
            finally:
                await cache.close()
        frontier = open_frontier(path)

        async def add(n: int) -> bool:
            return await frontier.add(f"gemini://h{n}.example/" + "page/" * 40, 0)

        try:
            return await grows(path, lambda n: frontier.claim(f"gemini://h{n}.example:1965", 1.0), add)
        finally:
            await frontier.close()

    grew = asyncio.run(main())
    assert "other" in grew, "the log was never folded into the file"
    assert "claim" not in grew, f"a claim's commit folded the log: the file grew after {grew}"


def test_a_frontier_granting_starts_only_still_folds_its_log(tmp_path: Path) -> None:
    """In a busy fleet every commit may let a request leave; the log must not grow for ever."""
    path = tmp_path / "frontier.db"

    async def main() -> int:
        frontier = open_frontier(path)
        try:
            for n in range(2000):  # a page or two of log each: 8 MiB and more, were none folded
                assert await frontier.claim(f"gemini://h{n}.example:1965", 1.0) == 0.0
            return Path(f"{path}-wal").stat().st_size
        finally:
            await frontier.close()

    assert asyncio.run(main()) < 1 << 20
