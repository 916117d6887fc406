"""Access logs as the real servers write them now: each server started on loopback, asked a few
requests (IPv6 too where it listens on ::1, a target with a terminal escape), and its log read
back with manners.watch.sources: every request found, with its client, target, status and time.

molly-brown binds every interface whatever it is told, so it runs with its client in a network
namespace of its own (``unshare -n``), as tests/test_crawl_molly.py runs it.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

from manners.watch.logs import Hit
from manners.watch.sources import LogReader
from proxy import self_signed
from servers import HOST, Listen, agate, free_port, gophernicus, jetforce, nginx, pygopherd

ESCAPE = "/nope\x1b]0;x\x07"  # a terminal escape in a target: kept raw in the record


def gemini(host: str, port: int, url: str) -> bytes:
    """One Gemini request; the answer's header line."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, port), timeout=10) as sock, \
            context.wrap_socket(sock, server_hostname="localhost") as tls:  # fmt: skip
        tls.sendall(url.encode() + b"\r\n")
        answer = b""
        while chunk := tls.recv(4096):
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


def plain(host: str, port: int, data: bytes) -> bytes:
    """Send ``data`` on one TCP connection; everything the server answers."""
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    return answer


def site(root: Path) -> Path:
    root.mkdir()
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    (root / "index.gmi").write_text("# Home\n")
    (root / "index.txt").write_text("hello\n")
    return root


def read(log: Path, expected: int, limit: float = 10.0) -> list[Hit]:
    """The requests of ``log`` once it holds ``expected`` of them (servers write after answering)."""
    deadline = time.monotonic() + limit
    while True:
        hits = list(LogReader([log]))
        if len(hits) >= expected or time.monotonic() > deadline:
            return hits
        time.sleep(0.05)


def check(hits: list[Hit], expected: list[tuple[str | None, str, str | None]], start: float,
          timed: bool = True) -> None:  # fmt: skip
    """``hits`` are the ``expected`` (client, target, status), in order, each in the time of the test."""
    assert [(h.client, h.target, h.status) for h in hits] == expected
    for hit in hits:
        if timed:
            assert hit.when is not None and start - 1 <= hit.when <= time.time() + 1, hit
        else:
            assert hit.when is None


