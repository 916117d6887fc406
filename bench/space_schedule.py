"""The space bench's schedule model: how long a crawl of a space takes under a rule for who goes
first while the CPU is short, in seconds of computing instead of minutes of crawling.

One CPU serves requests one at a time, ``--cpu-ms`` each (what the crawler spends on a request:
about 5.5 ms on the 2-core machine of docs/benchmarks.md); each host has one request in flight
at most and its next one no sooner than its spacing (and the crawler's claim margin) after the
last one began; a host's pages are its tree in bench/space_model.py, found as its pages are read
(robots.txt first, linking to nothing; then the root; each page's children queued once it is
read).  Whenever the CPU is free, a rule picks among the hosts whose turn has come:

- ``fifo``: the longest waiting (what the crawler did before ``inflight.Gate``);
- ``ranked``: ``inflight.rank``, the crawler's rule in one process: a host past its first pages
  queueing 3 or more per page asked, then a host's first pages, then the most queued per page
  asked;
- ``fleet``: a fleet's worker's rule before its gate gave growing hosts half its places: no
  host before the first pages, then the most queued per page asked;
- ``first-queued``: a host's first pages, then the most queued (the gate's rule before);
- ``queued``: the most queued, from the first page on;
- ``oracle``: the most seconds of pages left, known in advance (no crawler knows it: the ceiling).

By default every host is its whole tree at the floor spacing.  ``--planned`` takes the space as
the bench plans its crawl (bench/space_checks.py): only the pages robots.txt lets the crawl ask,
each host at the spacing its robots.txt asks, its pages' random links within it as well as its
tree, and a page linked only from other hosts queued from the start.  Without it the biggest
host of the default space's seed 1 has 28,950 pages; planned, it has 10,288, as in the bench,
and the CPU's share of the crawl is larger.  Either way it leaves out what the servers do (their
CPU is the other core's) and the order links across hosts are found in; it is for ranking
rules, not figures to publish.

    python bench/space_schedule.py --small --factor 10 --seeds 1,2,3 [--cpu-ms 5.5] [--planned]
"""

from __future__ import annotations

import argparse
import functools
import heapq
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from manners.cache import written_margin
from manners.crawl.inflight import DISCOVERY, rank
from space_checks import Crawl, linked, plan
from space_model import FACTOR, Space, build, children

Rule = Callable[[int, int, int, float], tuple[int, float]]  # (pages asked, queued, left, spacing) -> rank

RULES: dict[str, Rule] = {
    "fifo": lambda sent, queued, left, spacing: (0, 0),
    "ranked": lambda sent, queued, left, spacing: rank(sent, queued),
    "fleet": lambda sent, queued, left, spacing: (
        (1, queued) if sent < DISCOVERY else (0, queued / (sent + 1))
    ),
    "first-queued": lambda sent, queued, left, spacing: (int(sent < DISCOVERY), queued),
    "queued": lambda sent, queued, left, spacing: (0, queued),
    "oracle": lambda sent, queued, left, spacing: (0, left * spacing),
}


@dataclass
class Site:
    """A host as the model sees it: its spacing and its pages' links within it (page 0 the root)."""

    spacing: float
    links: Callable[[int], Iterable[int]]
    pages: int
    seeds: tuple[int, ...] = (0,)  # pages queued from the start (the root; those linked from elsewhere only)


def tree_sites(hosts: list[tuple[int, int]], spacing: float) -> list[Site]:
    """Hosts as (pages, fanout) trees, all at ``spacing``."""
    return [Site(spacing, functools.partial(children, pages, fanout), pages) for pages, fanout in hosts]


def planned_sites(space: Space, crawl: Crawl) -> tuple[list[Site], float]:
    """The hosts as ``space_checks.plan`` has them (only the pages the crawl may ask; each host at
    the spacing its robots.txt asks; its pages' links within it, the random ones too), and the
    plan's politeness bound."""
    planned = plan(space, crawl)
    sites = []
    for hp in planned.hosts.values():
        host = hp.host
        if not hp.pages or host.fault == "dead":
            continue
        allowed = {i for p in hp.pages if (i := space.page_of(host, p)) is not None}
        links: dict[int, list[int]] = {}
        for i in allowed:
            found = linked(space, space.links(host, i), set())
            links[i] = [j for other, j, _ in found if other is host and j in allowed and j != i]
        reached, todo = {0}, [0]
        while todo:
            for j in links.get(todo.pop(), ()):
                if j not in reached:
                    reached.add(j)
                    todo.append(j)
        seeds = (0, *sorted(allowed - reached))  # linked only from other hosts: queued from the start
        spacing = hp.spacing + written_margin(hp.spacing)
        sites.append(Site(spacing, lambda i, links=links: links.get(i, ()), len(allowed), seeds))
    return sites, planned.politeness_bound()


