"""``manners site``: real servers on loopback, each set up so that some rules hold and some do not.

For every server the test knows which findings are right (from the server's own behaviour, as
documented in docs/site.md) and checks that exactly those come out, no
more.  gophernicus, pygopherd, jetforce, molly-brown and nginx are the real thing; small
purpose-built servers stand in only for what no real server does on demand (two robots.txt
spellings that differ, an LF menu, a bad URL: page, a server that stalls).  What the audit sent
is read from the servers' side (nginx's access log, jetforce's, the purpose-built servers' own).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from hostile import _tcp_server
from manners.admin.site import SiteReport, UsageError, audit_site, rules
from manners.cli import main
from proxy import _Loop, fault_server, self_signed
from servers import (
    HOST,
    Listen,
    free_port,
    gophernicus,
    jetforce,
    jetforce_hosts,
    nginx,
    pygopherd,
    timed_log,
)
from test_certificate import CA_CONFIG, EC_CURVE, openssl
from test_cli import manners
from test_cli_json import agrees

DELAY = 0.02  # --delay: seconds between two requests, short for the tests
SLACK = 0.01  # seconds: nginx logs in milliseconds, and clocks tick apart
ROBOTS = "User-agent: *\nDisallow: /private\n"
Expected = list[tuple[str, str]]  # (severity, code), sorted


def audit(url: str, **options: Any) -> SiteReport:
    options.setdefault("delay", DELAY)
    options.setdefault("timeout", 5.0)
    return asyncio.run(audit_site(url, **options))


def codes(report: SiteReport) -> Expected:
    return sorted((f.severity, f.code) for f in report.findings)


def finding(report: SiteReport, code: str) -> Any:
    (found,) = [f for f in report.findings if f.code == code]
    return found


def finding_json(data: dict[str, Any], code: str) -> dict[str, Any]:
    (found,) = [f for f in data["findings"] if f["code"] == code]
    return found


def tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "MANNERS_CACHE")}
    return {**clean, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200"}


def row(report: SiteReport, ending: str) -> dict[str, tuple[bool, int | None]]:
    """The matrix row of the URL ending so: each column's verdict and deciding line."""
    (found,) = [r for r in report.matrix if r.url.endswith(ending)]
    return {c.name: (d.allowed, d.line) for c, d in zip(report.columns, found.decisions, strict=True)}


# -- Gopher: gophernicus -----------------------------------------------------------------------

HOLE = {
    "robots.txt": ROBOTS,
    "about.txt": "Run by the test-suite.\n",
    "hello.txt": "Hello.\n",
    "private/secret.txt": "Secret.\n",
    "docs/a.txt": "A.\n",
}


def test_gophernicus_as_debian_ships_it(tmp_path: Path) -> None:
    """Its robots.txt and caps.txt pass; a missing selector gets plain text, not a type-3 menu (an
    error); its generated TITLE line names null.host and 1, not the placeholders (a warning)."""
    with gophernicus(tree(tmp_path / "hole", HOLE)) as port:
        report = audit(f"gopher://{HOST}:{port}/", sample=10)
    assert codes(report) == [
        ("error", "gopher-error-not-menu"),
        ("info", "gopher-robots-typed-selector"),
        ("warning", "gopher-title-placeholder"),
    ]
    error = finding(report, "gopher-error-not-menu")
    assert error.asked.startswith("/manners-site-probe-") and not error.asked.endswith("/")
    assert error.sent.startswith("Error: File or directory not found! (null)\\x0d\\x0a")
    assert "Errors" in error.basis and "MUST return a menu whose first item bears itemtype `3`" in error.words
    assert "null.host" in finding(report, "gopher-title-placeholder").sent
    assert "not answered" in finding(report, "gopher-robots-typed-selector").message
    assert report.reachable and report.failed and report.diagnostics == []
    assert report.robots.outcome == "ok" and report.robots.extra["selector"] == "robots.txt"
    # the crawl found the private directory and did not enter it; every robot is kept out
    assert row(report, "/1/private/") == {"*": (False, 2)}  # the Gemini roles are no columns here
    assert row(report, "/0/hello.txt")["*"] == (True, None)
    assert not any("secret" in r.url for r in report.matrix)
    assert report.sample.how == "crawl" and report.sample.note is None


def test_gophernicus_with_no_header_no_about_and_a_caps_file_of_its_own(tmp_path: Path) -> None:
    """-nh drops the menu's TITLE (information); no about.txt breaks a MUST; a caps.txt whose first
    key is not CapsVersion, with a long line and a key with a '-' gets three warnings."""
    caps = (
        "CAPS\n\n# written for the test\nServer-Software=manners-test\nCapsVersion=1\n"
        f"ServerDescription={'x' * 60}\n"
    )
    files = {"robots.txt": ROBOTS, "caps.txt": caps, "hello.txt": "Hello.\n"}
    with gophernicus(tree(tmp_path / "hole", files), options=["-nh"]) as port:
        report = audit(f"gopher://{HOST}:{port}/", sample=0)
    assert codes(report) == [
        ("error", "gopher-about-missing"),
        ("error", "gopher-error-not-menu"),
        ("info", "gopher-robots-typed-selector"),
        ("info", "gopher-title-missing"),
        ("warning", "gopher-caps-key-not-alnum"),
        ("warning", "gopher-caps-long-line"),
        ("warning", "gopher-caps-version-not-first"),
    ]
    assert finding(report, "gopher-caps-long-line").line == 6
    assert finding(report, "gopher-caps-version-not-first").message.startswith(
        "the first key is 'Server-Software'"
    )
    assert finding(report, "gopher-about-missing").asked == "/about.txt"
    assert report.matrix == [] and report.sample.how == "none"


