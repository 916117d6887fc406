"""Fixtures shared by the cache, load and fault tests; and, before any test, a check that the
corpora of data/ are unpacked (a sentence saying to run scripts/setup, not a traceback per file)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from data_paths import all_stale
from servers import redis_cluster, redis_server

# module_coverage: --every-module, the quick tier's check; hang_guard: a deadline for each test
pytest_plugins = ["module_coverage", "hang_guard"]


def pytest_sessionstart(session: pytest.Session) -> None:
    if (why := all_stale()) is not None:
        pytest.exit(why, returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(autouse=True)
def own_user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own user cache dir: a crawler's default robots.txt cache is a file there, and
    a loopback port is soon reused, so a test sharing ~/.cache could be answered with the robots.txt
    an earlier test's server gave on the same port, and never ask its own (a CI run saw a hole's
    robots.txt go unasked)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))


@pytest.fixture(scope="session")
def redis_port() -> Iterator[int]:
    """One real redis-server for the session (tests that restart Redis start their own)."""
    with redis_server() as port:
        yield port


@pytest.fixture(scope="session")
def redis_cluster_ports() -> Iterator[list[int]]:
    """One real three-master Redis Cluster for the session: its nodes' client ports."""
    with redis_cluster() as ports:
        yield ports


@pytest.fixture
def cache_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """A fresh store of a kind: "memory", "sqlite" (a file in tmp_path) or "redis" (emptied)."""

    def make(kind: str) -> str:
        if kind == "redis":
            port = request.getfixturevalue("redis_port")
            redis.Redis(port=port).flushall()
            return f"redis://127.0.0.1:{port}/0"
        if kind == "sqlite":
            return f"sqlite://{tmp_path / 'cache.sqlite3'}"
        return "memory"

    return make
