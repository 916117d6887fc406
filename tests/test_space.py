"""bench/space.py's own checks: the space is drawn from its seed, the plan and the ideal bound are
right on a space computed by hand, the log checks catch each kind of fault, and a real crawl of
40 hosts in the bench's namespace fetches every allowed page once, nothing disallowed, spaced."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from space_checks import Crawl, Request, check, plan  # noqa: E402
from space_model import Host, Space, build, scale_delays  # noqa: E402

pytestmark = pytest.mark.serial  # time bounds

CRAWL = Crawl(min_delay=0.02, backoff=1.2, attempts=4)


def test_the_space_is_drawn_from_its_seed() -> None:
    a, b, c = build(7, 60, 6), build(7, 60, 6), build(8, 60, 6)
    assert a.hosts == b.hosts
    assert a.hosts_file() == b.hosts_file()
    for h in a.hosts[:20]:
        for i in range(min(h.pages, 30)):
            assert a.links(h, i) == b.links(h, i)
            assert a.size(h, i) == b.size(h, i)
            assert a.path(h, i) == b.path(h, i)
    assert [h.pages for h in a.hosts] != [h.pages for h in c.hosts]
    assert len({h.address for h in a.hosts}) == len({h.name for h in a.hosts}) == 66
    assert sum(h.fault == "trap" for h in a.hosts) == 1


def test_crawl_delays_are_compressed_by_the_factor() -> None:
    text = "User-agent: *\nCrawl-delay: 10\nRequest-rate: 1/5m\n"
    assert scale_delays(text, 50) == "User-agent: *\nCrawl-delay: 0.2\nRequest-rate: 1/6s\n"


def hand_space() -> Space:
    """Four hosts whose plan is worked out by hand below."""
    robots = "User-agent: *\nDisallow: /priv/\nCrawl-delay: 0.1\n"
    return Space(
        seed=3,
        hosts=[
            # root 0; branch 1 (/priv/) holds 1, 3, 4; branch 2 (/pub/) holds 2, 5, 6
            Host(
                0,
                "a.test",
                "gemini",
                "127.0.0.2",
                7,
                2,
                ("/priv/", "/pub/"),
                "x",
                "file",
                rtt=0.05,
                robots_text=robots,
            ),
            Host(1, "b.test", "gopher", "127.0.0.3", 3, 2, ("/",), None, "missing", rtt=0.05),
            Host(2, "c.test", "gemini", "127.0.0.4", 5, 2, ("/",), None, "40", rtt=0.05),
            Host(3, "d.test", "gemini", "127.0.0.5", 5, 2, ("/",), None, "missing", "dead", rtt=0.05),
        ],
        factor=50.0,
    )


def test_the_plan_and_the_ideal_bound_match_a_hand_computed_space() -> None:
    p = plan(hand_space(), CRAWL)
    a, b, c, d = (p.hosts[n] for n in ("a.test", "b.test", "c.test", "d.test"))
    assert set(a.pages) == {"/", "/pub/2.gmi", "/pub/5.gmi", "/pub/6.gmi"}
    assert "/priv/1.gmi" in a.disallowed
    assert a.spacing == pytest.approx(0.1)
    assert set(b.pages) == {"/", "/1.txt", "/2.txt"}
    assert not c.pages and not d.pages
    answer = 2 * 0.05 / 50
    bounds = p.host_bounds()
    # a: robots.txt and 4 pages, 0.1 s apart
    assert bounds["a.test"] == pytest.approx(4 * 0.1 + answer)
    # b: robots.txt, /robots.txt, 0/robots.txt, caps.txt and 3 pages, 0.02 s apart
    assert bounds["b.test"] == pytest.approx(6 * 0.02 + answer)
    # c and d: robots.txt read 4 times, 1.2, 2.4 and 4.8 s apart
    assert bounds["c.test"] == bounds["d.test"] == pytest.approx(8.4 + answer)
    assert p.politeness_bound() == pytest.approx(8.4 + answer)
    assert p.requests == 5 + 7 + 4 + 4
    assert p.bound(None) == pytest.approx(8.4 + answer)
    assert p.bound(1.0) == pytest.approx(20.0)  # the CPU's bound: 20 requests at 1 a second


def req(at: float, path: str, host: str = "a.test", status: str = "20", took: float = 0.01) -> Request:
    return Request(at, at, at + took, host, "127.0.0.1:1", "gemini", path, status, 100)


def clean_log() -> list[Request]:
    paths = ["/robots.txt", "/", "/pub/2.gmi", "/pub/5.gmi", "/pub/6.gmi"]
    log = [req(1.0 + 0.1 * k, path) for k, path in enumerate(paths)]
    log += [
        req(1.0 + 0.02 * k, path, "b.test", "3" if "robots" in path else "1")
        for k, path in enumerate(
            ["robots.txt", "/robots.txt", "0/robots.txt", "caps.txt", "/", "/1.txt", "/2.txt"]
        )
    ]
    log += [req(1.0 + t, "/robots.txt", h, "40") for h in ("c.test", "d.test") for t in (0, 1.2, 3.6, 8.4)]
    return log


def test_the_log_checks_pass_a_clean_log_and_catch_each_fault() -> None:
    p = plan(hand_space(), CRAWL)
    assert check(p, clean_log()).ok(), check(p, clean_log()).summary()
    base = clean_log()
    missing = [r for r in base if r.path != "/pub/5.gmi"]
    assert [m[1] for m in check(p, missing).missing] == ["/pub/5.gmi"]
    twice = [*base, req(3.0, "/pub/5.gmi")]
    assert check(p, twice).twice == [("a.test", "/pub/5.gmi", 2)]
    disallowed = [*base, req(3.0, "/priv/1.gmi")]
    assert check(p, disallowed).disallowed == [("a.test", "/priv/1.gmi")]
    on_dead = [*base, req(20.0, "/", "d.test")]
    assert check(p, on_dead).disallowed == [("d.test", "/")]
    short = [r if r.path != "/pub/6.gmi" else req(1.35, "/pub/6.gmi") for r in base]  # 0.05 s after 5.gmi
    assert [s[0] for s in check(p, short).short] == ["a.test"]
    overlap = [r if r.path != "/pub/6.gmi" else req(1.4, "/pub/6.gmi") for r in base]
    overlap = [r if r.path != "/pub/5.gmi" else req(1.3, "/pub/5.gmi", took=0.2) for r in overlap]
    assert [o[0] for o in check(p, overlap).overlaps] == ["a.test"]


def test_across_a_kill_only_a_page_in_flight_may_be_asked_again_and_robots_txt_is_read_once_a_side() -> None:
    """A crawl SIGKILLed at 5.0 s and resumed: a page asked just before the kill and again after
    it was in flight (allowed once, and counted); one asked long before and again after is asked
    twice; robots.txt read again after the kill is the resumed process's first read."""
    p = plan(hand_space(), CRAWL)
    base = clean_log()
    again = [*base, req(4.9, "/pub/5.gmi", took=0.5), req(6.0, "/robots.txt"), req(6.1, "/pub/5.gmi")]
    again = [r for r in again if not (r.path == "/pub/5.gmi" and r.accepted < 2)]
    v = check(p, again, killed=5.0)
    assert v.ok(), v.summary()
    assert v.again_after_kill == [("a.test", "/pub/5.gmi")]
    assert not check(p, again).ok()  # without the kill, both are faults
    long_before = [*base, req(16.0, "/robots.txt"), req(16.1, "/pub/5.gmi")]  # first asked at 1.2 s
    v = check(p, long_before, killed=15.0)  # 13.8 s before the kill: it was settled, or timed out
    assert v.twice == [("a.test", "/pub/5.gmi", 2)]
    assert v.robots_again == [] and v.again_after_kill == []
    read_twice_after = [*again, req(6.05, "/robots.txt")]
    assert check(p, read_twice_after, killed=5.0).robots_again == [("a.test", 2, 1)]
    # resumed, the crawl knows a host's spacing (0.1 s here) only once it has read robots.txt
    # again: until then --min-delay (0.02 s), across the kill as after it
    resumed = [r if r.path != "/pub/6.gmi" else req(4.97, "/pub/6.gmi") for r in base]
    resumed += [req(5.0, "/robots.txt")]
    assert check(p, resumed, killed=4.99).short == []
    assert check(p, [*resumed, req(5.08, "/pub/5.gmi")], killed=4.99).short == [("a.test", 0.08, 0.1)]


