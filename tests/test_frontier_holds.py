"""A host held by one request, fleet-wide: while a worker's request holds it no other worker's claim
succeeds, whatever the spacing; its release spaces the next request from then; a hold whose
holder died expires on its own; a token that does not hold it renews and releases nothing.
SQLite and Redis (single and Cluster) alike, two workers on one crawl.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from manners.cache import LeaseLost, claim_margin, take_slot, written_margin
from manners.crawl.frontier import Frontier, open_frontier
from manners.crawl.pacing import Pacing
from manners.crawl.records import Ledger
from manners.crawl.redis_frontier import open_redis_frontier
from test_frontier_redis import A, B, Opener, redis_url, with_frontiers

SPACING = 0.2
CLOCK = 0.002  # seconds of clock granularity between the test's clock and the frontier's


@pytest.fixture(params=["sqlite", "redis", "cluster"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """The frontier of a new crawl, as often as asked (one per worker)."""
    if request.param == "sqlite":
        return lambda: open_frontier(tmp_path / "frontier.sqlite3")
    url, name = redis_url(request, request.param), f"t{uuid.uuid4().hex[:12]}"
    return lambda: open_redis_frontier(url, name)


def test_while_a_holds_a_host_b_waits_until_a_releases_then_a_spacing_more(opener: Opener) -> None:
    async def test(a: Frontier, b: Frontier) -> None:
        assert await a.claim(A, SPACING, None, ("a", 30.0)) == 0
        await asyncio.sleep(2 * SPACING)  # the spacing is long past: only the hold keeps b out
        assert 0 < await b.claim(A, SPACING, None, ("b", 30.0)) <= SPACING + CLOCK

        async def turn() -> float:
            await take_slot(b, A, SPACING, hold=("b", 30.0))
            return time.time()

        waiting = asyncio.ensure_future(turn())
        await asyncio.sleep(3 * SPACING)
        assert not waiting.done()  # a's request runs on: b's claims keep failing
        released = time.time()
        assert await a.release_hold(A, "a", SPACING)
        assert await waiting >= released + SPACING - CLOCK
        # b holds it now: a's next claim waits in turn, and a third's booking comes after b's release
        assert await a.claim(A, SPACING, None, ("a2", 30.0)) > 0
        released = time.time()  # before the release: the server stamps it later, never sooner
        assert await b.release_hold(A, "b", SPACING)
        assert await a.book(A, SPACING) >= SPACING - (time.time() - released) - CLOCK

    with_frontiers(test, opener, workers=2)


@pytest.mark.serial
def test_a_release_spaces_the_next_request_from_when_this_one_left(opener: Opener) -> None:
    """A request that left ``ago`` seconds before its release (its answer took that long): the
    next, by any worker, may leave a spacing after it left, not a spacing after it ended; and
    never before the release, since the hold keeps every other claim out until then."""

    async def test(a: Frontier, b: Frontier) -> None:
        assert await a.claim(A, SPACING, None, ("a", 30.0)) == 0
        left = time.time()
        await asyncio.sleep(SPACING / 2)  # the answer is being read
        assert await a.release_hold(A, "a", SPACING, time.time() - left)
        wait = await b.book(A, SPACING)
        # the slot is SPACING after the request left: half a spacing from now, not a whole one
        assert wait <= SPACING / 2 + CLOCK + 0.02, wait
        await asyncio.sleep(max(wait, 0.0))
        assert await b.claim(A, SPACING, None, ("b", 30.0)) == 0
        assert time.time() >= left + SPACING - CLOCK
        assert await b.release_hold(A, "b", SPACING)

    with_frontiers(test, opener, workers=2)


def test_a_dead_holders_hold_expires(opener: Opener) -> None:
    async def test(a: Frontier, b: Frontier) -> None:
        # a hold of 1.5 s: long enough that b's claim, made at once, finds it under any load
        assert await a.claim(A, 0.05, None, ("a", 1.5)) == 0
        assert await b.claim(A, 0.05, None, ("b", 30.0)) > 0
        await asyncio.sleep(1.7)  # a died: nothing renewed its hold
        assert await b.claim(A, 0.05, None, ("b", 30.0)) == 0
        # a, were it alive after all, holds nothing: it neither renews nor releases b's hold
        assert not await a.renew_hold(A, "a", 30.0)
        assert not await a.release_hold(A, "a", 0.05)
        assert await a.claim(A, 0.05, None, ("a", 30.0)) > 0
        assert await b.release_hold(A, "b", 0.05)

    with_frontiers(test, opener, workers=2)


def test_a_token_that_does_not_hold_the_host_neither_renews_nor_releases_it(opener: Opener) -> None:
    async def test(a: Frontier, b: Frontier) -> None:
        assert await a.claim(A, 0.05, None, ("a", 1.5)) == 0
        assert not await b.renew_hold(A, "b", 30.0)
        assert not await b.release_hold(A, "b", 0.05)
        assert await a.renew_hold(A, "a", 30.0)  # the holder's renewal outlasts its first seconds
        await asyncio.sleep(1.7)
        assert await b.claim(A, 0.05, None, ("b", 30.0)) > 0
        assert await a.release_hold(A, "a", 0.05)
        assert not await a.release_hold(A, "a", 0.05)  # once only
        await asyncio.sleep(0.1)
        assert await b.claim(A, 0.05, None, ("b", 30.0)) == 0

    with_frontiers(test, opener, workers=2)


def test_a_claim_under_a_stale_lease_takes_no_hold(opener: Opener) -> None:
    async def test(a: Frontier, b: Frontier) -> None:
        url = f"{A}/page"
        await a.add(url, 0)
        old = await a.lease(A, "a", 0.2)
        assert old is not None
        await asyncio.sleep(0.4)
        assert await b.reclaim() == 1
        new = await b.lease(A, "b", 60)
        assert new is not None
        assert await a.claim(A, 0.05, (url, old.token, 60.0), ("a", 30.0)) == -1
        assert await b.claim(A, 0.05, (url, new.token, 60.0), ("b", 30.0)) == 0

    with_frontiers(test, opener, workers=2)


def test_a_robots_txt_refresh_beside_a_page_turn_waits_for_its_hold(opener: Opener, tmp_path: Path) -> None:
    """A worker's page task has had its turn at a host (the hold taken, handed on to the request
    about to leave) when the robot's refresh of that host's robots.txt takes a turn of its own
    (``_take``, each request of ``fetch_robots``).  The refresh must wait for the page's hold as
    another worker would.  It used to take the page's hold for one whose request never began
    and let it go: the page left with no hold, and another worker's request 4.1 ms after it (the
    space bench's 4 workers, 4,400 hosts)."""

    async def test(f: Frontier) -> None:
        pacing = Pacing(f, Ledger(tmp_path / "requests.jsonl", "w"), shared=True, lease=30.0, timeout=5.0)
        await pacing.turn(A, SPACING)
        refresh = asyncio.ensure_future(pacing._take(A, SPACING))
        await asyncio.sleep(3 * SPACING)
        assert not refresh.done()  # the page's hold keeps it out
        async with pacing.holding(A, SPACING) as leaving:
            leaving()
            await asyncio.sleep(SPACING / 2)  # the page's request, in flight
            assert not refresh.done()
        released = time.time()
        _, token, _ = await asyncio.wait_for(refresh, 5 * SPACING)
        assert time.time() >= released + SPACING / 2 - CLOCK  # a spacing after the page left
        assert token is not None and await f.release_hold(A, token, SPACING)

    with_frontiers(test, opener)


