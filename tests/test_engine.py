"""The Rust engine behind the Python API: sizes, threads, hostile input, the wheel's module."""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import manners
from manners import _core


def test_getsizeof_counts_what_the_engine_holds() -> None:
    small = manners.parse(b"User-agent: *\nDisallow: /a\n")
    body = b"User-agent: *\n" + b"".join(b"Disallow: /path/number/%d\n" % i for i in range(2000))
    large = manners.parse(body)
    assert sys.getsizeof(large) - sys.getsizeof(small) > 30_000  # the values are held
    assert sys.getsizeof(large) < len(body)  # but not the keys, nor the line ends
    before = sys.getsizeof(large)
    large.allowed("/path/number/7x")
    large.allowed("/path/number/7x")  # asked twice: the rules are compiled and indexed
    assert sys.getsizeof(large) > before


def test_one_parsed_file_answers_many_threads_alike() -> None:
    body = b"User-agent: *\n" + b"".join(b"Disallow: /p%d/\nAllow: /p%d/ok\n" % (i, i) for i in range(300))
    robots = manners.parse(body)
    targets = [f"/p{i}/{'ok' if i % 3 else 'no'}" for i in range(300)]
    expected = [manners.parse(body).allowed(t) for t in targets]

    def ask(_: int) -> list[bool]:
        return [robots.allowed(t, "mybot") for t in targets]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, range(32)))
    assert all(r == expected for r in results)
    assert expected.count(False) == 100


@pytest.mark.serial  # a time limit
def test_four_hundred_stars_against_a_long_path_stay_linear() -> None:
    robots = manners.parse("User-agent: *\nDisallow: /" + "*a" * 400 + "x$\n", "google")
    path = "/" + "a" * 20_000
    started = time.perf_counter()
    assert robots.allowed(path)
    assert robots.allowed(path)  # compiled the second time
    assert time.perf_counter() - started < 0.1


@pytest.mark.parametrize("data", [b"\x00" * 70_000, bytes(range(256)) * 300, b"\r" * 50_000, b"a:" * 40_000])
def test_hostile_bytes_parse_and_answer(data: bytes) -> None:
    robots = manners.parse(data, max_bytes=None)
    assert robots.allowed("/x") is True
    assert robots.decide("gopher://h/1/x").allowed is True
    assert isinstance(robots.diagnostics, list)


def test_the_engine_is_the_extension_module() -> None:
    # the engine's own class and function, with no Python layer between
    assert manners.RobotsTxt is _core.RobotsTxt and manners.parse is _core.parse
    assert type(manners.parse(b"")) is _core.RobotsTxt
    assert not hasattr(manners, "match") and not hasattr(manners, "parse_lines")
    assert _core.MAX_LINE_BYTES == 2083 * 8 - 1


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_files_let_go_of_are_freed() -> None:
    """A file dropped while its thread holds the GIL is freed the next time the thread lets
    it go: memory stays flat however many files come and go, on any thread."""
    body = b"User-agent: *\n" + b"".join(b"Disallow: /path/number/%d\n" % i for i in range(200))

    def churn(n: int) -> None:
        for i in range(n):
            manners.parse(body).allowed(f"/path/number/{i}")

    churn(2_000)  # the allocator's pools, warmed
    before = _rss()
    churn(20_000)  # 20,000 x ~5 KB: 100 MB if none were freed
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(churn, [10_000, 10_000]))
    assert _rss() - before < 20_000_000
