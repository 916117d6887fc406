"""The ``Frontier`` protocol: all the crawler may ask of a frontier, and all a fleet must implement.

Kept apart from ``frontier.py`` (which chooses an implementation) so that each implementation
can name the protocol it meets (mypy checks ``SQLiteFrontier``, ``RedisFrontier`` and
``Patient`` against it) without importing the module that imports them: no import circle.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection, Iterable, Mapping, MutableMapping
from typing import Protocol

from ..cache import Held, Hold
from .leases import Lease, Revisits, Visit

WORKERS_KEPT = 86400.0  # seconds a silent worker's last heartbeat is kept


class Frontier(Protocol):
    """The crawl's queue and memory: what the crawler may use, and all a fleet must implement."""

    def add(self, url: str, depth: int, parent: str | None = None, redirects: int = 0) -> Awaitable[bool]:
        """Queue ``url`` (already normalised); False when it is already known, in any state."""
        ...

    def add_many(
        self, urls: Iterable[str], depth: int, parent: str | None = None, redirects: int = 0
    ) -> Awaitable[list[str]]:
        """Queue several URLs in one transaction; return those that were new."""
        ...

    def lease(self, authority: str, owner: str, ttl: float) -> Awaitable[Lease | None]:
        """Move the next ready queued URL of ``authority`` to in flight, held by ``owner`` for ``ttl`` s.

        Asked for when called (``add``, ``add_many``, ``lease`` and ``done`` are plain functions
        returning an awaitable): a page settled and the next lease asked for before either is
        awaited are applied in that order, and may share one commit."""
        ...

    async def ready_authorities(
        self, now: float, exclude: Collection[str], limit: int, *, leased: bool | None = None
    ) -> list[str]:
        """Authorities with a URL ready at ``now``, not parked, not in ``exclude``.

        The most queued first (a crawl lasts as long as its biggest host, so those start first),
        then the least recently leased, so every authority gets its turn.  ``leased``: False, only
        those none of whose URLs was ever leased (a fleet's new hosts: ``inflight.Hosts``); True,
        only the others (those a fleet's worker may keep); None, both."""
        ...

    async def busiest(self, n: int) -> list[tuple[str, int]]:
        """The ``n`` authorities with the most URLs queued, most first, each with how many (ready
        or not): what the progress display and ``status`` show of a crawl of thousands of hosts.

        A walk over an index of queue lengths, ``n`` entries long, never over every authority:
        the display asks it every couple of seconds while the crawl runs."""
        ...

    async def next_ready_at(self, exclude: Collection[str] = ()) -> float | None:
        """When the next authority outside ``exclude`` gets ready: its earliest not_before or park end.

        None when nothing is queued: the crawler sleeps until then, or until a busy one is free."""
        ...

    def done(
        self,
        url: str,
        outcome: str,
        links: Iterable[str] = (),
        *,
        depth: int = 0,
        redirects: int = 0,
        page: bool = False,
        visit: Visit | None = None,
        token: str = "",
        repeat: bool = False,
    ) -> Awaitable[int]:
        """Settle ``url`` (in flight or queued) with ``outcome``, queueing ``links`` in the same transaction.

        ``token`` (or ``visit.token``): the lease settled.  The settling is fenced: made only while
        that lease is held, else nothing changes (not even the links) and LeaseLost is raised.
        ``repeat``: the call before may have been applied (its reply was lost), so a URL no longer
        in flight may be its own settling, and is taken as such.

        ``links`` are queued at ``depth`` with ``url`` as parent and ``redirects``: a kill can never
        fall between a page being settled and its links being known.  ``page``: a page was
        requested for it (counted under ``pages``, for --max-pages).  Returns how many of the
        links were new.

        ``visit`` (a revisiting crawl): the URL must be in flight; with ``visit.due`` it goes back
        to the queue, due then, with the visit's memory, in the same step; counted under
        ``visit:N`` and ``changed:N`` when a response was compared.  A settle of a URL no longer
        in flight (a repeat whose first reply was lost) changes nothing but the links.
        """
        ...

    async def retry(
        self, url: str, not_before: float, attempt: bool = True, *, token: str = "", repeat: bool = False
    ) -> None:
        """Return an in-flight ``url`` to the queue, not to be leased before ``not_before``.

        ``attempt``: the URL was tried (attempts + 1); False when it waits for its host (robots.txt).
        ``token``: the lease it is under; LeaseLost, nothing changed, when that lease is not held.
        """
        ...

    async def requeue(self, outcome: str) -> int:
        """Queue again every URL settled with ``outcome`` (``--retry-errors``); returns how many."""
        ...

    async def revisit_settled(self, due: float) -> int:
        """Queue again, due at ``due``, every URL settled ``fetched`` or ``redirect`` for good: a
        crawl made without --revisit resumed with it.  Their payloads are unknown, so their next
        visit counts as changed.  Returns how many."""
        ...

    async def revisits(self, now: float) -> Revisits:
        """URLs visited before and queued again: how many are due at ``now``, when the next is."""
        ...

    async def recover(
        self, owner: str | None = None, running: float = 0.0, until: Mapping[str, float] | None = None
    ) -> int:
        """Return leases to the queue: all of them (owner None), else ``owner``'s and every expired one.

        ``running`` (owner None: one process starting on what a killed run left): seconds a
        request that run had in flight may still be answered (its deadline); each host with a
        URL leased has its start stamped that far ahead, so its next request waits for it.  A host
        with nothing leased waits only its spacing after its last start: its last answer was read.
        ``until``, what the run's own files show instead (``last_requests.still_answering``): each
        host's start is stamped that late, and no other's, whatever it had leased: a lease whose
        request never left, or whose answer is on record, holds nothing up."""
        ...

    def renew(self, urls: Collection[str], owner: str, ttl: float) -> Awaitable[list[str]]:
        """Extend ``owner``'s leases on ``urls`` to ``ttl`` seconds from now (others' are left alone);
        returns the URLs whose lease is no longer held (it expired and was taken back).  ``urls``
        may map each URL to its lease's token, so that only that very lease is extended.

        A worker renews what it holds while the fetches run, so only the leases of a worker that
        died or hung expire."""
        ...

    def reclaim(self) -> Awaitable[int]:
        """Return every expired lease, whoever held it, to the queue (one attempt more); how many.

        Any live worker calls it now and then: a dead worker's URLs come back without it."""
        ...

    def book(self, authority: str, spacing: float, wait: float = 0.0) -> Awaitable[float]:
        """Book the next request slot of ``authority``; how many seconds from now it starts.

        The cache Store's ``book``: the slot is the later of now, ``wait`` seconds from now and
        the end of the last slot booked; the one after it starts ``spacing`` later.  Kept with
        the crawl, so every worker of a fleet books from the same slots."""
        ...

    def claim(
        self, authority: str, spacing: float, held: Held | None = None, hold: Hold | None = None
    ) -> Awaitable[float]:
        """Start a request to ``authority`` now if the last one started ``spacing`` ago or more.

        The cache Store's ``claim``: 0 when claimed, else the seconds still to wait.  ``held``:
        (URL, lease token, lease seconds) of the lease the request is made under, checked in the
        same atomic step: -1 when it is no longer held (nothing claimed), else it is extended.

        ``hold``: (token, seconds): the claim also holds ``authority`` for the request it starts,
        in the same atomic step, until ``release_hold`` (or, its holder dead, until the seconds
        run out unless ``renew_hold`` extends them).  While another token holds it, no claim
        naming a hold succeeds: the seconds to wait are answered (the spacing, or what is left of
        the hold if less, 10 ms at least).  One request at a time per host, fleet-wide, however
        late a worker's event loop runs."""
        ...

    def renew_hold(self, authority: str, token: str, ttl: float, *, stamp: bool = False) -> Awaitable[bool]:
        """Extend the hold ``token`` has on ``authority`` to ``ttl`` seconds from now; False (nothing
        changed) when ``token`` does not hold it (it expired, and may be another's since).
        ``stamp``: and stamp ``authority``'s start now in the same step, as ``claim`` with a
        spacing of 0 does (a request that waited for a place after its claim, now on record)."""
        ...

    def release_hold(
        self, authority: str, token: str, spacing: float, ago: float = 0.0, pause: float = 0.0
    ) -> Awaitable[bool]:
        """End the hold ``token`` has on ``authority``, its request over, and in the same atomic
        step stamp its start, ``ago`` seconds before now (when it left, as its worker measured:
        a duration, so no two clocks are compared), and book its next slot ``spacing`` after
        that start, on the frontier's clock: the next request, by any worker, is spaced from when
        this one left, and made only once it has ended (the hold is held until then, so a 44 is
        known before it).  ``pause``: the seconds from now the host asked for (a 44): no claim
        succeeds before they are over, in the same step as the hold ends (``slow`` put them there
        as the 44 came).  A start never moves back.  False (nothing changed) when ``token`` does
        not hold it."""
        ...

    def slow(self, authority: str, spacing: float, pause: float) -> Awaitable[None]:
        """A 44 from ``authority``: no claim succeeds, nor is a slot booked, before ``pause``
        seconds from now (the frontier's clock), whoever holds it; ``spacing``: its requests'.
        Kept as the host's start, which every claim reads in the step that claims.  A note the
        workers read before claiming left a window (one that read it just before the 44 was
        written claimed 0.39 s after the answer, for 2 s; 4 workers) and cost a Redis round
        trip a request, as much as the claim (6% of a worker's CPU)."""
        ...

    def heartbeat(self, worker: str, info: dict[str, object]) -> Awaitable[None]:
        """Record that ``worker`` is alive now, with ``info`` (JSON-able: host, pid, pages...)."""
        ...

    def workers(self) -> Awaitable[dict[str, dict[str, object]]]:
        """Each worker's last heartbeat: ``last_seen`` (epoch seconds) and what it said."""
        ...

    def oldest_lease(self) -> Awaitable[dict[str, object] | None]:
        """The lease expiring first: ``url``, ``owner`` and ``expires_in`` (seconds; negative when
        overdue); None when nothing is in flight."""
        ...

    def held(self) -> Awaitable[dict[str, int]]:
        """Leases held now, by owner (``manners crawl status``: a dead worker's last heartbeat
        says what it had in flight then; this, what it still holds until they are reclaimed)."""
        ...

    async def park(self, authority: str, until: float, reason: str) -> None:
        """Lease nothing of ``authority`` before ``until`` (a 44, or a wait beyond --max-delay)."""
        ...

    async def parked(self) -> dict[str, tuple[float, str]]:
        """Authorities parked now: until when, and why."""
        ...

    async def counts(self) -> dict[str, int]:
        """URLs per state (queued, in_flight, done) and settled URLs per outcome."""
        ...

    async def host_done(self, authority: str) -> int:
        """URLs of ``authority`` settled so far, those queued again for a revisit included
        (for --max-per-host)."""
        ...

    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...

    def known_hosts(self) -> MutableMapping[str, str]:
        """Gemini certificate fingerprints by ``host:port`` (trust on first use), kept with the frontier."""
        ...

    async def close(self) -> None: ...

    @property
    def dropped(self) -> int:
        """URLs this process did not queue because their authority's queue was full."""
        ...

    async def cap_due(self, latest: float) -> int:
        """Bring every revisit due after ``latest`` forward to ``latest``; how many moved.

        A revisiting crawl calls it with now + --revisit-max: a due time beyond that came from a
        clock that ran ahead (a worker's, or this machine's before it was set back) or from a
        crawl resumed with a smaller --revisit-max, and would leave its page unwatched for longer
        than the crawl allows."""
        ...
