"""Servers that misbehave in ways no real server does on demand: each fetch ends on
its table's outcome, within its deadline, with no exception escaping."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct
import time
from collections.abc import Awaitable, Callable, Iterator

import pytest

import manners
from proxy import self_signed

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
TIMEOUT = 3.0  # the whole-fetch deadline the tests give
SLACK = 1.5  # scheduling slack on a loaded machine


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ssl.SSLContext]]:
    """Two self-signed server certificates for CN=localhost (two, to see TOFU notice a change)."""
    yield [self_signed(tmp_path_factory.mktemp(f"cert{n}")) for n in range(2)]


async def fetch_from(handler: Handler, url: str, tls: ssl.SSLContext | None = None, **kw: object):  # type: ignore[no-untyped-def]
    async def quiet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            await handler(reader, writer)  # the client hanging up is what some tests are about

    server = await asyncio.start_server(quiet, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    start = time.monotonic()
    try:
        result = await manners.fetch_robots(url.format(port=port), timeout=TIMEOUT, **kw)  # type: ignore[arg-type]
    finally:
        server.close()
    return result, time.monotonic() - start


def fetch(handler: Handler, url: str, tls: ssl.SSLContext | None = None, **kw: object):  # type: ignore[no-untyped-def]
    return asyncio.run(fetch_from(handler, url, tls, **kw))


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST, as a crashed server does."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def forever() -> None:
    await asyncio.sleep(3600)


# -- HTTP --------------------------------------------------------------------------


def test_http_slowloris_ends_at_the_total_deadline() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nUser-agent: *\n")
        for _ in range(100):
            await writer.drain()
            await asyncio.sleep(0.5)  # always inside the read deadline, never done
            writer.write(b"#")

    r, took = fetch(handler, "http://127.0.0.1:{port}/")
    assert (r.outcome, r.status) == ("unreachable", "timeout")
    assert TIMEOUT - 0.1 <= took < TIMEOUT + SLACK
    assert not r.robots.allowed("/")


def test_http_never_closing_body_ends_at_the_deadline() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nUser-agent: *\nDisallow: /\n")
        await writer.drain()
        await forever()

    r, took = fetch(handler, "http://127.0.0.1:{port}/")
    assert (r.outcome, r.status) == ("unreachable", "timeout") and took < TIMEOUT + SLACK


def test_http_silent_server_ends_at_the_deadline() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await forever()

    r, took = fetch(handler, "http://127.0.0.1:{port}/")
    assert (r.outcome, r.status) == ("unreachable", "timeout") and took < TIMEOUT + SLACK


def test_http_reset_mid_body_is_unreachable() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\nUser-agent: *\nDisallow: /a\n")
        await writer.drain()
        await asyncio.sleep(0.2)
        reset(writer)

    r, took = fetch(handler, "http://127.0.0.1:{port}/")
    assert r.outcome == "unreachable" and r.status in ("connection-reset", "protocol-error")
    assert took < TIMEOUT and not r.robots.allowed("/b")  # half a file is no file


def test_http_20_mb_body_is_cut_at_max_bytes() -> None:
    sent = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        await reader.readline()
        line = b"Disallow: /private" + b"x" * 45 + b"\n"  # 64 bytes
        size = 20 * 1024 * 1024
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\nUser-agent: *\n" % (size + 14))
        for _ in range(size // (64 * 1024)):
            writer.write(line * 1024)
            sent += 64 * 1024
            await writer.drain()

    r, took = fetch(handler, "http://127.0.0.1:{port}/", max_bytes=100_000)
    assert (r.outcome, r.status, r.truncated, len(r.body)) == ("ok", 200, True, 100_000)
    assert sent < 10 * 1024 * 1024, "the transfer was not stopped"
    assert not r.robots.allowed("/private" + "x" * 45 + "/page") and took < TIMEOUT


def test_https_to_a_plain_server_is_a_tls_failure() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)
        writer.write(b"HTTP/1.0 400 Bad Request\r\n\r\n")
        await writer.drain()
        writer.close()

    r, _ = fetch(handler, "https://127.0.0.1:{port}/")
    assert (r.outcome, r.status) == ("unreachable", "tls-error")


@pytest.mark.quick
def test_refused_connection_is_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        for scheme in ("http", "gemini", "gopher"):
            r = asyncio.run(manners.fetch_robots(f"{scheme}://127.0.0.1:{port}/", timeout=TIMEOUT))
            assert (r.outcome, r.status) == ("unreachable", "connection-refused"), scheme


# -- Gemini ------------------------------------------------------------------------


def gemini_server(answer: bytes, then: Callable[[], Awaitable[None]] | None = None) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readline()
        assert request.startswith(b"gemini://localhost:") and request.endswith(b"/robots.txt\r\n")
        writer.write(answer)
        await writer.drain()
        if then is not None:
            await then()
        writer.close()

    return handler


def test_gemini_slow_down_is_retry(certs: list[ssl.SSLContext]) -> None:
    r, took = fetch(gemini_server(b"44 30\r\n"), "gemini://localhost:{port}/", certs[0])
    assert (r.outcome, r.status, r.retry_after) == ("retry", 44, 30.0) and took < TIMEOUT
    assert not r.robots.allowed("gemini://localhost/")


@pytest.mark.parametrize(
    "answer", [b"hello\r\n", b"HTTP/1.1 200 OK\r\n\r\n", b"2 text/plain\r\n", b"x" * 3000]
)
def test_gemini_invalid_header_is_unreachable(certs: list[ssl.SSLContext], answer: bytes) -> None:
    r, _ = fetch(gemini_server(answer), "gemini://localhost:{port}/", certs[0])
    assert (r.outcome, r.status) == ("unreachable", "malformed-header")


def test_gemini_header_that_never_ends(certs: list[ssl.SSLContext]) -> None:
    r, took = fetch(gemini_server(b"20 text/pl", forever), "gemini://localhost:{port}/", certs[0])
    assert (r.outcome, r.status) == ("unreachable", "timeout") and took < TIMEOUT + SLACK


def test_gemini_slowloris_body(certs: list[ssl.SSLContext]) -> None:
    async def drip() -> None:
        await asyncio.sleep(3600)

    r, took = fetch(gemini_server(b"20 text/plain\r\nUser-agent: *\n", drip), "gemini://localhost:{port}/",
                    certs[0])  # fmt: skip
    assert (r.outcome, r.status) == ("unreachable", "timeout") and took < TIMEOUT + SLACK


def test_gemini_tls_handshake_failure() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(10)
        writer.write(b"this is no TLS server\r\n")
        await writer.drain()
        writer.close()

    r, took = fetch(handler, "gemini://localhost:{port}/")
    assert (r.outcome, r.status) == ("unreachable", "tls-error") and took < TIMEOUT


def test_gemini_redirect_loop_and_limit(certs: list[ssl.SSLContext]) -> None:
    r, _ = fetch(gemini_server(b"31 /robots.txt\r\n"), "gemini://localhost:{port}/", certs[0])
    assert r.outcome == "unavailable" and len(r.redirects) == 5 and "more than 5 redirects" in r.meaning


def test_gemini_certificate_change_is_reported(certs: list[ssl.SSLContext]) -> None:
    known: dict[str, str] = {}
    ok = gemini_server(b"20 text/plain\r\nUser-agent: *\nDisallow: /x\n")

    async def both() -> tuple[manners.FetchResult, manners.FetchResult, manners.FetchResult]:
        server = await asyncio.start_server(ok, "127.0.0.1", 0, ssl=certs[0])
        port = server.sockets[0].getsockname()[1]
        url = f"gemini://localhost:{port}/"
        first = await manners.fetch_robots(url, timeout=TIMEOUT, known_hosts=known)
        again = await manners.fetch_robots(url, timeout=TIMEOUT, known_hosts=known)
        server.close()
        await server.wait_closed()
        server = await asyncio.start_server(ok, "127.0.0.1", port, ssl=certs[1])
        other = await manners.fetch_robots(url, timeout=TIMEOUT, known_hosts=known)
        server.close()
        return first, again, other

    first, again, other = asyncio.run(both())
    assert first.outcome == again.outcome == other.outcome == "ok"
    assert first.fingerprint == again.fingerprint and len(first.fingerprint or "") == 64
    assert not first.fingerprint_changed and not again.fingerprint_changed
    assert other.fingerprint != first.fingerprint and other.fingerprint_changed


# -- Gopher ------------------------------------------------------------------------


def test_gopher_never_closing_ends_at_the_deadline() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"User-agent: *\r\nDisallow: /\r\n")
        await writer.drain()
        await forever()

    r, took = fetch(handler, "gopher://127.0.0.1:{port}/")
    assert (r.outcome, r.status) == ("unreachable", "timeout") and took < TIMEOUT + SLACK


def test_gopher_20_mb_is_cut() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"User-agent: *\r\n")
        for _ in range(20 * 16):
            writer.write(b"Disallow: /x\r\n" * 4681)  # 64 KiB
            await writer.drain()
        writer.close()

    r, took = fetch(handler, "gopher://127.0.0.1:{port}/", max_bytes=50_000)
    assert (r.outcome, r.truncated, len(r.body)) == ("ok", True, 50_000) and took < TIMEOUT
    assert not r.robots.allowed("gopher://h/0/x")


def test_gopher_tries_each_selector_then_gives_up() -> None:
    asked: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        asked.append(await reader.readline())
        writer.write(b"3 not found\t\terror.host\t1\r\n.\r\n" if len(asked) < 3 else b"")
        await writer.drain()
        writer.close()

    r, _ = fetch(handler, "gopher://127.0.0.1:{port}/")
    assert asked == [b"robots.txt\r\n", b"/robots.txt\r\n", b"0/robots.txt\r\n"]
    assert (r.outcome, r.status) == ("unavailable", "gopher-error") and r.robots.allowed("gopher://h/1/x")


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout"):
        asyncio.run(manners.fetch_robots("http://127.0.0.1/", timeout=0))


# -- the resolver ---------------------------------------------------------------------


def test_a_host_name_is_resolved_once_and_asked_again_when_nothing_answers() -> None:
    """A crawler asks for one host thousands of times: the resolver is asked once per
    RESOLVED_TTL, and again at once when none of the host's addresses accepts a connection."""
    from manners.fetch import net

    async def main() -> None:
        loop = asyncio.get_running_loop()
        asked: list[str] = []
        real = loop.getaddrinfo

        async def counting(host: str, port: int, **kw: object):  # type: ignore[no-untyped-def]
            asked.append(host)
            return await real(host, port, **kw)  # type: ignore[arg-type]

        loop.getaddrinfo = counting  # type: ignore[method-assign]

        async def menu(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readline()
            writer.write(b"User-agent: *\r\nDisallow: /private\r\n")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(menu, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        net._RESOLVED.clear()
        try:
            for _ in range(3):
                r = await manners.fetch_robots(f"gopher://localhost:{port}/", timeout=TIMEOUT)
                assert r.status == "gopher-ok" and not r.robots.allowed("/private/x")
            assert asked == ["localhost"]
        finally:
            server.close()
            await server.wait_closed()
        r = await manners.fetch_robots(f"gopher://localhost:{port}/", timeout=TIMEOUT)
        assert r.status == "connection-refused"
        assert ("localhost", port) not in net._RESOLVED
        await manners.fetch_robots(f"gopher://localhost:{port}/", timeout=TIMEOUT)
        assert asked == ["localhost", "localhost"]

    asyncio.run(main())
