"""One process claims a host's slot a little before it comes (``cache.CLAIM_AHEAD``), so that a
claim answered late by a busy event loop does not make the request late; and it still sends
no sooner than the slot, nor sooner than the spacing after a start it did not reckon with (a
robots.txt refresh beside the host's page task).  On the crawl's own SQLite frontier, whose
claims are made to answer late, as a busy loop answers them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from manners.cache import claim_margin, take_slot
from manners.crawl.frontier import open_frontier

pytestmark = pytest.mark.serial  # asserts how long things take: one worker

A = "gemini://a.example:1965"
SPACING = 0.2
SLOT = SPACING + claim_margin(SPACING)
ANSWER = 0.015  # seconds the event loop takes to give a claim's answer back
CLOCK = 0.002  # clock granularity between the test's clock and the frontier's


class LateAnswers:
    """The crawl's SQLite frontier, each claim's answer given back ``ANSWER`` late."""

    def __init__(self, path: Path) -> None:
        self.frontier = open_frontier(path)

    async def book(self, key: str, spacing: float, wait: float = 0.0) -> float:
        return await self.frontier.book(key, spacing, wait)

    async def claim(self, key: str, spacing: float, *args: Any) -> float:
        granted = await self.frontier.claim(key, spacing, *args)
        await asyncio.sleep(ANSWER)
        return granted


def _sent(tmp_path: Path, reckoned_ago: float) -> tuple[float, float]:
    """A start stamped now; then a turn taken as one process takes it, reckoning the last start
    ``reckoned_ago`` seconds earlier than that stamp: (seconds from the stamp to the turn's
    return, the same on the wall clock the frontier keeps)."""

    async def main() -> tuple[float, float]:
        slots = LateAnswers(tmp_path / "frontier.sqlite3")
        try:
            assert await slots.frontier.claim(A, 0.0) == 0.0  # the last start, stamped as it left
            stamped, wall = time.monotonic(), time.time()
            await take_slot(slots, A, SPACING, SLOT - reckoned_ago, book=False)
            return time.monotonic() - stamped, time.time() - wall
        finally:
            await slots.frontier.close()

    return asyncio.run(main())


def test_a_claim_answered_late_does_not_make_the_request_late(tmp_path: Path) -> None:
    took, _ = _sent(tmp_path, 0.0)
    assert took >= SLOT - CLOCK  # never before the slot
    assert took < SLOT + ANSWER / 2  # claimed ahead: the late answer came within the slot


def test_a_start_the_process_did_not_reckon_with_still_spaces_the_request(tmp_path: Path) -> None:
    # the process thinks the last request left 0.1 s before the stamp the frontier holds
    _, wall = _sent(tmp_path, 0.1)
    assert wall >= SLOT - CLOCK
