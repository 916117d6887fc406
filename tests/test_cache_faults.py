"""Workers that die and a Redis that restarts: the others carry on, nothing hangs."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

import manners
from manners.cache import open_store
from manners.cache.entry import Entry
from manners.cache.sqlite import SQLiteStore
from servers import redis_server
from sites import sites

WORKER = Path(__file__).with_name("load_worker.py")
ROBOTS = b"User-agent: *\nDisallow: /private\n"


class FirstCallerHangs:
    """An HTTP server whose first client gets nothing at all; later ones get robots.txt."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            if self.accepted == 1:
                self.held.append(conn)  # never answered
                continue
            with conn:
                conn.settimeout(5)
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(ROBOTS)
                )
                conn.sendall(ROBOTS)

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


def lock_held(cache: str, key: str) -> bool:
    if cache.startswith("redis"):
        return bool(redis.Redis.from_url(cache).get("manners:lock:" + key))
    with sqlite3.connect(cache[len("sqlite://") :]) as db:
        try:
            return db.execute("SELECT 1 FROM locks WHERE key = ?", (key,)).fetchone() is not None
        except sqlite3.OperationalError:  # not created yet
            return False


@pytest.mark.serial  # a time bound
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_worker_killed_holding_the_fetch_lock(kind: str, cache_url: Callable[[str], str]) -> None:
    cache = cache_url(kind)
    server = FirstCallerHangs()
    victim = subprocess.Popen([sys.executable, str(WORKER), "allowed", cache, server.url + "/x", "2"])
    try:
        deadline = time.monotonic() + 20
        while not (lock_held(cache, server.url) and server.accepted == 1):  # holding the lock, mid-fetch
            assert victim.poll() is None and time.monotonic() < deadline, "the worker never took the lock"
            time.sleep(0.05)
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)

        async def carry_on() -> tuple[manners.RobotDecision, float]:
            async with manners.Robot(cache=cache, lock_timeout=2, timeout=5) as robot:
                start = time.monotonic()
                decision = await robot.decide(server.url + "/private/page")
                return decision, time.monotonic() - start

        d, took = asyncio.run(carry_on())
        # the file was fetched, by us, once the dead worker's lock ran out
        assert (d.allowed, d.outcome, d.rule) == (False, "ok", "Disallow: /private")
        assert took < 2 + 1.5
        assert server.accepted == 2
    finally:
        victim.kill()
        server.close()


def written(path: Path) -> bool:
    """Whether the cache file at ``path`` holds an entry yet."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT 1 FROM entries LIMIT 1").fetchone() is not None
    except sqlite3.OperationalError:  # no file, or no table yet
        return False


def test_a_worker_killed_while_writing_leaves_the_file_readable(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    cache = f"sqlite://{path}"
    for round_ in range(5):
        writer = subprocess.Popen([sys.executable, str(WORKER), "write", cache])
        deadline = time.monotonic() + 30
        while not written(path):  # its start-up, however long a loaded machine makes it
            assert writer.poll() is None and time.monotonic() < deadline, "the writer never wrote"
            time.sleep(0.05)
        time.sleep(0.15 * round_)  # then a while of 1 MB writes
        assert writer.poll() is None
        writer.send_signal(signal.SIGKILL)
        writer.wait(10)
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            rows = db.execute("SELECT data FROM entries").fetchall()
        assert rows, "the writer wrote nothing before it was killed"
        for (data,) in rows:
            e = Entry.loads(data)
            assert e.body.startswith(b"User-agent: *\nDisallow: /")

    with sites([ROBOTS.decode()], tmp_path / "www") as (site,):

        async def carry_on() -> bool:
            async with manners.Robot(cache=cache, min_delay=0) as robot:
                await robot.wait(site.url + "/a")
                return await robot.allowed(site.url + "/private")

        assert asyncio.run(carry_on()) is False


def test_redis_restarted_mid_run(tmp_path: Path) -> None:
    async def run(one: str, two: str) -> None:
        with redis_server() as port:
            cache = f"redis://127.0.0.1:{port}/0"
            robot = manners.Robot(cache=cache, min_delay=0.01, timeout=5)
            await robot.wait(one)
            assert await robot.allowed(one + "/private") is False

        # Redis is down: calls that need it fail at once with CacheError; none hangs.
        for call in (robot.allowed(two + "/a"), robot.wait(one + "/a")):
            start = time.monotonic()
            with pytest.raises(manners.CacheError, match=f"Redis cache at {cache} is unreachable"):
                await call
            assert time.monotonic() - start < 6
        assert await robot.allowed(one + "/private") is False  # what it already read still answers

        with redis_server(port):  # back, and empty
            await robot.wait(two)
            assert await robot.allowed(two + "/private") is False
            await robot.wait(one)
            assert await robot.allowed(one + "/public") is True
            await robot.close()

    with sites([ROBOTS.decode(), ROBOTS.decode()], tmp_path / "www") as (one, two):
        asyncio.run(run(one.url, two.url))


def test_store_rejects_nothing_it_wrote(tmp_path: Path) -> None:
    """A store round-trips entries exactly (the property the fault tests lean on)."""
    store = open_store(f"sqlite://{tmp_path / 'x.db'}")
    e = Entry(
        "http://h/robots.txt", "ok", "200", "http://h/robots.txt", 1.0, 2.0, "ok", 1.0, "200", b"\x00\xff"
    )
    asyncio.run(store.put("k", e))
    assert asyncio.run(store.get("k")) == e
    asyncio.run(store.close())
    assert os.path.exists(tmp_path / "x.db")


@pytest.mark.serial  # a time bound
def test_a_sqlite_read_does_not_wait_for_another_process_writing(tmp_path: Path) -> None:
    """In WAL mode a reader needs no lock: a policy is read while another worker holds the write lock."""
    path = tmp_path / "c.sqlite3"
    e = Entry("http://h/robots.txt", "ok", "200", "", 1.0, 2.0, "ok", 1.0, "200", ROBOTS)

    async def read_while_locked() -> tuple[Entry | None, float]:
        store = SQLiteStore(path, busy_timeout=0.3)
        await store.put("k", e)
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # held until this test lets go
        other.execute("INSERT OR REPLACE INTO slots VALUES ('x', 1.0)")
        try:
            start = time.monotonic()
            got = await store.get("k")
            took = time.monotonic() - start
            with pytest.raises(manners.CacheError, match="stayed locked"):
                await store.book("k", 1.0)  # a write does wait, and says so
        finally:
            other.execute("ROLLBACK")
            other.close()
            await store.close()
        return got, took

    got, took = asyncio.run(read_while_locked())
    assert got == e
    assert took < 0.5


OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from manners.cache.sqlite import SQLiteStore
start = float(sys.argv[2])
while time.time() < start:
    pass
SQLiteStore(Path(sys.argv[1]))
"""


def test_workers_opening_a_new_sqlite_cache_at_once_all_open_it(tmp_path: Path) -> None:
    """Workers starting together each set up the same new file; SQLite tells all but one
    "locked" at once, without waiting, and none may fail for it."""
    for round_ in range(10):
        path = tmp_path / f"c{round_}.sqlite3"
        start = str(time.time() + 0.5)  # after every interpreter has started
        workers = [
            subprocess.Popen([sys.executable, "-c", OPEN_AT_ONCE, str(path), start], stderr=subprocess.PIPE)
            for _ in range(4)
        ]
        for w in workers:
            _, err = w.communicate(timeout=30)
            assert w.returncode == 0, err.decode(errors="replace")[-500:]