def test_gophernicus_with_a_gophermap(tmp_path: Path) -> None:
    """A gophermap whose first line is a TITLE in the draft's shape passes; its URL:gopher link breaks
    the draft's SHALL NOT."""
    gophermap = (
        "iA hole for the tests\tTITLE\texample.com\t0\nWelcome.\n0About this server\t/about.txt\n"
        "hThe Web\tURL:http://example.org/\n1Another hole\tURL:gopher://example.org/\n"
    )
    with gophernicus(tree(tmp_path / "hole", {**HOLE, "gophermap": gophermap})) as port:
        report = audit(f"gopher://{HOST}:{port}/", sample=0)
    assert codes(report) == [
        ("error", "gopher-error-not-menu"),
        ("error", "gopher-url-forbidden-scheme"),
        ("info", "gopher-robots-typed-selector"),
    ]
    assert "URL:gopher://example.org/" in finding(report, "gopher-url-forbidden-scheme").sent


# -- Gopher: pygopherd -------------------------------------------------------------------------


@pytest.mark.quick
def test_pygopherd_as_the_suite_configures_it(tmp_path: Path) -> None:
    """Files as written (an LF robots.txt breaks the policy files' CR/LF MUST), a proper type-3
    error menu, no caps.txt, no TITLE, no full stop after menus."""
    with pygopherd(tree(tmp_path / "hole", HOLE)) as port:
        report = audit(f"gopher://{HOST}:{port}/", sample=5)
    assert codes(report) == [
        ("error", "gopher-robots-crlf"),
        ("info", "gopher-robots-typed-selector"),
        ("info", "gopher-title-missing"),
        ("warning", "gopher-caps-missing"),
        ("warning", "gopher-menu-no-full-stop"),
    ]
    crlf = finding(report, "gopher-robots-crlf")
    assert (crlf.line, crlf.sent, crlf.asked) == (1, "User-agent: *\\x0a", "/robots.txt")
    assert "policy files MUST comply" in crlf.words
    assert "the Gopher robots proposal (2019-05-24) allows a bare LF" in crlf.message
    assert row(report, "/1/private")["*"] == (False, 2)


def test_pygopherd_with_a_title_and_an_lf_caps_file(tmp_path: Path) -> None:
    """A CR/LF robots.txt passes; pygopherd turns a TITLE selector into '/TITLE' (an error) and sends
    caps.txt with LF (an error)."""
    files = {
        "robots.txt": ROBOTS.replace("\n", "\r\n"),
        "about.txt": "Hi.\n",
        "gophermap": "iA hole\tTITLE\texample.com\t0\n0About\t/about.txt\n",
        "caps.txt": "CAPS\nCapsVersion=1\n",
    }
    with pygopherd(tree(tmp_path / "hole", files)) as port:
        report = audit(f"gopher://{HOST}:{port}/", sample=0)
    assert codes(report) == [
        ("error", "gopher-caps-crlf"),
        ("error", "gopher-title-selector"),
        ("info", "gopher-robots-typed-selector"),
        ("warning", "gopher-menu-no-full-stop"),
    ]
    assert "'/TITLE'" in finding(report, "gopher-title-selector").message


# -- Gopher: what no real server does ------------------------------------------------------------

ESCAPE = "\x1b]0;pwned\x07"


@contextlib.contextmanager
def odd_gopher() -> Iterator[Any]:
    """Two robots.txt spellings with different rules, an LF root menu with no full stop, a proper
    error menu, caps.txt only at /caps.txt, and a URL: page that waits 30 s, shows an image and
    carries a terminal escape."""
    page = (
        f'<html><head><meta http-equiv="refresh" content="30; url=http://example.com/"><title>{ESCAPE}'
        '</title></head><body><img src="logo.png"><a href="http://example.com/">go</a></body></html>'
    )

    def answer(line: bytes, port: int) -> bytes:
        selector = line.decode()
        replies = {
            "robots.txt": b"User-agent: *\r\nDisallow: /a\r\n",
            "/robots.txt": b"User-agent: *\r\nDisallow: /b\r\n",
            "": f"iHole\tTITLE\texample.com\t0\n0About\tabout.txt\t{HOST}\t{port}\n".encode(),
            "about.txt": b"About.\r\n",
            "/caps.txt": b"CAPS\r\nCapsVersion=1\r\n",
            "URL:http://example.com/": page.encode(),
        }
        return replies.get(selector, b"3Not found\t\terror.host\t1\r\n.\r\n")

    with _tcp_server(answer) as server:
        yield server


def test_a_gopher_server_that_breaks_what_real_ones_keep() -> None:
    with odd_gopher() as server:
        report = audit(f"gopher://{HOST}:{server.port}/", sample=0, delay=0.1)
        times = server.times()
    assert codes(report) == [
        ("error", "gopher-menu-crlf"),
        ("error", "gopher-url-img-or-script"),
        ("error", "gopher-url-outside-ref"),
        ("error", "gopher-url-refresh"),
        ("info", "gopher-robots-typed-selector"),
        ("warning", "gopher-caps-slash-differs"),
        ("warning", "gopher-menu-no-full-stop"),
        ("warning", "gopher-robots-differ"),
    ]
    assert finding(report, "gopher-robots-differ").line == 2
    assert (
        finding(report, "gopher-url-refresh").message
        == "the redirect page has a refresh of 30 s, not one of 10 seconds or less"
    )
    assert "'logo.png'" in finding(report, "gopher-url-outside-ref").message
    assert finding(report, "gopher-caps-slash-differs").message == "/caps.txt is answered, caps.txt is not"
    # a robot reads robots.txt first (the 2019 proposal's selector, as the fetcher does)
    assert report.robots.extra["selector"] == "robots.txt" and report.robots.body.endswith(
        b"Disallow: /a\r\n"
    )
    # one request at a time, each --delay after the end of the one before
    assert report.requests == len(times) == 9  # about.txt is there: /about.txt is not asked
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.1 - SLACK


