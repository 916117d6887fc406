"""The space bench's schedule model: how long a crawl of a space takes under a rule for who goes
first while the CPU is short, in seconds of computing instead of minutes of crawling.

One CPU serves requests one at a time, ``--cpu-ms`` each (what the crawler spends on a request:
about 5.5 ms on the 2-core machine of docs/benchmarks.md); each host has one request in flight
at most and its next one no sooner than its spacing (and the crawler's claim margin) after the
last one began; a host's pages are its tree in bench/space_model.py, found as its pages are read
(robots.txt first, linking to nothing; then the root; each page's children queued once it is
read).  Whenever the CPU is free, a rule picks among the hosts whose turn has come:

- ``fifo``: the longest waiting (what the crawler did before ``inflight.Gate``);
- ``ranked``: ``inflight.rank``, the crawler's rule: a host's first pages, then the most queued
  per page asked;
- ``first-queued``: a host's first pages, then the most queued (the gate's rule before);
- ``queued``: the most queued, from the first page on;
- ``oracle``: the most pages left, known in advance (no crawler knows it: the ceiling).

It leaves out what the servers do (their CPU is the other core's), links across hosts and
robots.txt's disallowed branches; with the same CPU cost it comes within a few percent of the
bench's measured makespans (docs/benchmarks.md), which is what it is for: ranking rules, not
figures to publish.

    python bench/space_schedule.py --small --factor 10 --seeds 1,2,3 [--cpu-ms 5.5]
"""

from __future__ import annotations

import argparse
import heapq
from collections import deque
from collections.abc import Callable

from manners.cache import claim_margin
from manners.crawl.inflight import DISCOVERY, rank
from space_model import FACTOR, build, children

Rule = Callable[[int, int, int], tuple[int, float]]  # (pages asked, queued, pages left) -> rank, higher first

RULES: dict[str, Rule] = {
    "fifo": lambda sent, queued, left: (0, 0),
    "ranked": lambda sent, queued, left: rank(sent, queued),
    "first-queued": lambda sent, queued, left: (int(sent < DISCOVERY), queued),
    "queued": lambda sent, queued, left: (0, queued),
    "oracle": lambda sent, queued, left: (0, left),
}


def makespan(
    hosts: list[tuple[int, int]], spacing: float, cpu: float, rule: Rule, answer: float = 0.004
) -> float:
    """Seconds until every host's pages are read: ``hosts`` as (pages, fanout), ``spacing``
    between a host's request starts, ``cpu`` seconds of the CPU per request, ``answer`` seconds
    from a request's end on the CPU to its links being queued."""
    queue = [deque([-1, 0]) for _ in hosts]  # -1: robots.txt
    sent = [0] * len(hosts)
    left = [pages + 1 for pages, _ in hosts]
    due = [(0.0, h) for h in range(len(hosts))]  # (turn, host): hosts with work, not in flight
    ready: list[tuple[tuple[int, float], float, int]] = []  # (-rank, turn, host): turn come
    answers: list[tuple[float, int, list[int], float]] = []  # (at, host, links, next turn)
    now, total = 0.0, sum(left)
    while total:
        while answers and answers[0][0] <= now:
            _, h, links, turn = heapq.heappop(answers)
            queue[h].extend(links)
            if queue[h]:
                heapq.heappush(due, (turn, h))
        while due and due[0][0] <= now:
            turn, h = heapq.heappop(due)
            r = rule(sent[h], len(queue[h]), left[h])
            heapq.heappush(ready, ((-r[0], -r[1]), turn, h))
        if not ready:
            never = float("inf")
            now = max(now, min(due[0][0] if due else never, answers[0][0] if answers else never))
            continue
        _, _, h = heapq.heappop(ready)
        page = queue[h].popleft()
        start, now = now, now + cpu
        pages, fanout = hosts[h]
        links = [] if page < 0 else list(children(pages, fanout, page))
        sent[h] += page >= 0
        left[h] -= 1
        total -= 1
        heapq.heappush(answers, (now + answer, h, links, max(start + spacing, now + answer)))
    return now


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--small", action="store_true", help="400 capsules and 40 holes")
    p.add_argument("--hosts", type=int, default=None)
    p.add_argument("--holes", type=int, default=None)
    p.add_argument("--seeds", default="1")
    p.add_argument("--factor", type=float, default=FACTOR)
    p.add_argument("--cpu-ms", type=float, default=5.5, help="the crawler's CPU per request")
    p.add_argument("--rules", default=",".join(RULES))
    args = p.parse_args()
    n = args.hosts or (400 if args.small else 4000)
    m = args.holes if args.holes is not None else (40 if args.small else 400)
    spacing = 1 / args.factor
    for seed in (int(s) for s in args.seeds.split(",")):
        space = build(seed, n, m, factor=args.factor)
        hosts = [(h.pages, h.fanout) for h in space.hosts if h.fault != "dead"]
        biggest = max(hosts)
        bound = (biggest[0] + 1) * spacing
        out = [f"seed {seed}: {len(hosts)} hosts, biggest {biggest[0]} pages (fanout {biggest[1]}),"
               f" bound {bound:.0f} s:"]  # fmt: skip
        for name in args.rules.split(","):
            took = makespan(hosts, spacing + claim_margin(spacing), args.cpu_ms / 1000, RULES[name])
            out.append(f"{name} {took / bound:.3f}")
        print(" ".join(out), flush=True)


if __name__ == "__main__":
    main()
