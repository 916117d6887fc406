"""A logging TCP proxy and small fault servers, each on loopback in a thread of its own.

:func:`logging_proxy` relays bytes between a client and an upstream server and records each
connection: when it was opened (wall clock and monotonic) and, for Gopher, the request line (the
selector).  For Gemini the request is inside TLS, so it records connection times only; the URLs
come from jetforce's access log (``servers.jetforce_hosts``).  Both together let a test assert
which selectors / URLs were requested and how far apart the requests to one server were.

:func:`fault_server` plays what no real server does on demand: a malformed Gemini header, a
server that trickles one byte per interval, one that accepts and never answers, one that closes
at once; Gemini over TLS (a throw-away self-signed certificate for CN=localhost) or plain Gopher.

Both run an asyncio loop in a daemon thread, so they serve sync and async tests alike, and both
stop (every connection closed) when their ``with`` block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "Connection",
    "FaultServer",
    "LoggingProxy",
    "fault_server",
    "logging_proxy",
    "self_signed",
]

HOST = "127.0.0.1"
REQUEST_LIMIT = 4096  # bytes of a Gopher request line kept
START_TIMEOUT = 10.0


@dataclass
class Connection:
    """One client connection through the proxy (or to a fault server)."""

    opened: float  # time.time()
    opened_monotonic: float
    request: bytes | None = None  # Gopher: the request line without CRLF (None: none seen)
    closed: float | None = None  # time.time()
    to_server: int = 0  # bytes relayed client -> server
    to_client: int = 0  # bytes relayed server -> client

    @property
    def selector(self) -> str | None:
        """The Gopher request line as text (surrogate-escaped where not UTF-8)."""
        return None if self.request is None else self.request.decode("utf-8", "surrogateescape")


class _Loop:
    """An asyncio loop in a daemon thread, with one server on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="manners-test-proxy", daemon=True)
        self.thread.start()
        self.writers: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None

    def run(self, coro: Awaitable[object], timeout: float = START_TIMEOUT) -> object:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)  # type: ignore[arg-type]

    def serve(self, handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
              port: int = 0, **options: Any) -> int:  # fmt: skip
        """Start the one server, ``handle`` per connection on 127.0.0.1; return its port."""

        async def start() -> asyncio.Server:
            return await asyncio.start_server(handle, HOST, port, **options)

        server = self.run(start())
        assert isinstance(server, asyncio.Server)
        self.server = server
        return int(server.sockets[0].getsockname()[1])

    async def _close(self) -> None:
        if self.server is not None:
            self.server.close()
        for writer in list(self.writers):
            writer.transport.abort()
        if self.server is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.server.wait_closed(), 2.0)
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.run(self._close(), timeout=5.0)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5.0)
        if not self.thread.is_alive():
            self.loop.close()


@dataclass
class LoggingProxy:
    """What :func:`logging_proxy` yields."""

    port: int  # where clients connect
    upstream: tuple[str, int]  # read at each connection: may be set after start
    gopher: bool
    connections: list[Connection] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def snapshot(self) -> list[Connection]:
        with self._lock:
            return list(self.connections)

    def selectors(self) -> list[str]:
        """Gopher request lines, in the order the connections were opened."""
        return [c.selector for c in self.snapshot() if c.selector is not None]

    def times(self) -> list[float]:
        """Monotonic connection times, in order."""
        return [c.opened_monotonic for c in self.snapshot()]

    def gaps(self) -> list[float]:
        """Seconds between consecutive connections (the spacing a polite client keeps)."""
        t = self.times()
        return [b - a for a, b in itertools.pairwise(t)]

    def clear(self) -> None:
        with self._lock:
            self.connections.clear()


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, count: Callable[[bytes], None]
) -> None:
    try:
        while data := await reader.read(65536):
            count(data)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


