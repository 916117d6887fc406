"""Benchmark: link extraction and normalisation, links.py against the old path, and its bounds.

links.py drives the engine's scanners (manners-core's smallnet module, through
manners._core); the old path is gemtext.links / gophermap.parse_menu and urls.normalise.

Throughput, in links/s (link lines read, resolved, normalised and deduplicated per second of
one core), the best of --rounds runs:

  (a) a generated gemtext page of 100,000 links (absolute paths, relative names, full
      gemini://, gopher:// and https:// URLs to 2,000 hosts, a few with %-escapes, dot
      segments, upper case or non-ASCII), between lines of text;
  (b) a generated Gopher menu of 100,000 items (text, menus, binaries over a few servers,
      selectors with spaces, URL: lines, mirrors) between info lines;
  (c) the old path on both, side by side: gemtext.links + urls.normalise per link, and
      gophermap.parse_menu + urls.normalise per item, as crawler.py did it;

and, for the ceiling of the fast path, a page of 100,000 distinct absolute paths.

Then the bounds, each measured in a fresh subprocess (so no run inherits another's heap):
the time and resident-memory growth (VmHWM after /proc/self/clear_refs, less VmRSS before)
of reading a 5 MiB page of "=> /x" lines and a 5 MiB menu, new and old; and the longest
stretch the async variants hold the event loop, measured by a heartbeat task that records
the largest gap between its turns.  Targets: >= 500,000 links/s on (a) and (b); no gap over
100 ms.  Not a timed test: run it by hand.

    .venv/bin/python bench/links.py [--links 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from manners.crawl import gemtext, gophermap, urls
from manners.crawl.links import gemtext_links, gemtext_links_async, menu_links, menu_links_async

FIVE_MIB = 5 * 1024 * 1024
BASE = "gemini://capsule.example/notes/2024/index.gmi"
WORDS = ["notes", "log", "about", "gemlog", "recipes", "photos", "music", "code", "links", "misc"]


def gemtext_page(n: int, seed: int = 1) -> str:
    """A page of ``n`` link lines of the shapes real capsules use, text lines between."""
    rng = random.Random(seed)
    lines = ["# A generated capsule", "", "Welcome. These are the links:", ""]
    for i in range(n):
        word = rng.choice(WORDS)
        r = rng.random()
        if r < 0.34:
            target = f"/{word}/{i}.gmi"
        elif r < 0.52:
            target = f"{word}-{i}.gmi"
        elif r < 0.57:
            target = f"{word}/{i}/"
        elif r < 0.79:
            target = f"gemini://{word}{rng.randrange(2000)}.example/{word}/{i}.gmi"
        elif r < 0.87:
            target = f"gopher://hole{rng.randrange(200)}.example/0/{word}/{i}.txt"
        elif r < 0.91:
            target = f"https://www.site{rng.randrange(500)}.example/{word}?id={i}"
        elif r < 0.95:
            target = rng.choice([f"/caf%C3%A9/{i}", f"/a%20b/{i}.gmi", f"/{word}/%E2%9C%93{i}"])
        elif r < 0.97:
            target = rng.choice([f"../{word}/{i}.gmi", f"./{word}-{i}.gmi"])
        elif r < 0.985:
            target = f"gemini://{word.upper()}{rng.randrange(50)}.Example:1965/{i}"
        else:
            target = rng.choice([f"/caf\u00e9/{i}", f"/{word}/%7e{i}", f"mailto:{word}{i}@example.org"])
        label = f" {word.title()} number {i}" if rng.random() < 0.9 else ""
        lines.append(f"=> {target}{label}")
        if rng.random() < 0.5:
            lines.append("Some text between the links, as pages have it.")
    return "\n".join(lines) + "\n"


def gopher_menu(n: int, seed: int = 2) -> bytes:
    """A menu of ``n`` link items over a few servers, info lines between."""
    rng = random.Random(seed)
    hosts = [f"hole{h}.example\t70" for h in range(8)] + ["gopher.example.org\t7070"]
    out = [b"iA generated hole\tTITLE\tnull.host\t1\r\n", b"i\t\tnull.host\t1\r\n"]
    for i in range(n):
        word = rng.choice(WORDS)
        host = rng.choice(hosts)
        r = rng.random()
        if r < 0.88:
            kind = rng.choice("0000011119Ih")
            line = f"{kind}{word.title()} {i}\t/{word}/{i}.txt\t{host}"
        elif r < 0.94:
            line = f"0{word.title()} {i}\t/{word}/My file {i}.txt\t{host}"
        elif r < 0.97:
            line = f"hWeb page {i}\tURL:https://www.site{rng.randrange(300)}.example/{i}\t{host}"
        elif r < 0.98:
            line = f"1Capsule {i}\tURL:gemini://{word}{rng.randrange(100)}.example/{i}\t{host}"
        else:
            line = f"+Mirror {i}\t/{word}/{i}.txt\tmirror{rng.randrange(3)}.example\t70"
        out.append(line.encode() + b"\r\n")
        if rng.random() < 0.3:
            out.append(f"i{word} is a fine thing, said the info line.\t\tnull.host\t1\r\n".encode())
    out.append(b".\r\n")
    return b"".join(out)


def old_gemtext(text: str, base: str) -> list[str]:
    """The old path: crawler.py's _resolve over gemtext.links."""
    out: dict[str, None] = {}
    for link in gemtext.links(text):
        try:
            out[urls.normalise(link.target, base)] = None
        except ValueError:
            continue
    return list(out)


