"""10,000 URLs over 100 real sites through Robot.wait(): 8 asyncio workers, then 4 processes.

Checked: no two requests to one host closer than its spacing, robots.txt fetched once
per host, and the run takes about what the spacing implies ((100 - 1) x spacing).  A request's
time is read when ``Robot.wait`` returns, and its start was stamped no earlier than its process's
event loop last ticked (``load_worker.Ticker``): the check is on what the stamps can have been.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import pytest

import manners
from load_worker import Ticker
from sites import Site, sites

# It times what 16 asyncio workers in 4 processes do on two cores, from inside those processes:
# a test in another worker beside it makes them late (a gap of 20.4 ms, seen once in CI), so it
# runs alone, after everything else.
pytestmark = pytest.mark.alone

HOSTS, PER_HOST, SPACING = 100, 100, 0.05
IMPLIED = (PER_HOST - 1) * SPACING  # the last host's last slot, when every host starts at once
# The store grants starts no closer than SPACING: each is checked atomically against the
# last when a worker claims it.  Between a grant and the worker's next line of code lie the
# store's commit, the Redis reply, the event loop and the OS scheduler: on this 2-core
# machine, running 16 workers in 4 processes plus nginx and Redis and nothing else, a few
# ms.  The tolerance covers that, not a looser spacing.  (A SQLite commit that folded the log
# into the file took up to 44 ms, and two requests to one host were seen 10 ms apart; a
# claim's commit no longer folds: test_sqlite_fold.py.  Six runs since: 56.5 ms at closest.
# Then CI, on 2026-12-02, read two times 2.9 ms apart: one process stopped by the OS between its
# stamp and its reading of the time.  A start is now placed after its process's last tick.)
JITTER = 0.020
# One process keeps close to the implied time; four processes sharing a store on two
# cores spend more on the store's round trips: 6.2 to 12.9 s measured.  On 2026-11-29 five
# runs each of this code and of the code before asked_spacing moved into the engine, taking
# turns, gave 7.3-11.0 s (before) and 7.6-11.8 s (now) on both stores: the spread is the
# machine and the workers' order, not a change.  A run past three times the implied time
# means the scheduler, not the machine, is at fault.
MAX_SPAN = IMPLIED * 3 + 2.0
TASKS = "4"  # asyncio workers in each of the 4 processes: with 2, workers idle on booked hosts
WORKER = Path(__file__).with_name("load_worker.py")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Site]]:
    with sites(["User-agent: *\nDisallow: /private\n"] * HOSTS, tmp_path_factory.mktemp("fleet")) as s:
        yield s


def frontier(fleet: list[Site]) -> list[str]:
    """A crawl frontier that rotates hosts, as crawlers' per-host queues do; each round shuffled."""
    rng = random.Random(7)
    urls = []
    for n in range(PER_HOST):
        round_ = [f"{site.url}/page/{n}" for site in fleet]
        rng.shuffle(round_)
        urls += round_
    return urls


Record = tuple[str, float, float]  # authority, the time read after the wait, the tick before it


def widest(a: tuple[float, float], b: tuple[float, float]) -> float:
    """The furthest apart two starts can have been stamped, each between its tick and its time
    read (``a`` read first), in either order: a process stopped after its stamp reads it late."""
    (read_a, tick_a), (read_b, tick_b) = a, b
    return max(read_b - tick_a, read_a - tick_b)


def check(records: list[Record], fleet: list[Site], fetched_before: list[int]) -> tuple[float, float]:
    """Assert the politeness rules; return the span from first to last request, and the closest
    two starts to one host can have been."""
    assert len(records) == HOSTS * PER_HOST
    by_host: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for host, read, tick in records:
        assert tick <= read
        by_host[host].append((read, tick))
    assert len(by_host) == HOSTS
    closest = min(widest(a, b) for times in by_host.values() for a, b in pairwise(sorted(times)))
    assert closest >= SPACING - JITTER, f"two requests to one host {closest:.4f} s apart"
    fetches = [site.robots_fetches() - before for site, before in zip(fleet, fetched_before, strict=True)]
    assert fetches == [1] * HOSTS, "robots.txt fetched more than once per TTL"
    return max(t for _, t, _ in records) - min(t for _, t, _ in records), closest


@pytest.mark.parametrize("cache", ["memory", "sqlite"])
def test_eight_asyncio_workers(fleet: list[Site], cache: str, cache_url: Callable[[str], str]) -> None:
    store = cache_url(cache)
    before = [s.robots_fetches() for s in fleet]
    records: list[Record] = []

    async def crawl() -> None:
        queue = list(reversed(frontier(fleet)))
        ticker = Ticker()
        ticking = asyncio.create_task(ticker.run())
        async with manners.Robot("loadbot", cache=store, min_delay=SPACING) as robot:

            async def worker() -> None:
                while queue:
                    url = queue.pop()
                    await robot.wait(url)
                    records.append((url.split("/")[2], time.time(), ticker.last))

            await asyncio.gather(*(worker() for _ in range(8)))
        ticking.cancel()

    start = time.monotonic()
    asyncio.run(crawl())
    took = time.monotonic() - start
    span, closest = check(records, fleet, before)
    print(
        f"\n8 asyncio workers, {cache}: {took:.2f} s for 10,000 URLs ({span:.2f} s first to last request);"
        f" spacing implies {IMPLIED:.2f} s; closest two requests to one host: {closest * 1000:.1f} ms"
    )
    assert span < MAX_SPAN


@pytest.mark.parametrize("cache", ["sqlite", "redis"])
def test_four_processes_share_the_store(
    fleet: list[Site], cache: str, tmp_path: Path, cache_url: Callable[[str], str]
) -> None:
    store = cache_url(cache)
    before = [s.robots_fetches() for s in fleet]
    urls = frontier(fleet)
    procs, outs = [], []
    for n in range(4):
        (tmp_path / f"urls{n}").write_text("\n".join(urls[n::4]))
        outs.append(tmp_path / f"out{n}")
        cmd = [sys.executable, str(WORKER), "crawl", store, str(tmp_path / f"urls{n}"), str(outs[n]), TASKS,
               str(SPACING)]  # fmt: skip
        procs.append(subprocess.Popen(cmd, stderr=subprocess.PIPE))
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    records = [
        (host, float(read), float(tick))
        for out in outs
        for line in out.read_text().splitlines()
        for host, read, tick in [line.split()]
    ]
    span, closest = check(records, fleet, before)
    print(
        f"\n4 processes x 4 workers, {cache}: {span:.2f} s first to last request; spacing implies"
        f" {IMPLIED:.2f} s; closest two requests to one host: {closest * 1000:.1f} ms"
    )
    assert span < MAX_SPAN
