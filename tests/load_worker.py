"""A crawler process for the load and fault tests: ``python load_worker.py MODE CACHE ...``.

crawl CACHE URLS_FILE OUT_FILE TASKS SPACING: push every URL through Robot.wait() with
    TASKS asyncio workers; write "authority time" per request to OUT_FILE.
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


async def crawl(cache: str, urls: list[str], out: str, tasks: int, spacing: float) -> None:
    records: list[str] = []
    async with manners.Robot("loadbot", cache=cache, min_delay=spacing) as robot:
        queue = list(reversed(urls))

        async def worker() -> None:
            while queue:
                url = queue.pop()
                await robot.wait(url)
                records.append(f"{url.split('/')[2]} {time.time():.6f}")

        await asyncio.gather(*(worker() for _ in range(tasks)))
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