def old_menu(body: bytes) -> list[str]:
    """The old path: crawler.py's loop over gophermap.parse_menu's items."""
    out: dict[str, None] = {}
    for item in gophermap.parse_menu(body).items:
        if item.url is None:
            continue
        try:
            out[urls.normalise(item.url)] = None
        except ValueError:
            continue
    return list(out)


def best(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def max_gap(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """(seconds of work, the longest the event loop went without a heartbeat turn)."""

    async def main() -> tuple[float, float]:
        gap = 0.0
        done = False

        async def heartbeat() -> None:
            nonlocal gap
            last = time.perf_counter()
            while not done:
                await asyncio.sleep(0)
                now = time.perf_counter()
                gap = max(gap, now - last)
                last = now

        beat = asyncio.create_task(heartbeat())
        await asyncio.sleep(0)
        start = time.perf_counter()
        await work()
        took = time.perf_counter() - start
        done = True
        await beat
        return took, gap

    return asyncio.run(main())


# -- the 5 MiB runs, one per subprocess ----------------------------------------------------------


def five_mib_gemtext() -> str:
    return "=> /x\n" * (FIVE_MIB // 6)


def five_mib_menu() -> bytes:
    line = b"0A file with a display of some length\t/dir/file-%07d.txt\thole.example\t70\r\n"
    return b"".join(line % i for i in range(FIVE_MIB // (len(line) + 2)))


def status_kib(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise LookupError(key)


def child(name: str) -> dict[str, Any]:
    """One 5 MiB run: seconds and resident-memory growth (MiB) over the page already in memory."""
    runs: dict[str, Callable[[], int]] = {  # each gives the number of links it kept
        "gemtext-new": lambda: len(gemtext_links(page, BASE).links),
        "gemtext-old": lambda: len(old_gemtext(page, BASE)),
        "menu-new": lambda: len(menu_links(body).links),
        "menu-old": lambda: len(old_menu(body)),
    }
    page = five_mib_gemtext() if name.startswith("gemtext") else ""
    body = five_mib_menu() if name.startswith("menu") else b""
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = status_kib("VmRSS")
    start = time.perf_counter()
    kept = runs[name]()
    took = time.perf_counter() - start
    peak = status_kib("VmHWM")
    lines = page.count("\n") or body.count(b"\n")
    return {"seconds": took, "rss_mib": (peak - before) / 1024, "links": kept, "lines": lines}


def in_subprocess(name: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", name], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--links", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return

    page = gemtext_page(args.links)
    menu = gopher_menu(args.links)
    n_page = len(gemtext.links(page))
    n_menu = sum(item.url is not None for item in gophermap.parse_menu(menu).items)
    new_page = gemtext_links(page, BASE, max_links=10**9)
    print(f"(a) gemtext: {n_page:,} link lines, {len(page) / 2**20:.1f} MiB, "
          f"{len(new_page.links):,} distinct links, {new_page.skipped_count} skipped")  # fmt: skip
    new_menu = menu_links(menu, max_links=10**9)
    print(f"(b) menu:    {n_menu:,} linkable items, {len(menu) / 2**20:.1f} MiB, "
          f"{len(new_menu.links):,} distinct links, {new_menu.skipped_count} skipped")  # fmt: skip

    plain = "".join(f"=> /notes/{i}.gmi Note {i}\n" for i in range(args.links))
    rows = [
        ("(a) gemtext", n_page, lambda: gemtext_links(page, BASE, 10**9), lambda: old_gemtext(page, BASE)),
        ("(b) menu", n_menu, lambda: menu_links(menu, 10**9), lambda: old_menu(menu)),
        (
            "abs paths",
            args.links,
            lambda: gemtext_links(plain, BASE, 10**9),
            lambda: old_gemtext(plain, BASE),
        ),
    ]
    print(f"\nthroughput, best of {args.rounds} (target >= 500,000 links/s):")
    for name, n, new, old in rows:
        new_s = best(new, args.rounds)
        old_s = best(old, max(1, args.rounds // 2))
        print(f"  {name:<12} new {n / new_s:>11,.0f} links/s ({new_s * 1000:6.1f} ms)   "
              f"old {n / old_s:>9,.0f} links/s ({old_s * 1000:7.1f} ms)   x{old_s / new_s:.1f}")  # fmt: skip

    print("\n5 MiB pages, each run in a fresh process (time; resident-memory growth over the page):")
    for name in ("gemtext-new", "gemtext-old", "menu-new", "menu-old"):
        r = in_subprocess(name)
        print(f"  {name:<12} {r['seconds'] * 1000:7.0f} ms  {r['rss_mib']:7.1f} MiB  "
              f"({r['lines']:,} lines, {r['links']:,} links kept)")  # fmt: skip

    print("\nlongest hold of the event loop by the async variants (heartbeat gap):")
    big_page, big_menu = five_mib_gemtext(), five_mib_menu()
    cases: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("5 MiB '=> /x' page", lambda: gemtext_links_async(big_page, BASE)),
        ("5 MiB menu", lambda: menu_links_async(big_menu)),
        ("(a) page, all links", lambda: gemtext_links_async(page, BASE, 10**9)),
        ("(b) menu, all links", lambda: menu_links_async(menu, 10**9)),
    ]
    for name, work in cases:
        gc.collect()
        took, gap = max_gap(work)
        print(
            f"  {name:<22} {took * 1000:6.0f} ms of work, longest gap {gap * 1000:5.1f} ms (target < 100 ms)"
        )


if __name__ == "__main__":
    main()