def test_a_turn_kept_past_half_its_lease_is_taken_again_never_sent(opener: Opener, tmp_path: Path) -> None:
    """On a fleet a turn's claim holds the host and extends the lease for seconds counted from
    the claim: a turn kept longer than half of that (a wait for a share of --concurrency, a
    process stopped between its claim and its request) may have lapsed, and another worker
    have the host.  It is no longer ``fresh``, and a connection begun under it sends nothing."""

    async def test(f: Frontier) -> None:
        pacing = Pacing(f, Ledger(tmp_path / "requests.jsonl", "w"), shared=True, lease=0.4, timeout=5.0)
        await pacing.turn(A, SPACING)
        assert pacing.fresh(A)
        await asyncio.sleep(0.25)  # past half the lease
        assert not pacing.fresh(A)
        with pytest.raises(LeaseLost, match="before it could be sent"):
            async with pacing.holding(A, SPACING) as leaving:
                leaving()
        await pacing.turn(A, SPACING)  # taken again: fresh, and sent
        assert pacing.fresh(A)
        async with pacing.holding(A, SPACING) as leaving:
            leaving()

    with_frontiers(test, opener)


def test_a_turn_whose_hold_is_gone_when_its_request_is_to_leave_sends_nothing(
    opener: Opener, tmp_path: Path
) -> None:
    """A turn's hold gone before its request leaves (here let go, and another worker's claim
    granted since) must not send: a fleet of four at 4,400 hosts sent five pairs of requests to
    one host milliseconds apart, the first one's hold never found again at its release.  The
    hold is checked, and renewed, as the request is about to begin."""

    async def test(f: Frontier, g: Frontier) -> None:
        pacing = Pacing(f, Ledger(tmp_path / "requests.jsonl", "w"), shared=True, lease=30.0, timeout=5.0)
        await pacing.turn(A, SPACING)
        assert await f.release_hold(A, pacing.handed[A], 0.0)
        assert await g.claim(A, 0.0, None, ("other", 30.0)) == 0  # the other worker has the host
        sent = []
        with pytest.raises(LeaseLost, match="gone before"):
            async with pacing.holding(A, SPACING) as leaving:
                leaving()
                sent.append(A)
        assert not sent
        assert await g.release_hold(A, "other", SPACING)  # the other's hold untouched
        await pacing.turn(A, SPACING)  # taken again: sent
        async with pacing.holding(A, SPACING) as leaving:
            leaving()
            sent.append(A)
        assert sent == [A]

    with_frontiers(test, opener, workers=2)


