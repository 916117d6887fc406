"""What a frontier hands out and is told back: a URL's states, its lease, how a revisit settles it.

Kept apart from ``frontier.py`` because every frontier (``sqlite_frontier``, ``redis_frontier``),
the wrapper that waits out an outage (``patient_frontier``) and the crawler all speak in these
values: each imports them from here, so no implementation imports another, nor the module that
chooses between them (``frontier.open_frontier``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

QUEUED = "queued"
IN_FLIGHT = "in_flight"
DONE = "done"
PAGES = "pages"  # in ``outcomes``: URLs for which a page was requested (robots.txt and caps.txt not)


@dataclass(frozen=True)
class Lease:
    url: str
    depth: int
    attempts: int
    parent: str | None
    redirects: int
    # One lease's own id, new each time the URL is leased: the ledger names it, so a request made
    # under an expired lease and the same URL's next lease tell apart.  Not part of equality.
    token: str = field(default="", compare=False)
    # A revisiting crawl's memory of the URL (``Visit``): times settled so far (0: never), the
    # interval that led to this visit, the payload digest and capture time of the last response
    # kept in full, and "gone" answers in a row.
    visits: int = 0
    interval: float | None = None
    digest: str | None = None
    capture_at: float | None = None
    misses: int = 0
    # URLs of its authority still queued once it was leased, where the frontier says (else 0):
    # the work a host is known to have left, which ranks its requests while the CPU is short
    # (``inflight.Gate``).  Not part of equality.
    queued: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Visit:
    """How a revisiting crawl settles a leased URL: back in the queue, due at ``due``, or for good.

    Given to ``Frontier.done`` so that the settling and the re-queueing are one atomic step: a
    kill cannot leave a URL settled and never due again, nor due twice."""

    number: int  # times the URL has been settled, this one included (1: its first visit)
    due: float | None  # when it may be leased again (epoch seconds); None: settled for good
    interval: float | None = None  # the interval that gave ``due`` (doubled while unchanged)
    digest: str | None = None  # the payload digest of the last response (``warc.digest``)
    capture_at: float | None = None  # when the response kept in full with that payload was fetched
    misses: int = 0  # "gone" answers in a row (51, a Gopher error for a selector that was there)
    changed: bool | None = None  # None: no response to compare (disallowed, an error)
    token: str = ""  # the lease settled (``Lease.token``): a fleet settles only the lease it names


@dataclass(frozen=True)
class Revisits:
    """What a revisiting crawl has coming: URLs visited before and due now, and the next due time."""

    due_now: int
    next_due: float | None
