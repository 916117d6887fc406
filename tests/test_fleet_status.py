"""``manners crawl status`` and ``audit`` on a real fleet: a worker SIGKILLed with a URL in flight,
and one stopped by a Redis outage, against a real ``redis-server`` and a Gopher hole whose pages
take their time (what it received is read from its side).

What status shows of a worker that can no longer speak for itself is the frontier's word, not its
last heartbeat's: its URLs in flight are the leases it still holds (none once reclaimed), and a
worker silent past what it waits out of an outage is stopped, not "silent"; ``audit`` given the
frontier reconciles the crawl's totals with the workers' files.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

from servers import free_port, redis_durable
from slow_hole import slow_hole
from test_cli_json import agrees
from test_fleet import ENV, at_work, finish, identity_kept, pages, settled, start, wait_for, worker

pytestmark = pytest.mark.serial  # workers kept alive across Redis outages, timed by leases


def status(frontier: str, name: str, *json_out: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "manners",
        "crawl",
        "status",
        "--frontier",
        frontier,
        "--name",
        name,
        *json_out,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env={**ENV, "COLUMNS": "200"}, timeout=60)


def status_json(frontier: str, name: str) -> dict[str, Any]:
    shown = status(frontier, name, "--json")
    assert shown.returncode == 0, shown.stderr
    data: dict[str, Any] = json.loads(shown.stdout)
    return data


def heartbeats(frontier: str, name: str) -> dict[str, dict[str, Any]]:
    """Each worker's last heartbeat as it sits in Redis: what the worker itself said."""
    raw = redis.Redis.from_url(frontier).hgetall(f"{name}:workers")
    return {k.decode(): json.loads(v) for k, v in raw.items()}


def worker_of(frontier: str, name: str, pid: int) -> str | None:
    return next((w for w, b in heartbeats(frontier, name).items() if b["info"]["pid"] == pid), None)


def test_a_killed_workers_in_flight_clears_once_its_leases_are_reclaimed(
    tmp_path: Path, redis_port: int
) -> None:
    """Two workers, a 3 s lease; the first is SIGKILLed while its heartbeat says it holds a URL.
    Once its lease is reclaimed, status shows it with nothing in flight though its last heartbeat
    (still in Redis) says otherwise; the other finishes the crawl, and the audit, given the
    frontier, passes with the totals agreeing and any repeat labelled in flight."""
    frontier, name = f"redis://127.0.0.1:{redis_port}/0", f"status-{uuid.uuid4().hex[:8]}"
    with slow_hole(1.5, items=6) as hole:
        seeds = [f"gopher://127.0.0.1:{hole.port}/1/"]
        dirs = [tmp_path / "a", tmp_path / "b"]
        logs = [tmp_path / "a.err", tmp_path / "b.err"]
        cmds = [worker(seeds, frontier, name, d, tmp_path / "robots.db", "--lease", "3") for d in dirs]
        first = start(cmds[0], logs[0])
        wait_for(identity_kept(frontier, name), what="the first worker's crawl")
        second = start(cmds[1], logs[1])

        def holding() -> bool:
            w = worker_of(frontier, name, first.pid)
            return w is not None and heartbeats(frontier, name)[w]["info"]["in_flight"] >= 1

        wait_for(holding, what="a heartbeat of the first worker saying it holds a URL")
        killed = worker_of(frontier, name, first.pid)
        assert killed is not None
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        said = heartbeats(frontier, name)[killed]["info"]["in_flight"]
        assert said >= 1

        def cleared() -> bool:
            return status_json(frontier, name)["workers"][killed]["in_flight"] == 0

        wait_for(cleared, timeout=60, what="status to show the killed worker's leases reclaimed")
        whole = status_json(frontier, name)
        agrees("manners crawl status", whole)
        now = whole["workers"][killed]
        assert now["leases"] == 0 and heartbeats(frontier, name)[killed]["info"]["in_flight"] == said
        summary = finish(second, logs[1])
        assert summary["completed"]
        asked = Counter(s for s in hole.selectors() if s.startswith("/"))
    assert sorted(asked) == ["/", *(f"/item{i}" for i in range(6))]  # the hole crawled whole
    assert sum(n - 1 for n in asked.values()) <= 1  # at most the URL in flight at the kill, twice

    cmd = [sys.executable, "-m", "manners", "crawl", "audit", *map(str, dirs), "--frontier", frontier,
           "--name", name, "--json"]  # fmt: skip
    audited = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=60)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    report = json.loads(audited.stdout)
    agrees("manners crawl audit", report)
    reconciled = report["reconciled"]
    assert reconciled["agree"] and (reconciled["queued"], reconciled["in_flight"]) == (0, 0), reconciled
    figures = {f["name"]: f["frontier"] for f in reconciled["figures"]}
    assert figures["pages"] == len(asked) and figures["fetched"] == len(
        {r["url"] for r in pages(*dirs) if r["outcome"] == "fetched"}
    )
    assert all(d["in_flight"] and not d["violation"] for d in report["duplicates"])
    assert len(report["duplicates"]) == sum(n > 1 for n in asked.values())


def test_a_worker_stopped_by_a_redis_outage_is_shown_stopped_not_silent(tmp_path: Path) -> None:
    """Redis (append-only) stopped under a working worker: the worker waits out its patience
    (30 s) and stops, exit 1, unable to say so.  Redis started again, status shows it stopped
    once it has been silent past its patience and two heartbeats: not alive, not "silent"."""
    port, data = free_port(), tmp_path / "redis"
    data.mkdir()
    frontier, name, out, log = (
        f"redis://127.0.0.1:{port}/0",
        "outage-status",
        tmp_path / "w",
        tmp_path / "w.err",
    )
    with slow_hole(0.5, items=60) as hole:
        seeds = [f"gopher://127.0.0.1:{hole.port}/1/"]
        with redis_durable(data, port):
            proc = start(worker(seeds, frontier, name, out, tmp_path / "robots.db"), log)
            wait_for(at_work(frontier, name, 1), what="the worker at work")
            wait_for(lambda: settled(out) >= 3, what="3 pages")
            (who,) = heartbeats(frontier, name)
        proc.communicate(timeout=120)
        assert proc.returncode == 1, log.read_text()
        with redis_durable(data, port):
            beat = heartbeats(frontier, name)[who]
            assert beat["info"]["state"] == "running"  # it could not say it stopped
            patience = beat["info"]["patience"]
            assert patience == 30
            wait_for(lambda: status_json(frontier, name)["workers"][who]["ago"] > patience + 10.5, timeout=60,
                     what="silence past its patience")  # fmt: skip
            whole = status_json(frontier, name)
            shown = whole["workers"][who]
            text = status(frontier, name)
    assert (shown["alive"], shown["condition"], shown["state"]) == (False, "stopped", "running")
    agrees("manners crawl status", whole)
    assert text.returncode == 0, text.stderr
    line = next(line for line in text.stdout.splitlines() if line.startswith(f"  {who}"))
    assert line.startswith(f"  {who}  stopped without a word (killed, or stopped by a frontier outage)"), line
    assert "workers: 0 alive, 1 stopped, 0 silent" in text.stdout, text.stdout
