"""Requests in flight: what ``--concurrency`` counts, and the file descriptors they need.

A polite crawl is bound by its biggest hosts, each asked one request at a time, a delay apart:
it meets that bound only if every host with work has a task from the start and none waits
behind another's delay.  So the crawler works every ready host at once (``hosts_at_once``) and
counts as its concurrency only the requests on the wire: a host waiting for its turn holds no
connection and no share of it.  Apart from the run (``worker``) because the same gate covers
robots.txt fetches (``crawler``), and because how many sockets a process may open is the
operating system's to say, not the run's.
"""

from __future__ import annotations

import logging

log = logging.getLogger("manners.crawl")

HOSTS_AT_ONCE = 10_000  # one process: hosts worked at once (a task and one lease each, a few KB)
FLEET_HOSTS_PER_REQUEST = 8  # a fleet's worker: hosts at once per request in flight, so the others get some
SPARE_FILES = 64  # descriptors besides the requests' sockets: the frontier, WARC, pages, ledger, logs


def hosts_at_once(concurrency: int, shared: bool) -> int:
    """How many hosts one worker works at once: every ready one in one process; on a fleet, what
    its ``concurrency`` can keep busy, so a worker that starts first leaves hosts to the others."""
    return max(concurrency * FLEET_HOSTS_PER_REQUEST, 64) if shared else HOSTS_AT_ONCE


def fit_descriptors(concurrency: int) -> int:
    """The requests in flight this process can open sockets for: ``concurrency``, the soft
    RLIMIT_NOFILE raised towards its hard limit when it is too low for them; fewer, with a
    sentence, when even the hard limit is."""
    try:
        import resource
    except ImportError:  # not on this system: its own limits apply
        return concurrency
    need = concurrency + SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return concurrency
    target = need if hard == resource.RLIM_INFINITY else min(need, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    if soft >= need:
        return concurrency
    fits = max(1, soft - SPARE_FILES)
    log.warning("--concurrency %d needs %d file descriptors, but this process may open %d (ulimit -n):"
                " %d requests at once", concurrency, need, soft, fits)  # fmt: skip
    return fits
