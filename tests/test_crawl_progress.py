"""What a person sees of a crawl of thousands of hosts: the live display stays one screen (the
busiest hosts by URLs queued, the waiting ones capped), the frontier is asked in a task at most
every so often and never waited for, the plain lines name the top three, and ``manners crawl
status`` gives the ten busiest.  In this process, against a real SQLite frontier.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

from manners.crawl import Crawler
from manners.crawl.frontier import Frontier, SQLiteFrontier
from manners.crawl.progress import RECENT, Progress, crawl_status, status_lines

AGENT = "testbot"
HOSTS = 3000


def shown(progress: Progress) -> str:
    """The live display as a terminal 200 columns wide would show it."""
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(progress.render())
    return out.getvalue()


async def many_hosts(path: Path) -> tuple[SQLiteFrontier, list[tuple[str, int]]]:
    """A frontier of 3,000 hosts with 1 to 3 URLs queued each, and five big ones: (name, queued)
    of the biggest, most first."""
    f = SQLiteFrontier(path)
    await f.add_many([f"gemini://h{i}.example/{j}" for i in range(HOSTS) for j in range(1 + i % 3)], 0)
    big = [(f"gemini://big{k}.example:1965", 50 - 5 * k) for k in range(5)]
    for auth, n in big:
        await f.add_many([f"{auth}/{j}" for j in range(n)], 0)
    return f, big


@pytest.mark.quick
def test_the_live_display_of_3000_hosts_is_one_screen_naming_the_biggest(tmp_path: Path) -> None:
    crawler = Crawler(AGENT, ("gemini://capsule.example/",), tmp_path)
    stats = crawler.stats
    stats.waiting.update({f"gemini://h{i}.example:1965": "its turn" for i in range(HOSTS)})
    stats.parked.update({f"gemini://p{i}.example:1965": "44 slow down" for i in range(HOSTS)})

    async def main() -> str:
        f, _ = await many_hosts(tmp_path / "f.sqlite3")
        progress = Progress(crawler, io.StringIO(), live=False, frontier=f)
        progress.tick()  # asks, in a task
        assert progress._asking is not None
        await progress._asking
        text = shown(progress)
        progress.close()
        await f.close()
        return text

    text = asyncio.run(main())
    lines = text.splitlines()
    assert len(lines) <= 12 + 3 * (RECENT + 1), text  # figures, busiest, waiting (capped): one screen
    assert "busiest hosts:" in text
    assert "gemini://big0.example:1965  50 queued" in text and "gemini://big4.example:1965  30 queued" in text
    busiest = [line.strip() for line in lines if line.strip().endswith(" queued")]
    assert busiest[0] == "gemini://big0.example:1965  50 queued" and len(busiest) == RECENT
    assert f"... and {2 * HOSTS - RECENT} more" in text


class Slow:
    """A frontier whose ``busiest`` answers only when told: how often it was asked."""

    def __init__(self, answer: list[tuple[str, int]]) -> None:
        self.answer, self.asked, self.go = answer, 0, asyncio.Event()

    async def busiest(self, n: int) -> list[tuple[str, int]]:
        self.asked += 1
        await self.go.wait()
        return self.answer[:n]


@pytest.mark.quick
def test_the_frontier_is_asked_in_a_task_at_most_every_so_often_and_never_waited_for(tmp_path: Path) -> None:
    crawler = Crawler(AGENT, ("gemini://capsule.example/",), tmp_path)

    async def main() -> None:
        slow = Slow([("gemini://a.example:1965", 9), ("gemini://b\x1b]0;owned\x07.example:1965", 4)])
        progress = Progress(crawler, io.StringIO(), live=False, frontier=cast(Frontier, slow))
        progress.every = 0.0
        for _ in range(5):  # the first question unanswered: no second one, and no tick waits
            progress.tick()
            await asyncio.sleep(0)
        assert slow.asked == 1 and progress.busiest == []
        slow.go.set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert progress.busiest == slow.answer
        text = shown(progress)
        assert "gemini://a.example:1965  9 queued" in text
        assert "\x1b" not in text and "\x07" not in text  # a host's name cannot drive the terminal
        progress.every = 3600.0
        progress.tick()
        assert slow.asked == 1  # answered, but asked too lately
        progress.every = 0.0
        progress.tick()
        await asyncio.sleep(0)
        assert slow.asked == 2
        progress.close()

    asyncio.run(main())


class Stubborn(Slow):
    """A ``busiest`` that, cancelled, still needs a moment to end (as a Cluster's calls cut off
    halfway do): ``ended`` once it has."""

    ended = False

    async def busiest(self, n: int) -> list[tuple[str, int]]:
        try:
            return await super().busiest(n)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)
            self.ended = True
            raise


@pytest.mark.quick
def test_closing_the_display_waits_for_the_question_still_out(tmp_path: Path) -> None:
    """The crawl ends while the frontier is still being asked: aclose ends that question before it
    returns, so no frontier call is left for the closing event loop to cut off (on a Cluster
    with a master gone, each such call ended in a traceback as the process exited)."""
    crawler = Crawler(AGENT, ("gemini://capsule.example/",), tmp_path)

    async def main() -> None:
        stubborn = Stubborn([])
        progress = Progress(crawler, io.StringIO(), live=False, frontier=cast(Frontier, stubborn))
        progress.every = 0.0
        progress.tick()
        await asyncio.sleep(0)
        assert stubborn.asked == 1
        await progress.aclose()
        assert stubborn.ended
        assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    asyncio.run(main())


@pytest.mark.quick
def test_the_plain_lines_name_the_three_busiest(tmp_path: Path) -> None:
    crawler = Crawler(AGENT, ("gemini://capsule.example/",), tmp_path)

    async def main() -> str:
        f, _ = await many_hosts(tmp_path / "f.sqlite3")
        out = io.StringIO()
        progress = Progress(crawler, out, live=False, frontier=f)
        progress.tick()  # the first line, and the first question
        assert progress._asking is not None
        await progress._asking
        progress._last_plain = 0.0  # the next line is due
        progress.tick()
        progress.tick()  # not due: nothing more printed
        progress.close()
        await f.close()
        return out.getvalue()

    lines = asyncio.run(main()).splitlines()
    assert len(lines) == 2 and "busiest" not in lines[0]
    assert lines[1].startswith("manners crawl: fetched 0")
    assert lines[1].endswith(", busiest: gemini://big0.example:1965 (50), gemini://big1.example:1965 (45),"
                             " gemini://big2.example:1965 (40)")  # fmt: skip


@pytest.mark.quick
def test_status_gives_the_ten_busiest_hosts(tmp_path: Path) -> None:
    async def main() -> dict[str, Any]:
        f, _ = await many_hosts(tmp_path / "f.sqlite3")
        status = await crawl_status(f, str(tmp_path / "f.sqlite3"), None)
        await f.close()
        return status

    status = asyncio.run(main())
    busiest = status["busiest"]
    assert len(busiest) == 10
    assert busiest[:5] == [{"host": f"gemini://big{k}.example:1965", "queued": 50 - 5 * k} for k in range(5)]
    assert all(b["queued"] == 3 for b in busiest[5:])  # then hosts of 3 URLs, the most there is
    text = status_lines(status)
    at = text.index("busiest hosts (URLs queued):")
    assert text[at + 1] == "  gemini://big0.example:1965  50 queued" and len(text[at + 1 : at + 11]) == 10
