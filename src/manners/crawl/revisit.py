"""When a revisiting crawl (``manners crawl --revisit``) asks for a URL again: the schedule, sans IO.

A page that keeps its content is asked for less and less often (the interval doubles, up to a
maximum) and one that changes is watched closely again (back to the minimum): a server is not
asked every day for a page that has not moved in a year, and a busy page is not missed for a
month.  Whatever the schedule says, a server's ``Check:`` interval and the crawl's
``--min-delay`` are floors: the robot never asks sooner than the site allows.

A page that has gone (Gemini 51, a Gopher error for a selector that used to be there) may be
away for a while only: it is asked again after the maximum, and settled as gone after
:data:`GONE_AFTER` such answers in a row, so a dead URL stops costing the server requests.

Intervals are in seconds; :func:`parse_interval` reads the ``--revisit-min``/``--revisit-max``
form (``90``, ``30s``, ``5m``, ``2h``, ``1d``).
"""

from __future__ import annotations

import math
import re

MINUTE = 60.0
HOUR = 60 * MINUTE
DAY = 24 * HOUR

REVISIT_MIN = DAY
"""``--revisit-min``'s default: a page is first asked again a day after its first visit."""
REVISIT_MAX = 30 * DAY
"""``--revisit-max``'s default: however still a page, it is asked again within a month."""
GONE_AFTER = 3
"""Answers in a row that say a URL has gone (51, a Gopher error) before it is settled as gone."""

UNITS = {"s": 1.0, "m": MINUTE, "h": HOUR, "d": DAY}
_INTERVAL = re.compile(r"(?P<number>\d+(?:\.\d*)?|\.\d+)(?P<unit>[smhd]?)", re.ASCII)


def parse_interval(text: str) -> float:
    """Seconds in ``text``: a number of seconds, or a number followed by ``s``, ``m``, ``h`` or ``d``.

    ValueError, with one sentence to show as is, for anything else, and for 0 or an interval
    too long to be a time (an interval of 0 would ask a server for the same page without end).
    """
    match = _INTERVAL.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not an interval (seconds, or a number with s, m, h or d: 90, 5m, 1d)")
    seconds = float(match["number"]) * UNITS[match["unit"] or "s"]
    if not math.isfinite(seconds) or seconds > 1e12:
        raise ValueError(f"{text!r} is longer than any crawl will run")
    if seconds <= 0:
        raise ValueError(f"give an interval longer than 0 seconds, not {text!r}")
    return seconds


def next_interval(
    last: float | None,
    changed: bool,
    check: float | None,
    revisit_min: float = REVISIT_MIN,
    revisit_max: float = REVISIT_MAX,
    min_delay: float = 0.0,
) -> float:
    """Seconds from a URL's request until it is due again, after a visit that found a page.

    ``last``: the interval that led to this visit (None after the first visit); ``changed``:
    whether the payload differs from the last visit's (a first visit has changed).  The schedule
    doubles ``last`` while the page stays the same, kept between ``revisit_min`` and
    ``revisit_max`` (so a resumed crawl with other bounds moves into them), and goes back to
    ``revisit_min`` on a change.  The result is never shorter than ``check`` (the ``Check:``
    interval the host's groups give the crawler) nor than ``min_delay``.
    """
    check_bounds(revisit_min, revisit_max)
    scheduled = revisit_min if last is None or changed else min(max(2 * last, revisit_min), revisit_max)
    return _floored(scheduled, check, min_delay)


def after_missing(
    misses: int,
    check: float | None,
    revisit_max: float = REVISIT_MAX,
    min_delay: float = 0.0,
) -> float | None:
    """Seconds until a URL that answered "gone" is due again, or None once it is settled as gone.

    ``misses``: such answers in a row, this one included (1 the first time).  A URL that has gone
    for a while only is found again after ``revisit_max``; after :data:`GONE_AFTER` in a row it
    is not revisited.  The same floors as :func:`next_interval` hold.
    """
    if misses < 1:
        raise ValueError(f"misses counts this answer too: 1 or more, not {misses}")
    if misses >= GONE_AFTER:
        return None
    return _floored(revisit_max, check, min_delay)


def _floored(seconds: float, check: float | None, min_delay: float) -> float:
    return max(seconds, check or 0.0, min_delay)


def check_bounds(revisit_min: float, revisit_max: float) -> None:
    """ValueError, in one sentence, unless 0 < ``revisit_min`` <= ``revisit_max``."""
    if not 0 < revisit_min <= revisit_max:
        raise ValueError(f"the revisit interval must go from more than 0 up to its maximum, not "
                         f"{revisit_min:g}s to {revisit_max:g}s")  # fmt: skip
