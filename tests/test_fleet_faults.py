"""A fleet under faults, on real redis-servers over gophernicus, pygopherd and jetforce (the
small-net site, each server behind a logging proxy) and a slow Gopher hole: what the servers
logged is held against what the workers wrote.

- a worker stopped (SIGSTOP) past its lease, then woken: it sends nothing for the URLs others
  have taken back (only what was already in flight at the stop is asked twice), its stale
  settlings change nothing and are written down (``unsettled``), its ledger says ``lease-lost``;
- Redis stopped for longer than the lease: the workers give up before their leases expire (half
  the lease), the pages fetched while the frontier was away get their ``unsettled`` line, and a
  worker started once Redis is back finishes the crawl with nothing asked twice but those;
- Redis restarted empty, and Redis evicting the crawl's keys under ``maxmemory`` with
  ``allkeys-lru``: the workers stop with exit 1 and a sentence saying so, never "done", and
  ``manners crawl status`` says the crawl is lost.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

import smallnet_site as sn
from manners.crawl.audit import audit
from manners.crawl.pacing import HOLD_MARGIN
from servers import redis_durable
from test_fleet import (
    ENV,
    as_received,
    at_work,
    finish,
    identity_kept,
    ledgers,
    pages,
    received_twice,
    requested_once,
    settled,
    site,
    start,
    too_close,
    wait_for,
    worker,
)
from test_fleet_status import status

pytestmark = pytest.mark.serial  # asserts how long things take: one worker

POLITE = {"gophernicus": [], "pygopherd": [], "gemini": []}


def in_flight(out: Path) -> set[str]:
    """URLs a worker has asked for (its ledger) and has no answer recorded for (its pages)."""
    asked = {line["url"] for line in ledgers(out) if line["kind"] in ("page", "caps")}
    return asked - {r["url"] for r in pages(out)}


def unsettled(out: Path) -> dict[str, dict[str, Any]]:
    """A worker's ``unsettled`` lines, by URL."""
    return {r["url"]: r for r in pages(out) if r["outcome"] == "unsettled"}


def lease_lost(out: Path) -> list[dict[str, Any]]:
    return [line for line in ledgers(out) if line["kind"] == "lease-lost"]


def stopped_lost(proc: subprocess.Popen[str], log: Path, timeout: float = 90) -> dict[str, Any]:
    """A worker that met a lost crawl: exit 1, one sentence saying so, never "done"."""
    out, _ = proc.communicate(timeout=timeout)
    err = log.read_text()
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("manners crawl: the crawl ") and "has lost its data in Redis" in last, err
    assert "its leases expire" not in last
    summary: dict[str, Any] = json.loads(out)
    assert not summary["completed"] and "lost its data" in summary["error"]
    return summary


# --------------------------------------------------------------------------- a worker stopped


def test_a_worker_stopped_past_its_lease_sends_nothing_stale_on_waking(tmp_path: Path) -> None:
    """Two workers, leases of 3 s; the first is SIGSTOPped mid-request for 11 s (its leases expire
    and the second takes them back), then SIGCONTed.  The servers saw no page twice but those
    the stopped worker had in flight; what it then fetched is written down unsettled, its ledger
    says which leases it lost, and both finish the crawl."""
    data = tmp_path / "redis"
    data.mkdir()
    name, lease = f"stop-{uuid.uuid4().hex[:8]}", 3.0
    with redis_durable(data) as port, site(tmp_path, slow=2.0, items=6) as (run, hole, seeds, expect):
        frontier = f"redis://127.0.0.1:{port}/0"
        dirs = [tmp_path / "w0", tmp_path / "w1"]
        logs = [tmp_path / "w0.err", tmp_path / "w1.err"]
        cmds = [worker(seeds, frontier, name, d, tmp_path / "robots.db", "--lease", str(lease)) for d in dirs]
        procs = [start(cmds[0], logs[0])]
        wait_for(identity_kept(frontier, name), what="the first worker's crawl")
        procs.append(start(cmds[1], logs[1]))
        hole_auth = f"gopher://127.0.0.1:{hole.port}"

        def mid_request() -> bool:
            return settled(*dirs) >= 12 and any(u.startswith(hole_auth) for u in in_flight(dirs[0]))

        wait_for(mid_request, what="the first worker in the middle of a slow request")
        procs[0].send_signal(signal.SIGSTOP)
        stopped_with = in_flight(dirs[0])  # asked for before the stop: these may be asked twice
        # its lease expired and taken back (every half lease), and its hold on the host it was asking
        # (its request's deadline, --timeout 10, and HOLD_MARGIN) expired: fetched by the other
        time.sleep(max(lease * 3, 10 + HOLD_MARGIN) + 2)
        procs[0].send_signal(signal.SIGCONT)
        for p, log in zip(procs, logs, strict=True):
            finish(p, log)
        # also asked twice, allowed: a page answered before the stop whose settling was not yet
        # committed (its lease expired with it), which the worker writes down unsettled on waking
        stopped_with |= set(unsettled(dirs[0]))
        twice = received_twice(run) - {as_received(u) for u in expect.slow_down}
        assert twice <= {as_received(u) for u in stopped_with}, (twice, stopped_with)
        hole_twice = {s for s, n in Counter(hole.selectors()).items() if n > 1 and s.startswith("/")}
        assert hole_twice <= {sn.gopher_selector(u) for u in stopped_with if u.startswith(hole_auth)}
        requested_once(run, expect, allowed_twice=twice)
        assert too_close(run) == POLITE

    report = audit(dirs)  # the repeats, as the ledgers and pages files say: in flight, allowed
    assert report.violations == 0, [d.why() for d in report.duplicates if d.violation]
    slow = set(expect.slow_down)
    repeats = [d for d in report.duplicates if d.url not in slow]
    assert all(d.in_flight for d in repeats), [d.why() for d in repeats]
    lost = lease_lost(dirs[0])
    assert lost and all(line["worker"] == procs_worker(dirs[0]) for line in lost)
    assert all(line["lease"] and line["reason"] for line in lost)
    # each page it fetched under a lease it had lost: recorded, then said unsettled
    stale = unsettled(dirs[0])
    assert stale, pages(dirs[0])
    for url, line in stale.items():
        assert url in {line["url"] for line in lost}
        assert line["was"] in ("fetched", "error", "redirect") and line["reason"]
        assert url in {r["url"] for r in pages(dirs[1]) if r["outcome"] != "unsettled"}  # the other's


