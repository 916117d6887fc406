"""Whether a Redis server's settings can lose a crawl: the verdict, with no IO.

A fleet's crawl lives in Redis only.  A Redis that keeps nothing across a restart (no append-only
file, no snapshots) comes back empty, and the workers would find "nothing queued" and end the crawl
as done; one with ``maxmemory`` and an evicting policy drops keys under pressure (a seen-set, a
queue, a request slot), and URLs are crawled twice or never.  So the settings are read before a
worker starts (``redis_durability.durability`` does the IO: ``CONFIG GET``, or ``INFO`` where
``CONFIG`` is refused) and judged here, each finding naming the setting and what to run instead.

Settings are a mapping of ``CONFIG GET`` names (``appendonly``, ``save``, ``maxmemory``,
``maxmemory-policy``) to their values; a name that could not be read is absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

NAMES = ("appendonly", "save", "maxmemory", "maxmemory-policy")


@dataclass(frozen=True)
class Finding:
    """What a setting means for the crawl: ``problem`` (it names the setting and the loss), ``fix``
    (the setting to run Redis with), and whether a worker refuses to start on it (``refuse``) or
    only warns."""

    setting: str
    problem: str
    fix: str
    refuse: bool = True


def from_info(info: Mapping[str, object]) -> dict[str, str]:
    """``INFO persistence`` and ``INFO memory`` fields as settings: ``appendonly`` from
    ``aof_enabled``, ``maxmemory`` and ``maxmemory-policy``.  INFO does not show ``save``, so it is
    left out (unknown)."""
    settings: dict[str, str] = {}
    if "aof_enabled" in info:
        settings["appendonly"] = "yes" if str(info["aof_enabled"]) == "1" else "no"
    if "maxmemory" in info:
        settings["maxmemory"] = str(info["maxmemory"])
    if "maxmemory_policy" in info:
        settings["maxmemory-policy"] = str(info["maxmemory_policy"])
    return settings


def findings(settings: Mapping[str, str], refused: str = "") -> list[Finding]:
    """What in ``settings`` can lose the crawl (refused) or part of it (a warning); ``refused`` says
    why settings are missing (``CONFIG GET is refused``), for the findings that rest on them."""
    why = f" ({refused})" if refused else ""
    return [
        *_persistence(settings.get("appendonly"), settings.get("save"), why),
        *_eviction(settings.get("maxmemory"), settings.get("maxmemory-policy"), why),
    ]


def _persistence(aof: str | None, save: str | None, why: str) -> list[Finding]:
    """A restart loses everything without an append-only file or snapshots; with snapshots only,
    a crash loses what came after the last one (the crawl goes on, and fetches those pages again)."""
    if aof is None and save is None:
        problem = (
            f"its persistence settings cannot be read{why}, so whether a restart loses the crawl is unknown"
        )
        return [Finding("appendonly", problem, "appendonly yes (and CONFIG GET allowed to this user)")]
    if aof == "yes":
        return []
    if save is None:
        problem = f"appendonly is no and save cannot be read{why}, so a restart may lose the crawl"
        return [Finding("save", problem, "appendonly yes")]
    if not save.strip():
        problem = "appendonly is no and save is empty, so a restart loses the crawl"
        return [Finding("appendonly", problem, "appendonly yes (or save)")]
    problem = (
        f"appendonly is no, so a crash loses what changed since the last snapshot (save {save})"
        " and those pages are fetched again"
    )
    return [Finding("appendonly", problem, "appendonly yes", refuse=False)]


def _eviction(memory: str | None, policy: str | None, why: str) -> list[Finding]:
    """Without a memory limit nothing is evicted, whatever the policy; with one, only
    ``noeviction`` keeps every key (``allkeys-*`` evict any, ``volatile-*`` the request slots)."""
    if memory is not None and _bytes(memory) == 0:
        return []
    if memory is None or policy is None:
        problem = (
            f"its eviction settings cannot be read{why}, so whether it evicts the crawl's keys is unknown"
        )
        return [Finding("maxmemory-policy", problem, "maxmemory-policy noeviction")]
    if policy == "noeviction":
        return []
    problem = (
        f"maxmemory is {memory} bytes with maxmemory-policy {policy}, so the crawl's keys are evicted"
        " when memory runs short"
    )
    return [Finding("maxmemory-policy", problem, "maxmemory-policy noeviction (or maxmemory 0)")]


def _bytes(value: str) -> int | None:
    """``maxmemory`` as CONFIG GET gives it (bytes); None when it is not a number (then it is
    taken as set: a limit that cannot be read is no proof there is none)."""
    try:
        return int(value)
    except ValueError:
        return None


def sentence(where: str, found: list[Finding]) -> str:
    """One sentence for ``found`` at ``where``: the problems, then the settings that fix them
    (the caller adds how to accept the risk)."""
    problems = "; ".join(f.problem for f in found)
    fixes = " and ".join(dict.fromkeys(f.fix for f in found))
    return f"Redis at {where}: {problems}; run Redis with {fixes}"
