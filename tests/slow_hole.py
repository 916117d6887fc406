"""A Gopher server whose pages take their time: for leases renewed under a long fetch, and for
one request at a time per host across a fleet.  robots.txt is answered at once; every other
selector after ``delay`` seconds, as a menu of ``items`` text files.  Each request is recorded
with when it arrived and when its answer was written, from the server's side."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from proxy import _Loop

ALLOW_ALL = "User-agent: *\r\nDisallow:\r\n"


@dataclass(frozen=True)
class Request:
    selector: str
    start: float  # time.time() when the request line arrived
    end: float | None  # when the answer was written; None: never (the client went away first)


@dataclass
class Hole:
    port: int = 0
    delay: float = 0.0
    robots: str = ALLOW_ALL
    menu: str = ""
    _requests: list[Request] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def selectors(self) -> list[str]:
        return [r.selector for r in self.requests]

    def times(self) -> list[float]:
        return [r.start for r in self.requests]

    def _record(self, request: Request, replacing: Request | None = None) -> None:
        with self._lock:
            if replacing is not None:
                self._requests[self._requests.index(replacing)] = request
            else:
                self._requests.append(request)


@contextmanager
def slow_hole(delay: float, robots: str = ALLOW_ALL, items: int = 0, kind: str = "0") -> Iterator[Hole]:
    """The server on 127.0.0.1, in a thread; yields it once it listens.  Its menu lists ``items``
    of item type ``kind`` (each a menu too, the same one, if "1")."""
    hole = Hole(delay=delay, robots=robots)
    loop = _Loop()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop.writers.add(writer)
        try:
            selector = (await reader.readline()).rstrip(b"\r\n").decode("utf-8", "replace")
            started = Request(selector, time.time(), None)
            hole._record(started)
            if "robots.txt" in selector:
                answer = hole.robots.encode() + b".\r\n"
            elif selector == "caps.txt":
                answer = b"3no caps.txt here\t\terror.host\t1\r\n"
            else:
                await asyncio.sleep(hole.delay)
                answer = hole.menu.encode() + b"iend\t\terror.host\t1\r\n.\r\n"
            writer.write(answer)
            await writer.drain()
            hole._record(Request(selector, started.start, time.time()), replacing=started)
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            loop.writers.discard(writer)

    try:
        hole.port = loop.serve(handle)
        hole.menu = "".join(f"{kind}item {i}\t/item{i}\t127.0.0.1\t{hole.port}\r\n" for i in range(items))
        yield hole
    finally:
        loop.stop()