def test_the_command_line_escapes_what_the_server_sent(env: dict[str, str]) -> None:
    with odd_gopher() as server:
        url = f"gopher://{HOST}:{server.port}/"
        p = manners("site", url, "--delay", "0.02", "--sample", "0", env=env)
        raw = manners("site", url, "--delay", "0.02", "--sample", "0", "--json", env=env).stdout
    data = json.loads(raw)
    assert p.returncode == 1, p.stderr
    assert "\x1b" not in p.stdout and "\\x1b]0;pwned\\x07" in p.stdout
    assert "error: gopher-url-refresh: the redirect page has a refresh of 30 s" in p.stdout
    assert "rests on the Gopher draft, Linking to Web Addresses:" in p.stdout
    assert "4 errors, 3 warnings, 1 info" in p.stdout
    agrees("manners site", data)
    assert data["counts"] == {"error": 4, "warning": 3, "info": 1}
    assert [f["severity"] for f in data["findings"]][:4] == ["error"] * 4
    assert data["robots_txt"]["status"] is None and data["robots_txt"]["outcome"] == "ok"
    assert "\x1b" not in raw and "\\x1b]0;pwned\\x07" in finding_json(data, "gopher-url-refresh")["sent"]


# -- deadlines --------------------------------------------------------------------------------


@pytest.mark.serial  # a time bound
def test_a_server_that_never_answers_is_unreachable_in_one_timeout(env: dict[str, str]) -> None:
    with fault_server("silent", "gopher") as server:
        start = time.monotonic()
        p = manners("site", f"gopher://{HOST}:{server.port}/", "--timeout", "1", env=env)
        took = time.monotonic() - start
    assert p.returncode == 2 and took < 5
    assert p.stdout.startswith(f"gopher://{HOST}:{server.port}/: 1 request")
    assert "did not answer: timeout: no" in p.stderr and p.stderr.strip().endswith("nothing was audited")
    refused = f"http://{HOST}:{free_port()}/"
    p = manners("site", refused, "--json", env=env)
    assert p.returncode == 2
    data = json.loads(p.stdout)
    agrees("manners site", data)
    assert (data["reachable"], data["robots_txt"]["network_error"]) == (False, "connection-refused")


@pytest.mark.serial  # a time bound
def test_a_server_that_stops_answering_costs_two_timeouts() -> None:
    """robots.txt is answered, then nothing: two requests wait their timeout, the rest are not sent,
    and no sample is crawled."""
    runner = _Loop()
    asked: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        runner.writers.add(writer)
        line = (await reader.readline()).rstrip(b"\r\n")
        asked.append(line)
        if line in (b"robots.txt", b"/robots.txt", b"0/robots.txt"):
            writer.write(ROBOTS.replace("\n", "\r\n").encode())
            writer.close()
        else:
            await asyncio.sleep(3600)  # cancelled when the server stops

    port = runner.serve(handle)
    try:
        start = time.monotonic()
        report = audit(f"gopher://{HOST}:{port}/", timeout=1.0, sample=5)
        took = time.monotonic() - start
    finally:
        runner.stop()
    assert took < 4 and len(asked) == report.requests == 5
    unanswered = [f for f in report.findings if f.code == "site-unanswered"]
    assert len(unanswered) == 6  # the missing selector, the root, about.txt, caps.txt twice, URL:
    assert sum("timeout" in f.message for f in unanswered) == 2
    assert report.sample.note == "no sample was taken: the server stopped answering"


# -- Gemini: jetforce and molly-brown -------------------------------------------------------------

CAPSULE_ROBOTS = (
    "User-agent: *\nDisallow: /private\n\nUser-agent: archiver\nDisallow: /\n\n"
    "User-agent: mybot\nAllow: /\nDisalow: /x\n"
)
CAPSULE = {
    "robots.txt": CAPSULE_ROBOTS,
    "index.gmi": "# Home\n=> a.gmi A\n=> private/p.gmi P\n=> b.gmi B\n",
    "a.gmi": "# A\n",
    "b.gmi": "# B\n",
    "private/p.gmi": "# P\n",
}


