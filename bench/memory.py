"""Memory held per parsed policy, manners against Protego 0.7, as a multiple of the file's bytes.

Over the 1,225 bench sites (data/corpus/bench.tar.xz: robotfiles/<site> that have a links file), each
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

Each is measured three times: once parsed; again after every object has answered one allowed()
question, for its site's first link; and again after it has answered its site's first 20 links
(links/<site> there; fewer where the file lists fewer).  Answering builds state
lazily (manners chooses the robot's groups at the first question and compiles their rules into an
index at a later one), so the parsed figure alone understates what a policy in use for a whole
crawl holds: the third measure is that.  Of --repeat runs per
contestant, the smallest rss counts (the others are deterministic).  The project's targets: a
parsed policy of manners holds <= 1.0x the file's bytes (the worse of rss and sizeof), and after
answering 20 URLs each, <= 1.5x (rss).

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from data_paths import unpacked

BENCH = unpacked("bench")
AGENT = "googlebot"
LINKS = 20  # the third measure: after each policy has answered this many of its site's links
TARGET = 1.0  # a parsed policy: the worse of rss and sizeof, per byte of robots.txt
TARGET_ANSWERED = 1.5  # after answering LINKS URLs each: rss per byte of robots.txt
# Each measure: its key, its heading, and how many URLs each policy has answered by then.
PHASES = (
    ("parsed", "parsed", 0),
    ("asked", "after one allowed() each", 1),
    ("answered", f"after {LINKS} URLs each", LINKS),
)
CONTESTANTS = ("manners-rfc9309", "manners-google", "protego")
SKIP = (type, ModuleType, FunctionType, BuiltinFunctionType, MethodType, CodeType)  # shared, not per policy


def sites() -> list[tuple[Path, list[str]]]:
    """Each bench site's robots.txt path and its first LINKS links (the first as load_crawl in
    bench.py pairs them; the site's home page when its links file is empty)."""
    found = []
    for links in sorted((BENCH / "links").iterdir()):
        robots = BENCH / "robotfiles" / links.name
        if robots.exists():
            urls = [u for u in links.read_text("utf-8", "replace").split("\n") if u]
            found.append((robots, urls[:LINKS] or [f"https://{links.name}/"]))
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
    ask(warm, todo[0][1][0])
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
    out: dict[str, float] = {"bytes": total, "files": len(held), "answers": 0}
    answered = 0
    for when, _, asks in PHASES:
        for obj, (_, urls) in zip(held, todo, strict=True):
            for url in urls[answered:asks]:
                ask(obj, url)
                out["answers"] += 1
        answered = asks
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
    print(f"; {first['answers']:,.0f} URLs answered, at most {LINKS} a site; best of {args.repeat}")
    print("held memory as a multiple of the files' bytes (MB of rss growth in brackets)\n")
    cell = "{:>7} {:>9} {:>7} {:>7}"
    print(f"{'':16} " + "   ".join(f"{heading:^33}" for _, heading, _ in PHASES))
    head = cell.format("rss", "(MB)", "sizeof", "deep")
    print(f"{'contestant':16} " + "   ".join([head] * len(PHASES)))
    for name, r in results.items():
        cols = [
            cell.format(
                f"{r[f'{w} rss'] / total:.2f}x",
                f"({r[f'{w} rss'] / 1e6:.1f})",
                f"{r[f'{w} sizeof'] / total:.2f}x",
                f"{r[f'{w} deep'] / total:.2f}x",
            )
            for w, _, _ in PHASES
        ]
        print(f"{name:16} " + "   ".join(cols))
    print()
    for name, r in results.items():
        if name.startswith("manners-"):
            worst = max(r["parsed rss"], r["parsed sizeof"]) / total
            asked = max(r["asked rss"], r["asked sizeof"]) / total
            answered = r["answered rss"] / total
            print(
                f"{name}: parsed, worst of rss and sizeof {worst:.2f}x ({verdict(worst, TARGET)});"
                f" after one allowed() each {asked:.2f}x;"
                f" after {LINKS} URLs each, rss {answered:.2f}x ({verdict(answered, TARGET_ANSWERED)})"
            )


def verdict(measured: float, target: float) -> str:
    return f"{'meets' if measured <= target else 'misses'} the target, <= {target}x"


if __name__ == "__main__":
    main()
