"""Due times in both frontiers (issue 25): a revisiting crawl's URL goes back to the queue, due at
its next visit, in the same atomic step as its settling, and carries its memory (visits, interval,
payload digest, capture time, misses) to its next lease.

Each test runs against SQLite, one real redis-server and a real Redis Cluster (the ``opener``
fixture of test_frontier_redis): what one frontier does, the others do the same way.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from pathlib import Path

import pytest
import redis

from manners.cache import LeaseLost
from manners.crawl.frontier import (
    DONE,
    PAGES,
    Frontier,
    Lease,
    Revisits,
    SQLiteFrontier,
    Visit,
    open_frontier,
)
from manners.crawl.redis_frontier import open_redis_frontier
from manners.crawl.urls import authority
from test_frontier_redis import A, Opener, redis_url, with_frontiers


@pytest.fixture(params=["sqlite", "redis", "cluster"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """A new crawl's frontier, as test_frontier_redis opens it."""
    if request.param == "sqlite":
        return lambda max_queued=None: open_frontier(tmp_path / "frontier.sqlite3", max_queued)
    url, name = redis_url(request, request.param), f"t{uuid.uuid4().hex[:12]}"
    return lambda max_queued=None: open_redis_frontier(url, name, max_queued)


URL = f"{A}/page"
DIGEST = "sha1:AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH"


async def lease_now(f: Frontier, url: str = URL, owner: str = "w") -> Lease:
    got = await f.lease(authority(url), owner, 60)
    assert got is not None and got.url == url
    return got


