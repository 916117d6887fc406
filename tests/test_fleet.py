"""A fleet: ``manners crawl`` workers, separate processes, crawling one crawl on a real
``redis-server`` (and a three-master Redis Cluster) over gophernicus, pygopherd and jetforce
serving the generated small-net site, each server behind a logging proxy.

What was requested is read from the servers' side (the proxies' connection logs, jetforce's
access log) and compared with the site's ground truth; what the workers say (their pages files,
their ledgers, ``manners crawl audit``) is held against that.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

import smallnet_site as sn
from manners.crawl.audit import audit
from proxy import LoggingProxy
from servers import free_port, redis_durable
from slow_hole import Hole, slow_hole
from test_cli_json import agrees
from test_crawl_real import warc_responses as responses_in

pytestmark = pytest.mark.serial  # workers kept alive across Redis outages, timed by leases

AGENT = "testbot"
DELAY = 0.2  # --min-delay
SLACK = 0.02  # seconds of timer granularity between two processes' clocks and the proxy's
ROBOTS = {"robots.txt", "/robots.txt", "0/robots.txt"}
ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}


def frontier_url(request: pytest.FixtureRequest, kind: str) -> str:
    if kind == "cluster":
        ports = request.getfixturevalue("redis_cluster_ports")
        return f"redis-cluster://127.0.0.1:{ports[0]}"
    return f"redis://127.0.0.1:{request.getfixturevalue('redis_port')}/0"


def worker(seeds: Sequence[str], frontier: str, name: str, out: Path, cache: Path, *extra: str) -> list[str]:
    """The command of one worker: every worker of a crawl runs the same, but for its seeds."""
    return [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", AGENT, "--role", "archiver",
            "--frontier", frontier, "--name", name, "--out", str(out), "--min-delay", str(DELAY),
            "--cache", f"sqlite://{cache}", "--timeout", "10", "--json", *extra]  # fmt: skip


def start(cmd: list[str], log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=ENV)


def finish(proc: subprocess.Popen[str], log: Path, timeout: float = 240) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, log.read_text()
    assert "Traceback" not in log.read_text(), log.read_text()
    summary: dict[str, Any] = json.loads(out)
    return summary


def wait_for(ok: Callable[[], bool], timeout: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.05)


def lines(dirs: Sequence[Path], pattern: str) -> list[dict[str, Any]]:
    return [
        json.loads(line) for d in dirs for p in sorted(d.glob(pattern)) for line in p.read_text().splitlines()
    ]


def pages(*dirs: Path) -> list[dict[str, Any]]:
    return lines(dirs, "pages*.jsonl")


def ledgers(*dirs: Path) -> list[dict[str, Any]]:
    return lines(dirs, "requests-*.jsonl")


def settled(*dirs: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for d in dirs if d.is_dir() for p in d.glob("pages*.jsonl"))


def page_selectors(proxy: LoggingProxy) -> list[str]:
    return [s for s in proxy.selectors() if s not in ROBOTS | {"caps.txt"}]


def gemini_pages(run: sn.Running) -> list[str]:
    return [u for u in run.jetforce.urls() if not u.endswith("/robots.txt")]


def proxies(run: sn.Running) -> list[tuple[str, LoggingProxy]]:
    return [("gophernicus", run.gophernicus), ("pygopherd", run.pygopherd), ("gemini", run.gemini)]


def too_close(run: sn.Running) -> dict[str, list[tuple[float, str | None, str | None]]]:
    """Per server, every two connections closer than the delay: whoever sent them, robots.txt
    and caps.txt included, as (gap, first selector, second selector) (empty lists: polite)."""
    gaps = {}
    for name, proxy in proxies(run):
        conns = sorted(proxy.snapshot(), key=lambda c: c.opened_monotonic)
        gaps[name] = [
            (round(b.opened_monotonic - a.opened_monotonic, 4), a.selector, b.selector)
            for a, b in itertools.pairwise(conns)
            if b.opened_monotonic - a.opened_monotonic < DELAY - SLACK
        ]
    return gaps


def slow_down_kept(run: sn.Running) -> None:
    """After jetforce's "44 5" the capsule saw nothing for 5 s, from any worker."""
    slow = [a for a in run.jetforce.accesses() if a.status == 44]
    assert len(slow) == 1 and slow[0].meta == "5"
    later = [c.opened for c in run.gemini.snapshot() if c.opened > slow[0].time]
    assert later and min(later) >= slow[0].time + 5 - SLACK