@contextmanager
def logging_proxy(
    upstream_port: int,
    *,
    port: int | None = None,
    gopher: bool = True,
    upstream_host: str = HOST,
    connect_timeout: float = 5.0,
) -> Iterator[LoggingProxy]:
    """A TCP relay on 127.0.0.1:``port`` (default: any free one) to ``upstream_port``.

    ``upstream`` may be set later (``proxy.upstream = (host, port)``): start the proxy first, so
    that its port can be advertised by the server behind it.

    ``gopher``: parse the first line the client sends as a Gopher request and record it.
    Everything is relayed unchanged in both directions (TLS included).
    """
    runner = _Loop()
    proxy = LoggingProxy(port=0, upstream=(upstream_host, upstream_port), gopher=gopher)

    async def handle(creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        conn = Connection(opened=time.time(), opened_monotonic=time.monotonic())
        with proxy._lock:
            proxy.connections.append(conn)
        runner.writers.add(cwriter)
        swriter: asyncio.StreamWriter | None = None
        try:
            sreader, upstream = await asyncio.wait_for(
                asyncio.open_connection(*proxy.upstream), connect_timeout
            )
            swriter = upstream
            runner.writers.add(upstream)
            pending = bytearray()

            def up(data: bytes) -> None:
                conn.to_server += len(data)
                if proxy.gopher and conn.request is None and len(pending) < REQUEST_LIMIT:
                    pending.extend(data)
                    end = pending.find(b"\n")
                    if end >= 0:
                        conn.request = bytes(pending[:end]).rstrip(b"\r")

            def down(data: bytes) -> None:
                conn.to_client += len(data)

            await asyncio.gather(_pipe(creader, upstream, up), _pipe(sreader, cwriter, down))
            if proxy.gopher and conn.request is None and pending:
                conn.request = bytes(pending).rstrip(b"\r\n")  # a request without its line end
        except (OSError, TimeoutError, asyncio.CancelledError):
            pass  # upstream unreachable, or the proxy is stopping
        finally:
            conn.closed = time.time()
            for w in (cwriter, swriter):
                if w is not None:
                    runner.writers.discard(w)
                    w.close()  # flushes what is buffered (abort() would drop it)

    try:
        proxy.port = runner.serve(handle, port or 0)
        yield proxy
    finally:
        runner.stop()


# --------------------------------------------------------------------------- fault servers

Fault = Literal["malformed", "trickle", "silent", "close", "answer"]


def self_signed(directory: Path, cn: str = "localhost") -> ssl.SSLContext:
    """A server context with a throw-away self-signed EC certificate for ``cn``."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(directory / "key.pem"), "-out", str(directory / "cert.pem"),
         "-days", "2", "-subj", f"/CN={cn}"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(directory / "cert.pem", directory / "key.pem")
    return ctx


@dataclass
class FaultServer:
    """What :func:`fault_server` yields."""

    port: int
    scheme: Literal["gemini", "gopher"]
    fault: Fault
    connections: list[Connection] = field(default_factory=list)

    @property
    def url(self) -> str:
        host = "localhost" if self.scheme == "gemini" else HOST
        return f"{self.scheme}://{host}:{self.port}/"

    def requests(self) -> list[bytes]:
        return [c.request for c in list(self.connections) if c.request is not None]


MALFORMED = b"2O text/gemini\r\n# not a status\n"  # a letter O where a digit belongs


@contextmanager
def fault_server(
    fault: Fault,
    scheme: Literal["gemini", "gopher"] = "gemini",
    *,
    answer: bytes | None = None,
    interval: float = 1.0,
) -> Iterator[FaultServer]:
    """A misbehaving server on 127.0.0.1 (TLS for Gemini), recording each request line.

    - ``malformed``: answers ``answer`` (default :data:`MALFORMED`, a header that is no header);
    - ``trickle``: a valid start (``20 text/gemini`` / a menu line), then one byte per
      ``interval`` seconds, never ending;
    - ``silent``: accepts, reads the request, never answers, never closes;
    - ``close``: reads the request and closes without a byte;
    - ``answer``: sends ``answer`` and closes (any custom reply).
    """
    runner = _Loop()
    with tempfile.TemporaryDirectory(prefix="manners-fault-") as tmp:
        tls = self_signed(Path(tmp)) if scheme == "gemini" else None
        info = FaultServer(port=0, scheme=scheme, fault=fault)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            conn = Connection(opened=time.time(), opened_monotonic=time.monotonic())
            info.connections.append(conn)
            runner.writers.add(writer)
            try:
                line = await asyncio.wait_for(reader.readline(), 30)
                conn.request = line.rstrip(b"\r\n")
                if fault == "silent":
                    await asyncio.sleep(3600)
                elif fault == "close":
                    pass
                elif fault in ("malformed", "answer"):
                    writer.write(answer if answer is not None else MALFORMED)
                    await writer.drain()
                elif fault == "trickle":
                    start = b"20 text/gemini\r\n" if scheme == "gemini" else b"iTrickle\t\texample.com\t0\r\n"
                    writer.write(start)
                    await writer.drain()
                    while True:
                        await asyncio.sleep(interval)
                        writer.write(b"x")
                        await writer.drain()
                        conn.to_client += 1
            except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError, asyncio.CancelledError):
                pass  # the client left, or the server is stopping
            finally:
                conn.closed = time.time()
                runner.writers.discard(writer)
                with contextlib.suppress(Exception):
                    writer.close()

        try:
            info.port = runner.serve(handle, ssl=tls)
            yield info
        finally:
            runner.stop()
