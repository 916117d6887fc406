"""The real servers of tests/servers.py start, serve a file, and leave no process behind."""

from __future__ import annotations

import gzip
import os
import socket
import ssl
from pathlib import Path

import pytest

import servers

TIMEOUT = 5.0
ROBOTS = "User-agent: *\nDisallow: /private\n\nUser-agent: veronica\nDisallow: /\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "robots.txt").write_text(ROBOTS)
    (site / "docs").mkdir()
    return site


# --------------------------------------------------------------------------- helpers


def _processes() -> list[tuple[int, int, int, str]]:
    """(pid, ppid, pgrp, state) of every process, from /proc."""
    result = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
        result.append((int(entry.name), int(ppid), int(pgrp), state))
    return result


def _server_groups() -> set[int]:
    """Process groups led by children of this process that run in a group of their own."""
    me, mine = os.getpid(), os.getpgrp()
    return {pgrp for _, ppid, pgrp, state in _processes() if ppid == me and pgrp != mine and state != "Z"}


def _assert_gone(pgid: int, ports: list[int]) -> None:
    alive = [(pid, state) for pid, _, pgrp, state in _processes() if pgrp == pgid and state != "Z"]
    assert alive == [], f"processes left behind in group {pgid}: {alive}"
    assert servers.group_members(pgid) == []
    for port in ports:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((servers.HOST, port), timeout=TIMEOUT).close()


def _started_group(before: set[int]) -> int:
    """The one process group started since ``before`` was taken."""
    groups = _server_groups() - before
    assert len(groups) == 1, f"expected one new server process group, found {groups}"
    (pgid,) = groups
    return pgid


def _exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection((servers.HOST, port), timeout=TIMEOUT) as sock:
        sock.settimeout(TIMEOUT)
        sock.sendall(request)
        return _read_to_eof(sock)


def _read_to_eof(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _http_get(
    port: int, path: str, *, version: str = "1.0", headers: str = ""
) -> tuple[int, dict[str, str], bytes]:
    request = f"GET {path} HTTP/{version}\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n"
    response = _exchange(port, request.encode("ascii"))
    head, sep, body = response.partition(b"\r\n\r\n")
    assert sep, f"no end of headers in {response!r}"
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), fields, body


def _dechunk(body: bytes) -> bytes:
    out = b""
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return out
        out += body[:size]
        assert body[size : size + 2] == b"\r\n"
        body = body[size + 2 :]


# --------------------------------------------------------------------------- tests


def test_free_port_is_bindable() -> None:
    port = servers.free_port()
    assert 0 < port < 65536
    with socket.socket() as sock:
        sock.bind((servers.HOST, port))


def test_nginx_serves_file_and_404(root: Path) -> None:
    before = _server_groups()
    with servers.nginx(["", "location = /robots.txt { return 404; }"], root) as ports:
        pgid = _started_group(before)
        assert len(ports) == 2
        assert ports[0] != ports[1]
        status, fields, body = _http_get(ports[0], "/robots.txt")
        assert status == 200
        assert fields["content-type"].startswith("text/plain")
        assert body == ROBOTS.encode()
        status, _, _ = _http_get(ports[1], "/robots.txt")
        assert status == 404
        status, _, _ = _http_get(ports[0], "/nonexistent.txt")
        assert status == 404
    _assert_gone(pgid, ports)


def test_nginx_gzips_text_plain(root: Path) -> None:
    before = _server_groups()
    with servers.nginx([""], root) as ports:
        pgid = _started_group(before)
        status, fields, body = _http_get(
            ports[0], "/robots.txt", version="1.1", headers="Accept-Encoding: gzip\r\n"
        )
        assert status == 200
        assert fields.get("content-encoding") == "gzip"
        if fields.get("transfer-encoding") == "chunked":
            body = _dechunk(body)
        assert gzip.decompress(body) == ROBOTS.encode()
    _assert_gone(pgid, ports)


def test_nginx_bad_config_fails_loudly(root: Path) -> None:
    before = _server_groups()
    with pytest.raises(servers.ServerFailed) as info, servers.nginx(["no_such_directive on;"], root):
        pass
    message = str(info.value)
    assert "nginx" in message
    assert "-c" in message  # the command
    assert "no_such_directive" in message  # nginx's own complaint
    assert _server_groups() == before


def test_missing_executable_names_package(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(servers, "SEARCH_DIRS", [root])
    monkeypatch.setenv("PATH", str(root))
    with pytest.raises(servers.ServerFailed, match="nginx-light"), servers.nginx([""], root):
        pass
    with pytest.raises(servers.ServerFailed, match="PyPI package jetforce"), servers.jetforce(root):
        pass


def test_port_taken_by_another_program_is_not_a_started_server(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _server_groups()
    with socket.socket() as stranger:
        stranger.bind((servers.HOST, 0))
        stranger.listen()
        monkeypatch.setattr(servers, "free_port", lambda: stranger.getsockname()[1])
        with pytest.raises(servers.ServerFailed, match="Address already in use"), servers.gophernicus(root):
            pass
    assert _server_groups() == before


def test_gophernicus_serves_file(root: Path) -> None:
    before = _server_groups()
    with servers.gophernicus(root) as port:
        pgid = _started_group(before)
        data = _exchange(port, b"robots.txt\r\n")
        assert data == ROBOTS.replace("\n", "\r\n").encode()
    _assert_gone(pgid, [port])


def test_pygopherd_serves_file(root: Path) -> None:
    before = _server_groups()
    with servers.pygopherd(root) as port:
        pgid = _started_group(before)
        data = _exchange(port, b"robots.txt\r\n")
        assert data == ROBOTS.encode()
        menu = _exchange(port, b"\r\n")
        assert menu.startswith(b"1docs\t/docs\t127.0.0.1\t" + str(port).encode())
        assert b"robots.txt" not in menu
    _assert_gone(pgid, [port])
    assert sorted(p.name for p in root.iterdir()) == ["docs", "robots.txt"]


def test_jetforce_serves_file(root: Path) -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    before = _server_groups()
    with servers.jetforce(root) as port:
        pgid = _started_group(before)
        with (
            socket.create_connection((servers.HOST, port), timeout=TIMEOUT) as raw,
            context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.settimeout(TIMEOUT)
            tls.sendall(b"gemini://localhost/robots.txt\r\n")
            response = _read_to_eof(tls)
        header, sep, body = response.partition(b"\r\n")
        assert sep
        assert header.startswith(b"20 text/plain"), header
        assert body == ROBOTS.encode()
    _assert_gone(pgid, [port])
