"""Raw Gemini and Gopher requests for the crawler: deadlines, a size cap, trust on first use.

Never raises for anything a server or the network does: the failure is ``Response.error``.
Connecting and each read get their own deadline and the whole exchange a total one, so a
server that trickles a byte a second or never closes holds a worker for ``timeout`` at most.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Protocol

from ..fetch.gemini import read_header, tls_context
from ..fetch.locations import split_authority
from ..fetch.net import Deadlines, NetworkError, close, connect, read_to_eof
from .urls import gopher_ref

MAX_REQUEST = 1024  # bytes of a Gemini request's URL (spec v0.16.1 §2), and of a Gopher selector


class Leaving(Protocol):
    """Told as a request leaves: as each connection attempt begins, and once the request is
    written (``written``).  The first calls may refuse the request by raising (its turn is no
    longer good), and nothing is sent; the last comes after the bytes are gone, so it only
    stamps the time and must not refuse: a request it broke off would have been asked all the
    same, and asked again later."""

    def __call__(self, written: bool = False) -> object: ...


def request_problem(line: bytes, *, search_allowed: bool = False) -> str | None:
    """Why a request line (without its CRLF) must not be sent, or None when it is clean.

    The one check every request passes just before it is written, whatever the URL parser let
    through: no CR, LF or NUL (they would end the request early or smuggle a second one in), a
    TAB only as a type-7 search's separator, and at most MAX_REQUEST bytes before it.
    """
    for byte, name in ((b"\r", "CR"), (b"\n", "LF"), (b"\0", "NUL")):
        if byte in line:
            return f"the request would hold a {name} byte, which no server may be sent"
    head, tab, _ = line.partition(b"\t")
    if tab and not search_allowed:
        return "the selector holds a TAB, which only a search (item type 7) may send"
    if len(head) > MAX_REQUEST:
        return f"the request is longer than {MAX_REQUEST} bytes"
    return None


@dataclass(frozen=True)
class Response:
    """One request and what came back: ``raw`` is every byte read (at most header + max_bytes)."""

    url: str
    request: bytes  # as sent: the URL (Gemini) or selector (Gopher) and CRLF
    raw: bytes  # header line and body (Gemini), the reply as is (Gopher); for the WARC
    truncated: bool  # the body went on past max_bytes and was cut
    status: int | None  # Gemini status; None for Gopher and for failures
    meta: str
    body: bytes  # Gemini: after the header; Gopher: the reply
    error: str | None  # why nothing usable came back (network, malformed header, deadline)
    fingerprint: str | None  # SHA-256 of the Gemini server's certificate
    peer: str | None  # the server's IP address
    fingerprint_changed: bool = False  # differs from the one known for host:port (recorded, not fatal)
    previous_fingerprint: str | None = None
    certificate: bytes = b""  # the Gemini server's certificate (DER)
    tofu: str | None = None  # trust on first use: "new", "matched" or "changed"


def _failed(url: str, request: bytes, why: str, fingerprint: str | None = None) -> Response:
    return Response(url, request, b"", False, None, "", b"", why, fingerprint, None)


async def gemini_get(
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    known_hosts: MutableMapping[str, str],
    leaving: Leaving | None = None,
) -> Response:
    """Request ``url`` (absolute, at most 1024 bytes) over TLS with SNI.

    ``leaving``: called as the connection is begun, its name resolved, and again once the
    request is written: the crawler spaces the host's next request from the last call, so
    that however late a busy event loop sent this one's bytes after its connection was made,
    the next one's reach the server no sooner than the spacing after them.

    ``known_hosts`` maps ``host:port`` to certificate fingerprints: the first seen is
    kept; a different one is reported in ``fingerprint_changed`` and the answer still used.
    """
    request = url.encode("utf-8", "surrogateescape") + b"\r\n"
    problem = request_problem(request[:-2])
    if problem is not None:
        return _failed(url, b"", f"not sent: {problem}")
    try:
        host, port = split_authority(url)
    except ValueError as exc:
        return _failed(url, request, str(exc))
    deadlines = Deadlines.of(timeout)
    state: dict[str, str] = {}
    try:
        return await asyncio.wait_for(
            _gemini(url, request, host, port, deadlines, max_bytes, known_hosts, state, leaving), timeout
        )
    except (TimeoutError, asyncio.TimeoutError):
        return _failed(url, request, f"timeout: the exchange took longer than {timeout:g} s",
                       fingerprint=state.get("fingerprint"))  # fmt: skip
    except NetworkError as exc:
        return _failed(url, request, f"{exc.name}: {exc.why}", fingerprint=state.get("fingerprint"))
    except OSError as exc:  # anything else the socket layer raises is a network failure too
        return _failed(url, request, f"network-error: {exc}")


async def _gemini(
    url: str,
    request: bytes,
    host: str,
    port: int,
    deadlines: Deadlines,
    max_bytes: int,
    known_hosts: MutableMapping[str, str],
    state: dict[str, str],
    leaving: Leaving | None = None,
) -> Response:
    reader, writer = await connect(host, port, deadlines, tls_context(), leaving)
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        cert = (ssl_object.getpeercert(binary_form=True) if ssl_object else None) or b""
        fingerprint = state["fingerprint"] = hashlib.sha256(cert).hexdigest()
        peer = _peer(writer)
        key = f"{host}:{port}"
        before = known_hosts.get(key)
        if before is None:
            known_hosts[key] = fingerprint
        changed = before is not None and before != fingerprint
        writer.write(request)
        if leaving is not None:
            leaving(written=True)
        status, meta, head, body = await read_header(reader, deadlines)
        if status // 10 == 2:
            body = await read_to_eof(reader, body, max_bytes + 1, deadlines)
        else:
            body = b""  # only a success has a body
        truncated = len(body) > max_bytes
        body = body[:max_bytes]
        tofu = "new" if before is None else "changed" if changed else "matched"
        return Response(url, request, head + body, truncated, status, meta, body, None, fingerprint,
                        peer, changed, before if changed else None, cert, tofu)  # fmt: skip
    finally:
        close(writer)


def _peer(writer: asyncio.StreamWriter) -> str | None:
    name = writer.get_extra_info("peername")
    return str(name[0]) if isinstance(name, tuple) and name else None


async def gopher_get(url: str, *, timeout: float, max_bytes: int, leaving: Leaving | None = None) -> Response:
    """Send the URL's selector (and ``TAB`` search part) and CRLF; read to EOF, at most max_bytes.
    ``leaving``: as for ``gemini_get``."""
    try:
        ref = gopher_ref(url)
        host, port, request = ref.host.strip("[]"), ref.port, ref.request()
    except (ValueError, UnicodeError) as exc:
        return _failed(url, b"", str(exc))
    problem = request_problem(request[:-2], search_allowed=ref.item_type == "7")
    if problem is not None:
        return _failed(url, b"", f"not sent: {problem}")
    deadlines = Deadlines.of(timeout)
    try:
        return await asyncio.wait_for(
            _gopher(url, request, host, port, deadlines, max_bytes, leaving), timeout
        )
    except (TimeoutError, asyncio.TimeoutError):
        return _failed(url, request, f"timeout: the exchange took longer than {timeout:g} s")
    except NetworkError as exc:
        return _failed(url, request, f"{exc.name}: {exc.why}")
    except OSError as exc:
        return _failed(url, request, f"network-error: {exc}")


async def _gopher(
    url: str,
    request: bytes,
    host: str,
    port: int,
    deadlines: Deadlines,
    max_bytes: int,
    leaving: Leaving | None = None,
) -> Response:
    reader, writer = await connect(host, port, deadlines, leaving=leaving)
    try:
        peer = _peer(writer)
        writer.write(request)
        if leaving is not None:
            leaving(written=True)
        raw = await read_to_eof(reader, b"", max_bytes + 1, deadlines)
        truncated = len(raw) > max_bytes
        raw = raw[:max_bytes]
        return Response(url, request, raw, truncated, None, "", raw, None, None, peer)
    finally:
        close(writer)
