"""The server's own URLs for the matrix: a small crawl with a crawler's manners.

Gemini and Gopher: ``manners.crawl.Crawler`` itself, in a temporary directory that goes when
the sample is taken (no WARC, a memory cache, ``max_pages``), so the sample is fetched exactly
as manners crawls: robots.txt first, each request spaced as the file and ``--delay`` ask, and
nothing disallowed fetched.  The crawler does not do the Web, so for HTTP(S) the URLs come from
the home page's links and the robots.txt ``Sitemap:`` lines, each fetched only if the file
allows it, one at a time through the audit's pacing.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urljoin

from ...crawl.crawler import Crawler
from ...crawl.urls import authority
from ...robots import RobotsTxt
from . import http

CRAWL_SLACK = 10.0  # seconds a sample crawl may take beyond its requests' spacing and two timeouts
PAGE_MAX = 1 << 20  # bytes of a sample page read
SITEMAPS_MAX = 5  # sitemap documents read at most (an index's included)

Targets = list[tuple[str, str]]  # (URL, how it was found)


async def crawl(
    url: str, agent: str, roles: tuple[str, ...], sample: int, delay: float, spacing: float, timeout: float
) -> tuple[Targets, int, str | None]:
    """Crawl at most ``sample`` pages from ``url`` (Gemini or Gopher), on its server only.

    Returns the URLs settled (fetched, disallowed, redirects, errors: every URL of the server the
    crawl came upon), the requests it sent, and why it stopped early, if it did.  A crawl that
    outlasts its budget (each page's spacing, two timeouts and some slack: a server that stalls)
    is stopped; the requests in flight end within their own deadline."""
    budget = (sample + 4) * spacing + 2 * timeout + CRAWL_SLACK  # +4: robots.txt (three selectors), caps.txt
    mine = authority(url)
    found: dict[str, str] = {}
    note = None
    with tempfile.TemporaryDirectory(prefix="manners-site-") as tmp:
        out = Path(tmp) / "crawl"
        crawler = Crawler(
            agent,
            roles,
            out,
            max_pages=sample,
            min_delay=delay,
            max_delay=max(spacing, delay),
            concurrency=1,
            cache="memory",
            warc=False,
            timeout=timeout,
            robots_attempts=1,
            max_bytes=PAGE_MAX,
        )
        stopped = asyncio.Event()

        async def watch() -> None:
            await asyncio.sleep(budget)
            stopped.set()
            crawler.stop()

        watchdog = asyncio.ensure_future(watch())
        try:
            async with crawler:
                async for page in crawler.crawl([url]):
                    if page.outcome != "skipped" and authority(page.url) == mine:
                        found.setdefault(page.url, "crawl")
        finally:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog
        if stopped.is_set():
            note = f"the sample crawl was stopped after {budget:.0f} s, with {len(found)} URLs"
        sent = sum(len(f.read_bytes().splitlines()) for f in out.glob("requests-*.jsonl"))
    return list(found.items())[:sample], sent, note


Get = Callable[[str, int], Awaitable[tuple[int | None, dict[str, str], bytes]]]


async def web(
    url: str, robots: RobotsTxt, agent: str, roles: tuple[str, ...], sample: int, get: Get
) -> Targets:
    """The home page and its links, then the Sitemap: lines' URLs, at most ``sample``, each
    document fetched (by ``get(url, limit)``, which paces) only if ``robots`` allows it."""
    home = url.split("://", 1)[0] + "://" + url.split("://", 1)[1].split("/", 1)[0] + "/"
    found: dict[str, str] = {home: "home page"}

    def allowed(target: str) -> bool:
        return robots.decide(target, agent, roles).allowed

    def add(urls: list[str], how: str) -> None:
        for u in http.own(urls, home):
            if len(found) >= sample:
                return
            found.setdefault(u, how)

    if allowed(home):
        status, headers, body = await get(home, PAGE_MAX)
        if status is not None and 300 <= status < 400 and headers.get("location"):
            add([urljoin(home, headers["location"].strip())], "home page")
        elif status is not None and 200 <= status < 300:
            add(http.page_links(body, home), "home page")
    queue = [s for s in robots.sitemaps if http.own([s], home)]
    read = 0
    while queue and read < SITEMAPS_MAX and len(found) < sample:
        where = queue.pop(0)
        if not allowed(where):
            continue
        read += 1
        status, _, body = await get(where, http.SITEMAP_MAX)
        if status is None or not 200 <= status < 300:
            continue
        xml = http.sitemap_text(body)
        if http.is_sitemap_index(xml):
            queue += http.own(http.sitemap_locations(xml), home)
        else:
            add(http.sitemap_locations(xml), "sitemap")
    return list(found.items())[:sample] if sample else []
