"""Side-by-side throughput: manners (rfc9309 and google profiles) against other robots.txt parsers.

(a) crawl: parse each robots.txt once, check every link found on that site
    (the 2019 Scrapy benchmark: data/corpus/bench.tar.xz, agent googlebot);
(b) one-shot: parse and check one URL per file over data/corpus/web.tar.xz.

Peers: Protego, urllib.robotparser, Google's C++ binding (fast-robotstxt), and the Rust-based
texting-robots-py and fastrobots.  A peer that is not installed is reported and skipped.
Each contestant gets the input it takes natively (texting-robots bytes, the rest str), decoded
before timing; fastrobots wants a path, so its URL-to-path step is timed with it.
Rounds take turns (each runs every contestant once) and the best of --repeat rounds counts.

Run: .venv/bin/python bench/bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.metadata
import os
import platform
import sys
import time
import urllib.robotparser
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import manners

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from data_paths import unpacked

BENCH = unpacked("bench")
WEB = unpacked("web")
AGENT = "googlebot"

Site = tuple[str, bytes, list[str]]  # body as text, body as bytes, links
File = tuple[str, bytes, str]  # body as text, body as bytes, URL
Runner = Callable[[Any], None]


def optional(module: str, dist: str) -> ModuleType | str:
    """The module, or why it is missing: a peer not installed must not stop the others."""
    try:
        return importlib.import_module(module)
    except Exception as e:  # any failure to import means the same: skip the peer
        return f"{type(e).__name__}: {e} (pip install {dist})"


protego = optional("protego", "protego==0.7.0")
robotstxt = optional("robotstxt", "fast-robotstxt==1.1.0")
texting_robots = optional("texting_robots", "texting-robots-py")
fastrobots = optional("fastrobots", "fastrobots")


def machine() -> str:
    """One line naming the machine, since the numbers only mean something next to it."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{cpu}, {os.cpu_count()} cores ({usable} usable)"
    )


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def load_crawl() -> list[Site]:
    sites = []
    for links in sorted((BENCH / "links").iterdir()):
        robots = BENCH / "robotfiles" / links.name
        if robots.exists():
            raw = robots.read_bytes()
            urls = [u for u in links.read_text("utf-8", "replace").split("\n") if u]
            sites.append((raw.decode("utf-8", "replace"), raw, urls))
    return sites


def load_oneshot() -> list[File]:
    files = []
    for p in sorted(WEB.iterdir()):
        raw = p.read_bytes()
        files.append((raw.decode("utf-8", "replace"), raw, f"https://{p.name}/some/page.html?id=1"))
    return files


def path_of(url: str) -> str:
    """Path and query of an absolute URL: fastrobots checks paths, and its url_path drops the query."""
    start = url.find("/", url.find("//") + 2)
    if start < 0:
        return "/"
    end = url.find("#", start)
    return url[start:] if end < 0 else url[start:end]


# --- crawl: one parse per site, then every link of the site -------------------------------------


def crawl_manners(profile: str) -> Runner:
    def run(sites: list[Site]) -> None:
        for body, _, urls in sites:
            allowed = manners.parse(body, profile=profile, max_bytes=None).allowed
            for u in urls:
                allowed(u, AGENT)

    return run


def crawl_protego(sites: list[Site]) -> None:
    for body, _, urls in sites:
        can_fetch = protego.Protego.parse(body).can_fetch
        for u in urls:
            can_fetch(u, AGENT)


def crawl_urllib(sites: list[Site]) -> None:
    for body, _, urls in sites:
        rp = urllib.robotparser.RobotFileParser()
        rp.parse(body.splitlines())
        for u in urls:
            rp.can_fetch(AGENT, u)


def crawl_google(sites: list[Site]) -> None:
    m = robotstxt.RobotsMatcher()
    for body, _, urls in sites:
        for u in urls:  # the binding has no parsed form: every call parses
            m.is_allowed(body, AGENT, u)


def crawl_texting(sites: list[Site]) -> None:
    for _, raw, urls in sites:
        allowed = texting_robots.Robot(AGENT, raw).allowed  # the agent is fixed at parse time
        for u in urls:
            allowed(u)


