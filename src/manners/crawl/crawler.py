"""The crawler: a frontier on disk, robots.txt before every request, one request at a time per host.

Authorities are worked in parallel (every ready one, the biggest first, ``concurrency``
requests on the wire at once), each by one task that
leases its URLs one by one from the frontier, asks the robot, waits its turn, fetches, and
settles the URL: WARC first, then ``pages.jsonl``, then the frontier, so a kill at any
instant costs at most the pages in flight.  What a reply *means* lives in the pure modules
(``answers``, ``meaning``, ``gophermap``, ``gemtext``, ``urls``); the run itself, which decides
what to do next, is ``worker``; the turns at each host are ``pacing``'s, the files ``archive``'s,
and what a crawl is (its robot, its seeds' check, its settings) ``identity``'s.  This module is
the crawler as a program uses it: its options, its directory and files, its lifetime.

The same crawler is one worker of a fleet when its frontier is on Redis: every worker leases
from the one frontier and books each host's request slots there, so a host is spaced for the
fleet as one process spaces it; each renews its leases while it fetches (a request leaves, and a
page is settled, only while its lease is held: see ``take_slot``), gives back a dead worker's
once they expire, and keeps its own files (``pages-WORKER.jsonl``, WARCs named after
it).  Every worker, a single process included, writes a ledger, ``requests-WORKER.jsonl``: a
line flushed before each request leaves, robots.txt and caps.txt included, so a request whose
answer never came is still on record for ``manners crawl audit``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Literal

from ..agents import require_token
from ..cache.entry import TTL
from ..fetch import FetchResult
from ..fetch.address import Network
from ..profiles import get_profile
from ..robot import Robot
from ..version import __version__
from . import urls
from .archive import Archive
from .frontier import PAGES, Patient, is_shared, open_frontier, shown
from .identity import IDENTITY, CrawlMismatch, check_seed, read_settings, settle_identity
from .inflight import robots_rank
from .last_requests import still_answering
from .outdir import CrawlFileError, DirLock, describe, prepare
from .pacing import Pacing
from .page import Page, Stats
from .records import Ledger, PageLog
from .revisit import REVISIT_MAX, REVISIT_MIN, check_bounds
from .warc import WarcWriter
from .worker import ALIVE, FOREVER, HEARTBEAT, SLOW_DOWN_BASE, Worker

__all__ = [  # what other modules import from here (the crawler's names before it was split)
    "ALIVE", "FOREVER", "HEARTBEAT", "IDENTITY", "LEASE", "PATIENCE", "SLOW_DOWN_BASE", "WARC_SIZE",
    "CrawlMismatch", "Crawler", "Page", "Stats", "check_seed", "patience", "read_settings",
]  # fmt: skip

log = logging.getLogger("manners.crawl")

WARC_SIZE = 1 << 30  # bytes: a WARC file is closed, and the JSONL files rolled, past this (--warc-size)
LEASE = 120.0  # seconds a lease lasts unless renewed (--lease)
PATIENCE = 30.0  # seconds a worker waits for an unreachable shared frontier before it stops (lease/2 at most)


class Crawler(Worker):
    """``async with Crawler(agent="mybot", out=Path("crawl")) as c: async for page in c.crawl(seeds)``.

    Everything the crawl knows is in ``out``: the frontier (``frontier.sqlite3``), the
    settled pages (``pages.jsonl``) and the archive (``warc/``); run it again with the same
    ``out`` to resume.  A crawl has one identity, kept in the frontier: its agent, roles,
    profile and scope.  Left as None they are taken from the crawl being resumed; named
    differently, the crawl refuses to start (``CrawlMismatch``): a robot never changes its
    manners mid-crawl.  Limits count over the whole crawl, this run and the ones before.

    ``concurrency`` is the number of requests on the wire at once; every host with work is
    worked at once, the biggest first, each one request at a time, spaced as its robots.txt
    and ``min_delay`` ask (a host waiting for its turn takes no share of ``concurrency``).  A
    host that asks for more than ``max_delay`` seconds is parked: recorded, and left alone.  A
    host whose robots.txt cannot be read is parked too, and robots.txt tried again
    ``robots_backoff`` seconds later (doubling), ``robots_attempts`` times in all, before its
    URLs are settled as errors.

    Only public unicast addresses, and the exact host and port of each seed, are connected
    to; ``allow_private`` (True, or a list of networks) widens that for a lab.

    ``frontier``: where the crawl's frontier is (default: ``out/frontier.sqlite3``, one
    process, which holds ``out``'s lock).  A ``redis://``, ``rediss://`` or ``redis-cluster://``
    URL makes this crawler one worker of the crawl ``name`` on that Redis: any number of
    workers, on any number of machines, crawl it together, each with its own files in its
    ``out`` (several may share one).  A lease lasts ``lease`` seconds and is renewed while its
    fetch runs, so only a dead or stuck worker's leases expire, to be taken back by the others.

    ``revisit``: the crawl never ends by itself (``stop()`` ends it): every URL fetched is due
    again after its own interval, from ``revisit_min`` doubling while the page stays the same up
    to ``revisit_max`` (``manners.crawl.revisit``), never sooner than the host's ``Check:`` nor
    ``min_delay``; an unchanged page goes to the WARC as a revisit record.  robots.txt is read
    again when its copy expires (a day, less where the server says so, ``robots_max_age`` at
    most), and each URL is decided under the file in force when it is due.
    """

    def __init__(
        self,
        agent: str | None = None,
        roles: Iterable[str] | str | None = None,
        out: Path | str = Path("crawl"),
        *,
        profile: str | None = None,
        scope: Literal["seeds", "any"] | None = None,
        max_pages: int | None = None,
        max_depth: int | None = None,
        max_per_host: int | None = None,
        max_links: int = 10_000,
        max_queued_per_host: int = 100_000,
        max_bytes: int = 5 << 20,
        min_delay: float = 1.0,
        max_delay: float = 300.0,
        concurrency: int = 16,
        cache: str = "sqlite",
        warc: bool = True,
        timeout: float = 30.0,
        max_policies: int = 10_000,
        allow_private: bool | Iterable[Network] = False,
        robots_backoff: float = 60.0,
        robots_attempts: int = 4,
        retry_errors: bool = False,
        settings: dict[str, object] | None = None,
        frontier: Path | str | None = None,
        name: str | None = None,
        lease: float = LEASE,
        revisit: bool = False,
        revisit_min: float = REVISIT_MIN,
        revisit_max: float = REVISIT_MAX,
        robots_max_age: float | None = None,
        warc_size: int = WARC_SIZE,
    ) -> None:
        self.agent = require_token(agent) if agent is not None else None
        self.roles = ((roles,) if isinstance(roles, str) else tuple(roles)) if roles is not None else None
        self.out = Path(out)
        for option, value in (("max_pages", max_pages), ("max_depth", max_depth),
                              ("max_per_host", max_per_host)):  # fmt: skip
            if value is not None and value < 0:
                raise ValueError(f"{option} must be 0 or more")
        for option, value in (("max_links", max_links), ("max_queued_per_host", max_queued_per_host),
                              ("robots_attempts", robots_attempts)):  # fmt: skip
            if value < 1:
                raise ValueError(f"{option} must be 1 or more")
        if max_bytes < 1:
            raise ValueError("max_bytes must be a positive number of bytes")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if min_delay < 0 or max_delay < min_delay:
            raise ValueError("need 0 <= min_delay <= max_delay")
        if not timeout > 0:
            raise ValueError("timeout must be a positive number of seconds")
        if not robots_backoff > 0:
            raise ValueError("robots_backoff must be a positive number of seconds")
        if scope not in ("seeds", "any", None):
            raise ValueError("scope is 'seeds' or 'any'")
        if not lease > 0:
            raise ValueError("lease must be a positive number of seconds")
        check_bounds(revisit_min, revisit_max)
        if robots_max_age is not None and not robots_max_age > 0:
            raise ValueError("robots_max_age must be a positive number of seconds")
        if warc_size < 1:
            raise ValueError("warc_size must be a positive number of bytes")
        self.warc_size = warc_size
        self.shared = is_shared(frontier)
        if self.shared and not name:
            raise ValueError("a frontier on Redis holds many crawls: name this one (name=..., --name CRAWL)")
        self.frontier_spec: Path | str = self.out / "frontier.sqlite3" if frontier is None else frontier
        self.name = name if self.shared else None
        self.lease = lease
        self.profile = get_profile(profile).name if profile is not None else None
        self.scope = scope
        self.max_pages = max_pages
        self.max_depth = max_depth
        self.max_per_host = max_per_host
        self.max_links = max_links
        self.max_queued_per_host = max_queued_per_host
        self.max_bytes = max_bytes
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.concurrency = concurrency
        self.cache = cache
        self.warc_enabled = warc
        self.timeout = timeout
        self.max_policies = max_policies
        self.allow_private = allow_private if isinstance(allow_private, bool) else tuple(allow_private)
        self.robots_backoff = max(robots_backoff, min_delay)  # a retry is a request like any other
        self.robots_attempts = robots_attempts
        self.retry_errors = retry_errors
        self.revisit = revisit
        self.revisit_min = revisit_min
        self.revisit_max = revisit_max
        self.robots_max_age = robots_max_age
        self.settings = settings  # the command's options, kept with the crawl for a resume (read_settings)
        # This worker's id: in its leases, its ledger and pages records, and its files' names.
        self.owner = re.sub(
            r"[^A-Za-z0-9._-]", "_", f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        )
        super().__init__()
        self.warc: WarcWriter | None = None
        self._opened = False
        self._lock: DirLock | None = None
        self._frontier_lock: DirLock | None = None  # a SQLite frontier outside ``out``: its directory's
        self._rotating: asyncio.Future[None] | None = None  # a rotation asked for by SIGHUP

    # -- lifetime -----------------------------------------------------------------------

    async def __aenter__(self) -> Crawler:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Take the directory (one writer at a time), settle the crawl's identity, open the files.

        CrawlFileError for a directory or file that cannot be used, CrawlMismatch for a resume
        that names another robot: each one sentence, raised before anything is sent.
        """
        if self._opened:
            return
        prepare(self.out)
        if not self.shared:  # a fleet's workers share the frontier, and may share a DIR: their files differ
            self._lock = DirLock(self.out)
            elsewhere = Path(self.frontier_spec).parent
            if elsewhere.resolve() != self.out.resolve():  # a SQLite frontier is one process's too
                try:
                    prepare(elsewhere)
                    self._frontier_lock = DirLock(elsewhere)
                except BaseException:
                    self._lock.release()
                    raise
        try:
            await self._open()
        except BaseException:
            await self._close_files()
            raise
        self._opened = True

    async def _open(self) -> None:
        try:
            frontier = open_frontier(self.frontier_spec, self.max_queued_per_host, self.name)
        except Exception as exc:
            raise CrawlFileError(str(exc)) from None
        # Told at once when a fleet's frontier is unreachable at the start; patient from then on.
        self.frontier = frontier
        await self._identity()
        if self.settings is not None:
            await self.frontier.set_meta("settings", json.dumps(self.settings))
        if self.shared:  # a worker gives up before its leases can expire: it never wakes holding stale ones
            self.frontier = Patient(frontier, patience(self.lease))
        assert self.agent is not None and self.roles is not None
        self.robot = Robot(
            self.agent,
            self.roles,
            self.cache,
            min_delay=self.min_delay,
            max_delay=self.max_delay,
            timeout=self.timeout,
            max_policies=self.max_policies,
            profile=self.profile,
            backoff=self.robots_backoff,
            fetcher=self._fetch_robots,
            ttl=self.robots_max_age or TTL,
        )
        # A single process keeps the names it always had; a fleet's workers each their own.
        pages = f"pages-{self.owner}.jsonl" if self.shared else "pages.jsonl"
        try:
            self.pages = PageLog(self.out / pages)
            self.ledger = Ledger(self.out / f"requests-{self.owner}.jsonl", self.owner)
            # flushed, not fsynced, per record: a killed process loses nothing (the kernel has it), as
            # with pages.jsonl and the frontier (WAL, synchronous=NORMAL); fsync on close
            info = {"software": f"manners/{__version__}", "robot": self.agent, "roles": " ".join(self.roles),
                    "worker": self.owner}  # fmt: skip
            if self.warc_enabled:
                prefix = self.owner if self.shared else "manners"
                self.warc = WarcWriter(self.out / "warc", prefix=prefix, max_size=self.warc_size, info=info,
                                       fsync=False)  # fmt: skip
        except OSError as exc:
            raise CrawlFileError(describe(exc, Path(exc.filename or self.out))) from None
        self.archive = Archive(self.pages, self.ledger, self.warc, self.owner, self.warc_size)
        self.pacing = Pacing(self.frontier, self.ledger, self.shared, self.lease, self.timeout)
        self.known_hosts = self.frontier.known_hosts()
        if self.shared:  # the others are alive: only the leases of the dead, expired, come back
            self.recovered = await self.frontier.reclaim()
        else:  # the lock is ours, so no live process holds a lease here: a previous run's are queued again
            until = await asyncio.to_thread(still_answering, self.out, self.timeout)
            self.recovered = await self.frontier.recover(None, running=self.timeout, until=until)
        if self.retry_errors:
            self.requeued = await self.frontier.requeue("error")
        if self.revisit and await self.frontier.get_meta("revisit") is None:
            # a crawl made without --revisit: what it fetched is watched from now on
            watched = await self.frontier.revisit_settled(time.time() + self.revisit_min)
            await self.frontier.set_meta("revisit", "1")
            log.info("%d pages fetched before --revisit are due again in %g s", watched, self.revisit_min)
        if self.revisit:
            await self._cap_due()
            await self._derived_ids()

    @property
    def where(self) -> str:
        """The crawl, as a sentence names it: its directory, or its name on a fleet's frontier."""
        return f"the crawl {self.name!r} at {shown(self.frontier_spec)}" if self.shared else str(self.out)

    async def _identity(self) -> None:
        """The crawl's agent, roles, profile and scope: as kept, as given, or refused when they differ."""
        self.agent, self.roles, self.profile, self.scope = await settle_identity(
            self.frontier, self.agent, self.roles, self.profile, self.scope, self.where, self.shared
        )

    async def close(self) -> None:
        if not self._opened:
            return
        self._opened = False
        with contextlib.suppress(Exception):
            await self.frontier.recover(self.owner)
        with contextlib.suppress(Exception):
            await self._refresh_counts()
        with contextlib.suppress(Exception):
            await self.frontier.heartbeat(self.owner, self._beat("stopped"))
        await self.robot.close()
        await self._close_files()

    async def _close_files(self) -> None:
        for closing in (getattr(self, "pages", None), getattr(self, "ledger", None), self.warc):
            if closing is not None:
                with contextlib.suppress(Exception):
                    closing.close()
        if getattr(self, "frontier", None) is not None:
            with contextlib.suppress(Exception):
                await self.frontier.close()
        for lock in (self._lock, self._frontier_lock):
            if lock is not None:
                lock.release()
        self._lock = self._frontier_lock = None

    def stop(self) -> None:
        """Finish the requests in flight, return the rest to the queue, and end the crawl."""
        self.stats.stopped = True
        self._stop.set()
        self._wake.set()

    # -- the crawl ----------------------------------------------------------------------

    async def crawl(self, seeds: Iterable[str] = ()) -> AsyncIterator[Page]:
        """Yield each page as it is settled.  No seeds: resume what ``out`` holds."""
        await self.open()
        seeds = list(seeds)
        normal = [check_seed(seed) for seed in seeds]
        known = await self._read_seeds()
        if not set(normal) <= set(known):  # kept once; a worker joining with the same seeds changes nothing
            self._scope(list(dict.fromkeys([*known, *normal])))
            await self.frontier.set_meta("seeds", json.dumps(self.seeds))
        for url in normal:
            await self.frontier.add(url, 0)
            if url.startswith("gopher:"):
                await self._introduce_caps(url, 0)
        counts = await self.frontier.counts()
        self._pages = counts.get(PAGES, 0)  # pages requested over the whole crawl, for --max-pages
        self._reserved = 0
        self.stats.started = time.time()
        self._slow = {}
        self._full = set()
        self._gave_up = {}
        self._gave_up_asked = {}
        self._settling = {}
        queue: asyncio.Queue[Page | None] = asyncio.Queue(maxsize=4 * self.concurrency)
        self._queue = queue
        runner = asyncio.ensure_future(self._run())
        runner.add_done_callback(lambda _: queue.put_nowait(None) if queue.empty() else None)
        try:
            while True:
                if runner.done() and queue.empty():
                    break
                page = await queue.get()
                if page is None:
                    if runner.done():
                        break
                    continue
                yield page
            runner.result()  # raise what went wrong, if anything did
            if self._failure is not None:
                raise self._failure
        finally:
            if not runner.done():
                self.stop()
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await runner

    async def _derived_ids(self) -> None:
        """Since when this crawl's responses carry derived record ids (``warc.capture_id``): kept in
        the frontier from the first run that wrote them, so a revisit record names its capture's
        id only where that capture has it (one written by an older manners has a random one)."""
        since = await self.frontier.get_meta("warc-ids-since")
        if since is None:
            since = repr(time.time())
            await self.frontier.set_meta("warc-ids-since", since)
        self.archive.ids_since = float(since)

    def rotate(self) -> None:
        """Start new files now: the WARC file, the pages file and the ledger (SIGHUP), so that the
        ones closed can be moved, compressed or shipped.  Done between two records."""

        async def rotate() -> None:
            async with self.archive.lock:
                if not self._opened:  # closed meanwhile: its files are final
                    return
                try:
                    self.archive.rotate()
                except OSError as exc:
                    why = describe(exc, self.out)
                    log.warning("cannot start new files (%s); going on in the ones open", why)

        if self._opened:
            self._rotating = asyncio.ensure_future(rotate())

    async def _fetch_robots(self, location: str) -> FetchResult:
        """robots.txt fetched for the robot, each request having its turn (``Pacing.fetch_robots``),
        one of the requests in flight (``concurrency``) while it runs, at its rank there
        (``inflight.robots_rank``)."""
        sent, queued = self._sent.get(urls.authority(location), (0, 0))
        async with self._gate().place(robots_rank(sent, queued)):
            return await self.pacing.fetch_robots(location, self.robot)


def patience(lease: float) -> float:
    """Seconds a worker waits out an unreachable shared frontier: ``PATIENCE``, or half its lease
    if that is shorter, so that a worker cut off gives up before its leases can expire (they are
    renewed every third of a lease) and never goes on with work others have taken back."""
    return min(PATIENCE, lease / 2)
