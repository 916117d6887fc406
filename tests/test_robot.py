"""Robot through each store (memory, SQLite file, real Redis), against real nginx sites."""

from __future__ import annotations

import asyncio
import importlib
import itertools
import logging
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import manners
from manners.cache import Entry
from sites import Site, sites

ROBOTS = [
    "User-agent: *\nDisallow: /private\n",
    "User-agent: *\nCrawl-delay: 0.3\nDisallow: /slow-private\n",
    "User-agent: *\nRequest-rate: 2/1s\n",
    "User-agent: *\nCrawl-delay: 31536000\n",  # a year
    "User-agent: *\nDisallow: /\n\nUser-agent: mybot\nDisallow: /mine\nAllow: /\n",
]


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Site]]:
    with sites(ROBOTS, tmp_path_factory.mktemp("sites")) as s:
        yield s


@pytest.fixture(params=["memory", "sqlite", "redis"])
def cache(request: pytest.FixtureRequest, cache_url: Callable[[str], str]) -> str:
    return cache_url(request.param)


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_allowed_and_decide(web: list[Site], cache: str) -> None:
    site = web[0]
    before = site.robots_fetches()

    async def go() -> manners.RobotDecision:
        async with manners.Robot("mybot", cache=cache, min_delay=0) as robot:
            assert not await robot.allowed(site.url + "/private/x")
            assert await robot.allowed(site.url + "/public")
            return await robot.decide(site.url + "/private")

    d = run(go())
    assert (d.allowed, d.line, d.rule, d.outcome, d.stale) == (False, 2, "Disallow: /private", "ok", False)
    assert d.robots_url == site.url + "/robots.txt"
    assert d.expires_at == pytest.approx(d.fetched_at + 86400) and d.fetched_at <= time.time()
    assert site.robots_fetches() == before + 1
    if cache != "memory":  # another robot sharing the store reads the cached copy
        run(go())
        assert site.robots_fetches() == before + 1


def test_one_fetch_per_authority_among_concurrent_callers(web: list[Site], cache: str) -> None:
    site = web[4]
    before = site.robots_fetches()

    async def go() -> list[bool]:
        robots = [
            manners.Robot("mybot", cache=cache, min_delay=0) for _ in range(1 if cache == "memory" else 5)
        ]
        try:
            calls = [r.allowed(f"{site.url}/mine/{n}") for n in range(10) for r in robots]
            calls += [r.allowed(f"{site.url}/ok/{n}") for n in range(10) for r in robots]
            return await asyncio.gather(*calls)
        finally:
            for r in robots:
                await r.close()

    answers = run(go())
    half = len(answers) // 2
    assert answers[:half] == [False] * half and answers[half:] == [True] * half
    assert site.robots_fetches() == before + 1


def test_a_store_answers_more_calls_at_once_than_redis_pys_default_pool(cache: str) -> None:
    """redis-py's default pool refuses a call past 100 at once ("Too many connections"), which a
    Robot shared by a few hundred tasks meets; every store answers 400 calls at once."""
    from manners.cache import open_store

    async def go() -> list[Entry | None]:
        store = open_store(cache)
        try:
            return await asyncio.gather(*(store.get(f"https://h{n}.example") for n in range(400)))
        finally:
            await store.close()

    assert run(go()) == [None] * 400


def test_spacing_follows_crawl_delay_and_request_rate(web: list[Site], cache: str) -> None:
    async def go() -> tuple[list[float], float, float, float]:
        async with manners.Robot("mybot", cache=cache, min_delay=0.1) as robot:
            assert robot.delay(web[1].url) == 0.1  # before the file is read: the robot's own minimum
            times = []
            for _ in range(4):
                await robot.wait(web[1].url + "/page")
                times.append(time.monotonic())
            await robot.allowed(web[2].url)
            await robot.allowed(web[0].url)
            return times, robot.delay(web[1].url), robot.delay(web[2].url), robot.delay(web[0].url)

    times, crawl_delay, rate, plain = run(go())
    assert (crawl_delay, rate, plain) == (0.3, 0.5, 0.1)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(g >= 0.3 - 0.02 for g in gaps), gaps  # 20 ms: see JITTER in test_load.py


