"""HTTP(S) through httpx: redirects followed by hand so each hop is counted and kept.

``client``, ``read_capped`` and ``network_error`` are public because ``manners site`` asks
for robots.txt with them too: its audit must ask as a robot asks, and name a failure as a
robot's fetch names it.
"""

from __future__ import annotations

import ast
import functools
import re
import ssl
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..terminal import safe
from .net import Deadlines, NetworkError, failure
from .outcome import MAX_REDIRECTS, FetchResult, http_redirect, http_result, too_many_redirects, unreachable

if TYPE_CHECKING:
    import httpx


async def fetch(
    url: str,
    deadlines: Deadlines,
    max_bytes: int,
    user_agent: str,
    before: Callable[[str], Awaitable[None]] | None = None,
) -> FetchResult:
    """``before``: awaited with each URL just before it is requested (redirects included)."""
    import httpx  # only robots that fetch over HTTP need it

    current, redirects = url, tuple[str, ...]()
    async with client(deadlines, user_agent) as http:
        while True:
            if before is not None:
                await before(current)
            try:
                async with http.stream("GET", current) as response:
                    target = http_redirect(response.status_code, response.headers, current)
                    if target is None:
                        body = await read_capped(response, max_bytes + 1)
                        return http_result(
                            url,
                            current,
                            response.status_code,
                            response.headers,
                            body,
                            max_bytes=max_bytes,
                            redirects=redirects,
                        )
            except httpx.HTTPError as exc:
                err = network_error(exc, current)
                return unreachable(url, err.name, err.why, current, redirects=redirects)
            if len(redirects) == MAX_REDIRECTS:
                return too_many_redirects(url, response.status_code, redirects)
            current, redirects = target, (*redirects, target)


def client(deadlines: Deadlines, user_agent: str) -> httpx.AsyncClient:
    """A client that asks as a robot asks for robots.txt: gzip accepted, text preferred, each
    read and connection within ``deadlines``, redirects left to the caller (who counts them)."""
    import httpx

    timeout = httpx.Timeout(deadlines.read, connect=deadlines.connect)
    headers = {"User-Agent": user_agent, "Accept-Encoding": "gzip", "Accept": "text/plain, */*;q=0.5"}
    return _client_class()(timeout=timeout, headers=headers, follow_redirects=False, verify=tls_context())


@functools.cache
def _client_class() -> type[httpx.AsyncClient]:
    """httpx's client, but a redirect whose ``Location`` is no URL (a control character in it)
    is still an answer: httpx builds the next request of every redirect, even unfollowed, and
    fails the whole exchange when it cannot ("the server did not answer", though it did).  The
    caller follows redirects itself and reads ``Location`` as ``outcome.http_redirect`` says."""
    import httpx

    class Client(httpx.AsyncClient):
        def _build_redirect_request(self, request: httpx.Request, response: httpx.Response) -> httpx.Request:
            try:
                return super()._build_redirect_request(request, response)
            except httpx.RemoteProtocolError:
                return request  # never sent: the caller decides what a redirect means

    return Client


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The system's CA bundle, loaded once per process: loading it takes tens of milliseconds,
    too long to pay for each robots.txt."""
    return ssl.create_default_context()


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """The decoded body, stopping the transfer once ``limit`` bytes are in hand: a server's
    endless or huge answer costs a robot no more than it means to read."""
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)[:limit]


def network_error(exc: BaseException, url: str) -> NetworkError:
    """An httpx failure named as every fetch names a failure (``timeout``, ``dns-error``,
    ``connection-refused``, ...), so that HTTP's reasons read like Gemini's and Gopher's."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return NetworkError("timeout", f"no answer in time from {url}")
    cause: BaseException | None = exc
    while cause is not None:  # httpx wraps the socket's own error: name that one
        named = failure(cause, f"fetching {url}")
        if isinstance(named, NetworkError) and named.name != "network-error":
            return named
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, httpx.RemoteProtocolError):
        return NetworkError("protocol-error", f"the server broke HTTP ({as_text(str(exc))})")
    if isinstance(exc, httpx.ReadError):
        return NetworkError("connection-reset", f"the connection broke while reading {url}")
    return NetworkError("network-error", f"{type(exc).__name__}: {exc}")


_BYTES_REPR = re.compile(r"""(?:bytearray\()?b(['"])((?:\\.|(?!\1).)*)\1\)?""")


def as_text(message: str) -> str:
    """An HTTP library's message with the bytes it quotes (h11 writes ``bytearray(b'...')``) as
    the text they hold, quoted and escaped as every message quotes what a server sent."""

    def quoted(m: re.Match[str]) -> str:
        try:
            raw = ast.literal_eval("b" + m[1] + m[2] + m[1])
        except (ValueError, SyntaxError):
            return safe(m[0])
        return "'" + safe(raw.decode("utf-8", "surrogateescape")) + "'"

    return safe(_BYTES_REPR.sub(quoted, message))
