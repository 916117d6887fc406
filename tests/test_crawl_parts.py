"""Parts of the crawler tested in this process, fast (all in the quick tier): a revisit's next
due time (``visits``), a fleet's frontier waited for through an outage (``patient_frontier``),
a real Redis's settings judged (``redis_durability``), and a host's slot booked after its last
start (the stores in memory and SQLite, and the SQLite frontier)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from manners.cache import Slots
from manners.cache.memory import MemoryStore
from manners.cache.sqlite import SQLiteStore
from manners.crawl.frontier import FrontierError, Lease, open_frontier
from manners.crawl.page import Page
from manners.crawl.patient_frontier import Patient
from manners.crawl.redis_durability import durability
from manners.crawl.urls import authority
from manners.crawl.visits import Visiting, next_visit, same_refusal
from servers import redis_server

pytestmark = pytest.mark.quick

URL = "gemini://a.example/p.gmi"


def test_an_unchanged_page_is_asked_again_after_twice_its_interval_counted_from_its_request() -> None:
    lease = Lease(URL, 0, 0, None, 0, visits=2, interval=10.0, digest="d", capture_at=1.0)
    page = Page(URL, "fetched", 0, 120.0, status=20)
    visit = next_visit(lease, page, Visiting(started=100.0, capture=("d", 1.0, False)), 120.0,
                       min_delay=1.0, revisit_min=10.0, revisit_max=1000.0)  # fmt: skip
    assert (visit.number, visit.interval, visit.due, visit.changed) == (3, 20.0, 120.0, False)
    changed = next_visit(lease, page, Visiting(started=100.0, capture=("e", 2.0, True)), 120.0,
                         min_delay=1.0, revisit_min=10.0, revisit_max=1000.0)  # fmt: skip
    assert (changed.interval, changed.due, changed.digest) == (10.0, 110.0, "e")


def test_a_refusal_is_remembered_so_the_same_refusal_is_known_next_time() -> None:
    first = Lease(URL, 0, 0, None, 0)
    page = Page(URL, "disallowed", 0, 50.0)
    visit = next_visit(first, page, Visiting(), 50.0, min_delay=5.0, revisit_min=10.0, revisit_max=100.0)
    assert visit.due == 55.0  # no robots.txt expiry known: after the minimum delay
    again = Lease(URL, 0, 0, None, 0, visits=1, digest=visit.digest)
    assert same_refusal(again, page)
    assert not same_refusal(Lease(URL, 0, 0, None, 0, visits=1, digest="other"), page)


def test_a_frontier_away_for_a_moment_is_waited_for_and_one_away_too_long_is_given_up(tmp_path: Path) -> None:
    async def test() -> None:
        inner = open_frontier(tmp_path / "frontier.sqlite3")
        real, failures = inner.counts, [FrontierError("away"), FrontierError("away")]

        async def flaky() -> dict[str, int]:
            if failures:
                raise failures.pop()
            return await real()

        inner.counts = flaky  # type: ignore[method-assign]
        patient = Patient(inner, patience=30.0)
        try:
            assert (await patient.counts())["queued"] == 0  # two failures waited out
            failures.extend(FrontierError("away") for _ in range(1000))
            patient.patience = 0.3
            with pytest.raises(FrontierError):
                await patient.counts()
            with pytest.raises(FrontierError):  # given up: at once from then on
                await asyncio.wait_for(patient.counts(), 0.2)
        finally:
            await inner.close()

    asyncio.run(test())


def test_a_redis_keeping_its_data_passes_and_one_keeping_nothing_is_refused(redis_port: int) -> None:
    where, found = durability(f"redis://127.0.0.1:{redis_port}/0")
    assert str(redis_port) in where and not [f for f in found if f.refuse]
    with redis_server(extra=["--appendonly", "no"]) as port:
        _, found = durability(f"redis://127.0.0.1:{port}/0")
    assert [f.setting for f in found if f.refuse] and all("appendonly" in f.setting or "save" in f.setting
                                                          for f in found if f.refuse)  # fmt: skip


@pytest.mark.parametrize("kind", ["memory", "sqlite", "frontier"])
def test_a_slot_is_booked_no_sooner_than_a_spacing_after_the_last_start(kind: str, tmp_path: Path) -> None:
    """A request stamped as it left (a claim with no spacing, later than its slot) pushes the next
    slot: booked before that, the slot would only be refused at its claim, and the request wait
    a second sleep (a busy host's pace, one refused claim per request)."""

    async def test() -> None:
        slots: Slots
        if kind == "memory":
            slots = MemoryStore()
        elif kind == "sqlite":
            slots = SQLiteStore(tmp_path / "cache.sqlite3")
        else:
            slots = open_frontier(tmp_path / "frontier.sqlite3")
        assert await slots.book("h", 0.3) == 0.0
        await asyncio.sleep(0.1)
        assert await slots.claim("h", 0.0) == 0.0  # the request left now, 0.1 s after its slot
        wait = await slots.book("h", 0.3)
        assert 0.29 < wait <= 0.3, wait  # a spacing after it left, not after its slot
        await asyncio.sleep(wait)
        assert await slots.claim("h", 0.3) == 0.0
        close = getattr(slots, "close", None)
        if close is not None:
            await close()

    asyncio.run(test())


def test_a_start_stamped_as_a_request_left_costs_no_commit_of_its_own(tmp_path: Path) -> None:
    """One process stamps each request's start as its connection begins: the stamp answers at
    once and joins the next commit (or ``close``'s), and never moves a start back."""

    async def test() -> None:
        path = tmp_path / "frontier.sqlite3"
        frontier = open_frontier(path)
        reader = sqlite3.connect(path)

        def start(key: str) -> float | None:
            row = reader.execute("SELECT at FROM starts WHERE key = ?", (key,)).fetchone()
            return None if row is None else float(row[0])

        before = time.time()
        assert await asyncio.wait_for(frontier.claim("h", 0.0), 0.01) == 0.0  # no commit waited for
        assert start("h") is None
        await frontier.add("gemini://h/p", 0)  # the next commit takes it along
        stamped = start("h")
        assert stamped is not None and before <= stamped <= time.time()
        assert await frontier.claim("h", 10.0) > 9.0  # the claim that follows sees it
        await frontier.claim("k", 0.0)
        await frontier.close()  # what no commit took along
        assert start("k") is not None and start("h") == stamped
        reader.close()

    asyncio.run(test())


def test_a_run_killed_with_a_start_uncommitted_spaces_that_host_from_its_restart(tmp_path: Path) -> None:
    """A request in flight at a kill may have left with its start not yet committed (it joins the
    next commit, and none came): the next run spaces every host it had in flight from when it
    took their leases back, as if each had just been asked."""
    host, other = authority("gemini://h/p"), authority("gemini://k/")

    async def test() -> None:
        path = tmp_path / "frontier.sqlite3"
        killed = open_frontier(path)
        await killed.add("gemini://h/p", 0)
        assert await killed.lease(host, "old", 60.0) is not None
        await killed.claim(host, 0.0)  # the request leaves; then the process dies
        again = open_frontier(path)
        assert await again.recover(None) == 1
        assert await again.claim(host, 5.0) > 4.9  # a whole spacing from the restart
        assert await again.claim(other, 5.0) == 0.0  # a host not in flight: at once
        await again.close()

    asyncio.run(test())


def test_a_renewal_that_meets_the_workers_own_settling_reports_no_lease_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A renewal asks for the leases held when it began.  One that this worker settled meanwhile
    (committed, its confirmation still to come) is gone from the frontier, but not lost: no
    warning that its work is dropped, no ``lease-lost`` line (one process printed one in 200,000
    requests, where no other worker could have taken a lease)."""
    from manners.crawl import Crawler

    url = "gemini://h.example/p"

    async def test() -> list[str]:
        async with Crawler("testbot", (), tmp_path / "out", cache="memory") as crawler:
            await crawler.frontier.add(url, 0)
            lease = await crawler.frontier.lease(authority(url), crawler.owner, 60.0)
            assert lease is not None
            crawler._leased[url] = lease
            crawler._unconfirmed[url] = Page(url, "fetched", 0, time.time())  # recorded, settling
            await crawler.frontier.done(url, "fetched", page=True, token=lease.token)  # committed
            await crawler._renew()
            return [p.read_text() for p in crawler.ledger.paths]

    with caplog.at_level("WARNING", logger="manners.crawl"):
        ledgers = asyncio.run(test())
    assert not [m for m in caplog.messages if "lease" in m], caplog.messages
    assert not any("lease-lost" in text for text in ledgers)