def makespan(
    hosts: list[tuple[int, int]], spacing: float, cpu: float, rule: Rule, answer: float = 0.004
) -> float:
    """Seconds until every host's pages are read: ``hosts`` as (pages, fanout) trees, ``spacing``
    between a host's request starts, ``cpu`` seconds of the CPU per request, ``answer`` seconds
    from a request's end on the CPU to its links being queued."""
    return run(tree_sites(hosts, spacing), cpu, rule, answer)


def run(
    sites: list[Site],
    cpu: float,
    rule: Rule,
    answer: float = 0.004,
    trace: list[tuple[int, float]] | None = None,
) -> float:
    """Seconds until every site's pages are read (see ``makespan``); ``trace`` gets each request's
    (site, start)."""
    queue = [deque([-1, *site.seeds]) for site in sites]  # -1: robots.txt
    seen = [set(site.seeds) for site in sites]
    sent = [0] * len(sites)
    left = [site.pages + 1 for site in sites]
    due = [(0.0, h) for h in range(len(sites))]  # (turn, host): hosts with work, not in flight
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
            r = rule(sent[h], len(queue[h]), left[h], sites[h].spacing)
            heapq.heappush(ready, ((-r[0], -r[1]), turn, h))
        if not ready:
            if not due and not answers:  # nothing left that any page links to
                break
            never = float("inf")
            now = max(now, min(due[0][0] if due else never, answers[0][0] if answers else never))
            continue
        _, _, h = heapq.heappop(ready)
        page = queue[h].popleft()
        if trace is not None:
            trace.append((h, now))
        start, now = now, now + cpu
        links = []
        if page >= 0:
            for link in sites[h].links(page):
                if link not in seen[h]:
                    seen[h].add(link)
                    links.append(link)
        sent[h] += page >= 0
        left[h] -= 1
        total -= 1
        heapq.heappush(answers, (now + answer, h, links, max(start + sites[h].spacing, now + answer)))
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
    p.add_argument(
        "--planned",
        action="store_true",
        help="the space as the bench plans its crawl: only allowed pages, each host's Crawl-delay",
    )
    args = p.parse_args()
    n = args.hosts or (400 if args.small else 4000)
    m = args.holes if args.holes is not None else (40 if args.small else 400)
    spacing = 1 / args.factor
    for seed in (int(s) for s in args.seeds.split(",")):
        space = build(seed, n, m, factor=args.factor)
        if args.planned:
            sites, bound = planned_sites(space, Crawl(min_delay=1 / args.factor, backoff=60 / args.factor))
            biggest = max(sites, key=lambda s: s.pages * s.spacing)
            out = [f"seed {seed}: {len(sites)} hosts, longest {biggest.pages} pages"
                   f" at {biggest.spacing:.3f} s, bound {bound:.0f} s:"]  # fmt: skip
            for name in args.rules.split(","):
                out.append(f"{name} {run(sites, args.cpu_ms / 1000, RULES[name]) / bound:.3f}")
            print(" ".join(out), flush=True)
            continue
        hosts = [(h.pages, h.fanout) for h in space.hosts if h.fault != "dead"]
        biggest = max(hosts)
        bound = (biggest[0] + 1) * spacing
        out = [f"seed {seed}: {len(hosts)} hosts, biggest {biggest[0]} pages (fanout {biggest[1]}),"
               f" bound {bound:.0f} s:"]  # fmt: skip
        for name in args.rules.split(","):
            took = makespan(hosts, spacing + written_margin(spacing), args.cpu_ms / 1000, RULES[name])
            out.append(f"{name} {took / bound:.3f}")
        print(" ".join(out), flush=True)


if __name__ == "__main__":
    main()
