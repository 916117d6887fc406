"""Fetching robots.txt over HTTP(S), Gemini and Gopher, with the meaning of every answer.

The meaning lives in ``outcome`` (pure functions); ``http``, ``gemini`` and
``gopher`` only move bytes.  See docs/fetching.md's tables.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping

from ..version import __version__
from . import gemini, gopher, http
from .locations import robots_locations
from .net import Deadlines
from .outcome import GOPHER_SELECTORS, FetchResult, Outcome, unreachable

__all__ = ["FetchResult", "Outcome", "fetch_robots", "robots_locations"]


async def fetch_robots(
    url: str,
    agent: str = "*",
    timeout: float = 30.0,
    max_bytes: int = 512_000,
    *,
    user_agent: str | None = None,
    known_hosts: MutableMapping[str, str] | None = None,
    spacing: float = 0.0,
    before: Callable[[str], Awaitable[None]] | None = None,
) -> FetchResult:
    """Fetch the robots.txt that governs ``url`` and say what it means.

    Never raises for anything a server or the network does: every failure is an
    outcome.  ``timeout`` bounds the whole fetch, redirects and Gopher's several
    selectors included; connecting and each read also get at most 10 s.
    ``known_hosts`` maps ``host:port`` to Gemini certificate fingerprints (trust on
    first use); by default this process remembers them.  ``spacing`` is the pause between
    two requests to the server when Gopher's selectors are tried in turn (a polite robot's
    delay; the timeout does not count it).  ``before`` is awaited with the address of each
    request just before it leaves (every Gopher selector tried, every redirect followed): a
    crawler writes it to its ledger there, and books the request's slot, so that a request
    whose answer never comes is still on record.  ValueError for a URL no robots.txt can be
    fetched for.
    """
    if max_bytes < 1:
        raise ValueError("max_bytes must be a positive number of bytes")
    deadlines = Deadlines.of(timeout)
    location = robots_locations(url)[0]
    scheme = location.split(":", 1)[0]
    if user_agent is None:
        user_agent = f"manners/{__version__}" if agent in ("", "*") else f"{agent} (manners/{__version__})"
    if scheme == "gopher":
        work = gopher.fetch(location, deadlines, max_bytes, spacing, before)
    elif scheme == "gemini":
        work = gemini.fetch(location, deadlines, max_bytes, known_hosts, before)
    else:
        work = http.fetch(location, deadlines, max_bytes, user_agent, before)
    pauses = spacing * (len(GOPHER_SELECTORS) - 1) if scheme == "gopher" else 0.0
    try:
        return await asyncio.wait_for(work, deadlines.total + pauses)
    except asyncio.TimeoutError:
        return unreachable(location, "timeout", f"the fetch took longer than {timeout:g} s")
