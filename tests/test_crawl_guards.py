"""The crawler's guards, one by one: the address policy, the directory lock, files that are
symlinks, the request check at the write point, and the frontier's bounds and counters.

The crawls against real servers that show the same guards from the servers' side are in
tests/test_crawl_hostile.py; these pin each guard's own rules.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from manners.crawl.client import gopher_get, request_problem
from manners.crawl.frontier import PAGES, SQLiteFrontier
from manners.crawl.outdir import CrawlFileError, DirLock, prepare
from manners.crawl.records import PageLog
from manners.fetch.address import POLICY, AddressPolicy, address_kind, parse_networks
from manners.fetch.net import Deadlines, NetworkError, connect
from proxy import fault_server

# -- addresses --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private (RFC 1918)"),
        ("172.16.0.1", "private (RFC 1918)"),
        ("172.31.255.255", "private (RFC 1918)"),
        ("192.168.1.1", "private (RFC 1918)"),
        ("fd00::1", "unique local (RFC 4193)"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("100.64.0.1", "shared (CGNAT, RFC 6598)"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("255.255.255.255", "broadcast"),
        ("192.0.2.1", "reserved (not globally routed)"),
        ("240.0.0.1", "reserved (not globally routed)"),
        ("2001:db8::1", "reserved (not globally routed)"),
    ],
)
def test_non_public_addresses_are_named(address: str, kind: str) -> None:
    assert address_kind(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize("address", ["::ffff:127.0.0.1", "::ffff:10.0.0.1", "2002:7f00:1::1"])
def test_ipv4_inside_ipv6_is_judged_by_the_ipv4_address(address: str) -> None:
    assert address_kind(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "1.1.1.1", "2606:4700::1111", "172.32.0.1", "100.128.0.1"]
)
def test_public_unicast_addresses_pass(address: str) -> None:
    assert address_kind(ipaddress.ip_address(address)) is None
    assert AddressPolicy.of(()).refuse("example.org", 70, address) is None


def test_seeds_authorities_exactly_and_allowed_networks() -> None:
    policy = AddressPolicy.of([("127.0.0.1", 7070), ("localhost", 1965)], parse_networks("10.0.0.0/8"))
    assert policy.refuse("127.0.0.1", 7070, "127.0.0.1") is None
    assert policy.refuse("localhost", 1965, "127.0.0.1") is None
    assert "loopback" in (policy.refuse("127.0.0.1", 7071, "127.0.0.1") or "")  # another port: refused
    assert "localhost resolves to it" in (policy.refuse("localhost", 70, "127.0.0.1") or "")
    assert policy.refuse("internal", 70, "10.9.8.7") is None
    assert policy.refuse("internal", 70, "192.168.0.1") is not None
    assert AddressPolicy.of((), True).refuse("x", 1, "127.0.0.1") is None


@pytest.mark.quick
@pytest.mark.parametrize("text", ["10.0.0.0/33", "nonsense", ",", ""])
def test_bad_networks_are_one_sentence(text: str) -> None:
    with pytest.raises(ValueError, match=r"CIDR|no IP address"):
        parse_networks(text)


def test_connect_refuses_what_the_policy_refuses_and_sends_nothing() -> None:
    """The check sits in connect itself: a refused address is never connected to."""
    with fault_server("answer", "gopher", answer=b"iok\t\tx\t0\r\n.\r\n") as server:

        async def attempt(policy: AddressPolicy | None) -> str:
            POLICY.set(policy)
            try:
                _, writer = await connect("127.0.0.1", server.port, Deadlines.of(3))
            except NetworkError as exc:
                return exc.name
            writer.close()
            return "connected"

        assert asyncio.run(attempt(AddressPolicy.of(()))) == "address-refused"
        time.sleep(0.2)
        assert server.connections == []
        assert asyncio.run(attempt(AddressPolicy.of([("127.0.0.1", server.port)]))) == "connected"
        assert asyncio.run(attempt(None)) == "connected"


# -- the request written ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "search", "problem"),
    [
        (b"/ok/selector", False, None),
        (b"/a\r\nINJECTED", False, "CR"),
        (b"/a\nB", False, "LF"),
        (b"A\x00B", False, "NUL"),
        (b"D\tTABBED", False, "TAB"),
        (b"/search\trobots", True, None),
        (b"/search\tq\r\nX", True, "CR"),
        (b"/" + b"x" * 1024, False, "1024"),
        (b"/" + b"x" * 1023, False, None),
    ],
)
def test_request_problem(line: bytes, search: bool, problem: str | None) -> None:
    found = request_problem(line, search_allowed=search)
    assert (found is None) == (problem is None)
    if problem is not None:
        assert found is not None and problem in found


@pytest.mark.parametrize("url", ["gopher://127.0.0.1:{port}/0/a%0D%0AINJECTED", "gopher://127.0.0.1:{port}/0A%00B",
                                 "gopher://127.0.0.1:{port}/0D%09TABBED"])  # fmt: skip
def test_a_dirty_gopher_request_is_never_written(url: str) -> None:
    """Whatever reaches the client: the bytes are checked at the one place they are written."""
    with fault_server("answer", "gopher", answer=b"hello\r\n") as server:
        r = asyncio.run(gopher_get(url.format(port=server.port), timeout=3, max_bytes=1000))
        time.sleep(0.2)
        assert r.error is not None and r.error.startswith("not sent")
        assert server.connections == []


# -- the directory ----------------------------------------------------------------------------


def test_lock_names_its_holder_and_dies_with_it(tmp_path: Path) -> None:
    hold = (
        "import sys, time; from pathlib import Path; from manners.crawl.outdir import DirLock;"
        " DirLock(Path(sys.argv[1])); print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        with pytest.raises(CrawlFileError, match=f"pid {holder.pid}"):
            DirLock(tmp_path)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    DirLock(tmp_path).release()  # the kernel let go of it with its holder


@pytest.mark.parametrize("name", ["pages.jsonl", "warc", "frontier.sqlite3", "frontier.sqlite3-wal"])
def test_a_planted_symlink_is_refused(tmp_path: Path, name: str) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(victim)
    with pytest.raises(CrawlFileError, match="symbolic link"):
        prepare(out)
    assert victim.read_text() == "precious\n"


def test_pages_log_refuses_a_symlink_even_past_prepare(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious, no newline")
    (tmp_path / "pages.jsonl").symlink_to(victim)
    with pytest.raises(CrawlFileError, match="symbolic link"):
        PageLog(tmp_path / "pages.jsonl")
    assert victim.read_text() == "precious, no newline"


def test_read_only_directory_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    """Run as an unprivileged user (root writes anywhere): a directory it cannot write to."""
    base = Path(tempfile.mkdtemp(prefix="manners-ro-", dir="/tmp"))
    try:
        base.chmod(0o755)
        out = base / "out"
        out.mkdir(mode=0o555)
        as_nobody = (
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        )
        p = subprocess.run(
            [*as_nobody, sys.executable, "-m", "manners", "crawl", "gopher://127.0.0.1:9/", "--agent", "x",
             "--out", str(out), "--cache", "memory"],
            capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(base)},
        )  # fmt: skip
        assert p.returncode == 2, p.stderr
        assert "Traceback" not in p.stderr
        assert "cannot write to" in p.stderr and len(p.stderr.strip().splitlines()) == 1
        assert list(out.iterdir()) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_pages_log_is_ascii_so_no_control_reaches_a_terminal(tmp_path: Path) -> None:
    with PageLog(tmp_path / "pages.jsonl") as log:
        log.write({"title": "evil \u009b31m \u202egnp.exe \x1b[2J", "selector": "\udcff\udcfe"})
    raw = (tmp_path / "pages.jsonl").read_bytes()
    assert raw.isascii() and b"\x1b" not in raw
    record = json.loads(raw)
    assert record["title"] == "evil \u009b31m \u202egnp.exe \x1b[2J"
    assert record["selector"] == "\\xff\\xfe"  # bytes that were not UTF-8, as their escapes


# -- the frontier -----------------------------------------------------------------------------


def test_queue_per_authority_is_bounded_and_the_rest_counted(tmp_path: Path) -> None:
    async def run() -> None:
        f = SQLiteFrontier(tmp_path / "f.sqlite3", max_queued=3)
        new = await f.add_many([f"gemini://a.example/{i}" for i in range(10)], 1)
        assert len(new) == 3 and f.dropped == 7
        assert len(await f.add_many(["gemini://b.example/x", "gemini://a.example/0"], 1)) == 1
        assert f.dropped == 7  # a URL already known is not "dropped"
        lease = await f.lease("gemini://a.example:1965", "me", 60)
        assert lease is not None
        await f.done(lease.url, "fetched", ["gemini://a.example/new"], depth=2, page=True)
        counts = await f.counts()
        assert counts["queued"] == 4 and counts[PAGES] == 1  # room for one more after the lease
        await f.close()

    asyncio.run(run())


def test_requeue_errors_and_retry_without_an_attempt(tmp_path: Path) -> None:
    async def run() -> None:
        f = SQLiteFrontier(tmp_path / "f.sqlite3")
        await f.add_many(["gemini://a.example/1", "gemini://a.example/2"], 0)
        one = await f.lease("gemini://a.example:1965", "me", 60)
        assert one is not None
        await f.retry(one.url, 0, attempt=False)
        again = await f.lease("gemini://a.example:1965", "me", 60)
        assert again is not None and again.url == one.url and again.attempts == 0
        await f.done(again.url, "error")
        two = await f.lease("gemini://a.example:1965", "me", 60)
        assert two is not None
        await f.done(two.url, "fetched")
        assert (await f.counts())["error"] == 1
        assert await f.requeue("error") == 1
        counts = await f.counts()
        assert counts["error"] == 0 and counts["queued"] == 1 and counts["done"] == 1
        back = await f.lease("gemini://a.example:1965", "me", 60)
        assert back is not None and back.url == one.url
        await f.close()

    asyncio.run(run())


def test_a_dns_failure_is_an_unreachable_error_never_disallowed(tmp_path: Path) -> None:
    """In a network namespace of its own (no route anywhere, so no query leaves this machine) a
    name cannot be resolved: robots.txt is retried, then the URL settled as an error."""
    out = tmp_path / "out"
    p = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "manners", "crawl", "gopher://nowhere.invalid/1/",
         "--agent", "x", "--out", str(out), "--cache", "memory", "--timeout", "2", "--min-delay", "0.05",
         "--robots-backoff", "0.2", "--robots-attempts", "2"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    assert {r["url"] for r in rows} == {"gopher://nowhere.invalid/1/", "gopher://nowhere.invalid/0caps.txt"}
    for row in rows:
        assert row["outcome"] == "error", row
        assert row["reason"].startswith("unreachable") and "dns-error" in row["reason"], row
        assert "disallowed" not in row["reason"], row
