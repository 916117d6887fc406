"""The crawl tests' own plumbing works: the generated site served by the real servers, through the
logging proxies, the CGI scripts, the ground truth, and the fault servers."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import servers
import smallnet_site
from proxy import fault_server
from smallnet_site import ARCHIVER, INDEXER, Running

DEADLINE = 5.0


def gopher(port: int, selector: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as sock:
        sock.sendall(selector.encode() + b"\r\n")
        out = b""
        while data := sock.recv(65536):
            out += data
    return out


def gemini(port: int, url: str) -> bytes:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost") as sock,
    ):
        sock.sendall(url.encode() + b"\r\n")
        out = b""
        while data := sock.recv(65536):
            out += data
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with smallnet_site.running(tmp_path_factory.mktemp("site")) as running:
        yield running


def test_both_gopher_servers_serve_the_hole_through_the_proxy(run: Running) -> None:
    for proxy, title in ((run.gophernicus, True), (run.pygopherd, False)):
        proxy.clear()
        menu = gopher(proxy.port, "").decode()
        assert f"1Documents\t/docs\t127.0.0.1\t{proxy.port}" in menu  # the proxy's port, not the server's
        assert ("\tTITLE\t" in menu.splitlines()[0]) is title  # gophernicus: "!title" gives TITLE
        assert "+Mirror of the archive\t/mirror/archive.zip" in menu
        assert "URL:http://example.com/" in menu and "7Search this hole\t/search" in menu
        for item_type in "014569gIds;cmhpx72T83i":
            assert any(line.startswith(item_type) for line in menu.splitlines()), item_type
        raw = gopher(proxy.port, "/raw.menu")
        assert raw.startswith(b"iA raw menu\tTITLE\texample.com\t0\r\n") and raw.endswith(b"\r\n.\r\n")
        assert (
            gopher(proxy.port, "robots.txt").replace(b"\r\n", b"\n").decode() == smallnet_site.GOPHER_ROBOTS
        )
        missing = gopher(proxy.port, "/missing.txt")
        assert missing.startswith(b"Error: File or directory not found") or missing.startswith(b"3")
        assert proxy.selectors() == ["", "/raw.menu", "robots.txt", "/missing.txt"]
        assert all(b >= 0 for b in proxy.gaps())


def test_every_page_of_the_ground_truth_is_served(run: Running) -> None:
    site = run.site
    for roles in (ARCHIVER, INDEXER):
        for url in site.expect([site.pygopherd_url], roles).fetched:
            body = gopher(run.pygopherd.port, smallnet_site.gopher_selector(url))
            assert body and not body.startswith(b"3"), url
    for url in site.expect([site.gemini_url], ARCHIVER).fetched - {site.gemini_url + "cgi-bin/slow"}:
        assert gemini(run.gemini.port, url).startswith(b"20 "), url


def test_gemini_cgi_answers_and_the_access_log(run: Running) -> None:
    site = run.site
    site.reset()
    base = site.gemini_url
    start = len(run.jetforce.accesses())
    scripts = ("slow", "redirect", "moved", "input", "gone", "cert")
    answers = {
        f"cgi-bin/{name}": gemini(run.gemini.port, f"{base}cgi-bin/{name}").split(b"\r\n")[0]
        for name in scripts
    }
    assert answers == {
        "cgi-bin/slow": b"44 5",
        "cgi-bin/redirect": b"30 /docs/b.gmi",
        "cgi-bin/moved": b"31 " + (base + "docs/c.gmi").encode(),
        "cgi-bin/input": b"10 Your name?",
        "cgi-bin/gone": b"51 Gone from here",
        "cgi-bin/cert": b"60 A client certificate is needed",
    }
    assert gemini(run.gemini.port, base + "cgi-bin/slow").startswith(b"20 text/gemini\r\n# Slow\n")
    assert gemini(run.gemini.port, base + "docs").startswith(b"31 " + base.encode() + b"docs/")
    assert gemini(run.gemini.port, base + "nothing.gmi").startswith(b"51 ")
    log = run.jetforce.accesses()[start:]
    assert [a.url for a in log][:2] == [base + "cgi-bin/slow", base + "cgi-bin/redirect"]
    assert [a.status for a in log][-3:] == [20, 31, 51]
    assert all(abs(a.time - time.time()) < 60 for a in log)
    site.reset()


def test_ground_truth_is_consistent(tmp_path: Path) -> None:
    site = smallnet_site.generate(tmp_path, 1, gophernicus_port=7001, pygopherd_port=7002, gemini_port=7003)
    seeds = [site.gophernicus_url, site.gemini_url]
    arch, idx = site.expect(seeds, ARCHIVER), site.expect(seeds, INDEXER)
    for e in (arch, idx):
        assert e.fetched and e.disallowed and e.errors and e.redirects and e.mirrors and e.out_of_scope
        assert not e.requested & e.disallowed and not e.requested & e.mirrors
        assert e.fetched <= e.requested and e.errors <= e.requested
        assert all(e.decisions[u].rule and e.decisions[u].line for u in e.disallowed)
        assert "gopher://127.0.0.1:7001/1/private" in e.disallowed  # Disallow: /private
        assert "gopher://127.0.0.1:7001/1/secret" in e.disallowed  # Disallow: 1/secret
        assert "gopher://127.0.0.1:7001/0/secret/note.txt" in e.requested  # typed rule: type 1 only
        assert "gemini://localhost:7003/cgi-bin/slow" in e.slow_down
        assert e.gemini_requests["gemini://localhost:7003"].count("gemini://localhost:7003/cgi-bin/slow") == 2
        assert "gemini://localhost:7003/fake.gmi" not in e.requested | e.disallowed  # preformatted
        assert "gopher://127.0.0.1:7001/7/search" in e.skipped
    assert arch.requested != idx.requested and arch.disallowed != idx.disallowed
    assert "gopher://127.0.0.1:7001/9/files/blob.bin" in arch.fetched - idx.requested  # binary: archiver only
    # the Gopher seed alone: the capsule is out of scope
    alone = site.expect([site.gophernicus_url], INDEXER)
    assert site.gemini_url in alone.out_of_scope and not any(u.startswith("gemini:") for u in alone.requested)


def test_benchmark_capsule_on_many_ports(tmp_path: Path) -> None:
    ports = [servers.free_port() for _ in range(3)]
    capsule = smallnet_site.generate_capsule(tmp_path, pages=30, hosts=3, ports=ports)
    assert len(capsule.urls) == 30 and len(set(capsule.urls)) == 30
    # jetforce listens on ports of its own and answers as the capsule's ports (a proxy's, in a crawl)
    with servers.jetforce_hosts(capsule.roots, capsule.ports) as jet:
        for url, listen in zip(capsule.seeds, jet.listen_ports, strict=True):
            answer = gemini(listen, url)
            assert answer.startswith(b"20 text/gemini"), answer[:80]
            assert b"=> gemini://localhost:" in answer


@pytest.mark.serial  # a time bound
@pytest.mark.parametrize("scheme", ["gemini", "gopher"])
def test_fault_servers(scheme: str) -> None:
    def talk(port: int, url: bytes, limit: float) -> tuple[bytes, float]:
        start = time.monotonic()
        out = b""
        raw = socket.create_connection(("127.0.0.1", port), timeout=limit)
        sock: socket.socket = raw
        if scheme == "gemini":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            sock = ctx.wrap_socket(raw, server_hostname="localhost")
        with sock:
            sock.sendall(url + b"\r\n")
            try:
                while time.monotonic() - start < limit and (data := sock.recv(100)):
                    out += data
            except TimeoutError:
                pass
        return out, time.monotonic() - start

    request = b"gemini://localhost/x" if scheme == "gemini" else b"/x"
    with fault_server("malformed", scheme, answer=None if scheme == "gemini" else b"no tabs here\r\n") as f:  # type: ignore[arg-type]
        out, _ = talk(f.port, request, 3)
        assert out in (b"2O text/gemini\r\n# not a status\n", b"no tabs here\r\n")
        assert f.requests() == [request]
    with fault_server("trickle", scheme, interval=0.5) as f:  # type: ignore[arg-type]
        out, took = talk(f.port, request, 2.2)
        assert out.split(b"\n", 1)[1].count(b"x") in (3, 4, 5) and took < 3.5
    with fault_server("silent", scheme) as f:  # type: ignore[arg-type]
        out, took = talk(f.port, request, 1.0)
        assert out == b"" and 0.9 < took < 2.5 and f.requests() == [request]
