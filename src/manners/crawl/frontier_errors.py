"""How a frontier fails: ``FrontierError`` (one sentence), ``CrawlLost``, and failures left unread.

Kept apart from ``frontier.py`` because each frontier raises these and the crawler, ``totals`` and
``manners crawl audit`` catch them: importing them from here, neither implementation imports the
other, nor the module that chooses between them.
"""

from __future__ import annotations

import asyncio
from typing import Any


class FrontierError(Exception):
    """The frontier cannot be used.  ``lasting``: calling again will not mend it (Redis refused
    this user a command, or its password), so a fleet's worker stops at once instead of waiting
    it out as it waits out an outage."""

    def __init__(self, message: str, *, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting


class CrawlLost(FrontierError):
    """The crawl's data is gone from its frontier (a Redis restarted without it, keys evicted):
    waiting cannot bring it back, so the worker stops, and never says the crawl is done."""


def retrieved(done: asyncio.Future[Any]) -> None:
    """A change's failure is its caller's to handle; a caller that has moved on (a crawl ending on
    that very failure) leaves it unread, which is no reason for asyncio to print it."""
    if not done.cancelled():
        done.exception()
