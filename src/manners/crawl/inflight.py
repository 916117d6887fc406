"""Requests in flight: what ``--concurrency`` counts, and the file descriptors they need.

A polite crawl is bound by its biggest hosts, each asked one request at a time, a delay apart:
it meets that bound only if every host with work has a task from the start and none waits
behind another's delay.  So the crawler works every ready host at once (``hosts_at_once``) and
counts as its concurrency only the requests on the wire: a host waiting for its turn holds no
connection and no share of it.  Apart from the run (``worker``) because the same gate covers
robots.txt fetches (``crawler``), and because how many sockets a process may open is the
operating system's to say, not the run's.

Working every ready host at once has one limit: the CPU.  Past it, requests wait for a place,
and the order they get one decides the crawl's length.  First come, first served gives each
of N hosts with work 1/N of the places, so the biggest host, which alone sets the bound, runs
at a fraction of its pace for as long as the opening rush lasts.  ``Gate`` hands places by
rank instead: a host's first requests (its robots.txt, then ``DISCOVERY`` pages: enough to
see its pages link to more), then the host with the most URLs queued per page asked of it; a
host past its first pages still growing fast (``GROWING_BY``) goes before them all (``rank``),
in a fleet's worker in up to half the places.
First of the crawl, not of the run: a host whose pages were asked before (by a run that was
killed, or by another worker) has shown its size, and a resumed run that read every host's
robots.txt and first pages again before the biggest host's next page would stall that host
(tens of seconds at 1,500 hosts); its robots.txt, asked again, goes as its next page would.
No ranking works without its first pages: robots.txt links to nothing, so every host's queue
looks the same until its first pages are read.  Nor by URLs queued alone: a host's queue grows
only as its pages are read, so the hosts read first keep the lead and a bigger one that came
later starves behind them (at 4,400 hosts the biggest was asked 5 times in 6 minutes).  Queued
per page asked is how much a host is still growing: high for a host that has shown few of its
pages, falling as it is drained, whoever was read first.  The space bench's schedule model
(bench/space_schedule.py) chose this rule; docs/benchmarks.md has its figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections.abc import AsyncIterator, Collection, Iterable, Mapping, MutableMapping

from .frontier_protocol import Frontier

log = logging.getLogger("manners.crawl")

HOSTS_AT_ONCE = 10_000  # one process: hosts worked at once (a task and one lease each, a few KB)
FLEET_HOSTS_PER_REQUEST = 8  # a fleet's worker: new hosts per request in flight, and as many kept
SPARE_FILES = 64  # descriptors besides the requests' sockets: the frontier, WARC, pages, ledger, logs
DISCOVERY = 4  # a host's first page requests, which go before the ranked ones (with its robots.txt)
SWAP = 2.0  # a new host read takes a full worker's kept place from one with this many times fewer URLs queued
FLEET_GROWING_KEPT = 8  # caps of hosts a fleet's workers keep between them (new ones growing fast)
AHEAD = 0.05  # seconds before its slot a page's turn takes its place at the Gate (``Place``)
GROWING_BY = 3.0  # URLs queued per page asked past its first pages: such a host goes first
GROWING, ROBOTS, DISCOVERING, RANKED = 3, 2, 1, 0  # a request's tier in the gate's ranks: higher goes first


def hosts_at_once(concurrency: int, shared: bool) -> int:
    """How many hosts one worker works at once: every ready one in one process; on a fleet, what
    its ``concurrency`` can keep busy (new hosts, and as many others: ``Hosts``), so a worker
    that starts first leaves hosts to the others."""
    return max(concurrency * FLEET_HOSTS_PER_REQUEST, 64) if shared else HOSTS_AT_ONCE


def fleet_size(beats: Mapping[str, Mapping[str, object]], me: str, alive: float) -> int:
    """The fleet's live workers by their heartbeats (``Frontier.workers``), ``me`` among them:
    those not stopped and heard from within ``alive`` seconds of ``me``'s last beat, each on the
    frontier's clock, so no two machines' clocks are compared."""
    seen = {worker: float(str(beat.get("last_seen", 0.0))) for worker, beat in beats.items()}
    now = seen.get(me, max(seen.values(), default=0.0))
    others = (w for w, beat in beats.items() if w != me and beat.get("state") != "stopped")
    return 1 + sum(now - seen[w] <= alive for w in others)


class Hosts:
    """The ready hosts one worker starts.  In one process, every one.  On a fleet, ``cap`` new
    ones (none of whose URLs was leased) beside ``cap`` kept ones: a host started new whose
    first pages are read (``DISCOVERY``) is kept when the worker keeps fewer than ``cap``, or
    in place of the kept one with the fewest URLs queued, or beside them while it grows fast
    (``leave``), and is otherwise left for the frontier to hand to a worker with room.  So the fleet
    reads every host's first pages in the crawl's first minutes, as one process does, and a
    host they show big waits for a place only behind the hosts read before it: with one cap
    for both, the hosts kept filled the places, new ones started only as others were drained,
    and at 4,400 hosts the holes (named last) were first asked 400 s into the crawl.  The kept
    places take only hosts leased before (``leased``: those left, least recently leased first):
    taking hosts never leased there too filled them by name at the start, and the biggest
    capsule, left after its first pages at 5 s, waited 62-150 s for those to run out.  More
    hosts at once than ``cap`` each is slower: each waits longer for one of ``concurrency``
    places, which are held longer (at 1,024 hosts each, two workers at the default size made
    50-190 requests a second, 3-10 open at the servers, where at 128 they made 270-330, 16
    open)."""

    def __init__(self, cap: int, shared: bool) -> None:
        self.cap, self.shared = cap, shared
        self.new: set[str] = set()  # at work, started before any of their URLs was leased
        self.dropping: set[str] = set()  # kept, to leave after the page in flight: a new one took the place
        self.workers = 1  # the fleet's live workers, by their heartbeats (``fleet_size``)

    @property
    def growing_kept(self) -> float:
        """How many times ``cap`` this worker keeps new hosts growing fast: ``FLEET_GROWING_KEPT``
        shared by the fleet's live workers, at least once.  Each of N workers reads 1/N of the
        new hosts, so it meets 1/N of those growing fast: at twice ``cap`` each, four workers
        kept the biggest hole, but one of two had no room left for it at 95 s (3.4 URLs queued
        per menu at its fourth), and it waited 360 s for a kept place (about 1.17x the bound);
        at four times, kept, 1.111x.  Shared, each worker of four keeps twice ``cap`` as
        before (1.114x), and each of two four times."""
        return max(1.0, FLEET_GROWING_KEPT / max(1, self.workers))

    async def to_start(
        self, frontier: Frontier, now: float, active: Collection[str], full: set[str]
    ) -> list[str]:
        """The hosts to start now, not ``active`` (at work here) nor ``full`` (at --max-per-host)."""
        busy, new = set(active) | full, []
        kept = len(active) - len(self.new) - len(self.dropping)
        if self.shared and len(self.new) < self.cap:
            new = await frontier.ready_authorities(now, busy, self.cap - len(self.new), leased=False)
            self.new.update(new)
        free = min(HOSTS_AT_ONCE - len(busy) - len(new), self.cap - kept)
        if free <= 0:
            return new
        return new + await frontier.ready_authorities(now, busy.union(new), free, leased=self.shared or None)

    def ended(self, auth: str) -> None:
        """``auth``'s task here ended (drained, left, or failed)."""
        self.new.discard(auth)
        self.dropping.discard(auth)

    def read(self, auth: str, linked: Iterable[str], ranks: MutableMapping[str, tuple[int, int]]) -> None:
        """A page of ``auth`` was read, linking to ``linked`` (a host a link): while ``auth`` is new,
        its URLs queued in ``ranks`` count the page's links within it, for ``leave`` to weigh.  Its
        lease's count is a page behind: the biggest hole's fourth menu added 7 URLs to the 10 its
        lease saw, 3.4 a page asked where 2 was seen, and it was left (4 workers)."""
        if auth in self.new and auth in ranks:
            sent, queued = ranks[auth]
            ranks[auth] = (sent, queued + sum(host == auth for host in linked))

    def leave(self, auth: str, active: Collection[str], ranks: Mapping[str, tuple[int, int]]) -> bool:
        """Whether to leave ``auth`` to the fleet after its page just asked: ``active`` the hosts
        at work here, ``ranks`` each one's pages asked and URLs queued (as ``rank`` takes them).

        A new host whose first pages are read is kept while the worker keeps fewer than ``cap``.
        When it keeps ``cap``, the new host takes the place of the kept host with the fewest URLs
        queued if it has ``SWAP`` times as many, and that one leaves after its page in flight:
        the biggest capsule, read in the crawl's first seconds, was otherwise left behind the
        hosts read just before it and waited 79-141 s for a place (4 and 2 workers).  By URLs
        queued, not by growth (the ``Gate``'s rank): a host deep in its crawl grows slowly but
        has the most left (the second-biggest, 1,000 queued after 3,000 pages, would go first).
        Or if it is still growing fast (``rank``'s ``GROWING``) and that one is not: the biggest
        hole, 15 queued after its first four menus, was left behind hosts with more and waited
        463-505 s for a worker (4 workers).  The worker decides alone, from what it has read: no
        other worker knows the host yet.

        A new host still growing fast is kept beyond ``cap``, up to ``growing_kept`` times it,
        without a swap: at its fourth menu the biggest hole (19 queued) looked like hundreds of
        others, and the kept host with the fewest had 24 and grew as fast, so it was left, and
        a host left in the opening rush waits for it to end (444-479 s, 4 workers), since kept
        places come free only as kept hosts drain.  Kept, it waits at the ``Gate`` instead,
        where a growing host falls back among the ranked ones as soon as a few pages show it
        small: 302 hosts growing fast were left in the first 200 s of a 4 workers' run, about
        75 a worker."""
        if auth in self.dropping:
            return True  # ``ended`` forgets it, when its task has ended
        sent, queued = ranks.get(auth, (0, 0))
        if auth not in self.new or sent < DISCOVERY:
            return False
        self.new.discard(auth)
        kept = [a for a in active if a != auth and a not in self.new and a not in self.dropping]
        if len(kept) < self.cap or (grows_fast(sent, queued) and len(kept) < self.growing_kept * self.cap):
            return False
        least = min(((ranks[a][1], a) for a in kept if a in ranks), default=None)
        if least is not None and (
            queued > SWAP * least[0] or (grows_fast(sent, queued) and not grows_fast(*ranks[least[1]]))
        ):
            self.dropping.add(least[1])
            return False
        return True


