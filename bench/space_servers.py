"""The servers of the bench's small net: one asyncio process answers Gemini and Gopher for many hosts.

No real server answers for 4,000 names on 4,000 addresses with a latency and a fault of each
host's own, so these are purpose-built: a process rebuilds the ``Space`` from its parameters,
takes every ``shards``-th host, listens on each one's address (1965 for a capsule, 70 for a
hole; a dead host's address is left closed) and makes each page's bytes when asked.

Latency: a connection waits one round trip (the host's ``rtt`` over the time factor) once it
is set up (TCP and TLS: asyncio's own handshake), and another between the request and the
answer.

Every request is logged, tab-separated, one line each, so the checks read what the servers
saw, not what the crawler says it did: the time the connection's first bytes (a TLS ClientHello,
a Gopher selector) reached the host's socket, the time the request line was read, the time the
answer was sent and the connection closed, the host, the peer, the scheme, the request, the
status and the bytes sent.

The first time is the kernel's (``SO_TIMESTAMPNS``, read with ``MSG_PEEK`` before the bytes are
handed to TLS), not when this process got round to the connection: with 4,400 hosts on the core
the crawler leaves, a server's loop may accept a connection tens of milliseconds after it came,
and the one after it on time, so that two requests a spacing apart on the wire looked closer
than it in the log.  The client sends its first bytes as soon as the connection is set up.

    python bench/space_servers.py SEED CAPSULES HOLES CAP FACTOR SHARD SHARDS CERTS LOG READY
"""

from __future__ import annotations

import asyncio
import resource
import signal
import socket
import ssl
import struct
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from space_model import CLOSED, TRAP_PATH, Host, Space, build

ROBOTS_SELECTOR = "/robots.txt"  # where a hole keeps robots.txt (the crawler tries robots.txt first)
READ_TIMEOUT = 10.0
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's; Python's socket module does not name it


def filler(size: int = 1_200_000) -> bytes:
    """Words to pad pages with, the same in every process."""
    import random

    rng = random.Random(0)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(2, 10)))
        for _ in range(2000)
    ]
    out, n = [], 0
    while n < size:
        line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out).encode()


FILLER = filler()


def pad(head: bytes, size: int, offset: int) -> bytes:
    need = max(0, size - len(head))
    start = offset % (len(FILLER) - need - 1) if need < len(FILLER) - 1 else 0
    return head + FILLER[start : start + need]


