"""The crawl's schedule (issue 33): a polite crawl lasts as long as its biggest host, so every host
with work is worked from the start, and none waits past its slot behind another host's delay.

Real servers (jetforce, its access log by the server's clock): many small capsules seeded
before two big ones, and a host whose robots.txt cannot be read, crawled with a
``--concurrency`` smaller than the hosts.  ``--concurrency`` counts the requests on the wire,
not the hosts waiting for their turn: the big capsules are asked from the start and the crawl
ends near the longest host's own time; the unreachable host's robots.txt is tried again when
its backoff ends, not when a share of the concurrency is free.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from manners.crawl import Crawler, urls
from manners.crawl.frontier import SQLiteFrontier
from manners.crawl.inflight import DISCOVERING, DISCOVERY, RANKED, ROBOTS, Gate
from servers import free_port, jetforce_hosts

pytestmark = pytest.mark.serial  # time bounds

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
SPACING = 0.1  # --min-delay: every host's spacing
SMALL, SMALL_PAGES = 6, 8
BIG, BIG_PAGES = 2, 28
BACKOFF = 0.6  # --robots-backoff
PAGES_IN_A_ROW = 40


def capsule(root: Path, pages: int) -> Path:
    root.mkdir()
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    (root / "index.gmi").write_text("".join(f"=> p{i}.gmi\n" for i in range(pages)))
    for i in range(pages):
        (root / f"p{i}.gmi").write_text(f"# page {i}\n")
    return root


def test_big_hosts_are_worked_from_the_start_and_a_parked_host_is_retried_at_its_slot(
    tmp_path: Path,
) -> None:
    roots = [capsule(tmp_path / f"small{i}", SMALL_PAGES) for i in range(SMALL)]
    roots += [capsule(tmp_path / f"big{i}", BIG_PAGES) for i in range(BIG)]
    dead = f"localhost:{free_port()}"  # nothing listens: robots.txt cannot be read
    with jetforce_hosts(roots) as jet:
        hosts = [f"localhost:{port}" for port in jet.public_ports]
        seeds = [f"gemini://{dead}/"] + [f"gemini://{h}/" for h in hosts]  # the big ones seeded last
        out = tmp_path / "out"
        cmd = [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", "testbot", "--out", str(out),
               "--allow-private", "--min-delay", str(SPACING), "--concurrency", "2", "--timeout", "5",
               "--robots-backoff", str(BACKOFF), "--robots-attempts", "2", "--cache", "memory",
               "--json", "--no-warc"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)
        assert done.returncode == 0, done.stderr
        accesses = jet.accesses()
    by_host: dict[str, list[float]] = {h: [] for h in hosts}
    for a in accesses:
        host = a.url.split("/")[2]
        by_host[host if host in by_host else f"{host}:1965"].append(a.time)
    big = hosts[SMALL:]
    for h in hosts:  # robots.txt, the index and every page, once each
        assert len(by_host[h]) == (BIG_PAGES if h in big else SMALL_PAGES) + 2, h
    start = min(a.time for a in accesses)
    # the big capsules' robots.txt among the first requests, not after the small ones are done
    assert all(min(by_host[h]) - start < 1.0 for h in big), {h: min(by_host[h]) - start for h in big}
    # the crawl takes about its longest host's own time: its requests back to back, SPACING apart
    bound = (BIG_PAGES + 1) * SPACING
    makespan = max(a.time for a in accesses) - start
    assert makespan < 1.5 * bound, f"makespan {makespan:.2f} s, the longest host's own {bound:.2f} s"
    # the unreachable host: robots.txt tried again when its backoff ends, though every share of
    # --concurrency could have been held by hosts waiting for their turn
    ledger = [json.loads(line) for p in out.glob("requests-*.jsonl") for line in p.read_text().splitlines()]
    tries = sorted(r["t"] for r in ledger if r["authority"] == f"gemini://{dead}" and r["kind"] == "robots")
    assert len(tries) == 2, tries
    assert BACKOFF - 0.05 <= tries[1] - tries[0] < BACKOFF + 0.3, tries[1] - tries[0]


def test_max_pages_holds_with_every_host_at_work_at_once(tmp_path: Path) -> None:
    """Every ready host is leased from at once: together they request no more than --max-pages."""
    roots = [capsule(tmp_path / f"c{i}", 3) for i in range(8)]
    with jetforce_hosts(roots) as jet:
        seeds = [f"gemini://localhost:{port}/" for port in jet.public_ports]
        cmd = [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", "testbot", "--out",
               str(tmp_path / "out"), "--allow-private", "--min-delay", "0.05", "--max-pages", "3",
               "--timeout", "5", "--cache", "memory", "--json", "--no-warc"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)
        assert done.returncode == 0, done.stderr
        pages = [a.url for a in jet.accesses() if not a.url.endswith("/robots.txt")]
    assert len(pages) == 3, pages


def test_the_dispatcher_does_not_walk_the_ready_hosts_after_every_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each look for ready hosts walks every one of them (thousands in a big crawl): a page whose
    links stay on a host already at work brings none, and wakes nobody."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    (root / "index.gmi").write_text("=> p0.gmi\n")
    for i in range(PAGES_IN_A_ROW):  # each page links back and on: links on every page
        (root / f"p{i}.gmi").write_text(f"# page {i}\n=> index.gmi\n=> p{(i + 1) % PAGES_IN_A_ROW}.gmi\n")
    looks = 0
    ready = SQLiteFrontier.ready_authorities

    async def counted(self: SQLiteFrontier, *args: Any, **kwargs: Any) -> list[str]:
        nonlocal looks
        looks += 1
        return await ready(self, *args, **kwargs)

    monkeypatch.setattr(SQLiteFrontier, "ready_authorities", counted)
    with jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.public_ports[0]}/"

        async def crawl() -> list[str]:
            async with Crawler("testbot", (), tmp_path / "out", min_delay=0.02, cache="memory",
                               timeout=5, allow_private=True) as crawler:  # fmt: skip
                return [p.outcome async for p in crawler.crawl([seed])]

        outcomes = asyncio.run(crawl())
    assert outcomes.count("fetched") == PAGES_IN_A_ROW + 2  # the root, index.gmi and every page
    assert looks < PAGES_IN_A_ROW / 4, looks  # it looked after every page: about one look each


def test_a_resumed_crawl_takes_no_host_it_has_read_for_a_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host's first requests go before the others' pages (its robots.txt, then its first pages:
    ``inflight.rank``) to show how big it is.  A host whose pages an earlier run asked has shown
    that: resumed with an empty robots.txt cache, neither its robots.txt nor its pages go as a new
    host's, or at 1,500 hosts the biggest waits behind all their first requests again."""
    pages = 12
    roots = [capsule(tmp_path / f"c{i}", pages) for i in range(2)]
    ranks: list[tuple[int, float]] = []  # a request's rank as it asks for a place: robots.txt's, a page's
    place, ahead = Gate.place, Gate.ahead

    def recorded(self: Gate, rank: tuple[int, float] = (ROBOTS, 0)) -> Any:
        ranks.append(rank)
        return place(self, rank)

    def recorded_ahead(self: Gate, rank: tuple[int, float]) -> Any:
        ranks.append(rank)
        return ahead(self, rank)

    monkeypatch.setattr(Gate, "place", recorded)
    monkeypatch.setattr(Gate, "ahead", recorded_ahead)
    with jetforce_hosts(roots) as jet:
        seeds = [f"gemini://localhost:{port}/" for port in jet.public_ports]

        async def crawl(max_pages: int | None) -> list[str]:
            async with Crawler("testbot", (), tmp_path / "out", min_delay=0.02, cache="memory", timeout=5,
                               allow_private=True, concurrency=1, max_pages=max_pages) as c:  # fmt: skip
                return [p.url async for p in c.crawl(seeds) if p.outcome == "fetched"]

        first = asyncio.run(crawl(16))
        first_ranks, ranks[:] = list(ranks), []
        rest = asyncio.run(crawl(None))
    read = {a: sum(urls.authority(u) == a for u in first) for a in map(urls.authority, seeds)}
    assert all(DISCOVERY <= n <= pages for n in read.values()), read  # each host's first pages read, not all
    assert {tier for tier, _ in first_ranks} == {ROBOTS, DISCOVERING, RANKED}
    assert len(rest) == 2 * (pages + 1) - len(first)
    assert ranks and {tier for tier, _ in ranks} == {RANKED}, ranks