class Place:
    """A place at the ``Gate`` taken ahead of a turn's slot, so that its request leaves at the
    slot: taken at the slot, it waited for a request elsewhere to end, and the biggest capsule,
    asked every 233 ms for 200 in a 4 workers' rush, waited 20-40 ms a request for a place (and
    then renewed its hold, a round trip more, since the claim was no longer the last word).
    ``take_slot`` takes it ``AHEAD`` before the slot and gives it back if the claim is put off
    longer than that (another worker's hold, a 44): a place held idle is one no other request
    has, so only for as long as a place is waited for in a rush."""

    lead = AHEAD

    def __init__(self, gate: Gate, rank: tuple[int, float]) -> None:
        self.gate, self.rank = gate, rank
        self._growing: bool | None = None  # None: not held

    @property
    def held(self) -> bool:
        return self._growing is not None

    async def take(self) -> None:
        if self._growing is None:
            self._growing = await self.gate.take(self.rank)

    def give_back(self) -> None:
        if self._growing is not None:
            growing, self._growing = self._growing, None
            self.gate._release(growing)


def fit_descriptors(concurrency: int) -> int:
    """The requests in flight this process can open sockets for: ``concurrency``, the soft
    RLIMIT_NOFILE raised towards its hard limit when it is too low for them; fewer, with a
    sentence, when even the hard limit is."""
    try:
        import resource
    except ImportError:  # not on this system: its own limits apply
        return concurrency
    need = concurrency + SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return concurrency
    target = need if hard == resource.RLIM_INFINITY else min(need, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    if soft >= need:
        return concurrency
    fits = max(1, soft - SPARE_FILES)
    log.warning("--concurrency %d needs %d file descriptors, but this process may open %d (ulimit -n):"
                " %d requests at once", concurrency, need, soft, fits)  # fmt: skip
    return fits


def rank(sent: int, queued: int) -> tuple[int, float]:
    """A page request's rank at the ``Gate``: ``sent`` page requests made to its host so far
    (this worker's, and the URLs settled before it first leased one: ``Frontier.host_done``),
    ``queued`` URLs of the host's still queued (``Lease.queued``).

    A host past its first pages that still queues ``GROWING_BY`` URLs or more per page asked
    goes before every other host's robots.txt and first pages: it has shown itself big, and
    reading all the others' first pages first stalled it (the biggest capsule, 20 URLs queued
    after its first four pages, waited 67-92 s behind 4,400 hosts' first pages).  Its rate is its
    spacing's, and it falls back among the ranked hosts as it is drained.  In a fleet's worker,
    only up to half the places while new hosts wait (``Gate``'s ``growing``).  Among the growing,
    the most queued first: with half the places, the biggest capsule (4,600 queued, 4.2 per page
    asked) waited behind small hosts growing faster, asked every 280-430 ms for 202; in the
    schedule model, one process, the order among them changes nothing.

    Pages asked count only pages that may link: a Gemini page, a hole's menu.  caps.txt, a
    hole's text or binary item show nothing of its size: counted, they left the default space's
    biggest hole (its first four pages its root, caps.txt and two texts: 3 URLs queued) ranked
    as small, kept by no fleet's worker for 463 s, and in one process past its first pages
    just under ``GROWING_BY`` (2.9) for 213 s.  docs/benchmarks.md has the runs."""
    if sent < DISCOVERY:
        return (DISCOVERING, queued)
    growth = queued / (sent + 1)
    return (GROWING, queued) if growth >= GROWING_BY else (RANKED, growth)


def grows_fast(sent: int, queued: int) -> bool:
    """Whether a host past its first pages still queues ``GROWING_BY`` URLs per page asked."""
    return rank(sent, queued)[0] == GROWING


def robots_rank(sent: int, queued: int) -> tuple[int, float]:
    """A robots.txt fetch's rank: the top one for a host none of whose pages were asked (it shows
    the host), else its next page's (its copy expired, or a resumed run's cache is empty)."""
    return rank(sent, queued) if sent else (ROBOTS, 0)


class Gate:
    """``places`` requests on the wire at once; when more want one, the highest rank goes
    first (first come, first served among equals), except that requests of hosts growing fast
    (``GROWING``) hold at most ``growing`` places while new hosts' robots.txt or first pages
    wait.  A place is handed from the request that ends straight to the next, so none is taken
    out of turn in between.

    ``growing``: every place in one process, half in a fleet's worker (``for_worker``).  New
    hosts come to a fleet's worker for as long as the opening rush lasts, 128 at a time: with
    every place for the growing hosts, a new host's first page waited as long as the biggest
    capsule had (its root: 74 s, with 4 workers); with none, the biggest capsule, past its first
    pages at 23 s, waited 93 s more and was then asked every 341-377 ms for 12 minutes, not
    every 202 (1.271x the bound).  Half of them also while only ranked hosts waited kept it at
    430 ms a request for 15 minutes."""

    def __init__(self, places: int, growing: int | None = None) -> None:
        self.free = places
        self.growing_at_most = places if growing is None else growing
        self.growing = 0  # places held by requests of the GROWING tier
        self._waiting: dict[bool, list[tuple[tuple[int, float], int, asyncio.Future[None]]]] = {
            True: [],  # GROWING
            False: [],  # the others
        }
        self._order = itertools.count()

    @classmethod
    def for_worker(cls, places: int, shared: bool) -> Gate:
        """A worker's gate: growing hosts in up to half its places on a fleet, in all in one process."""
        return cls(places, max(1, places // 2) if shared else None)

    def locked(self) -> bool:
        """Whether a request asking now would wait."""
        return self.free <= 0  # a place is free only while nobody waits: each is handed on

    @contextlib.asynccontextmanager
    async def place(self, rank: tuple[int, float] = (ROBOTS, 0)) -> AsyncIterator[None]:
        """Hold a place while the block runs (``rank``: see ``rank``; a robots.txt fetch's by default)."""
        growing = await self.take(rank)
        try:
            yield
        finally:
            self._release(growing)

    @contextlib.asynccontextmanager
    async def ahead(self, rank: tuple[int, float]) -> AsyncIterator[Place]:
        """A place a page's turn takes before its slot (``Place``), given back when the block ends."""
        place = Place(self, rank)
        try:
            yield place
        finally:
            place.give_back()

    async def take(self, rank: tuple[int, float]) -> bool:
        """Wait for a place and take it; whether it counts among the growing hosts' (``_release``'s)."""
        growing = rank[0] == GROWING
        if self.locked():
            waiter = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting[growing], ((-rank[0], -rank[1]), next(self._order), waiter))
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():  # handed a place as it was cancelled
                    self._release(growing)
                raise
        else:
            self.free -= 1
            self.growing += growing
        return growing

    def _release(self, growing: bool) -> None:
        """A place let go (by a ``growing`` request or not): handed to the next waiter, or freed."""
        self.growing -= growing
        fast, rest = self._waiting[True], self._waiting[False]
        while fast or rest:
            # a growing host's request, unless they hold their share and a new host's waits
            to_fast = bool(fast) and (
                self.growing < self.growing_at_most or not rest or rest[0][0][0] == -RANKED
            )
            _, _, waiter = heapq.heappop(fast if to_fast else rest)
            if not waiter.done():
                self.growing += to_fast
                waiter.set_result(None)
                return
        self.free += 1
