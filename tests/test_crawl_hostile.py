"""``manners crawl`` against hostile and failing servers, and a crawl directory misused.

Each test starts real servers on loopback (gophernicus, pygopherd, jetforce) or, for what no real
server does on demand, a purpose-built one (tests/hostile.py), runs ``python -m manners crawl`` as
a subprocess and reads what the servers received: the logging proxy's connections, jetforce's
access log, the purpose-built servers' byte logs. What the crawler says (pages.jsonl, its exit
status and sentences) is checked too, but never instead.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

import hostile
import servers
from proxy import LoggingProxy, fault_server, logging_proxy

HOST = "127.0.0.1"
AGENT = "testbot"
ROBOTS_SELECTORS = {"robots.txt", "/robots.txt", "0/robots.txt"}
META = ROBOTS_SELECTORS | {"caps.txt"}
SLACK = 0.02  # seconds of timer granularity between the crawler's clock and a server's
ROOT = Path(__file__).parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
# memory cache: no robots.txt carried between tests (or runs) through a shared file
QUICK = ["--agent", AGENT, "--cache", "memory", "--timeout", "3"]
ALLOW_ALL = "User-agent: *\nDisallow:\n"


# --------------------------------------------------------------------------- helpers


def command(*args: object) -> list[str]:
    return [sys.executable, "-m", "manners", "crawl", *map(str, args)]


def crawl(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``manners crawl ARGS`` in a subprocess, to its end."""
    return subprocess.run(command(*args), capture_output=True, text=True, env=ENV, timeout=timeout)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result


def one_sentence(result: subprocess.CompletedProcess[str], status: int = 2) -> str:
    """The one line a refused crawl prints on stderr (exit ``status``, no traceback)."""
    assert result.returncode == status, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def names_the_limit(result: subprocess.CompletedProcess[str], option: str) -> bool:
    """A line of the output says to raise ``option`` (the limit the crawl stopped at)."""
    lines = (result.stdout + result.stderr).splitlines()
    return any(option in line and "raise" in line.lower() for line in lines)


def records(out: Path) -> list[dict[str, Any]]:
    path = out / "pages.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def pages(selectors: list[str]) -> list[str]:
    """Page requests among Gopher request lines: not robots.txt (or its fallbacks), not caps.txt."""
    return [s for s in selectors if s not in META]


def frontier_urls(out: Path) -> list[str]:
    db = sqlite3.connect(f"file:{out / 'frontier.sqlite3'}?mode=ro", uri=True)
    try:
        return [row[0] for row in db.execute("SELECT url FROM urls")]
    finally:
        db.close()


def write(root: Path, files: Mapping[str, str | bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)


@contextmanager
def hole(root: Path, files: Callable[[int], dict[str, str | bytes]]) -> Iterator[LoggingProxy]:
    """gophernicus serving ``files(port)`` (``port``: the one its menus name) behind a logging
    proxy; yields the proxy, whose port is the hole's public port."""
    with logging_proxy(0, gopher=True) as proxy:
        write(root, files(proxy.port))
        with servers.gophernicus(root, advertised_port=proxy.port) as port:
            proxy.upstream = (HOST, port)
            yield proxy


@contextmanager
def capsule(root: Path, files: Mapping[str, str | bytes], **options: Any) -> Iterator[servers.JetforceHosts]:
    """jetforce serving ``files`` for gemini://localhost:PORT/, requests logged with their time."""
    write(root, files)
    with servers.jetforce_hosts([root], **options) as jet:
        yield jet


def gemini_url(jet: servers.JetforceHosts, path: str = "/") -> str:
    return f"gemini://localhost:{jet.public_ports[0]}{path}"


def requested_paths(jet: servers.JetforceHosts) -> list[str]:
    """Paths of the URLs jetforce was asked for (robots.txt included)."""
    return [re.sub(r"^gemini://[^/]+", "", url) for url in jet.urls()]


def gopher_fetch(port: int, selector: bytes) -> bytes:
    with socket.create_connection((HOST, port), timeout=5) as sock:
        sock.sendall(selector + b"\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def wait_for(condition: Callable[[], bool], limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit:g} s: {what}")
        time.sleep(0.05)


def run_measured(cmd: list[str], limit: float, work: Path) -> tuple[int, int, str]:
    """Run ``cmd``; return its exit status, its own peak RSS in bytes and what it printed.
    Killed (the test failed) after ``limit`` s.  The peak is read from ``VmHWM`` in /proc while
    it runs, not from wait4: a child forked from a large pytest process shares (and is charged
    for) the parent's pages until it execs, which wait4's ru_maxrss counts."""
    log = work / "measured.log"
    with open(log, "wb") as output:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=output, stderr=output, env=ENV)
        proc.returncode = hostile.wait_measured(proc.pid, limit, cmd)
        peak = hostile.PEAKS.pop(proc.pid)
    return proc.returncode, peak, log.read_text(errors="replace")


def gopher_selector_of(url: str) -> str:
    """The selector of a gopher:// URL with a type (as a menu of gophernicus names it)."""
    path = url.split("/", 3)[3]
    return path[1:]


# --------------------------------------------------------------------------- depth