def requested_once(run: sn.Running, expect: sn.Expectation, allowed_twice: set[tuple[str, str]]) -> None:
    """Exactly the ground truth was requested, each page once (the 44 page twice), but for
    ``allowed_twice``: (authority, selector or URL) in flight when something died."""
    for proxy, seed in ((run.gophernicus, run.site.gophernicus_url), (run.pygopherd, run.site.pygopherd_url)):
        auth = sn.authority(seed)
        got = Counter(page_selectors(proxy))
        assert sorted(got) == expect.selectors[auth]
        assert {s for s, n in got.items() if n > 1} <= {s for a, s in allowed_twice if a == auth}, got
    want = Counter(u for v in expect.gemini_requests.values() for u in v)
    got_gemini = Counter(gemini_pages(run))
    assert set(got_gemini) == set(want)
    extra = {u for u in got_gemini if got_gemini[u] > want[u]}
    assert extra <= {u for _, u in allowed_twice}, extra


def received_twice(run: sn.Running) -> set[tuple[str, str]]:
    """(authority, selector or URL) of every page the servers received more than once."""
    seen: Counter[tuple[str, str]] = Counter()
    for proxy, seed in ((run.gophernicus, run.site.gophernicus_url), (run.pygopherd, run.site.pygopherd_url)):
        seen.update((sn.authority(seed), s) for s in page_selectors(proxy))
    seen.update((sn.authority(run.site.gemini_url), u) for u in gemini_pages(run))
    return {k for k, n in seen.items() if n > 1}


def as_received(url: str) -> tuple[str, str]:
    return sn.authority(url), sn.gopher_selector(url) if url.startswith("gopher:") else url


def warc_responses(*dirs: Path) -> Counter[str]:
    return sum((responses_in(d) for d in dirs), Counter())


def client_of(frontier: str) -> Any:
    if frontier.startswith("redis-cluster://"):
        return redis.RedisCluster.from_url(frontier.replace("redis-cluster://", "redis://"))
    return redis.Redis.from_url(frontier)


def identity_kept(frontier: str, name: str) -> Callable[[], bool]:
    """Whether the crawl ``name`` exists: its first worker has set it up and queued its seeds."""
    client = client_of(frontier)
    return lambda: client.hget(f"{name}:meta", "seeds") is not None


def at_work(frontier: str, name: str, workers: int) -> Callable[[], bool]:
    """Whether ``workers`` workers of the crawl have sent their first heartbeat (are crawling)."""
    client = client_of(frontier)
    return lambda: client.hlen(f"{name}:workers") >= workers


@contextmanager
def site(
    tmp_path: Path, slow: float = 1.0, items: int = 3
) -> Iterator[tuple[sn.Running, Hole, list[str], sn.Expectation]]:
    """The small-net site, and a Gopher hole whose pages take ``slow`` seconds (its seed last)."""
    with sn.running(tmp_path / "site") as run, slow_hole(slow, items=items) as hole:
        seeds = [run.site.gemini_url, run.site.gophernicus_url, run.site.pygopherd_url]
        expect = run.site.expect(seeds, sn.ARCHIVER, AGENT)
        yield run, hole, [*seeds, f"gopher://127.0.0.1:{hole.port}/1/"], expect


def one_at_a_time(hole: Hole) -> list[tuple[str, str]]:
    """Requests to the hole that began before the one before had its answer (empty: one at a time)."""
    done = sorted((r for r in hole.requests if r.end is not None), key=lambda r: r.start)
    return [(a.selector, b.selector) for a, b in itertools.pairwise(done) if b.start < a.end - SLACK]  # type: ignore[operator]


