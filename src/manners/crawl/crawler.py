"""The crawler: a frontier on disk, robots.txt before every request, one request at a time per host.

Authorities are worked in parallel (``concurrency`` of them at once), each by one task that
leases its URLs one by one from the frontier, asks the robot, waits its turn, fetches, and
settles the URL: WARC first, then ``pages.jsonl``, then the frontier, so a kill at any
instant costs at most the pages in flight.  What a reply *means* lives in the pure modules
(``meaning``, ``gophermap``, ``gemtext``, ``urls``); this module only decides what to do next.

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
import codecs
import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import secrets
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..agents import require_token
from ..cache import LeaseLost, take_slot
from ..cache.entry import TTL, Entry
from ..fetch import FetchResult, fetch_robots
from ..fetch.address import POLICY, AddressPolicy, Network
from ..fetch.certificate import Certificate, read_certificate
from ..fetch.net import resolve
from ..profiles import get_profile
from ..robot import Policy, Robot, RobotDecision
from ..robots import asked_spacing
from ..version import __version__
from ..vocabulary import timestamp
from . import gophermap, links, meaning, urls
from .client import Response, gemini_get, gopher_get
from .frontier import (
    PAGES,
    CrawlLost,
    Frontier,
    FrontierError,
    Lease,
    Patient,
    Visit,
    is_shared,
    open_frontier,
    shown,
)
from .outdir import CrawlFileError, DirLock, describe, prepare
from .records import Ledger, PageLog
from .revisit import GONE_AFTER, REVISIT_MAX, REVISIT_MIN, after_missing, check_bounds, next_interval
from .warc import WarcWriter, capture_id, digest

log = logging.getLogger("manners.crawl")

Outcome = Literal["fetched", "disallowed", "redirect", "error", "skipped", "gone"]  # gone: --revisit
SCHEMES = ("gemini", "gopher")
MAX_REDIRECTS = 5  # a chain of redirects longer than this is an error
MAX_ATTEMPTS = 3  # temporary failures (40-44) are retried this many times
RETRY_BASE = 2.0  # seconds before the first retry of a temporary failure; doubles each time
SLOW_DOWN_BASE = 10.0  # seconds of a 44 whose meta is no number; doubles each time
FOREVER = 10 * 365 * 86400.0  # parked "until further notice"
_Settling = tuple[Awaitable[int], "Page", bool]  # the frontier's commit, the page, whether it had links
WEB_SEED = "the Web is served by the Scrapy integration (manners.scrapy), not by manners crawl"
UNREACHABLE_MEANS = ": robots.txt is unreachable, so everything is disallowed"  # fetch.outcome.unreachable
WARC_SIZE = 1 << 30  # bytes: a WARC file is closed, and the JSONL files rolled, past this (--warc-size)
WARC_INLINE = 256 << 10  # bytes: a larger reply is compressed for the WARC in a thread
IDENTITY = ("agent", "roles", "profile", "scope")  # what a crawl is, kept in the frontier; never changes
LEASE = 120.0  # seconds a lease lasts unless renewed (--lease)
HEARTBEAT = 5.0  # seconds between a worker's heartbeats (manners crawl status)
CANCEL_AGAIN = 0.2  # seconds a task may take to end once cancelled before it is cancelled again
PATIENCE = 30.0  # seconds a worker waits for an unreachable shared frontier before it stops (lease/2 at most)
CAP_EVERY = 60.0  # seconds between two checks that no revisit is due beyond --revisit-max
SLOW_META = "slow:"  # frontier meta: until when an authority asked (44) for nothing more, fleet-wide


class CrawlMismatch(ValueError):
    """A resume that names another agent, roles, profile or scope than the crawl it resumes."""


@dataclass(frozen=True)
class Page:
    """One URL settled: fetched, disallowed, a redirect, an error, or skipped (and why)."""

    url: str
    outcome: Outcome
    depth: int
    fetched_at: float  # seconds since the epoch (when settled, for URLs never requested)
    status: int | None = None  # Gemini status; None for Gopher
    mime: str | None = None  # Gemini media type
    item_type: str | None = None  # Gopher item type
    title: str | None = None
    body: bytes = b""  # Gopher text without its final "." line
    links: tuple[str, ...] = ()  # normalised gemini:// and gopher:// URLs found on the page
    decision: RobotDecision | None = None
    target: str | None = None  # redirect
    permanent: bool = False  # a 31 redirect
    reason: str | None = None  # error, skipped, disallowed
    truncated: bool = False
    sha256: str | None = None
    bytes: int = 0
    mirrors: tuple[str, ...] = ()  # Gopher "+" alternatives: recorded, not crawled
    certificate_changed: bool = False
    certificate: dict[str, object] | None = None  # Gemini: fingerprint, notAfter, names the host, TOFU
    peer: str | None = None  # the IP address the request went to
    parent: str | None = None  # skipped links: the page that held them
    links_more: int = 0  # links past --max-links: counted, not taken
    links_skipped: int = 0  # links that can never be requested (recorded as skipped, up to 100)
    visit: int | None = None  # a revisiting crawl: the URL's visit this is (1: its first)
    changed: bool | None = None  # a revisiting crawl: the payload differs from the last visit's
    due: float | None = None  # a revisiting crawl: when the URL is asked again (None: never)

    def record(self) -> dict[str, object]:
        """The ``pages.jsonl`` object for this page."""
        r: dict[str, object] = {"url": self.url, "outcome": self.outcome, "status": self.status}
        if self.item_type is not None:
            r["item_type"] = self.item_type
        else:
            r["mime"] = self.mime
        r.update(title=self.title, bytes=self.bytes, sha256=self.sha256, depth=self.depth,
                 links=list(self.links), fetched_at=timestamp(self.fetched_at))  # fmt: skip
        if self.outcome == "disallowed" and self.decision is not None:
            r.update(line=self.decision.line, rule=self.decision.rule, robots=self.decision.robots_url)
        if self.target is not None:
            r["target"] = self.target
            r["permanent"] = self.permanent
        if self.reason is not None:
            r["reason"] = self.reason
        if self.truncated:
            r["truncated"] = True
        if self.mirrors:
            r["mirrors"] = list(self.mirrors)
        if self.certificate_changed:
            r["certificate_changed"] = True
        if self.certificate is not None:
            r["certificate"] = self.certificate
        if self.peer is not None:
            r["peer"] = self.peer
        if self.parent is not None:
            r["parent"] = self.parent
        for key in ("links_more", "links_skipped"):
            if getattr(self, key):
                r[key] = getattr(self, key)
        if self.visit is not None:
            r["visit"] = self.visit
            r["changed"] = bool(self.changed)
            r["due"] = timestamp(self.due) if self.due is not None else None
        return r


@dataclass
class _Visiting:
    """What a revisiting crawl learns of a leased URL while handling it, for its settling."""

    started: float | None = None  # when its request left: the next interval counts from it
    check: float | None = None  # the Check: interval the host's robots.txt gives this robot
    capture: tuple[str, float, bool] | None = None  # a response: its digest, capture time, changed
    gone: bool = False  # the answer says the URL has gone (51, a Gopher error)


@dataclass
class Stats:
    """What the crawl has done so far, for the progress display and the summary."""

    fetched: int = 0
    disallowed: int = 0
    redirects: int = 0
    errors: int = 0
    skipped: int = 0
    gone: int = 0  # a revisiting crawl: URLs settled as gone (51 or a Gopher error, 3 in a row)
    retries: int = 0
    bytes: int = 0
    requests: int = 0
    queued: int = 0
    in_flight: int = 0
    done: int = 0
    hosts_active: int = 0
    waiting: dict[str, str] = field(default_factory=dict)  # authority -> why it waits
    parked: dict[str, str] = field(default_factory=dict)  # authority -> why it is parked
    started: float = field(default_factory=time.time)
    completed: bool = False  # nothing left to do (or a limit was reached)
    stopped: bool = False  # stop() was called before that
    limit: str | None = None  # the limit that ended the crawl
    dropped: int = 0  # links not queued: their host's queue was full (--max-queued-per-host)
    revisits: int = 0  # a revisiting crawl: responses to URLs visited before
    changed: int = 0  # of which the payload had changed
    due_now: int = 0  # URLs visited before and due now (the frontier's, refreshed with the counts)
    next_due: float | None = None  # when the next URL visited before is due

    def count(self, page: Page) -> None:
        kind = {"fetched": "fetched", "disallowed": "disallowed", "redirect": "redirects",
                "error": "errors", "skipped": "skipped", "gone": "gone"}[page.outcome]  # fmt: skip
        setattr(self, kind, getattr(self, kind) + 1)
        self.bytes += page.bytes
        if page.visit is not None and page.visit > 1 and page.changed is not None:
            self.revisits += 1
            self.changed += page.changed


class Crawler:
    """``async with Crawler(agent="mybot", out=Path("crawl")) as c: async for page in c.crawl(seeds)``.

    Everything the crawl knows is in ``out``: the frontier (``frontier.sqlite3``), the
    settled pages (``pages.jsonl``) and the archive (``warc/``); run it again with the same
    ``out`` to resume.  A crawl has one identity, kept in the frontier: its agent, roles,
    profile and scope.  Left as None they are taken from the crawl being resumed; named
    differently, the crawl refuses to start (``CrawlMismatch``): a robot never changes its
    manners mid-crawl.  Limits count over the whole crawl, this run and the ones before.

    ``concurrency`` is the number of authorities worked at once; each gets one request at a
    time, spaced as its robots.txt and ``min_delay`` ask.  A host that asks for more than
    ``max_delay`` seconds is parked: recorded, and left alone.  A host whose robots.txt cannot
    be read is parked too, and robots.txt tried again ``robots_backoff`` seconds later
    (doubling), ``robots_attempts`` times in all, before its URLs are settled as errors.

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
        self.stats = Stats()
        self.whole: dict[str, int] = {}  # the whole crawl's counts (the frontier's), this run included
        self.warc: WarcWriter | None = None
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()  # a worker ended or new URLs were queued: the dispatcher looks again
        self._opened = False
        self._lock: DirLock | None = None
        self._frontier_lock: DirLock | None = None  # a SQLite frontier outside ``out``: its directory's
        self._failure: BaseException | None = None  # what ended the crawl early (a file error)
        self._counted = 0.0
        self._caps_known: set[str] = set()  # Gopher authorities whose caps.txt is queued
        self._cert_logged: set[str] = set()
        self._cert_archived: set[tuple[str, str]] = set()  # (authority, fingerprint) with a metadata record
        self._warc_lock = asyncio.Lock()
        self._leased: dict[str, Lease] = {}  # this worker's leases while their URLs are handled (renewed)
        self._asked: dict[str, float] = {}  # authority -> the end of a 44's wait, until a request honours it
        self._honoured: dict[str, float] = {}  # authority -> the last such end a request of ours honoured
        self._robots_read: dict[str, float] = {}  # authority -> fetched_at of the robots.txt copy on record
        self._visiting: dict[str, _Visiting] = {}  # a revisiting crawl: leased URL -> what its settling needs
        self._ids_since: float | None = None  # a revisiting crawl: captures since then have derived ids
        self._rolled = 0  # the WARC files closed at --warc-size so far, to roll the logs with them
        self._rotating: asyncio.Future[None] | None = None  # a rotation asked for by SIGHUP
        self._quiet: dict[str, Page] = {}  # a revisiting crawl: refusals decided again as before, not yielded
        self._lost: set[str] = set()  # tokens of leases this worker learnt it lost (one ledger line each)
        self._unconfirmed: dict[str, Page] = {}  # URL -> its page, recorded, its settling not yet committed

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
        self.frontier: Frontier = frontier
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
        self.known_hosts = self.frontier.known_hosts()
        if self.shared:  # the others are alive: only the leases of the dead, expired, come back
            self.recovered = await self.frontier.reclaim()
        else:  # the lock is ours, so no live process holds a lease here: a previous run's are queued again
            self.recovered = await self.frontier.recover(None)
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
        kept = json.loads(await self.frontier.get_meta("identity") or "null")
        given = {"agent": self.agent, "roles": _roles(self.roles) if self.roles is not None else None,
                 "profile": self.profile, "scope": self.scope}  # fmt: skip
        if kept is None:
            if self.agent is None:
                raise CrawlMismatch(
                    f"name the robot with --agent: {self.where} keeps no robot's name yet"
                    " (a new crawl, or one made by an older manners)"
                )
            kept = {"agent": self.agent, "roles": given["roles"] or [], "profile": self.profile,
                    "scope": self.scope or "seeds"}  # fmt: skip
            await self.frontier.set_meta("identity", json.dumps(kept))
        differs = [
            f"{name} {_shown(given[name])} (the crawl's is {_shown(kept[name])})"
            for name in IDENTITY
            if given[name] is not None and given[name] != kept[name]
        ]
        if self.profile is None and kept["profile"] is not None:
            self.profile = kept["profile"]
        if differs:
            elsewhere = "under another --name" if self.shared else "in another --out"
            raise CrawlMismatch(
                f"{self.where} is a crawl by another robot: {'; '.join(differs)}; a robot keeps its manners"
                f" for a whole crawl (resume with the crawl's own, or start a new one {elsewhere})"
            )
        self.agent, self.roles, self.scope = kept["agent"], tuple(kept["roles"]), kept["scope"]

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
        self._slow: dict[str, float] = {}  # authority -> the last 44 backoff without a number
        self._full: set[str] = set()  # authorities at max_per_host
        self._settling: dict[str, _Settling] = {}  # leased URL -> its page, settled but not yet committed
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

    async def _read_seeds(self) -> list[str]:
        """The crawl's seeds as the frontier keeps them, and the scope and addresses they allow."""
        known: list[str] = json.loads(await self.frontier.get_meta("seeds") or "[]")
        if known != getattr(self, "seeds", None):
            self._scope(known)
        return known

    def _scope(self, seeds: list[str]) -> None:
        self.seeds = seeds
        self.scope_authorities = {urls.authority(u) for u in seeds}
        self.policy = AddressPolicy.of((_host_port(a) for a in self.scope_authorities), self.allow_private)

    async def _run(self) -> None:
        POLICY.set(self.policy)  # this task's context: its workers and their robots.txt fetches inherit it
        active: dict[str, asyncio.Task[None]] = {}
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
                free = self.concurrency - len(active)
                if free > 0:
                    ready = await self.frontier.ready_authorities(now, set(active) | self._full, free)
                    for auth in ready:
                        task = asyncio.ensure_future(self._work(auth))
                        active[auth] = task
                        task.add_done_callback(functools.partial(self._ended, active, auth))
                self.stats.hosts_active = len(active)
                pause = 0.1
                if not active:
                    at = await self.frontier.next_ready_at(self._full)
                    if at is None or (at > now + self.max_delay and not self.revisit):
                        await self._refresh_counts()
                        if not self.stats.in_flight:
                            break  # nothing left but hosts parked for longer than max_delay
                        at = now + 0.5  # other workers' pages in flight may bring links, or die and come back
                    pause = min(max(at - now, 0.005), 0.5)
                if time.monotonic() - self._counted > 0.5:
                    await self._refresh_counts()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), pause)
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
                await _cancelled(*upkeep)
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
        claim or its settling will be refused, and that URL's work dropped."""
        if self._leased:
            held = {url: lease.token for url, lease in self._leased.items()}
            for url in await self.frontier.renew(held, self.owner, self.lease):
                lease = self._leased.get(url)
                if lease is not None and lease.token == held[url]:
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
        self.pages.write({"url": page.url, "outcome": "unsettled", "was": page.outcome, "reason": reason,
                          "at": timestamp(time.time()), "worker": self.owner})  # fmt: skip

    async def _derived_ids(self) -> None:
        """Since when this crawl's responses carry derived record ids (``warc.capture_id``): kept in
        the frontier from the first run that wrote them, so a revisit record names its capture's
        id only where that capture has it (one written by an older manners has a random one)."""
        since = await self.frontier.get_meta("warc-ids-since")
        if since is None:
            since = repr(time.time())
            await self.frontier.set_meta("warc-ids-since", since)
        self._ids_since = float(since)

    async def _cap_due(self) -> None:
        """No revisit due later than --revisit-max from now (``Frontier.cap_due``): a due time
        further off came from a clock that ran ahead, or from a crawl resumed with a smaller
        --revisit-max.  (A host's ``Check:`` longer than --revisit-max is the floor again from the
        next visit on.)"""
        moved = await self.frontier.cap_due(time.time() + self.revisit_max)
        if moved:
            log.info("%d revisits were due later than --revisit-max %g s from now: due then", moved,
                     self.revisit_max)  # fmt: skip

    async def _heartbeat(self) -> None:
        await self.frontier.heartbeat(self.owner, self._beat("running"))
        if self.shared:
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
        await _cancelled(*pending)
        await self.frontier.recover(self.owner)  # the cancelled ones' leases: queued again

    def _limit_reached(self) -> bool:
        return self.max_pages is not None and self._pages + self._reserved >= self.max_pages

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
                if self._limit_reached() and not self.revisit:
                    break
                asked = self.frontier.lease(auth, self.owner, self.lease)
                await self._confirm(settling)
                settling = None
                lease = await asked
                if lease is None:
                    break
                # caps.txt is no page: --max-pages skips it; nor is a revisit a new page
                reserved = 0 if _is_caps(lease.url) or lease.capture_at is not None else 1
                unwatched = await self._unwatched(auth, lease) if self.revisit and reserved else None
                self._reserved += reserved
                self._leased[lease.url] = lease  # renewed until its settling is committed
                if self.revisit:
                    self._visiting[lease.url] = _Visiting()
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
                if not again:
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
        self._finish(Page(lease.url, "skipped", lease.depth, time.time(), item_type=_item_type(lease.url),
                          reason=reason))  # fmt: skip
        return True

    async def _confirm(self, settling: _Settling | None) -> None:
        """Wait for a page's settling to be committed, then yield it."""
        if settling is None:
            return
        settled, page, linked = settling
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
        if linked:
            self._wake.set()
        await self._emit(page)

    async def _settle(self, auth: str, lease: Lease) -> bool:
        """Handle one leased URL; False when the authority must be left alone for a while."""
        url = lease.url
        refused = await self._refused(auth)
        if refused is not None:
            self._finish(
                Page(url, "skipped", lease.depth, time.time(), item_type=_item_type(url), reason=refused)
            )
            return True
        decision = await self.robot.decide(url)
        if decision.outcome in ("unreachable", "retry") and not decision.stale:
            return await self._robots_failed(auth, lease, decision)
        policy = await self.robot.policy(url)  # the copy just decided by: in the robot's memory
        self._robots_source(url, decision, policy)
        if not decision.allowed:
            self._finish(Page(url, "disallowed", lease.depth, time.time(), decision=decision,
                                    item_type=_item_type(url), reason=decision.reason))  # fmt: skip
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
        honoured = await self._turn(auth, spacing, policy.entry, lease)
        self.stats.waiting.pop(auth, None)
        self.stats.requests += 1
        if visiting is not None:
            visiting.started = time.time()
        self.ledger.note(url, "caps" if _is_caps(url) else "page", lease.token or None, spacing, honoured)
        # held until the answer is read, as one process holds its host: a 44 is known before the next
        async with self._holding(auth, spacing) as connected:
            if url.startswith("gemini:"):
                response = await gemini_get(url, timeout=self.timeout, max_bytes=self.max_bytes,
                                            known_hosts=self.known_hosts, connected=connected)  # fmt: skip
                return await self._gemini(auth, lease, decision, response)
            response = await gopher_get(url, timeout=self.timeout, max_bytes=self.max_bytes,
                                        connected=connected)  # fmt: skip
            return await self._gopher(lease, decision, response)

    def _robots_source(self, url: str, decision: RobotDecision, policy: Policy) -> None:
        """Put on record, once per copy, a robots.txt copy this worker decides by but did not fetch
        (the shared cache held it: another worker's, or an earlier run's): ``audit`` must see that
        the pages after it were decided under a file read in time, though no request was made.  A
        copy fetched here is on record already (``_fetch_robots`` wrote each of its requests)."""
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

    # -- pacing, on the frontier ----------------------------------------------------------

    async def _turn(
        self, auth: str, spacing: float, entry: Entry | None = None, lease: Lease | None = None
    ) -> float | None:
        """Wait for this worker's turn at ``auth``, ``spacing`` after the last request to it by
        any worker, and after any wait the server asked for (a 44 here, or told by another worker
        through the frontier; robots.txt's Retry-After).  Returns the end of the server's wait
        that this request is the first of ours to honour (the ledger's ``not_before``), or None.

        A 44 another worker met after this one booked its slot would not hold this request back,
        so on a fleet the frontier is asked once more, when the slot comes, before it is claimed.

        ``lease``: the lease the request is made under; the slot is claimed only while it is held
        (and it is extended in the same step), else LeaseLost and no request leaves."""
        until = self._asked.get(auth, 0.0)
        if entry is not None and entry.outcome == "retry" and entry.retry_after:
            until = max(until, entry.fetched_at + entry.retry_after)

        async def told() -> float:
            nonlocal until
            slowed = float(await self.frontier.get_meta(SLOW_META + auth) or 0.0)
            until = max(until, slowed)
            return slowed - time.time()

        held = (lease.url, lease.token, self.lease) if lease is not None and lease.token else None
        await take_slot(self.frontier, auth, spacing, until - time.time(), told=told if self.shared else None,
                        held=held)  # fmt: skip
        if until <= 0 or self._honoured.get(auth) == until:
            return None
        self._honoured[auth] = until
        self._asked.pop(auth, None)
        return until

    @contextlib.asynccontextmanager
    async def _holding(self, auth: str, spacing: float) -> AsyncIterator[Callable[[], None]]:
        """One request at a time per host, fleet-wide, spaced from when it truly ended.

        Yields the callback the client calls once its connection is made: ``auth``'s start is
        stamped then (claimed with no spacing), in one process as in a fleet, so the next request
        is spaced from when this one truly left, not from when its slot was granted (the name
        lookup, the connection and a busy event loop come in between, and a kill may come
        before the end).

        While the request runs and its answer is read, ``auth`` is claimed with no spacing every
        half spacing (such a claim always succeeds, as if a request started then), and once more
        at the end, so no other worker's claim succeeds until ``spacing`` after this request is
        done with: by then a 44 is in the frontier for the next worker to see, and a request
        that left late (its worker's event loop busy between claim and send) is no closer to the
        next.  A single process needs none of it: its one task per host sends the next request
        only after this one's answer."""
        holder = self._hold(auth, spacing)
        stamps: list[asyncio.Future[float]] = []

        def connected() -> None:
            stamps.append(asyncio.ensure_future(self.frontier.claim(auth, 0.0)))

        try:
            yield connected
        finally:
            if holder is not None:
                await _cancelled(holder)
            if stamps:
                await asyncio.wait(stamps)  # its failure is the next call's to meet
            if holder is not None:
                await self.frontier.claim(auth, 0.0)

    def _hold(self, auth: str, spacing: float) -> asyncio.Task[None] | None:
        """On a fleet, claim ``auth`` with no spacing now and every half spacing, until cancelled."""
        if not self.shared or spacing <= 0:
            return None

        async def hold() -> None:
            while True:
                await self.frontier.claim(auth, 0.0)
                await asyncio.sleep(spacing / 2)

        return asyncio.ensure_future(hold())

    async def _fetch_robots(self, location: str) -> FetchResult:
        """robots.txt fetched for the robot as it would fetch it, each request having its turn as a
        page has (the host's spacing as known, else --min-delay; a 44 the fleet was told; on a
        fleet, the host held while it runs) and written to the ledger before it leaves: a Gopher
        server's several selectors and a Gemini redirect's hops are each a request.  Its hosts
        are claimed once more when it has ended: the next request, often the first page, is
        spaced from the end of this one, whatever its name lookup took before it left."""
        asked: list[str] = []
        honoured = await self._turn(urls.authority(location), self.robot.delay(location))
        holder: asyncio.Task[None] | None = None

        async def before(url: str) -> None:
            nonlocal honoured, holder
            auth, spacing = urls.authority(url), self.robot.delay(url)
            if holder is not None:  # the one before has had its answer
                await _cancelled(holder)
            if asked:  # the first had its turn before the fetch's deadlines began
                honoured = await self._turn(auth, spacing)
            asked.append(auth)
            self.ledger.note(url, "robots", None, spacing, honoured)
            holder = self._hold(auth, spacing)

        try:
            return await fetch_robots(location, self.robot.agent, self.robot.timeout, self.robot.max_bytes,
                                      spacing=self.robot.min_delay, before=before)  # fmt: skip
        finally:
            if holder is not None:
                await _cancelled(holder)
            for auth in dict.fromkeys(asked):
                await self.frontier.claim(auth, 0.0)

    async def _refused(self, auth: str) -> str | None:
        """Why the address policy refuses every address of ``auth`` (checked again at connect), or None.

        A name that does not resolve is not refused here: the robots.txt fetch fails on it, and the
        host is retried and in the end settled as unreachable."""
        if self.policy.allow_all:
            return None
        host, port = _host_port(auth)
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
            self._finish(Page(lease.url, "error", lease.depth, time.time(), decision=decision,
                              item_type=_item_type(lease.url), reason=reason))  # fmt: skip
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

    # -- Gemini ---------------------------------------------------------------------------

    async def _gemini(self, auth: str, lease: Lease, decision: RobotDecision, r: Response) -> bool:
        url, depth, now = lease.url, lease.depth, time.time()
        cert = read_certificate(r.certificate) if r.certificate else None
        record = cert.record(_host_port(auth)[0], now, r.tofu or "new") if cert is not None else None
        base: dict[str, Any] = {"decision": decision, "status": r.status, "peer": r.peer,
                                "certificate_changed": r.fingerprint_changed,
                                "certificate": record}  # fmt: skip
        if r.fingerprint_changed and auth not in self._cert_logged:
            self._cert_logged.add(auth)
            log.warning("%s: the certificate changed (was %s, now %s); going on", auth,
                        r.previous_fingerprint, r.fingerprint)  # fmt: skip
        if r.error is not None or r.status is None:
            self._finish(Page(url, "error", depth, now, reason=r.error, **base), requested=bool(r.request))
            return True
        await self._archive(r, "gemini", now, lease, auth, cert)
        action = meaning.gemini_action(r.status, r.meta, url)
        if action.kind == "store":
            mime = action.mime or "text/gemini"
            media = meaning.media_type(mime)
            found = None
            if media == "text/gemini":
                text = r.body.decode(_codec(meaning.charset(mime)), "replace")
                found = await links.gemtext_links_async(text, url, self.max_links)
            page = Page(url, "fetched", depth, now, mime=mime, body=r.body, truncated=r.truncated,
                        **_digest(r.body), **base)  # fmt: skip
            await self._finish_with_links(page, found)
            return True
        if action.kind == "redirect":
            target = action.target
            if target is None or target.split(":", 1)[0] not in SCHEMES:
                reason = f"{r.status} {r.meta}: a redirect to nowhere the crawler can follow"
                self._finish(Page(url, "error", depth, now, reason=reason, **base), requested=True)
                return True
            if lease.redirects >= MAX_REDIRECTS:
                reason = f"more than {MAX_REDIRECTS} redirects in a row"
                self._finish(
                    Page(url, "error", depth, now, target=target, reason=reason, **base), requested=True
                )
                return True
            page = Page(url, "redirect", depth, now, target=target, links=(target,),
                        permanent=action.permanent, **base)  # fmt: skip
            problem = links.request_problem(target)
            if problem is not None:
                self._skip_links(page, [links.Skipped(target[:200], problem)], 1)
            follow = [target] if problem is None and self._wanted(target, _item_type(target)) else []
            # the target keeps the depth of the URL that redirected: a redirect is no step deeper
            self._finish(page, follow, depth=depth, redirects=lease.redirects + 1, requested=True)
            return True
        if action.kind == "slow-down":
            wait = action.wait
            if wait is None:
                wait = self._slow[auth] = min(self._slow.get(auth, SLOW_DOWN_BASE / 2) * 2, 86400.0)
            return await self._again(auth, lease, r, base, wait, slow=True)
        if action.kind == "retry":
            return await self._again(auth, lease, r, base, RETRY_BASE * 2**lease.attempts, slow=False)
        kind: Outcome = "skipped" if action.kind in ("input", "certificate") else "error"
        self._finish(Page(url, kind, depth, now, reason=action.reason, **base), requested=True)
        return True

    async def _again(self, auth: str, lease: Lease, r: Response, base: dict[str, Any], wait: float,
                     slow: bool) -> bool:  # fmt: skip
        """A temporary failure: retry later, MAX_ATTEMPTS times at most; a 44 also pauses the host,
        for the whole fleet (told first: another worker's request may be about to leave)."""
        now = time.time()
        if slow:
            self._asked[auth] = now + wait
            if self.shared:
                await self.frontier.set_meta(SLOW_META + auth, repr(now + wait))
        if lease.attempts + 1 >= MAX_ATTEMPTS:
            reason = f"{r.status} {r.meta}".strip() + f" (still, after {MAX_ATTEMPTS} attempts)"
            self._finish(Page(lease.url, "error", lease.depth, now, reason=reason, **base))
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

    # -- Gopher ---------------------------------------------------------------------------

    async def _gopher(self, lease: Lease, decision: RobotDecision, r: Response) -> bool:
        url, depth, now = lease.url, lease.depth, time.time()
        item_type = _item_type(url) or "1"
        base: dict[str, Any] = {"decision": decision, "item_type": item_type, "peer": r.peer}
        if r.error is not None:
            self._finish(Page(url, "error", depth, now, reason=r.error, **base), requested=bool(r.request))
            return True
        await self._archive(r, "gopher", now, lease)
        caps = _is_caps(url)
        binary = item_type in gophermap.BINARY_TYPES
        error = None if binary else gophermap.error_reply(r.body)
        if error is not None or (not r.body and not binary):
            reason = error or "the server sent nothing"
            if lease.url in self._visiting:
                self._visiting[lease.url].gone = True  # a selector that was there, if it was visited before
            if caps:  # caps.txt is optional: its absence is no error of the crawl's
                self._finish(Page(url, "skipped", depth, now, reason=f"no caps.txt: {reason}", **base))
            else:
                self._finish(Page(url, "error", depth, now, reason=reason, **base), requested=True)
            return True
        if item_type == "1":
            found = await links.menu_links_async(r.body, self.max_links)
            if found.error is not None:
                self._finish(Page(url, "error", depth, now, reason=found.error, **base), requested=True)
                return True
            page = Page(
                url, "fetched", depth, now, body=r.body, truncated=r.truncated, **_digest(r.body), **base
            )
            await self._finish_with_links(page, found)
            return True
        body = r.body if binary else gophermap.text_body(r.body)
        if caps:
            await self.frontier.set_meta(
                "caps:" + urls.authority(url), body[:65536].decode("utf-8", "replace")
            )
        page = Page(url, "fetched", depth, now, body=body, truncated=r.truncated, **_digest(r.body), **base)
        self._finish(page, requested=not caps)
        return True

    # -- shared ---------------------------------------------------------------------------

    def _in_scope(self, url: str) -> bool:
        if url.split(":", 1)[0] not in SCHEMES:
            return False
        return self.scope == "any" or urls.authority(url) in self.scope_authorities

    def _wanted(self, url: str, item_type: str | None) -> bool:
        """Whether a link is queued: in scope, and for Gopher an item type this robot fetches,
        by the same rule wherever the link came from (menu, URL: line, gemtext, redirect).
        ``item_type``: the URL's own (``links.Link.item_type``, ``_item_type``)."""
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
        ours = [s for s in skipped if _scheme_of(s.target) in (None, *SCHEMES)]
        for s in ours[: links.SKIPPED_KEPT]:
            self._record(Page(s.target, "skipped", page.depth + 1, now, reason=s.reason, parent=page.url))
        self.stats.skipped += len(ours) + max(count - links.SKIPPED_KEPT, 0)

    async def _introduce_caps(self, url: str, depth: int) -> None:
        """caps.txt is read once per Gopher server (the frontier keeps each URL once)."""
        auth = urls.authority(url)
        if auth in self._caps_known:
            return
        self._caps_known.add(auth)
        if self.max_depth is not None and depth > self.max_depth:
            depth = self.max_depth
        host, port = _host_port(auth)
        await self.frontier.add(urls.gopher_url(host, port, "0", "caps.txt"), depth)

    async def _archive(self, r: Response, scheme: Literal["gemini", "gopher"], when: float, lease: Lease,
                       auth: str = "", cert: Certificate | None = None) -> None:  # fmt: skip
        """The request and response records, written before the page is settled (and a Gemini
        server's certificate, as PEM in a metadata record, once per host and certificate).  A large
        reply is compressed in a thread (zlib lets the GIL go), so a 5 MiB page stalls no other
        host; the lock keeps records whole and in order.

        A revisiting crawl compares the response's payload digest with the last visit's: the same,
        and a revisit record naming the capture that holds that payload stands for it, by its URL
        and date and, for a capture this version wrote (``_ids_since``), by its WARC-Record-ID,
        derived from the three (``capture_id``).

        The certificate's record is about the server, not about the page that happened to be
        fetched first: its WARC-Target-URI is ``urn:certificate:`` and the authority, so that an
        index of the archive (cdxj-indexer, pywb) never takes the PEM for that page's capture; it
        refers to the response it came with (WARC-Refers-To, WARC-Concurrent-To)."""
        visiting = self._visiting.get(lease.url)
        same = False
        record_id = None
        if visiting is not None:
            payload = digest(r.raw)
            same = payload == lease.digest and lease.capture_at is not None
            visiting.capture = (payload, lease.capture_at if same and lease.capture_at is not None else when,
                                not same)  # fmt: skip
            record_id = capture_id(lease.url, when, payload)
        if self.warc is None:
            return
        async with self._warc_lock:
            if same and lease.capture_at is not None and lease.digest is not None:
                known = self._ids_since is not None and lease.capture_at >= self._ids_since
                refers = capture_id(lease.url, lease.capture_at, lease.digest) if known else None
                written = self.warc.write_revisit(r.url, r.request, r.raw, scheme, when, lease.url,
                                                  lease.capture_at, r.peer, refers)  # fmt: skip
            elif len(r.raw) < WARC_INLINE:
                written = self.warc.write(r.url, r.request, r.raw, scheme, when, r.peer, record_id)
            else:
                written = await asyncio.to_thread(
                    self.warc.write, r.url, r.request, r.raw, scheme, when, r.peer, record_id
                )
            if cert is not None and (auth, cert.sha256) not in self._cert_archived:
                self._cert_archived.add((auth, cert.sha256))
                about, pem = f"urn:certificate:{auth}", cert.pem.encode("ascii")
                self.warc.write_metadata(about, pem, "application/x-pem-file", when, r.peer, written)
            if self.warc.rolled != self._rolled:  # that file reached --warc-size: the logs roll with it
                self._rolled = self.warc.rolled
                self._roll_logs()

    def _record(self, page: Page) -> None:
        """The page's line in this worker's pages file, naming the worker (its ledger, its WARCs).
        Without WARC files, the logs roll when the pages file reaches --warc-size."""
        self.pages.write({**page.record(), "worker": self.owner})
        if self.warc is None and self.pages.size >= self.warc_size:
            self._roll_logs()

    def _roll_logs(self) -> None:
        """The pages file and the ledger go on in new numbered files (``records.PageLog.rotate``)."""
        self.pages.rotate()
        self.ledger.rotate()

    def rotate(self) -> None:
        """Start new files now: the WARC file, the pages file and the ledger (SIGHUP), so that the
        ones closed can be moved, compressed or shipped.  Done between two records."""

        async def rotate() -> None:
            async with self._warc_lock:
                if not self._opened:  # closed meanwhile: its files are final
                    return
                try:
                    if self.warc is not None:
                        self.warc.rotate()
                    self._roll_logs()
                except OSError as exc:
                    why = describe(exc, self.out)
                    log.warning("cannot start new files (%s); going on in the ones open", why)

        if self._opened:
            self._rotating = asyncio.ensure_future(rotate())

    def _finish(self, page: Page, links: Iterable[str] = (), depth: int = 0, redirects: int = 0,
                requested: bool = False) -> None:  # fmt: skip
        """pages.jsonl, then the frontier (with the links, in one transaction): a kill between the
        two re-fetches this page only.  The worker awaits the settling with its next lease, and the
        page is yielded once it is committed.  ``requested``: a page was asked for (--max-pages; a
        revisiting crawl counts a URL's first response only).

        A revisiting crawl settles the URL with its next due time (``_visit``) in the same step."""
        lease = self._leased.get(page.url)
        visiting = self._visiting.get(page.url)
        visit = None
        if lease is not None and visiting is not None and _same_refusal(lease, page):
            self._decided_again(lease, page)
            return
        if lease is not None and visiting is not None:
            visit = self._visit(lease, page, visiting)
            changed = True if visit.number == 1 else visit.changed
            page = dataclasses.replace(page, visit=visit.number, changed=changed, due=visit.due)
            if visit.due is None and visit.misses >= GONE_AFTER:
                reason = f"{page.reason}; gone: {visit.misses} such answers in a row, not asked again"
                page = dataclasses.replace(page, outcome="gone", reason=reason)
        counted = requested and (lease is None or lease.capture_at is None)
        self._record(page)
        links = list(links)
        token = lease.token if lease is not None else ""
        settled = self.frontier.done(page.url, page.outcome, links, depth=depth, redirects=redirects,
                                     page=counted, visit=visit, token=token)  # fmt: skip
        self._unconfirmed[page.url] = page
        if counted:
            self._pages += 1
        self._settling[page.url] = (settled, page, bool(links))

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

    def _visit(self, lease: Lease, page: Page, visiting: _Visiting) -> Visit:
        """When a revisiting crawl asks for ``page``'s URL again (``due``; None: never), and what it keeps.

        - a page (a 30 redirect included): after ``next_interval``, counted from its request;
        - an answer that says it has gone (51, a Gopher error), for a URL visited before: after
          the maximum, and never again after ``GONE_AFTER`` such answers in a row;
        - disallowed: once the robots.txt in force has expired, so a file that relents is seen;
        - another error on a revisit: after the same interval again (a server away for a while
          keeps its pages' schedules);
        - a first visit's error or refusal, a 31, a 52: never (a 31's target is queued anew)."""
        now = time.time()
        started = visiting.started if visiting.started is not None else now
        digest_, capture_at, changed = (
            (lease.digest, lease.capture_at, None) if visiting.capture is None else visiting.capture
        )
        interval, misses, due = lease.interval, lease.misses, None
        floor = max(visiting.check or 0.0, self.min_delay)
        if page.outcome == "disallowed":
            expires = page.decision.expires_at if page.decision is not None else 0.0
            due = max(expires, now + self.min_delay)
            digest_ = _refusal(page.decision)  # remembered in the digest's place: see _same_refusal
        elif (page.status == 51 or visiting.gone) and lease.visits > 0:
            misses += 1
            wait = after_missing(misses, visiting.check, self.revisit_max, self.min_delay)
            due = None if wait is None else started + wait
        elif page.outcome == "fetched" or (page.outcome == "redirect" and not page.permanent):
            misses = 0
            interval = next_interval(lease.interval, changed is not False, visiting.check, self.revisit_min,
                                     self.revisit_max, self.min_delay)  # fmt: skip
            due = started + interval
        elif lease.visits > 0 and page.status != 52 and not page.permanent:
            due = started + max(interval or self.revisit_min, floor)
        return Visit(lease.visits + 1, due, interval, digest_, capture_at, misses, changed, lease.token)