def test_max_depth_holds_in_a_gopher_trap(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with hostile.gopher_trap(fan=2) as trap:
        seed = f"gopher://{HOST}:{trap.port}/1/d/0/0"
        ok(crawl(seed, "--out", out, "--max-depth", 2, "--min-delay", 0.05, "--max-pages", 40, *QUICK))
        asked = pages(trap.selectors())
    depths = [hostile.trap_depth(s) for s in asked]
    assert None not in depths, asked
    # the server saw nothing deeper than --max-depth
    assert sorted({d for d in depths if d is not None}) == [0, 1, 2]
    assert sorted(asked) == ["/d/0/0", "/d/1/0", "/d/1/1", "/d/2/0", "/d/2/1"]
    fetched = [r for r in records(out) if r["outcome"] == "fetched" and "/d/" in r["url"]]
    for r in fetched:
        n = hostile.trap_depth(gopher_selector_of(r["url"]))
        assert r["depth"] == n, r  # pages.jsonl's depth is the true depth
    assert sorted({r["depth"] for r in fetched}) == [0, 1, 2]


def test_a_redirect_target_keeps_the_depth_of_the_redirecting_url(tmp_path: Path) -> None:
    out = tmp_path / "out"
    files = {
        "index.gmi": "# Home\n=> /docs Documents without the slash (jetforce answers 31)\n",
        "docs/index.gmi": "# Documents\n=> /deeper.gmi Deeper\n",
        "deeper.gmi": "# Deeper\n",
    }
    with capsule(tmp_path / "capsule", files) as jet:
        ok(crawl(gemini_url(jet), "--out", out, "--max-depth", 1, "--min-delay", 0.05, *QUICK))
        asked = requested_paths(jet)
    assert "/docs" in asked and "/docs/" in asked  # the 31's target, at the depth of /docs (1)
    assert "/deeper.gmi" not in asked  # linked from depth 1: depth 2
    got = {r["url"]: r for r in records(out)}
    assert got[gemini_url(jet, "/docs/")]["depth"] == 1
    assert got[gemini_url(jet, "/docs")]["depth"] == 1
    assert got[gemini_url(jet)]["depth"] == 0


# --------------------------------------------------------------------------- identity and limits


def _roles_hole(port: int) -> dict[str, str | bytes]:
    menu = [f"0Public {i}\t/pub{i}.txt" for i in range(4)] + [
        f"0Secret {i}\t/secret{i}.txt" for i in range(3)
    ]
    files: dict[str, str | bytes] = {"gophermap": "\n".join(menu) + "\n"}
    files["robots.txt"] = "User-agent: archiver\nDisallow: /secret\n\nUser-agent: *\nDisallow:\n"
    for i in range(4):
        files[f"pub{i}.txt"] = f"public {i}\n"
    for i in range(3):
        files[f"secret{i}.txt"] = f"secret {i}\n"
    return files


def test_a_resume_without_roles_keeps_the_roles_of_the_crawl(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with hole(tmp_path / "hole", _roles_hole) as proxy:
        seed = f"gopher://{HOST}:{proxy.port}/1/"
        first = subprocess.Popen(
            command(seed, "--out", out, "--role", "archiver", "--min-delay", 1.0, *QUICK),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
        )  # fmt: skip
        try:
            wait_for(lambda: any(r["url"] == seed for r in records(out)), 30, "the seed settled")
            first.send_signal(signal.SIGTERM)
            first.communicate(timeout=30)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        before = pages(proxy.selectors())
        assert len(before) < 3  # stopped early: most of the hole is left for the resume
        ok(crawl("--agent", AGENT, "--out", out, "--cache", "memory", "--timeout", 3, "--min-delay", 0.05))
        asked = pages(proxy.selectors())
    assert not [s for s in asked if s.startswith("/secret")]  # robots.txt for archiver, still
    assert {f"/pub{i}.txt" for i in range(4)} <= set(asked)  # the resume did crawl
    disallowed = {r["url"] for r in records(out) if r["outcome"] == "disallowed"}
    assert {f"gopher://{HOST}:{proxy.port}/0/secret{i}.txt" for i in range(3)} <= disallowed


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (["--agent", "otherbot"], "agent"),
        (["--agent", AGENT, "--role", "indexer"], "role"),
        (["--agent", AGENT, "--role", "archiver", "--role", "indexer"], "role"),
        (["--agent", AGENT, "--role", "archiver", "--scope", "any"], "scope"),
    ],
    ids=["agent", "roles", "more-roles", "scope"],
)
def test_a_resume_with_another_identity_is_refused(tmp_path: Path, change: list[str], named: str) -> None:
    out = tmp_path / "out"
    with hole(tmp_path / "hole", _roles_hole) as proxy:
        seed = f"gopher://{HOST}:{proxy.port}/1/"
        ok(crawl(seed, "--out", out, "--role", "archiver", "--max-pages", 1, "--min-delay", 0.05, *QUICK))
        seen = len(proxy.selectors())
        settled = (out / "pages.jsonl").read_bytes()
        refused = crawl(*change, "--out", out, "--cache", "memory", "--timeout", 3, "--min-delay", 0.05,
                        "--max-pages", 10, timeout=60)  # fmt: skip
        sentence = one_sentence(refused)
        assert named in sentence.lower()
        assert len(proxy.selectors()) == seen  # nothing was requested
        assert (out / "pages.jsonl").read_bytes() == settled
        # the same identity resumes
        ok(crawl("--agent", AGENT, "--role", "archiver", "--out", out, "--cache", "memory", "--timeout", 3,
                 "--min-delay", 0.05, "--max-pages", 10))  # fmt: skip
        assert len(proxy.selectors()) > seen


def _files_hole(n: int) -> Callable[[int], dict[str, str | bytes]]:
    def files(port: int) -> dict[str, str | bytes]:
        out: dict[str, str | bytes] = {"robots.txt": ALLOW_ALL}
        out["gophermap"] = "".join(f"0File {i}\t/f{i}.txt\n" for i in range(n))
        out.update({f"f{i}.txt": f"file {i}\n" for i in range(n)})
        return out

    return files


def test_max_pages_counts_page_requests_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with hole(tmp_path / "hole", _files_hole(8)) as proxy:
        seed = f"gopher://{HOST}:{proxy.port}/1/"
        result = ok(crawl(seed, "--out", out, "--max-pages", 3, "--min-delay", 0.05, *QUICK))
        asked = proxy.selectors()
    assert len(pages(asked)) == 3, asked  # robots.txt and caps.txt are not pages
    assert "robots.txt" in asked
    assert names_the_limit(result, "--max-pages")