def procs_worker(out: Path) -> str:
    """The worker id of a directory's one worker (its ledger's name)."""
    (ledger,) = out.glob("requests-*.jsonl")
    return ledger.name.removeprefix("requests-").removesuffix(".jsonl")


# --------------------------------------------------------------------------- Redis away


def test_redis_away_longer_than_the_lease_the_workers_stop_and_what_they_fetched_is_unsettled(
    tmp_path: Path,
) -> None:
    """Leases of 4 s; Redis (append-only) stopped mid-crawl for 7 s while a worker waits on a 3 s
    page.  The workers give up after 2 s (half the lease), before their leases can expire: exit 1,
    never "done"; the pages they fetched meanwhile have an ``unsettled`` line.  Redis back, a
    worker joining with no seeds finishes the crawl: the servers saw no page twice but those
    in flight at the outage, each unsettled or never answered."""
    data = tmp_path / "redis"
    data.mkdir()
    name, lease = f"away-{uuid.uuid4().hex[:8]}", 4.0
    with site(tmp_path, slow=3.0, items=4) as (run, hole, seeds, expect):
        dirs = [tmp_path / "w0", tmp_path / "w1", tmp_path / "w2"]
        logs = [tmp_path / f"w{i}.err" for i in range(3)]
        with redis_durable(data) as port:
            frontier = f"redis://127.0.0.1:{port}/0"
            cmds = [worker(s, frontier, name, d, tmp_path / "robots.db", "--lease", str(lease))
                    for s, d in zip([seeds, seeds, []], dirs, strict=True)]  # fmt: skip
            procs = [start(cmds[0], logs[0])]
            wait_for(identity_kept(frontier, name), what="the first worker's crawl")
            procs.append(start(cmds[1], logs[1]))
            hole_auth = f"gopher://127.0.0.1:{hole.port}"

            def mid_request() -> bool:
                """A worker asked the hole for a page (3 s to answer) less than a second ago, both
                workers past their start (one still opening when Redis goes is told at once: exit 2)."""
                if settled(*dirs) < 12 or not all(ledgers(d) for d in dirs[:2]):
                    return False
                fresh = {line["url"] for d in dirs[:2] for line in ledgers(d) if line["t"] > time.time() - 1}
                return any(u.startswith(hole_auth) and u in fresh for d in dirs[:2] for u in in_flight(d))

            wait_for(mid_request, what="a worker in the middle of a slow request")
        away = [in_flight(d) for d in dirs[:2]]
        stopped = time.time()
        outs = []
        for p, log in zip(procs, logs[:2], strict=True):
            out, _ = p.communicate(timeout=60)
            err = log.read_text()
            assert p.returncode == 1 and "Traceback" not in err, err
            assert "(for 2 s, so this worker stops)" in err.strip().splitlines()[-1], err
            outs.append(json.loads(out))
        assert not any(o["completed"] for o in outs)
        time.sleep(max(0.0, lease + 1 - 2))  # their leases have expired by now
        with redis_durable(data, port):
            finish(start(cmds[2], logs[2]), logs[2])
        twice = received_twice(run) - {as_received(u) for u in expect.slow_down}
        # in flight at the outage: asked and unanswered then, or answered then and its settling
        # refused by the frontier gone (an unsettled line), asked before Redis stopped either way
        asked_then = {line["url"] for d in dirs[:2] for line in ledgers(d) if line["t"] <= stopped}
        unsettled_then = {u for d in dirs[:2] for u in unsettled(d)} & asked_then
        asked_before = {as_received(u) for urls in [*away, unsettled_then] for u in urls}
        assert twice <= asked_before, (twice, asked_before)
        hole_twice = {s for s, n in Counter(hole.selectors()).items() if n > 1 and s.startswith("/")}
        hole_before = {sn.gopher_selector(u) for urls in away for u in urls if u.startswith(hole_auth)}
        assert hole_twice and hole_twice <= hole_before  # the slow page: answered during the outage
        requested_once(run, expect, allowed_twice=twice)
        assert too_close(run) == POLITE

    report = audit(dirs)
    assert report.violations == 0, [d.why() for d in report.duplicates if d.violation]
    fetched_then = {u: d for d in dirs[:2] for u in unsettled(d)}
    hole_pages = [u for u in fetched_then if u.startswith(hole_auth)]
    assert hole_pages, [pages(d) for d in dirs[:2]]
    for url, d in fetched_then.items():
        line = unsettled(d)[url]
        assert line["was"] in ("fetched", "error", "redirect")
        assert "could not be reached" in line["reason"] or "before the frontier confirmed" in line["reason"]
        assert line["worker"] == procs_worker(d)
        # the line before it, for the same URL, is the record it says was not settled
        records = [r for r in pages(d) if r["url"] == url]
        assert [r["outcome"] for r in records][-2:] == [line["was"], "unsettled"]
    for url in {u for urls in away for u in urls} & {u for u in fetched_then}:
        assert url in {
            r["url"] for r in pages(dirs[2]) if r["outcome"] != "unsettled"
        }  # fetched again, settled


