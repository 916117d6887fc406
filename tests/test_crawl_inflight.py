"""What ``--concurrency`` counts, and the file descriptors its requests need (issue 33).

Every host with work is worked at once, so the sockets a crawl opens are its requests on the
wire, not its hosts: the soft RLIMIT_NOFILE is raised towards the hard one when it is too low
for them, and when even the hard one is, fewer requests go at once, said in one sentence."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import time
import uuid
from pathlib import Path

import pytest

from manners.cache import take_slot
from manners.cache.memory import MemoryStore
from manners.crawl import Crawler, inflight
from manners.crawl.inflight import SPARE_FILES, Hosts, Place, fit_descriptors, hosts_at_once
from manners.crawl.redis_frontier import open_redis_frontier
from slow_hole import slow_hole


class Limits:
    def __init__(self, soft: int, hard: int, settable: bool = True) -> None:
        self.soft, self.hard, self.settable = soft, hard, settable

    def get(self, which: int) -> tuple[int, int]:
        assert which == resource.RLIMIT_NOFILE
        return self.soft, self.hard

    def set(self, which: int, limits: tuple[int, int]) -> None:
        if not self.settable or limits[0] > self.hard:
            raise ValueError("not allowed")
        self.soft = limits[0]


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> Limits:
    found = Limits(1024, 1024)
    monkeypatch.setattr(resource, "getrlimit", found.get)
    monkeypatch.setattr(resource, "setrlimit", found.set)
    return found


def test_within_the_soft_limit_nothing_changes(limits: Limits) -> None:
    assert fit_descriptors(16) == 16
    assert limits.soft == 1024


def test_the_soft_limit_is_raised_for_the_requests_in_flight(limits: Limits) -> None:
    limits.hard = 65536
    assert fit_descriptors(4000) == 4000
    assert limits.soft == 4000 + SPARE_FILES


def test_past_the_hard_limit_fewer_requests_go_at_once_with_a_sentence(
    limits: Limits, caplog: pytest.LogCaptureFixture
) -> None:
    limits.hard = 2048
    with caplog.at_level(logging.WARNING, logger="manners.crawl"):
        assert fit_descriptors(4000) == 2048 - SPARE_FILES
    assert limits.soft == 2048
    assert caplog.messages == [
        f"--concurrency 4000 needs {4000 + SPARE_FILES} file descriptors, but this process may open 2048"
        f" (ulimit -n): {2048 - SPARE_FILES} requests at once"
    ]


def test_a_limit_that_cannot_be_raised_is_said_too(limits: Limits, caplog: pytest.LogCaptureFixture) -> None:
    limits.soft, limits.hard, limits.settable = 256, 65536, False
    with caplog.at_level(logging.WARNING, logger="manners.crawl"):
        assert fit_descriptors(1000) == 256 - SPARE_FILES
    assert "--concurrency 1000 needs" in caplog.text


def test_a_fleet_worker_starts_new_hosts_beside_its_cap_of_the_others(redis_port: int) -> None:
    """At 4,400 hosts a fleet's workers, 128 hosts at once each, started the 400 holes (named
    last) 400 s into the crawl, the biggest hole among them: the hosts kept filled the places,
    and new hosts waited for them.  New hosts have places of their own, and one whose first
    pages are read is kept, or left to the fleet when the worker keeps ``cap`` others."""
    names = [f"gemini://h{i:03d}.example" for i in range(100)]

    async def main() -> None:
        f = open_redis_frontier(f"redis://127.0.0.1:{redis_port}/0", f"t{uuid.uuid4().hex[:12]}")
        try:
            for name in names:
                await f.add_many([f"{name}/{i}" for i in range(10)], 0)
            read = [f"{name}:1965" for name in names[:8]]  # read before (by a worker that died)
            for name in read:
                lease = await f.lease(name, "other", 60)
                assert lease is not None
                await f.done(lease.url, "fetched")
            me = Hosts(8, shared=True)
            first = await me.to_start(f, time.time(), (), set())
            assert len(first) == 16 and len(me.new) == 8 and me.new < set(first)  # 8 new, 8 kept
            assert set(first) - me.new == set(read)  # kept: those read before; the others new only
            for a in first:
                assert await f.lease(a, "me", 60) is not None
            assert await me.to_start(f, time.time(), first, set()) == []  # 8 new and 8 kept at work
            new = sorted(me.new)
            kept = sorted(set(first) - set(new))
            ranks = {a: (inflight.DISCOVERY, 4) for a in first}  # each grows by 4 / 5 a page asked
            ranks[new[0]] = (inflight.DISCOVERY - 1, 4)
            assert not me.leave(new[0], first, ranks)  # still reading
            ranks[new[0]] = (inflight.DISCOVERY, 4)
            assert me.leave(new[0], first, ranks)  # read, 8 kept already, none grows slower: left
            assert not me.leave(kept[0], first, {a: (100, 0) for a in first})  # started kept: stays
            active = [a for a in first if a != new[0]]
            more = await me.to_start(f, time.time(), active, set())
            assert len(more) == 1 and not set(more) & set(first)  # one new host for the one left
            assert not Hosts(8, shared=False).leave(first[0], first, {first[0]: (100, 0)})  # one process
        finally:
            await f.close()

    asyncio.run(main())


def test_a_new_host_with_more_queued_takes_the_place_of_the_kept_one_with_the_fewest() -> None:
    """The biggest capsule, read in a fleet's first seconds, was left to the fleet when its
    worker's kept places were full, and waited 79-141 s for one.  A new host read with ``SWAP``
    times as many URLs queued as the kept host with the fewest takes its place, and so does one
    still growing fast (``GROWING_BY`` per page asked) where that one is not (the biggest hole,
    left with 15 queued, waited 463-505 s): that one leaves after its page in flight, and the
    worker starts no other kept host for it.  A big host deep in its crawl (many pages asked,
    growing slowly) is not the one to go.  (Hosts growing fast kept beyond ``cap`` are not
    here: the next test.)"""
    me = Hosts(2, shared=True)
    me.workers = inflight.FLEET_GROWING_KEPT  # so many workers that none keeps a host beyond its cap
    kept, new = ["k0", "k1"], ["n0", "n1", "n2", "n3", "n4"]
    me.new.update(new)
    active = kept + new
    d = inflight.DISCOVERY
    ranks = {"k0": (3000, 1000), "k1": (10, 6), "n0": (d, 12), "n1": (d, 13), "n2": (d, 100), "n3": (d, 20),
             "n4": (d, 30)}  # fmt: skip
    assert me.leave("n0", active, ranks)  # 12 queued, 2.4 a page: neither twice k1's 6 nor growing fast
    active.remove("n0")
    me.ended("n0")
    assert not me.leave("n1", active, ranks)  # 13: kept, in k1's place (k0, growing slower, stays)
    assert me.dropping == {"k1"} and "n1" not in me.new
    assert not me.leave("k0", active, ranks)  # kept and not displaced: stays
    assert me.leave("k1", active, ranks)  # leaves after its page
    active.remove("k1")
    me.ended("k1")
    assert not me.leave("n3", active, ranks)  # 20, not twice n1's 13, but 4 a page to its 2.6: kept
    assert me.dropping == {"n1"}
    assert me.leave("n1", active, ranks)
    active.remove("n1")
    me.ended("n1")
    assert not me.leave("n2", active, ranks)  # 100: kept in n3's place
    assert me.dropping == {"n3"}
    active.remove("n3")
    me.ended("n3")
    assert me.leave("n4", active, ranks)  # 30, growing fast, but so is n2 (100 queued): left
    assert not me.leave("k0", active, ranks) and not me.leave("n2", active, ranks)  # kept ones stay
    assert not Hosts(2, shared=False).leave("k0", active, ranks)  # one process: every host stays


@pytest.mark.quick
@pytest.mark.parametrize(("workers", "beyond"), [(1, 14), (2, 6), (3, 4), (4, 2), (8, 0), (16, 0)])
def test_a_new_host_growing_fast_is_kept_beyond_the_cap_without_a_swap(workers: int, beyond: int) -> None:
    """At its fourth menu the biggest hole (19 queued) was left by a worker whose kept host with
    the fewest URLs had 24 and grew as fast, and waited 444-479 s for the opening rush to end
    (4 workers).  A new host growing fast is kept beyond ``cap``, and no kept host leaves for
    it, up to ``FLEET_GROWING_KEPT`` caps shared by the fleet's workers (each reads a share of
    the new hosts): with a cap of 2, 8 hosts kept by one of two workers, 4 by one of four, and
    never fewer than the cap.  Past that the swap rules hold, and a new host that is not growing
    fast gets no such place."""
    d = inflight.DISCOVERY
    me = Hosts(2, shared=True)
    me.workers = workers
    active = ["k0", "k1"]
    ranks = {"k0": (d, 24), "k1": (d, 30)}  # both kept, both growing fast, more queued
    for i in range(beyond + 2):
        name = f"n{i}"
        me.new.add(name)
        active.append(name)
        ranks[name] = (d, 19)  # 3.8 a page asked: growing fast
        kept = i < beyond
        assert me.leave(name, active, ranks) is not kept and not me.dropping, (i, me.growing_kept)
        if not kept:
            active.remove(name)
            me.ended(name)
    me.new.add("slow")
    active.append("slow")
    ranks["slow"] = (d, 14)  # 2.8 a page: not growing fast, and not twice the fewest (19)
    assert me.leave("slow", active, ranks) and not me.dropping


@pytest.mark.quick
def test_the_fleet_size_counts_the_workers_heard_from_lately_by_the_frontiers_clock() -> None:
    """How many workers share the new hosts (``Hosts.workers``): those whose heartbeat came
    within ``alive`` seconds of this worker's own, on the frontier's clock (the machines' clocks
    need not agree), and did not say they stopped; this worker always counts."""
    beats: dict[str, dict[str, object]] = {
        "me": {"last_seen": 1000.0, "state": "running"},
        "peer": {"last_seen": 996.0, "state": "running"},
        "quiet": {"last_seen": 979.0, "state": "running"},  # silent for 21 s: taken for dead
        "done": {"last_seen": 999.0, "state": "stopped"},
    }
    assert inflight.fleet_size(beats, "me", 20.0) == 2
    assert inflight.fleet_size(beats, "me", 25.0) == 3
    assert inflight.fleet_size({}, "me", 20.0) == 1  # its first beat not read back yet
    assert inflight.fleet_size({"peer": {"last_seen": 5.0}}, "me", 20.0) == 2


def test_a_new_host_is_weighed_with_the_links_of_the_page_just_read() -> None:
    """A lease's count of URLs queued is a page behind: the biggest hole's fourth menu brought 7
    URLs to the 10 its lease saw, and seen as growing 2 a page it was left.  ``Hosts.read`` adds
    a new host's page's links within it before ``leave`` weighs it; a kept host's stay as leased."""
    d = inflight.DISCOVERY
    me = Hosts(1, shared=True)
    me.workers = inflight.FLEET_GROWING_KEPT  # no place beyond the cap: a swap or nothing
    me.new.add("hole")
    active = ["kept", "hole"]
    ranks = {"kept": (40, 12), "hole": (d, 10)}
    me.read("kept", ["kept"] * 50, ranks)
    links = ["hole"] * 7 + ["elsewhere"] * 3
    me.read("hole", links, ranks)
    assert ranks == {"kept": (40, 12), "hole": (d, 17)}
    assert not me.leave("hole", active, ranks) and me.dropping == {"kept"}  # 3.4 a page, growing fast
    unread = Hosts(1, shared=True)
    unread.workers = inflight.FLEET_GROWING_KEPT
    unread.new.add("hole")
    assert unread.leave("hole", active, {"kept": (40, 12), "hole": (d, 10)})  # 2 a page: left


