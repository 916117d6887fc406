"""Does parsing scale across threads?  manners in 1 thread against 2 threads on the same work.

Every file of the web corpus, data/corpus/web.tar.xz (read as bytes), is parsed with
manners.parse(body) and asked one allowed() question; with 2 threads (a ThreadPoolExecutor) each
thread takes half the files.
Rounds take turns (1 thread, then 2) and the best of --repeat rounds counts.  The project's target
is 2 threads >= 1.6x one thread, reachable only when the engine releases the GIL while it works;
a pure-Python engine shows about 1.0x.  The ratio only means something with a free core, so the
load average before starting is printed too.

Run: .venv/bin/python bench/threads.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import manners

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from data_paths import unpacked

WEB = unpacked("web")
AGENT = "googlebot"
TARGET = 1.6

File = tuple[bytes, str]


def load() -> list[File]:
    return [(p.read_bytes(), f"https://{p.name}/some/page.html?id=1") for p in sorted(WEB.iterdir())]


def work(files: list[File]) -> int:
    """Parse and ask once per file; the count of allowed answers keeps the work from being skipped."""
    n = 0
    for body, url in files:
        n += manners.parse(body).allowed(url, AGENT)
    return n


def machine_busy() -> float | None:
    """Seconds of CPU the whole machine has spent busy since boot (None off Linux)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class OthersMeter:
    """Cores kept busy by other processes: the machine's busy time less our own, per wall second."""

    def __init__(self) -> None:
        self.start()

    def start(self) -> None:
        t = os.times()
        self.t0, self.own0, self.busy0 = time.perf_counter(), t.user + t.system, machine_busy()

    def cores(self) -> float | None:
        busy = machine_busy()
        if busy is None or self.busy0 is None:
            return None
        t = os.times()
        others = (busy - self.busy0) - (t.user + t.system - self.own0)
        return max(0.0, others) / (time.perf_counter() - self.t0)


def one_thread(files: list[File], pool: ThreadPoolExecutor) -> int:
    return work(files)


def two_threads(files: list[File], pool: ThreadPoolExecutor) -> int:
    half = len(files) // 2
    return sum(pool.map(work, (files[:half], files[half:])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=10, help="rounds; each one's best counts (default 10)")
    args = ap.parse_args()
    files = load()
    # alternate files between the halves so both threads get a like mix of large and small ones
    files = files[0::2] + files[1::2]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    meter = OthersMeter()
    time.sleep(1.0)
    others = meter.cores()
    load1, load5, _ = os.getloadavg()
    print(f"CPython {platform.python_version()}, {cores} usable cores", end="")
    print(f"; {len(files)} files; best of {args.repeat}")
    print(f"load average before starting: {load1:.2f} (1 min), {load5:.2f} (5 min)")
    if others is not None:
        note = "BUSY: the 2-thread figure is not to be trusted" if others > 0.3 else "a core is free"
        print(f"other processes used {others:.2f} cores over the second before starting: {note}")
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print(f"GIL enabled: {gil}\n")
    best = {"1 thread": float("inf"), "2 threads": float("inf")}
    answers = set()
    with ThreadPoolExecutor(max_workers=2) as pool:
        pool.submit(int).result()  # start the pool before timing
        meter.start()
        for _ in range(args.repeat):
            for name, fn in (("1 thread", one_thread), ("2 threads", two_threads)):
                gc.collect()
                t = time.perf_counter()
                answers.add(fn(files, pool))
                best[name] = min(best[name], time.perf_counter() - t)
    others = meter.cores()
    assert len(answers) == 1, f"threads changed the answers: {answers}"
    for name, secs in best.items():
        print(f"{name:10} {secs:8.3f} s {len(files) / secs:10,.0f} files/s")
    r = best["1 thread"] / best["2 threads"]
    verdict = "meets" if r >= TARGET else "misses"
    print(f"\n2 threads / 1 thread: {r:.2f}x ({verdict} the target of {TARGET}x)")
    if others is not None:
        print(f"other processes used {others:.2f} cores on average while timing")
    if cores < 2:
        print("only one usable core: the ratio cannot exceed 1.0x here")


if __name__ == "__main__":
    main()
