"""Streams with deadlines, and network failures named for people and for status fields."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import ssl
from dataclasses import dataclass


@dataclass(frozen=True)
class Deadlines:
    """Seconds allowed: to connect, between two reads, and for the whole fetch."""

    connect: float
    read: float
    total: float

    @classmethod
    def of(cls, timeout: float) -> Deadlines:
        if not timeout > 0:
            raise ValueError("timeout must be a positive number of seconds")
        return cls(connect=min(timeout, 10.0), read=min(timeout, 10.0), total=timeout)


class NetworkError(Exception):
    """A fetch that failed below the protocol: ``name`` goes in FetchResult.status."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(why)
        self.name = name
        self.why = why


async def connect(
    host: str, port: int, deadlines: Deadlines, tls: ssl.SSLContext | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        return await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None),
            deadlines.connect,
        )
    except BaseException as exc:
        raise failure(exc, f"connecting to {host}:{port}") from exc


async def read_some(reader: asyncio.StreamReader, n: int, deadlines: Deadlines) -> bytes:
    try:
        return await asyncio.wait_for(reader.read(n), deadlines.read)
    except BaseException as exc:
        raise failure(exc, "reading") from exc


async def read_to_eof(reader: asyncio.StreamReader, have: bytes, limit: int, deadlines: Deadlines) -> bytes:
    """Read until the server closes, or until ``limit`` bytes are in hand."""
    chunks = [have]
    size = len(have)
    while size < limit:
        chunk = await read_some(reader, min(65536, limit - size), deadlines)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def close(writer: asyncio.StreamWriter) -> None:
    """Close without waiting: a server that never answers must not hold us."""
    with contextlib.suppress(Exception):  # already gone
        writer.transport.abort()


def failure(exc: BaseException, doing: str) -> BaseException:
    """The NetworkError for ``exc``; anything that is no network failure passes through."""
    if isinstance(exc, NetworkError):
        return exc
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return NetworkError("timeout", f"no answer in time while {doing}")
    if isinstance(exc, socket.gaierror):
        return NetworkError("dns-error", f"the host name could not be resolved ({exc.strerror})")
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return NetworkError("tls-error", f"the TLS handshake failed while {doing} ({exc})")
    if isinstance(exc, ConnectionRefusedError):
        return NetworkError("connection-refused", f"the connection was refused while {doing}")
    if isinstance(exc, ConnectionResetError | BrokenPipeError | asyncio.IncompleteReadError):
        return NetworkError("connection-reset", f"the connection was reset while {doing}")
    if isinstance(exc, OSError):
        name = errno.errorcode.get(exc.errno or 0, "network-error").lower().replace("_", "-")
        return NetworkError(name if exc.errno else "network-error", f"{exc.strerror or exc} while {doing}")
    return exc