def crawl_fastrobots(sites: list[Site]) -> None:
    for body, _, urls in sites:
        allowed = fastrobots.Robots.parse(body).allowed
        for u in urls:
            allowed(path_of(u), AGENT)


# --- one-shot: parse, ask once -------------------------------------------------------------------


def one_manners(profile: str) -> Runner:
    def run(files: list[File]) -> None:
        for body, _, url in files:
            manners.parse(body, profile=profile, max_bytes=None).allowed(url, AGENT)

    return run


def one_protego(files: list[File]) -> None:
    for body, _, url in files:
        protego.Protego.parse(body).can_fetch(url, AGENT)


def one_urllib(files: list[File]) -> None:
    for body, _, url in files:
        rp = urllib.robotparser.RobotFileParser()
        rp.parse(body.splitlines())
        rp.can_fetch(AGENT, url)


def one_google(files: list[File]) -> None:
    m = robotstxt.RobotsMatcher()
    for body, _, url in files:
        m.is_allowed(body, AGENT, url)


def one_texting(files: list[File]) -> None:
    for _, raw, url in files:
        texting_robots.Robot(AGENT, raw).allowed(url)


def one_fastrobots(files: list[File]) -> None:
    for body, _, url in files:
        fastrobots.Robots.parse(body).allowed(path_of(url), AGENT)


# name, module (or why it is missing; None: always there), crawl runner, one-shot runner
CONTESTANTS: list[tuple[str, ModuleType | str | None, Runner, Runner]] = [
    ("manners-rfc9309", None, crawl_manners("rfc9309"), one_manners("rfc9309")),
    ("manners-google", None, crawl_manners("google"), one_manners("google")),
    ("protego", protego, crawl_protego, one_protego),
    ("urllib", None, crawl_urllib, one_urllib),
    ("google-c++", robotstxt, crawl_google, one_google),
    ("texting-robots", texting_robots, crawl_texting, one_texting),
    ("fastrobots", fastrobots, crawl_fastrobots, one_fastrobots),
]
DISTS = {
    "manners-rfc9309": "manners",
    "protego": "protego",
    "google-c++": "fast-robotstxt",
    "texting-robots": "texting-robots-py",
    "fastrobots": "fastrobots",
}


def best_of(runs: dict[str, Runner], data: Any, repeat: int) -> dict[str, float]:
    """Best time of each, over ``repeat`` rounds that take turns, so drift hits all alike."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, fn in runs.items():
            gc.collect()
            t = time.perf_counter()
            fn(data)
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def ratio(r: float) -> str:
    return f"{r:.1f}x" if r >= 1 else f"{r:.2f}x"


def report(title: str, unit: str, count: int, results: dict[str, float]) -> None:
    """Seconds, rate, and how many times faster each manners profile is than that contestant."""
    ours = {p: results[f"manners-{p}"] for p in ("rfc9309", "google")}
    print(f"{title:16} {'seconds':>9} {unit:>12} {'rfc9309 is':>11} {'google is':>10}")
    for name, secs in results.items():
        cols = ["-" if name == f"manners-{p}" else ratio(secs / ours[p]) for p in ours]
        print(f"{name:16} {secs:9.3f} {count / secs:12,.0f} {cols[0]:>11} {cols[1]:>10}")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="rounds; each one's best counts (default 5)")
    args = ap.parse_args()
    sites, files = load_crawl(), load_oneshot()
    n_urls = sum(len(u) for *_, u in sites)
    present = [c for c in CONTESTANTS if not isinstance(c[1], str)]
    print(machine())
    names = {c[0] for c in present}
    print("versions: " + ", ".join(f"{d} {version(d)}" for n, d in DISTS.items() if n in names))
    for name, why, *_ in CONTESTANTS:
        if isinstance(why, str):
            print(f"missing peer {name}: {why}")
    print(f"crawl: {len(sites)} sites, {n_urls} URLs; one-shot: {len(files)} files; best of {args.repeat}")
    print("'rfc9309 is 3.0x': manners under that profile takes a third of that contestant's time\n")
    sys.stdout.flush()
    for title, unit, count, data, col in (
        ("crawl", "URLs/s", n_urls, sites, 2),
        ("one-shot", "files/s", len(files), files, 3),
    ):
        results = best_of({c[0]: c[col] for c in present}, data, args.repeat)
        report(title, unit, count, results)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