def test_max_pages_raised_on_resume_counts_over_the_whole_crawl(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with hole(tmp_path / "hole", _files_hole(8)) as proxy:
        seed = f"gopher://{HOST}:{proxy.port}/1/"
        first = ok(crawl(seed, "--out", out, "--max-pages", 2, "--min-delay", 0.05, *QUICK))
        assert len(pages(proxy.selectors())) == 2
        assert names_the_limit(first, "--max-pages")
        # no seeds, no --agent: the robot is the crawl's
        ok(crawl("--out", out, "--max-pages", 4, "--min-delay", 0.05, "--cache", "memory", "--timeout", 3))
        asked = pages(proxy.selectors())
    assert len(asked) == 4 and len(set(asked)) == 4, asked  # 4 in all, none twice


# --------------------------------------------------------------------------- unreachable robots.txt


def test_unreachable_robots_txt_parks_the_host_then_retry_errors_fetches(tmp_path: Path) -> None:
    out = tmp_path / "out"
    port = servers.free_port()  # nobody listens there (yet)
    seed = f"gopher://{HOST}:{port}/1/"
    start = time.monotonic()
    ok(
        crawl(
            seed, "--out", out, "--robots-backoff", 0.2, "--robots-attempts", 3, "--min-delay", 0.05, *QUICK
        )
    )
    assert time.monotonic() - start < 30
    got = {r["url"]: r for r in records(out)}
    assert got[seed]["outcome"] == "error" and "unreachable" in got[seed]["reason"], got[seed]
    assert not [r for r in got.values() if r["outcome"] == "disallowed"]

    with logging_proxy(0, port=port, gopher=True) as proxy:
        write(tmp_path / "hole", _files_hole(3)(port))
        with servers.gophernicus(tmp_path / "hole", advertised_port=port) as real:
            proxy.upstream = (HOST, real)
            ok(crawl("--out", out, "--retry-errors", "--min-delay", 0.05, *QUICK))
            asked = pages(proxy.selectors())
    assert sorted(asked) == ["/", "/f0.txt", "/f1.txt", "/f2.txt"]
    fetched = {r["url"] for r in records(out) if r["outcome"] == "fetched"}
    assert seed in fetched and f"gopher://{HOST}:{port}/0/f2.txt" in fetched


def test_a_host_given_up_is_not_asked_again_for_urls_found_later(tmp_path: Path) -> None:
    """A host whose robots.txt failed every attempt is done with for the run: a link to it found
    after its last failure has expired (a cross link from a slower host) is settled unreachable
    without another robots.txt request.  At the small net's size, thousands of links point at
    dead capsules: each would otherwise cost another attempt."""
    out = tmp_path / "out"
    with fault_server("answer", "gemini", answer=b"41 Server unavailable\r\n") as dead:
        late = f"{dead.url}late.gmi"

        def files(port: int) -> dict[str, str | bytes]:  # the link to the dead host is two menus deep
            return {
                "robots.txt": ALLOW_ALL,
                "gophermap": f"1Deeper\t/sub\t{HOST}\t{port}\n",
                "sub/gophermap": f"hThe dead capsule\tURL:{late}\t{HOST}\t{port}\n",
            }

        with hole(tmp_path / "hole", files) as proxy:
            seed = f"gopher://{HOST}:{proxy.port}/1/"
            # the dead capsule's 2 attempts (0.1 then 0.2 s backoff) are over in well under a second;
            # the hole's second menu, 1 s after its first, finds the late link after that
            ok(crawl(dead.url, seed, "--out", out, "--robots-backoff", 0.1, "--robots-attempts", 2,
                     "--min-delay", 1, "--scope", "any", *QUICK, timeout=60))  # fmt: skip
            asked = dead.requests()
    assert len(asked) == 2 and all(r.endswith(b"/robots.txt") for r in asked), asked
    got = {r["url"]: r for r in records(out)}
    assert got[late]["outcome"] == "error" and "in 2 attempts" in got[late]["reason"], got[late]
    assert got[dead.url]["outcome"] == "error", got[dead.url]


def test_a_host_given_up_stays_given_up_when_the_crawl_is_resumed_not_with_retry_errors(
    tmp_path: Path,
) -> None:
    """Given up for the crawl, not for one process's life: a run resumed (after a kill, say) that
    meets a new URL of the host settles it unreachable without reading robots.txt again (the
    space bench's resumed crawl ended on two dead capsules' attempts, long after its last page);
    a run started with ``--retry-errors`` is there to try it again, and does."""
    out = tmp_path / "out"
    options = ("--robots-backoff", 0.1, "--robots-attempts", 2, "--min-delay", 0.05, "--scope", "any", *QUICK)
    with fault_server("answer", "gemini", answer=b"41 Server unavailable\r\n") as dead:
        ok(crawl(dead.url, "--out", out, *options, timeout=60))
        assert len(dead.requests()) == 2
        later = f"{dead.url}later.gmi"
        ok(crawl(later, "--out", out, *options, timeout=60))
        assert len(dead.requests()) == 2, dead.requests()  # resumed: nothing asked of it
        got = {r["url"]: r for r in records(out)}
        assert got[later]["outcome"] == "error" and "in 2 attempts" in got[later]["reason"], got[later]
        ok(crawl("--out", out, "--retry-errors", *options, timeout=60))
        asked = dead.requests()
    assert len(asked) == 4 and all(r.endswith(b"/robots.txt") for r in asked), asked


@pytest.mark.parametrize("scheme", ["gopher", "gemini"])
def test_robots_txt_timing_out_is_retried_with_backoff_never_a_verdict(tmp_path: Path, scheme: str) -> None:
    out = tmp_path / "out"
    with fault_server("silent", scheme) as server:  # type: ignore[arg-type]
        seed = server.url + ("1/" if scheme == "gopher" else "")
        start = time.monotonic()
        ok(crawl(seed, "--out", out, "--robots-backoff", 0.5, "--robots-attempts", 3, "--min-delay", 0.05,
                 "--agent", AGENT, "--cache", "memory", "--timeout", 1, timeout=60))  # fmt: skip
        took = time.monotonic() - start
        asked = server.requests()
        times = [c.opened_monotonic for c in server.connections]
    if scheme == "gopher":
        assert set(asked) <= {s.encode() for s in ROBOTS_SELECTORS}, asked  # never the page
    else:
        assert all(r.endswith(b"/robots.txt") for r in asked), asked
    assert len(asked) >= 3  # tried again after the first timeout (3 attempts)
    assert times[-1] - times[0] >= 0.5 + 1.0 - SLACK  # a backoff between attempts, doubling
    assert took < 40
    (record,) = [r for r in records(out) if r["url"] == seed]
    assert record["outcome"] == "error" and "unreachable" in record["reason"]


def test_ctrl_c_while_robots_txt_fetches_wait_their_turn_ends_without_a_traceback(tmp_path: Path) -> None:
    """Hosts that accept a connection and never answer: with --concurrency 1 one robots.txt
    fetch holds the place and the others wait for it.  Ctrl-C ends the run (130) once the one in
    flight times out, and the waiting fetches, cancelled, let go of the robots.txt cache's fetch
    locks before the cache is closed: no "unhandled exception" at shutdown."""
    silent = []
    for _ in range(5):
        listening = socket.create_server((HOST, 0))  # the kernel accepts; nobody reads
        silent.append(listening)
    seeds = [f"gemini://localhost:{s.getsockname()[1]}/" for s in silent]
    cache = f"sqlite:///{tmp_path / 'robots.sqlite3'}"  # a store whose lock is released by a write
    args = [*seeds, "--agent", AGENT, "--out", tmp_path / "out", "--allow-private", "--concurrency", "1",
            "--timeout", "3", "--cache", cache, "--no-warc"]  # fmt: skip
    try:
        run = subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                               text=True)  # fmt: skip
        ledger = tmp_path / "out"
        deadline = time.monotonic() + 30
        while (
            not any(ledger.glob("requests-*.jsonl"))
            or not next(ledger.glob("requests-*.jsonl")).stat().st_size
        ):
            assert time.monotonic() < deadline and run.poll() is None, "no request began"
            time.sleep(0.05)
        time.sleep(0.3)  # the other hosts' fetches are at the gate
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=30)
    finally:
        for listening in silent:
            listening.close()
    assert run.returncode == 130, stderr
    assert "Traceback" not in stderr and "unhandled exception" not in stderr, stderr
    assert stdout.splitlines()[0].startswith("interrupted"), stdout