@pytest.fixture(scope="module")
def capsules(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """jetforce serving two capsules: one plain, one whose robots.txt is a directory (jetforce
    redirects it to robots.txt/ and serves the index.gmi in it as text/gemini)."""
    root = tmp_path_factory.mktemp("capsules")
    plain = tree(root / "plain", CAPSULE)
    moved = tree(root / "moved", {"robots.txt/index.gmi": ROBOTS, "index.gmi": "# Home\n"})
    with jetforce_hosts([plain, moved]) as hosts:
        yield hosts


def test_jetforce_with_its_own_certificate(capsules: Any) -> None:
    port = capsules.public_ports[0]
    report = audit(f"gemini://localhost:{port}/", agents=["tester"], roles=["indexer"], sample=10)
    assert codes(report) == [("info", "gemini-cert"), ("info", "gemini-cert-self-signed")]
    assert "self-signed" in finding(report, "gemini-cert").message
    assert [(d.code, d.line) for d in report.diagnostics] == [("typo", 9)]
    assert not report.failed
    assert [c.name for c in report.columns] == [
        "*",
        "indexer",
        "archiver",
        "researcher",
        "webproxy",
        "mybot",
        "tester (indexer)",
    ]
    assert row(report, "/private/p.gmi") == {
        "*": (False, 2),
        "indexer": (False, 2),
        "archiver": (False, 2),
        "researcher": (False, 2),
        "webproxy": (False, 2),
        "mybot": (True, 8),
        "tester (indexer)": (False, 2),
    }
    assert row(report, "/a.gmi")["archiver"] == (False, 5) and row(report, "/a.gmi")["*"] == (True, None)
    # the crawl asked for nothing robots.txt disallows (for the robot it acted as: tester, indexer)
    served = capsules.urls()
    assert f"gemini://localhost:{port}/a.gmi" in served
    assert not any("/private/" in u for u in served)


def test_jetforce_redirecting_robots_txt_to_a_gemtext_page(capsules: Any) -> None:
    port = capsules.public_ports[1]
    report = audit(f"gemini://localhost:{port}/", sample=0)
    assert codes(report) == [
        ("error", "gemini-robots-type"),
        ("info", "gemini-cert"),
        ("info", "gemini-cert-self-signed"),
        ("info", "gemini-robots-redirect"),
    ]
    said = finding(report, "gemini-robots-type")
    assert said.sent == "20 text/gemini" and "TLGS" in said.message and said.basis == "RFC 9309 §2.3"
    assert f"gemini://localhost:{port}/robots.txt/" in finding(report, "gemini-robots-redirect").message
    assert report.robots.outcome == "ok" and report.robots.redirects == (
        f"gemini://localhost:{port}/robots.txt/",
    )


def ca_signed(directory: Path, cn: str, start: str, end: str) -> tuple[Path, Path]:
    """A certificate for ``cn`` signed by a throw-away CA, valid from ``start`` to ``end``."""
    directory.mkdir()
    (directory / "ca.cnf").write_text(CA_CONFIG)
    (directory / "index.txt").write_text("")
    openssl(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        EC_CURVE,
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=Test CA",
        cwd=directory,
    )
    openssl(
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        EC_CURVE,
        "-nodes",
        "-keyout",
        "key.pem",
        "-out",
        "req.csr",
        "-subj",
        f"/CN={cn}",
        cwd=directory,
    )
    openssl(
        "ca",
        "-batch",
        "-config",
        "ca.cnf",
        "-cert",
        "ca.pem",
        "-keyfile",
        "ca.key",
        "-in",
        "req.csr",
        "-out",
        "cert.pem",
        "-startdate",
        start,
        "-enddate",
        end,
        "-create_serial",
        "-notext",
        cwd=directory,
    )
    return directory / "cert.pem", directory / "key.pem"


def test_jetforce_with_an_expired_certificate_for_another_name_and_no_robots_txt(tmp_path: Path) -> None:
    cert = ca_signed(tmp_path / "tls", "other.example", "20200101000000Z", "20210101000000Z")
    with jetforce(tree(tmp_path / "capsule", {"index.gmi": "# Home\n"}), tls=cert) as port:
        report = audit(f"gemini://localhost:{port}/", sample=0)
    assert codes(report) == [
        ("info", "gemini-cert"),
        ("info", "gemini-cert-expired"),
        ("info", "gemini-cert-name-mismatch"),
        ("info", "gemini-robots-absent"),
    ]
    assert "issued by Test CA" in finding(report, "gemini-cert").message
    assert (
        finding(report, "gemini-cert-expired").message
        == "the certificate expired at 2021-01-01T00:00:00.000Z"
    )
    assert finding(report, "gemini-robots-absent").sent == "51 Not Found"
    assert report.robots.outcome == "unavailable" and report.diagnostics == []


def test_the_certificate_reader_tells_self_signed_from_ca_signed(tmp_path: Path) -> None:
    """What the gemini-cert findings rest on: the issuer's CN and self-signature, from the DER."""
    import ssl

    from manners.fetch.certificate import read_certificate

    self_signed(tmp_path)
    own = read_certificate(ssl.PEM_cert_to_DER_cert((tmp_path / "cert.pem").read_text()))
    assert (own.issuer, own.self_signed, own.problem) == (("localhost",), True, None)
    cert, _ = ca_signed(tmp_path / "ca", "leaf.example", "20200101000000Z", "20300101000000Z")
    leaf = read_certificate(ssl.PEM_cert_to_DER_cert(cert.read_text()))
    assert (leaf.issuer, leaf.self_signed, leaf.names) == (("Test CA",), False, ("leaf.example",))
    garbage = read_certificate(b"\x30\x03\x02\x01\x01")
    assert garbage.problem and (garbage.issuer, garbage.self_signed) == ((), False)


MOLLY_PORT = 1965  # the namespace is private: the default port is free there
MOLLY_DRIVER = """
import socket, subprocess, sys, time
config, port, *command = sys.argv[1:]
server = subprocess.Popen(["molly-brown", "-c", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    deadline = time.monotonic() + 10
    while True:
        if server.poll() is not None:
            sys.exit(3)
        try:
            socket.create_connection(("127.0.0.1", int(port)), timeout=0.5).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(3)
            time.sleep(0.05)
    sys.exit(subprocess.run([sys.executable, "-m", "manners", *command], timeout=60).returncode)
finally:
    server.terminate()
    server.wait(5)
"""


def test_molly_brown_serving_robots_txt_as_text_gemini(tmp_path: Path, env: dict[str, str]) -> None:
    """molly-brown binds every interface, so it runs in a network namespace of its own with the
    command (as tests/test_crawl_molly.py runs it); a MimeOverrides entry serves robots.txt as
    text/gemini, which RFC 9309 §2.3 forbids."""
    root = tree(tmp_path / "docs", {**CAPSULE, "robots.txt": ROBOTS})
    self_signed(tmp_path)
    config = tmp_path / "molly.conf"
    config.write_text(
        f'Port = {MOLLY_PORT}\nHostname = "localhost"\nCertPath = "{tmp_path / "cert.pem"}"\n'
        f'KeyPath = "{tmp_path / "key.pem"}"\nDocBase = "{root}"\nAccessLog = "{tmp_path / "access.log"}"\n'
        f'ErrorLog = "{tmp_path / "error.log"}"\nDefaultLang = "en"\n\n'
        '[MimeOverrides]\n"robots.txt$" = "text/gemini"\n'
    )
    command = [
        "site",
        "gemini://localhost/",
        "--json",
        "--delay",
        str(DELAY),
        "--timeout",
        "5",
        "--sample",
        "5",
    ]
    cmd = [
        "unshare",
        "-n",
        "sh",
        "-c",
        'ip link set lo up && exec "$@"',
        "sh",
        sys.executable,
        "-c",
        MOLLY_DRIVER,
        str(config),
        str(MOLLY_PORT),
        *command,
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "PYTHONPATH": str(Path(__file__).parents[1] / "src")},
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("molly-brown and the audit took more than 90 s") from None
    assert proc.returncode == 1, stdout + stderr
    data = json.loads(stdout)
    agrees("manners site", data)
    assert sorted((f["severity"], f["code"]) for f in data["findings"]) == [
        ("error", "gemini-robots-type"),
        ("info", "gemini-cert"),
        ("info", "gemini-cert-self-signed"),
    ]
    assert data["findings"][0]["sent"] == "20 text/gemini; lang=en"
    assert data["robots_txt"]["status"] == 20
    served = {line.split("\t")[3] for line in (tmp_path / "access.log").read_text().splitlines()}
    assert "gemini://localhost/a.gmi" in served and not any("/private" in u for u in served)


# -- Gemini: what no real static server does ------------------------------------------------------


@pytest.mark.quick
@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (b"31 https://elsewhere.example/robots.txt\r\n", [("warning", "gemini-robots-redirect-offhost")]),
        (
            b"31 /robots.txt\r\n",
            [("info", "gemini-robots-redirect"), ("warning", "gemini-robots-redirects-too-many")],
        ),
        (b"44 5\r\n", [("warning", "gemini-robots-temporary")]),
        (b"40 Down for maintenance\r\n", [("warning", "gemini-robots-temporary")]),
        (b"10 Your name?\r\n", [("warning", "gemini-robots-unservable")]),
        (b"20 text/plain; charset=iso-8859-1\r\nUser-agent: *\r\n", [("error", "gemini-robots-charset")]),
        (b"53 No proxying\r\n", [("info", "gemini-robots-absent")]),
    ],
)
def test_gemini_answers_for_robots_txt(header: bytes, expected: Expected) -> None:
    with fault_server("answer", "gemini", answer=header) as server:
        report = audit(server.url, sample=0)
        asked = server.requests()
    cert = [("info", "gemini-cert"), ("info", "gemini-cert-self-signed")]
    assert codes(report) == sorted(expected + cert)
    assert len(asked) == (
        6 if header.startswith(b"31 /") else 1
    )  # five redirects followed; not one to another scheme


