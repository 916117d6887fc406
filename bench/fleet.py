"""Benchmark: a politeness-bound crawl by 1, 2 and 4 workers on Redis, against one process on SQLite.

Many loopback Gemini hosts (one jetforce process, a port each), each a small capsule, a
1 s delay, the same ``--concurrency`` per worker: a worker crawls at most ``concurrency``
hosts at a time, one request a second each, so pages/s is bound by politeness and should
grow with the workers.  Each worker is a real ``manners crawl`` process joining the crawl
by ``--frontier redis://... --name``; the baseline is the same command with the default
SQLite frontier.  Pages/s is counted from jetforce's own log (first to last page request).

Targets (issue 23): one worker on Redis >= 0.9x the SQLite process; 2 and 4 workers >= 1.8x
and 3.4x.  Then frontier operations per second for one worker (lease then settle, one URL
each), Redis against SQLite, in process.

With ``--memory N``: Redis memory per URL known, queued (N URLs over 1,000 hosts) and settled
(a sample leased and settled), from ``INFO memory``'s used_memory, nothing else running.

Run: .venv/bin/python bench/fleet.py [--hosts 32] [--pages 8] [--concurrency 4] [--ops 5000]
     .venv/bin/python bench/fleet.py --memory 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import servers
from manners.crawl.frontier import open_frontier

TARGETS = {1: 0.9, 2: 1.8, 4: 3.4}


def capsules(root: Path, hosts: int, pages: int) -> list[Path]:
    """``hosts`` capsules of ``pages`` pages each: an index linking to the rest."""
    roots = []
    for h in range(hosts):
        site = root / f"host{h}"
        site.mkdir(parents=True)
        links = "".join(f"=> /p{n}.gmi page {n}\n" for n in range(1, pages))
        (site / "index.gmi").write_text(f"# host {h}\n{links}")
        for n in range(1, pages):
            (site / f"p{n}.gmi").write_text(f"# page {n} of host {h}\n")
        roots.append(site)
    return roots


def page_times(hosts: servers.JetforceHosts, since: float) -> list[float]:
    """When each page (not robots.txt) was answered, from jetforce's own log, after ``since``."""
    return sorted(
        a.time for a in hosts.accesses() if a.time >= since and not a.url.endswith(("robots.txt", "caps.txt"))
    )


def run_workers(
    n: int, seeds: list[str], frontier: str | None, work: Path, concurrency: int, hosts: servers.JetforceHosts
) -> float:
    """Pages/s of ``n`` worker processes crawling ``seeds`` together (frontier None: SQLite)."""
    name = f"bench-{time.monotonic_ns()}"
    start = time.time()
    procs = []
    for w in range(n):
        cmd = [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", "benchbot", "--out",
               str(work / f"{name}-{w}"), "--min-delay", "1", "--concurrency", str(concurrency),
               "--scope", "any", "--allow-private", "--no-warc", "--cache", "memory"]  # fmt: skip
        if frontier is not None:
            cmd += ["--frontier", frontier, "--name", name]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    for p in procs:
        _, err = p.communicate(timeout=1800)
        if p.returncode not in (0,):
            raise SystemExit(f"a worker exited {p.returncode}: {err.decode()[-500:]}")
    times = page_times(hosts, start)
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0