def test_jetforce_log(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    start = time.time()
    with jetforce(site(tmp_path / "root"), log=log, host="::") as port:
        assert gemini(HOST, port, "gemini://localhost/robots.txt").startswith(b"20")
        assert gemini("::1", port, "gemini://localhost/").startswith(b"20")
        assert gemini(HOST, port, "gemini://localhost" + ESCAPE).startswith(b"51")
        hits = read(log, 3)
    check(hits, [("::ffff:127.0.0.1", "gemini://localhost/robots.txt", "20"),
                 ("::1", "gemini://localhost/", "20"),
                 ("::ffff:127.0.0.1", "gemini://localhost" + ESCAPE, "51")], start)  # fmt: skip
    assert {h.host for h in hits} == {"localhost"}


def test_agate_log(tmp_path: Path) -> None:
    log = tmp_path / "agate.log"
    start = time.time()
    with agate(site(tmp_path / "root"), log, ipv6=True) as port:
        assert gemini(HOST, port, "gemini://localhost/robots.txt").startswith(b"20")
        assert gemini("::1", port, "gemini://localhost/").startswith(b"20")
        assert gemini(HOST, port, "gemini://localhost" + ESCAPE).startswith(b"51")
        hits = read(log, 3)
    reader = LogReader([log])
    list(reader)
    assert reader.files[0].format == "agate" and reader.files[0].noise >= 1  # its "Started listener"
    check(hits, [("127.0.0.1", "gemini://localhost/robots.txt", "20"), ("::1", "gemini://localhost/", "20"),
                 ("127.0.0.1", "gemini://localhost" + ESCAPE, "51")], start)  # fmt: skip


def test_gophernicus_log(tmp_path: Path) -> None:
    log = tmp_path / "gophernicus.log"
    start = time.time()
    with gophernicus(site(tmp_path / "root"), options=["-l", str(log)]) as port:
        assert plain(HOST, port, b"robots.txt\r\n").startswith(b"User-agent")
        assert plain(HOST, port, b"/index.txt\r\n").startswith(b"hello")
        assert plain(HOST, port, ESCAPE.encode() + b"\r\n").startswith(b"Error")
        hits = read(log, 3)
    hits = [h for h in hits if h.target != "/"]  # the helper's own readiness probes ask for the root
    check(hits, [("127.0.0.1", "/robots.txt", "200"), ("127.0.0.1", "/index.txt", "200"),
                 ("127.0.0.1", ESCAPE, "404")], start)  # fmt: skip
    assert {h.host for h in hits} == {f"{HOST}:{port}"}


def test_pygopherd_log(tmp_path: Path) -> None:
    log = tmp_path / "pygopherd.log"
    with pygopherd(site(tmp_path / "root"), log=log) as port:
        assert plain(HOST, port, b"robots.txt\r\n").startswith(b"User-agent")
        assert plain(HOST, port, b"/index.txt\r\n").startswith(b"hello")
        assert plain(HOST, port, ESCAPE.encode() + b"\r\n").startswith(b"3")
        hits = read(log, 3)
    reader = LogReader([log])
    list(reader)
    assert reader.files[0].format == "pygopherd" and reader.unparsed == 0
    hits = [h for h in hits if h.target != "/"]  # the helper's readiness probes
    check(hits, [("127.0.0.1", "/robots.txt", None), ("127.0.0.1", "/index.txt", None),
                 ("127.0.0.1", ESCAPE, None)], 0, timed=False)  # fmt: skip


def test_nginx_combined_log(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    port = free_port()
    body = f"listen [::1]:{port};\naccess_log {log} combined;"
    start = time.time()
    with nginx([body], site(tmp_path / "root"), listen=[Listen(HOST, port)]):
        agent = b"Evil\x1b[31mbot/1.0"
        plain(HOST, port, b"GET /robots.txt HTTP/1.0\r\nUser-Agent: " + agent + b"\r\n\r\n")
        plain("::1", port, b"GET /index.txt HTTP/1.0\r\nUser-Agent: Six/1\r\n\r\n")
        plain(HOST, port, b"GET /private/caf\xc3\xa9?a=%1B HTTP/1.0\r\n\r\n")
        hits = read(log, 3)
    check(hits, [("127.0.0.1", "/robots.txt", "200"), ("::1", "/index.txt", "200"),
                 ("127.0.0.1", "/private/café?a=%1B", "404")], start)  # fmt: skip
    assert [h.agent for h in hits] == [agent.decode(), "Six/1", None]


_MOLLY_CLIENT = """\
import socket, ssl, subprocess, sys, time
config, out, log = sys.argv[1:]
server = subprocess.Popen(["molly-brown", "-c", config], stdout=open(out, "wb"), stderr=subprocess.STDOUT)
def gemini(host, url):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, 1965), timeout=10) as sock:
        with context.wrap_socket(sock, server_hostname="localhost") as tls:
            tls.sendall(url.encode() + b"\\r\\n")
            print(tls.recv(100).split(b"\\r\\n")[0].decode(), flush=True)
try:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", 1965), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.05)
    gemini("127.0.0.1", "gemini://localhost/robots.txt")
    gemini("::1", "gemini://localhost/")
    gemini("127.0.0.1", "gemini://localhost/private/x?q=1")
    gemini("127.0.0.1", "gemini://localhost/nope\\x1b]0;x")
    deadline = time.monotonic() + 10  # molly-brown logs after answering: its last line, before it stops
    while time.monotonic() < deadline:
        try:
            if b"\\t59\\t" in open(log, "rb").read():
                break
        except OSError:
            pass
        time.sleep(0.05)
finally:
    server.terminate()
    server.wait(10)
"""


def test_molly_brown_log(tmp_path: Path) -> None:
    root = site(tmp_path / "root")
    self_signed(tmp_path)  # cert.pem and key.pem for CN=localhost
    log = tmp_path / "access.log"
    config = tmp_path / "molly.conf"
    config.write_text(
        f'Port = 1965\nHostname = "localhost"\nCertPath = "{tmp_path / "cert.pem"}"\n'
        f'KeyPath = "{tmp_path / "key.pem"}"\nDocBase = "{root}"\nAccessLog = "{log}"\n'
        f'ErrorLog = "{tmp_path / "error.log"}"\n'
    )
    client = tmp_path / "client.py"
    client.write_text(_MOLLY_CLIENT)
    start = time.time()
    cmd = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", sys.executable, str(client),
           str(config), str(tmp_path / "molly.out"), str(log)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["20 text/plain; charset=utf-8", "20 text/gemini", "51 Not found!",
                                        "59 Error parsing URL!"]  # fmt: skip
    # the client's first connection, only to see molly-brown listen, is logged "40 -": no request
    check(read(log, 4), [("127.0.0.1", "gemini://localhost/robots.txt", "20"),
                         ("::1", "gemini://localhost/", "20"),
                         ("127.0.0.1", "gemini://localhost/private/x?q=1", "51"),
                         ("127.0.0.1", "-", "59")], start)  # fmt: skip
