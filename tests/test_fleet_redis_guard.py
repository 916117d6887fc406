"""A fleet's Redis as an operator may get it wrong, with real redis-server (and a real Redis Cluster):
settings that can lose the crawl refused before anything is written (``--allow-unsafe-redis`` to
accept them), read by ``CONFIG GET`` or, where that is refused, by ``INFO``; and each way Redis can
refuse a worker (an ACL without scripts, a wrong password, TLS to a plain server) told in one
sentence, at once; a restart and a Cluster master's death end in no warning or traceback.

Every worker is a real ``manners crawl`` process; what it says is read from its exit status and
its stderr, what it wrote from Redis itself (``DBSIZE``, the crawl's keys).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
import redis

from servers import free_port, redis_cluster, redis_durable, redis_server
from test_fleet import ENV, at_work, identity_kept, pages, settled, site, start, wait_for, worker

AGENT = "testbot"


def crawl(
    frontier: str, out: Path, *extra: str, seeds: Sequence[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One worker of a crawl on ``frontier``, its seed a closed port (over at once: robots.txt
    cannot be read, once): what it said, and its exit status."""
    seeds = [f"gopher://127.0.0.1:{free_port()}/"] if seeds is None else seeds
    cmd = [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", AGENT, "--frontier", frontier,
           "--name", f"g-{uuid.uuid4().hex[:8]}", "--out", str(out), "--robots-attempts", "1",
           "--cache", "memory", "--json", *extra]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)


