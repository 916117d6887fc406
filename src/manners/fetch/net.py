"""Streams with deadlines, and network failures named for people and for status fields."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import socket
import ssl
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from .address import POLICY


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
    host: str,
    port: int,
    deadlines: Deadlines,
    tls: ssl.SSLContext | None = None,
    leaving: Callable[[], object] | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A stream to ``host:port`` (TLS when ``tls``) within ``deadlines.connect``.

    ``leaving``: called as each connection attempt begins, once the name is resolved: the moment
    the server is first asked, from which a polite client spaces its next request (a TLS
    handshake that ends later is still the same request)."""
    try:
        return await asyncio.wait_for(_connect(host, port, tls, leaving), deadlines.connect)
    except BaseException as exc:
        raise failure(exc, f"connecting to {host}:{port}") from exc


async def _connect(
    host: str, port: int, tls: ssl.SSLContext | None, leaving: Callable[[], object] | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Each of the host's addresses in turn (TLS still names the host).

    The address policy in force (``address.POLICY``) is checked on each address resolved, and
    the connection made to that very address: nothing is resolved between check and connect.
    """
    addresses = await resolve(host, port)
    policy = POLICY.get()
    if policy is not None:
        allowed = [a for a in addresses if policy.refuse(host, port, a) is None]
        if not allowed:
            raise NetworkError("address-refused", policy.refuse(host, port, addresses[0]) or "refused")
        addresses = allowed
    for i, address in enumerate(addresses):
        if leaving is not None:
            leaving()
        try:
            return await asyncio.open_connection(
                address, port, ssl=tls, server_hostname=host if tls else None
            )
        except OSError:
            if i == len(addresses) - 1:
                _RESOLVED.pop((host, port), None)  # none answered: ask the resolver again next time
                raise
    raise socket.gaierror(socket.EAI_NONAME, "no address")  # getaddrinfo gives one at least


async def resolve(host: str, port: int) -> list[str]:
    """The host's addresses, from the resolver once per RESOLVED_TTL seconds.

    A crawler asks for the same few hosts thousands of times: asking the resolver each time
    costs a thread hop per request (asyncio resolves in an executor), and that thread's
    contention for the GIL slows everything else the process does.
    """
    try:
        ipaddress.ip_address(host.strip("[]"))
        return [host.strip("[]")]
    except ValueError:
        pass
    now = time.monotonic()
    cached = _RESOLVED.get((host, port))
    if cached is not None and cached[0] > now:
        return cached[1]
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise socket.gaierror(socket.EAI_NONAME, "no address")
    _RESOLVED[(host, port)] = (now + RESOLVED_TTL, addresses)
    _RESOLVED.move_to_end((host, port))
    while len(_RESOLVED) > RESOLVED_MAX:
        _RESOLVED.popitem(last=False)
    return addresses


RESOLVED_TTL = 300.0  # seconds an answer of the resolver is used
RESOLVED_MAX = 4096  # host names remembered at once
_RESOLVED: OrderedDict[tuple[str, int], tuple[float, list[str]]] = OrderedDict()


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