# --------------------------------------------------------------------------- three workers


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_three_workers_finish_one_crawl_each_url_once_and_polite_together(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    """Three worker processes, two sharing a DIR and the third joining with no seeds in another:
    the union of their pages is the ground truth, each page requested once, and per host no two
    requests, whichever worker sent them, closer than the delay; after a 44 no worker asked the
    capsule anything for its 5 s.  Each record names its worker, each worker keeps its own files,
    ``manners crawl status`` shows them at work, and the audit passes."""
    frontier, name = frontier_url(request, kind), f"fleet-{uuid.uuid4().hex[:8]}"
    with site(tmp_path) as (run, hole, seeds, expect):
        shared, apart = tmp_path / "shared", tmp_path / "apart"
        logs = [tmp_path / f"w{i}.err" for i in range(3)]
        cache = [tmp_path / f"robots-{i}.db" for i in range(3)]  # each its own: robots.txt read by each
        procs = [start(worker(seeds, frontier, name, shared, cache[0]), logs[0])]
        wait_for(identity_kept(frontier, name), what="the first worker's crawl")
        procs.append(start(worker(seeds, frontier, name, shared, cache[1]), logs[1]))
        procs.append(start(worker([], frontier, name, apart, cache[2]), logs[2]))
        wait_for(lambda: settled(shared) >= 10, what="ten pages")
        status = subprocess.run([sys.executable, "-m", "manners", "crawl", "status", "--frontier", frontier,
                                 "--name", name, "--json"], capture_output=True, text=True, env=ENV,
                                timeout=60)  # fmt: skip
        summaries = [finish(p, log) for p, log in zip(procs, logs, strict=True)]

        requested_once(run, expect, allowed_twice=set())
        assert too_close(run) == {"gophernicus": [], "pygopherd": [], "gemini": []}
        slow_down_kept(run)
        # the hole's pages take 1 s: one at a time all the same, whichever worker asked
        assert sorted(s for s in hole.selectors() if s.startswith("/")) == ["/", "/item0", "/item1", "/item2"]
        assert one_at_a_time(hole) == []

    assert status.returncode == 0, status.stderr
    now = json.loads(status.stdout)
    agrees("manners crawl status", now)
    assert now["name"] == name and now["identity"]["agent"] == AGENT
    assert sum(w["alive"] for w in now["workers"].values()) >= 2
    assert now["urls"]["done"] >= 10

    workers = {s["worker"] for s in summaries}
    assert len(workers) == 3 and all(s["completed"] for s in summaries)
    assert sum(s["fetched"] for s in summaries) >= len(expect.fetched) - 1  # (caps.txt counted or not)
    assert sorted(p.name for p in shared.glob("pages-*.jsonl")) == sorted(
        f"pages-{s['worker']}.jsonl" for s in summaries[:2]
    )
    assert not (shared / "pages.jsonl").exists() and not (shared / "frontier.sqlite3").exists()
    records = pages(shared, apart)
    by_file = {p.name: {json.loads(line)["worker"] for line in p.read_text().splitlines()}
               for d in (shared, apart) for p in d.glob("pages-*.jsonl")}  # fmt: skip
    assert all(ids == {f.removeprefix("pages-").removesuffix(".jsonl")} for f, ids in by_file.items() if ids)
    for record in records:
        agrees("pages.jsonl", record)
    urls = Counter(r["url"] for r in records if "parent" not in r)
    assert set(urls) >= set(expect.requested) | set(expect.disallowed)
    assert all(n == 1 for n in urls.values()), [u for u, n in urls.items() if n > 1]
    fetched = {r["url"] for r in records if r["outcome"] == "fetched"}
    assert fetched >= set(expect.fetched) - {u for u in expect.fetched if "caps.txt" in u}
    assert fetched <= set(warc_responses(shared, apart))
    for d in (shared, apart):  # each worker's WARC files carry its name
        assert all(p.name.startswith(tuple(f"{w}-" for w in workers)) for p in (d / "warc").glob("*.warc.gz"))

    report = audit([shared, apart])
    assert report.violations == 0
    assert {d.url for d in report.duplicates} == set(expect.slow_down)  # asked again after its 44
    assert {w.worker for w in report.workers} == workers


# --------------------------------------------------------------------------- a worker dies


def test_a_worker_killed_mid_crawl_its_leases_come_back_and_the_audit_names_the_repeats(
    tmp_path: Path, redis_port: int
) -> None:
    """Three workers; one is SIGKILLed mid-crawl.  Its leases expire (3 s, renewed every second
    until the kill) and the others take them back: the crawl completes, every page of the ground
    truth requested, and the pages requested twice, as the servers saw them, are exactly those
    the audit names, each as in flight at the death of the killed worker."""
    frontier, name, lease = f"redis://127.0.0.1:{redis_port}/0", f"kill-{uuid.uuid4().hex[:8]}", 3.0
    with site(tmp_path, slow=2.0, items=8) as (run, hole, seeds, expect):
        dirs = [tmp_path / f"w{i}" for i in range(3)]
        logs = [tmp_path / f"w{i}.err" for i in range(3)]
        cmds = [worker(seeds, frontier, name, d, tmp_path / "robots.db", "--lease", str(lease)) for d in dirs]
        procs = [start(cmds[0], logs[0])]
        wait_for(identity_kept(frontier, name), what="the first worker's crawl")
        procs += [start(cmd, log) for cmd, log in zip(cmds[1:], logs[1:], strict=True)]
        hole_auth = f"gopher://127.0.0.1:{hole.port}"

        def mid_request() -> bool:
            """The first worker has asked the hole for a page whose answer it does not have yet."""
            asked = {line["url"] for line in ledgers(dirs[0]) if line["authority"] == hole_auth
                     and line["kind"] == "page"}  # fmt: skip
            return settled(*dirs) >= 20 and bool(asked - {r["url"] for r in pages(dirs[0])})

        wait_for(mid_request, what="the first worker in the middle of a slow request")
        procs[0].send_signal(signal.SIGKILL)
        killed_at = time.time()
        procs[0].wait(10)
        for p, log in zip(procs[1:], logs[1:], strict=True):
            finish(p, log)
        twice = received_twice(run)
        slow = {as_received(u) for u in expect.slow_down}
        requested_once(run, expect, allowed_twice=twice - slow)
        assert too_close(run) == {"gophernicus": [], "pygopherd": [], "gemini": []}
        hole_twice = Counter(s for s in hole.selectors() if s.startswith("/"))
        assert sorted(hole_twice) == ["/", *(f"/item{i}" for i in range(8))]  # the hole crawled whole
        again = [s for s, n in hole_twice.items() if n > 1]
        assert len(again) == 1  # the page in flight at the kill, asked once more ...
        starts = [r.start for r in hole.requests if r.selector == again[0]]
        assert starts[1] >= killed_at + lease * 2 / 3 - SLACK  # ... once its lease had expired

    report = audit(dirs)
    in_flight = (sn.authority(seeds[-1]), again[0])
    assert {as_received(d.url) for d in report.duplicates} == twice | {in_flight}
    for d in report.duplicates:
        if as_received(d.url) in slow:
            continue  # the capsule's "44 5" page, asked again after its wait
        assert d.in_flight_at_death and not d.violation, d.why()
        assert d.requests[0].dir == str(dirs[0]) and d.requests[-1].dir != str(dirs[0])
    assert report.violations == 0, [c.why for c in report.too_close]


# --------------------------------------------------------------------------- Redis faults


def test_redis_stopped_for_ten_seconds_and_restarted_loses_nothing(tmp_path: Path) -> None:
    """Redis (append-only file on) stopped mid-crawl for 10 s and started again: the two workers
    wait, go on, and the crawl completes with every page requested once."""
    port, data = free_port(), tmp_path / "redis"
    data.mkdir()
    frontier, name = f"redis://127.0.0.1:{port}/0", "outage"
    with site(tmp_path) as (run, _, seeds, expect):
        dirs = [tmp_path / "w0", tmp_path / "w1"]
        logs = [tmp_path / "w0.err", tmp_path / "w1.err"]
        with redis_durable(data, port):
            procs = [start(worker(seeds, frontier, name, dirs[0], tmp_path / "robots.db"), logs[0])]
            wait_for(identity_kept(frontier, name), what="the first worker's crawl")
            procs.append(start(worker(seeds, frontier, name, dirs[1], tmp_path / "robots.db"), logs[1]))
            wait_for(at_work(frontier, name, 2), what="both workers at work")
            wait_for(lambda: settled(*dirs) >= 15, what="15 pages")
        before = settled(*dirs)
        time.sleep(10)
        assert all(p.poll() is None for p in procs)  # waiting, not gone
        with redis_durable(data, port):
            summaries = [finish(p, log) for p, log in zip(procs, logs, strict=True)]
        assert before < len(pages(*dirs))
        requested_once(run, expect, allowed_twice=set())
        assert too_close(run) == {"gophernicus": [], "pygopherd": [], "gemini": []}
    assert all(s["completed"] and s["error"] is None for s in summaries)
    assert any("waiting for it" in log.read_text() for log in logs)
    report = audit(dirs)
    assert report.violations == 0 and {d.url for d in report.duplicates} == set(expect.slow_down)


def test_redis_gone_for_good_stops_the_worker_with_one_sentence_and_its_files_intact(tmp_path: Path) -> None:
    port, data = free_port(), tmp_path / "redis"
    data.mkdir()
    frontier, out, log = f"redis://127.0.0.1:{port}/0", tmp_path / "w", tmp_path / "w.err"
    with site(tmp_path) as (_, _, seeds, _):
        with redis_durable(data, port):
            proc = start(worker(seeds, frontier, "gone", out, tmp_path / "robots.db"), log)
            wait_for(lambda: settled(out) >= 10, what="10 pages")
        stopped = time.monotonic()
        stdout, _ = proc.communicate(timeout=120)
        took = time.monotonic() - stopped
    assert proc.returncode == 1, log.read_text()
    assert 29 < took < 60
    err = log.read_text()
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("manners crawl: the Redis frontier at redis://127.0.0.1:") and "30 s" in last
    assert "its leases expire" in last
    summary = json.loads(stdout)
    assert summary["error"] and not summary["completed"]
    records = pages(out)  # every line whole
    assert len(records) >= 10 and all(r["worker"] == summary["worker"] for r in records)
    assert warc_responses(out)  # closed, readable to its end


def test_a_worker_of_another_robot_is_refused_and_one_with_nothing_to_join(
    tmp_path: Path, redis_port: int
) -> None:
    frontier, name = f"redis://127.0.0.1:{redis_port}/0", f"who-{uuid.uuid4().hex[:8]}"
    nothing = subprocess.run(
        worker([], frontier, name, tmp_path / "a", tmp_path / "robots.db"),
        capture_output=True, text=True, env=ENV, timeout=60,
    )  # fmt: skip
    assert nothing.returncode == 2 and "holds no crawl to resume" in nothing.stderr
    assert nothing.stderr.count("\n") == 1
    client = redis.Redis(port=redis_port)
    identity = {"agent": AGENT, "roles": ["archiver"], "profile": None, "scope": "seeds"}
    client.hset(f"{name}:meta", mapping={"identity": json.dumps(identity), "seeds": "[]", "settings": "{}"})
    cmd = worker([], frontier, name, tmp_path / "b", tmp_path / "robots.db")
    cmd[cmd.index(AGENT)] = "otherbot"
    other = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=60)
    assert other.returncode == 2, other.stderr
    assert other.stderr.count("\n") == 1 and "is a crawl by another robot: agent otherbot" in other.stderr
    assert f"the crawl '{name}' at redis://127.0.0.1:{redis_port}/0" in other.stderr
    assert not list((tmp_path / "b").glob("requests-*.jsonl"))  # refused before anything was sent
