"""One worker's run: the dispatcher, one task per authority, and the upkeep of its leases.

The dispatcher asks the frontier for ready authorities, the biggest first, and works every one
of them at once (``inflight.hosts_at_once``), each by one task that leases its URLs one by one,
asks the robot, waits its turn (``pacing``), fetches, and settles the URL; ``concurrency``
counts the requests on the wire, not the hosts waiting for their turn (``inflight``), so no
host with work waits past its slot behind another's delay.  The dispatcher looks again when a
task ends or links reach a host not at work.  The URL is settled: WARC, the pages file, then
the frontier (``archive``): a kill costs at most the pages in flight.  What an answer comes to
is ``answers``' to say.  The worker also renews its leases, gives back a dead worker's once
expired, and beats its heart (``manners crawl status``).

Every act under a lease checks that the lease is still held: a request's slot is claimed with the
lease (``pacing.Pacing.turn``), and a settling is committed with its token; a lease found lost is
written to the ledger once and its work dropped.

``Worker`` is the base of ``crawler.Crawler``, which sets its options and opens its files; apart
from it so that the crawl's run can be read without its set-up, and the set-up without the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Literal

from ..cache import LeaseLost
from ..fetch.address import POLICY, AddressPolicy, Network
from ..fetch.net import resolve
from ..robot import Policy, Robot, RobotDecision
from ..robots import asked_spacing
from ..vocabulary import timestamp
from . import answers, gophermap, links, urls
from .answers import SCHEMES, Answer
from .archive import Archive
from .client import Response, gemini_get, gopher_get
from .frontier import PAGES, CrawlLost, Frontier, FrontierError, Lease
from .inflight import Gate, Hosts, fit_descriptors, fleet_size, hosts_at_once, rank
from .outdir import CrawlFileError, describe
from .pacing import Pacing
from .page import Page, Stats
from .records import Ledger
from .revisit import GONE_AFTER
from .tasks import cancelled
from .visits import Visiting, next_visit, same_refusal

log = logging.getLogger("manners.crawl")

SLOW_DOWN_BASE = 10.0  # seconds of a 44 whose meta is no number; doubles each time
FOREVER = 10 * 365 * 86400.0  # parked "until further notice"
HEARTBEAT = 5.0  # seconds between a worker's heartbeats (manners crawl status)
ALIVE = 4 * HEARTBEAT  # a worker silent for longer is taken for dead (its leases expire in time)
GAVE_UP_META = "gave-up:"  # frontier meta: a host given up in this crawl (JSON: reason, at)
GAVE_UP_ASKED_EVERY = 5.0  # seconds between two questions of the frontier about one host
HOSTS_REMEMBERED = 100_000  # hosts whose last question is remembered, at most
LOOK_EVERY = 0.01  # seconds between two looks for ready hosts, at least (links are queued by the hundred)
FLEET_LOOK_EVERY = 0.1  # a fleet's worker: each look is Redis calls that walk the fleet's hosts ready
CAP_EVERY = 60.0  # seconds between two checks that no revisit is due beyond --revisit-max
UNREACHABLE_MEANS = ": robots.txt is unreachable, so everything is disallowed"  # fetch.outcome.unreachable
_Settling = tuple[Awaitable[int], Page, bool]  # the frontier's commit, the page, whether to look again


class Worker:
    """The run of one worker; its options, robot and files are ``crawler.Crawler``'s to set."""

    # the options (Crawler.__init__)
    agent: str | None
    roles: tuple[str, ...] | None
    profile: str | None
    scope: Literal["seeds", "any"] | None
    out: Path
    owner: str
    shared: bool
    lease: float
    max_pages: int | None
    max_depth: int | None
    max_per_host: int | None
    max_links: int
    max_bytes: int
    min_delay: float
    max_delay: float
    concurrency: int
    timeout: float
    robots_attempts: int
    max_policies: int
    allow_private: bool | tuple[Network, ...]
    revisit: bool
    retry_errors: bool
    revisit_min: float
    revisit_max: float
    # what the crawl opens (Crawler.open)
    frontier: Frontier
    robot: Robot
    pacing: Pacing
    archive: Archive
    ledger: Ledger
    known_hosts: MutableMapping[str, str]
    # the crawl's seeds, and the scope and addresses they allow (_scope)
    seeds: list[str]
    scope_authorities: set[str]
    policy: AddressPolicy
    # one crawl()'s
    _pages: int  # pages requested over the whole crawl, for --max-pages
    _reserved: int
    _slow: dict[str, float]  # authority -> the last 44 backoff without a number
    _full: set[str]  # authorities at max_per_host
    _gave_up: dict[str, str]  # authorities whose robots.txt could not be read in robots_attempts: why
    _gave_up_asked: dict[str, float]  # authority -> when the frontier was last asked whether it was given up
    _settling: dict[str, _Settling]  # leased URL -> its page, settled but not yet committed
    _queue: asyncio.Queue[Page | None]

    def __init__(self) -> None:
        self.stats = Stats()
        self.whole: dict[str, int] = {}  # the whole crawl's counts (the frontier's), this run included
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()  # a worker ended or new URLs were queued: the dispatcher looks again
        self._active: dict[str, asyncio.Task[None]] = {}  # authority -> the task working it
        self._failure: BaseException | None = None  # what ended the crawl early (a file error)
        self._counted = 0.0
        self._caps_known: set[str] = set()  # Gopher authorities whose caps.txt is queued
        self._cert_logged: set[str] = set()
        self._leased: dict[str, Lease] = {}  # this worker's leases while their URLs are handled (renewed)
        self._robots_read: dict[str, float] = {}  # authority -> fetched_at of the robots.txt copy on record
        self._visiting: dict[str, Visiting] = {}  # a revisiting crawl: leased URL -> what its settling needs
        self._quiet: dict[str, Page] = {}  # a revisiting crawl: refusals decided again as before, not yielded
        self._lost: set[str] = set()  # tokens of leases this worker learnt it lost (one ledger line each)
        self._unconfirmed: dict[str, Page] = {}  # URL -> its page, recorded, its settling not yet committed
        self._requests: Gate | None = None  # the requests in flight (_gate)
        self._sent: dict[str, tuple[int, int]] = {}  # authority -> (pages asked of it, queued): its rank
        self._asking = 0  # leases being asked for, each a page reserved against --max-pages

    def _gate(self) -> Gate:
        """What a request holds from when it leaves to when its answer is settled: ``concurrency``
        of them at once (fewer if the process cannot open that many sockets:
        ``inflight.fit_descriptors``).  A host waiting for its turn holds none."""
        if self._requests is None:
            self._requests = Gate.for_worker(fit_descriptors(self.concurrency), self.shared)
        return self._requests

    # -- the run --------------------------------------------------------------------------

    async def _read_seeds(self) -> list[str]:
        """The crawl's seeds as the frontier keeps them, and the scope and addresses they allow."""
        known: list[str] = json.loads(await self.frontier.get_meta("seeds") or "[]")
        if known != getattr(self, "seeds", None):
            self._scope(known)
        return known

    def _scope(self, seeds: list[str]) -> None:
        self.seeds = seeds
        self.scope_authorities = {urls.authority(u) for u in seeds}
        ours = (answers.host_port(a) for a in self.scope_authorities)
        self.policy = AddressPolicy.of(ours, self.allow_private)

    async def _run(self) -> None:
        POLICY.set(self.policy)  # this task's context: its workers and their robots.txt fetches inherit it
        self._hosts = Hosts(hosts_at_once(self.concurrency, self.shared), self.shared)  # which to start
        active = self._active
        upkeep = [
            asyncio.ensure_future(self._every(self.lease / 3, self._renew)),
            asyncio.ensure_future(self._every(self.lease / 2, self.frontier.reclaim)),
            asyncio.ensure_future(self._every(HEARTBEAT, self._heartbeat, at_once=True)),
        ]
        if self.revisit:  # a fleet's worker whose clock runs ahead keeps writing due times too far off
            upkeep.append(asyncio.ensure_future(self._every(CAP_EVERY, self._cap_due)))
        try:
            while not self._stop.is_set():
                now = time.time()
                if self.policy is not POLICY.get():  # another worker of the fleet added seeds
                    POLICY.set(self.policy)
                if self._limit_reached() and not self.revisit:  # a revisiting crawl watches the pages it has
                    self.stats.limit = self.stats.limit or "max-pages"
                    break
                if self._failure is not None:
                    break
                for auth in await self._hosts.to_start(self.frontier, now, active, self._full):
                    task = asyncio.ensure_future(self._work(auth))
                    active[auth] = task
                    task.add_done_callback(functools.partial(self._ended, active, auth))
                self.stats.hosts_active = len(active)
                # looked at again when the next host not at work is due (a parked one's retry comes
                # at its slot), when a worker ends, or when links are queued; a fleet's worker at
                # work, every FLEET_LOOK_EVERY whatever is due (16 Redis scripts a look saved)
                busy = active and self.shared
                at = None if busy else await self.frontier.next_ready_at(set(active) | self._full)
                if not active and (at is None or (at > now + self.max_delay and not self.revisit)):
                    await self._refresh_counts()
                    if not self.stats.in_flight:
                        break  # nothing left but hosts parked for longer than max_delay
                    at = now + 0.5  # other workers' pages in flight may bring links, or die and come back
                longest = 0.1 if busy else 0.5  # others' links, unseen here
                pause = longest if at is None else min(max(at - time.time(), 0.001), longest)
                if time.monotonic() - self._counted > 0.5:
                    await self._refresh_counts()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), pause)
                if (soon := (FLEET_LOOK_EVERY if self.shared else LOOK_EVERY) - (time.time() - now)) > 0:
                    await asyncio.sleep(soon)
                self._wake.clear()
            self.stats.completed = not self._stop.is_set() and self._failure is None
        except CrawlLost as exc:  # the frontier forgot the crawl: nothing of it can be trusted to end it
            self._lose(exc)
        finally:
            try:
                if self._stop.is_set():  # let requests in flight end, briefly
                    await self._drain(active, self.timeout + 1)
                else:
                    await self._drain(active, None)
            finally:  # the leases are renewed until the last fetch has ended
                await cancelled(*upkeep)
                for page in list(self._unconfirmed.values()):
                    self._unsettled(page, "the worker stopped before the frontier confirmed its settling")
            with contextlib.suppress(CrawlLost):
                await self._refresh_counts()
            if self._queue.empty():
                self._queue.put_nowait(None)

    def _lose(self, exc: CrawlLost) -> None:
        """The crawl is gone from its frontier: this worker stops, and the crawl does not complete."""
        if self._failure is None:
            self._failure = exc
        self.stats.completed = False
        self._stop.set()
        self._wake.set()

    async def _every(
        self, seconds: float, job: Callable[[], Awaitable[object]], at_once: bool = False
    ) -> None:
        """``job`` every ``seconds`` until cancelled.  A frontier that fails is the crawl's own calls'
        to notice (and to wait for, on a fleet): upkeep only tries again next time."""
        if not at_once:
            await asyncio.sleep(seconds)
        while True:
            try:
                await job()
            except CrawlLost as exc:
                self._lose(exc)
                return
            except FrontierError as exc:
                log.debug("upkeep: %s", exc)
            await asyncio.sleep(seconds)

    async def _renew(self) -> None:
        """This worker's leases, extended while their URLs are handled (waiting for the host's turn,
        fetching, settling): only a dead or stuck worker's leases expire.  One found no longer held
        (this worker was stopped, or cut off, past it) is written to the ledger as lost: its slot
        claim or its settling will be refused, and that URL's work dropped.  One settled here
        meanwhile is gone too, but not lost: its settling's answer tells (``_confirm``)."""
        if self._leased:
            held = {url: lease.token for url, lease in self._leased.items()}
            for url in await self.frontier.renew(held, self.owner, self.lease):
                lease = self._leased.get(url)
                if lease is not None and lease.token == held[url] and url not in self._unconfirmed:
                    self._lease_lost(lease, "renewal found the lease expired and taken back")

    def _lease_lost(self, lease: Lease, reason: str) -> None:
        """The ledger's ``lease-lost`` line for ``lease``, once."""
        if lease.token in self._lost:
            return
        self._lost.add(lease.token)
        log.warning("%s: %s; its work is dropped", lease.url, reason)
        self.ledger.event(lease.url, "lease-lost", lease.token or None, reason)

    def _unsettled(self, page: Page, reason: str) -> None:
        """A page recorded whose settling the frontier did not commit: a second line says so (the
        URL will be handed out again, so a later request of it is expected)."""
        if self._unconfirmed.pop(page.url, None) is None:
            return
        self.archive.unsettled(page, reason)

    async def _cap_due(self) -> None:
        """No revisit due later than --revisit-max from now (``Frontier.cap_due``): a due time
        further off came from a clock that ran ahead, or from a crawl resumed with a smaller
        --revisit-max.  (A host's ``Check:`` longer than --revisit-max is the floor again from the
        next visit on.)"""
        if moved := await self.frontier.cap_due(time.time() + self.revisit_max):
            log.info("%d revisits were due later than --revisit-max %g s from now: due then", moved,
                     self.revisit_max)  # fmt: skip

    async def _heartbeat(self) -> None:
        await self.frontier.heartbeat(self.owner, self._beat("running"))
        if self.shared:  # how many share the new hosts growing fast (``Hosts.growing_kept``)
            self._hosts.workers = fleet_size(await self.frontier.workers(), self.owner, ALIVE)
            await self._read_seeds()  # a worker that joined later may have added seeds: they widen the scope

    def _beat(self, state: str) -> dict[str, object]:
        """What a heartbeat says of this worker (``manners crawl status``)."""
        s, out = self.stats, str(self.out.absolute())
        return {"state": state, "host": socket.gethostname(), "pid": os.getpid(), "out": out,
                "started": timestamp(s.started), "fetched": s.fetched, "requests": s.requests,
                "in_flight": len(self._leased), "hosts_active": s.hosts_active,
                "patience": getattr(self.frontier, "patience", None)}  # fmt: skip

    def _ended(self, active: dict[str, asyncio.Task[None]], auth: str, task: asyncio.Task[None]) -> None:
        """A worker ended; one that failed (a crawl file that cannot be written) ends the crawl:
        the others' requests in flight finish or go back to the queue."""
        active.pop(auth, None)
        self._hosts.ended(auth)
        if not task.cancelled() and task.exception() is not None and self._failure is None:
            exc = task.exception()
            self._failure = CrawlFileError(describe(exc, self.out)) if isinstance(exc, OSError) else exc
            self._stop.set()
        self._wake.set()

    async def _drain(self, active: dict[str, asyncio.Task[None]], grace: float | None) -> None:
        tasks = list(active.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        await cancelled(*pending)
        await self.frontier.recover(self.owner)  # the cancelled ones' leases: queued again

    def _limit_reached(self, asking: int = 0) -> bool:
        """--max-pages reached by the pages requested and those leased (and ``asking``: being leased)."""
        return self.max_pages is not None and self._pages + self._reserved + asking >= self.max_pages

    async def _refresh_counts(self) -> None:
        self._counted = time.monotonic()
        counts = await self.frontier.counts()
        self.whole = counts
        if hasattr(self, "_pages"):  # a fleet: the other workers' pages count towards --max-pages too
            self._pages = max(self._pages, counts.get(PAGES, 0))
        self.stats.dropped = self.frontier.dropped
        self.stats.queued = counts.get("queued", 0)
        self.stats.in_flight = counts.get("in_flight", 0)
        self.stats.done = counts.get("done", 0)
        parked = await self.frontier.parked()
        now = time.time()
        self.stats.parked = {a: why for a, (until, why) in parked.items() if until > now}
        if self.revisit:
            coming = await self.frontier.revisits(now)
            self.stats.due_now, self.stats.next_due = coming.due_now, coming.next_due

    async def _emit(self, page: Page) -> None:
        if self._quiet.get(page.url) is page:  # a refusal decided again as before: not news (_decided_again)
            del self._quiet[page.url]
            return
        self.stats.count(page)
        await self._queue.put(page)

    # -- one authority --------------------------------------------------------------------

    async def _work(self, auth: str) -> None:
        """Lease and settle this authority's ready URLs one at a time, until none is ready.

        The next lease is asked for before the last page's settling is awaited, so that the two
        share a commit: one wait on the frontier per page, not two."""
        settling: _Settling | None = None
        try:
            while not self._stop.is_set():
                if self.max_per_host is not None and not self.revisit:  # (a revisiting crawl: _unwatched)
                    await self._confirm(settling)  # host_done must count the last page
                    settling = None
                    if await self.frontier.host_done(auth) >= self.max_per_host:
                        self._full.add(auth)
                        break
                if self._limit_reached(self._asking) and not self.revisit:
                    break
                # a page reserved while its lease is asked for: the hosts at work together (every
                # ready one) lease no more than --max-pages allows
                self._asking += 1
                try:
                    asked = self.frontier.lease(auth, self.owner, self.lease)
                    await self._confirm(settling)
                    settling = None
                    lease = await asked
                finally:
                    self._asking -= 1
                if lease is None:
                    break
                # caps.txt is no page: --max-pages skips it; nor is a revisit a new page
                reserved = 0 if answers.is_caps(lease.url) or lease.capture_at is not None else 1
                unwatched = await self._unwatched(auth, lease) if self.revisit and reserved else None
                self._reserved += reserved
                self._leased[lease.url] = lease  # renewed until its settling is committed
                if self.revisit:
                    self._visiting[lease.url] = Visiting()
                try:
                    if unwatched is not None:
                        again = self._beyond_limit(lease, unwatched)
                    else:
                        again = await self._settle(auth, lease)
                except LeaseLost as exc:  # no request left under it, or its retry changed nothing
                    self._lease_lost(lease, str(exc))
                    self._settling.pop(lease.url, None)
                    again = True
                except BaseException:
                    self._leased.pop(lease.url, None)
                    raise
                finally:
                    self._reserved -= reserved
                    self._visiting.pop(lease.url, None)
                settling = self._settling.pop(lease.url, None)
                if settling is None:  # back in the queue (a retry, its host parked): no longer ours
                    self._leased.pop(lease.url, None)
                if not again or self._hosts.leave(auth, self._active, self._sent):
                    break
            await self._confirm(settling)
        finally:
            self.stats.waiting.pop(auth, None)

    async def _unwatched(self, auth: str, lease: Lease) -> str | None:
        """Why a revisiting crawl does not take on this new URL (a limit reached), or None.

        Its limits bound the pages watched, not the run, which has no end: past --max-pages (or
        --max-per-host on this host) the pages it has are revisited and no new one is fetched."""
        if lease.visits:
            return None  # watched already (disallowed until now)
        if self._limit_reached():
            return f"--max-pages {self.max_pages}"
        if self.max_per_host is not None and await self.frontier.host_done(auth) >= self.max_per_host:
            return f"--max-per-host {self.max_per_host}"
        return None

    def _beyond_limit(self, lease: Lease, limit: str) -> bool:
        """A new URL past a revisiting crawl's limit: settled skipped, never fetched."""
        reason = f"{limit}: a revisiting crawl watches the pages it reached first"
        item_type = answers.item_type(lease.url)
        self._finish(Page(lease.url, "skipped", lease.depth, time.time(), item_type=item_type, reason=reason))
        return True

    async def _confirm(self, settling: _Settling | None) -> None:
        """Wait for a page's settling to be committed, then yield it."""
        if settling is None:
            return
        settled, page, news = settling
        lease = self._leased.get(page.url)
        try:
            await settled
        except LeaseLost as exc:
            self._leased.pop(page.url, None)
            if lease is not None:
                self._lease_lost(lease, str(exc))
            self._unsettled(page, "the frontier refused the settling: the lease was no longer held")
            return
        except FrontierError as exc:
            self._unsettled(page, f"the frontier could not be reached to settle it: {exc}")
            raise
        self._unconfirmed.pop(page.url, None)
        self._leased.pop(page.url, None)
        if news:
            self._wake.set()
        await self._emit(page)

    async def _settle(self, auth: str, lease: Lease) -> bool:
        """Handle one leased URL; False when the authority must be left alone for a while."""
        url = lease.url
        gave_up = self._gave_up.get(auth) or await self._gave_up_elsewhere(auth)
        if gave_up is not None:  # its robots.txt unreadable in every attempt: nothing more is asked of it
            self._finish(Page(url, "error", lease.depth, time.time(), item_type=answers.item_type(url),
                              reason=gave_up))  # fmt: skip
            return True
        refused = await self._refused(auth)
        if refused is not None:
            self._finish(Page(url, "skipped", lease.depth, time.time(), item_type=answers.item_type(url),
                              reason=refused))  # fmt: skip
            return True
        sent = self._sent[auth][0] if auth in self._sent else await self.frontier.host_done(auth)
        self._sent[auth] = (sent, lease.queued)  # before robots.txt, which a resumed run asks again
        decision = await self.robot.decide(url)
        if decision.outcome in ("unreachable", "retry") and not decision.stale:
            return await self._robots_failed(auth, lease, decision)
        policy = await self.robot.policy(url)  # the copy just decided by: in the robot's memory
        self._robots_source(url, decision, policy)
        if not decision.allowed:
            self._finish(Page(url, "disallowed", lease.depth, time.time(), decision=decision,
                              item_type=answers.item_type(url), reason=decision.reason))  # fmt: skip
            return True
        asked = asked_spacing(policy.robots, self.agent or "*", self.roles or (), profile=self.profile)
        visiting = self._visiting.get(url)
        if visiting is not None:
            read_as = self.profile or policy.key  # as the robot reads it: by scheme unless named
            visiting.check = policy.robots.check_interval(
                self.agent or "*", self.roles or (), profile=read_as
            )
        if asked > self.max_delay:
            why = f"robots.txt asks for {asked:g} s between requests"
            why += f", more than --max-delay {self.max_delay:g} s"
            await self._park(auth, time.time() + FOREVER, why)
            await self.frontier.retry(url, time.time(), attempt=False, token=lease.token)
            return False
        spacing = self.robot.delay(url)  # a Request-rate's window may have opened since it was read
        self.stats.waiting[auth] = f"spacing {spacing:g} s"
        # one of ``concurrency`` places, taken by the turn just before its slot (``inflight.Place``)
        async with self._gate().ahead(rank(*self._sent[auth])) as place:
            honoured = await self.pacing.turn(auth, spacing, policy.entry, lease, place)
            self.stats.waiting.pop(auth, None)
            while not self.pacing.fresh(auth):  # its claim kept too long (see Pacing.fresh): again
                honoured = await self.pacing.turn(auth, spacing, policy.entry, lease, place) or honoured
            return await self._request(auth, lease, decision, spacing, honoured)

    async def _request(self, auth: str, lease: Lease, decision: RobotDecision, spacing: float,
                       honoured: float | None) -> bool:  # fmt: skip
        """Send the request its turn came for, and do what its answer comes to.  Nothing ran since
        its claim (its place was taken first): the claim's check stands for the hold's."""
        url = lease.url
        self.stats.requests += 1
        what: Literal["caps", "page"] = "caps" if answers.is_caps(url) else "page"
        self._sent[auth] = (self._sent[auth][0] + (answers.item_type(url) in (None, "1")), lease.queued)
        visiting = self._visiting.get(url)
        if visiting is not None:
            visiting.started = time.time()
        self.ledger.note(url, what, lease.token or None, spacing, honoured)
        # held until the answer is read, as one process holds its host: a 44 is known before the next
        async with self.pacing.holding(auth, spacing, just_claimed=True) as leaving:
            if url.startswith("gemini:"):
                response = await gemini_get(url, timeout=self.timeout, max_bytes=self.max_bytes,
                                            known_hosts=self.known_hosts, leaving=leaving)  # fmt: skip
                return await self._gemini(auth, lease, decision, response)
            response = await gopher_get(url, timeout=self.timeout, max_bytes=self.max_bytes,
                                        leaving=leaving)  # fmt: skip
            return await self._gopher(auth, lease, decision, response)

    def _robots_source(self, url: str, decision: RobotDecision, policy: Policy) -> None:
        """Put on record, once per copy, a robots.txt copy this worker decides by but did not fetch
        (the shared cache held it: another worker's, or an earlier run's): ``audit`` must see that
        the pages after it were decided under a file read in time, though no request was made.  A
        copy fetched here is on record already (``Pacing.fetch_robots`` wrote each of its requests)."""
        key, fetched_at = policy.key, decision.fetched_at
        if self._robots_read.get(key) == fetched_at:
            return
        self._robots_read[key] = fetched_at
        if len(self._robots_read) > self.max_policies:  # bounded as the robot's memory is
            del self._robots_read[next(iter(self._robots_read))]
        if not (policy.fetched and policy.entry.fetched_at == fetched_at):
            self.ledger.robots_copy(
                decision.robots_url or url, urls.authority(url), fetched_at, decision.expires_at
            )

    async def _gave_up_elsewhere(self, auth: str) -> str | None:
        """Why ``auth`` was given up in this crawl (by another worker, or a run before), or None.

        Without it each worker, and a resumed run, reads a dead robots.txt again whenever a link
        to the host turns up (a resumed bench crawl ended 84 s late on two).  Asked per host every
        ``GAVE_UP_ASKED_EVERY`` s on a fleet, once in one process; ``--retry-errors`` skips older ones."""
        if self.revisit:
            return None
        now = time.monotonic()
        last = self._gave_up_asked.get(auth)
        if last is not None and (now - last < GAVE_UP_ASKED_EVERY or not self.shared):  # one process: once
            return None
        if len(self._gave_up_asked) >= HOSTS_REMEMBERED:
            self._gave_up_asked.clear()
        self._gave_up_asked[auth] = now
        try:
            record = json.loads(await self.frontier.get_meta(GAVE_UP_META + auth) or "null")
            reason, at = str(record["reason"]), float(record["at"])
        except (TypeError, KeyError, ValueError):  # none (null), or not what a worker writes
            return None
        if at < self.stats.started and self.retry_errors:
            return None
        self._gave_up[auth] = reason
        return reason

    async def _refused(self, auth: str) -> str | None:
        """Why the address policy refuses every address of ``auth`` (checked again at connect), or None.

        A name that does not resolve is not refused here: the robots.txt fetch fails on it, and the
        host is retried and in the end settled as unreachable."""
        if self.policy.allow_all:
            return None
        host, port = answers.host_port(auth)
        try:
            addresses = await resolve(host, port)
        except OSError:
            return None
        reasons = [self.policy.refuse(host, port, a) for a in addresses]
        return None if any(r is None for r in reasons) else reasons[0]

    async def _robots_failed(self, auth: str, lease: Lease, decision: RobotDecision) -> bool:
        """robots.txt could not be read just now (RFC 9309 §2.3.1.4: nothing is fetched from the host
        meanwhile).  That is no verdict on the URL: the host is parked until robots.txt is due again
        (the robot's backoff), and the URL waits.  After ``robots_attempts`` failed reads the URL is
        settled as an error, unreachable; the host's other URLs follow without a request."""
        entry = (await self.robot.policy(lease.url)).entry
        if entry.failures >= self.robots_attempts:
            why = entry.meaning.removesuffix(UNREACHABLE_MEANS)  # its verdict is the very thing not taken
            reason = (f"unreachable: robots.txt could not be read in {entry.failures} attempts"
                      f" (last: {entry.status}: {why})")  # fmt: skip
            if not self.revisit:  # given up for the crawl (all workers, a run resumed): later URLs too
                self._gave_up[auth] = reason
                record = json.dumps({"reason": reason, "at": time.time()})
                await self.frontier.set_meta(GAVE_UP_META + auth, record)
            self._finish(Page(lease.url, "error", lease.depth, time.time(), decision=decision,
                              item_type=answers.item_type(lease.url), reason=reason))  # fmt: skip
            return True
        until = max(entry.expires_at, time.time() + self.min_delay)
        why = f"robots.txt unreachable ({entry.status}), attempt {entry.failures} of {self.robots_attempts}"
        await self._park(auth, until, f"{why}; trying again in {until - time.time():.0f} s")
        await self.frontier.retry(lease.url, until, attempt=False, token=lease.token)
        return False

    async def _park(self, auth: str, until: float, why: str) -> None:
        await self.frontier.park(auth, until, why)
        self.stats.parked[auth] = why
        if until - time.time() > self.max_delay:
            log.warning("%s parked: %s", auth, why)

    # -- answers --------------------------------------------------------------------------

    async def _gemini(self, auth: str, lease: Lease, decision: RobotDecision, r: Response) -> bool:
        answer = answers.gemini(r, lease, auth, decision, time.time())
        if r.fingerprint_changed and auth not in self._cert_logged:
            self._cert_logged.add(auth)
            log.warning("%s: the certificate changed (was %s, now %s); going on", auth,
                        r.previous_fingerprint, r.fingerprint)  # fmt: skip
        return await self._answered(auth, lease, r, answer, "gemini")

    async def _gopher(self, auth: str, lease: Lease, decision: RobotDecision, r: Response) -> bool:
        return await self._answered(auth, lease, r, answers.gopher(r, lease, decision, time.time()), "gopher")

    async def _answered(self, auth: str, lease: Lease, r: Response, answer: Answer,
                        scheme: Literal["gemini", "gopher"]) -> bool:  # fmt: skip
        """Do what an answer comes to (``answers``): archive it, then settle the page (its links
        read first), follow its redirect, or ask again later.  False when the authority must be
        left alone for a while."""
        page = answer.page
        if answer.archive:
            await self.archive.write(
                r, scheme, page.fetched_at, lease, self._visiting.get(lease.url), auth, answer.certificate
            )
        if answer.gone and lease.url in self._visiting:
            self._visiting[lease.url].gone = True  # a selector that was there, if it was visited before
        if answer.caps is not None:
            await self.frontier.set_meta("caps:" + urls.authority(lease.url), answer.caps)
        if answer.step == "gemtext":
            assert answer.text is not None
            await self._finish_with_links(page, await links.gemtext_links_async(answer.text, lease.url,
                                                                               self.max_links))  # fmt: skip
        elif answer.step == "menu":
            found = await links.menu_links_async(page.body, self.max_links)
            if found.error is not None:
                self._finish(answers.unreadable(page, found.error), requested=True)
            else:
                await self._finish_with_links(page, found)
        elif answer.step == "redirect":
            target = page.target
            assert target is not None
            if answer.skipped is not None:
                self._skip_links(page, [answer.skipped], 1)
            wanted = answer.skipped is None and self._wanted(target, answers.item_type(target))
            # the target keeps the depth of the URL that redirected: a redirect is no step deeper
            self._finish(page, [target] if wanted else [], depth=page.depth, redirects=lease.redirects + 1,
                         requested=True)  # fmt: skip
        elif answer.step in ("retry", "slow-down"):
            return await self._again(auth, lease, answer)
        else:
            self._finish(page, requested=answer.requested)
        return True

    async def _again(self, auth: str, lease: Lease, answer: Answer) -> bool:
        """A temporary failure: retry later, MAX_ATTEMPTS times at most; a 44 also pauses the host,
        for the whole fleet (told first: another worker's request may be about to leave)."""
        slow, wait = answer.step == "slow-down", answer.wait
        if wait is None:  # a 44 whose meta is no number
            wait = self._slow[auth] = min(self._slow.get(auth, SLOW_DOWN_BASE / 2) * 2, 86400.0)
        now = time.time()
        if slow:
            await self.pacing.slowed(auth, now + wait, self.robot.delay(lease.url))
        if answer.final:
            self._finish(answer.page)
        else:
            self.stats.retries += 1
            await self.frontier.retry(lease.url, now + wait, token=lease.token)
        if slow:  # nothing more goes to this host for `wait` seconds, from any worker of the fleet
            why = f"44 slow down: {wait:g} s"
            if wait > self.max_delay:
                why += f", more than --max-delay {self.max_delay:g} s"
            self.stats.waiting[auth] = why
            await self._park(auth, now + wait, why)
            return False
        return True

    # -- shared ---------------------------------------------------------------------------

    def _in_scope(self, url: str) -> bool:
        if url.split(":", 1)[0] not in SCHEMES:
            return False
        return self.scope == "any" or urls.authority(url) in self.scope_authorities

    def _wanted(self, url: str, item_type: str | None) -> bool:
        """Whether a link is queued: in scope, and for Gopher an item type this robot fetches,
        by the same rule wherever the link came from (menu, URL: line, gemtext, redirect).
        ``item_type``: the URL's own (``links.Link.item_type``, ``answers.item_type``)."""
        if not self._in_scope(url):
            return False
        return item_type is None or gophermap.fetchable(item_type, self.roles or ())

    async def _finish_with_links(self, page: Page, found: links.Found | None) -> None:
        """Settle a fetched page with the links it holds: at most --max-links, within --max-depth,
        wanted; those that can never be requested recorded as skipped."""
        if found is None:
            self._finish(page, requested=True)
            return
        depth = page.depth + 1
        follow: list[str] = []
        mirrors: list[str] = []
        seen: list[str] = []
        deep = self.max_depth is not None and depth > self.max_depth
        for i, link in enumerate(found.links):
            if i % 2048 == 2047:
                await asyncio.sleep(0)  # thousands of links: other hosts' turns come in between
            if link.mirror:
                mirrors.append(link.url)
                continue
            seen.append(link.url)
            if not deep and self._wanted(link.url, link.item_type):
                follow.append(link.url)
                if link.url.startswith("gopher:"):
                    await self._introduce_caps(link.url, depth)
        page = dataclasses.replace(page, title=found.title, links=tuple(seen), mirrors=tuple(mirrors),
                                   links_more=found.more, links_skipped=found.skipped_count)  # fmt: skip
        self._skip_links(page, found.skipped, found.skipped_count)
        if self.revisit and self._limit_reached():
            follow = []  # past --max-pages a revisiting crawl watches what it has, and adds nothing
        self._finish(page, follow, depth=depth, requested=True)

    def _skip_links(self, page: Page, skipped: Iterable[links.Skipped], count: int) -> None:
        """A page's links that can never be requested: one pages.jsonl line each (the first 100).

        A target of another scheme (``mailto:``, ``news:``) is no link a crawler would follow, so
        it is left out, as out-of-scope links are."""
        now = time.time()
        ours = [s for s in skipped if answers.scheme_of(s.target) in (None, *SCHEMES)]
        for s in ours[: links.SKIPPED_KEPT]:
            self.archive.record(
                Page(s.target, "skipped", page.depth + 1, now, reason=s.reason, parent=page.url)
            )
        self.stats.skipped += len(ours) + max(count - links.SKIPPED_KEPT, 0)

    async def _introduce_caps(self, url: str, depth: int) -> None:
        """caps.txt is read once per Gopher server (the frontier keeps each URL once)."""
        auth = urls.authority(url)
        if auth in self._caps_known:
            return
        self._caps_known.add(auth)
        if self.max_depth is not None and depth > self.max_depth:
            depth = self.max_depth
        host, port = answers.host_port(auth)
        await self.frontier.add(urls.gopher_url(host, port, "0", "caps.txt"), depth)

    def _finish(self, page: Page, links: Iterable[str] = (), depth: int = 0, redirects: int = 0,
                requested: bool = False) -> None:  # fmt: skip
        """pages.jsonl, then the frontier (with the links, in one transaction): a kill between the
        two re-fetches this page only.  The worker awaits the settling with its next lease, and the
        page is yielded once it is committed.  ``requested``: a page was asked for (--max-pages; a
        revisiting crawl counts a URL's first response only).

        A revisiting crawl settles the URL with its next due time (``visits.next_visit``) in the same step."""
        lease = self._leased.get(page.url)
        visiting = self._visiting.get(page.url)
        visit = None
        if lease is not None and visiting is not None and same_refusal(lease, page):
            self._decided_again(lease, page)
            return
        if lease is not None and visiting is not None:
            visit = next_visit(
                lease, page, visiting, time.time(), self.min_delay, self.revisit_min, self.revisit_max
            )
            changed = True if visit.number == 1 else visit.changed
            page = dataclasses.replace(page, visit=visit.number, changed=changed, due=visit.due)
            if visit.due is None and visit.misses >= GONE_AFTER:
                reason = f"{page.reason}; gone: {visit.misses} such answers in a row, not asked again"
                page = dataclasses.replace(page, outcome="gone", reason=reason)
        counted = requested and (lease is None or lease.capture_at is None)
        self.archive.record(page)
        links = list(links)
        token = lease.token if lease is not None else ""
        settled = self.frontier.done(page.url, page.outcome, links, depth=depth, redirects=redirects,
                                     page=counted, visit=visit, token=token)  # fmt: skip
        self._unconfirmed[page.url] = page
        if counted:
            self._pages += 1
        news = any(urls.authority(link) not in self._active for link in links)  # a host not at work
        self._hosts.read(urls.authority(page.url), (urls.authority(link) for link in links), self._sent)
        self._settling[page.url] = (settled, page, news)

    def _decided_again(self, lease: Lease, page: Page) -> None:
        """A revisiting crawl's disallowed URL decided as before (the same robots.txt line refuses
        it): nothing new to record, so no pages.jsonl line, no visit counted, nothing yielded; the
        URL goes back to the queue, its memory unchanged, to be decided again when the robots.txt
        in force expires.  Only a change (allowed, or refused by another line) is recorded."""
        expires = page.decision.expires_at if page.decision is not None else 0.0
        due = max(expires, time.time() + self.min_delay)

        async def back() -> int:
            await self.frontier.retry(page.url, due, attempt=False, token=lease.token)
            return 0

        self._quiet[page.url] = page  # this very settling: a later one of the URL is news again
        self._settling[page.url] = (asyncio.ensure_future(back()), page, False)
