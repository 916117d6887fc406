"""A revisiting crawl's visits: what it learns of a URL while handling it, and when it asks again.

Pure, over a lease, the page settled and what the worker noted meanwhile (``Visiting``): the
schedule itself is ``revisit``'s, this module applies it to one settled page (a page, a refusal,
an answer that says the URL has gone) so the worker only passes the result to the frontier.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..robot import RobotDecision
from .frontier import Lease, Visit
from .page import Page
from .revisit import after_missing, next_interval


@dataclass
class Visiting:
    """What a revisiting crawl learns of a leased URL while handling it, for its settling."""

    started: float | None = None  # when its request left: the next interval counts from it
    check: float | None = None  # the Check: interval the host's robots.txt gives this robot
    capture: tuple[str, float, bool] | None = None  # a response: its digest, capture time, changed
    gone: bool = False  # the answer says the URL has gone (51, a Gopher error)


def next_visit(lease: Lease, page: Page, visiting: Visiting, now: float, min_delay: float,
               revisit_min: float, revisit_max: float) -> Visit:  # fmt: skip
    """When a revisiting crawl asks for ``page``'s URL again (``due``; None: never), and what it keeps.

    - a page (a 30 redirect included): after ``next_interval``, counted from its request;
    - an answer that says it has gone (51, a Gopher error), for a URL visited before: after
      the maximum, and never again after ``GONE_AFTER`` such answers in a row;
    - disallowed: once the robots.txt in force has expired, so a file that relents is seen;
    - another error on a revisit: after the same interval again (a server away for a while
      keeps its pages' schedules);
    - a first visit's error or refusal, a 31, a 52: never (a 31's target is queued anew)."""
    started = visiting.started if visiting.started is not None else now
    digest_, capture_at, changed = (
        (lease.digest, lease.capture_at, None) if visiting.capture is None else visiting.capture
    )
    interval, misses, due = lease.interval, lease.misses, None
    floor = max(visiting.check or 0.0, min_delay)
    if page.outcome == "disallowed":
        expires = page.decision.expires_at if page.decision is not None else 0.0
        due = max(expires, now + min_delay)
        digest_ = refusal(page.decision)  # remembered in the digest's place: see same_refusal
    elif (page.status == 51 or visiting.gone) and lease.visits > 0:
        misses += 1
        wait = after_missing(misses, visiting.check, revisit_max, min_delay)
        due = None if wait is None else started + wait
    elif page.outcome == "fetched" or (page.outcome == "redirect" and not page.permanent):
        misses = 0
        interval = next_interval(lease.interval, changed is not False, visiting.check, revisit_min,
                                 revisit_max, min_delay)  # fmt: skip
        due = started + interval
    elif lease.visits > 0 and page.status != 52 and not page.permanent:
        due = started + max(interval or revisit_min, floor)
    return Visit(lease.visits + 1, due, interval, digest_, capture_at, misses, changed, lease.token)


def refusal(decision: RobotDecision | None) -> str:
    """What a revisiting crawl remembers of a refusal, in the place of a payload digest: the
    robots.txt and its line that refused.  The same mark next time is the same decision."""
    said = f"{decision.robots_url}\n{decision.line}\n{decision.rule}" if decision is not None else ""
    return "refused:" + hashlib.sha256(said.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def same_refusal(lease: Lease, page: Page) -> bool:
    """Whether ``page`` is a refusal of a URL visited before, by the line that refused it last time
    (its lease's digest is that refusal's mark, ``refusal``)."""
    return page.outcome == "disallowed" and lease.visits > 0 and lease.digest == refusal(page.decision)
