"""Benchmark: the crawler's pages/s against a bare loop fetching the same URLs with the same client.

A 5,000-page capsule over 20 loopback hosts (one jetforce process, a port per host), delay 0.
The bare loop fetches every URL with ``gemini_get``, one request at a time per host and the
same number of hosts at once, and does nothing else; the crawler also reads robots.txt, asks
the robot before each request, parses gemtext, keeps the frontier in SQLite and writes
pages.jsonl and the WARC.  Target: the crawler at >= 70% of the bare loop, so bookkeeping is
not the bottleneck.  Not a timed test: run it by hand.

    .venv/bin/python bench/crawl.py [--pages 5000] [--hosts 20] [--concurrency 16] [--no-warc]
                                    [--no-bare] [--rounds 3] [--rss-every N]

``--no-bare`` runs the crawler alone (for a memory run: ``--pages 100000 --no-bare``), and
``--rss-every N`` prints the resident memory every N pages, to show it stays flat.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import servers
import smallnet_site as sn
from manners.crawl import Crawler
from manners.crawl.client import gemini_get


async def bare(urls: list[str], concurrency: int, max_bytes: int) -> tuple[int, float]:
    """Fetch each URL once: one at a time per host, ``concurrency`` hosts at once."""
    per_host: dict[str, list[str]] = defaultdict(list)
    for url in urls:
        per_host[url.split("/")[2]].append(url)
    known: dict[str, str] = {}
    gate = asyncio.Semaphore(concurrency)
    ok = 0

    async def host(todo: list[str]) -> None:
        nonlocal ok
        async with gate:
            for url in todo:
                r = await gemini_get(url, timeout=30, max_bytes=max_bytes, known_hosts=known)
                ok += r.status == 20

    start = time.perf_counter()
    await asyncio.gather(*(host(todo) for todo in per_host.values()))
    return ok, time.perf_counter() - start


async def crawl(
    seeds: list[str], out: Path, concurrency: int, warc: bool, rss_every: int = 0
) -> tuple[int, float]:
    start = time.perf_counter()
    n = 0
    # every host is a port of 127.0.0.1: a lab, so --allow-private
    async with Crawler("benchbot", (), out, min_delay=0, max_delay=60, concurrency=concurrency, scope="any",
                       cache="memory", warc=warc, allow_private=True) as crawler:  # fmt: skip
        async for page in crawler.crawl(seeds):
            n += page.outcome == "fetched"
            if rss_every and n % rss_every == 0 and page.outcome == "fetched":
                print(f"  {n:>7} pages  {time.perf_counter() - start:7.1f} s  RSS {rss_now_mib():.0f} MiB"
                      f"  (peak {rss_mib():.0f} MiB)", flush=True)  # fmt: skip
    return n, time.perf_counter() - start


def rss_mib() -> float:
    """This process's peak resident memory so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_now_mib() -> float:
    """This process's resident memory now (Linux: /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--no-warc", action="store_true")
    ap.add_argument("--no-bare", action="store_true", help="run the crawler alone (no bare loop)")
    ap.add_argument(
        "--rounds", type=int, help="interleaved rounds, the best of each compared (3; 1 with --no-bare)"
    )
    ap.add_argument("--rss-every", type=int, default=0, metavar="N", help="print the RSS every N pages")
    args = ap.parse_args()
    if args.rounds is None:
        args.rounds = 1 if args.no_bare else 3
    with tempfile.TemporaryDirectory(prefix="manners-bench-") as tmp:
        root = Path(tmp)
        roots = [root / "capsule" / f"host{h:02d}" for h in range(args.hosts)]  # generate_capsule's names
        for r in roots:
            r.mkdir(parents=True)
        with servers.jetforce_hosts(roots) as jet:  # files are read per request: write them now
            capsule = sn.generate_capsule(root / "capsule", args.pages, args.hosts, ports=jet.listen_ports)
            assert capsule.roots == roots
            print(f"pages: {len(capsule.urls)} over {args.hosts} hosts, concurrency {args.concurrency},"
                  f" delay 0, WARC {'off' if args.no_warc else 'on'}"
                  f" (generated; peak RSS so far {rss_mib():.0f} MiB)", flush=True)  # fmt: skip
            bare_rates: list[float] = []
            crawl_rates: list[float] = []
            for r in range(args.rounds):  # interleaved, so a load change on the machine hits both
                if not args.no_bare:
                    ok, bare_s = asyncio.run(bare(capsule.urls, args.concurrency, 5 << 20))
                    rate = ok / bare_s
                    bare_rates.append(rate)
                    print(
                        f"round {r + 1}: bare loop {ok} pages in {bare_s:.1f} s = {rate:.0f} pages/s",
                        flush=True,
                    )
                n, crawl_s = asyncio.run(crawl(capsule.seeds[:1], root / f"out{r}", args.concurrency,
                                               not args.no_warc, args.rss_every))  # fmt: skip
                crawl_rates.append(n / crawl_s)
                print(f"round {r + 1}: crawler   {n} pages in {crawl_s:.1f} s = {n / crawl_s:.0f} pages/s"
                      f" (peak RSS {rss_mib():.0f} MiB)", flush=True)  # fmt: skip
    if bare_rates:
        print(f"bare loop: best {max(bare_rates):.0f} pages/s")
    print(f"crawler:   best {max(crawl_rates):.0f} pages/s (peak RSS {rss_mib():.0f} MiB)")
    if bare_rates:
        ratio = max(crawl_rates) / max(bare_rates)
        print(f"ratio: {ratio:.0%} of the bare loop, best against best (target >= 70%)")


if __name__ == "__main__":
    main()