async def frontier_ops(spec: str, work: Path, ops: int) -> float:
    """Lease-then-settle per second on one frontier, one URL each, over a few hosts."""
    frontier = open_frontier(spec, None, name=f"ops-{time.monotonic_ns()}")
    try:
        for h in range(10):
            for n in range(ops // 10):
                await frontier.add(f"gemini://h{h}.example:1965/p{n}", 1)
        start = time.perf_counter()
        done = 0
        while done < ops:
            for h in range(10):
                lease = await frontier.lease(f"gemini://h{h}.example:1965", "bench", 60)
                if lease is None:
                    continue
                await frontier.done(lease.url, "fetched", page=True)
                done += 1
        return done / (time.perf_counter() - start)
    finally:
        await frontier.close()


def rss() -> int:
    """This process's resident memory now, in bytes (Linux)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def memory_per_url(redis_url: str, n: int, settled: int = 20_000) -> tuple[float, float, list[int]]:
    """Bytes of Redis memory per queued URL (``n`` of them), and per settled URL (a sample); and
    this process's RSS (a worker's frontier client) at a tenth of the URLs, all, and settled."""
    import redis.asyncio

    client = redis.asyncio.from_url(redis_url)
    used = lambda info: int(info["used_memory"])  # noqa: E731
    before = used(await client.info("memory"))
    frontier = open_frontier(redis_url, None, name=f"mem-{time.monotonic_ns()}")
    hosts = 1000
    try:
        batch: list[str] = []
        sizes = []
        for i in range(n):
            if i == n // 10:
                sizes.append(rss())
            batch.append(f"gemini://host{i % hosts}.example:1965/section/{i // hosts}/page.gmi")
            if len(batch) == 10_000:
                await frontier.add_many(batch, 1)
                batch = []
        if batch:
            await frontier.add_many(batch, 1)
        sizes.append(rss())
        queued = (used(await client.info("memory")) - before) / n
        mid = used(await client.info("memory"))
        done = 0
        while done < settled:
            for h in range(hosts):
                lease = await frontier.lease(f"gemini://host{h}.example:1965", "bench", 600)
                if lease is not None:
                    await frontier.done(lease.url, "fetched", page=True)
                    done += 1
        after = used(await client.info("memory"))
        sizes.append(rss())
        return queued, queued + (after - mid) / done, sizes
    finally:
        await frontier.close()
        await client.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--pages", type=int, default=8, help="pages per host")
    ap.add_argument("--concurrency", type=int, default=4, help="hosts at once, per worker")
    ap.add_argument("--ops", type=int, default=5000, help="URLs for the frontier operations figure")
    ap.add_argument("--memory", type=int, default=0, help="only measure Redis memory per URL, over N URLs")
    args = ap.parse_args()
    if args.memory:
        with servers.redis_server() as port:
            queued, settled, sizes = asyncio.run(memory_per_url(f"redis://127.0.0.1:{port}/0", args.memory))
        print(f"Redis memory per URL, {args.memory:,} URLs over 1,000 hosts: {queued:.0f} bytes queued, "
              f"{settled:.0f} bytes settled")  # fmt: skip
        tenth, whole, after = (f"{size / 2**20:.1f} MiB" for size in sizes)
        print(f"this process (a worker's frontier client), RSS: {tenth} at {args.memory // 10:,} URLs, "
              f"{whole} at {args.memory:,}, {after} after settling")  # fmt: skip
        return
    print(f"{os.cpu_count()} cores; {args.hosts} hosts x {args.pages} pages, 1 s delay, "
          f"--concurrency {args.concurrency} per worker")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, servers.redis_server() as port:
        work = Path(tmp)
        redis_url = f"redis://127.0.0.1:{port}/0"
        roots = capsules(work / "sites", args.hosts, args.pages)
        with servers.jetforce_hosts(roots) as hosts:
            seeds = [f"gemini://localhost:{p}/" for p in hosts.public_ports]
            base = run_workers(1, seeds, None, work, args.concurrency, hosts)
            print(f"one process, SQLite frontier: {base:.2f} pages/s")
            missed = []
            for n in (1, 2, 4):
                rate = run_workers(n, seeds, redis_url, work, args.concurrency, hosts)
                ratio = rate / base
                ok = ratio >= TARGETS[n]
                missed += [] if ok else [f"{n} workers"]
                print(f"{n} worker{'s' if n > 1 else ' '} on Redis: {rate:.2f} pages/s, {ratio:.2f}x "
                      f"({'meets' if ok else 'MISSES'} >= {TARGETS[n]}x)")  # fmt: skip
        sqlite_ops = asyncio.run(frontier_ops(str(work / "ops.sqlite3"), work, args.ops))
        redis_ops = asyncio.run(frontier_ops(redis_url, work, args.ops))
        print(f"frontier, lease + settle: SQLite {sqlite_ops:,.0f}/s, Redis {redis_ops:,.0f}/s "
              f"({redis_ops / sqlite_ops:.2f}x)")  # fmt: skip
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
