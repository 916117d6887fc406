"""The verdict on a Redis's settings (``manners.crawl.redis_settings``), without a server: which
settings can lose a fleet's crawl (refused), which lose part of it (a warning), which keep it; and
the settings as ``INFO`` gives them where ``CONFIG GET`` is refused.  test_fleet_redis_guard.py
holds the same against real redis-server."""

from __future__ import annotations

import pytest

from manners.crawl.redis_settings import Finding, findings, from_info, sentence

pytestmark = pytest.mark.quick

SAFE = {"appendonly": "yes", "save": "", "maxmemory": "0", "maxmemory-policy": "noeviction"}
EVICTING = ["allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random",
            "volatile-ttl"]  # fmt: skip


def test_an_append_only_file_and_no_limit_keep_the_crawl() -> None:
    assert findings(SAFE) == []
    assert findings({**SAFE, "save": "3600 1 300 100"}) == []


def test_neither_an_append_only_file_nor_snapshots_is_refused_naming_both() -> None:
    (found,) = findings({**SAFE, "appendonly": "no"})
    assert found.refuse
    assert found.problem == "appendonly is no and save is empty, so a restart loses the crawl"
    assert found.fix == "appendonly yes (or save)"


def test_snapshots_alone_are_a_warning() -> None:
    (found,) = findings({**SAFE, "appendonly": "no", "save": "3600 1"})
    assert not found.refuse
    assert "crash loses what changed since the last snapshot (save 3600 1)" in found.problem


@pytest.mark.parametrize("policy", EVICTING)
def test_a_limit_with_an_evicting_policy_is_refused(policy: str) -> None:
    (found,) = findings({**SAFE, "maxmemory": "1048576", "maxmemory-policy": policy})
    assert found.refuse and found.setting == "maxmemory-policy"
    assert found.problem.startswith(
        f"maxmemory is 1048576 bytes with maxmemory-policy {policy}, so the crawl's"
    )


@pytest.mark.parametrize("policy", EVICTING)
def test_no_limit_evicts_nothing_whatever_the_policy(policy: str) -> None:
    assert findings({**SAFE, "maxmemory-policy": policy}) == []


def test_a_limit_that_refuses_writes_instead_keeps_the_crawl() -> None:
    assert findings({**SAFE, "maxmemory": "1048576"}) == []


def test_both_problems_make_one_sentence() -> None:
    found = findings({**SAFE, "appendonly": "no", "maxmemory": "100", "maxmemory-policy": "allkeys-lru"})
    assert [f.setting for f in found] == ["appendonly", "maxmemory-policy"]
    assert sentence("redis://db:6379", found) == (
        "Redis at redis://db:6379: appendonly is no and save is empty, so a restart loses the crawl;"
        " maxmemory is 100 bytes with maxmemory-policy allkeys-lru, so the crawl's keys are evicted when"
        " memory runs short; run Redis with appendonly yes (or save) and maxmemory-policy noeviction (or"
        " maxmemory 0)"
    )


def test_info_stands_in_for_config_but_cannot_tell_save() -> None:
    info = {"aof_enabled": 1, "maxmemory": 0, "maxmemory_policy": "allkeys-lru", "rdb_saves": 3}
    assert from_info(info) == {"appendonly": "yes", "maxmemory": "0", "maxmemory-policy": "allkeys-lru"}
    assert findings(from_info(info)) == []
    (found,) = findings(from_info({**info, "aof_enabled": 0}), "CONFIG GET is refused")
    assert found.refuse
    assert found.problem == (
        "appendonly is no and save cannot be read (CONFIG GET is refused), so a restart may lose the crawl"
    )
    (found,) = findings(from_info({**info, "maxmemory": 5000}))
    assert found.refuse and "maxmemory-policy allkeys-lru" in found.problem


def test_nothing_readable_is_refused_on_both_counts() -> None:
    found = findings({}, "CONFIG GET is refused; INFO is refused")
    assert [f.refuse for f in found] == [True, True]
    assert all("cannot be read (CONFIG GET is refused; INFO is refused)" in f.problem for f in found)


def test_an_unreadable_limit_is_taken_as_set() -> None:
    (found,) = findings({**SAFE, "maxmemory": "lots", "maxmemory-policy": "volatile-lru"})
    assert isinstance(found, Finding) and found.refuse