def test_a_server_stamps_a_connection_when_its_bytes_came_not_when_it_got_round_to_it(tmp_path: Path) -> None:
    """A server's loop busy elsewhere (here: stopped) accepts a connection late; its log must still
    say when the request reached the host, or two requests a spacing apart look closer than it."""
    seed = next(s for s in range(1, 100) if build(s, 1, 1).holes[0].fault == "")
    hole = build(seed, 1, 1).holes[0]
    log, ready = tmp_path / "server.log", tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": f"{BENCH.parent / 'src'}:{BENCH}"}
    args = [str(seed), "1", "1", "0", "50", "0", "1", str(tmp_path), str(log), str(ready)]
    server = subprocess.Popen([sys.executable, str(BENCH / "space_servers.py"), *args], env=env)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        os.kill(server.pid, signal.SIGSTOP)
        try:
            conn = socket.create_connection((hole.address, 70), timeout=10)  # the kernel accepts it
            sent = time.time()
            conn.sendall(b"/robots.txt\r\n")
            time.sleep(0.4)
        finally:
            os.kill(server.pid, signal.SIGCONT)
        with conn:
            while conn.recv(65536):
                pass
    finally:
        server.terminate()
        server.wait(timeout=30)
    [line] = log.read_text().splitlines()
    arrived, asked = (float(f) for f in line.split("\t")[:2])
    assert asked >= sent + 0.35  # the request line was read once the server ran again
    assert abs(arrived - sent) < 0.05  # but the connection is stamped when its bytes came