def patience(lease: float) -> float:
    """Seconds a worker waits out an unreachable shared frontier: ``PATIENCE``, or half its lease
    if that is shorter, so that a worker cut off gives up before its leases can expire (they are
    renewed every third of a lease) and never goes on with work others have taken back."""
    return min(PATIENCE, lease / 2)


def read_settings(
    out: Path, frontier: Path | str | None = None, name: str | None = None
) -> dict[str, Any] | None:
    """The options a crawl was last run with ({} when it kept none); None: no such crawl yet.

    The crawl is the one in ``out`` (its ``frontier.sqlite3``), or in the SQLite file ``frontier``
    names, or the crawl ``name`` on the Redis ``frontier`` names (one that keeps no identity yet
    is none).  A SQLite file is read read-only, and without the directory's lock: a crawl still
    running keeps it, and its own start refuses then."""
    if is_shared(frontier):
        assert isinstance(frontier, str)
        return asyncio.run(_read_shared_settings(frontier, name))
    path = out / "frontier.sqlite3" if frontier is None else Path(frontier)
    if path.is_dir():
        path = path / "frontier.sqlite3"
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise CrawlFileError(f"cannot read the crawl in {path}: {exc}") from None
    kept = json.loads(row[0]) if row else {}
    return kept if isinstance(kept, dict) else {}