def test_a_turn_just_claimed_sends_with_no_second_check_and_still_holds_the_host(
    opener: Opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn whose place at the gate was free goes from its claim to its request with nothing run
    in between: the claim checked the lease and took the hold in one step, so the request leaves
    with no renewal (a Redis round trip fewer between a fleet's slot and its request), and the
    hold is as much in force: no other worker's claim succeeds until its release.  A turn that
    may have waited is renewed, as before."""

    async def test(f: Frontier, g: Frontier) -> None:
        pacing = Pacing(f, Ledger(tmp_path / "requests.jsonl", "w"), shared=True, lease=30.0, timeout=5.0)
        renewals: list[str] = []
        renew_hold = f.renew_hold

        async def counted(auth: str, token: str, seconds: float, stamp: bool = False) -> bool:
            renewals.append(auth)
            return await renew_hold(auth, token, seconds, stamp=stamp)

        monkeypatch.setattr(f, "renew_hold", counted)
        await pacing.turn(A, SPACING)
        async with pacing.holding(A, SPACING, just_claimed=True) as leaving:
            leaving()
            assert await g.claim(A, 0.0, None, ("other", 30.0)) > 0  # held: the other is refused
            leaving(written=True)
        assert renewals == []
        await pacing.turn(A, SPACING)
        async with pacing.holding(A, SPACING) as leaving:  # may have waited: checked again
            leaving()
        assert renewals == [A]

    with_frontiers(test, opener, workers=2)


def test_a_turn_gone_stale_once_its_request_is_written_is_not_broken_off(
    opener: Opener, tmp_path: Path
) -> None:
    """The last ``leaving`` call comes once the request is written: its bytes are gone, and a
    refusal there (a turn kept past ``fresh`` while its connection was made) broke the request
    off after the server had it, and its page was asked again (4 workers at 4,400 hosts: 11
    pages).  Only the calls before the connection may refuse."""

    async def test(f: Frontier) -> None:
        pacing = Pacing(f, Ledger(tmp_path / "requests.jsonl", "w"), shared=True, lease=0.4, timeout=5.0)
        await pacing.turn(A, SPACING)
        async with pacing.holding(A, SPACING) as leaving:
            leaving()  # the connection begun, the turn fresh
            await asyncio.sleep(0.25)  # past half the lease while it is made
            leaving(written=True)  # no LeaseLost: what is written is sent
            with pytest.raises(LeaseLost, match="before it could be sent"):
                leaving()  # a further connection attempt would be refused

    with_frontiers(test, opener)


def test_one_process_resumed_waits_out_a_request_its_last_run_may_have_left_in_flight(tmp_path: Path) -> None:
    """A run killed mid-request leaves the server answering it (a slow one for seconds: the space
    bench's resumed crawl asked a slow hole again while its server still answered the killed
    run's request).  The next run's first turn at a host that had a URL in flight waits for a
    request's deadline; a host whose last request was answered (nothing of it in flight) waits
    only its spacing after it: a resumed crawl of 1,500 hosts waited 10 s to start."""

    async def test(f: Frontier) -> None:
        await f.add(f"{A}/p", 0)
        await f.add(f"{B}/p", 0)
        assert await f.lease(A, "killed", 60.0) is not None  # A's request is in flight at the kill
        assert await f.claim(A, 0.0) == 0
        assert await f.claim(B, 0.0) == 0  # B's last request began now too, and was answered
        assert await f.recover(None, running=0.6) == 1  # the next run starts
        pacing = Pacing(f, Ledger(tmp_path / "requests.jsonl", "w"), shared=False, lease=30.0, timeout=0.6)
        began = time.monotonic()
        await pacing.turn(B, SPACING)  # its spacing after its last start, no more
        assert SPACING - CLOCK <= time.monotonic() - began < 0.5
        await pacing.turn(A, SPACING)
        assert time.monotonic() - began >= 0.6 + SPACING - CLOCK
        async with pacing.holding(A, SPACING) as leaving:
            leaving()
            left = time.monotonic()
        await pacing.turn(A, SPACING)  # the next: its spacing after this run's own
        assert SPACING - CLOCK <= time.monotonic() - left < 0.6

    with_frontiers(test, lambda: open_frontier(tmp_path / "frontier.sqlite3"))


def test_one_process_keeps_a_hosts_start_as_its_request_was_written(tmp_path: Path) -> None:
    """The start a run leaves in the frontier is when its host's last request was written, not
    when its connection was begun (a handshake, or a busy loop, before it): a resumed run spaces
    a host whose last answer was read from there, as the run before spaced it."""

    async def test(f: Frontier) -> None:
        pacing = Pacing(f, Ledger(tmp_path / "requests.jsonl", "w"), shared=False, lease=30.0, timeout=0.6)
        await pacing.turn(A, SPACING)
        async with pacing.holding(A, SPACING) as leaving:
            leaving()  # the connection begun
            await asyncio.sleep(0.3)  # its handshake
            leaving(written=True)
            written = time.time()
        left = await f.claim(A, 1.0)  # refused: the seconds until 1.0 after the start kept
        assert left >= 1.0 - (time.time() - written) - CLOCK, left

    with_frontiers(test, lambda: open_frontier(tmp_path / "frontier.sqlite3"))


class AnsweredLate:
    """A frontier whose claims' answers are read ``late`` seconds after they were given, as by a
    process stopped with the answer in its socket."""

    def __init__(self, frontier: Frontier, late: float) -> None:
        self.frontier, self.late = frontier, late

    def __getattr__(self, name: str) -> object:
        return getattr(self.frontier, name)

    async def claim(self, *args: object) -> float:
        granted = await self.frontier.claim(*args)  # type: ignore[arg-type]
        await asyncio.sleep(self.late)
        return granted


def test_a_claim_answered_late_counts_from_when_it_was_asked(opener: Opener, tmp_path: Path) -> None:
    """The lease and the hold a claim grants run from the frontier's grant, not from when the
    worker read the answer: a worker stopped with the answer unread wakes with a turn already
    too old to send under."""

    async def test(f: Frontier) -> None:
        late = AnsweredLate(f, 0.3)
        pacing = Pacing(late, Ledger(tmp_path / "requests.jsonl", "w"), shared=True, lease=0.4,  # type: ignore[arg-type]
                        timeout=5.0)  # fmt: skip
        await pacing.turn(A, SPACING)
        assert not pacing.fresh(A)

    with_frontiers(test, opener)


class Asked:
    """A frontier that notes the spacing every claim and booking is asked with."""

    def __init__(self, frontier: Frontier) -> None:
        self.frontier, self.spacings = frontier, []  # type: list[float]

    def __getattr__(self, name: str) -> object:
        return getattr(self.frontier, name)

    async def claim(self, key: str, spacing: float, *args: object) -> float:
        self.spacings.append(spacing)
        return await self.frontier.claim(key, spacing, *args)  # type: ignore[arg-type]

    async def book(self, key: str, spacing: float, wait: float = 0.0) -> float:
        self.spacings.append(spacing)
        return await self.frontier.book(key, spacing, wait)


@pytest.mark.parametrize("shared", [False, True])
def test_a_page_turn_is_spaced_from_its_written_request_by_the_smaller_margin(
    opener: Opener, tmp_path: Path, shared: bool
) -> None:
    """A page's host is stamped once its request is written, after every stamp a server can take
    of it, so its turn adds ``written_margin`` to the spacing, not the store's ``claim_margin``
    (2 ms at 0.2 s where that is 10 ms: the biggest host of the default space spends a twentieth
    of its crawl on it); the turn after a written request still waits the spacing and that."""

    async def test(f: Frontier) -> None:
        asked = Asked(f)
        pacing = Pacing(asked, Ledger(tmp_path / "requests.jsonl", "w"), shared=shared, lease=30.0,  # type: ignore[arg-type]
                        timeout=0.01)  # fmt: skip
        await pacing.turn(A, SPACING)
        async with pacing.holding(A, SPACING) as leaving:
            leaving()
            leaving(written=True)
            left = time.monotonic()
        await pacing.turn(A, SPACING)
        assert time.monotonic() - left >= SPACING + written_margin(SPACING) - CLOCK
        assert abs(written_margin(SPACING) - 0.002) < 1e-9 and written_margin(SPACING) < claim_margin(SPACING)
        turns = [s for s in asked.spacings if s > 0]  # one process stamps its start with a claim of 0
        assert turns and all(abs(s - SPACING - written_margin(SPACING)) < 1e-9 for s in turns), turns

    with_frontiers(test, opener)


def test_a_renewal_with_a_stamp_stamps_the_start_while_the_token_holds(opener: Opener) -> None:
    """A request that waited for a place after its claim stamps its host's start again once it is on
    record (the next is spaced from that too): on a fleet in the renewal's step, a call fewer."""

    async def test(a: Frontier, b: Frontier) -> None:
        assert await a.claim(A, 5.0, None, ("a", 30.0)) == 0
        await asyncio.sleep(0.6)
        assert await a.renew_hold(A, "a", 30.0)
        assert await b.claim(A, 5.0) < 4.5  # spaced from the claim
        assert not await b.renew_hold(A, "b", 30.0, stamp=True)  # not b's: nothing stamped
        assert await b.claim(A, 5.0) < 4.5
        assert await a.renew_hold(A, "a", 30.0, stamp=True)
        assert await b.claim(A, 5.0) > 4.5  # spaced from the renewal

    with_frontiers(test, opener, workers=2)


def test_a_page_turn_that_waited_for_a_place_is_stamped_in_its_holds_renewal(
    opener: Opener, tmp_path: Path
) -> None:
    """``Pacing.holding(late=True)``: the host's start stamped as the request leaves, on a fleet in
    the renewal of its hold, so the next request is spaced from then (not from the claim)."""

    async def test(f: Frontier, other: Frontier) -> None:
        pacing = Pacing(f, Ledger(tmp_path / "requests.jsonl", "w"), shared=True, lease=30.0, timeout=5.0)
        for late in (False, True):
            await pacing.turn(A, 5.0)
            await asyncio.sleep(0.6)
            async with pacing.holding(A, 5.0, late=late):
                left = await other.claim(A, 5.0)  # no hold: only the spacing from the last start
            assert (left > 4.5) is late, (late, left)
            await asyncio.sleep(0.1)
            await other.claim(A, 0.0)  # the next turn's start: now, whatever came before
            await asyncio.sleep(5.1)

    with_frontiers(test, opener, workers=2)


def test_a_release_after_a_44_keeps_every_claim_out_until_its_wait_is_over(opener: Opener) -> None:
    """A 44 met under a hold is written with the hold's release, in one step: another worker that
    read the fleet's note of 44s just before it (none yet) claimed 0.39 s after the answer, for
    a wait of 2 s (4 workers, the space bench).  No claim succeeds before the wait is over, nor
    does a booking come sooner; without a pause the next claim comes a spacing after the request."""

    async def test(a: Frontier, b: Frontier) -> None:
        assert await a.claim(A, SPACING, None, ("a", 30.0)) == 0
        released = time.time()
        assert await a.release_hold(A, "a", SPACING, 0.0, pause=4 * SPACING)
        left = await b.claim(A, SPACING, None, ("b", 30.0))
        assert 3 * SPACING < left <= 4 * SPACING + CLOCK, left
        assert await b.book(A, SPACING) >= 4 * SPACING - (time.time() - released) - CLOCK
        got = await take_slot(b, A, SPACING, hold=("b", 30.0))
        assert got is not None and time.time() >= released + 4 * SPACING - CLOCK
        assert await b.release_hold(A, "b", SPACING)  # no pause: the next a spacing later
        assert 0 < await a.claim(A, SPACING, None, ("a2", 30.0)) <= SPACING + CLOCK

    with_frontiers(test, opener, workers=2)


def test_a_44_met_under_a_workers_hold_is_released_with_it(opener: Opener, tmp_path: Path) -> None:
    """The 44 a worker meets while it holds the host (``Pacing.slowed``, inside ``holding``) goes
    out with the hold's release: the next claim, by any worker, waits for it, not a spacing."""

    async def test(a: Frontier, b: Frontier) -> None:
        pacing = Pacing(a, Ledger(tmp_path / "requests.jsonl", "w"), shared=True, lease=30.0, timeout=5.0)
        await pacing.turn(A, SPACING)
        async with pacing.holding(A, SPACING) as leaving:
            leaving()
            leaving(True)
            until = time.time() + 5 * SPACING
            await pacing.slowed(A, until, SPACING)  # the answer: 44
        left = await b.claim(A, SPACING, None, ("b", 30.0))
        assert until - time.time() - CLOCK < left <= 5 * SPACING + CLOCK, left

    with_frontiers(test, opener, workers=2)


def test_a_44_keeps_every_claim_out_until_its_wait_is_over_whoever_holds_the_host(opener: Opener) -> None:
    """A 44 goes where every claim reads it, in the step that claims (``Frontier.slow``): no
    worker reads a note before claiming (a Redis round trip a request, and a window in which one
    that read it just before it was written claimed 0.39 s after the answer, for 2 s).  Whoever
    holds the host: a hold that lapsed, so the 44's own release keeps nothing, or another
    worker's, whose release does not move the start back."""

    async def test(a: Frontier, b: Frontier) -> None:
        noted = time.time()  # before: the wait is counted from a moment inside the call
        await b.slow(A, SPACING, 5 * SPACING)  # b's hold lapsed as the 44 came
        left = await a.claim(A, SPACING, None, ("a", 30.0))
        assert 5 * SPACING - (time.time() - noted) - CLOCK < left <= 5 * SPACING + CLOCK, left
        assert await a.book(A, SPACING) >= 5 * SPACING - (time.time() - noted) - CLOCK
        await take_slot(a, A, SPACING, hold=("a", 30.0))
        assert time.time() >= noted + 5 * SPACING - CLOCK
        noted = time.time()
        await b.slow(A, SPACING, 5 * SPACING)  # met by b while a holds the host
        assert await a.release_hold(A, "a", SPACING)  # a's request over: no pause of its own
        left = await b.claim(A, SPACING, None, ("b", 30.0))
        assert 5 * SPACING - (time.time() - noted) - CLOCK < left <= 5 * SPACING + CLOCK, left
        assert await b.claim(B, SPACING, None, ("b", 30.0)) == 0  # another host: nothing kept

    with_frontiers(test, opener, workers=2)
