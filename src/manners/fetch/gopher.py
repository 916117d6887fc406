"""Gopher: one selector and CRLF, then read to EOF; try each place robots.txt may be.

What the replies mean is :func:`first_answered`, pure, so that ``manners site``, which asks
every selector whatever the first one got, reads its replies exactly as a robot's fetch does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import quote

from ..gopher_reply import gopher_text
from .locations import split_authority
from .net import Deadlines, NetworkError, close, connect, read_to_eof
from .outcome import GOPHER_SELECTORS, FetchResult, ok, unavailable, unreachable


async def fetch(
    url: str,
    deadlines: Deadlines,
    max_bytes: int,
    spacing: float = 0.0,
    before: Callable[[str], Awaitable[None]] | None = None,
) -> FetchResult:
    """``spacing``: seconds between two of the selectors tried, as between any two requests;
    ``before``: awaited with each selector's URL just before it is sent."""
    host, port = split_authority(url)
    replies: list[bytes | NetworkError] = []
    while (result := first_answered(url, replies, max_bytes)) is None:
        selector = GOPHER_SELECTORS[len(replies)]
        if replies and spacing > 0:
            await asyncio.sleep(spacing)
        if before is not None:
            await before(selector_url(url, selector))
        try:
            replies.append(await request(host, port, selector, deadlines, max_bytes + 1))
        except NetworkError as exc:
            replies.append(exc)
    return result


def first_answered(url: str, replies: Sequence[bytes | NetworkError], max_bytes: int) -> FetchResult | None:
    """What a robot reads from the replies to the robots.txt selectors, ``replies[i]`` being
    what ``GOPHER_SELECTORS[i]`` got (its bytes, or why none came): the first selector that
    holds a file, in that order; the first that got no answer ends it, unreachable; none of
    them a file, unavailable.  None while the next selector, not asked yet, must decide."""
    for selector, reply in zip(GOPHER_SELECTORS, replies, strict=False):
        source = selector_url(url, selector)
        if isinstance(reply, NetworkError):
            return unreachable(url, reply.name, reply.why, source)
        text = gopher_text(reply[: max_bytes + 1])
        if text is not None:
            return ok(url, source, text, "gopher-ok", max_bytes, extra={"selector": selector})
    if len(replies) < len(GOPHER_SELECTORS):
        return None
    return unavailable(url, "gopher-error", f"none of the selectors {', '.join(GOPHER_SELECTORS)} is a file")


def selector_url(url: str, selector: str) -> str:
    """The URL of a text file at ``selector`` on the server of ``url`` (port 70 left out)."""
    host, port = split_authority(url)
    authority = host if port == 70 else f"{host}:{port}"
    return f"gopher://{authority}/0{quote(selector, safe='/')}"


async def request(host: str, port: int, selector: str, deadlines: Deadlines, limit: int) -> bytes:
    reader, writer = await connect(host, port, deadlines)
    try:
        writer.write(selector.encode("utf-8") + b"\r\n")
        return await read_to_eof(reader, b"", limit, deadlines)
    finally:
        close(writer)
