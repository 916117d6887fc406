"""A drop-in for ``urllib.robotparser`` that answers as RFC 9309 does.

``from manners import robotparser`` in place of ``import urllib.robotparser``: the same
class, methods and attributes, but the longest matching rule decides (not the first),
a robot is named by its product token (not by a substring), groups for the same agent
are merged, and ``read()`` reads the answer's status as RFC 9309 §2.3.1 says, with a
User-Agent of your choice.  docs/robotparser.md lists every
difference.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import urllib.parse
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar, cast
from urllib.robotparser import RequestRate

from ._core import normalise
from .fetch import FetchResult, fetch_robots, robots_locations
from .profiles import Profile, get_profile, profile_for
from .robots import Decision, Line, RobotsTxt, parse

__all__ = ["RequestRate", "RobotFileParser"]

T = TypeVar("T")
MAX_BYTES = 512_000  # RFC 9309 §2.5: parse at least 500 KiB
TIMEOUT = 30.0  # seconds for the whole of read(), redirects included


class RobotFileParser:
    """Reads a robots.txt and answers questions about it, as ``urllib.robotparser`` does.

    ``user_agent`` is the User-Agent header ``read()`` sends (urllib sends Python's own);
    ``timeout`` bounds the whole of ``read()``; ``profile`` fixes how the file is read
    (default: by each target's scheme, RFC 9309 for the Web).
    """

    def __init__(
        self,
        url: str = "",
        *,
        user_agent: str | None = None,
        timeout: float = TIMEOUT,
        profile: str | None = None,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        self.timeout = timeout
        self.profile = profile
        self.user_agent = user_agent
        self.url = ""
        self.host = ""
        self.path = ""
        self.disallow_all = False  # the file could not be read: nothing may be fetched
        self.allow_all = False  # there is no file (4xx): everything may be fetched
        self.last_checked = 0.0
        self.result: FetchResult | None = None  # what the last read() saw
        self._robots: RobotsTxt | None = None
        self.set_url(url, user_agent)

    # -- the standard library's API ---------------------------------------------------

    def mtime(self) -> float:
        """When the file was last parsed (epoch seconds; 0 until then), for callers that re-read it."""
        return self.last_checked

    def modified(self) -> None:
        """Record that the file was read just now."""
        self.last_checked = time.time()

    def set_url(self, url: str, user_agent: str | None = None) -> None:
        """The robots.txt address ``read()`` fetches, and optionally the User-Agent it sends."""
        if not isinstance(url, str):
            raise TypeError(f"url must be a str, not {type(url).__name__}")
        self.url = url
        self.host, self.path = urllib.parse.urlsplit(url)[1:3]
        if user_agent is not None:
            self.user_agent = user_agent

    def read(self) -> None:
        """Fetch the file and take in what the answer means (RFC 9309 §2.3.1).

        2xx: the file is parsed.  4xx (and too many redirects): no file, everything is
        allowed.  5xx, 429, or a network failure: unreachable, nothing is allowed
        (``disallow_all``).  Never raises for anything a server or the network does.
        """
        if not self.url:
            raise ValueError("no robots.txt address: call set_url(url) or pass it to RobotFileParser(url)")
        result = _run(_fetch(self.url, self.user_agent, self.timeout))
        self.result = result
        self.allow_all = result.outcome == "unavailable"
        self.disallow_all = result.outcome in ("unreachable", "retry")
        if result.outcome == "ok":
            self._take(result.robots)
        else:
            self._robots = None

    def parse(self, lines: Iterable[str | bytes]) -> None:
        """Parse the file's lines (as ``readlines()`` or ``splitlines()`` give them)."""
        if isinstance(lines, (str, bytes)):
            raise TypeError("parse() takes the file's lines, not the whole file: use text.splitlines()")
        text = []
        for line in lines:
            if isinstance(line, bytes):
                line = line.decode("utf-8", "surrogateescape")
            elif not isinstance(line, str):
                raise TypeError(f"parse() takes lines of text, not {type(line).__name__}")
            text.append(line.rstrip("\r\n"))
        self.allow_all = self.disallow_all = False
        self._take(parse("\n".join(text) + "\n", self.profile, max_bytes=None))

    def can_fetch(self, useragent: str, url: str) -> bool:
        """May ``useragent`` fetch ``url``?  False until the file has been read or parsed."""
        if self.disallow_all:
            return False
        if self.allow_all:
            return True
        if self._robots is None or not self.last_checked:
            return False
        return self._robots.allowed(_target(url), _agent(useragent))

    def crawl_delay(self, useragent: str) -> int | float | None:
        """Seconds to wait between requests, from the Crawl-delay of ``useragent``'s group."""
        if self._robots is None or not self.last_checked:
            return None
        return _number(self._robots.crawl_delay(_agent(useragent), profile=self._reading()))

    def request_rate(self, useragent: str) -> RequestRate | None:
        """Request-rate of ``useragent``'s group, as ``RequestRate(requests, seconds)``."""
        if self._robots is None or not self.last_checked:
            return None
        rate = self._robots.request_rate(_agent(useragent), profile=self._reading())
        if rate is None:
            return None
        return RequestRate(rate[0], cast(int, _number(rate[1])))  # urllib's seconds: whole, or here a float

    def site_maps(self) -> list[str] | None:
        """The Sitemap URLs of the file, in order; None when it names none."""
        if self._robots is None:
            return None
        return self._robots.sitemaps or None

    def __str__(self) -> str:
        """The groups, as urllib prints its entries: named agents first, ``*`` last; in each, the
        User-agent lines, Crawl-delay, Request-rate, then the rules.  A file both read alike
        prints as urllib prints it (docs/robotparser.md says where not)."""
        if self._robots is None:
            return ""
        robots, reading = self._robots, self._reading()
        blocks: list[tuple[bool, str]] = []
        lines = robots.lines()
        for group in robots.groups(reading):
            first, last = group.lines
            out = [f"User-agent: {value}" for _, value in group.agents]
            fields = [ln for ln in lines if first <= ln.number <= last and ln.kind != "user-agent"]
            out += [f"Crawl-delay: {ln.value}" for ln in fields if ln.kind == "crawl-delay"]
            out += [f"Request-rate: {ln.value}" for ln in fields if ln.kind == "request-rate"]
            out += [_rule(ln, reading) for ln in fields if ln.kind in ("allow", "disallow")]
            blocks.append(("*" in group.names, "\n".join(out)))
        return "\n\n".join([b for star, b in blocks if not star] + [b for star, b in blocks if star])

    # -- beyond the standard library --------------------------------------------------

    @property
    def robots(self) -> RobotsTxt | None:
        """The parsed file (None until one was read or parsed), for manners' own questions."""
        return self._robots

    def decide(self, useragent: str, url: str) -> Decision:
        """Like can_fetch(), with the deciding line and the reason."""
        if self._robots is None or not self.last_checked or self.allow_all or self.disallow_all:
            allowed = self.can_fetch(useragent, url)
            why = self.result.meaning if self.result is not None else "no robots.txt has been read yet"
            return Decision(allowed, None, None, why, self.profile or "rfc9309")
        return self._robots.decide(_target(url), _agent(useragent))

    def _take(self, robots: RobotsTxt) -> None:
        self._robots = robots
        self.modified()

    def _reading(self) -> Profile:
        """The profile the file is read under: the one given, else the one its URL's scheme picks
        (RFC 9309 without a URL), as parse() and read() chose it.  A Profile, not the URL:
        RobotsTxt.groups() takes a profile's name, not a URL."""
        if self.profile is not None:
            return get_profile(self.profile)
        return profile_for(self.url)


def _agent(useragent: str) -> str:
    if not isinstance(useragent, str):
        raise TypeError(f"useragent must be a str such as 'mybot/1.0', not {type(useragent).__name__}")
    return useragent


def _target(url: str) -> str:
    """What urllib accepts as a URL: an absolute URL, a path, or a path without its first '/'."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    if "://" in url.split("?", 1)[0].split("#", 1)[0] or url[:1] == "/":
        return url
    return "/" + url


def _rule(line: Line, reading: Profile) -> str:
    """A rule as urllib prints one: an empty Disallow as ``Allow: `` (nothing is disallowed, in
    either reading), and a URL path percent-encoded as it is matched, which is the form urllib's
    ``quote(unquote(path))`` gives where the two readings agree (``%7e`` is ``~``, ``<`` is
    ``%3C``).  Other profiles' paths (Google's, Gopher selectors) are printed as written."""
    if line.kind == "disallow" and not line.value:
        return "Allow: "
    value = normalise(line.value, pattern=True) if reading.target == "rfc3986" else line.value
    return f"{line.kind.capitalize()}: {value}"


def _number(value: float | None) -> int | float | None:
    """Whole numbers as int, as urllib gives them."""
    if value is None:
        return None
    return int(value) if value.is_integer() else value


async def _fetch(url: str, user_agent: str | None, timeout: float) -> FetchResult:
    """The file at ``url``: RFC 9309's /robots.txt for a bare authority, else the address given."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme.lower() in ("http", "https") and parts.path not in ("", "/robots.txt"):
        return await _fetch_exact(url, user_agent, timeout)
    robots_locations(url)  # ValueError, with the reason, for an address no robots.txt lives at
    return await fetch_robots(url, "*", timeout, MAX_BYTES, user_agent=user_agent)


async def _fetch_exact(url: str, user_agent: str | None, timeout: float) -> FetchResult:
    """An HTTP(S) file somewhere other than /robots.txt, read with the same outcome table."""
    from .fetch import http
    from .fetch.net import Deadlines
    from .fetch.outcome import unreachable
    from .version import __version__

    deadlines = Deadlines.of(timeout)
    work = http.fetch(url, deadlines, MAX_BYTES, user_agent or f"manners/{__version__}")
    try:
        return await asyncio.wait_for(work, deadlines.total)
    except asyncio.TimeoutError:
        return unreachable(url, "timeout", f"the fetch took longer than {timeout:g} s")


def _run(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` to its end; inside a running event loop (a notebook), in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="manners-robotparser") as pool:
        return pool.submit(asyncio.run, work).result()