# --------------------------------------------------------------------------- a Redis that forgets


def test_redis_restarted_empty_the_workers_stop_lost_never_done(tmp_path: Path) -> None:
    """Redis restarted without its data mid-crawl (its append-only file lost: a Redis without
    persistence restarted is the same to the workers): both workers stop, exit 1, saying the crawl
    lost its data; ``status`` says so too, and a new worker is refused rather than starting over."""
    data = tmp_path / "redis"
    data.mkdir()
    name = f"empty-{uuid.uuid4().hex[:8]}"
    with site(tmp_path) as (run, _, seeds, _expect):
        dirs = [tmp_path / "w0", tmp_path / "w1"]
        logs = [tmp_path / "w0.err", tmp_path / "w1.err"]
        with redis_durable(data) as port:
            frontier = f"redis://127.0.0.1:{port}/0"
            cmds = [worker(seeds, frontier, name, d, tmp_path / "robots.db") for d in dirs]
            procs = [start(cmds[0], logs[0])]
            wait_for(identity_kept(frontier, name), what="the first worker's crawl")
            procs.append(start(cmds[1], logs[1]))
            wait_for(lambda: settled(*dirs) >= 12, what="12 pages")
            wait_for(at_work(frontier, name, 2), what="both workers at work")  # w1 starts late under load
        empty = tmp_path / "redis-empty"
        empty.mkdir()
        with redis_durable(empty, port):  # the same port and settings, its data gone
            for p, log in zip(procs, logs, strict=True):
                stopped_lost(p, log)
            said = status(frontier, name, "--json")
            assert said.returncode != 0 and "lost its data" in said.stderr, said
            again = subprocess.run(cmds[0], capture_output=True, text=True, env=ENV, timeout=60)
            assert again.returncode == 2 and "lost its data" in again.stderr, again.stderr
        assert len(run.gophernicus.snapshot()) < 60  # stopped, not crawled over again


def test_keys_evicted_under_maxmemory_the_workers_stop_lost_never_done(tmp_path: Path) -> None:
    """``maxmemory`` with ``allkeys-lru`` set mid-crawl, and Redis filled with other keys until it
    evicts: the workers stop, exit 1, saying the crawl lost its data, never "done"."""
    data = tmp_path / "redis"
    data.mkdir()
    name = f"evict-{uuid.uuid4().hex[:8]}"
    with site(tmp_path, slow=1.0, items=6) as (_, _, seeds, _), redis_durable(data) as port:
        frontier = f"redis://127.0.0.1:{port}/0"
        dirs = [tmp_path / "w0", tmp_path / "w1"]
        logs = [tmp_path / "w0.err", tmp_path / "w1.err"]
        cmds = [worker(seeds, frontier, name, d, tmp_path / "robots.db") for d in dirs]
        procs = [start(cmds[0], logs[0])]
        wait_for(identity_kept(frontier, name), what="the first worker's crawl")
        procs.append(start(cmds[1], logs[1]))
        wait_for(lambda: settled(*dirs) >= 12, what="12 pages")
        wait_for(at_work(frontier, name, 2), what="both workers at work")
        client = redis.Redis(port=port)
        used = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory-policy", "allkeys-lru")
        client.config_set("maxmemory", str(used + (1 << 20)))
        filler = b"x" * 10_000
        for batch in range(40):  # 40 MB of other keys, newer than every key of the crawl
            pipe = client.pipeline(transaction=False)
            for i in range(100):
                pipe.set(f"filler:{batch}:{i}", filler)
            pipe.execute()
        assert int(client.info("stats")["evicted_keys"]) > 0
        for p, log in zip(procs, logs, strict=True):
            stopped_lost(p, log)
        said = status(frontier, name, "--json")
        assert said.returncode != 0 and "done" not in said.stdout, said