# -- HTTP: nginx ---------------------------------------------------------------------------------

BIG = "User-agent: *\n" + "".join(f"Disallow: /x{n:07d}\n" for n in range(30_000))  # 630,014 bytes


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One nginx, a server block per way of serving robots.txt, all on one root."""
    root = tmp_path_factory.mktemp("www")
    port = free_port()
    log = root.parent / f"{root.name}-access.log"
    tree(
        root,
        {
            "robots-plain.txt": f"User-agent: *\nDisallow: /private\n\nUser-agent: googlebot\nDisallow: /\n\n"
            f"Sitemap: http://{HOST}:{port}/sitemap.xml\n",
            "index.html": '<html><body><a href="/a.html">A</a> <a href="private/p.html">P</a>'
            ' <a href="http://elsewhere.example/x">X</a> <a href="/a.html#top">A again</a></body></html>',
            "sitemap.xml": f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>http://{HOST}:{port}/b.html</loc></url>"
            f"<url><loc>http://{HOST}:{port}/private/q.html?a=1&amp;b=2</loc></url></urlset>",
            "big.txt": BIG,
        },
    )
    plain = f"alias {root}/robots-plain.txt;"
    blocks = {
        "plain": f"access_log {log} timed; location = /robots.txt {{ {plain} }}",
        "soft-404": "error_page 404 =200 /index.html;"
        " location = /robots.txt { try_files /no-such-file =404; }",
        "html-type": f"location = /robots.txt {{ types {{ }} default_type text/html; {plain} }}",
        "redirects": "location = /robots.txt { return 301 /r1; } "
        + " ".join(f"location = /r{n} {{ return 302 /r{n + 1}; }}" for n in range(1, 6))
        + f" location = /r6 {{ {plain} }}",
        "unavailable": "location = /robots.txt { return 404; }",
        "unreachable": "location = /robots.txt { return 503; }",
        "too-many-requests": "location = /robots.txt { return 429; }",
        "tls-to-plain": "location = /robots.txt { return 301 https://$host:$server_port/robots.txt; }",
        "charset": f"location = /robots.txt {{ charset iso-8859-1; charset_types text/plain; {plain} }}",
        "big": f"location = /robots.txt {{ alias {root}/big.txt; }}",
    }
    listen = [Listen(HOST, port)] + [None] * (len(blocks) - 1)
    with nginx(list(blocks.values()), root, listen=listen) as ports:
        yield {"ports": dict(zip(blocks, ports, strict=True)), "log": log}


def test_nginx_serving_robots_txt_well(web: dict[str, Any]) -> None:
    """Nothing to find; the matrix's URLs come from the home page and the sitemap, and only the home
    page and the sitemap are fetched, a --delay apart."""
    url = f"http://{HOST}:{web['ports']['plain']}/"
    report = audit(url, delay=0.2, sample=10)
    assert codes(report) == [] and report.diagnostics == [] and not report.failed
    assert [(r.url.removeprefix(url[:-1]), r.found) for r in report.matrix] == [
        ("/", "home page"),
        ("/a.html", "home page"),
        ("/private/p.html", "home page"),
        ("/b.html", "sitemap"),
        ("/private/q.html?a=1&b=2", "sitemap"),
    ]
    assert row(report, "/private/p.html") == {"*": (False, 2), "googlebot": (False, 5)}  # no Gemini roles
    assert [c.name for c in report.columns] == ["*", "googlebot"]
    assert row(report, "/a.html")["googlebot"] == (False, 5) and row(report, "/a.html")["*"] == (True, None)
    hits = timed_log(web["log"])
    assert [h.path for h in hits] == ["/robots.txt", "/", "/sitemap.xml"]
    assert all(h.user_agent.startswith("manners/") for h in hits)
    assert min(b.start - a.start for a, b in itertools.pairwise(hits)) >= 0.2 - SLACK


@pytest.mark.quick
@pytest.mark.parametrize(
    ("block", "expected", "lint"),
    [
        ("soft-404", [("error", "http-robots-type"), ("info", "http-robots-html")], ["html"]),
        ("html-type", [("error", "http-robots-type")], []),
        ("redirects", [("info", "http-robots-redirect"), ("warning", "http-robots-redirects-too-many")], []),
        ("unavailable", [("info", "http-robots-absent")], []),
        ("unreachable", [("warning", "http-robots-unreachable")], []),
        ("too-many-requests", [("warning", "http-robots-unreachable")], []),
        ("charset", [("error", "http-robots-charset")], []),
        ("big", [("info", "http-robots-too-large")], ["truncated"]),
    ],
)
def test_nginx_serving_robots_txt_badly(
    web: dict[str, Any], block: str, expected: Expected, lint: list[str]
) -> None:
    report = audit(f"http://{HOST}:{web['ports'][block]}/", sample=3)
    assert codes(report) == expected
    assert [d.code for d in report.diagnostics] == lint
    assert report.failed == (any(s == "error" for s, _ in expected) or "html" in lint)
    if block in ("unreachable", "too-many-requests"):  # everything disallowed: the sample fetched nothing
        assert report.robots.outcome == "unreachable" and row(report, "/")["*"][0] is False
        assert report.requests == 1


def test_nginx_json_and_exit_status(web: dict[str, Any], env: dict[str, str]) -> None:
    p = manners("site", f"http://{HOST}:{web['ports']['soft-404']}/", "--json", "--delay", "0.02", env=env)
    assert p.returncode == 1
    data = json.loads(p.stdout)
    agrees("manners site", data)
    assert data["robots_txt"]["status"] == 200 and data["diagnostics"][0]["code"] == "html"
    assert data["findings"][0]["sent"] == "Content-Type: text/html"
    p = manners(
        "site",
        f"http://{HOST}:{web['ports']['plain']}/",
        "--delay",
        "0.02",
        "--agent",
        "mybot",
        "--role",
        "indexer",
        env=env,
    )
    assert p.returncode == 0, p.stderr
    assert "the server's answers break no rule the audit checks" in p.stdout
    assert "Who may fetch what: 5 URLs from the home page and the sitemaps" in p.stdout
    assert not {"archiver", "researcher", "webproxy"} & set(p.stdout.split())  # no Gemini role columns
    assert "0 errors, 0 warnings, 0 infos" in p.stdout


# -- the command line ------------------------------------------------------------------------------


def test_urls_given_instead_of_a_crawl(tmp_path: Path, env: dict[str, str]) -> None:
    with gophernicus(tree(tmp_path / "hole", HOLE)) as port:
        site = f"gopher://{HOST}:{port}/"
        report = audit(site, urls=["/private/x", f"{site}0/hello.txt"])
        given = tmp_path / "urls.txt"
        given.write_text(f"/private/x\n{site}1/docs\n")
        p = manners("site", site, "--urls", str(given), "--json", "--delay", "0.02", env=env)
    assert [(r.url, r.found, r.decisions[0].allowed) for r in report.matrix] == [
        ("/private/x", "given", False),
        (f"{site}0/hello.txt", "given", True),
    ]
    assert report.sample.how == "given" and report.requests == 9  # the audit's questions only: no crawl
    data = json.loads(p.stdout)
    agrees("manners site", data)
    assert [r["url"] for r in data["matrix"]] == ["/private/x", f"{site}1/docs"]


@pytest.mark.quick
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["ftp://example.org/"], "unknown scheme 'ftp'"),
        (["example.org"], "is no URL"),
        (["gopher://127.0.0.1:9/", "--urls", "/no/such/file"], "cannot read --urls /no/such/file"),
        (["gopher://127.0.0.1:9/", "--agent", "42"], "--agent: the robot name '42'"),
        (["gopher://127.0.0.1:9/", "--sample", "-1"], "--sample: give 0 or more"),
        (["gopher://127.0.0.1:9/", "--delay", "301"], "--delay: give seconds from 0 to 300"),
    ],
)
def test_usage_errors_are_one_sentence(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(["site", *args])
    except SystemExit as exc:  # argparse's own checks (--sample, --delay)
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and said in err and out == ""


def test_urls_of_another_server_are_refused_before_anything_is_sent(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not on the server audited"):
        audit("gopher://127.0.0.1:9/", urls=["gopher://127.0.0.1:10/x"])
    with pytest.raises(UsageError, match="neither a URL nor a path"):
        audit("gopher://127.0.0.1:9/", urls=["x"])


@pytest.mark.quick
def test_every_rule_quotes_its_words() -> None:
    """Each check names its document and section and carries words; the severity follows them:
    an error's words hold MUST, SHALL or PROHIBITED, a warning's SHOULD, RECOMMENDED or should,
    except an answer that keeps every robot off the whole server, a warning at least, whose
    words are the crawler's "MUST assume complete disallow"."""
    from manners.admin.site.report import UNREACHABLE_WORDS

    every = rules()
    assert len({r.code for r in every}) == len(every) == 53
    for r in every:
        assert r.basis and len(r.words) > 20, r
        if r.severity == "error":
            assert any(w in r.words for w in ("MUST", "SHALL", "PROHIBITED")), r
        if r.severity == "warning":
            assert any(w in r.words for w in ("SHOULD", "RECOMMENDED", "should")) or (
                r.words == UNREACHABLE_WORDS and "MUST assume complete disallow" in r.words
            ), r
    kept_off = {r.code for r in every if r.words == UNREACHABLE_WORDS}
    assert kept_off == {
        "gemini-robots-temporary",
        "gemini-robots-unreachable",
        "gopher-robots-unreachable",
        "http-robots-unreachable",
    }
    assert all(r.severity == "warning" for r in every if r.code in kept_off)
    assert {r.code: r.severity for r in every if "redirects-too-many" in r.code or "full-stop" in r.code} == {
        "gemini-robots-redirects-too-many": "warning",
        "http-robots-redirects-too-many": "warning",
        "gopher-menu-no-full-stop": "warning",
    }