SKEW: ContextVar[float] = ContextVar("SKEW", default=0.0)  # seconds this task's "machine" runs ahead
_real_time = time.time


class _SkewedTime(ModuleType):
    """The ``time`` module as seen on a machine whose clock runs SKEW seconds ahead: ``time()`` is
    shifted in the asyncio tasks that set SKEW (and those they start); the rest is the real module."""

    def time(self) -> float:
        return _real_time() + SKEW.get()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.mark.serial  # a time bound
def test_wait_on_redis_keeps_the_spacing_on_the_servers_clock(
    web: list[Site], cache_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two robots sharing a Redis, one on a machine whose clock is 100 s ahead, wait on one
    authority (Crawl-delay 0.3) at once: every grant, whichever robot got it, is at least 0.3 s
    after the last, and neither waits anywhere near 100 s.  Slots are on the Redis server's
    clock (TIME in the scripts) and answered in seconds from now.  With slots kept as each
    client's epoch time, this fails either way round: if the skewed robot books first, the other
    finds the next slot 100 s ahead of its own clock and waits (here: the 10 s deadline); if it
    books second, its slot is "now" by its own clock and it claims at once, right on top of the
    other's request."""
    cache = cache_url("redis")
    skewed = _SkewedTime("time")
    importlib.import_module("manners.cache.redis")  # open_store imports it only when first asked
    for name, module in list(sys.modules.items()):  # every manners module that reads the clock
        if name.startswith("manners") and getattr(module, "time", None) is time:
            monkeypatch.setattr(module, "time", skewed)
    site, turns = web[1], 4

    async def robot(skew: float) -> list[tuple[float, float]]:
        SKEW.set(skew)  # in this task only: the other robot keeps the true clock
        for name in ("manners.robot", "manners.cache.redis"):  # the machine's clock, as they read it
            assert sys.modules[name].time.time() - _real_time() == pytest.approx(skew, abs=0.01)
        grants = []
        async with manners.Robot("mybot", cache=cache, min_delay=0) as r:
            for n in range(turns):
                waited = await r.wait(f"{site.url}/page/{n}")
                grants.append((time.monotonic(), waited))
        return grants

    async def go() -> list[list[tuple[float, float]]]:
        both = asyncio.gather(robot(0.0), robot(100.0))
        return list(await asyncio.wait_for(both, timeout=10))

    true_clock, ahead = asyncio.run(go())
    assert max(waited for _, waited in true_clock + ahead) < 0.3 * 2 * turns  # nobody waited ~100 s
    times = sorted(t for t, _ in true_clock + ahead)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(g >= 0.3 - 0.02 for g in gaps), gaps  # 20 ms: see JITTER in test_load.py
    assert times[-1] - times[0] < 0.3 * (2 * turns - 1) + 1.0  # the two took turns, none idle


def _window(start: int, end: int) -> str:
    """A Request-rate window from ``start`` to ``end`` minutes after now, in UTC, as HHMM-HHMM."""
    now = datetime.now(UTC)
    at = [(now.hour * 60 + now.minute + m) % 1440 for m in (start, end)]
    return "-".join(f"{m // 60:02d}{m % 60:02d}" for m in at)


def test_a_request_rate_with_a_window_applies_only_inside_it(tmp_path: Path) -> None:
    """Request-rate: 1/1s with a window around now spaces requests 1 s; one whose window is
    later this day leaves the robot's own minimum (the window is UTC, the extended standard's)."""
    files = [
        f"User-agent: *\nRequest-rate: 1/1s {_window(-5, 5)}\n",
        f"User-agent: *\nRequest-rate: 1/1s {_window(60, 120)}\n",
    ]
    with sites(files, tmp_path / "www") as (inside, outside):

        async def go() -> tuple[float, float, float]:
            async with manners.Robot("mybot", cache="memory", min_delay=0.05) as robot:
                await robot.allowed(inside.url)
                await robot.allowed(outside.url)
                await robot.wait(inside.url + "/a")
                start = time.monotonic()
                await robot.wait(inside.url + "/b")
                return robot.delay(inside.url), robot.delay(outside.url), time.monotonic() - start

        inside_delay, outside_delay, waited = run(go())
    assert (inside_delay, outside_delay) == (1.0, 0.05)
    assert waited >= 1.0 - 0.02


@pytest.mark.quick
def test_an_unreasonable_delay_is_capped_and_reported(
    web: list[Site], cache: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def go() -> float:
        async with manners.Robot("mybot", cache=cache, min_delay=0, max_delay=2.0) as robot:
            await robot.allowed(web[3].url)
            return robot.delay(web[3].url)

    with caplog.at_level(logging.WARNING, logger="manners"):
        assert run(go()) == 2.0
    assert "31536000" in caplog.text and "capped" in caplog.text


@pytest.mark.serial  # a time bound
def test_a_failed_refetch_answers_from_the_last_copy(tmp_path: Path) -> None:
    cache = f"sqlite://{tmp_path / 'c.sqlite3'}"
    with sites(["User-agent: *\nDisallow: /kept\n"], tmp_path / "www") as (site,):

        async def first() -> bool:
            async with manners.Robot(cache=cache, ttl=0.2, min_delay=0) as robot:
                return await robot.allowed(site.url + "/kept")

        assert run(first()) is False
    time.sleep(0.3)  # the copy has expired, and the server is gone

    async def later() -> tuple[manners.RobotDecision, float]:
        async with manners.Robot(cache=cache, ttl=0.2, min_delay=0, timeout=2) as robot:
            d = await robot.decide(site.url + "/kept")
            start = time.monotonic()
            for _ in range(5):  # backing off: no new fetch on every call
                await robot.allowed(site.url + "/other")
            return d, time.monotonic() - start

    d, took = run(later())
    assert (d.allowed, d.outcome, d.stale, d.rule) == (False, "unreachable", True, "Disallow: /kept")
    assert d.expires_at - d.fetched_at == pytest.approx(60)  # the first backoff
    assert took < 0.5
    with sqlite3.connect(tmp_path / "c.sqlite3") as db:
        (data,) = db.execute("SELECT data FROM entries").fetchone()
    assert Entry.loads(data).failures == 1


def test_a_pending_slow_down_holds_the_next_slot() -> None:
    import ssl
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{d}/k.pem", "-out", f"{d}/c.pem", "-days", "1", "-subj", "/CN=localhost"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(f"{d}/c.pem", f"{d}/k.pem")

    async def go() -> tuple[float, manners.RobotDecision]:
        async def slow_down(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readline()
            writer.write(b"44 1\r\n")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(slow_down, "127.0.0.1", 0, ssl=tls)
        url = f"gemini://localhost:{server.sockets[0].getsockname()[1]}/page"
        async with manners.Robot(cache="memory", min_delay=0) as robot:
            start = time.monotonic()
            await robot.wait(url)
            waited = time.monotonic() - start
            d = await robot.decide(url)
        server.close()
        return waited, d

    waited, d = run(go())
    assert 0.9 <= waited < 2.0
    assert (d.allowed, d.outcome) == (False, "retry")


def test_sync_robot(web: list[Site], tmp_path: Path) -> None:
    with manners.SyncRobot("mybot", cache=f"sqlite://{tmp_path / 's.db'}", min_delay=0.05) as robot:
        assert not robot.allowed(web[4].url + "/mine")
        assert robot.allowed(web[4].url + "/yours")
        assert robot.decide(web[4].url + "/mine").line == 5
        robot.wait(web[4].url)
        assert robot.wait(web[4].url) > 0
        assert robot.delay(web[4].url) == 0.05


def test_bad_caches_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown cache"):
        manners.Robot(cache="postgres://x")
    (tmp_path / "file").write_text("")
    with pytest.raises(manners.CacheError, match="cannot open the SQLite cache"):
        manners.Robot(cache=f"sqlite://{tmp_path / 'file' / 'db.sqlite3'}")
    with pytest.raises(ValueError, match="min_delay"):
        manners.Robot(min_delay=5, max_delay=1)


def test_default_cache_is_a_sqlite_file_in_the_user_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    robot = manners.Robot()
    assert robot.store.location == f"sqlite://{tmp_path / 'manners' / 'robots.sqlite3'}"
    run(robot.close())
    assert (tmp_path / "manners" / "robots.sqlite3").exists()
