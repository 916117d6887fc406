"""Leases are fenced: a request slot, a settling, a retry and a renewal under a lease that is no
longer held (it expired and was taken back, the URL leased anew) change nothing in the frontier,
SQLite and Redis alike; and a Redis that forgot the crawl is told from an empty crawl.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path

import pytest
import redis

from manners.cache import LeaseLost
from manners.crawl.frontier import CrawlLost, Frontier, Lease, open_frontier
from manners.crawl.redis_frontier import SHARDS, open_redis_frontier
from test_frontier_redis import A, Opener, redis_url, with_frontiers

URL = f"{A}/page"
LINK = f"{A}/link"


@pytest.fixture(params=["sqlite", "redis", "cluster"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """A new crawl's frontier, as test_frontier_redis opens it."""
    if request.param == "sqlite":
        return lambda: open_frontier(tmp_path / "frontier.sqlite3")
    url, name = redis_url(request, request.param), f"t{uuid.uuid4().hex[:12]}"
    return lambda: open_redis_frontier(url, name)


async def taken_back(f: Frontier, owner: str = "old") -> tuple[Lease, Lease]:
    """``URL`` leased by ``owner`` for a moment, expired and reclaimed, and leased anew by "new"."""
    await f.add(URL, 0)
    old = await f.lease(A, owner, 0.2)
    assert old is not None and old.url == URL
    await asyncio.sleep(0.4)
    assert await f.reclaim() == 1
    new = await f.lease(A, "new", 60)
    assert new is not None and new.url == URL and new.token != old.token
    return old, new