def test_a_fleets_worker_counts_its_peers_from_their_heartbeats(tmp_path: Path, redis_port: int) -> None:
    """What ``Hosts.growing_kept`` is shared by: a worker of a crawl on Redis reads, with its own
    heartbeat, how many workers of the crawl are alive (here another one that beat just before,
    and one that said it stopped)."""
    url, name = f"redis://127.0.0.1:{redis_port}/0", f"t{uuid.uuid4().hex[:12]}"
    seen: list[int] = []

    async def crawl() -> None:
        peers = open_redis_frontier(url, name)
        try:
            await peers.heartbeat("peer", {"state": "running"})
            await peers.heartbeat("gone", {"state": "stopped"})
        finally:
            await peers.close()
        with slow_hole(0.0, items=3) as hole:
            async with Crawler("testbot", (), tmp_path / "out", min_delay=0.01, timeout=5, allow_private=True,
                               frontier=url, name=name) as crawler:  # fmt: skip
                async for _ in crawler.crawl([f"gopher://127.0.0.1:{hole.port}/1/"]):
                    seen.append(crawler._hosts.workers)

    asyncio.run(asyncio.wait_for(crawl(), 60))
    assert seen and seen[-1] == 2, seen


def test_one_process_works_every_host_a_fleet_worker_what_it_can_keep_busy() -> None:
    assert hosts_at_once(16, shared=False) == inflight.HOSTS_AT_ONCE >= 4000  # the small net's capsules
    assert hosts_at_once(16, shared=True) == 16 * inflight.FLEET_HOSTS_PER_REQUEST