# -- issue 31: one robot's reading everywhere ---------------------------------------------------


def test_an_off_host_gemini_redirect_to_a_host_that_is_down_is_read_as_check_reads_it(
    env: dict[str, str],
) -> None:
    """robots.txt redirected (31) to another server that is down: a robot follows the redirect (RFC
    9309 §2.3.1.2, "even across authorities"), gets no answer, and must take everything as
    disallowed.  ``site`` says so, as ``check`` does on the same URL, and warns that every robot is
    kept off the server."""
    dead = free_port()
    moved = f"gemini://localhost:{dead}/robots.txt"
    with fault_server("answer", "gemini", answer=f"31 {moved}\r\n".encode()) as server:
        report = audit(server.url, urls=["/a.gmi"])
        site = manners("site", server.url, "--urls", "/dev/null", "--delay", "0.02", "--json", env=env)
        check = manners("check", f"{server.url}a.gmi", "--json", "--cache", "memory", env=env)
        asked = server.requests()
    assert report.robots.outcome == "unreachable" and report.robots.redirects == (moved,)
    assert row(report, "/a.gmi")["*"][0] is False
    data, checked = json.loads(site.stdout), json.loads(check.stdout)
    agrees("manners site", data)
    assert data["robots_txt"]["outcome"] == checked["robots"][0]["outcome"] == "unreachable"
    assert checked["results"][0]["allowed"] is False and check.returncode == 1
    assert ("warning", "gemini-robots-redirect-offhost") in codes(report)
    kept_off = finding(report, "gemini-robots-unreachable")
    assert kept_off.severity == "warning" and kept_off.asked == moved and "disallowed" in kept_off.message
    assert len(asked) == 3  # the audit, site and check each asked the server once; the other is down