def test_a_slot_claimed_under_a_stale_lease_is_refused_and_stamps_nothing(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        old, new = await taken_back(f)
        assert await f.claim(A, 5.0, (URL, old.token, 60.0)) == -1
        # the stale claim stamped no start: the holder of the lease claims at once
        assert await f.claim(A, 5.0, (URL, new.token, 60.0)) == 0
        assert await f.claim(A, 5.0, (URL, new.token, 60.0)) > 0  # and is spaced from then
        assert await f.claim(A, 5.0, (URL, old.token, 60.0)) == -1

    with_frontiers(test, opener)


def test_a_claim_under_a_held_lease_extends_it(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add(URL, 0)
        lease = await f.lease(A, "w", 0.3)
        assert lease is not None
        assert await f.claim(A, 0.0, (URL, lease.token, 60.0)) == 0
        await asyncio.sleep(0.5)
        assert await f.reclaim() == 0  # the claim gave it 60 s more: nothing expired
        assert (await f.counts())["in_flight"] == 1

    with_frontiers(test, opener)


def test_a_settle_with_a_stale_token_changes_nothing(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        old, new = await taken_back(f)
        before = await f.counts()
        with pytest.raises(LeaseLost):
            await f.done(URL, "fetched", [LINK], depth=1, page=True, token=old.token)
        assert await f.counts() == before  # not settled, no page counted, its link not queued
        assert before["in_flight"] == 1 and before.get("fetched", 0) == 0
        assert await f.lease(A, "w", 60) is None  # the link was not queued
        assert await f.done(URL, "fetched", [LINK], depth=1, page=True, token=new.token) == 1
        counts = await f.counts()
        assert (counts["in_flight"], counts["done"], counts["fetched"], counts["queued"]) == (0, 1, 1, 1)
        with pytest.raises(LeaseLost):  # settled now: the stale one is refused still
            await f.done(URL, "error", token=old.token)
        assert (await f.counts())["fetched"] == 1

    with_frontiers(test, opener)


@pytest.mark.quick
def test_a_repeated_settle_finds_its_own_settling(opener: Opener) -> None:
    """A settle whose reply was lost, made again (``repeat``), is no stale one."""

    async def test(f: Frontier) -> None:
        await f.add(URL, 0)
        lease = await f.lease(A, "w", 60)
        assert lease is not None
        await f.done(URL, "fetched", page=True, token=lease.token)
        assert await f.done(URL, "fetched", page=True, token=lease.token, repeat=True) == 0
        assert (await f.counts())["fetched"] == 1

    with_frontiers(test, opener)


def test_a_retry_with_a_stale_token_changes_nothing(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        old, new = await taken_back(f)
        with pytest.raises(LeaseLost):
            await f.retry(URL, time.time() + 60, token=old.token)
        counts = await f.counts()
        assert (counts["in_flight"], counts["queued"]) == (1, 0)  # still the new holder's
        await f.retry(URL, 0.0, token=new.token)
        assert (await f.counts())["queued"] == 1

    with_frontiers(test, opener)


def test_renewal_reports_the_leases_lost(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        old, new = await taken_back(f)
        assert await f.renew({URL: old.token}, "old", 60) == [URL]
        assert await f.renew({URL: new.token}, "new", 60) == []
        # a renewal by the same owner names the lease: the URL leased anew to it is another one
        assert await f.renew({URL: old.token}, "new", 60) == [URL]

    with_frontiers(test, opener)


# -- a Redis that forgets ----------------------------------------------------------------------


@pytest.fixture(params=["redis", "cluster"])
def crawl(request: pytest.FixtureRequest) -> tuple[str, str]:
    return redis_url(request, request.param), f"t{uuid.uuid4().hex[:12]}"


def client(url: str) -> redis.Redis | redis.RedisCluster:
    if url.startswith("redis-cluster://"):
        return redis.RedisCluster.from_url(url.replace("redis-cluster://", "redis://"))
    return redis.Redis.from_url(url)


def forget(url: str, name: str) -> None:
    """Every key of the crawl gone, as after a restart of a Redis that kept nothing."""
    r = client(url)
    for key in list(r.scan_iter(match=f"{name}:*", count=1000)):
        r.delete(key)


def test_a_crawl_whose_keys_are_gone_is_lost_not_empty(crawl: tuple[str, str]) -> None:
    url, name = crawl

    async def test() -> None:
        f = open_redis_frontier(url, name)
        try:
            await f.add(URL, 0)
            assert (await f.counts())["queued"] == 1
            forget(url, name)
            with pytest.raises(CrawlLost, match="lost its data"):
                await f.counts()
            with pytest.raises(CrawlLost):
                await f.lease(A, "w", 60)
            with pytest.raises(CrawlLost):
                await f.next_ready_at()
            with pytest.raises(CrawlLost):
                await f.add(LINK, 0)
        finally:
            await f.close()
        with pytest.raises(
            CrawlLost, match="lost its data"
        ):  # the loss was written down: a new worker is told
            open_redis_frontier(url, name)

    asyncio.run(test())


def test_a_crawl_that_lost_some_keys_is_lost(crawl: tuple[str, str]) -> None:
    """Keys evicted under maxmemory: a queued URL whose record is gone, a shard's marker gone."""
    url, name = crawl

    async def test() -> None:
        f = open_redis_frontier(url, name)
        try:
            await f.add(URL, 0)
            r = client(url)
            r.delete(f._key("u", A))  # the authority's records, evicted
            with pytest.raises(CrawlLost):
                await f.lease(A, "w", 60)
        finally:
            await f.close()
        r.delete(f"{name}:lost")
        r.delete(f"{name}:{{{name}:{SHARDS - 1}}}:crawl")  # one shard's marker
        with pytest.raises(CrawlLost):
            open_redis_frontier(url, name)

    asyncio.run(test())


def test_a_crawl_made_before_markers_gains_them(crawl: tuple[str, str]) -> None:
    url, name = crawl

    async def test() -> None:
        f = open_redis_frontier(url, name)
        try:
            await f.add(URL, 0)
        finally:
            await f.close()
        r = client(url)
        for k in range(SHARDS):
            r.delete(f"{name}:{{{name}:{k}}}:crawl")  # as an older manners made it
        g = open_redis_frontier(url, name)
        try:
            assert (await g.counts())["queued"] == 1
        finally:
            await g.close()

    asyncio.run(test())


def test_workers_started_together_on_an_empty_redis_all_join(crawl: tuple[str, str]) -> None:
    """Eight workers making one crawl at the same moment (a fleet started together): each joins;
    none takes the markers another is still writing for a crawl that lost its data."""
    url, _ = crawl
    for round in range(4):
        name = f"t{uuid.uuid4().hex[:12]}"
        start = threading.Barrier(8)
        failed: list[BaseException] = []

        def join(
            name: str = name, start: threading.Barrier = start, failed: list[BaseException] = failed
        ) -> None:
            start.wait()
            try:
                f = open_redis_frontier(url, name)
                asyncio.run(f.close())
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=join) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failed, (round, failed)
        r = client(url)
        assert all(r.exists(f"{name}:{{{name}:{k}}}:crawl") for k in range(SHARDS))


def test_markers_older_than_the_crawl_made_again_are_refused(crawl: tuple[str, str]) -> None:
    """The crawl's layout key gone but its markers left from long before (keys evicted): a worker
    that makes the crawl anew finds markers older than itself, and calls the crawl lost."""
    url, name = crawl
    asyncio.run(open_redis_frontier(url, name).close())
    r = client(url)
    for k in range(SHARDS):
        r.set(f"{name}:{{{name}:{k}}}:crawl", "1000.0")
    r.delete(f"{name}:layout")
    with pytest.raises(CrawlLost, match="lost its data"):
        open_redis_frontier(url, name)
