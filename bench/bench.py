"""Side-by-side throughput: manners against Protego, urllib.robotparser and Google's C++ binding.

(a) crawl: parse each robots.txt once, check every link found on that site
    (the 2019 Scrapy benchmark: ../shared/corpus/bench, agent googlebot);
(b) one-shot: parse and check one URL per file over ../shared/corpus/web.

Run: python bench/bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
import urllib.robotparser
from collections.abc import Callable
from pathlib import Path

import protego
import robotstxt

import manners

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus"
AGENT = "googlebot"


def load_crawl() -> list[tuple[str, list[str]]]:
    sites = []
    for links in sorted((SHARED / "bench" / "links").iterdir()):
        robots = SHARED / "bench" / "robotfiles" / links.name
        if robots.exists():
            body = robots.read_bytes().decode("utf-8", "replace")
            urls = [u for u in links.read_text("utf-8", "replace").split("\n") if u]
            sites.append((body, urls))
    return sites


def load_oneshot() -> list[tuple[str, str]]:
    return [
        (p.read_bytes().decode("utf-8", "replace"), f"https://{p.name}/some/page.html?id=1")
        for p in sorted((SHARED / "web").iterdir())
    ]


def crawl_manners(sites):
    for body, urls in sites:
        allowed = manners.parse(body, profile="google", max_bytes=None).allowed
        for u in urls:
            allowed(u, AGENT)


def crawl_protego(sites):
    for body, urls in sites:
        can_fetch = protego.Protego.parse(body).can_fetch
        for u in urls:
            can_fetch(u, AGENT)


def crawl_urllib(sites):
    for body, urls in sites:
        rp = urllib.robotparser.RobotFileParser()
        rp.parse(body.splitlines())
        for u in urls:
            rp.can_fetch(AGENT, u)


def crawl_google(sites):
    m = robotstxt.RobotsMatcher()
    for body, urls in sites:
        for u in urls:  # the binding has no parsed form: every call parses
            m.is_allowed(body, AGENT, u)


def one_manners(files):
    for body, url in files:
        manners.parse(body, profile="google", max_bytes=None).allowed(url, AGENT)


def one_protego(files):
    for body, url in files:
        protego.Protego.parse(body).can_fetch(url, AGENT)


def one_urllib(files):
    for body, url in files:
        rp = urllib.robotparser.RobotFileParser()
        rp.parse(body.splitlines())
        rp.can_fetch(AGENT, url)


def one_google(files):
    m = robotstxt.RobotsMatcher()
    for body, url in files:
        m.is_allowed(body, AGENT, url)


def best_of(runs: list[Callable], data, repeat: int) -> dict[str, float]:
    """Best time of each, over ``repeat`` rounds that take turns, so drift hits all alike."""
    best = {fn.__name__.split("_", 1)[1]: float("inf") for fn in runs}
    for _ in range(repeat):
        for fn in runs:
            gc.collect()
            t = time.perf_counter()
            fn(data)
            name = fn.__name__.split("_", 1)[1]
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="rounds; each one's best counts (default 5)")
    args = ap.parse_args()
    sites, files = load_crawl(), load_oneshot()
    n_urls = sum(len(u) for _, u in sites)
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.processor() or 'cpu'}")
    print(f"crawl: {len(sites)} sites, {n_urls} URLs; one-shot: {len(files)} files\n")
    for title, unit, count, data, runs in (
        ("crawl", "URLs/s", n_urls, sites, (crawl_manners, crawl_protego, crawl_urllib, crawl_google)),
        ("one-shot", "files/s", len(files), files, (one_manners, one_protego, one_urllib, one_google)),
    ):
        results = best_of(list(runs), data, args.repeat)
        ours = results["manners"]
        print(f"{title:9} {'seconds':>9} {unit:>12} {'manners is':>12}")
        for name, secs in results.items():
            r = secs / ours
            ratio = "" if name == "manners" else f"{r:.1f}x" if r >= 1 else f"{r:.2f}x"
            print(f"{name:9} {secs:9.3f} {count / secs:12,.0f} {ratio:>12}")
        print()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
