"""The Redis frontier, on one real redis-server and on a real three-master Redis Cluster.

The behaviour the crawler relies on is pinned once, by tests run against SQLiteFrontier as well:
what the SQLite frontier does, the Redis one does the same way.  Then what a fleet adds: workers
leasing side by side, leases that expire and are reclaimed, a worker dying between settling a
page and queueing its links, request slots shared between workers, and a Redis restarted.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.exceptions

from manners.crawl import redis_frontier
from manners.crawl.frontier import PAGES, Frontier, FrontierError, Lease, SQLiteFrontier, open_frontier
from manners.crawl.redis_frontier import SHARDS, RedisFrontier, open_redis_frontier
from manners.crawl.urls import authority
from servers import free_port, redis_durable

A = "gemini://a.example:1965"
B = "gemini://b.example:1965"
C = "gemini://c.example:1965"

Opener = Callable[..., Any]  # (max_queued=None) -> a frontier of the test's crawl


def redis_url(request: pytest.FixtureRequest, kind: str) -> str:
    if kind == "cluster":
        return f"redis-cluster://127.0.0.1:{request.getfixturevalue('redis_cluster_ports')[0]}"
    return f"redis://127.0.0.1:{request.getfixturevalue('redis_port')}/0"


@pytest.fixture(params=["sqlite", "redis", "cluster"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens the frontier of one new crawl, as often as asked: the workers of a fleet, or a
    worker started again (SQLite: the same file; Redis: the same crawl name)."""
    if request.param == "sqlite":
        return lambda max_queued=None: open_frontier(tmp_path / "frontier.sqlite3", max_queued)
    url, name = redis_url(request, request.param), f"t{uuid.uuid4().hex[:12]}"
    return lambda max_queued=None: open_redis_frontier(url, name, max_queued)


@pytest.fixture(params=["redis", "cluster"])
def fleet(request: pytest.FixtureRequest) -> Callable[[], RedisFrontier]:
    """Opens a worker of one new crawl on Redis (one node, or the cluster), as often as asked."""
    url, name = redis_url(request, request.param), f"t{uuid.uuid4().hex[:12]}"
    return lambda: open_redis_frontier(url, name)


def with_frontiers(
    test: Callable[..., Awaitable[None]], open_one: Callable[[], Any], workers: int = 1
) -> None:
    """Run ``test`` with ``workers`` frontiers of one crawl, closed after."""

    async def main() -> None:
        frontiers = [open_one() for _ in range(workers)]
        try:
            await test(*frontiers)
        finally:
            for f in frontiers:
                await f.close()

    asyncio.run(main())


# -- what SQLite does, Redis does --------------------------------------------------------------


