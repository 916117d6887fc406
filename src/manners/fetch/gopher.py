"""Gopher: one selector and CRLF, then read to EOF; try each place robots.txt may be."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from .locations import split_authority
from .net import Deadlines, NetworkError, close, connect, read_to_eof
from .outcome import GOPHER_SELECTORS, FetchResult, gopher_text, ok, unavailable, unreachable


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
    authority = host if port == 70 else f"{host}:{port}"
    for i, selector in enumerate(GOPHER_SELECTORS):
        if i and spacing > 0:
            await asyncio.sleep(spacing)
        source = f"gopher://{authority}/0{quote(selector, safe='/')}"
        if before is not None:
            await before(source)
        try:
            raw = await request(host, port, selector, deadlines, max_bytes + 1)
        except NetworkError as exc:
            return unreachable(url, exc.name, exc.why, source)
        text = gopher_text(raw)
        if text is not None:
            return ok(url, source, text, "gopher-ok", max_bytes, extra={"selector": selector})
    return unavailable(url, "gopher-error", f"none of the selectors {', '.join(GOPHER_SELECTORS)} is a file")


async def request(host: str, port: int, selector: str, deadlines: Deadlines, limit: int) -> bytes:
    reader, writer = await connect(host, port, deadlines)
    try:
        writer.write(selector.encode("utf-8") + b"\r\n")
        return await read_to_eof(reader, b"", limit, deadlines)
    finally:
        close(writer)