def test_a_visit_settled_with_a_due_time_is_queued_again_with_its_memory(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add(URL, 0)
        first = await lease_now(f)
        assert (first.visits, first.interval, first.digest, first.capture_at, first.misses) == (
            0,
            None,
            None,
            None,
            0,
        )
        due = time.time() + 1.5  # long enough that the calls below, under any load, come before it
        visit = Visit(1, due, 0.4, DIGEST, 1234.5, 0, True, first.token)
        await f.done(URL, "fetched", page=True, visit=visit)
        counts = await f.counts()
        assert (counts["queued"], counts["in_flight"], counts.get(DONE, 0)) == (1, 0, 0)
        assert counts["fetched"] == 1 and counts[PAGES] == 1
        assert counts["visit:1"] == 1 and counts["changed:1"] == 1
        assert await f.host_done(A) == 1  # a URL kept for revisits counts as settled once
        # not before it is due: neither ready nor leased
        assert await f.ready_authorities(time.time(), (), 10) == []
        assert await f.lease(A, "w", 60) is None
        at = await f.next_ready_at()
        assert at is not None and abs(at - due) < 1e-3
        seen = await f.revisits(time.time())
        assert seen.due_now == 0 and seen.next_due is not None and abs(seen.next_due - due) < 1e-3
        assert await f.revisits(due + 1) == Revisits(1, None)
        await asyncio.sleep(max(due - time.time(), 0) + 0.01)
        assert await f.ready_authorities(time.time(), (), 10) == [A]
        second = await lease_now(f)
        assert (second.visits, second.interval, second.digest, second.capture_at, second.misses) == (
            1, 0.4, DIGEST, 1234.5, 0,
        )  # fmt: skip
        assert (await f.revisits(time.time())).due_now == 0  # leased: no longer waiting
        # unchanged this time, due again
        await f.done(
            URL, "fetched", visit=Visit(2, time.time() + 30, 0.8, DIGEST, 1234.5, 0, False, second.token)
        )
        counts = await f.counts()
        assert counts["visit:2"] == 1 and "changed:2" not in counts and counts["fetched"] == 2
        assert counts[PAGES] == 1 and await f.host_done(A) == 1

    with_frontiers(test, opener)


def test_a_visit_settled_without_a_due_time_is_done_for_good(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add(URL, 0)
        first = await lease_now(f)
        await f.done(URL, "fetched", visit=Visit(1, time.time(), 1.0, DIGEST, 1.0, 0, True, first.token))
        again = await lease_now(f)
        assert again.visits == 1
        await f.done(URL, "error", visit=Visit(2, None, 1.0, DIGEST, 1.0, 3, True, again.token))
        counts = await f.counts()
        assert (counts["queued"], counts["in_flight"], counts[DONE]) == (0, 0, 1)
        assert await f.host_done(A) == 1  # once, not twice
        assert await f.next_ready_at() is None
        assert await f.revisits(time.time() + 1e6) == Revisits(0, None)

    with_frontiers(test, opener)


def test_settling_the_same_visit_twice_changes_nothing(opener: Opener) -> None:
    """A settle whose reply was lost is made again (``Patient``, ``repeat``): the repeat must not
    count the visit twice, nor move the URL now queued (or leased anew) for its next visit; a
    stale settle (the lease leased anew) is refused, and changes nothing."""

    async def test(f: Frontier) -> None:
        await f.add(URL, 0)
        first = await lease_now(f)
        visit = Visit(1, time.time(), 1.0, DIGEST, 1.0, 0, True, first.token)
        await f.done(URL, "fetched", page=True, visit=visit)
        await f.done(URL, "fetched", page=True, visit=visit, repeat=True)  # the repeat
        counts = await f.counts()
        assert counts["visit:1"] == 1 and counts["fetched"] == 1 and counts["queued"] == 1
        again = await lease_now(f)
        with pytest.raises(LeaseLost):
            await f.done(URL, "fetched", page=True, visit=visit, repeat=True)  # a late repeat, leased anew
        counts = await f.counts()
        assert counts["in_flight"] == 1 and counts["visit:1"] == 1
        assert again.visits == 1

    with_frontiers(test, opener)


def test_links_found_on_a_revisit_are_queued_with_its_settling(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add(URL, 0)
        first = await lease_now(f)
        visit = Visit(1, time.time() + 60, 60.0, DIGEST, 1.0, 0, True, first.token)
        new = await f.done(URL, "fetched", [f"{A}/x", URL], depth=1, visit=visit)
        assert new == 1  # the page itself is known
        got = await f.lease(A, "w", 60)
        assert got is not None and got.url == f"{A}/x" and got.visits == 0  # new URLs before revisits

    with_frontiers(test, opener)


def test_a_crawl_made_without_revisits_has_its_fetched_pages_queued_again(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add_many([URL, f"{A}/gone"], 0)
        for outcome in ("fetched", "error"):
            got = await f.lease(A, "w", 60)
            assert got is not None
            await f.done(got.url, outcome, page=True)
        due = time.time() + 1.5
        assert await f.revisit_settled(due) == 1
        counts = await f.counts()
        assert (counts["queued"], counts[DONE]) == (1, 1)
        assert await f.host_done(A) == 2
        assert (await f.revisits(due)).due_now == 1
        assert await f.lease(A, "w", 60) is None
        await asyncio.sleep(max(due - time.time(), 0) + 0.05)
        got = await lease_now(f)
        # its payload is unknown: the next visit counts as changed
        assert got.visits == 1 and got.digest is None

    with_frontiers(test, opener)


def test_a_lease_taken_back_keeps_the_memory_and_the_revisit(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add(URL, 0)
        first = await lease_now(f)
        await f.done(URL, "fetched", visit=Visit(1, time.time(), 2.0, DIGEST, 5.0, 0, True, first.token))
        await lease_now(f, owner="dead")
        assert await f.recover("dead") == 1
        assert (await f.revisits(time.time())).due_now == 1
        again = await lease_now(f)
        assert (again.visits, again.interval, again.digest, again.capture_at) == (1, 2.0, DIGEST, 5.0)

    with_frontiers(test, opener)


# -- what an older manners wrote ----------------------------------------------------------------

OLD_SCHEMA = """
CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, authority TEXT NOT NULL,
    state TEXT NOT NULL, depth INTEGER NOT NULL, parent TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    redirects INTEGER NOT NULL DEFAULT 0, not_before REAL NOT NULL DEFAULT 0, owner TEXT,
    lease_until REAL, outcome TEXT, settled_at REAL);
CREATE INDEX urls_queue ON urls (authority, not_before, id) WHERE state = 'queued';
CREATE TABLE authorities (authority TEXT PRIMARY KEY, queued INTEGER NOT NULL DEFAULT 0,
    in_flight INTEGER NOT NULL DEFAULT 0, done INTEGER NOT NULL DEFAULT 0,
    parked_until REAL NOT NULL DEFAULT 0, park_reason TEXT, eligible_at REAL,
    last_leased REAL NOT NULL DEFAULT 0);
CREATE TABLE outcomes (outcome TEXT PRIMARY KEY, n INTEGER NOT NULL);
INSERT INTO urls (url, authority, state, depth)
    VALUES ('gemini://a.example/page', 'gemini://a.example:1965', 'queued', 0);
INSERT INTO urls (url, authority, state, depth, outcome)
    VALUES ('gemini://a.example/old', 'gemini://a.example:1965', 'done', 0, 'fetched');
INSERT INTO authorities VALUES ('gemini://a.example:1965', 1, 0, 1, 0, NULL, 0, 0);
INSERT INTO outcomes VALUES ('fetched', 1);
"""


def test_a_frontier_file_of_an_older_manners_gains_the_columns_and_keeps_its_urls(tmp_path: Path) -> None:
    path = tmp_path / "frontier.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.close()

    async def test() -> None:
        f = open_frontier(path)
        try:
            counts = await f.counts()
            assert (counts["queued"], counts[DONE], counts["fetched"]) == (1, 1, 1)
            got = await f.lease("gemini://a.example:1965", "w", 60)
            assert got is not None and got.url == "gemini://a.example/page" and got.visits == 0
            await f.done(
                got.url, "fetched", visit=Visit(1, time.time() + 60, 60.0, DIGEST, 1.0, 0, True, got.token)
            )
            assert (await f.revisits(time.time() + 61)).due_now == 1
            assert await f.host_done("gemini://a.example:1965") == 2
        finally:
            await f.close()
        again = SQLiteFrontier(path)  # a second open finds it done
        try:
            assert (await again.counts())["queued"] == 1
        finally:
            await again.close()

    asyncio.run(test())
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    columns = {row[1] for row in db.execute("PRAGMA table_info(urls)")}
    assert {"visits", "interval", "digest", "capture_at", "misses", "token"} <= columns
    assert db.execute("SELECT 1 FROM sqlite_master WHERE name = 'urls_due'").fetchone() is not None
    db.close()


def test_a_redis_record_keeps_8_fields_until_the_url_is_revisited(redis_port: int) -> None:
    """A URL never revisited is stored in the 8 fields records had before revisits existed (so a
    crawl without --revisit costs Redis no more, and records an older manners wrote read as never
    visited); its first visit settled for a revisit writes all 13."""
    name = f"t{uuid.uuid4().hex[:12]}"
    url = f"redis://127.0.0.1:{redis_port}/0"
    plain = redis.Redis(port=redis_port)
    fields = "return #{cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1]))}"

    async def test() -> None:
        f = open_redis_frontier(url, name)
        try:
            await f.add(URL, 0)
            key = f._key("u", A)
            assert plain.eval(fields, 1, key, URL) == 8
            got = await lease_now(f)
            assert (got.visits, got.interval, got.digest, got.capture_at, got.misses) == (
                0,
                None,
                None,
                None,
                0,
            )
            assert plain.eval(fields, 1, key, URL) == 8
            await f.done(URL, "fetched", visit=Visit(1, time.time(), 3.0, DIGEST, 2.0, 0, True, got.token))
            assert plain.eval(fields, 1, key, URL) == 13
            again = await lease_now(f)
            assert (again.visits, again.interval, again.digest, again.capture_at) == (1, 3.0, DIGEST, 2.0)
        finally:
            await f.close()

    asyncio.run(test())