async def _hold_then_queue(gate: inflight.Gate, ranks: dict[str, tuple[int, float]]) -> list[str]:
    """Every place taken, then one request per name asks in the dict's order: the order they got in."""
    got: list[str] = []
    release = asyncio.Event()

    async def holder() -> None:
        async with gate.place():
            await release.wait()

    async def asker(name: str, r: tuple[int, float]) -> None:
        async with gate.place(r):
            got.append(name)
            await asyncio.sleep(0)

    holders = [asyncio.ensure_future(holder()) for _ in range(gate.free)]
    await asyncio.sleep(0)
    assert gate.locked()
    askers = []
    for name, r in ranks.items():
        askers.append(asyncio.ensure_future(asker(name, r)))
        await asyncio.sleep(0)
    release.set()
    await asyncio.gather(*holders, *askers)
    return got


def test_the_gate_goes_fast_growers_then_robots_then_first_pages_then_most_queued_per_page() -> None:
    ranks = {
        "small": inflight.rank(9, 2),
        "big": inflight.rank(9, 500),
        "new": inflight.rank(0, 1),
        "robots": (inflight.ROBOTS, 0),
        "middle": inflight.rank(9, 40),
        "new-too": inflight.rank(inflight.DISCOVERY - 1, 3),
        "small-too": inflight.rank(9, 2),
        # read 900 times and 1,000 still queued: draining; read 5 times and 30 queued: still growing
        "drained": inflight.rank(900, 1000),
        "growing": inflight.rank(5, 30),
        # past its first pages, 2 URLs queued for each page asked: ranked, after the first pages
        "slower": inflight.rank(inflight.DISCOVERY, 2 * (inflight.DISCOVERY + 1)),
    }
    got = asyncio.run(_hold_then_queue(inflight.Gate(2), ranks))
    # growing 50, 4 and 5 URLs queued per page asked: before every other host's first requests,
    # the most queued first (500, 40, 30)
    assert got == [
        "big", "middle", "growing", "robots", "new-too", "new", "slower", "drained", "small", "small-too"
    ]  # fmt: skip