class Answers:
    """What a host says to a request; ``asked`` holds the pages that already had their ``44``."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.slowed: set[tuple[int, int]] = set()

    def gemini(self, host: Host, line: str) -> tuple[str, bytes | None]:
        """(status, bytes to send); None: close without a word."""
        try:
            parts = urlsplit(line)
        except ValueError:
            return "59", b"59 bad request\r\n"
        if parts.scheme != "gemini" or (parts.hostname or "") != host.name:
            return "53", b"53 no proxying\r\n"
        path = parts.path or "/"
        if path == "/robots.txt":
            if host.robots_answer == "file":
                return "20", b"20 text/plain\r\n" + (host.robots_text or "").encode()
            if host.robots_answer == "missing":
                return "51", b"51 not found\r\n"
            if host.robots_answer == "40":
                return "40", b"40 temporary failure\r\n"
            return "-", None
        if host.fault == "trap" and path.startswith(TRAP_PATH):
            tail = path[len(TRAP_PATH) :]
            if tail.isdigit():
                n = int(tail)
                links = "".join(f"=> {u} on\n" for u in self.space.trap_links(host, n))
                return "20", f"20 text/gemini\r\n# day {n}\n{links}".encode()
        i = self.space.page_of(host, path)
        if i is None:
            return "51", b"51 not found\r\n"
        target = self.space.redirect(host, i)
        if target is not None:
            return "31", f"31 {target}\r\n".encode()
        wait = self.space.slow_down(host, i)
        if wait is not None and (host.index, i) not in self.slowed:
            self.slowed.add((host.index, i))
            return "44", f"44 {wait}\r\n".encode()
        links = "".join(f"=> {u} link {k}\n" for k, u in enumerate(self.space.links(host, i)))
        head = f"20 text/gemini\r\n# {host.name} page {i}\n\n{links}\n".encode()
        return "20", pad(head, self.space.size(host, i), host.index * 7919 + i)

    def gopher(self, host: Host, line: str) -> tuple[str, bytes | None]:
        selector = line.split("\t", 1)[0]
        missing = f"3'{selector}' does not exist (no handler found)\t\terror.host\t1\r\n.\r\n".encode()
        if selector in ("robots.txt", "/robots.txt", "0/robots.txt"):
            if host.robots_answer == "file" and selector == ROBOTS_SELECTOR:
                return "0", (host.robots_text or "").replace("\n", "\r\n").encode() + b".\r\n"
            if host.robots_answer == "silent":
                return "-", None
            return "3", missing
        i = self.space.page_of(host, selector)
        if i is None:
            return "3", missing
        size = self.space.size(host, i)
        if not self.space.is_menu(host, i):
            return "0", pad(f"{host.name} file {i}\n\n".encode(), size, host.index * 7919 + i) + b".\r\n"
        lines = [f"i{host.name} menu {i}\t\terror.host\t1\r\n"]
        for url in self.space.links(host, i):
            p = urlsplit(url)
            kind, sel = p.path[1:2], p.path[2:]
            lines.append(f"{kind}{sel or '/'}\t{sel}\t{p.hostname}\t{p.port or 70}\r\n")
        body = "".join(lines).encode()
        info = pad(b"", max(0, size // 8 - len(body)), i).decode()
        body += "".join(f"i{t}\t\terror.host\t1\r\n" for t in info.splitlines()).encode()
        return "1", body + b".\r\n"


class Server:
    def __init__(self, space: Space, hosts: list[Host], certs: Path, log: Path) -> None:
        self.space = space
        self.hosts = hosts
        self.certs = certs
        self.answers = Answers(space)
        self.log = open(log, "a", buffering=1 << 20)  # noqa: SIM115 (closed in run)
        self.contexts: dict[str, ssl.SSLContext] = {}
        self.factor = space.factor
        self.tasks: set[asyncio.Task[None]] = set()

    def context(self, host: Host) -> ssl.SSLContext:
        ctx = self.contexts.get(host.name)
        if ctx is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            suffix = ".expired.pem" if host.fault == "expired" else ".pem"
            ctx.load_cert_chain(self.certs / f"{host.name}{suffix}", self.certs / "key.pem")
            self.contexts[host.name] = ctx
        return ctx

    def note(
        self, accepted: float, asked: float, host: Host, peer: str, request: str, status: str, sent: int
    ) -> None:
        request = request.replace("\t", "\\t")
        self.log.write(
            f"{accepted:.6f}\t{asked:.6f}\t{time.time():.6f}\t{host.name}\t{peer}\t{host.scheme}"
            f"\t{request}\t{status}\t{sent}\n"
        )

    async def serve(
        self, host: Host, accepted: float, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Answer one connection; ``accepted``: when its first bytes came (before a TLS handshake)."""
        peer_info = writer.get_extra_info("peername")
        peer = f"{peer_info[0]}:{peer_info[1]}" if peer_info else "?"
        delay = host.rtt / self.factor
        asked, request, status, sent = accepted, "", CLOSED, 0  # closed (or cut) before its request
        try:
            await asyncio.sleep(delay)  # the TLS handshake is done (asyncio's): its round trip
            raw = await asyncio.wait_for(reader.readline(), READ_TIMEOUT)
            asked = time.time()
            request = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not raw.endswith(b"\n"):  # the client went (killed) before its request was whole
                return
            status = "-"
            await asyncio.sleep(delay)
            if host.scheme == "gemini":
                status, data = self.answers.gemini(host, request)
            else:
                status, data = self.answers.gopher(host, request)
            if data is not None:
                writer.write(data)
                await writer.drain()
                sent = len(data)
        except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
            status = f"{status}:{type(exc).__name__}"
        finally:
            writer.close()
            self.note(accepted, asked, host, peer, request, status, sent)

    async def run(self, ready: Path) -> None:
        loop = asyncio.get_running_loop()
        listeners = []
        for host in self.hosts:
            if host.fault == "dead":
                continue
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)  # the connections accepted inherit it
            sock.bind((host.address, host.port))
            sock.listen(64)
            sock.setblocking(False)
            loop.add_reader(sock.fileno(), self._accept, sock, host)
            listeners.append(sock)
        ready.write_text(f"{len(listeners)}\n")
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        flusher = asyncio.ensure_future(self.flush())
        await stop.wait()
        flusher.cancel()
        for sock in listeners:
            loop.remove_reader(sock.fileno())
            sock.close()
        self.log.flush()
        self.log.close()

    def _accept(self, listener: socket.socket, host: Host) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors, say: wait a second for some to close, as asyncio does
                loop.remove_reader(listener.fileno())
                loop.call_later(1.0, loop.add_reader, listener.fileno(), self._accept, listener, host)
                return
            conn.setblocking(False)
            timer = loop.call_later(READ_TIMEOUT, self._silent, conn, host)
            loop.add_reader(conn.fileno(), self._first_bytes, conn, host, timer)

    def _silent(self, conn: socket.socket, host: Host) -> None:
        """A connection that sent nothing for ``READ_TIMEOUT``: closed, as one that asked nothing."""
        asyncio.get_running_loop().remove_reader(conn.fileno())
        self._closed_unasked(conn, host, time.time())

    def _closed_unasked(self, conn: socket.socket, host: Host, at: float) -> None:
        try:
            peer = "{}:{}".format(*conn.getpeername())
        except OSError:
            peer = "?"
        conn.close()
        self.note(at, at, host, peer, "", CLOSED, 0)

    def _first_bytes(self, conn: socket.socket, host: Host, timer: asyncio.TimerHandle) -> None:
        """The connection's first bytes are in (a TLS ClientHello, a Gopher selector): stamp it with
        the time the kernel received them, not the time this process got round to it, and answer."""
        try:
            data, ancillary, _, _ = conn.recvmsg(1, socket.CMSG_SPACE(16), socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return  # woken for nothing: still waiting
        except OSError:
            data, ancillary = b"", []
        loop = asyncio.get_running_loop()
        loop.remove_reader(conn.fileno())
        timer.cancel()
        arrived = time.time()
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= 16:
                seconds, nanoseconds = struct.unpack("qq", value[:16])
                arrived = seconds + nanoseconds / 1e9
        if not data:  # closed before a byte came (the client killed)
            self._closed_unasked(conn, host, arrived)
            return
        task = asyncio.ensure_future(self._answer(conn, host, arrived))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _answer(self, conn: socket.socket, host: Host, arrived: float) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        protocol = asyncio.StreamReaderProtocol(reader, lambda r, w: self.serve(host, arrived, r, w))
        tls = self.context(host) if host.scheme == "gemini" else None
        try:
            await loop.connect_accepted_socket(
                lambda: protocol, conn, ssl=tls, ssl_handshake_timeout=READ_TIMEOUT if tls else None
            )
        except (OSError, ssl.SSLError, ConnectionError, asyncio.TimeoutError):
            conn.close()  # a handshake the client gave up (an expired certificate): nothing asked, as before

    async def flush(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            self.log.flush()


def main() -> None:
    seed, capsules, holes, cap, factor, shard, shards, certs, log, ready = sys.argv[1:]
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    space = build(int(seed), int(capsules), int(holes), cap=int(cap) or None, factor=float(factor))
    mine = [h for h in space.hosts if h.index % int(shards) == int(shard)]
    asyncio.run(Server(space, mine, Path(certs), Path(log)).run(Path(ready)))


if __name__ == "__main__":
    main()
