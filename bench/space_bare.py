"""The bare fetch loop: what the CPU allows, measured over the bench's own hosts.

The crawler's own request functions (``gemini_get``, ``gopher_get``), many requests at once,
no robots.txt, no spacing, no frontier, no files: requests per second here is the most a
process on this machine can do against these servers, the CPU bound of the ideal schedule.

    python bench/space_bare.py URLS-FILE CONCURRENCY   (prints: requests seconds)
"""

from __future__ import annotations

import asyncio
import resource
import sys
import time
from pathlib import Path

from manners.crawl.client import gemini_get, gopher_get


async def loop(urls: list[str], concurrency: int) -> tuple[int, float]:
    queue = list(reversed(urls))
    known: dict[str, str] = {}
    done = 0

    async def worker() -> None:
        nonlocal done
        while queue:
            url = queue.pop()
            if url.startswith("gemini:"):
                await gemini_get(url, timeout=30, max_bytes=5 << 20, known_hosts=known)
            else:
                await gopher_get(url, timeout=30, max_bytes=5 << 20)
            done += 1

    start = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, time.monotonic() - start


def main() -> None:
    path, concurrency = sys.argv[1], int(sys.argv[2])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    urls = [u for u in Path(path).read_text().split("\n") if u]
    done, took = asyncio.run(loop(urls, concurrency))
    print(done, f"{took:.6f}")


if __name__ == "__main__":
    main()
