"""The crawl frontier: every URL once, with its state, kept on disk.

A URL is ``queued``, ``in_flight`` (leased to an owner until an expiry) or ``done`` with an
outcome.  The crawler only speaks the ``Frontier`` protocol (add, lease, done, retry, recover,
park...), so a fleet version on Redis can replace ``SQLiteFrontier`` without touching it.

A fleet adds what several processes need to share one crawl: leases renewed while their fetches
run (``renew``) and taken back from a dead worker once expired (``reclaim``), request slots
booked per authority (``book``/``claim``, so one host is spaced fleet-wide, not per process),
and heartbeats (``heartbeat``/``workers``) for ``manners crawl status``.  ``open_frontier``
picks the implementation: a path is ``SQLiteFrontier`` (one process; these calls work there
too, so the crawler has one code path), a ``redis://`` URL the fleet's ``RedisFrontier``.

This module chooses and names the frontier; what it re-exports lives in modules named for what
they hold: ``leases`` (states, ``Lease``, ``Visit``), ``frontier_errors``, ``frontier_protocol``
(``Frontier``), ``sqlite_frontier`` and ``patient_frontier``.  The implementations import those,
never this module, so ``redis_frontier`` (imported here only when a fleet's frontier is opened:
only a fleet needs redis-py) never imports back.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import overload

from .frontier_errors import CrawlLost, FrontierError
from .frontier_protocol import WORKERS_KEPT, Frontier
from .leases import DONE, IN_FLIGHT, PAGES, QUEUED, Lease, Revisits, Visit
from .patient_frontier import Patient
from .sqlite_frontier import KnownHosts, SQLiteFrontier

__all__ = [
    "DONE",
    "IN_FLIGHT",
    "PAGES",
    "QUEUED",
    "SHARED_SCHEMES",
    "WORKERS_KEPT",
    "CrawlLost",
    "Frontier",
    "FrontierError",
    "KnownHosts",
    "Lease",
    "Patient",
    "Revisits",
    "SQLiteFrontier",
    "Visit",
    "is_shared",
    "open_frontier",
    "shown",
]

SHARED_SCHEMES = ("redis://", "rediss://", "redis-cluster://", "rediss-cluster://")  # a fleet's frontier


def is_shared(spec: Path | str | None) -> bool:
    """Whether ``spec`` names a fleet's frontier (Redis), not one process's SQLite file."""
    return isinstance(spec, str) and spec.lower().startswith(SHARED_SCHEMES)


def shown(spec: Path | str) -> str:
    """``spec`` as a sentence may show it: a Redis URL's password is no one's business."""
    return re.sub(r"^([a-z-]+://[^/@:]*):[^/@]*@", r"\1:***@", str(spec), flags=re.IGNORECASE)


@overload
def open_frontier(spec: Path, max_queued: int | None = None, name: str | None = None) -> SQLiteFrontier: ...


@overload
def open_frontier(spec: str, max_queued: int | None = None, name: str | None = None) -> Frontier: ...


def open_frontier(spec: Path | str, max_queued: int | None = None, name: str | None = None) -> Frontier:
    """The frontier of a crawl.

    A path (or a string with no scheme) is a SQLite file, or a directory holding
    ``frontier.sqlite3``; ``redis://``, ``rediss://`` and ``redis-cluster://`` URLs name a Redis
    holding many crawls, so they need the crawl's ``name``.  FrontierError (one sentence)
    when it cannot be used."""
    if isinstance(spec, str) and "://" in spec:
        if not is_shared(spec):
            scheme = spec.split("://", 1)[0]
            raise FrontierError(
                f"a frontier is a SQLite file or a redis://, rediss:// or redis-cluster:// URL, not {scheme}://"
            )
        if not name:
            raise FrontierError("a Redis frontier holds many crawls: name this one (--name CRAWL)")
        from .redis_frontier import open_redis_frontier  # only a fleet needs redis-py

        return open_redis_frontier(spec, name, max_queued)
    path = Path(spec)
    if path.is_dir():
        path = path / "frontier.sqlite3"
    return SQLiteFrontier(path, max_queued=max_queued)
