"""A robots.txt middleware for Scrapy that reads the answer's status as RFC 9309 does.

Scrapy's own RobotsTxtMiddleware parses whatever body comes back (a 404 page, a final
503) and allows everything after a network error; it keys its cache by ``netloc`` and
never lets go of it.  This one fetches robots.txt through Scrapy's downloader (proxies,
TLS settings and stats still apply) and hands the answer to manners' outcome table
(``manners.fetch.outcome``), the one ``fetch_robots`` uses; a :class:`manners.Robot`
keeps the result in manners' cache (``MANNERS_CACHE``) by scheme, host and port, for
24 hours at most, and makes one fetch per authority across every process sharing it.
With ``MANNERS_PACING`` (a Redis URL), each request also waits for its authority's
fleet-wide slot before it leaves (``manners.scrapy.pacing``).

Each request it lets through carries the usage preferences of that file for its URL and
robot (``Content-Usage``, ``Content-Signal``) in ``request.meta["manners_usage"]``, which a
callback reads as ``response.meta``: read from the file already fetched for the verdict, so
they cost no request of their own.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured, StopDownload
from scrapy.http import Request, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached

from ..cache import CacheError
from ..cache.redis import RedisStore
from ..fetch.outcome import (
    MAX_REDIRECTS,
    FetchResult,
    http_redirect,
    http_result,
    too_many_redirects,
    unreachable,
)
from ..profiles import get_profile
from ..robot import MAX_POLICIES, Policy, Robot
from ..robots import RobotsTxt, Usage, asked_spacing
from ..terminal import printable
from .pacing import PATIENCE, FleetPacing, PacingError, check_location
from .parser import RobotParser, agent
from .slots import keep_delay

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

log = logging.getLogger(__name__)

MAX_BYTES = 512_000  # RFC 9309 §2.5: at least 500 KiB are read; no more is
DELAY_META = "manners_delay"  # request meta: the delay its authority asks of this robot
ROBOTS_META = "manners_robots"  # request meta: a robots.txt fetch of this middleware
# Request meta: the usage preferences for the request's URL, a manners.Usage (see _usage).
USAGE_META = "manners_usage"
_RECEIVED_META = "manners_robots_bytes"
# Twisted's and Scrapy's failures, by the names manners gives network failures.
_NETWORK_ERRORS = {
    "DNSLookupError": "dns-error",
    "ConnectionRefusedError": "connection-refused",
    "TimeoutError": "timeout",
    "TCPTimedOutError": "timeout",
    "UserTimeoutError": "timeout",
    "ConnectionLost": "connection-reset",
    "ConnectionDone": "connection-reset",
    "ResponseNeverReceived": "connection-reset",
    "ResponseFailed": "connection-reset",
    "SSLError": "tls-error",
    "IgnoreRequest": "ignored",
}


class RobotsTxtMiddleware:
    """Obeys robots.txt the RFC 9309 way and keeps each download slot's delay at the Crawl-delay.

    Settings: ``ROBOTSTXT_OBEY`` (must be true), ``ROBOTSTXT_USER_AGENT``, ``USER_AGENT``,
    ``MANNERS_CACHE`` (``memory``, ``sqlite``, ``sqlite:///path``, ``redis://...``),
    ``MANNERS_MAX_DELAY`` (cap on a file's Crawl-delay, seconds), ``MANNERS_TIMEOUT``
    (seconds for one robots.txt fetch, redirects included), ``MANNERS_PROFILE``,
    ``MANNERS_PACING`` (``redis://...``: space requests fleet-wide, not per process) and
    ``MANNERS_PACING_TIMEOUT`` (seconds a request waits for that Redis when it is down).
    """

    DOWNLOAD_PRIORITY: int = 1000

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        self.crawler = crawler
        self._default_useragent: str = settings.get("USER_AGENT") or ""
        self._robotstxt_useragent: str | None = settings.get("ROBOTSTXT_USER_AGENT") or None
        self.timeout = _seconds(settings, "MANNERS_TIMEOUT", 30.0, positive=True)
        self.max_delay = _seconds(settings, "MANNERS_MAX_DELAY", 300.0)
        profile = settings.get("MANNERS_PROFILE") or None
        if profile is not None:
            try:
                get_profile(profile)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"manners.scrapy: MANNERS_PROFILE: {exc}") from None
        self.pacing = _pacing(settings)  # before the Robot: a Redis client connects only when first used
        try:
            self.robot = Robot(
                "*",
                cache=str(settings.get("MANNERS_CACHE") or "memory"),
                min_delay=0.0,
                max_delay=math.inf,  # capped here, per robot name, at MANNERS_MAX_DELAY
                timeout=self.timeout,
                max_bytes=MAX_BYTES,
                profile=profile,
                fetcher=self.fetch,
            )
        except (ValueError, CacheError) as exc:
            raise ValueError(f"manners.scrapy: MANNERS_CACHE: {exc}") from None
        self.profile = self.robot.profile
        if self.pacing is not None and (
            settings.getfloat("DOWNLOAD_DELAY") > 0 or settings.getbool("AUTOTHROTTLE_ENABLED")
        ):  # they act after the fleet's slot, in each process: a request they hold leaves late
            log.warning(
                "MANNERS_PACING: DOWNLOAD_DELAY and AutoThrottle still delay requests in each process,"
                " after their fleet-wide slot; a request held past its slot can leave too close to the"
                " fleet's next: leave DOWNLOAD_DELAY at 0 and AutoThrottle off (the fleet's slots keep"
                " the Crawl-delay)"
            )
        self.stats = crawler.stats
        # The policy each authority had when it was last seen, and the delays it asks by robot name.
        self._taken: OrderedDict[str, tuple[Policy, dict[str, float]]] = OrderedDict()
        self._capped: set[str] = set()
        self._cache_failed = False  # the cache failed once: later failures are logged at DEBUG
        self._pacing_failed = False  # a request was dropped: more are logged at DEBUG until one is paced
        crawler.signals.connect(self._bytes_received, signal=signals.bytes_received)
        crawler.signals.connect(self._keep_delay, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._engine_started, signal=signals.engine_started)
        crawler.signals.connect(self._engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtMiddleware:
        return cls(crawler)

    # -- deciding ------------------------------------------------------------------------

    async def process_request(self, request: Request, spider: Any = None) -> None:
        if request.meta.get("dont_obey_robotstxt"):
            return
        if urlparse_cached(request).scheme not in ("http", "https"):  # robots.txt is for the Web here
            return
        name = self._agent(request)
        try:
            policy = await self.robot.policy(request.url)
        except CacheError as exc:  # no robots.txt can be checked: no request is made
            self.stats.inc_value("robotstxt/cache_error")
            log.log(logging.DEBUG if self._cache_failed else logging.ERROR, "manners cache: %s", exc)
            self._cache_failed = True
            raise IgnoreRequest(f"robots.txt could not be checked: {exc}") from None
        except ValueError as exc:  # a URL no robots.txt can govern (no host, a bad port)
            raise IgnoreRequest(f"robots.txt could not be checked: {exc}") from None
        delays = await self._take(policy, request)
        if not policy.robots.allowed(request.url, name):
            self._forbid(request, policy, name)
        request.meta[USAGE_META] = _usage(policy.robots, request.url, name)
        delay = delays.get(name)
        if delay is None:
            delay = delays[name] = self._delay(policy, name)
        if delay > 0:
            request.meta[DELAY_META] = delay
            if self.pacing is not None:
                await self._pace(self.pacing, request, policy.key, delay)

    async def _pace(self, pacing: FleetPacing, request: Request, key: str, delay: float) -> None:
        """Wait for the fleet-wide slot of ``key``; a request that cannot be paced is dropped, never sent."""
        try:
            await pacing.wait(key, delay)
        except PacingError as exc:
            self.stats.inc_value("robotstxt/pacing_error")
            level = logging.DEBUG if self._pacing_failed else logging.ERROR
            spider = {"spider": self.crawler.spider}
            log.log(level, "manners pacing: %s dropped: %s", request, exc, extra=spider)
            self._pacing_failed = True
            raise IgnoreRequest(f"not sent unpaced: {exc}") from None
        self._pacing_failed = False
        self.stats.inc_value("robotstxt/paced")

    def _agent(self, request: Request) -> str:
        """Who asks: ROBOTSTXT_USER_AGENT, else the request's User-Agent header, as a product token."""
        if self._robotstxt_useragent:
            return agent(self._robotstxt_useragent)
        header = request.headers.get(b"User-Agent")
        return agent(header if header is not None else self._default_useragent)

    def _forbid(self, request: Request, policy: Policy, name: str) -> None:
        decision = policy.robots.decide(request.url, name)
        why = f"line {decision.line}: {decision.rule}" if decision.line is not None else decision.reason
        log.debug(
            "Forbidden by robots.txt: %(request)s (%(why)s)",
            {"request": request, "why": printable(why)},
            extra={"spider": self.crawler.spider},
        )
        self.stats.inc_value("robotstxt/forbidden")
        raise IgnoreRequest(f"Forbidden by robots.txt ({printable(why)})")

    def _delay(self, policy: Policy, name: str) -> float:
        """Seconds between requests that ``policy`` asks of robot ``name``, capped at MANNERS_MAX_DELAY."""
        delay = asked_spacing(policy.robots, name, profile=self.profile or policy.key)
        if delay > self.max_delay:
            if policy.key not in self._capped:
                self._capped.add(policy.key)
                log.warning(
                    "%s asks %s for %.10g s between requests; capped at MANNERS_MAX_DELAY=%g s",
                    policy.key, name, delay, self.max_delay,
                )  # fmt: skip
            return self.max_delay
        return delay

    async def _take(self, policy: Policy, request: Request) -> dict[str, float]:
        """The delays known for ``policy``; the first time it is seen, announce it (``robots_parsed``)."""
        known = self._taken.get(policy.key)
        if known is not None and known[0] is policy:
            self._taken.move_to_end(policy.key)
            return known[1]
        delays: dict[str, float] = {}
        self._taken[policy.key] = (policy, delays)
        while len(self._taken) > MAX_POLICIES:
            dropped, _ = self._taken.popitem(last=False)
            self._capped.discard(dropped)
        await self._robots_parsed(RobotParser(policy.robots, self.profile), request)
        return delays

    async def _robots_parsed(self, parser: RobotParser, request: Request) -> None:
        signal = getattr(signals, "robots_parsed", None)  # Scrapy >= 2.18
        if signal is None:
            return
        manager = self.crawler.signals
        send = getattr(manager, "send_catch_log_async", None)
        if send is not None:
            await send(signal=signal, robotparser=parser, request=request)
        else:
            await maybe_deferred_to_future(
                manager.send_catch_log_deferred(signal=signal, robotparser=parser, request=request)
            )

    # -- fetching robots.txt through Scrapy's downloader --------------------------------

    async def fetch(self, location: str) -> FetchResult:
        """Fetch ``location`` through Scrapy and say what the answer means (manners' outcome table).

        Redirects are followed here, at most 5, so each hop is counted and the final
        status decides; the body is cut after 500 KiB; the whole fetch gets
        MANNERS_TIMEOUT seconds.  Never raises for what a server or the network does.
        """
        self.stats.inc_value("robotstxt/request_count")
        deadline = time.monotonic() + self.timeout
        current, redirects = location, tuple[str, ...]()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                why = f"the fetch took longer than {self.timeout:g} s"
                return unreachable(location, "timeout", why, current, redirects=redirects)
            try:
                response = await self._download(self._request(current, left))
            except StopDownload as stop:  # the size cap, where Scrapy reports it as a failure
                if stop.response is None:
                    return self._failed(location, current, redirects, stop)
                response = stop.response
            except Exception as exc:
                return self._failed(location, current, redirects, exc)
            headers = _headers(response)
            target = http_redirect(response.status, headers, current)
            if target is None:
                self.stats.inc_value("robotstxt/response_count")
                self.stats.inc_value(f"robotstxt/response_status_count/{response.status}")
                body = response.body[: MAX_BYTES + 1]
                return http_result(
                    location,
                    current,
                    response.status,
                    headers,
                    body,
                    max_bytes=MAX_BYTES,
                    redirects=redirects,
                )
            if len(redirects) == MAX_REDIRECTS:
                return too_many_redirects(location, response.status, redirects)
            current, redirects = target, (*redirects, target)

    def _request(self, url: str, timeout: float) -> Request:
        meta = {
            "dont_obey_robotstxt": True,
            "dont_redirect": True,  # followed by fetch(), which counts the hops
            "dont_retry": True,  # a failure is retried with manners' backoff instead
            "dont_cache": True,  # manners' cache decides how long an answer holds
            "handle_httpstatus_all": True,
            "allow_offsite": True,  # a redirect may lead to another host
            "download_timeout": timeout,
            "download_maxsize": 0,  # no refusal on Content-Length: the body is cut at MAX_BYTES instead
            "download_warnsize": 0,
            ROBOTS_META: True,
        }
        return Request(
            url,
            priority=self.DOWNLOAD_PRIORITY,
            meta=meta,
            headers={"Accept-Encoding": "identity"},  # the cap counts the file's own bytes
            callback=NO_CALLBACK,
            dont_filter=True,
        )

    async def _download(self, request: Request) -> Response:
        engine = self.crawler.engine
        if engine is None:
            raise RuntimeError("the crawler has no engine: robots.txt cannot be fetched yet")
        download_async = getattr(engine, "download_async", None)  # Scrapy >= 2.14
        response: Response
        if download_async is not None:
            response = await download_async(request)
        else:
            response = await maybe_deferred_to_future(engine.download(request))
        return response

    def _failed(self, location: str, current: str, redirects: tuple[str, ...], exc: Exception) -> FetchResult:
        if not isinstance(exc, IgnoreRequest):
            self.stats.inc_value(f"robotstxt/exception_count/{type(exc)}")
        kind = type(exc).__name__
        name = _NETWORK_ERRORS.get(kind, "network-error")
        why = printable(f"{kind}: {exc}" if str(exc) else kind)
        log.debug("robots.txt fetch of %s failed: %s", current, why)
        return unreachable(location, name, why, current, redirects=redirects)

    # -- signals -------------------------------------------------------------------------

    def _bytes_received(self, data: bytes, request: Request, spider: Any = None) -> None:
        """Stop reading a robots.txt once more than MAX_BYTES are in: the rest is never used."""
        if not request.meta.get(ROBOTS_META):
            return
        received = request.meta.get(_RECEIVED_META, 0) + len(data)
        request.meta[_RECEIVED_META] = received
        if received > MAX_BYTES:
            raise StopDownload(fail=False)

    def _keep_delay(self, request: Request, **_: Any) -> None:
        """Before each request is queued, and after AutoThrottle saw each response: keep the delay.

        Not with MANNERS_PACING: the request has had its fleet-wide slot already, and a
        slot delay raised here would hold it again in this process, past the slot it was
        granted, so it would leave later than the fleet's booking says (and the request
        booked after it, in another process, could follow it too closely).
        """
        delay = request.meta.get(DELAY_META)
        if delay and self.pacing is None:
            engine = self.crawler.engine
            if engine is not None:
                keep_delay(engine.downloader, request, delay)

    def _engine_started(self) -> None:
        # Connected now, after every extension (AutoThrottle among them) connected its own
        # handler, so the delay is put back after AutoThrottle has lowered it.
        self.crawler.signals.connect(self._keep_delay, signal=signals.response_downloaded)

    async def _engine_stopped(self) -> None:
        """Close the cache (a SQLite file, a Redis connection) once the crawl is over.

        A coroutine, which every Scrapy from 2.13 on awaits: 2.13 wraps it in a Deferred
        itself, and later versions warn (ScrapyDeprecationWarning) about a handler that
        returns a Deferred.
        """
        try:
            await self.robot.close()
        finally:
            if self.pacing is not None:
                await self.pacing.close()


def _usage(robots: RobotsTxt, url: str, name: str) -> Usage:
    """The usage preferences ``robots`` states for ``url`` and the robot ``name``.

    The :class:`manners.Usage` itself, not a dict of it: a spider gets the typed object every
    other part of manners gives (``.category("train-ai")``, ``.signals``, each preference with
    its line), and it survives Scrapy's request serialisation (``JOBDIR`` pickles a request's
    meta, and a spider may pass ``response.meta`` on to a request it yields), being a named
    tuple of named tuples, strings and numbers.  A file without ``Content-Usage`` or
    ``Content-Signal`` lines, and no file at all (a 4xx: everything allowed), give every
    category ``unstated``: the key is there for every request the middleware checked and let
    through, so ``unstated`` means the file states nothing, and an absent key that the request
    was not checked (``dont_obey_robotstxt``, not HTTP).  It is set again on each check, so a
    redirected request carries the preferences of where it landed, not of where it began.
    """
    return robots.usage(url, name)


def _pacing(settings: BaseSettings) -> FleetPacing | None:
    """The fleet's pacing from MANNERS_PACING (None without it), or a ValueError naming the setting.

    A store of its own, not the Robot's cache opened on that URL: MANNERS_CACHE stays
    whatever each process chose (memory, SQLite, another Redis), and the Robot's
    ``wait()`` cannot serve here anyway, since it spaces for its own agent and
    ``min_delay`` while the middleware spaces for each request's product token.  The
    store's ``book`` and ``claim`` are those ``wait()`` uses, under the same keys, so
    manners robots sharing the Redis keep the spacing together with Scrapy.
    """
    location = settings.get("MANNERS_PACING") or None
    if location is None:
        return None
    patience = _seconds(settings, "MANNERS_PACING_TIMEOUT", PATIENCE, positive=True)
    try:
        return FleetPacing(RedisStore(check_location(location)), patience)
    except (ValueError, CacheError) as exc:
        raise ValueError(f"manners.scrapy: MANNERS_PACING: {exc}") from None


def _headers(response: Response) -> Mapping[str, str]:
    """Response headers as the outcome table reads them: lower-case names, values joined."""
    return {
        key.decode("latin-1").lower(): ", ".join(v.decode("latin-1") for v in values)
        for key, values in response.headers.items()
    }


def _seconds(settings: BaseSettings, name: str, default: float, *, positive: bool = False) -> float:
    value = settings.get(name)
    if value is None:
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"manners.scrapy: {name} must be a number of seconds, not {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0 or (positive and seconds == 0):
        kind = "a positive" if positive else "a non-negative"
        raise ValueError(f"manners.scrapy: {name} must be {kind} number of seconds, not {value!r}")
    return seconds