async def _read_shared_settings(spec: str, name: str | None) -> dict[str, Any] | None:
    try:
        frontier = open_frontier(spec, None, name)
        try:
            identity, settings = await frontier.get_meta("identity"), await frontier.get_meta("settings")
        finally:
            await frontier.close()
    except FrontierError as exc:
        raise CrawlFileError(str(exc)) from None
    if identity is None:
        return None
    kept = json.loads(settings) if settings else {}
    return kept if isinstance(kept, dict) else {}


def check_seed(seed: str) -> str:
    """A seed, normalised; ValueError (one sentence) for one the crawler cannot start from."""
    scheme = seed.split(":", 1)[0].lower() if ":" in seed else ""
    if scheme in ("http", "https"):
        raise ValueError(f"{seed}: {WEB_SEED}")
    if scheme not in SCHEMES:
        raise ValueError(f"{seed!r} is no gemini:// or gopher:// URL, so it cannot be a seed")
    try:
        return urls.normalise(seed)
    except ValueError as exc:
        raise ValueError(f"{seed!r} is no usable URL: {exc}") from None


async def _cancelled(*tasks: asyncio.Task[None]) -> None:
    """``tasks`` cancelled, and over.

    Cancelled again while one goes on: a cancellation can be lost in a library's await (redis-py
    sometimes finishes a command and returns its reply to a caller cancelled meanwhile), and a
    task that lost it runs on: here a host holder, holding a host for the whole fleet.  Cancelled
    itself meanwhile, it still sees them over before it says so."""
    pending = {task for task in tasks if not task.done()}
    interrupted = False
    while pending:
        for task in pending:
            task.cancel()
        try:
            _, pending = await asyncio.wait(pending, timeout=CANCEL_AGAIN)
        except asyncio.CancelledError:
            interrupted = True
    for task in tasks:
        if not task.cancelled():
            task.exception()  # retrieved: what a cancelled task raised on its way out is no news
    if interrupted:
        raise asyncio.CancelledError