def test_robots_txt_temporary_failure_is_retried_not_a_verdict(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with fault_server("answer", "gemini", answer=b"41 Server unavailable\r\n") as server:
        seed = server.url
        ok(crawl(seed, "--out", out, "--robots-backoff", 0.2, "--robots-attempts", 3, "--min-delay", 0.05,
                 *QUICK, timeout=60))  # fmt: skip
        asked = server.requests()
    assert asked and all(r.endswith(b"/robots.txt") for r in asked), asked  # never the page
    assert len(asked) >= 3
    (record,) = [r for r in records(out) if r["url"] == seed]
    assert record["outcome"] == "error" and "unreachable" in record["reason"], record


# --------------------------------------------------------------------------- clean requests


CR_LF = "%0D%0Ainjected"


def test_no_control_bytes_or_oversized_selectors_are_sent(tmp_path: Path) -> None:
    out = tmp_path / "out"
    long_a, long_c, long_g = "a" * 2000, "c" * 2000, "g" * 2000
    with hostile.byte_logger(gopher=True) as sink:
        s = sink.port
        gem = {
            "index.gmi": "\n".join([
                "# Hostile links",
                f"=> gopher://{HOST}:{s}/0/g-crlf{CR_LF}",
                f"=> gopher://{HOST}:{s}/0/g-lf%0Ainjected",
                f"=> gopher://{HOST}:{s}/0/g-nul%00byte",
                f"=> gopher://{HOST}:{s}/0/g-tab%09search",
                f"=> gopher://{HOST}:{s}/0/{long_c}",
                f"=> /{long_g}.gmi",
                "=> ok.gmi A fine page",
            ]) + "\n",
            "ok.gmi": "# Fine\n",
        }  # fmt: skip

        def gopher_files(port: int) -> dict[str, str | bytes]:
            return {
                "robots.txt": ALLOW_ALL,
                "gophermap": "\n".join([
                    "iHostile links",
                    f"hCRLF\tURL:gopher://{HOST}:{s}/0/crlf{CR_LF}",
                    f"hLF\tURL:gopher://{HOST}:{s}/0/lf%0Ainjected",
                    f"hNUL\tURL:gopher://{HOST}:{s}/0/nul%00byte",
                    f"hTAB\tURL:gopher://{HOST}:{s}/0/tab%09search",
                    "1A menu written byte for byte\t/hostile.menu",
                    "0Fine\t/fine.txt",
                ]) + "\n",
                # served as it is: a 2,000-byte selector, a raw CR and a raw NUL in selectors
                "hostile.menu": (
                    f"0Long\t/{long_a}\t{HOST}\t{s}\r\n"
                    f"0Raw CR\t/raw\rcr\t{HOST}\t{s}\r\n"
                    f"0Raw NUL\t/raw\x00nul\t{HOST}\t{s}\r\n"
                    ".\r\n"
                ).encode(),
                "fine.txt": "fine\n",
            }  # fmt: skip

        with hole(tmp_path / "hole", gopher_files) as proxy, capsule(tmp_path / "capsule", gem) as jet:
            served = gopher_fetch(proxy.port, b"/hostile.menu")
            assert long_a.encode() in served and b"/raw\rcr\t" in served and b"/raw\x00nul\t" in served
            seeds = [f"gopher://{HOST}:{proxy.port}/1/", gemini_url(jet), f"gopher://{HOST}:{s}/1/"]
            ok(crawl(*seeds, "--out", out, "--role", "archiver", "--min-delay", 0.05, *QUICK))
            gopher_lines = [c.request or b"" for c in proxy.snapshot()]
            gemini_asked = jet.urls()
            gemini_paths = requested_paths(jet)
        received = sink.snapshot()

    assert any(c.request == b"/" for c in received)  # the sink was crawled: its requests are read
    for conn in received:
        data = conn.data
        assert data.endswith(b"\r\n") and data.count(b"\n") == 1, data[:200]
        assert b"\r" not in data[:-2] and b"\x00" not in data and b"\t" not in data, data[:200]
        assert len(data) <= 1024 + 2
    everything = b"".join(c.data for c in received)
    for sent in (b"injected", b"byte", b"search", b"raw", b"a" * 1025, b"c" * 1025):
        assert sent not in everything
    for line in gopher_lines:
        assert not set(line) & {0, 9, 10, 13} and len(line) <= 1024, line[:200]
    assert "/ok.gmi" in gemini_paths
    assert all(len(u.encode()) <= 1024 for u in gemini_asked)
    assert not [u for u in gemini_asked if "g" * 100 in u]

    skipped = [r for r in records(out) if r["outcome"] == "skipped"]
    for marker in ("crlf%0d%0a", "lf%0a", "nul%00", "tab%09", "raw%0d", "raw%00"):
        for where in ("g-", ""):
            if where == "g-" and marker.startswith("raw"):
                continue
            found = [r for r in skipped if f"/0/{where}{marker}" in r["url"].lower()]
            assert found and all(r.get("reason") for r in found), (where, marker)
    queued = frontier_urls(out)
    assert not [u for u in queued if any(x * 1025 in u for x in "acg")]  # never queued either


# --------------------------------------------------------------------------- address policy


def _internal_links(internal: int) -> tuple[Callable[[int], dict[str, str | bytes]], dict[str, str | bytes]]:
    def gopher_files(port: int) -> dict[str, str | bytes]:
        return {
            "robots.txt": ALLOW_ALL,
            "gophermap": (
                f"0Admin\t/admin\t{HOST}\t{internal}\n"
                f"hAdmin by URL\tURL:gopher://{HOST}:{internal}/0/admin-url\n"
                "0Fine\t/fine.txt\n"
            ),
            "fine.txt": "fine\n",
        }

    gem: dict[str, str | bytes] = {
        "index.gmi": (
            "# Links inside\n"
            f"=> gopher://{HOST}:{internal}/0/admin-gem\n"
            f"=> gemini://localhost:{internal}/by-name\n"
            f"=> gemini://{HOST}:{internal}/by-address\n"
            "=> ok.gmi\n"
        ),
        "ok.gmi": "# Fine\n",
    }
    return gopher_files, gem


@pytest.mark.parametrize(
    ("options", "reached"),
    [
        (["--scope", "any"], False),
        (["--scope", "seeds"], False),
        (["--scope", "any", "--allow-private", "10.0.0.0/8,fd00::/8"], False),
        (["--scope", "any", "--allow-private"], True),
        (["--scope", "any", "--allow-private", "127.0.0.0/8"], True),
    ],
    ids=["any", "seeds", "any-other-networks", "allow-private", "allow-loopback"],
)
def test_links_to_internal_addresses_are_never_connected_to(
    tmp_path: Path, options: list[str], reached: bool
) -> None:
    out = tmp_path / "out"
    with hostile.byte_logger() as internal:
        gopher_files, gem = _internal_links(internal.port)
        with hole(tmp_path / "hole", gopher_files) as proxy, capsule(tmp_path / "capsule", gem) as jet:
            seeds = [f"gopher://{HOST}:{proxy.port}/1/", gemini_url(jet)]
            ok(crawl(*seeds, "--out", out, *options, "--min-delay", 0.05, "--robots-backoff", 0.2,
                     "--robots-attempts", 2, *QUICK))  # fmt: skip
            asked = pages(proxy.selectors())
            gem_asked = requested_paths(jet)
        connections = internal.snapshot()
    assert "/fine.txt" in asked and "/ok.gmi" in gem_asked  # the crawl went on around them
    if reached:
        assert connections  # allowed: the test can see a connection when there is one
        return
    assert connections == [] and internal.received() == b""
    if options[1] == "any":
        skipped = {r["url"]: r for r in records(out) if r["outcome"] == "skipped"}
        for url in (
            f"gopher://{HOST}:{internal.port}/0/admin",
            f"gopher://{HOST}:{internal.port}/0/admin-url",
            f"gopher://{HOST}:{internal.port}/0/admin-gem",
            f"gemini://localhost:{internal.port}/by-name",
            f"gemini://{HOST}:{internal.port}/by-address",
        ):
            assert url in skipped and skipped[url].get("reason"), url


# --------------------------------------------------------------------------- one writer


def test_a_second_crawl_on_the_same_directory_is_refused_until_the_first_dies(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with hole(tmp_path / "hole", _files_hole(6)) as proxy:
        seed = f"gopher://{HOST}:{proxy.port}/1/"
        first = subprocess.Popen(
            command(seed, "--out", out, "--min-delay", 1.0, *QUICK),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
        )  # fmt: skip
        try:
            wait_for(lambda: len(proxy.selectors()) >= 2, 30, "the first crawl under way")
            second = crawl(seed, "--out", out, "--min-delay", 0.05, *QUICK, timeout=60)
            sentence = one_sentence(second)
            assert re.search(rf"\b{first.pid}\b", sentence), sentence
            assert first.poll() is None  # the first one goes on, untouched
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        ok(crawl("--out", out, "--min-delay", 0.05, *QUICK))
        asked = pages(proxy.selectors())
    assert {"/", *(f"/f{i}.txt" for i in range(6))} <= set(asked)
    fetched = {r["url"] for r in records(out) if r["outcome"] == "fetched"}
    assert f"gopher://{HOST}:{proxy.port}/0/f5.txt" in fetched


# --------------------------------------------------------------------------- media types


def _cgi(header: str, body: str) -> str:
    """A CGI script printing ``header``, CRLF and ``body`` (printf escapes: \\n, \\351...)."""
    return f"#!/bin/sh\nprintf '{header}\\r\\n{body}\\n'\n"


def test_text_gemini_with_parameters_and_any_case_is_gemtext(tmp_path: Path) -> None:
    out = tmp_path / "out"
    files: dict[str, str | bytes] = {
        "index.gmi": "# Home\n=> a.gmi\n=> cgi-bin/latin\n=> cgi-bin/upper\n=> cgi-bin/quoted\n",
        "a.gmi": "# A\n=> b.gmi\n",
        "b.gmi": "# B\n",
        "c.gmi": "# C\n",
        "d.gmi": "# D\n",
        "e.gmi": "# E\n",
        # jetforce runs these: headers it would never write itself
        "cgi-bin/latin": _cgi("20 text/gemini; charset=ISO-8859-1", "# Caf\\351\\n=> ../c.gmi"),
        "cgi-bin/upper": _cgi("20 Text/Gemini;lang=en", "# Upper\\n=> ../d.gmi"),
        "cgi-bin/quoted": _cgi('20 TEXT/GEMINI ; charset="utf-8" ; lang=en', "# Q\\n=> ../e.gmi"),
    }
    root = tmp_path / "capsule"
    write(root, files)
    for name in ("latin", "upper", "quoted"):
        (root / "cgi-bin" / name).chmod(0o755)
    with capsule(root, {}, default_lang="en") as jet:  # static pages: "text/gemini; lang=en"
        ok(crawl(gemini_url(jet), "--out", out, "--min-delay", 0.05, *QUICK))
        log = {re.sub(r"^gemini://[^/]+", "", a.url): a for a in jet.accesses()}
    assert log["/"].meta == "text/gemini; lang=en"  # what jetforce really sent
    for path in ("/a.gmi", "/b.gmi", "/c.gmi", "/d.gmi", "/e.gmi"):
        assert path in log and log[path].status == 20, path  # each linked from a page with parameters
    got = {r["url"]: r for r in records(out)}
    assert got[gemini_url(jet, "/cgi-bin/latin")]["title"] == "Caf\xe9"  # the charset honoured


# --------------------------------------------------------------------------- item types


def _typed_hole(port: int) -> dict[str, str | bytes]:
    return {
        "robots.txt": ALLOW_ALL,
        "gophermap": (
            f"hBlob\tURL:gopher://{HOST}:{port}/9/files/blob.bin\n"
            f"hPicture\tURL:gopher://{HOST}:{port}/I/pic.png\n"
            f"hSearch\tURL:gopher://{HOST}:{port}/7/search\n"
            "0Text\t/text.txt\n"
        ),
        "files/blob.bin": bytes(range(256)),
        "files/blob2.bin": bytes(range(256)),
        "pic.png": b"\x89PNG\r\n\x1a\nnot really",
        "pic2.png": b"\x89PNG\r\n\x1a\nnot really either",
        "text.txt": "text\n",
        "text2.txt": "text two\n",
    }


@pytest.mark.parametrize("role", ["indexer", "archiver"])
def test_item_types_decide_wherever_a_link_came_from(tmp_path: Path, role: str) -> None:
    out = tmp_path / "out"
    with logging_proxy(0, gopher=True) as proxy:
        g = proxy.port
        gem: dict[str, str | bytes] = {
            "index.gmi": (
                "# Gopher items linked from gemtext\n"
                f"=> gopher://{HOST}:{g}/9/files/blob2.bin\n"
                f"=> gopher://{HOST}:{g}/I/pic2.png\n"
                f"=> gopher://{HOST}:{g}/7/search2\n"
                f"=> gopher://{HOST}:{g}/7/search3%09query\n"
                f"=> gopher://{HOST}:{g}/0/text2.txt\n"
            )
        }
        write(tmp_path / "hole", _typed_hole(g))
        with (
            servers.gophernicus(tmp_path / "hole", advertised_port=g) as real,
            capsule(tmp_path / "capsule", gem) as jet,
        ):
            proxy.upstream = (HOST, real)
            ok(crawl(f"gopher://{HOST}:{g}/1/", gemini_url(jet), "--out", out, "--role", role,
                     "--min-delay", 0.05, *QUICK))  # fmt: skip
            asked = set(pages(proxy.selectors()))
    binary = {"/files/blob.bin", "/pic.png", "/files/blob2.bin", "/pic2.png"}
    assert {"/", "/text.txt", "/text2.txt"} <= asked  # the text items, from both kinds of links
    assert not [s for s in asked if s.startswith("/search")]  # type 7: never
    if role == "indexer":
        assert not asked & binary, asked & binary
    else:
        assert binary <= asked


# --------------------------------------------------------------------------- spacing


def test_robots_txt_fallbacks_and_caps_txt_are_spaced_too(tmp_path: Path) -> None:
    out = tmp_path / "out"
    delay = 0.3
    root = tmp_path / "hole"
    write(root, {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})  # no robots.txt: a type-3 error
    with logging_proxy(0, gopher=True) as proxy, servers.pygopherd(root, advertised_port=proxy.port) as real:
        proxy.upstream = (HOST, real)
        ok(crawl(f"gopher://{HOST}:{proxy.port}/1/", "--out", out, "--min-delay", delay, *QUICK))
        asked = proxy.selectors()
        gaps = proxy.gaps()
    assert len([s for s in asked if s in ROBOTS_SELECTORS]) >= 2, asked  # the fallbacks were tried
    assert {"/a.txt", "/b.txt", "/c.txt"} <= set(asked)
    assert [g for g in gaps if g < delay - SLACK] == [], list(zip(asked[1:], gaps, strict=False))


# --------------------------------------------------------------------------- Gopher+ menus


def test_a_gopher_plus_port_written_with_its_plus_still_links(tmp_path: Path) -> None:
    out = tmp_path / "out"

    def files(port: int) -> dict[str, str | bytes]:
        return {
            "robots.txt": ALLOW_ALL,
            "plus.menu": (
                f"0Note\t/note.txt\t{HOST}\t{port}+\r\n"  # the "+" glued to the port, no TAB
                f"0Other\t/other.txt\t{HOST}\t{port}\t+\r\n"  # the usual Gopher+ fifth field
                ".\r\n"
            ),
            "note.txt": "note\n",
            "other.txt": "other\n",
        }

    with hole(tmp_path / "hole", files) as proxy:
        ok(crawl(f"gopher://{HOST}:{proxy.port}/1/plus.menu", "--out", out, "--min-delay", 0.05, *QUICK))
        asked = pages(proxy.selectors())
    assert "/note.txt" in asked and "/other.txt" in asked


# --------------------------------------------------------------------------- bounds


BIG_GEMTEXT = 5_000_000  # bytes: under the default --max-bytes (5 MiB), so read whole


def _big_capsule() -> dict[str, str | bytes]:
    lines = []
    size = len("# Links\n")
    i = 0
    while size < BIG_GEMTEXT - 40:
        line = f"=> /p/{i:07d}.gmi\n"
        lines.append(line)
        size += len(line)
        i += 1
    return {"big.gmi": "# Links\n" + "".join(lines), "robots.txt": ALLOW_ALL}


def _per_authority(urls: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for url in urls:
        auth = url.split("/", 3)[2]
        counts[auth] = counts.get(auth, 0) + 1
    return counts


def test_huge_pages_keep_memory_and_the_frontier_bounded(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with hostile.big_menu(1_000_000) as menu, capsule(tmp_path / "capsule", _big_capsule()) as jet:
        seeds = [f"gopher://{HOST}:{menu.port}/1/", gemini_url(jet, "/big.gmi")]
        code, peak, printed = run_measured(
            command(*seeds, "--out", out, "--max-pages", 4, "--min-delay", 0.1, *QUICK), 120, tmp_path
        )
    assert code == 0, printed
    assert peak < 200 * 1024 * 1024, f"peak RSS {peak / 2**20:.0f} MiB"
    size = sum(p.stat().st_size for p in out.glob("frontier.sqlite3*"))
    assert size < 10 * 1024 * 1024, f"frontier {size / 2**20:.1f} MiB"
    got = {r["url"]: r for r in records(out)}
    for seed in seeds:
        assert got[seed]["outcome"] == "fetched" and got[seed]["bytes"] >= 4_000_000, got[seed]
    counts = _per_authority(frontier_urls(out))
    assert counts[f"{HOST}:{menu.port}"] <= 10_000 + 3  # --max-links' default: 10,000 from a page
    assert counts[f"localhost:{jet.public_ports[0]}"] <= 10_000 + 3
    assert min(counts.values()) >= 1_000  # links were taken from both


def test_max_links_bounds_what_one_page_queues(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with hostile.big_menu(1_000_000) as menu, capsule(tmp_path / "capsule", _big_capsule()) as jet:
        seeds = [f"gopher://{HOST}:{menu.port}/1/", gemini_url(jet, "/big.gmi")]
        ok(crawl(*seeds, "--out", out, "--max-links", 50, "--max-pages", 2, "--min-delay", 0.05, *QUICK))
    counts = _per_authority(frontier_urls(out))
    assert 50 <= counts[f"{HOST}:{menu.port}"] <= 50 + 2  # the links, the seed and caps.txt
    assert 50 <= counts[f"localhost:{jet.public_ports[0]}"] <= 50 + 1


def test_max_queued_per_host_bounds_what_a_host_gets_queued(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with hostile.big_menu(1_000_000) as menu:
        seed = f"gopher://{HOST}:{menu.port}/1/"
        ok(crawl(seed, "--out", out, "--max-queued-per-host", 5, "--max-pages", 40, "--min-delay", 0.05,
                 *QUICK))  # fmt: skip
        asked = pages(menu.selectors())
    assert "" in asked or "/" in asked
    assert len(asked) <= 1 + 5, asked  # the menu, and what could be queued from it
    assert len(frontier_urls(out)) <= 1 + 5 + 1


def test_a_url_over_1024_bytes_is_never_queued(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with hostile.gopher_server(
        lambda selector, port: (
            f"0Long\t/{'x' * 1100}\t{HOST}\t{port}\r\n0Short\t/short\t{HOST}\t{port}\r\n.\r\n".encode()
            if selector in ("", "/") else b"short\r\n"
        )
    ) as server:  # fmt: skip
        ok(crawl(f"gopher://{HOST}:{server.port}/1/", "--out", out, "--min-delay", 0.05, *QUICK))
        asked = pages(server.selectors())
    assert "/short" in asked and not [s for s in asked if len(s) > 1024]
    assert not [u for u in frontier_urls(out) if len(u) > 1024]


@pytest.mark.serial  # a time bound
def test_a_huge_page_stalls_no_other_host(tmp_path: Path) -> None:
    out = tmp_path / "out"
    delay = 0.2
    with hostile.gopher_trap(fan=3) as trap, capsule(tmp_path / "capsule", _big_capsule()) as jet:
        seeds = [gemini_url(jet, "/big.gmi"), f"gopher://{HOST}:{trap.port}/1/d/0/0"]
        ok(crawl(*seeds, "--out", out, "--max-pages", 50, "--min-delay", delay, *QUICK))
        big = [a for a in jet.accesses() if a.url.endswith("/big.gmi")]
        conns = trap.snapshot()
    assert len(big) == 1 and big[0].status == 20
    done = big[0].time  # jetforce logs when the answer is sent: the crawler handles it after that
    opened = [c.opened for c in conns]
    assert [t for t in opened if t < done], "the other host started only after the big page"
    assert len([t for t in opened if t > done + 0.5]) >= 5, "too little of the other host to judge"
    gaps = [b - a for a, b in itertools.pairwise(opened)]
    assert max(gaps) < delay + 0.5, [round(g, 3) for g in gaps]


# --------------------------------------------------------------------------- files


@pytest.mark.parametrize("name", ["pages.jsonl", "warc", "frontier.sqlite3"])
def test_a_symlink_planted_in_the_directory_is_refused(tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "precious"
    if name == "warc":
        target.mkdir()
        (target / "keep").write_bytes(b"precious\n")
    elif name == "pages.jsonl":
        target.write_bytes(b"precious, with no line end")  # a torn line, to a crawl that reads it so
    else:
        target.write_bytes(b"")  # SQLite would make its database in an empty file
    (out / name).symlink_to(target)

    def content() -> object:
        return {p.name: p.read_bytes() for p in target.iterdir()} if target.is_dir() else target.read_bytes()

    before = content()
    with hole(tmp_path / "hole", _files_hole(2)) as proxy:  # a crawl that went on would write
        seed = f"gopher://{HOST}:{proxy.port}/1/"
        sentence = one_sentence(crawl(seed, "--out", out, "--min-delay", 0.05, *QUICK, timeout=60))
        assert proxy.snapshot() == []  # refused before any request
    assert name in sentence
    assert content() == before
    assert (out / name).is_symlink()


READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"'


@pytest.mark.parametrize("where", ["empty", "new", "resume"])
def test_a_read_only_directory_is_one_sentence(tmp_path: Path, where: str) -> None:
    shut = tmp_path / "shut"
    shut.mkdir()
    out = shut / "out" if where == "new" else shut
    with hole(tmp_path / "hole", _files_hole(3)) as proxy:
        seed = f"gopher://{HOST}:{proxy.port}/1/"
        if where == "resume":  # a crawl there already, pages still queued; then the directory read-only
            ok(crawl(seed, "--out", out, "--max-pages", 1, "--min-delay", 0.05, *QUICK))
        seen = len(proxy.snapshot())
        # a read-only bind mount in a private mount namespace: root cannot write there either
        args = [seed] if where != "resume" else ["--max-pages", 10]
        result = subprocess.run(
            ["unshare", "-m", "sh", "-c", READ_ONLY, "sh", str(shut),
             *command(*args, "--out", out, "--min-delay", 0.05, *QUICK)],
            capture_output=True, text=True, env=ENV, timeout=60,
        )  # fmt: skip
        assert len(proxy.snapshot()) == seen  # nothing requested that could not be kept
    sentence = one_sentence(result)
    assert str(shut) in sentence


# --------------------------------------------------------------------------- certificates


def _certificate(
    directory: Path, name: str, host: str, start: datetime, end: datetime
) -> tuple[Path, Path, bytes]:
    """A self-signed EC certificate for ``host`` valid from ``start`` to ``end``: (cert, key, DER)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path, cert.public_bytes(serialization.Encoding.DER)


def _warc_records(paths: list[Path]) -> list[tuple[str, Any, bytes]]:
    found = []
    for path in paths:
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                found.append((record.rec_type, record.rec_headers, record.content_stream().read()))
    return found


def _pem_certificates(found: list[tuple[str, Any, bytes]]) -> list[bytes]:
    """The DER of each certificate in a metadata record of type application/x-pem-file."""
    return [
        ssl.PEM_cert_to_DER_cert(block.decode().strip() + "\n")
        for kind, headers, block in found
        if kind == "metadata" and headers.get_header("Content-Type") == "application/x-pem-file"
    ]


def _when(text: str) -> datetime:
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text[:-1] + "+00:00")


def test_certificates_are_recorded_and_a_bad_one_still_crawled(tmp_path: Path) -> None:
    out = tmp_path / "out"
    now = datetime.now(timezone.utc).replace(microsecond=0)
    good = _certificate(tmp_path, "good", "localhost", now - timedelta(days=1), now + timedelta(days=30))
    bad = _certificate(tmp_path, "bad", "example.org", datetime(2020, 1, 1, tzinfo=timezone.utc),
                       datetime(2021, 1, 1, tzinfo=timezone.utc))  # fmt: skip
    files: dict[str, str | bytes] = {
        "index.gmi": "# Home\n=> a.gmi\n",
        "a.gmi": "# A\n=> b.gmi\n",
        "b.gmi": "# B\n=> c.gmi\n",
        "c.gmi": "# C\n",
        "robots.txt": ALLOW_ALL,
    }
    listen = servers.free_port()
    with capsule(tmp_path / "capsule", files, listen_ports=[listen], cert=good[:2]) as jet:
        url = gemini_url(jet)
        ok(crawl(url, "--out", out, "--max-pages", 2, "--min-delay", 0.05, *QUICK))
    first = [r for r in records(out) if r["url"].startswith("gemini:")]
    first_warcs = sorted((out / "warc").glob("*.warc.gz"))
    with capsule(tmp_path / "capsule", {}, listen_ports=[listen], cert=bad[:2]) as jet:  # a new certificate
        ok(crawl("--out", out, "--max-pages", 4, "--min-delay", 0.05, *QUICK))
        second_asked = requested_paths(jet)
    second = [r for r in records(out) if r["url"].startswith("gemini:")][len(first) :]

    assert [r["url"] for r in first] == [url, url + "a.gmi"]
    for i, r in enumerate(first):
        cert = r["certificate"]
        assert cert["sha256"] == hashlib.sha256(good[2]).hexdigest()
        assert _when(cert["not_after"]) == now + timedelta(days=30)
        assert cert["expired"] is False and cert["names_host"] is True
        assert cert["tofu"] == ("new" if i == 0 else "matched")
    assert "/b.gmi" in second_asked and "/c.gmi" in second_asked  # expired, wrong name: still crawled
    assert [r["outcome"] for r in second] == ["fetched", "fetched"]
    cert = second[0]["certificate"]
    assert cert["sha256"] == hashlib.sha256(bad[2]).hexdigest()
    assert _when(cert["not_after"]) == datetime(2021, 1, 1, tzinfo=timezone.utc)
    assert cert["expired"] is True and cert["names_host"] is False and cert["tofu"] == "changed"

    first_records = _warc_records(first_warcs)
    pems = _pem_certificates(first_records)
    assert pems == [good[2]]  # one per host, not one per request
    everything = _warc_records(sorted((out / "warc").glob("*.warc.gz")))
    assert bad[2] in _pem_certificates(everything)
    for kind, headers, _ in everything:
        if kind != "warcinfo":
            assert headers.get_header("WARC-IP-Address") == HOST, (
                kind,
                headers.get_header("WARC-Target-URI"),
            )


# --------------------------------------------------------------------------- pages.jsonl


def test_pages_jsonl_escapes_every_non_ascii_character(tmp_path: Path) -> None:
    out = tmp_path / "out"
    files: dict[str, str | bytes] = {
        "index.gmi": "# Evil \u202e title \u009b31m\n=> b.gmi\n",
        "b.gmi": "# Caf\u00e9 \u2603\n",
    }
    with capsule(tmp_path / "capsule", files) as jet:
        ok(crawl(gemini_url(jet), "--out", out, "--min-delay", 0.05, *QUICK))
    raw = (out / "pages.jsonl").read_bytes()
    assert raw.isascii()
    assert "\u202e".encode() not in raw and "\u009b".encode() not in raw
    assert b"\\u202e" in raw.lower() and b"\\u009b" in raw.lower()
    titles = {r["url"]: r["title"] for r in records(out)}
    assert titles[gemini_url(jet)] == "Evil \u202e title \u009b31m"
    assert titles[gemini_url(jet, "/b.gmi")] == "Caf\u00e9 \u2603"


FULL_DISK = (
    'mount -t tmpfs -o size=2m tmpfs "$1" && out="$1" && shift && { "$@" 2>"$ERR"; echo $? >"$STATUS";'
    ' rm -rf "$out/warc"; "$@" --no-warc >/dev/null 2>&1; "$PY" -c "$READ" "$out"; }'
)
READ_FRONTIER = (
    "import json, sqlite3, sys; db = sqlite3.connect(sys.argv[1] + '/frontier.sqlite3');"
    " print(json.dumps(dict(db.execute('SELECT state, count(*) FROM urls GROUP BY state').fetchall())))"
)


def test_a_full_disk_mid_crawl_is_one_sentence_exit_1_and_nothing_is_lost(tmp_path: Path) -> None:
    """A crawl file that cannot be written during the crawl (a 2 MiB tmpfs fills up with the WARC):
    one sentence, exit 1; once there is room again, the resume fetches every page, none twice but
    the one in flight."""
    out = tmp_path / "out"
    out.mkdir()
    err, status = tmp_path / "first.err", tmp_path / "first.status"

    def files(port: int) -> dict[str, str | bytes]:
        big = {f"f{i}.txt": os.urandom(50_000).hex() for i in range(40)}  # incompressible in the WARC
        return {
            "robots.txt": ALLOW_ALL,
            "gophermap": "".join(f"0File {i}\t/f{i}.txt\n" for i in range(40)),
            **big,
        }

    with hole(tmp_path / "hole", files) as proxy:
        seed = f"gopher://{HOST}:{proxy.port}/1/"
        result = subprocess.run(
            ["unshare", "-m", "sh", "-c", FULL_DISK, "sh", str(out),
             *command(seed, "--out", out, "--min-delay", 0.01, *QUICK)],
            capture_output=True, text=True, timeout=180,
            env={**ENV, "READ": READ_FRONTIER, "ERR": str(err), "STATUS": str(status), "PY": sys.executable},
        )  # fmt: skip
        asked = [s for s in proxy.selectors() if s.startswith("/f")]
    first = err.read_text()
    assert status.read_text().strip() == "1", first
    assert "Traceback" not in first, first
    last = first.strip().splitlines()[-1]
    assert "full" in last and "queued again when the crawl resumes" in last, first
    states = json.loads(result.stdout.strip().splitlines()[-1])
    assert states == {"done": 42}, states  # the menu, caps.txt and 40 files: all settled after the resume
    assert sorted(set(asked)) == sorted(f"/f{i}.txt" for i in range(40))
    assert len(asked) <= 41  # at most the one in flight when the disk filled was asked for twice
