"""Politeness on the frontier: each request's turn at its host, and the host held while it runs.

One request at a time per host, spaced as its robots.txt asks, for one process as for a fleet:
the slots are booked in the frontier, so every worker that shares it spaces a host as one
process would.  A 44 (slow down) holds the host back for every worker (kept by the frontier's
claims), and robots.txt is fetched under the same rules as a page.  Apart from the run so
that how a host is spaced can be read, and changed, in one place; it knows nothing of pages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator

from ..cache import Ahead, LeaseLost, take_slot, written_margin
from ..cache.entry import Entry
from ..fetch import FetchResult, fetch_robots
from ..robot import Robot
from . import urls
from .client import Leaving
from .frontier import Frontier, FrontierError, Lease
from .records import Ledger
from .tasks import cancelled

HOLD_MARGIN = 5.0  # seconds a host's hold lasts beyond a request's deadline unless renewed
log = logging.getLogger("manners.crawl")


class Pacing:
    """The turns of one worker's requests: ``turn`` waits for a slot, ``holding`` holds the host.

    ``shared``: the frontier is a fleet's (hosts are held, and a 44 told, for the other workers);
    ``lease``: seconds a lease is extended by when a slot is claimed under it; ``ledger``: where a
    robots.txt request is written before it leaves; ``timeout``: a request's deadline (a host's
    hold lasts that and ``HOLD_MARGIN`` unless renewed)."""

    def __init__(
        self, frontier: Frontier, ledger: Ledger, shared: bool, lease: float, timeout: float = 30.0
    ) -> None:
        self.frontier = frontier
        self.ledger = ledger
        self.shared = shared
        self.lease = lease
        self.hold_for = timeout + HOLD_MARGIN  # seconds a host's hold lasts unless renewed
        # seconds a page turn's claim is trusted for, from when it was asked: half what it bought
        self.keeps = min(lease, self.hold_for) / 2
        self.handed: dict[str, str] = {}  # authority -> a page turn's hold, until ``holding`` has it
        self.granted: dict[str, float] = {}  # authority -> when that turn's claim was asked (monotonic)
        self.asked: dict[str, float] = {}  # authority -> the end of a 44's wait, until a request honours it
        self.honoured: dict[str, float] = {}  # authority -> the last such end a request of ours honoured
        self.left: dict[str, float] = {}  # one process: authority -> when its last page request left

    async def slowed(self, auth: str, until: float, spacing: float) -> None:
        """A 44 from ``auth``: nothing more goes to it before ``until``, from this worker and, put
        in the frontier where every claim reads it (``Frontier.slow``), from every worker of the
        fleet; met under a hold (``holding``), the hold's release keeps it too."""
        self.asked[auth] = until
        if self.shared:
            await self.frontier.slow(auth, spacing, until - time.time())

    async def turn(
        self,
        auth: str,
        spacing: float,
        entry: Entry | None = None,
        lease: Lease | None = None,
        ahead: Ahead | None = None,
    ) -> float | None:
        """Wait for this worker's turn at ``auth``, ``spacing`` after the last request to it by
        any worker, and after any wait the server asked for (a 44 here, or another worker's, which
        the frontier's claims keep; robots.txt's Retry-After).  Returns the end of the server's wait
        that this request is the first of ours to honour (the ledger's ``not_before``), or None.

        A 44 another worker met after this one booked its slot holds it back all the same: on a
        fleet the 44 put the host's start at its wait's end (``Frontier.slow``), which the claim
        reads in the step that claims.

        ``lease``: the lease the request is made under; the slot is claimed only while it is held
        (and it is extended in the same step), else LeaseLost and no request leaves.  ``ahead``:
        the request's place on the wire, taken just before the slot (``take_slot``).

        On a fleet the claim also holds ``auth`` (see ``holding``, which the request is made in
        and which releases it).  A robots.txt fetch of the same host by this worker (the robot's
        refresh, running beside the host's page task) takes turns of its own and never touches
        the hold a page's turn handed on: it waits for it as another worker's would."""
        stale = self.handed.pop(auth, None)
        self.granted.pop(auth, None)
        if stale is not None:  # this host's last page turn, whose request never began: let go at once
            await self.frontier.release_hold(auth, stale, spacing)
        honoured, token, asked = await self._take(auth, spacing, entry, lease, written=True, ahead=ahead)
        if token is not None:
            self.handed[auth], self.granted[auth] = token, asked
        return honoured

    def fresh(self, auth: str) -> bool:
        """Whether the page turn handed on for ``auth`` may still be used.  On a fleet its claim
        held the host and extended the lease for seconds counted from when it was asked; kept
        past half the shorter of the two (a long wait for a share of ``--concurrency``, or the
        process stopped), they may have lapsed and another worker have taken them: the turn is
        then taken again, and ``holding`` refuses to send under it."""
        asked = self.granted.get(auth)
        return asked is None or time.monotonic() - asked < self.keeps

    async def _take(
        self,
        auth: str,
        spacing: float,
        entry: Entry | None = None,
        lease: Lease | None = None,
        written: bool = False,
        ahead: Ahead | None = None,
    ) -> tuple[float | None, str | None, float]:
        """The work of a turn (a page's, or each request of a robots.txt fetch): the end of the
        wait honoured, on a fleet the token of the hold taken, and when its claim was asked.

        A run killed with a request in flight left the server answering it, a slow one for
        seconds after the client is gone: one process starting on its frontier stamps those
        hosts' starts a request's deadline ahead (``Frontier.recover``), and a fleet's dead
        worker leaves a hold that lasts as long; a host whose last answer was read waits only
        its spacing after it.

        ``written``: a page's turn, whose host's start is stamped once the request before was
        written (``holding``), so the margin on the spacing is ``written_margin``'s; a
        robots.txt request's start is its claim's, and takes the store's own margin."""
        until = self.asked.get(auth, 0.0)
        if entry is not None and entry.outcome == "retry" and entry.retry_after:
            until = max(until, entry.fetched_at + entry.retry_after)

        held = (lease.url, lease.token, self.lease) if lease is not None and lease.token else None
        hold = (secrets.token_hex(8), self.hold_for) if self.shared else None
        wait, margin = until - time.time(), written_margin(spacing)
        if not self.shared:  # no slot booked: claimed when this process knows the last request left
            after = self.left.get(auth, -spacing) + spacing + margin  # monotonic
            wait = max(wait, after - time.monotonic())
        asked = await take_slot(self.frontier, auth, spacing, wait, held=held, hold=hold, book=self.shared,
                                margin=margin if written else None, ahead=ahead)  # fmt: skip
        token = hold[0] if hold is not None else None
        if until <= 0 or self.honoured.get(auth) == until:
            return None, token, asked
        self.honoured[auth] = until
        self.asked.pop(auth, None)
        return until, token, asked

    @contextlib.asynccontextmanager
    async def holding(
        self, auth: str, spacing: float, *, late: bool = False, just_claimed: bool = False
    ) -> AsyncIterator[Leaving]:
        """One request at a time per host, fleet-wide, spaced from when it truly left.

        Yields the callback the client calls as its connection is begun and again as its request
        is written (``leaving``).  In one process, ``auth``'s start is stamped at the first call
        (claimed with no spacing) and once the request is written, and the next request is
        spaced from the last: from when this one's request truly left, not from when its slot
        was granted nor from when its connection was begun (the name lookup, the handshake and
        a busy event loop come in between, and a server sees the request when its bytes come);
        its one task per host sends the next request only after this one's answer.  Nor is the
        next connection begun ahead of its slot, though its set-up (TCP, TLS) then adds to every
        gap: a server may stamp a request as its connection is accepted, as its first bytes (a
        ClientHello) come, or as its request line is read, and only a connection begun after the
        last request's bytes were written is the spacing after it by all three.  Begun as far
        ahead as connections took to be made, one's ClientHello left a busy event loop 13 ms or
        more after it was begun, and a server saw two connections 191 ms apart for 200.

        On a fleet, ``turn`` took a hold on ``auth`` with its slot, in the same atomic step: no
        other worker's claim succeeds while it is there.  It is renewed while the request runs
        and its answer is read (its seconds cover a request's deadline, so a late renewal does
        not lose it), and released at the end, which stamps ``auth``'s start (when it left, as
        measured here) and its next slot, on the frontier's clock: the next request, by any
        worker, leaves ``spacing`` after this one left and not before it is done with, by then a
        44 is in the frontier for it to see, and a request that left late (its worker's event
        loop busy between claim and send) is no closer to the next.  A worker that dies leaves a
        hold that expires on its own.

        Before the request is begun the hold is renewed, which is also a check that it is still
        this turn's: a request whose hold is gone (a fleet of four at 4,400 hosts sent five pairs
        of requests to one host a few milliseconds apart, the first one's hold never found
        again) sends nothing.  A turn no longer ``fresh`` as the connection is begun (the process
        stopped between its claim and its request) sends nothing either.  Both: ``LeaseLost``,
        and its work is dropped.  The call once the request is written refuses nothing: its
        bytes are gone (a refusal there broke off requests the server had already been asked,
        and their pages were asked again).

        ``late``: the request waited (for a place) after its slot was claimed, and is on record
        now: ``auth``'s start is stamped again, so the next request is spaced from the record
        too, even if no connection is made; on a fleet in the renewal's step (a call fewer).
        The crawl's worker is never late: its turn takes the place before it claims
        (``inflight.Place``).

        ``just_claimed``: the caller ran nothing between the turn's claim and this call (no
        ``await``: its place was taken before the claim), so the renewal would check again what the
        claim checked and took in one atomic step a moment ago, with no chance for anything in
        between to let the hold go (only this worker's release does, or its seconds running out,
        which ``fresh`` bounds).  Skipped then: a Redis round trip fewer between a fleet's slot
        and its request, in the rush 3-30 ms of the biggest capsule's 250-420 ms a request."""
        token = self.handed.pop(auth, None)
        asked = self.granted.pop(auth, None)
        check = late or not just_claimed
        if (
            token is not None
            and check
            and not await self.frontier.renew_hold(auth, token, self.hold_for, stamp=late)
        ):
            log.warning("the hold on %s was not held when its request was to leave: not sent", auth)
            raise LeaseLost(f"its hold on {auth} was gone before its request could be sent")
        if token is None and late:
            await self.frontier.claim(auth, 0.0)
        renewer = self._renewing(auth, token) if token is not None else None
        stamps: list[asyncio.Future[float]] = []
        left: list[float] = []

        def leaving(written: bool = False) -> None:
            now = time.monotonic()
            if not written and asked is not None and (ago := now - asked) >= self.keeps:  # each attempt
                raise LeaseLost(f"its turn at {auth} was claimed {ago:.1f} s before it could be sent")
            if token is None:  # stamped in the store as the connection is begun and as the request
                if not left or written:  # is written: a run resumed spaces this host from the latter
                    stamps.append(asyncio.ensure_future(self.frontier.claim(auth, 0.0)))
                self.left[auth] = now  # and here at each call: the next is spaced from the last
            left.append(now)

        try:
            yield leaving
        finally:
            if renewer is not None:
                await cancelled(renewer)
            if stamps:
                await asyncio.wait(stamps)  # its failure is the next call's to meet
            if token is not None:
                await self._release(auth, token, spacing, time.monotonic() - left[-1] if left else 0.0)

    def _renewing(self, auth: str, token: str) -> asyncio.Task[None]:
        """The hold ``token`` has on ``auth`` renewed every third of its seconds, until cancelled."""

        async def renew() -> None:
            while True:
                await asyncio.sleep(self.hold_for / 3)
                if not await self.frontier.renew_hold(auth, token, self.hold_for):
                    log.warning("the hold on %s lapsed while its request ran", auth)
                    return

        return asyncio.ensure_future(renew())

    async def _release(self, auth: str, token: str, spacing: float, ago: float = 0.0) -> None:
        """The hold ``token`` has on ``auth`` let go, its request over: the next is spaced from when
        it left, ``ago`` seconds before now.

        Done on the way out, whatever ended the request: a frontier that fails here (unreachable
        past its patience, or the crawl lost) is the next call's to meet, as the crawl's own
        calls meet it, and the hold expires on its own meanwhile."""
        try:
            pause = self.asked.get(auth, 0.0) - time.time()  # a 44 met under this hold (``slowed``)
            kept = await self.frontier.release_hold(auth, token, spacing, ago, pause)
        except FrontierError as exc:
            log.debug("the hold on %s was not released: %s", auth, exc)
            return
        if not kept:
            log.warning("the hold on %s lapsed before its request ended", auth)

    async def fetch_robots(self, location: str, robot: Robot) -> FetchResult:
        """robots.txt fetched for the robot as it would fetch it, each request having its turn as a
        page has (the host's spacing as known, else --min-delay; a 44 the fleet was told; on a
        fleet, the host held while it runs) and written to the ledger before it leaves: a Gopher
        server's several selectors and a Gemini redirect's hops are each a request.  Its hosts
        are stamped once more when it has ended (on a fleet, by releasing each request's hold
        once its answer is in): the next request, often the first page, is spaced from the end
        of this one, whatever its name lookup took before it left."""
        asked: list[str] = []
        first, first_spacing = urls.authority(location), robot.delay(location)
        honoured, token, _ = await self._take(first, first_spacing)
        current: tuple[str, str, float] | None = None  # the request in flight holding its host
        renewer: asyncio.Task[None] | None = None

        async def let_go() -> None:
            nonlocal current, renewer
            if renewer is not None:
                await cancelled(renewer)
                renewer = None
            if current is not None:
                held, current = current, None
                await self._release(*held)

        async def before(url: str) -> None:
            nonlocal honoured, token, current, renewer
            auth, spacing = urls.authority(url), robot.delay(url)
            await let_go()  # the one before has had its answer
            if asked:  # the first had its turn before the fetch's deadlines began
                honoured, token, _ = await self._take(auth, spacing)
            asked.append(auth)
            self.ledger.note(url, "robots", None, spacing, honoured)
            if token is not None:
                current, token = (auth, token, spacing), None
                renewer = self._renewing(auth, current[1])

        try:
            return await fetch_robots(location, robot.agent, robot.timeout, robot.max_bytes,
                                      spacing=robot.min_delay, before=before)  # fmt: skip
        finally:
            await let_go()
            if token is not None:  # taken, and no request made under it
                await self._release(asked[-1] if asked else first, token, first_spacing)
            if not self.shared:
                for auth in dict.fromkeys(asked):
                    await self.frontier.claim(auth, 0.0)
