"""Purpose-built servers for what no real server does on demand, each on loopback in a thread.

- :func:`gopher_trap`: a Gopher server of endless depth: ``/d/<n>/<i>`` is a menu linking to
  ``/d/<n+1>/<j>`` for ``j < fan``; the root is ``/d/0/0``.
- :func:`big_menu`: a Gopher menu of a million lines (streamed, never held in memory), each
  linking to a small text ``/item/<i>``.
- :func:`byte_logger`: a TCP service that records every byte and connection it receives and
  answers like an HTTP server (``400 Bad Request``): an internal service a crawler must not reach;
  with ``gopher=True`` it answers every request with an empty menu instead, to be the target of
  hostile Gopher links whose requests are read byte for byte.

Every server records each connection (times, every byte received up to a cap) before it answers,
reads with deadlines, streams bounded answers, and stops (every connection closed) when its
``with`` block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from proxy import _Loop

__all__ = [
    "ALLOW_ALL",
    "Logged",
    "Received",
    "big_menu",
    "byte_logger",
    "gopher_server",
    "gopher_trap",
]

HOST = "127.0.0.1"
KEEP = 1 << 20  # bytes of a connection kept in the log
IDLE = 1.0  # seconds without a byte (and without a line end) before the server answers anyway
READ_DEADLINE = 5.0  # seconds a request may take to arrive
ALLOW_ALL = "User-agent: *\nDisallow:\n"
NOT_FOUND = b"3Not found\t\terror.host\t1\r\n.\r\n"

Answer = bytes | Iterable[bytes] | None


@dataclass
class Received:
    """One connection: when it was opened and every byte the client sent (up to KEEP)."""

    opened: float  # time.time()
    opened_monotonic: float
    data: bytes = b""
    closed: float | None = None

    @property
    def request(self) -> bytes | None:
        """The first line without its line end (None: no line end came)."""
        end = self.data.find(b"\n")
        return None if end < 0 else self.data[:end].removesuffix(b"\r")

    @property
    def selector(self) -> str | None:
        r = self.request
        return None if r is None else r.decode("utf-8", "surrogateescape")


@dataclass
class Logged:
    """What the servers here yield: the port and the connections so far."""

    port: int
    connections: list[Received] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def snapshot(self) -> list[Received]:
        with self._lock:
            return list(self.connections)

    def selectors(self) -> list[str]:
        return [c.selector for c in self.snapshot() if c.selector is not None]

    def times(self) -> list[float]:
        """Monotonic connection times, in order."""
        return [c.opened_monotonic for c in self.snapshot()]

    def received(self) -> bytes:
        """Every byte received, all connections together."""
        return b"".join(c.data for c in self.snapshot())


@contextmanager
def _tcp_server(answer: Callable[[bytes, int], Answer]) -> Iterator[Logged]:
    """Serve ``answer(request_line, own_port)`` on 127.0.0.1; record every connection first."""
    runner = _Loop()
    info = Logged(port=0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Received(opened=time.time(), opened_monotonic=time.monotonic())
        with info._lock:
            info.connections.append(conn)
        runner.writers.add(writer)
        try:
            data = bytearray()
            deadline = time.monotonic() + READ_DEADLINE
            while b"\n" not in data and len(data) < KEEP and time.monotonic() < deadline:
                try:
                    chunk = await asyncio.wait_for(reader.read(65536), IDLE)
                except (TimeoutError, asyncio.TimeoutError):
                    break
                if not chunk:
                    break
                data += chunk
                conn.data = bytes(data[:KEEP])
            # whatever the client sent with its line (a second line, say) is part of the record
            with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                while len(data) < KEEP and (chunk := await asyncio.wait_for(reader.read(65536), 0.05)):
                    data += chunk
            conn.data = bytes(data[:KEEP])
            line = conn.request if conn.request is not None else bytes(data)
            reply = answer(line, info.port)
            if reply is not None:
                for chunk in [reply] if isinstance(reply, bytes) else reply:
                    writer.write(chunk)
                    await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass  # the client left, or the server is stopping
        finally:
            conn.closed = time.time()
            runner.writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    try:
        info.port = runner.serve(handle, limit=KEEP)
        yield info
    finally:
        runner.stop()


def _text(body: str) -> bytes:
    return body.replace("\r\n", "\n").replace("\n", "\r\n").encode()


@contextmanager
def gopher_server(pages: Callable[[str, int], Answer], robots: str | None = ALLOW_ALL) -> Iterator[Logged]:
    """A Gopher server: ``robots.txt`` (and ``/robots.txt``) answered with ``robots`` (None: a
    type-3 error), ``caps.txt`` with a type-3 error, anything else with ``pages(selector, port)``
    (None: a type-3 error)."""

    def answer(line: bytes, port: int) -> Answer:
        selector = line.decode("utf-8", "surrogateescape")
        if selector in ("robots.txt", "/robots.txt") and robots is not None:
            return _text(robots)
        if selector in ("robots.txt", "/robots.txt", "0/robots.txt", "caps.txt"):
            return NOT_FOUND
        reply = pages(selector, port)
        return NOT_FOUND if reply is None else reply

    with _tcp_server(answer) as info:
        yield info


_DEPTH = re.compile(r"/d/([0-9]{1,6})/([0-9]{1,6})")


def trap_depth(selector: str) -> int | None:
    """The depth ``n`` of a trap selector ``/d/<n>/<i>`` (None for another selector)."""
    m = _DEPTH.fullmatch(selector)
    return int(m[1]) if m else None


@contextmanager
def gopher_trap(fan: int = 2, robots: str | None = ALLOW_ALL) -> Iterator[Logged]:
    """``/d/<n>/<i>`` (and the root, as ``/d/0/0``) is a menu of ``fan`` links to ``/d/<n+1>/<j>``."""

    def pages(selector: str, port: int) -> Answer:
        depth = 0 if selector in ("", "/") else trap_depth(selector)
        if depth is None:
            return None
        lines = [f"iLevel {depth}\tTITLE\tnull.host\t1"]
        lines += [f"1Level {depth + 1} item {j}\t/d/{depth + 1}/{j}\t{HOST}\t{port}" for j in range(fan)]
        return ("\r\n".join(lines) + "\r\n.\r\n").encode()

    with gopher_server(pages, robots) as info:
        yield info


@contextmanager
def big_menu(lines: int = 1_000_000, item_type: str = "0") -> Iterator[Logged]:
    """The root (``""`` or ``/``) is a menu of ``lines`` links to ``/item/<i>`` (streamed in
    64 KiB pieces, stopping when the client leaves); ``/item/<i>`` is one line of text."""

    def stream(port: int) -> Iterator[bytes]:
        piece: list[str] = []
        size = 0
        for i in range(lines):
            line = f"{item_type}Item {i}\t/item/{i}\t{HOST}\t{port}\r\n"
            piece.append(line)
            size += len(line)
            if size >= 65536:
                yield "".join(piece).encode()
                piece, size = [], 0
        yield ("".join(piece) + ".\r\n").encode()

    def pages(selector: str, port: int) -> Answer:
        if selector in ("", "/"):
            return stream(port)
        if selector.startswith("/item/"):
            return f"Item {selector[6:]}\r\n".encode()
        return None

    with gopher_server(pages) as info:
        yield info


HTTP_400 = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@contextmanager
def byte_logger(gopher: bool = False) -> Iterator[Logged]:
    """Records every connection and byte; answers ``400 Bad Request`` as an HTTP server would
    (``gopher``: ``robots.txt`` allows everything, anything else is an empty menu)."""
    if not gopher:
        with _tcp_server(lambda line, port: HTTP_400) as info:
            yield info
        return
    with gopher_server(lambda selector, port: b"iNothing here\tTITLE\tnull.host\t1\r\n.\r\n") as info:
        yield info


PEAKS: dict[int, int] = {}  # pid -> peak resident bytes seen by wait_measured


def wait_measured(pid: int, limit: float, what: object) -> int:
    """Wait for child ``pid`` (killed after ``limit`` s: AssertionError), sampling its peak RSS
    (``VmHWM``, the high-water mark of its own address space after exec) every 20 ms into
    ``PEAKS[pid]``; return its exit status."""
    deadline = time.monotonic() + limit
    peak = 0
    while True:
        try:
            status_text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            status_text = ""
        for line in status_text.splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]) * 1024)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            PEAKS[pid] = peak
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"still running after {limit:g} s: {what}")
        time.sleep(0.02)