def test_a_fleets_worker_gives_growing_hosts_every_second_place_while_new_hosts_wait() -> None:
    """New hosts come to a fleet's worker for as long as the opening rush lasts: the hosts growing
    fast take at most half its places while new hosts' robots.txt and first pages wait, and all of
    them when no new host's request waits."""
    ranks = {
        "big": inflight.rank(9, 500),
        "growing": inflight.rank(5, 30),
        "grows-too": inflight.rank(5, 20),
        "small": inflight.rank(9, 2),
        "new": inflight.rank(0, 1),
        "robots": inflight.robots_rank(0, 0),
    }
    fleet = asyncio.run(_hold_then_queue(inflight.Gate.for_worker(2, shared=True), ranks))
    assert fleet == ["big", "robots", "growing", "new", "grows-too", "small"]
    alone = asyncio.run(_hold_then_queue(inflight.Gate.for_worker(2, shared=False), ranks))
    assert alone == ["big", "growing", "grows-too", "robots", "new", "small"]
    # once no new host waits (the rush over), they go before the others in every place
    del ranks["new"], ranks["robots"]
    later = asyncio.run(_hold_then_queue(inflight.Gate.for_worker(2, shared=True), ranks))
    assert later == ["big", "growing", "grows-too", "small"]


def test_the_gate_keeps_its_places_when_a_waiter_is_cancelled() -> None:
    async def main() -> int:
        gate = inflight.Gate(1)
        release = asyncio.Event()

        async def holder() -> None:
            async with gate.place():
                await release.wait()

        held = asyncio.ensure_future(holder())
        await asyncio.sleep(0)
        waiting = asyncio.ensure_future(gate.place(inflight.rank(0, 9)).__aenter__())
        await asyncio.sleep(0)
        waiting.cancel()
        release.set()
        await held
        async with gate.place():  # the place came back: this does not wait
            assert gate.locked()
        return gate.free

    assert asyncio.run(asyncio.wait_for(main(), 5)) == 1


class _Noted(inflight.Place):
    """A place that notes when it was taken and given back."""

    taken: list[float]
    given: list[float]

    async def take(self) -> None:
        if not self.held:
            await super().take()
            self.taken.append(time.monotonic())

    def give_back(self) -> None:
        if self.held:
            self.given.append(time.monotonic())
        super().give_back()