def _refusal(decision: RobotDecision | None) -> str:
    """What a revisiting crawl remembers of a refusal, in the place of a payload digest: the
    robots.txt and its line that refused.  The same mark next time is the same decision."""
    said = f"{decision.robots_url}\n{decision.line}\n{decision.rule}" if decision is not None else ""
    return "refused:" + hashlib.sha256(said.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _same_refusal(lease: Lease, page: Page) -> bool:
    """Whether ``page`` is a refusal of a URL visited before, by the line that refused it last time
    (its lease's digest is that refusal's mark, ``_refusal``)."""
    return page.outcome == "disallowed" and lease.visits > 0 and lease.digest == _refusal(page.decision)


def _item_type(url: str) -> str | None:
    if not url.startswith("gopher:"):
        return None
    try:
        return urls.gopher_ref(url).item_type
    except ValueError:
        return None


def _scheme_of(target: str) -> str | None:
    """A link's scheme as written (None: a relative reference, or no URL at all)."""
    try:
        return urls.scheme(target)
    except ValueError:
        return None


def _is_caps(url: str) -> bool:
    try:
        ref = urls.gopher_ref(url)
    except ValueError:
        return False
    return ref.selector == "caps.txt" and ref.search is None


def _host_port(auth: str) -> tuple[str, int]:
    hostport = auth.split("://", 1)[1]
    host, _, port = hostport.rpartition(":")
    return host.strip("[]"), int(port)


def _codec(charset: str) -> str:
    """A charset a server named, if Python knows it; else UTF-8 (Gemini's default)."""
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return "utf-8"


def _roles(roles: Iterable[str]) -> list[str]:
    """Roles as a crawl's identity keeps them: lower case, each once, sorted."""
    return sorted({r.lower() for r in roles})


def _shown(value: object) -> str:
    if isinstance(value, list):
        return " ".join(value) if value else "(none)"
    return "(by scheme)" if value is None else str(value)


def _digest(body: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}