def test_a_gopher_server_that_answers_every_selector_alike_is_read_as_robots_read_it() -> None:
    """Every selector gets the same text, 600,000 bytes of it: a robot asks for robots.txt and
    reads that text as its robots.txt (cut at 512,000 bytes).  The audit says the same (it was
    read, every selector is answered alike), never "there is no robots.txt", and lint's
    findings on it come grouped."""
    line = b"Hello from the one page this server has.\r\n"
    same = line * (600_000 // len(line))
    with _tcp_server(lambda request, port: same) as server:
        report = audit(f"gopher://{HOST}:{server.port}/", sample=0)
        asked = server.selectors()
    assert report.robots.outcome == "ok" and report.robots.truncated
    assert report.robots.extra["selector"] == "robots.txt" and len(report.robots.body) == 512_000
    found = codes(report)
    assert ("info", "gopher-robots-absent") not in found
    assert ("warning", "gopher-robots-everywhere") in found
    everywhere = finding(report, "gopher-robots-everywhere")
    assert everywhere.asked == "robots.txt" and "robots read that answer as robots.txt" in everywhere.message
    assert asked[:3] == ["robots.txt", "/robots.txt", "0/robots.txt"]


def test_about_txt_served_as_a_directory_is_no_file(tmp_path: Path) -> None:
    """gophernicus serves a directory named about.txt as a menu: the draft says the server MUST
    have a *file* of that name, so that is an error (and /about.txt, a menu too, is asked)."""
    files = {**{k: v for k, v in HOLE.items() if k != "about.txt"}, "about.txt/contact.txt": "Ask.\n"}
    with gophernicus(tree(tmp_path / "hole", files)) as port:
        report = audit(f"gopher://{HOST}:{port}/", sample=0)
    found = finding(report, "gopher-about-not-file")
    assert found.severity == "error" and "a menu (a directory), not a file" in found.message
    assert "MUST have a file" in found.words and found.asked == "about.txt"
    assert ("error", "gopher-about-missing") not in codes(report)


def test_repeated_lint_findings_are_grouped(env: dict[str, str]) -> None:
    """14,000 lines that are no 'field: value' line: three shown, the rest counted in one line;
    --json keeps every one."""
    line = b"Hello from the one page this server has.\r\n"
    same = line * (600_000 // len(line))
    with _tcp_server(lambda request, port: same) as server:
        url = f"gopher://{HOST}:{server.port}/"
        p = manners("site", url, "--sample", "0", "--delay", "0.02", env=env)
        data = json.loads(manners("site", url, "--sample", "0", "--delay", "0.02", "--json", env=env).stdout)
    unparsable = [d for d in data["diagnostics"] if d["code"] == "unparsable"]
    assert len(unparsable) > 10_000
    shown = [text for text in p.stdout.splitlines() if ": unparsable:" in text]
    assert len(shown) == 4, shown
    assert shown[-1].strip() == (
        f"robots.txt: warning: unparsable: … and {len(unparsable) - 3:,} more"
        f" (lines {unparsable[3]['line']:,} to {unparsable[-1]['line']:,})"
    )
    assert len(p.stdout.splitlines()) < 60


def test_lint_and_the_matrix_read_records_after_the_star_alike(tmp_path: Path) -> None:
    """A record after 'User-agent: *' on a Gopher server: the matrix obeys it (the gopher reading
    reads every record), and lint says so, not that robots ignore it."""
    robots = "User-agent: *\r\nDisallow: /private\r\n\r\nUser-agent: mybot\r\nDisallow: /\r\n"
    with gophernicus(tree(tmp_path / "hole", {**HOLE, "robots.txt": robots})) as port:
        report = audit(f"gopher://{HOST}:{port}/", urls=["/0/hello.txt"])
    assert row(report, "/0/hello.txt")["mybot"] == (False, 5) and row(report, "/0/hello.txt")["*"][0]
    (after,) = [d for d in report.diagnostics if d.code == "after-star"]
    assert after.line == 4 and "Gopher robots read it" in after.message
    assert "ignore everything" not in after.message


def test_every_error_names_its_words_lint_s_too(web: dict[str, Any], env: dict[str, str]) -> None:
    """A soft 404 (an HTML page as robots.txt): lint's html error names RFC 9309 §2.3 and its words,
    on the terminal and in JSON."""
    url = f"http://{HOST}:{web['ports']['soft-404']}/"
    p = manners("site", url, "--delay", "0.02", "--sample", "0", env=env)
    lines = p.stdout.splitlines()
    (at,) = [n for n, text in enumerate(lines) if "error: html:" in text]
    assert lines[at + 1].strip().startswith('rests on RFC 9309 §2.3: "The rules MUST be accessible')
    errors = [text for text in lines if text.lstrip().startswith(("error:", "robots.txt:1: error:"))]
    assert errors and all(
        lines[lines.index(e) + 1].lstrip().startswith(("rests on", "asked:", "sent:")) for e in errors
    )
    data = json.loads(manners("site", url, "--delay", "0.02", "--sample", "0", "--json", env=env).stdout)
    agrees("manners site", data)
    (html,) = data["diagnostics"]
    assert html["basis"] == "RFC 9309 §2.3" and "MUST be UTF-8 encoded" in html["words"]


def test_a_gopher_robots_txt_selector_with_no_answer_keeps_robots_off_a_warning() -> None:
    """robots.txt is a type-3 error, /robots.txt stalls: robots must take everything as disallowed
    (the fetcher's reading), and the audit warns of it."""
    runner = _Loop()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        runner.writers.add(writer)
        line = (await reader.readline()).rstrip(b"\r\n")
        if line == b"/robots.txt":
            await asyncio.sleep(3600)  # cancelled when the server stops
        writer.write(b"3Not found\t\terror.host\t1\r\n.\r\n")
        writer.close()

    port = runner.serve(handle)
    try:
        report = audit(f"gopher://{HOST}:{port}/", timeout=1.0, sample=0, urls=["/x"])
    finally:
        runner.stop()
    assert report.robots.outcome == "unreachable" and row(report, "/x")["*"][0] is False
    kept_off = finding(report, "gopher-robots-unreachable")
    assert kept_off.severity == "warning" and kept_off.asked == "/robots.txt"
    assert "disallowed" in kept_off.message


def test_a_redirect_with_an_escape_in_its_location_is_an_answer(env: dict[str, str]) -> None:
    """A 301 whose Location holds ESC: the server answered (a redirect no robot can follow, so
    robots.txt is unavailable), as ``check`` reads it too; never "the server did not answer", and
    the escape is shown escaped."""

    def moved(line: bytes, port: int) -> bytes:
        return (
            b"HTTP/1.1 301 Moved Permanently\r\nLocation: /r\x1b]0;pwned\x07\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n"
        )

    with _tcp_server(moved) as server:
        url = f"http://{HOST}:{server.port}/"
        report = audit(url, urls=["/a"])
        p = manners("site", url, "--urls", "/dev/null", "--delay", "0.02", env=env)
        check = manners("check", f"{url}a", "--json", "--cache", "memory", env=env)
        asked = server.snapshot()
    assert report.reachable and report.robots.outcome == "unavailable" and report.robots.status == 301
    absent = finding(report, "http-robots-absent")
    assert "Location robots cannot follow ('/r\\x1b]0;pwned\\x07')" in absent.message
    assert p.returncode == 0, p.stderr
    assert "did not answer" not in p.stdout + p.stderr and "\x1b" not in p.stdout + p.stderr
    checked = json.loads(check.stdout)
    assert checked["robots"][0]["outcome"] == "unavailable" and checked["results"][0]["allowed"] is True
    assert len(asked) == 3  # one request each: the Location is never requested


def test_a_malformed_gemini_header_is_quoted_as_text_not_as_python() -> None:
    """What the server sent is quoted escaped, as every finding quotes it: no b'...' or
    bytearray(...) repr of Python's in a message."""
    with fault_server("answer", "gemini", answer=b"2x \x1b[31mtext/plain\r\n") as server:
        report = audit(server.url, sample=0)
    said = finding(report, "gemini-robots-unservable").message
    assert "malformed header '2x \\x1b[31mtext/plain'" in said, said
    assert "b'" not in said and "bytearray" not in said and "\x1b" not in said


def test_one_tls_failure_is_said_once(web: dict[str, Any], env: dict[str, str]) -> None:
    """nginx redirects robots.txt to https:// on its own plain port: the handshake fails.  The
    failure's words come once (robots.txt's meaning), the warning names it, no third copy."""
    url = f"http://{HOST}:{web['ports']['tls-to-plain']}/"
    p = manners("site", url, "--delay", "0.02", "--sample", "0", env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("the TLS handshake failed") == 1, p.stdout
    assert "robots.txt: the TLS handshake failed while fetching https://" in p.stdout
    assert "warning: http-robots-unreachable: robots.txt got no answer (tls-error)" in p.stdout
    assert "site-unanswered" not in p.stdout