def test_each_url_is_stored_once_whatever_its_state(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        assert await f.add("gemini://a.example/", 0)
        assert not await f.add("gemini://a.example/", 3, parent="gemini://a.example/x")
        assert await f.add_many(
            ["gemini://a.example/", "gemini://a.example/1", "gemini://a.example/1"], 1
        ) == ["gemini://a.example/1"]
        lease = await f.lease(A, "me", 60)
        assert lease == Lease("gemini://a.example/", 0, 0, None, 0)  # the first depth and parent stay
        assert lease is not None
        await f.done(lease.url, "fetched")
        assert not await f.add("gemini://a.example/", 0)
        assert await f.counts() == {"queued": 1, "in_flight": 0, "done": 1, "fetched": 1}

    with_frontiers(test, opener)


def test_states_move_queued_in_flight_done_and_retry_waits(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add_many(["gemini://a.example/1", "gemini://a.example/2"], 2, parent="gemini://a.example/")
        first = await f.lease(A, "me", 60)
        assert first == Lease("gemini://a.example/1", 2, 0, "gemini://a.example/", 0)
        assert first is not None and (await f.counts())["in_flight"] == 1
        later = time.time() + 30
        await f.retry(first.url, later)
        second = await f.lease(A, "me", 60)
        assert second is not None and second.url == "gemini://a.example/2"  # the retry waits its turn
        await f.done(second.url, "error")
        assert await f.lease(A, "me", 60) is None
        assert await f.ready_authorities(time.time(), (), 10) == []
        assert await f.ready_authorities(later, (), 10) == [A]
        assert await f.next_ready_at() == pytest.approx(later)
        await f.retry("gemini://a.example/2", 0)  # settled: a late retry changes nothing
        assert await f.counts() == {"queued": 1, "in_flight": 0, "done": 1, "error": 1}
        assert await f.host_done(A) == 1
        assert await f.host_done(B) == 0

    with_frontiers(test, opener)


def test_a_retried_url_comes_back_with_one_more_attempt_unless_it_waited(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add("gemini://a.example/", 0)
        for attempts in range(3):
            lease = await f.lease(A, "me", 60)
            assert lease is not None and lease.attempts == attempts
            await f.retry(lease.url, 0)
        lease = await f.lease(A, "me", 60)
        assert lease is not None
        await f.retry(lease.url, 0, attempt=False)  # it waited for its host's robots.txt
        assert await f.lease(A, "me", 60) == Lease("gemini://a.example/", 0, 3, None, 0)

    with_frontiers(test, opener)


def test_links_are_queued_with_the_page_settled(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add("gemini://a.example/", 0)
        lease = await f.lease(A, "me", 60)
        assert lease is not None
        assert await f.done(lease.url, "redirect", ["gemini://b.example/"], depth=0, redirects=1) == 1
        new = await f.done(
            "gemini://b.example/", "skipped", ["gemini://b.example/x", "gemini://a.example/"], depth=1
        )
        assert new == 1  # a.example/ is known
        assert await f.counts() == {"queued": 1, "in_flight": 0, "done": 2, "redirect": 1, "skipped": 1}
        assert await f.lease(B, "me", 60) == Lease("gemini://b.example/x", 1, 0, "gemini://b.example/", 0)

    with_frontiers(test, opener)


def test_settling_a_settled_url_again_changes_nothing(opener: Opener) -> None:
    """What a worker does after a lost reply: it settles again, and nothing is counted twice."""

    async def test(f: Frontier) -> None:
        await f.add("gemini://a.example/", 0)
        lease = await f.lease(A, "me", 60)
        assert lease is not None
        links = ["gemini://a.example/1", "gemini://b.example/1", "gemini://c.example/1"]
        assert await f.done(lease.url, "fetched", links, depth=1, page=True) == 3
        assert await f.done(lease.url, "fetched", links, depth=1, page=True) == 0
        assert await f.counts() == {"queued": 3, "in_flight": 0, "done": 1, "fetched": 1, PAGES: 1}
        assert await f.host_done(A) == 1

    with_frontiers(test, opener)


def test_a_parked_authority_leases_nothing_until_its_time(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add_many(["gemini://a.example/", "gemini://b.example/"], 0)
        until = time.time() + 1.5  # long enough that the calls below, under any load, come before it
        await f.park(A, until, "Crawl-delay 600 s > --max-delay 60 s")
        assert await f.parked() == {A: (until, "Crawl-delay 600 s > --max-delay 60 s")}
        assert await f.ready_authorities(time.time(), (), 10) == [B]
        assert await f.lease(A, "me", 60) is None
        assert await f.next_ready_at([B]) == pytest.approx(until)
        assert await f.ready_authorities(until, (), 10) == [A, B]
        await asyncio.sleep(max(until - time.time(), 0) + 0.05)
        assert await f.parked() == {}
        assert await f.lease(A, "me", 60) is not None

    with_frontiers(test, opener)


def test_ready_authorities_start_with_the_most_queued(opener: Opener) -> None:
    """A crawl lasts as long as its biggest host: the hosts with the most work queued come first
    (issue 33: they were started in the order they were added), the least recently leased among equals."""

    async def test(f: Frontier) -> None:
        for name, n in (("a", 1), ("b", 5), ("c", 3)):
            await f.add_many([f"gemini://{name}.example/{i}" for i in range(n)], 0)
        assert await f.ready_authorities(time.time(), (), 10) == [B, C, A]
        assert await f.ready_authorities(time.time(), (), 2) == [B, C]
        assert await f.ready_authorities(time.time(), [B], 1) == [C]
        for _ in range(3):  # b down to 2 queued: c (3) first now
            lease = await f.lease(B, "me", 60)
            assert lease is not None
            await f.done(lease.url, "fetched")
        assert await f.ready_authorities(time.time(), (), 10) == [C, B, A]

    with_frontiers(test, opener)


def test_busiest_gives_the_hosts_with_the_most_queued_first_n_of_them(opener: Opener) -> None:
    """The progress display's and status's biggest hosts: most queued first, ``n`` at most (from
    every shard of a fleet), with their counts, and a host with nothing queued left out."""

    async def test(f: Frontier) -> None:
        assert await f.busiest(5) == []
        sizes = {f"gemini://h{i}.example:1965": 1 + (i * 7) % 40 for i in range(40)}  # 40 sizes, all apart
        for auth, n in sizes.items():
            await f.add_many([f"{auth}/{j}" for j in range(n)], 0)
        ranked = sorted(sizes.items(), key=lambda item: -item[1])
        assert await f.busiest(5) == ranked[:5]
        assert await f.busiest(1) == ranked[:1]
        assert await f.busiest(0) == []
        assert await f.busiest(100) == ranked  # all 40, no more
        top, n = ranked[0]
        for _ in range(n):  # the biggest leased empty: gone from the list, the others move up
            lease = await f.lease(top, "me", 60)
            assert lease is not None
            await f.done(lease.url, "fetched")
        assert await f.busiest(3) == ranked[1:4]
        lease = await f.lease(ranked[1][0], "me", 60)
        assert lease is not None
        await f.retry(lease.url, 0.0, token=lease.token)  # back in the queue: counted again
        assert await f.busiest(2) == ranked[1:3]

    with_frontiers(test, opener)


def test_busiest_on_sqlite_walks_the_size_index_without_sorting(tmp_path: Path) -> None:
    """Asked every couple of seconds of a crawl of thousands of hosts: its query reads
    ``authorities_size`` in order, never sorting (nor scanning) the authorities."""

    async def test() -> None:
        f = SQLiteFrontier(tmp_path / "f.sqlite3")
        await f.add_many([f"gemini://h{i}.example/" for i in range(50)], 0)
        said: list[str] = []
        f._db.set_trace_callback(said.append)
        assert len(await f.busiest(3)) == 3
        f._db.set_trace_callback(None)
        (query,) = [q for q in said if q.lstrip().upper().startswith("SELECT")]
        plan = " ".join(str(row[-1]) for row in f._db.execute(f"EXPLAIN QUERY PLAN {query}"))
        assert "authorities_size" in plan and "TEMP B-TREE" not in plan, plan
        await f.close()

    asyncio.run(test())


def test_busiest_builds_its_index_for_a_crawl_made_before_it(fleet: Callable[[], RedisFrontier]) -> None:
    """A crawl on Redis made by an older manners has no ``size`` index: the first ``busiest``
    builds it from the authorities queued, and refreshes keep it from then on."""

    async def test(f: RedisFrontier) -> None:
        for i, n in enumerate((3, 9, 5, 1)):
            await f.add_many([f"gemini://h{i}.example/{j}" for j in range(n)], 0)
        for prefix in f._prefixes:
            await f._redis.delete(prefix + "size")  # as an older manners left it
        h = "gemini://h{}.example:1965".format
        assert await f.busiest(3) == [(h(1), 9), (h(2), 5), (h(0), 3)]
        await f.add_many([f"gemini://h3.example/more{j}" for j in range(20)], 0)
        assert await f.busiest(2) == [(h(3), 21), (h(1), 9)]

    with_frontiers(test, fleet)


def test_fresh_ready_authorities_are_those_none_of_whose_urls_was_leased(opener: Opener) -> None:
    """What a fleet's worker starts as new hosts (``inflight.Hosts``), the most queued first, the
    others, and those it may keep (leased before)."""

    async def test(f: Frontier) -> None:
        for name, n in (("a", 1), ("b", 5), ("c", 3)):
            await f.add_many([f"gemini://{name}.example/{i}" for i in range(n)], 0)
        assert await f.ready_authorities(time.time(), (), 10, leased=False) == [B, C, A]
        lease = await f.lease(B, "me", 60)
        assert lease is not None
        await f.done(lease.url, "fetched")
        assert await f.ready_authorities(time.time(), (), 10, leased=False) == [C, A]
        assert await f.ready_authorities(time.time(), [C], 10, leased=False) == [A]
        assert await f.ready_authorities(time.time(), (), 10) == [B, C, A]  # b: 4 queued
        assert await f.ready_authorities(time.time(), (), 10, leased=True) == [B]  # a fleet's kept ones

    with_frontiers(test, opener)


def test_ready_authorities_take_turns_and_skip_busy_ones(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        for name in ("a", "b", "c"):
            await f.add_many([f"gemini://{name}.example/{i}" for i in range(3)], 0)
        assert set(await f.ready_authorities(time.time(), (), 10)) == {A, B, C}
        assert len(await f.ready_authorities(time.time(), (), 2)) == 2
        assert A not in await f.ready_authorities(time.time(), [A], 10)
        assert await f.ready_authorities(time.time(), [A, B], 1) == [C]
        order = []
        while ready := await f.ready_authorities(time.time(), (), 1):
            lease = await f.lease(ready[0], "me", 60)
            assert lease is not None
            order.append(ready[0])
            await f.done(lease.url, "fetched")
        assert len(order) == 9 and len(set(order[:3])) == 3
        assert [set(order[i : i + 3]) for i in (0, 3, 6)] == [set(order[:3])] * 3  # round robin
        assert order[3:6] == order[:3]  # least recently leased first
        assert await f.next_ready_at() is None

    with_frontiers(test, opener)


def test_requeue_queues_again_what_was_settled_with_an_outcome(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add_many([f"gemini://a.example/{i}" for i in range(3)] + ["gemini://b.example/"], 0)
        for auth, outcome in ((A, "error"), (A, "fetched"), (A, "error"), (B, "error")):
            lease = await f.lease(auth, "me", 60)
            assert lease is not None
            await f.retry(lease.url, 0)  # one attempt made
            lease = await f.lease(auth, "me", 60)
            assert lease is not None
            await f.done(lease.url, outcome, page=True)
        await f.park(B, time.time() + 600, "44 slow down")
        assert await f.requeue("error") == 3
        assert await f.requeue("error") == 0
        counts = await f.counts()
        assert counts == {"queued": 3, "in_flight": 0, "done": 1, "error": 0, "fetched": 1, PAGES: 4}
        assert await f.parked() == {}  # a requeued authority is tried again now
        assert await f.host_done(A) == 1
        back = await f.lease(B, "me", 60)
        assert back == Lease("gemini://b.example/", 0, 0, None, 0)  # attempts start again

    with_frontiers(test, opener)


def test_queue_per_authority_is_bounded_and_the_rest_counted(opener: Opener) -> None:
    async def test(f: SQLiteFrontier | RedisFrontier) -> None:
        new = await f.add_many([f"gemini://a.example/{i}" for i in range(10)], 1)
        assert new == [f"gemini://a.example/{i}" for i in range(3)]
        assert f.dropped == 7
        assert await f.add_many(["gemini://b.example/x", "gemini://a.example/0"], 1) == [
            "gemini://b.example/x"
        ]
        assert f.dropped == 7  # a URL already known is not "dropped"
        lease = await f.lease(A, "me", 60)
        assert lease is not None
        links = ["gemini://a.example/new", "gemini://a.example/more", "gemini://c.example/1"]
        assert await f.done(lease.url, "fetched", links, depth=2, page=True) == 2
        assert f.dropped == 8  # room for one more after the lease
        counts = await f.counts()
        assert counts["queued"] == 5 and counts[PAGES] == 1

    with_frontiers(test, lambda: opener(max_queued=3))


def test_a_worker_started_again_finds_the_crawl_as_it_was(opener: Opener) -> None:
    async def first(f: Frontier) -> None:
        await f.add_many(["gemini://a.example/1", "gemini://a.example/2"], 0)
        one = await f.lease(A, "me", 60)
        assert one is not None
        await f.done(one.url, "fetched")
        assert await f.lease(A, "me", 60) is not None  # in flight when the worker stops
        await f.park(B, time.time() + 60, "44 slow down")
        await f.set_meta("seeds", '["gemini://a.example/1"]')
        f.known_hosts()["a.example:1965"] = "ab" * 32

    async def second(f: Frontier) -> None:
        assert await f.recover("me") == 1
        lease = await f.lease(A, "me", 60)
        assert lease is not None and lease.url == "gemini://a.example/2"
        assert list(await f.parked()) == [B]
        assert await f.get_meta("seeds") == '["gemini://a.example/1"]'
        assert await f.get_meta("options") is None
        hosts = f.known_hosts()
        assert dict(hosts) == {"a.example:1965": "ab" * 32}
        hosts["a.example:1965"] = "cd" * 32  # a changed certificate, when the crawler accepts it
        with pytest.raises(KeyError):
            del hosts["b.example:1965"]
        assert len(hosts) == 1 and hosts["a.example:1965"] == "cd" * 32
        del hosts["a.example:1965"]
        assert len(hosts) == 0 and "a.example:1965" not in hosts

    with_frontiers(first, opener)
    with_frontiers(second, opener)


def test_recover_an_owner_returns_its_leases_only(opener: Opener) -> None:
    async def test(f: Frontier) -> None:
        await f.add_many([f"gemini://a.example/{i}" for i in range(4)], 0)
        mine = [await f.lease(A, "one", 60) for _ in range(2)]
        theirs = await f.lease(A, "two", 60)
        assert all(mine) and theirs is not None
        assert await f.recover("one") == 2
        assert await f.counts() == {"queued": 3, "in_flight": 1, "done": 0}
        again = await f.lease(A, "three", 60)
        assert again == mine[0]  # back in the queue in their order, no attempt more

    with_frontiers(test, opener)


def test_changes_asked_for_together_are_applied_in_order(opener: Opener) -> None:
    """lease and done are asked for when called: a page settled and the next lease asked for
    before either is awaited are applied in that order (the lease sees the settled page's links)."""

    async def test(f: Frontier) -> None:
        await f.add(A + "/", 0)
        first = await f.lease(A, "me", 60)
        assert first is not None
        settled = f.done(first.url, "fetched", [A + "/next", B + "/elsewhere"], depth=1)
        asked = f.lease(A, "me", 60)  # before the settling is awaited
        other = f.lease(B, "me", 60)
        assert await settled == 2
        assert await asked == Lease(A + "/next", 1, 0, A + "/", 0)
        assert await other == Lease(B + "/elsewhere", 1, 0, A + "/", 0)
        assert await f.counts() == {"queued": 0, "in_flight": 2, "done": 1, "fetched": 1}

    with_frontiers(test, opener)


# -- a fleet on Redis ----------------------------------------------------------------------------


def test_workers_leasing_side_by_side_never_get_the_same_url(fleet: Callable[[], RedisFrontier]) -> None:
    async def test(*workers: RedisFrontier) -> None:
        urls = {f"gemini://h{h}.example/{i}" for h in range(6) for i in range(30)}
        await workers[0].add_many(sorted(urls), 0)
        names = sorted({authority(url) for url in urls})
        asked = [w.lease(names[i % 6], f"w{n}", 60) for i in range(40) for n, w in enumerate(workers)]
        leases = [lease for lease in await asyncio.gather(*asked) if lease is not None]
        assert len(leases) == 4 * 40  # all asked for at once, on four workers: each got its own
        assert len({lease.url for lease in leases}) == len(leases)
        assert len({lease.token for lease in leases}) == len(leases) and all(lease.token for lease in leases)
        rest = [w.lease(name, "late", 60) for name in names for w in workers for _ in range(10)]
        leases += [lease for lease in await asyncio.gather(*rest) if lease is not None]
        assert sorted(lease.url for lease in leases) == sorted(urls)
        assert await workers[1].counts() == {"queued": 0, "in_flight": 180, "done": 0}

    with_frontiers(test, fleet, workers=4)


def test_an_expired_lease_is_reclaimed_by_another_worker_and_a_renewed_one_kept(
    fleet: Callable[[], RedisFrontier],
) -> None:
    async def test(dying: RedisFrontier, alive: RedisFrontier) -> None:
        await dying.add_many(["gemini://a.example/1", "gemini://a.example/2", "gemini://b.example/1"], 0)
        leased = time.monotonic()
        lost = await dying.lease(A, "dying", 1)
        kept = await dying.lease(A, "dying", 1)
        theirs = await alive.lease(B, "alive", 60)
        assert lost and kept and theirs
        await dying.renew([kept.url], "dying", 30)
        await alive.renew([lost.url], "alive", 30)  # not its lease: nothing changes
        assert await alive.reclaim() == 0
        assert time.monotonic() - leased < 1  # (or the test is too slow to tell)
        await asyncio.sleep(leased + 1.1 - time.monotonic())
        assert await alive.recover() == 1  # without an owner, as reclaim: only the expired one
        assert await alive.reclaim() == 0
        back = await alive.lease(A, "alive", 60)
        assert back == Lease(lost.url, 0, 1, None, 0)  # an expired lease counts as an attempt
        oldest = await alive.oldest_lease()
        assert oldest is not None and oldest["url"] == kept.url and oldest["owner"] == "dying"
        assert 25 < float(str(oldest["expires_in"])) < 30  # renewed for 30 s, about 1 s ago
        assert await alive.counts() == {"queued": 0, "in_flight": 3, "done": 0}
        assert await alive.recover("dying") == 1  # a worker's own, expired or not, on demand
        assert await alive.lease(A, "alive", 60) == Lease(kept.url, 0, 0, None, 0)

    with_frontiers(test, fleet, workers=2)


def test_a_page_settled_by_a_worker_that_died_before_queueing_its_links(
    fleet: Callable[[], RedisFrontier], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settling script marks the page done and keeps the links bound for other shards in its
    outbox, atomically; the worker dies before queueing them; another worker's reclaim does."""
    links = [f"gemini://h{i}.example/{j}" for i in range(40) for j in range(3)] + ["gemini://a.example/2"]

    async def test(dying: RedisFrontier, alive: RedisFrontier) -> None:
        await dying.add_many(["gemini://a.example/1", "gemini://h7.example/0"], 0)
        lease = await dying.lease(A, "dying", 60)
        assert lease is not None

        async def die(*args: object) -> int:
            raise FrontierError("the worker died here")

        monkeypatch.setattr(dying, "_distribute", die)
        with pytest.raises(FrontierError):
            await dying.done(lease.url, "fetched", links, depth=1, page=True)
        counts = await alive.counts()
        assert counts["done"] == 1 and counts[PAGES] == 1
        assert counts["queued"] < len(links)  # the other shards' links wait in the outbox
        assert await alive.reclaim() == 0  # no lease expired; the outbox replayed
        counts = await alive.counts()
        assert counts == {"queued": len(links), "in_flight": 0, "done": 1, "fetched": 1, PAGES: 1}
        assert await alive.reclaim() == 0
        assert await alive.counts() == counts  # replayed once only
        monkeypatch.undo()
        assert await dying.done(lease.url, "fetched", links, depth=1, page=True) == 0  # nothing left to do
        leased = []
        for name in await alive.ready_authorities(time.time(), (), 100):
            while got := await alive.lease(name, "alive", 60):
                leased.append(got)
        assert sorted(got.url for got in leased) == sorted(links)  # h7.example/0 was known already
        assert {got.parent for got in leased if got.url != "gemini://h7.example/0"} == {lease.url}
        assert {got.depth for got in leased if got.url != "gemini://h7.example/0"} == {1}

    with_frontiers(test, fleet, workers=2)


def test_a_settling_whose_reply_was_lost_is_made_again_and_queues_the_links(
    fleet: Callable[[], RedisFrontier], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settling script ran but its reply never came: the worker settles again, which finds
    the page settled (nothing counted twice) and queues the links still in the outbox."""
    links = [f"gemini://h{i}.example/" for i in range(40)] + ["gemini://a.example/2"]

    async def test(f: RedisFrontier) -> None:
        await f.add("gemini://a.example/1", 0)
        lease = await f.lease(A, "me", 60)
        assert lease is not None
        settle = f._settle

        async def lost(**call: Any) -> Any:
            await settle(**call)
            raise redis.exceptions.TimeoutError("Timeout reading from socket")

        monkeypatch.setattr(f, "_settle", lost)
        with pytest.raises(FrontierError, match="unreachable"):
            await f.done(lease.url, "fetched", links, depth=1, page=True)
        monkeypatch.undo()
        queued = (await f.counts())["queued"]
        assert 0 < queued < len(links)  # its own shard's links, queued with the page
        assert await f.done(lease.url, "fetched", links, depth=1, page=True) == len(links) - queued
        counts = {"queued": len(links), "in_flight": 0, "done": 1, "fetched": 1, PAGES: 1}
        assert await f.counts() == counts
        assert await f.done(lease.url, "fetched", links, depth=1, page=True) == 0
        assert await f.reclaim() == 0 and await f.counts() == counts

    with_frontiers(test, fleet)


def test_links_to_a_full_authority_are_dropped_wherever_they_are_queued(
    fleet: Callable[[], RedisFrontier],
) -> None:
    async def test(f: RedisFrontier) -> None:
        f.max_queued = 2
        await f.add("gemini://a.example/", 0)
        lease = await f.lease(A, "me", 60)
        assert lease is not None
        links = [f"gemini://{h}.example/{i}" for h in ("a", "b", "c", "d", "e") for i in range(4)]
        assert await f.done(lease.url, "fetched", links, depth=1) == 10
        assert f.dropped == 10
        assert (await f.counts())["queued"] == 10

    with_frontiers(test, fleet)


@pytest.mark.serial  # a time bound
def test_request_slots_are_shared_between_workers(fleet: Callable[[], RedisFrontier]) -> None:
    async def test(one: RedisFrontier, two: RedisFrontier) -> None:
        await one.counts(), await two.counts()  # connected: a start is then its reply's time + wait
        starts = []
        for i in range(6):
            worker = (one, two)[i % 2]
            wait = await worker.book(A, 0.05)
            starts.append(time.monotonic() + wait)
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert min(gaps) > 0.045 and max(gaps) < 0.06  # one slot after the other, whoever booked
        assert await one.book(B, 0.05, wait=0.2) == pytest.approx(0.2, abs=0.02)  # its own slots
        assert await one.book(B, 0.05) == pytest.approx(0.25, abs=0.02)
        await asyncio.sleep(0.35)
        assert await one.claim(A, 0.3) == 0
        assert 0.25 < await two.claim(A, 0.3) <= 0.3  # too soon after the other's start
        assert await two.claim(C, 0.3) == 0

    with_frontiers(test, fleet, workers=2)


def test_a_worker_with_more_calls_at_once_than_redis_pys_default_pool_makes_them_all(
    fleet: Callable[[], RedisFrontier],
) -> None:
    """A worker of a few hundred tasks (a space of thousands of hosts) has more frontier calls
    open at once than redis-py's default pool allows (100): the call past it was refused ("Too
    many connections") and the worker took Redis for down.  Every one of 400 calls at once is
    answered."""

    async def test(f: RedisFrontier) -> None:
        await f.set_meta("k", "v")
        assert await asyncio.gather(*(f.get_meta("k") for _ in range(400))) == ["v"] * 400
        assert await f.claim(A, 0.0) == 0  # and a script, after them

    with_frontiers(test, fleet)


def test_a_worker_holding_a_host_lets_go_when_told_though_redis_py_loses_cancellations(
    fleet: Callable[[], RedisFrontier],
) -> None:
    """A worker holds a host while its request runs by claiming it over and over; when the
    answer is in, the holding task is cancelled.  redis-py sometimes finishes a command and
    hands its reply to a caller that was cancelled meanwhile (the cancellation lost: this test
    counts how often); a holder that missed its cancellation would hold the host for ever and
    the whole fleet with it.  Each of 100 holders, stopped at a random moment, ends, and the
    host is free again one spacing later."""
    from manners.crawl.tasks import cancelled as _cancelled

    async def test(f: RedisFrontier) -> None:
        lost = 0
        for i in range(100):

            async def hold() -> None:
                while True:
                    await f.claim(A, 0.0)
                    await asyncio.sleep(0.002)  # a worker's holder waits half a spacing

            holder = asyncio.ensure_future(hold())
            await asyncio.sleep(0.0003 * (i % 17))
            holder.cancel()  # once, as asyncio would: did it end?
            done, _ = await asyncio.wait({holder}, timeout=0.05)
            lost += not done
            await asyncio.wait_for(_cancelled(holder), 2)
            await asyncio.sleep(0.06)
            assert await f.claim(A, 0.05) == 0  # nothing claims the host any more
        print(f"cancellations lost by redis-py: {lost} of 100")

    with_frontiers(test, fleet)


@pytest.mark.serial  # last_seen to within 0.5 s
def test_workers_leave_heartbeats_and_the_silent_ones_are_forgotten(
    fleet: Callable[[], RedisFrontier], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def test(one: RedisFrontier, two: RedisFrontier) -> None:
        await one.heartbeat("one", {"pages": 3, "host": "x"})
        await two.heartbeat("two", {"pages": 0})
        await asyncio.sleep(0.1)
        await two.heartbeat("two", {"pages": 1})
        seen = await one.workers()
        assert seen == {
            "one": {"last_seen": pytest.approx(time.time() - 0.1, abs=0.5), "pages": 3, "host": "x"},
            "two": {"last_seen": pytest.approx(time.time(), abs=0.5), "pages": 1},
        }
        assert float(str(seen["two"]["last_seen"])) - float(str(seen["one"]["last_seen"])) >= 0.1
        monkeypatch.setattr(redis_frontier, "WORKERS_KEPT", 0.05)
        await two.heartbeat("two", {"pages": 2})
        assert list(await one.workers()) == ["two"]

    with_frontiers(test, fleet, workers=2)


def test_a_cluster_spreads_a_crawl_over_its_nodes_one_slot_per_shard(redis_cluster_ports: list[int]) -> None:
    async def test(f: RedisFrontier) -> None:
        await f.add_many([f"gemini://h{i}.example/{j}" for i in range(200) for j in range(2)], 0)
        lease = await f.lease("gemini://h1.example:1965", "me", 60)
        assert lease is not None
        await f.done(lease.url, "fetched", ["gemini://h2.example/new"])
        keys = {port: redis.Redis(port=port).keys(f"{f.name}*") for port in redis_cluster_ports}
        assert sum(1 for found in keys.values() if found) >= 2  # more than one node holds the crawl
        node = redis.Redis(port=redis_cluster_ports[0])
        slots: dict[bytes, set[int]] = {}
        for key in (k for found in keys.values() for k in found if b"{" in k):
            slots.setdefault(key.split(b"}")[0], set()).add(int(node.cluster("keyslot", key)))
        assert len(slots) == SHARDS and all(len(s) == 1 for s in slots.values())

    url = f"redis-cluster://127.0.0.1:{redis_cluster_ports[1]}"  # any node names the cluster
    with_frontiers(test, lambda: open_redis_frontier(url, f"t{uuid.uuid4().hex[:12]}"))


def test_bad_urls_and_a_redis_that_is_down_raise_frontier_error() -> None:
    for url, says in [
        ("http://127.0.0.1:6379/0", "bad Redis frontier URL"),
        ("redis://127.0.0.1:port/0", "its port is no number"),
        ("redis-cluster://127.0.0.1:7000/3", "database 0 only"),
        (f"redis://:secret@127.0.0.1:{free_port()}/0", "is unreachable"),
    ]:
        with pytest.raises(FrontierError, match=says) as raised:
            open_redis_frontier(url, "crawl")
        assert "secret" not in str(raised.value)
    with pytest.raises(FrontierError, match="without braces"):
        open_redis_frontier("redis://127.0.0.1:6379/0", "a{b}")


def test_a_redis_stopped_and_restarted_with_its_aof_loses_nothing(tmp_path: Path) -> None:
    """Stopped for 10 s: calls fail at once with FrontierError (the crawler waits and calls
    again); restarted with its append-only file, the crawl is where it was, leases included."""
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"

    async def main() -> None:
        with redis_durable(tmp_path, port):
            f = open_redis_frontier(url, "crawl")
            await f.add_many([f"gemini://a.example/{i}" for i in range(5)], 0)
            first = await f.lease(A, "me", 120)
            assert first is not None
            await f.done(
                first.url, "fetched", [f"gemini://h{i}.example/" for i in range(30)], depth=1, page=True
            )
            held = await f.lease(A, "me", 120)
            assert held is not None
            await f.park(B, time.time() + 600, "44 slow down")
            await f.set_meta("seeds", "[1]")
            f.known_hosts()["a.example:1965"] = "ab" * 32
            await f.heartbeat("me", {"pages": 1})
            slot = await f.book(A, 60)
            before = (await f.counts(), await f.parked())
        stopped = time.monotonic()
        calls: list[Callable[[], Awaitable[object]]] = [
            f.counts,
            lambda: f.lease(A, "me", 60),
            lambda: f.done(held.url, "fetched"),
            f.reclaim,
        ]
        for call in calls:
            started = time.monotonic()
            with pytest.raises(FrontierError, match="unreachable"):
                await call()
            assert time.monotonic() - started < 1  # refused at once, no hanging
        await asyncio.sleep(10 - (time.monotonic() - stopped))
        with redis_durable(tmp_path, port):
            assert (await f.counts(), await f.parked()) == before
            oldest = await f.oldest_lease()
            assert oldest is not None and oldest["url"] == held.url
            assert float(str(oldest["expires_in"])) > 120 - 15
            again = open_redis_frontier(url, "crawl")  # a worker started meanwhile
            assert await again.get_meta("seeds") == "[1]"
            assert dict(again.known_hosts()) == {"a.example:1965": "ab" * 32}
            assert set(await again.workers()) == {"me"}
            assert await again.book(A, 60) > slot + 60 - 15  # the slot booked before is kept
            assert await again.lease(A, "two", 60) == Lease("gemini://a.example/2", 0, 0, None, 0)
            assert await f.done(held.url, "fetched") == 0
            counts = await again.counts()
            assert counts["done"] == 2 and counts["in_flight"] == 1 and counts["queued"] == 32
            await again.close()
            await f.close()

    asyncio.run(main())
