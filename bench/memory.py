"""Memory held per parsed policy, manners against Protego 0.7, as a multiple of the file's bytes.

Over the 1,225 bench sites (../shared/corpus/bench/robotfiles/<site> that have a links file), each
contestant parses every file (read as bytes; Protego gets it decoded as UTF-8) and keeps all the
parsed objects.  Each contestant runs in a fresh subprocess of this script, so none inherits another's
heap.  Measured, each divided by the total bytes of the files:

  rss     growth of the process's resident memory (/proc/self/statm) while holding the objects.  The
          body is read and dropped inside the window, so a body the engine keeps is counted; after
          gc.collect() and glibc's malloc_trim(0), so freed memory does not count.  Includes
          allocator overhead and fragmentation: it is what a crawler holding the policies pays.
  sizeof  manners: sys.getsizeof(robots), which a Rust object answers with its own heap (the
          pure-Python engine answers only for its outer object, so read 'deep' for it today).
          Protego: deep size (below), since its state lives in plain Python objects.
  deep    sum of sys.getsizeof over every object reachable (gc.get_referents) from the parsed objects,
          each counted once, leaving out types, modules, functions and code, and anything already
          reachable from the contestant's modules before parsing (shared state, not per policy).

Then every object answers one allowed() question for the site's first link (building any lazy index)
and all three are measured again.  Of --repeat runs per contestant, the smallest rss counts (the
others are deterministic).  The project's target: manners holds <= 1.0x the file's bytes.

Run: .venv/bin/python bench/memory.py [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import BuiltinFunctionType, CodeType, FunctionType, MethodType, ModuleType
from typing import Any

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus"
AGENT = "googlebot"
TARGET = 1.0
CONTESTANTS = ("manners-rfc9309", "manners-google", "protego")
SKIP = (type, ModuleType, FunctionType, BuiltinFunctionType, MethodType, CodeType)  # shared, not per policy


def sites() -> list[tuple[Path, str]]:
    """Each bench site's robots.txt path and its first link (as load_crawl in bench.py pairs them)."""
    found = []
    for links in sorted((SHARED / "bench" / "links").iterdir()):
        robots = SHARED / "bench" / "robotfiles" / links.name
        if robots.exists():
            urls = [u for u in links.read_text("utf-8", "replace").split("\n") if u]
            found.append((robots, urls[0] if urls else f"https://{links.name}/"))
    return found


def rss() -> int:
    """Resident bytes now, after a collection and handing freed heap back, so only live memory counts."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: freed heap may linger, read as held
        ctypes.CDLL(None).malloc_trim(0)
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reachable(roots: Iterable[Any], skip_ids: set[int]) -> tuple[set[int], int]:
    """Ids of, and summed getsizeof over, objects reachable from roots, each once, minus shared ones."""
    seen: set[int] = set()
    total = 0
    stack = list(roots)
    while stack:
        obj = stack.pop()
        i = id(obj)
        if i in seen or i in skip_ids or isinstance(obj, SKIP):
            continue
        seen.add(i)
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return seen, total


def contestant(name: str) -> tuple[Callable[[bytes], Any], Callable[[Any, str], bool], list[Any]]:
    """Parse and ask functions, and the modules whose reachable state counts as shared."""
    if name.startswith("manners-"):
        import manners

        profile = name.split("-", 1)[1]
        mods = [m for n, m in sys.modules.items() if n == "manners" or n.startswith("manners.")]
        return (
            lambda raw: manners.parse(raw, profile=profile, max_bytes=None),
            lambda obj, url: obj.allowed(url, AGENT),
            mods,
        )
    import protego

    return (
        lambda raw: protego.Protego.parse(raw.decode("utf-8", "replace")),
        lambda obj, url: obj.can_fetch(url, AGENT),
        [protego],
    )


def child(name: str) -> dict[str, float]:
    """One contestant's measures, in this fresh process."""
    parse, ask, mods = contestant(name)
    todo = sites()
    warm = parse(todo[0][0].read_bytes())  # first-use caches (regexes, tables) are not per policy
    ask(warm, todo[0][1])
    del warm
    shared, _ = reachable([vars(m) for m in mods], set())
    shared.add(id(mods))
    size_of = name.startswith("manners-")
    base = rss()
    held, total = [], 0
    for path, _ in todo:
        raw = path.read_bytes()
        total += len(raw)
        held.append(parse(raw))
    del raw
    out: dict[str, float] = {"bytes": total, "files": len(held)}
    for when in ("parsed", "asked"):
        if when == "asked":
            for obj, (_, url) in zip(held, todo, strict=True):
                ask(obj, url)
        out[f"{when} rss"] = rss() - base
        _, deep = reachable(held, shared | {id(held)})
        out[f"{when} deep"] = deep
        out[f"{when} sizeof"] = sum(map(sys.getsizeof, held)) if size_of else deep
    return out


def run(name: str, repeat: int) -> dict[str, float]:
    """Best of ``repeat`` fresh subprocesses: rss varies a little, the sizes not at all."""
    best: dict[str, float] = {}
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, __file__, "--child", name], capture_output=True, text=True, check=True
        )
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        best = got if not best else {k: min(v, got[k]) for k, v in best.items()}
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="fresh runs per contestant; least rss counts")
    ap.add_argument("--child", choices=CONTESTANTS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    results = {}
    for name in CONTESTANTS:
        try:
            results[name] = run(name, args.repeat)
        except subprocess.CalledProcessError as e:
            last = (e.stderr.strip().splitlines() or ["?"])[-1]
            print(f"missing contestant {name}: {last}")
    first = next(iter(results.values()))
    total, files = first["bytes"], int(first["files"])
    print(f"{files} sites, {total:,.0f} bytes of robots.txt ({total / files:,.0f} a file)", end="")
    print(f"; best of {args.repeat}")
    print("held memory as a multiple of the files' bytes (MB of rss growth in brackets)\n")
    cell = "{:>7} {:>9} {:>7} {:>7}"
    print(f"{'':16} {'parsed':^33}   {'after one allowed() each':^33}")
    head = cell.format("rss", "(MB)", "sizeof", "deep")
    print(f"{'contestant':16} {head}   {head}")
    for name, r in results.items():
        cols = [
            cell.format(
                f"{r[f'{w} rss'] / total:.2f}x",
                f"({r[f'{w} rss'] / 1e6:.1f})",
                f"{r[f'{w} sizeof'] / total:.2f}x",
                f"{r[f'{w} deep'] / total:.2f}x",
            )
            for w in ("parsed", "asked")
        ]
        print(f"{name:16} {cols[0]}   {cols[1]}")
    print()
    for name, r in results.items():
        if name.startswith("manners-"):
            # the target is for a parsed policy; answering builds indexes, shown beside it
            worst = max(r["parsed rss"], r["parsed sizeof"]) / total
            asked = max(r["asked rss"], r["asked sizeof"]) / total
            verdict = "meets" if worst <= TARGET else "misses"
            print(
                f"{name}: parsed, worst of rss and sizeof {worst:.2f}x ({verdict} the target, <= {TARGET}x);"
                f" after answering {asked:.2f}x"
            )


if __name__ == "__main__":
    main()