def _noted(gate: inflight.Gate) -> _Noted:
    place = _Noted(gate, (inflight.RANKED, 0))
    place.taken, place.given = [], []
    return place


@pytest.mark.quick
def test_a_turn_takes_its_place_at_the_gate_just_before_its_slot() -> None:
    """Taken at the slot, a place is waited for while the slot goes by (in a 4 workers' rush,
    20-40 ms of the biggest capsule's 233 ms a request): so the turn takes it ``AHEAD`` of the
    slot, and holds it when its claim is granted."""
    spacing = 0.3

    async def main() -> tuple[float, float, _Noted, bool]:
        store, gate = MemoryStore(), inflight.Gate(1)
        await take_slot(store, "h", spacing)  # the last request: the next slot is a spacing on
        last = time.monotonic()
        place = _noted(gate)
        asked = await take_slot(store, "h", spacing, ahead=place)
        return last, asked, place, gate.locked()

    last, asked, place, locked = asyncio.run(asyncio.wait_for(main(), 5))
    assert place.held and locked and len(place.taken) == 1 and not place.given
    assert place.taken[0] <= asked  # before the claim
    assert place.taken[0] - last >= spacing - inflight.AHEAD - 0.005  # not before its lead
    assert asked - last >= spacing


@pytest.mark.quick
def test_a_turn_put_off_past_its_lead_gives_its_place_back_meanwhile() -> None:
    """A claim refused for longer than the lead (another worker's request, a 44) would hold a
    place idle that long: it is given back, and taken again before the new slot."""
    spacing = 0.5

    async def main() -> tuple[_Noted, float, float]:
        store, gate = MemoryStore(), inflight.Gate(1)
        await take_slot(store, "h", spacing)
        place = _noted(gate)
        turn = asyncio.ensure_future(take_slot(store, "h", spacing, ahead=place))
        while not place.taken:
            await asyncio.sleep(0.001)
        assert await store.claim("h", 0.0) == 0  # another request starts now: the slot moves on
        other = time.monotonic()
        async with gate.place():  # given back to it while the turn waits
            got = time.monotonic()
        asked = await turn
        return place, got - other, asked - other

    place, waited, asked = asyncio.run(asyncio.wait_for(main(), 5))
    assert len(place.taken) == 2 and len(place.given) == 1 and place.held
    assert waited < spacing - inflight.AHEAD  # not kept idle until the new slot
    assert asked >= spacing


@pytest.mark.parametrize("kind", ["1", "0"])
def test_only_a_holes_menus_are_its_first_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """caps.txt and text items link to nothing, so they show nothing of a hole's size: counted as
    its ``DISCOVERY`` pages, they left a big hole ranked by pages fewer, and its growth too low to
    go first (the default space's biggest hole, its first four pages its root, caps.txt and two
    texts, waited 213-267 s after them, and 463 s for a fleet's worker)."""
    tiers: list[int] = []  # a request's rank as it asks for a place: robots.txt's, a page's
    place, ahead = inflight.Gate.place, inflight.Gate.ahead

    def placing(self: inflight.Gate, rank: tuple[int, float]) -> contextlib.AbstractAsyncContextManager[None]:
        tiers.append(rank[0])
        return place(self, rank)

    def ahead_of(
        self: inflight.Gate, rank: tuple[int, float]
    ) -> contextlib.AbstractAsyncContextManager[Place]:
        tiers.append(rank[0])
        return ahead(self, rank)

    monkeypatch.setattr(inflight.Gate, "place", placing)
    monkeypatch.setattr(inflight.Gate, "ahead", ahead_of)
    with slow_hole(0.0, items=inflight.DISCOVERY + 3, kind=kind) as hole:

        async def crawl() -> None:
            async with Crawler("testbot", (), tmp_path / "out", min_delay=0.01, timeout=5,
                               allow_private=True) as crawler:  # fmt: skip
                async for _ in crawler.crawl([f"gopher://127.0.0.1:{hole.port}/1/"]):
                    pass

        asyncio.run(asyncio.wait_for(crawl(), 60))
        asked = hole.selectors()
    assert "caps.txt" in asked and len(asked) == 1 + 1 + 1 + inflight.DISCOVERY + 3, asked
    if kind == "1":  # the menu and the next three menus, and caps.txt beside them, before it is ranked
        assert tiers.count(inflight.DISCOVERING) == inflight.DISCOVERY + 1, tiers
    else:  # one menu: every request is one of its first pages
        assert tiers.count(inflight.DISCOVERING) == len(asked) - 1 and len(tiers) == len(asked), tiers
