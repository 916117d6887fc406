"""A crawler process for the load and fault tests: ``python load_worker.py MODE CACHE ...``.

crawl CACHE URLS_FILE OUT_FILE TASKS SPACING: push every URL through Robot.wait() with
    TASKS asyncio workers; write "authority time since" per request to OUT_FILE (``Ticker``).
allowed CACHE URL LOCK_TIMEOUT: ask once (the tests kill it while it holds the fetch lock).
write SQLITE_PATH: put big cache entries in a loop until killed.
"""

from __future__ import annotations

import asyncio
import sys
import time

import manners
from manners.cache import open_store
from manners.cache.entry import Entry


class Ticker:
    """When this process's event loop last ran a task of its own: about the earliest a request's
    start can have been stamped, for a request whose time is read once ``Robot.wait`` returns.

    SQLite's claim is a synchronous transaction: the stamp and the time read have no await
    between them, so the stamp lies between the tick before and the time read.  Redis stamps
    while the task awaits its reply: at most a round trip before the tick (a check a millisecond
    stricter, never looser).  Most of the time tick and time read are a millisecond or two
    apart; when the OS stops the process between them (tens of ms, seen in CI on a busy 2-core
    machine), the time read alone would make two starts granted ``spacing`` apart look closer.
    """

    def __init__(self) -> None:
        self.last = time.time()

    async def run(self) -> None:
        while True:
            self.last = time.time()
            await asyncio.sleep(0.001)


async def crawl(cache: str, urls: list[str], out: str, tasks: int, spacing: float) -> None:
    records: list[str] = []
    ticker = Ticker()
    ticking = asyncio.create_task(ticker.run())
    async with manners.Robot("loadbot", cache=cache, min_delay=spacing) as robot:
        queue = list(reversed(urls))

        async def worker() -> None:
            while queue:
                url = queue.pop()
                await robot.wait(url)
                records.append(f"{url.split('/')[2]} {time.time():.6f} {ticker.last:.6f}")

        await asyncio.gather(*(worker() for _ in range(tasks)))
    ticking.cancel()
    with open(out, "w") as f:
        f.write("\n".join(records) + "\n")


async def allowed(cache: str, url: str, lock_timeout: float) -> None:
    async with manners.Robot("loadbot", cache=cache, lock_timeout=lock_timeout, timeout=60) as robot:
        await robot.allowed(url)


async def write(cache: str) -> None:
    store = open_store(cache)
    n = 0
    while True:
        n += 1
        body = (b"User-agent: *\nDisallow: /%d\n" % n) * 40_000  # about 1 MB
        e = Entry(f"http://h{n % 50}/robots.txt", "ok", "200", "x", time.time(), time.time() + 60, "ok",
                  time.time(), "200", body)  # fmt: skip
        await store.put(f"http://h{n % 50}:80", e)


if __name__ == "__main__":
    mode, cache, *rest = sys.argv[1:]
    if mode == "crawl":
        with open(rest[0]) as f:
            url_list = f.read().split()
        asyncio.run(crawl(cache, url_list, rest[1], int(rest[2]), float(rest[3])))
    elif mode == "allowed":
        asyncio.run(allowed(cache, rest[0], float(rest[1])))
    elif mode == "write":
        asyncio.run(write(cache))
