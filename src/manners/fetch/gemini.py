"""Gemini: TLS with SNI, trust on first use, one request line, a header, a body."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import ssl
from collections.abc import Awaitable, Callable, MutableMapping

from .locations import split_authority
from .net import Deadlines, NetworkError, close, connect, read_some, read_to_eof
from .outcome import (
    GEMINI_HEADER_MAX,
    MAX_REDIRECTS,
    FetchResult,
    gemini_header,
    gemini_redirect,
    gemini_result,
    too_many_redirects,
    unreachable,
)

#: host:port -> SHA-256 of the certificate first seen there (this process's memory)
KNOWN_HOSTS: dict[str, str] = {}


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Self-signed certificates are the norm in Geminispace: identity is checked by TOFU."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


async def fetch(
    url: str,
    deadlines: Deadlines,
    max_bytes: int,
    known_hosts: MutableMapping[str, str] | None = None,
    before: Callable[[str], Awaitable[None]] | None = None,
) -> FetchResult:
    """``before``: awaited with each URL just before it is requested (redirects included)."""
    known = KNOWN_HOSTS if known_hosts is None else known_hosts
    current, redirects = url, tuple[str, ...]()
    while True:
        host, port = split_authority(current)
        if before is not None:
            await before(current)
        try:
            status, meta, body, fingerprint = await _exchange(current, host, port, deadlines, max_bytes)
        except NetworkError as exc:
            return unreachable(url, exc.name, exc.why, current, redirects=redirects)
        key = f"{host}:{port}"
        changed = known.get(key, fingerprint) != fingerprint
        known[key] = fingerprint
        target = gemini_redirect(status, meta, current)
        if target is not None:
            if len(redirects) == MAX_REDIRECTS:
                return too_many_redirects(url, status, redirects)
            current, redirects = target, (*redirects, target)
            continue
        return gemini_result(
            url,
            current,
            status,
            meta,
            body,
            max_bytes=max_bytes,
            redirects=redirects,
            fingerprint=fingerprint,
            fingerprint_changed=changed,
        )


async def _exchange(
    url: str, host: str, port: int, deadlines: Deadlines, max_bytes: int
) -> tuple[int, str, bytes, str]:
    reader, writer = await connect(host, port, deadlines, tls_context())
    try:
        cert = writer.get_extra_info("ssl_object").getpeercert(binary_form=True) or b""
        fingerprint = hashlib.sha256(cert).hexdigest()
        writer.write(url.encode("utf-8") + b"\r\n")
        status, meta, _, rest = await read_header(reader, deadlines)
        body = b""
        if status == 20:
            body = await read_to_eof(reader, rest, max_bytes + 1, deadlines)
        return status, meta, body, fingerprint
    finally:
        close(writer)


async def read_header(reader: asyncio.StreamReader, deadlines: Deadlines) -> tuple[int, str, bytes, bytes]:
    """Read a Gemini response header: (status, meta, the header line as sent, what followed it).

    NetworkError ``malformed-header`` when the line is malformed or the server closes first.
    """
    data = b""
    while (header := _header(data)) is None:
        chunk = await read_some(reader, GEMINI_HEADER_MAX + 8, deadlines)
        if not chunk:
            raise NetworkError("malformed-header", "the server closed the connection before a full header")
        data += chunk
    status, meta, start = header
    return status, meta, data[:start], data[start:]


def _header(data: bytes) -> tuple[int, str, int] | None:
    try:
        return gemini_header(data)
    except ValueError as exc:
        raise NetworkError("malformed-header", f"the server sent a malformed header: {exc}") from None
