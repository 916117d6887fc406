"""Benchmark: one hostile 5 MiB page of links in a crawl, and what it costs everyone else.

A crawl (``manners crawl`` in a child process, defaults but --min-delay) of three hosts on
loopback: jetforce serving a 5 MiB gemtext page of links, a purpose-built Gopher server whose
root is a menu of 1,000,000 links (about 30 MiB; the crawler keeps 5 MiB of it), and an
innocent Gopher host (a menu trap, one link deeper each time) crawled at the same time.  It
reports the crawler's CPU seconds and peak RSS, the frontier's size, and the innocent host's
lateness: how long after its turn (the previous request + the delay) each of its requests
reached its server, read from that server's own log.  Targets (issue 21): under 200 MB RSS,
a frontier under 10 MB, the innocent host never more than 0.5 s late.  Not a timed test: run
it by hand.

    .venv/bin/python bench/hostile_page.py [--kind distinct|same] [--delay 0.2] [--pages 60]

``--kind distinct``: every line a different link (``=> /p/<i>``), the expensive case: 10,000
of them are normalised and queued (--max-links); ``same``: one link repeated (``=> /x``).
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import hostile  # noqa: E402
import servers  # noqa: E402

MiB = 1 << 20


def page(kind: str) -> str:
    lines, size, i = [], 0, 0
    while size < 5 * MiB:
        line = f"=> /p/{i} link {i}\n" if kind == "distinct" else "=> /x\n"
        lines.append(line)
        size += len(line)
        i += 1
    return "# A hostile page\n" + "".join(lines)


def run(kind: str, delay: float, pages: int) -> None:
    with tempfile.TemporaryDirectory(prefix="manners-bench-hostile-") as tmp:
        work = Path(tmp)
        (work / "capsule").mkdir()
        (work / "capsule" / "big.gmi").write_text(page(kind))
        (work / "capsule" / "robots.txt").write_text("User-agent: *\nAllow: /\n")
        with (
            servers.jetforce_hosts([work / "capsule"]) as jet,
            hostile.big_menu(1_000_000) as menu,
            hostile.gopher_trap(fan=3) as trap,
        ):
            seeds = [
                f"gemini://localhost:{jet.public_ports[0]}/big.gmi",
                f"gopher://127.0.0.1:{menu.port}/1/",
                f"gopher://127.0.0.1:{trap.port}/1/d/0/0",
            ]
            out = work / "out"
            cmd = [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", "benchbot", "--out", str(out),
                   "--min-delay", str(delay), "--max-pages", str(pages), "--cache", "memory"]  # fmt: skip
            # PYTHONASYNCIODEBUG=1 shows which steps held the crawler's event loop for over 100 ms
            shown = None if os.environ.get("PYTHONASYNCIODEBUG") else subprocess.DEVNULL
            start = time.perf_counter()
            child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=shown)
            child.returncode = hostile.wait_measured(child.pid, 600, cmd)
            wall = time.perf_counter() - start
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # CPU: this is the only child that ended
            opened = [c.opened for c in trap.snapshot()]
        frontier = sum(f.stat().st_size for f in out.glob("frontier.sqlite3*"))
        lateness = [b - a - delay for a, b in itertools.pairwise(opened)]
        print(f"5 MiB gemtext page of {'distinct links' if kind == 'distinct' else 'one link repeated'}"
              f" + a 1,000,000-line menu, --min-delay {delay:g}, {pages} pages; exit status"
              f" {child.returncode}")  # fmt: skip
        print(f"  crawler CPU        {usage.ru_utime + usage.ru_stime:6.2f} s   (wall {wall:.1f} s)")
        peak = hostile.PEAKS.pop(child.pid)  # VmHWM after exec: wait4 would count the fork of this process
        print(f"  crawler peak RSS   {peak / 1e6:6.1f} MB   (target < 200 MB)")
        print(f"  frontier on disk   {frontier / 1e6:6.2f} MB   (target < 10 MB)")
        if lateness:
            print(f"  innocent host      {len(opened)} requests; lateness after its turn: max"
                  f" {max(lateness):.3f} s, median {sorted(lateness)[len(lateness) // 2]:.3f} s"
                  f"   (target < 0.5 s)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=("distinct", "same"), default="distinct")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--pages", type=int, default=60)
    args = parser.parse_args()
    run(args.kind, args.delay, args.pages)


if __name__ == "__main__":
    main()