def one_sentence(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused worker printed, with nothing else beside it."""
    assert "Traceback" not in done.stderr and "Unclosed" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr.strip()


# --------------------------------------------------------------------------- settings


def test_a_redis_that_keeps_nothing_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with redis_server(extra=["--appendonly", "no"]) as port:
        frontier = f"redis://127.0.0.1:{port}/0"
        refused = crawl(frontier, tmp_path / "a")
        assert refused.returncode == 2, refused.stderr
        said = one_sentence(refused)
        assert said == (
            f"manners: Redis at redis://127.0.0.1:{port}: appendonly is no and save is empty, so a restart"
            " loses the crawl; run Redis with appendonly yes (or save), or pass --allow-unsafe-redis to"
            " accept the risk"
        )
        client = redis.Redis(port=port)
        assert client.dbsize() == 0  # nothing written: no layout, no crawl
        assert not (tmp_path / "a").exists()

        accepted = crawl(frontier, tmp_path / "b", "--allow-unsafe-redis")
        assert accepted.returncode == 0, accepted.stderr
        assert "Traceback" not in accepted.stderr
        warning = accepted.stderr.splitlines()[0]
        assert warning.startswith(
            f"manners crawl: warning: Redis at redis://127.0.0.1:{port}: appendonly is no"
        )
        assert warning.endswith("; accepted by --allow-unsafe-redis")
        assert json.loads(accepted.stdout)["completed"]
        assert client.dbsize() > 0  # the crawl ran on it


def test_the_flag_is_refused_where_there_is_no_redis(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "manners", "crawl", f"gopher://127.0.0.1:{free_port()}/", "--agent", AGENT,
           "--out", str(tmp_path / "a"), "--allow-unsafe-redis"]  # fmt: skip
    refused = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=60)
    assert refused.returncode == 2
    assert one_sentence(refused) == (
        "manners: --allow-unsafe-redis accepts a Redis that can lose a fleet's crawl: this crawl is on SQLite"
    )


def test_snapshots_without_an_append_only_file_are_a_warning_not_a_refusal(tmp_path: Path) -> None:
    with redis_server(extra=["--appendonly", "no", "--save", "3600 1"]) as port:
        done = crawl(f"redis://127.0.0.1:{port}/0", tmp_path / "a")
        assert done.returncode == 0, done.stderr
        warning = done.stderr.splitlines()[0]
        assert warning.startswith(
            f"manners crawl: warning: Redis at redis://127.0.0.1:{port}: appendonly is no,"
        )
        assert "since the last snapshot (save 3600 1)" in warning and "allow-unsafe" not in warning


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-ttl"])
def test_an_evicting_redis_is_refused_naming_its_policy(tmp_path: Path, policy: str) -> None:
    with redis_server(extra=["--maxmemory", "64mb", "--maxmemory-policy", policy]) as port:
        refused = crawl(f"redis://127.0.0.1:{port}/0", tmp_path / "a")
        assert refused.returncode == 2, refused.stderr
        said = one_sentence(refused)
        assert (
            f"maxmemory is 67108864 bytes with maxmemory-policy {policy}, so the crawl's keys are evicted"
            in said
        )
        assert (
            "run Redis with maxmemory-policy noeviction (or maxmemory 0), or pass --allow-unsafe-redis"
            in said
        )
        assert redis.Redis(port=port).dbsize() == 0


def test_a_memory_limit_that_evicts_nothing_is_accepted(tmp_path: Path) -> None:
    with redis_server(extra=["--maxmemory", "64mb", "--maxmemory-policy", "noeviction"]) as port:
        done = crawl(f"redis://127.0.0.1:{port}/0", tmp_path / "a")
        assert done.returncode == 0, done.stderr
        assert "warning" not in done.stderr and "Traceback" not in done.stderr


def test_where_config_is_renamed_away_info_is_read_instead(tmp_path: Path) -> None:
    renamed = ["--rename-command", "CONFIG", ""]
    with redis_server(extra=renamed) as port:  # the append-only file on: INFO says so
        done = crawl(f"redis://127.0.0.1:{port}/0", tmp_path / "a")
        assert done.returncode == 0, done.stderr
        assert "warning" not in done.stderr
    with redis_server(extra=[*renamed, "--appendonly", "no"]) as port:
        refused = crawl(f"redis://127.0.0.1:{port}/0", tmp_path / "b")
        assert refused.returncode == 2, refused.stderr
        said = one_sentence(refused)
        assert (
            "appendonly is no and save cannot be read (CONFIG GET is refused: unknown command 'CONFIG'"
            in said
        )
        assert said.endswith("so a restart may lose the crawl; run Redis with appendonly yes, or pass"
                             " --allow-unsafe-redis to accept the risk")  # fmt: skip


def test_where_an_acl_refuses_config_info_finds_the_eviction_policy(tmp_path: Path) -> None:
    with redis_server(extra=["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lfu"]) as port:
        redis.Redis(port=port).acl_setuser("crawler", enabled=True, passwords=["+pw"], keys=["*"],
                                           channels=["*"], commands=["+@all", "-config"])  # fmt: skip
        refused = crawl(f"redis://crawler:pw@127.0.0.1:{port}/0", tmp_path / "a")
        assert refused.returncode == 2, refused.stderr
        said = one_sentence(refused)
        assert "maxmemory-policy allkeys-lfu" in said and "pw@" not in said


def test_a_cluster_master_without_persistence_is_refused_by_name(
    tmp_path: Path, redis_cluster_ports: list[int]
) -> None:
    node = redis.Redis(port=redis_cluster_ports[1])
    node.config_set("appendonly", "no")
    try:
        refused = crawl(f"redis-cluster://127.0.0.1:{redis_cluster_ports[0]}", tmp_path / "a")
    finally:
        node.config_set("appendonly", "yes")
    assert refused.returncode == 2, refused.stderr
    said = one_sentence(refused)
    node_named = f"(on 127.0.0.1:{redis_cluster_ports[1]})"
    assert f"appendonly is no and save is empty, so a restart loses the crawl {node_named}" in said
    assert str(redis_cluster_ports[2]) not in said
    done = crawl(
        f"redis-cluster://127.0.0.1:{redis_cluster_ports[0]}", tmp_path / "b"
    )  # all three keep it now
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- refusals, in one sentence


def scriptless(port: int) -> None:
    """The ACL user ``crawler`` (password ``pw``): everything but scripts."""
    redis.Redis(port=port).acl_setuser("crawler", enabled=True, passwords=["+pw"], keys=["*"], channels=["*"],
                                       commands=["+@all", "-eval", "-evalsha", "-script"])  # fmt: skip


def test_a_user_refused_scripts_is_told_at_once_naming_the_command(tmp_path: Path) -> None:
    with redis_server() as port:
        scriptless(port)
        began = time.monotonic()
        refused = crawl(f"redis://crawler:pw@127.0.0.1:{port}/0", tmp_path / "a")
        took = time.monotonic() - began
    assert refused.returncode == 2, refused.stderr
    said = one_sentence(refused)
    assert said.startswith(
        f"manners: Redis at redis://127.0.0.1:{port} refuses this user the command SCRIPT LOAD"
    )
    assert took < 20  # not waited out as an outage (30 s)


def test_scripts_refused_mid_crawl_stop_the_worker_at_once(tmp_path: Path) -> None:
    port, data = free_port(), tmp_path / "redis"
    data.mkdir()
    frontier, out, log = f"redis://crawler:pw@127.0.0.1:{port}/0", tmp_path / "w", tmp_path / "w.err"
    with site(tmp_path) as (_, _, seeds, _), redis_durable(data, port):
        redis.Redis(port=port).acl_setuser("crawler", enabled=True, passwords=["+pw"], keys=["*"],
                                           channels=["*"], commands=["+@all"])  # fmt: skip
        proc = start(worker(seeds, frontier, "acl", out, tmp_path / "robots.db"), log)
        wait_for(lambda: settled(out) >= 5, what="5 pages")
        scriptless(port)
        changed = time.monotonic()
        stdout, _ = proc.communicate(timeout=120)
        took = time.monotonic() - changed
    err = log.read_text()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "Unclosed" not in err, err
    last = err.strip().splitlines()[-1]
    # the first script command it meets refused: a cached script's EVALSHA, or loading one
    assert re.match(
        rf"manners crawl: Redis at redis://127\.0\.0\.1:{port} refuses this user the command"
        r" (EVALSHA|EVAL|SCRIPT EXISTS|SCRIPT LOAD) ",
        last,
    ), last
    assert "pw@" not in err
    assert took < 20, err  # not waited out as an outage (30 s)
    assert json.loads(stdout)["error"]


def test_a_wrong_password_and_a_missing_one_are_said_so(tmp_path: Path) -> None:
    with redis_server(extra=["--requirepass", "sekrit"]) as port:
        wrong = crawl(f"redis://:guess@127.0.0.1:{port}/0", tmp_path / "a")
        missing = crawl(f"redis://127.0.0.1:{port}/0", tmp_path / "b")
        right = crawl(f"redis://:sekrit@127.0.0.1:{port}/0", tmp_path / "c")
    assert wrong.returncode == 2, wrong.stderr
    said = one_sentence(wrong)
    assert said.startswith(f"manners: Redis refused the password for redis://127.0.0.1:{port} (")
    assert "guess" not in said and "unreachable" not in said
    assert missing.returncode == 2, missing.stderr
    assert one_sentence(missing) == (
        f"manners: Redis at redis://127.0.0.1:{port} asks for a password: give it in the URL,"
        " redis://:PASSWORD@HOST:PORT/DB"
    )
    assert right.returncode == 0, right.stderr


def test_tls_to_a_plain_server_is_said_so(tmp_path: Path) -> None:
    with redis_server() as port:
        refused = crawl(f"rediss://127.0.0.1:{port}/0", tmp_path / "a")
    assert refused.returncode == 2, refused.stderr
    said = one_sentence(refused)
    assert said == (
        f"manners: Redis at rediss://127.0.0.1:{port} does not speak TLS (it answers plain Redis there):"
        " use redis:// or the server's TLS port"
    )


# --------------------------------------------------------------------------- restarts and deaths


def test_a_redis_restart_mid_crawl_leaves_no_warning_behind(tmp_path: Path) -> None:
    """Redis (its append-only file kept) restarted five times mid-crawl: the worker goes on to the
    end, and says nothing but that it waited (no asyncio or redis-py warning of an unclosed client
    or pipeline: a pipeline whose scripts were being loaded again when the connection closed)."""
    port, data = free_port(), tmp_path / "redis"
    data.mkdir()
    frontier, out, log = f"redis://127.0.0.1:{port}/0", tmp_path / "w", tmp_path / "w.err"
    with site(tmp_path) as (_, _, seeds, expect):
        with redis_durable(data, port):
            proc = start(worker(seeds, frontier, "restart", out, tmp_path / "robots.db"), log)
            wait_for(lambda: settled(out) >= 5, what="5 pages")
        for _ in range(4):  # restarted at once: the worker's calls meet it stopping and starting
            with redis_durable(data, port):
                time.sleep(1.0)
        with redis_durable(data, port):
            stdout, _ = proc.communicate(timeout=240)
    err = log.read_text()
    assert proc.returncode == 0, err
    assert "waiting for it" in err
    assert "Unclosed" not in err and "Traceback" not in err and "Task exception" not in err, err
    assert json.loads(stdout)["completed"]
    assert {p["url"] for p in pages(out)} >= expect.fetched


def pid_of(port: int) -> int:
    return int(redis.Redis(port=port).info("server")["process_id"])


def test_a_cluster_master_dying_mid_crawl_ends_each_worker_with_one_sentence(tmp_path: Path) -> None:
    """A master of a three-master Cluster SIGKILLed mid-crawl: every worker stops with the one
    sentence, exit 1, and no traceback after it (nor any warning)."""
    with redis_cluster() as ports, site(tmp_path) as (_, _, seeds, _):
        frontier, name = f"redis-cluster://127.0.0.1:{ports[0]}", "dying"
        dirs = [tmp_path / f"w{i}" for i in range(3)]
        logs = [tmp_path / f"w{i}.err" for i in range(3)]
        procs = [start(worker(seeds, frontier, name, dirs[0], tmp_path / "robots.db"), logs[0])]
        wait_for(identity_kept(frontier, name), what="the first worker's crawl")
        procs += [start(worker(seeds, frontier, name, d, tmp_path / "robots.db"), log)
                  for d, log in zip(dirs[1:], logs[1:], strict=True)]  # fmt: skip
        wait_for(at_work(frontier, name, 3), what="three workers at work")
        wait_for(lambda: settled(*dirs) >= 10, what="10 pages")
        os.kill(pid_of(ports[1]), signal.SIGKILL)
        for proc in procs:
            proc.communicate(timeout=180)
    for proc, log in zip(procs, logs, strict=True):
        err = log.read_text()
        assert proc.returncode == 1, err
        assert "Traceback" not in err and "Unclosed" not in err and "Task exception" not in err, err
        last = err.strip().splitlines()[-1]
        assert last.startswith("manners crawl: the Redis frontier at redis-cluster://127.0.0.1:"), err