def crawl_space(tmp_path: Path, *more: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """bench/space.py run on its 40-host space (``more``: its further options): report, process."""
    out = tmp_path / "space"
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent / "src"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "space.py"),
            "--hosts",
            "36",
            "--holes",
            "4",
            "--cap",
            "25",
            "--seed",
            "5",
            "--no-bare",
            "--out",
            str(out),
            *more,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=240 * (1 + len(more)),
    )
    assert (out / "report.json").exists(), done.stdout + done.stderr
    return json.loads((out / "report.json").read_text()), done


CLEAN = dict.fromkeys(("missing", "twice", "disallowed", "unplanned", "overlaps", "short", "robots_again"), 0)


def test_a_crawl_of_40_hosts_fetches_every_allowed_page_once_and_keeps_spacing(tmp_path: Path) -> None:
    """And again SIGKILLed 3 s in and resumed by the same command: every page once still (those in
    flight at the kill aside), the spacing kept across the kill, the makespan from the first start."""
    report, done = crawl_space(tmp_path, "--kill-at", "3")
    run, killed = report["runs"]
    assert run["exit"] == [0], done.stderr[-2000:]
    assert run["counts"] == CLEAN, run["checks"]
    assert run["pages_checked"] == report["pages_planned"] > 200
    assert run["makespan_s"] >= run["politeness_bound_s"] > 0
    assert killed["run"] == "single-killed"
    assert killed["exit"] == [0], done.stderr[-2000:]
    assert killed["counts"] == CLEAN, killed["checks"]
    assert killed["pages_checked"] == report["pages_planned"]
    assert killed["makespan_s"] > killed["killed_at_s"] >= 3
    assert (tmp_path / "space" / "space.png").stat().st_size > 10_000
    assert done.returncode == 0


def test_fleets_of_2_and_4_on_redis_hold_each_host_one_request_at_a_time_spaced(tmp_path: Path) -> None:
    """Workers on Redis: the servers' own logs show no host with two connections open at once, and
    no gap under its spacing (a worker's busy event loop or a Redis round trip late no more lets
    another worker's request in while the first is in flight).  Before hosts were held by a
    hold taken with the slot, 4 workers here left some 36 pairs in flight together, 12 gaps short."""
    report, done = crawl_space(tmp_path, "--workers", "2,4")
    fleets = report["runs"][1:]
    assert [f["run"] for f in fleets] == ["fleet2", "fleet4"]
    for fleet in fleets:
        assert fleet["exit"] == [0] * int(fleet["run"][5:]), done.stderr[-2000:]
        assert fleet["counts"] == CLEAN, (fleet["run"], fleet["checks"])
        assert fleet["pages_checked"] == report["pages_planned"] > 200
