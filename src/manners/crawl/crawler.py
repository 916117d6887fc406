"""The crawler: a frontier on disk, robots.txt before every request, one request at a time per host.

Authorities are worked in parallel (``concurrency`` of them at once), each by one task that
leases its URLs one by one from the frontier, asks the robot, waits its turn, fetches, and
settles the URL: WARC first, then ``pages.jsonl``, then the frontier, so a kill at any
instant costs at most the pages in flight.  What a reply *means* lives in the pure modules
(``meaning``, ``gophermap``, ``gemtext``, ``urls``); this module only decides what to do next.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from .. import __version__
from ..agents import require_token
from ..robot import Robot, RobotDecision
from . import gemtext, gophermap, meaning, urls
from .client import Response, gemini_get, gopher_get
from .frontier import Lease, open_frontier
from .records import PageLog
from .warc import WarcWriter

log = logging.getLogger("manners.crawl")

Outcome = Literal["fetched", "disallowed", "redirect", "error", "skipped"]
SCHEMES = ("gemini", "gopher")
MAX_REDIRECTS = 5  # a chain of redirects longer than this is an error
MAX_ATTEMPTS = 3  # temporary failures (40-44) are retried this many times
RETRY_BASE = 2.0  # seconds before the first retry of a temporary failure; doubles each time
SLOW_DOWN_BASE = 10.0  # seconds of a 44 whose meta is no number; doubles each time
FOREVER = 10 * 365 * 86400.0  # parked "until further notice"
_Settling = tuple[Awaitable[None], "Page", bool]  # the frontier's commit, the page, whether it had links
WEB_SEED = "the Web is served by the Scrapy integration (manners.scrapy), not by manners crawl"


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

    def record(self) -> dict[str, object]:
        """The ``pages.jsonl`` object for this page."""
        r: dict[str, object] = {"url": self.url, "outcome": self.outcome, "status": self.status}
        if self.item_type is not None:
            r["item_type"] = self.item_type
        else:
            r["mime"] = self.mime
        r.update(title=self.title, bytes=self.bytes, sha256=self.sha256, depth=self.depth,
                 links=list(self.links), fetched_at=_iso(self.fetched_at))  # fmt: skip
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
        return r


@dataclass
class Stats:
    """What the crawl has done so far, for the progress display and the summary."""

    fetched: int = 0
    disallowed: int = 0
    redirects: int = 0
    errors: int = 0
    skipped: int = 0
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

    def count(self, page: Page) -> None:
        kind = {"fetched": "fetched", "disallowed": "disallowed", "redirect": "redirects",
                "error": "errors", "skipped": "skipped"}[page.outcome]  # fmt: skip
        setattr(self, kind, getattr(self, kind) + 1)
        self.bytes += page.bytes


class Crawler:
    """``async with Crawler(agent="mybot", out=Path("crawl")) as c: async for page in c.crawl(seeds)``.

    Everything the crawl knows is in ``out``: the frontier (``frontier.sqlite3``), the
    settled pages (``pages.jsonl``) and the archive (``warc/``); run it again with the same
    ``out`` to resume.  ``concurrency`` is the number of authorities worked at once; each
    gets one request at a time, spaced as its robots.txt and ``min_delay`` ask.  A host
    that asks for more than ``max_delay`` seconds is parked: recorded, and left alone.
    """

    def __init__(
        self,
        agent: str,
        roles: Iterable[str] | str = (),
        out: Path | str = Path("crawl"),
        *,
        max_pages: int | None = None,
        max_depth: int | None = None,
        max_per_host: int | None = None,
        max_bytes: int = 5 << 20,
        min_delay: float = 1.0,
        max_delay: float = 300.0,
        concurrency: int = 16,
        scope: Literal["seeds", "any"] = "seeds",
        cache: str = "sqlite",
        warc: bool = True,
        timeout: float = 30.0,
        max_policies: int = 10_000,
    ) -> None:
        self.agent = require_token(agent)
        self.roles = (roles,) if isinstance(roles, str) else tuple(roles)
        self.out = Path(out)
        for name, value in (("max_pages", max_pages), ("max_depth", max_depth),
                            ("max_per_host", max_per_host)):  # fmt: skip
            if value is not None and value < 0:
                raise ValueError(f"{name} must be 0 or more")
        if max_bytes < 1:
            raise ValueError("max_bytes must be a positive number of bytes")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if min_delay < 0 or max_delay < min_delay:
            raise ValueError("need 0 <= min_delay <= max_delay")
        if not timeout > 0:
            raise ValueError("timeout must be a positive number of seconds")
        if scope not in ("seeds", "any"):
            raise ValueError("scope is 'seeds' or 'any'")
        self.max_pages = max_pages
        self.max_depth = max_depth
        self.max_per_host = max_per_host
        self.max_bytes = max_bytes
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.concurrency = concurrency
        self.scope = scope
        self.cache = cache
        self.warc_enabled = warc
        self.timeout = timeout
        self.max_policies = max_policies
        self.owner = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self.stats = Stats()
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()  # a worker ended or new URLs were queued: the dispatcher looks again
        self._opened = False
        self._counted = 0.0
        self._caps_known: set[str] = set()  # Gopher authorities whose caps.txt is queued
        self._cert_logged: set[str] = set()
        self._asked: dict[str, tuple[float, float]] = {}  # authority -> (robots.txt read at, spacing asked)

    # -- lifetime -----------------------------------------------------------------------

    async def __aenter__(self) -> Crawler:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        if self._opened:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        self.frontier = open_frontier(self.out / "frontier.sqlite3")
        self.robot = Robot(
            self.agent,
            self.roles,
            self.cache,
            min_delay=self.min_delay,
            max_delay=self.max_delay,
            timeout=self.timeout,
            max_policies=self.max_policies,
        )
        self.pages = PageLog(self.out / "pages.jsonl")
        # flushed, not fsynced, per record: a killed process loses nothing (the kernel has it), as
        # with pages.jsonl and the frontier (WAL, synchronous=NORMAL); fsync on close
        info = {"software": f"manners/{__version__}", "robot": self.agent, "roles": " ".join(self.roles)}
        self.warc = WarcWriter(self.out / "warc", info=info, fsync=False) if self.warc_enabled else None
        self.known_hosts = self.frontier.known_hosts()
        self.recovered = await self.frontier.recover(None)  # a previous run's leases: queued again
        self._opened = True

    async def close(self) -> None:
        if not self._opened:
            return
        self._opened = False
        with contextlib.suppress(Exception):
            await self.frontier.recover(self.owner)
        for closing in (self.pages.close, *((self.warc.close,) if self.warc else ())):
            with contextlib.suppress(Exception):
                closing()
        await self.robot.close()
        await self.frontier.close()

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
        known = json.loads(await self.frontier.get_meta("seeds") or "[]")
        self.seeds = list(dict.fromkeys([*known, *normal]))
        await self.frontier.set_meta("seeds", json.dumps(self.seeds))
        self.scope_authorities = {urls.authority(u) for u in self.seeds}
        for url in normal:
            await self.frontier.add(url, 0)
            if url.startswith("gopher:"):
                await self._introduce_caps(url, 0)
        counts = await self.frontier.counts()
        self._settled_requests = sum(counts.get(k, 0) for k in ("fetched", "redirect", "error"))
        self._reserved = 0
        self._slow: dict[str, float] = {}  # authority -> the last 44 backoff without a number
        self._introduced: set[str] = set()
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
        finally:
            if not runner.done():
                self.stop()
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await runner

    async def _run(self) -> None:
        active: dict[str, asyncio.Task[None]] = {}
        try:
            while not self._stop.is_set():
                now = time.time()
                if self._limit_reached():
                    self.stats.limit = self.stats.limit or "max-pages"
                    break
                free = self.concurrency - len(active)
                if free > 0:
                    ready = await self.frontier.ready_authorities(now, set(active) | self._full, free)
                    for auth in ready:
                        task = asyncio.ensure_future(self._work(auth))
                        active[auth] = task
                        task.add_done_callback(lambda _, a=auth: self._ended(active, a))  # type: ignore[misc]
                self.stats.hosts_active = len(active)
                pause = 0.1
                if not active:
                    at = await self.frontier.next_ready_at(self._full)
                    if at is None or at > now + self.max_delay:
                        break  # nothing left but hosts parked for longer than max_delay
                    pause = min(max(at - now, 0.005), 0.5)
                if time.monotonic() - self._counted > 0.5:
                    await self._refresh_counts()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), pause)
                self._wake.clear()
            self.stats.completed = not self._stop.is_set()
        finally:
            if self._stop.is_set():  # let requests in flight end, briefly
                await self._drain(active, self.timeout + 1)
            else:
                await self._drain(active, None)
            await self._refresh_counts()
            if self._queue.empty():
                self._queue.put_nowait(None)

    def _ended(self, active: dict[str, asyncio.Task[None]], auth: str) -> None:
        active.pop(auth, None)
        self._wake.set()

    async def _drain(self, active: dict[str, asyncio.Task[None]], grace: float | None) -> None:
        tasks = list(active.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        await self.frontier.recover(self.owner)  # the cancelled ones' leases: queued again

    def _limit_reached(self) -> bool:
        return self.max_pages is not None and self._settled_requests + self._reserved >= self.max_pages

    async def _refresh_counts(self) -> None:
        self._counted = time.monotonic()
        counts = await self.frontier.counts()
        self.stats.queued = counts.get("queued", 0)
        self.stats.in_flight = counts.get("in_flight", 0)
        self.stats.done = counts.get("done", 0)
        parked = await self.frontier.parked()
        now = time.time()
        self.stats.parked = {a: why for a, (until, why) in parked.items() if until > now}

    async def _emit(self, page: Page) -> None:
        self.stats.count(page)
        await self._queue.put(page)

    # -- one authority --------------------------------------------------------------------

    async def _work(self, auth: str) -> None:
        """Lease and settle this authority's ready URLs one at a time, until none is ready.

        The next lease is asked for before the last page's settling is awaited, so that the two
        share a commit: one wait on the frontier per page, not two."""
        ttl = self.max_delay + 4 * self.timeout + 60
        settling: _Settling | None = None
        try:
            while not self._stop.is_set():
                if self.max_per_host is not None:
                    await self._confirm(settling)  # host_done must count the last page
                    settling = None
                    if await self.frontier.host_done(auth) >= self.max_per_host:
                        self._full.add(auth)
                        break
                if self._limit_reached():
                    break
                asked = self.frontier.lease(auth, self.owner, ttl)
                await self._confirm(settling)
                settling = None
                lease = await asked
                if lease is None:
                    break
                self._reserved += 1
                try:
                    again = await self._settle(auth, lease)
                finally:
                    self._reserved -= 1
                settling = self._settling.pop(lease.url, None)
                if not again:
                    break
            await self._confirm(settling)
        finally:
            self.stats.waiting.pop(auth, None)

    async def _confirm(self, settling: _Settling | None) -> None:
        """Wait for a page's settling to be committed, then yield it."""
        if settling is None:
            return
        settled, page, linked = settling
        await settled
        if linked:
            self._wake.set()
        await self._emit(page)

    async def _settle(self, auth: str, lease: Lease) -> bool:
        """Handle one leased URL; False when the authority must be left alone for a while."""
        url = lease.url
        decision = await self.robot.decide(url)
        if not decision.allowed:
            self._finish(Page(url, "disallowed", lease.depth, time.time(), decision=decision,
                                    item_type=_item_type(url), reason=decision.reason))  # fmt: skip
            return True
        policy = await self.robot.policy(url)
        known = self._asked.get(auth)
        if known is None or known[0] != policy.entry.fetched_at:  # once per robots.txt read, not per URL
            asked_now = _asked_spacing(policy.robots, self.agent, self.roles)
            known = self._asked[auth] = (policy.entry.fetched_at, asked_now)
        asked = known[1]
        if asked > self.max_delay:
            why = f"robots.txt asks for {asked:g} s between requests"
            why += f", more than --max-delay {self.max_delay:g} s"
            await self._park(auth, time.time() + FOREVER, why)
            await self.frontier.retry(url, time.time())
            return False
        if auth not in self._introduced:  # robots.txt was just read from it: keep the spacing after that
            self._introduced.add(auth)
            pause = policy.entry.fetched_at + policy.spacing - time.time()
            if pause > 0:
                self.stats.waiting[auth] = f"spacing {policy.spacing:g} s after robots.txt"
                await asyncio.sleep(min(pause, policy.spacing))
        self.stats.waiting[auth] = f"spacing {policy.spacing:g} s"
        await self.robot.wait(url)
        self.stats.waiting.pop(auth, None)
        self.stats.requests += 1
        if url.startswith("gemini:"):
            response = await gemini_get(url, timeout=self.timeout, max_bytes=self.max_bytes,
                                        known_hosts=self.known_hosts)  # fmt: skip
            return await self._gemini(auth, lease, decision, response)
        response = await gopher_get(url, timeout=self.timeout, max_bytes=self.max_bytes)
        return await self._gopher(lease, decision, response)

    async def _park(self, auth: str, until: float, why: str) -> None:
        await self.frontier.park(auth, until, why)
        self.stats.parked[auth] = why
        if until - time.time() > self.max_delay:
            log.warning("%s parked: %s", auth, why)

    # -- Gemini ---------------------------------------------------------------------------

    async def _gemini(self, auth: str, lease: Lease, decision: RobotDecision, r: Response) -> bool:
        url, depth, now = lease.url, lease.depth, time.time()
        base: dict[str, Any] = {"decision": decision, "status": r.status,
                                "certificate_changed": r.fingerprint_changed}  # fmt: skip
        if r.fingerprint_changed and auth not in self._cert_logged:
            self._cert_logged.add(auth)
            log.warning("%s: the certificate changed (was %s, now %s); going on", auth,
                        r.previous_fingerprint, r.fingerprint)  # fmt: skip
        if r.error is not None or r.status is None:
            self._finish(Page(url, "error", depth, now, reason=r.error, **base))
            return True
        self._archive(r, "gemini", now)
        action = meaning.gemini_action(r.status, r.meta, url)
        if action.kind == "store":
            text = _text(r.body, r.meta) if (action.mime or "").startswith("text/") else None
            found: list[str] = []
            title = None
            if text is not None and action.mime == "text/gemini":
                title = gemtext.title(text)
                found = _resolve((link.target for link in gemtext.links(text)), url)
            page = Page(url, "fetched", depth, now, mime=action.mime, title=title, body=r.body,
                        links=tuple(found), truncated=r.truncated, **_digest(r.body), **base)  # fmt: skip
            self._finish(page, await self._follow(found, depth + 1))
            return True
        if action.kind == "redirect":
            target = action.target
            try:
                target = urls.normalise(target, url) if target else None
            except ValueError:
                target = None
            if target is None or target.split(":", 1)[0] not in SCHEMES:
                reason = f"{r.status} {r.meta}: a redirect to nowhere the crawler can follow"
                self._finish(Page(url, "error", depth, now, reason=reason, **base))
                return True
            if lease.redirects >= MAX_REDIRECTS:
                reason = f"more than {MAX_REDIRECTS} redirects in a row"
                self._finish(Page(url, "error", depth, now, target=target, reason=reason, **base))
                return True
            page = Page(url, "redirect", depth, now, target=target, links=(target,),
                        permanent=action.permanent, **base)  # fmt: skip
            follow = [target] if self._in_scope(target) else []
            self._finish(page, follow, depth=depth, redirects=lease.redirects + 1)
            return True
        if action.kind == "slow-down":
            wait = action.wait
            if wait is None:
                wait = self._slow[auth] = min(self._slow.get(auth, SLOW_DOWN_BASE / 2) * 2, 86400.0)
            return await self._again(auth, lease, r, base, wait, slow=True)
        if action.kind == "retry":
            return await self._again(auth, lease, r, base, RETRY_BASE * 2**lease.attempts, slow=False)
        kind: Outcome = "skipped" if action.kind in ("input", "certificate") else "error"
        self._finish(Page(url, kind, depth, now, reason=action.reason, **base))
        return True

    async def _again(self, auth: str, lease: Lease, r: Response, base: dict[str, Any], wait: float,
                     slow: bool) -> bool:  # fmt: skip
        """A temporary failure: retry later, MAX_ATTEMPTS times at most; a 44 also pauses the host."""
        now = time.time()
        if lease.attempts + 1 >= MAX_ATTEMPTS:
            reason = f"{r.status} {r.meta}".strip() + f" (still, after {MAX_ATTEMPTS} attempts)"
            self._finish(Page(lease.url, "error", lease.depth, now, reason=reason, **base))
        else:
            self.stats.retries += 1
            await self.frontier.retry(lease.url, now + wait)
        if slow:  # nothing more goes to this host for `wait` seconds
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
        base: dict[str, Any] = {"decision": decision, "item_type": item_type}
        if r.error is not None:
            self._finish(Page(url, "error", depth, now, reason=r.error, **base))
            return True
        self._archive(r, "gopher", now)
        binary = item_type in gophermap.BINARY_TYPES
        error = None if binary else gophermap.error_reply(r.body)
        if error is not None or (not r.body and not binary):
            reason = error or "the server sent nothing"
            if _is_caps(url):  # caps.txt is optional: its absence is no error of the crawl's
                self._finish(Page(url, "skipped", depth, now, reason=f"no caps.txt: {reason}", **base))
            else:
                self._finish(Page(url, "error", depth, now, reason=reason, **base))
            return True
        if item_type == "1":
            menu = gophermap.parse_menu(r.body)
            if menu.error is not None:
                self._finish(Page(url, "error", depth, now, reason=menu.error, **base))
                return True
            follow: dict[str, None] = {}
            found: dict[str, None] = {}
            mirrors: dict[str, None] = {}
            for item in menu.items:
                if item.url is None:
                    continue
                try:
                    target = urls.normalise(item.url)
                except ValueError:
                    continue
                if item.mirror:  # an alternative of the item before: recorded, not crawled twice
                    mirrors[target] = None
                elif item.external or gophermap.fetchable(item.item_type, self.roles):
                    found[target] = follow[target] = None  # URL: links only if gemini/gopher (in _follow)
                else:
                    found[target] = None
            page = Page(url, "fetched", depth, now, title=menu.title, body=r.body, links=tuple(found),
                        mirrors=tuple(mirrors), truncated=r.truncated, **_digest(r.body), **base)  # fmt: skip
            self._finish(page, await self._follow(follow, depth + 1))
            return True
        body = r.body if binary else gophermap.text_body(r.body)
        if _is_caps(url):
            await self.frontier.set_meta("caps:" + urls.authority(url), body.decode("utf-8", "replace"))
        page = Page(url, "fetched", depth, now, body=body, truncated=r.truncated, **_digest(r.body), **base)
        self._finish(page)
        return True

    # -- shared ---------------------------------------------------------------------------

    def _in_scope(self, url: str) -> bool:
        if url.split(":", 1)[0] not in SCHEMES:
            return False
        return self.scope == "any" or urls.authority(url) in self.scope_authorities

    async def _follow(self, targets: Iterable[str], depth: int) -> list[str]:
        """The normalised links to queue at ``depth``: in scope, within max_depth."""
        if self.max_depth is not None and depth > self.max_depth:
            return []
        out = []
        for target in targets:
            if self._in_scope(target):
                if target.startswith("gopher:"):
                    await self._introduce_caps(target, depth)
                out.append(target)
        return out

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

    def _archive(self, r: Response, scheme: Literal["gemini", "gopher"], when: float) -> None:
        if self.warc is not None:
            self.warc.write(r.url, r.request, r.raw, scheme, when, r.peer)

    def _finish(self, page: Page, links: Iterable[str] = (), depth: int = 0, redirects: int = 0) -> None:
        """pages.jsonl, then the frontier (with the links, in one transaction): a kill between the
        two re-fetches this page only.  The worker awaits the settling with its next lease, and the
        page is yielded once it is committed."""
        self.pages.write(page.record())
        links = list(links)
        settled = self.frontier.done(page.url, page.outcome, links, depth=depth, redirects=redirects)
        if page.outcome in ("fetched", "redirect", "error"):
            self._settled_requests += 1
        self._settling[page.url] = (settled, page, bool(links))


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


def _asked_spacing(robots: Any, agent: str, roles: tuple[str, ...]) -> float:
    asked = 0.0
    delay = robots.crawl_delay(agent, roles)
    if delay is not None:
        asked = max(asked, float(delay))
    rate = robots.request_rate(agent, roles)
    if rate is not None:
        asked = max(asked, rate[1] / rate[0])
    return asked


def _item_type(url: str) -> str | None:
    if not url.startswith("gopher:"):
        return None
    try:
        return urls.gopher_ref(url).item_type
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


def _text(body: bytes, meta: str) -> str:
    charset = "utf-8"
    for param in meta.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
    try:
        return body.decode(charset, "replace")
    except LookupError:
        return body.decode("utf-8", "replace")


def _resolve(targets: Iterable[str], base: str) -> list[str]:
    out: dict[str, None] = {}
    for target in targets:
        try:
            out[urls.normalise(target, base)] = None
        except ValueError:
            continue
    return list(out)


def _digest(body: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
