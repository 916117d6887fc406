"""``durability(url)``: what the settings of a Redis say of keeping a crawl, read from the server.

``redis_settings`` judges settings (pure); this module reads them (``CONFIG GET``, or ``INFO``
where CONFIG is refused) from a Redis or every master of a cluster.  Kept apart from
``redis_frontier`` because ``manners crawl`` asks it before any frontier is opened, and it needs
only a client (``redis_client``); ``redis_frontier`` re-exports it, so API users still call
``manners.crawl.redis_frontier.durability``.
"""

from __future__ import annotations

from typing import Any

from ..terminal import safe
from .redis_client import connect, failures
from .redis_settings import NAMES, Finding, findings, from_info


def durability(url: str, timeout: float = 5.0) -> tuple[str, list[Finding]]:
    """Where (for messages) and what the settings of the Redis at ``url`` (every master of a
    cluster) say of keeping a crawl (``redis_settings.findings``): read by ``CONFIG GET``, or by
    ``INFO persistence`` and ``INFO memory`` where CONFIG is refused (an ACL, a renamed command).
    FrontierError when it cannot be reached."""
    where, cluster, aio, sync = connect(url, timeout)
    del aio  # never connected: nothing to close
    try:
        if not cluster:
            return where, _judge(where, sync)
        masters = sync.get_primaries()
        found: dict[Finding, list[str]] = {}
        for node in masters:
            for finding in _judge(where, node.redis_connection):
                found.setdefault(finding, []).append(f"{node.host}:{node.port}")
        return where, [_on_nodes(f, names, len(masters)) for f, names in found.items()]
    finally:
        sync.close()


def _judge(where: str, client: Any) -> list[Finding]:
    """The findings of one server."""
    import redis.exceptions

    refused: list[str] = []
    with failures(where):
        try:
            config = client.config_get(*NAMES)
            return findings({k: str(v) for k, v in config.items() if k in NAMES})
        except redis.exceptions.ResponseError as exc:  # refused (NOPERM), or renamed away
            refused.append(f"CONFIG GET is refused: {safe(str(exc).rstrip('.'))}")
        try:
            info = {**client.info("persistence"), **client.info("memory")}
        except redis.exceptions.ResponseError as exc:
            refused.append(f"INFO is refused: {safe(str(exc).rstrip('.'))}")
            info = {}
    return findings(from_info(info), "; ".join(refused))


def _on_nodes(finding: Finding, names: list[str], nodes: int) -> Finding:
    """A cluster's finding, naming the masters it holds for (all of them: none named)."""
    if len(names) == nodes:
        return finding
    return Finding(finding.setting, f"{finding.problem} (on {', '.join(names)})", finding.fix, finding.refuse)
