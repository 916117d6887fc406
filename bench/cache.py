"""Robot.allowed() on cached policies, and wait() bookings, per store: memory, SQLite, Redis.

warm: the policy is in the robot's memory (the usual case within its TTL);
from store: every call reads the entry from the store and parses it (a worker's
first question about an authority another worker fetched); wait: book and claim a
slot (spacing 0), two atomic store operations.  Starts its own redis-server.

Run: python bench/cache.py [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import manners
from manners.cache.entry import Entry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from data_paths import unpacked

WEB = unpacked("web")
HOSTS = 200


def robots_bodies() -> list[bytes]:
    files = sorted(WEB.iterdir())[:HOSTS]
    return [f.read_bytes()[:512_000] for f in files]


async def measure(cache: str, bodies: list[bytes], calls: int) -> dict[str, float]:
    robot = manners.Robot("googlebot", cache=cache, min_delay=0)
    now = time.time()
    urls = []
    for n, body in enumerate(bodies):
        key = f"http://h{n}.example:80"
        await robot.store.put(key, Entry(f"http://h{n}.example/robots.txt", "ok", "200", "", now, now + 3600,
                                         "ok", now, "200", body))  # fmt: skip
        urls.append(f"http://h{n}.example/some/page.html?id={n}")
    out = {}
    for url in urls:  # into memory
        await robot.allowed(url)
    start = time.perf_counter()
    for i in range(calls):
        await robot.allowed(urls[i % len(urls)])
    out["warm"] = calls / (time.perf_counter() - start)
    n_cold = calls // 20
    start = time.perf_counter()
    for i in range(n_cold):
        robot._known.clear()  # forget what was read: the next call goes to the store
        await robot.allowed(urls[i % len(urls)])
    out["from store"] = n_cold / (time.perf_counter() - start)
    # only hosts whose file asks for no spacing: this measures the bookkeeping, not sleep
    free = [u for u, b in zip(urls, bodies, strict=True) if _unpaced(b)]
    n_wait = calls // 10
    start = time.perf_counter()
    for i in range(n_wait):
        await robot.wait(free[i % len(free)])
    out["wait"] = n_wait / (time.perf_counter() - start)
    await robot.close()
    return out


def _unpaced(body: bytes) -> bool:
    robots = manners.parse(body)
    return robots.crawl_delay("googlebot") is None and robots.request_rate("googlebot") is None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=50_000)
    args = ap.parse_args()
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bodies = robots_bodies()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--dir", tmp]
        redis = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit("redis-server did not start") from None
                    time.sleep(0.05)
            print(f"{len(bodies)} cached robots.txt files from the web corpus (data/); calls per second")
            print(f"{'store':8} {'warm':>12} {'from store':>12} {'wait':>12}")
            for name, cache in (("memory", "memory"), ("sqlite", f"sqlite://{tmp}/bench.sqlite3"),
                                ("redis", f"redis://127.0.0.1:{port}/0")):  # fmt: skip
                r = asyncio.run(measure(cache, bodies, args.calls))
                print(f"{name:8} {r['warm']:12,.0f} {r['from store']:12,.0f} {r['wait']:12,.0f}")
        finally:
            redis.terminate()
            redis.wait(5)


if __name__ == "__main__":
    main()
