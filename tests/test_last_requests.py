"""A killed run's last requests, read from its ledger and pages files (``last_requests``), and the
resumed run's first turns spaced by them: a host waits out a request's deadline only when its
files show a request that may still be out."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from manners.crawl import last_requests
from manners.crawl.last_requests import LATE, still_answering
from manners.crawl.page import Page
from manners.crawl.records import Ledger, PageLog
from manners.crawl.urls import authority

DEADLINE = 10.0


def _ledger_t(path: Path, url: str) -> float:
    """The moment of ``url``'s last line in the ledger file ``path``."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return max(obj["t"] for obj in lines if obj.get("url") == url)


@pytest.mark.parametrize("chunk", [last_requests.CHUNK, 64])  # 64: lines cut between the blocks read
def test_a_host_waits_only_when_its_last_request_may_still_be_out(
    tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(last_requests, "CHUNK", chunk)
    out = tmp_path / "out"
    old = f"gemini://old.example/{'x' * 80}"  # a long line: it spans blocks at 64 bytes
    ledger, pages = Ledger(out / "requests-w.jsonl", "w"), PageLog(out / "pages.jsonl")
    with (out / "requests-w.jsonl").open("a") as f:  # past the deadline: nothing out
        f.write(
            json.dumps({"t": time.time() - 100, "authority": authority(old), "url": old, "kind": "page"})
            + "\n"
        )
    ledger.note("gemini://a.example/1", "page", "t1", 0.2, None)
    ledger.note("gemini://d.example/1", "page", "t4", 0.2, None)
    ledger.rotate()  # the series goes on in requests-w.00001.jsonl: read across both
    ledger.note("gemini://b.example/1", "page", "t2", 0.2, None)  # no answer on record
    ledger.note("gemini://c.example/robots.txt", "robots", None, 0.2, None)  # robots.txt: none ever is
    ledger.robots_copy(
        "gemini://e.example/robots.txt", authority("gemini://e.example/"), time.time(), time.time()
    )
    ledger.event("gemini://f.example/1", "lease-lost", "t6", "gone")  # no request either
    a_answer = time.time()
    pages.write(Page("gemini://a.example/1", "fetched", 0, a_answer).record())  # answered
    pages.write(Page("gemini://d.example/1", "fetched", 0, a_answer - 30).record())  # an earlier ask's answer
    ledger.note("gemini://a.example/robots.txt", "robots", None, 0.2, None)
    ledger.note("gemini://a.example/2", "page", "t7", 0.2, None)
    pages.write(Page("gemini://a.example/2", "fetched", 0, time.time()).record())
    with (out / "pages.jsonl").open("a") as f:
        f.write('{"url": "gemini://b.example/1", "fetched_')  # torn as the process was killed
    first, rotated = out / "requests-w.jsonl", out / "requests-w.00001.jsonl"
    found = still_answering(out, DEADLINE)

    assert set(found) == {authority(u) for u in ("gemini://a.example/", "gemini://b.example/",
                                                  "gemini://c.example/", "gemini://d.example/")}  # fmt: skip
    a2 = json.loads((out / "pages.jsonl").read_text().splitlines()[2])["fetched_at"]
    assert found[authority("gemini://a.example/")] == pytest.approx(last_requests._moment(a2))
    cases = [("b", "gemini://b.example/1", rotated), ("c", "gemini://c.example/robots.txt", rotated),
             ("d", "gemini://d.example/1", first)]  # fmt: skip
    for host, url, path in cases:
        expected = _ledger_t(path, url) + DEADLINE + LATE
        assert found[authority(f"gemini://{host}.example/")] == pytest.approx(expected), host
    assert still_answering(out, DEADLINE, now=time.time() + DEADLINE + LATE + 1) == {}  # all past it
    assert still_answering(tmp_path / "empty", DEADLINE) is None  # no ledger: the files say nothing


def test_a_resumed_run_waits_only_at_hosts_whose_request_may_still_be_out(tmp_path: Path) -> None:
    """A killed run had URLs leased at three hosts: one whose request left (its ledger line, no
    answer), one whose answer came (its page recorded, its settling not committed) and one whose
    turn never came.  The resumed run gives only the first a request's deadline: at 4,400 hosts
    the others were 1,485, and the biggest host, answered, lost 10.7 s (``--timeout``)."""
    from manners.crawl import Crawler

    out, urls = (
        tmp_path / "out",
        ["gemini://out.example/p", "gemini://read.example/p", "gemini://idle.example/p"],
    )
    hosts = [authority(u) for u in urls]

    async def killed() -> None:
        async with Crawler("testbot", (), out, cache="memory") as crawler:
            for url in urls:
                await crawler.frontier.add(url, 0)
            for host in hosts:
                assert await crawler.frontier.lease(host, "killed", 600.0) is not None  # not this run's
            crawler.ledger.note(urls[0], "page", "t", 0.2, None)
            crawler.ledger.note(urls[1], "page", "t", 0.2, None)
            crawler.pages.write(Page(urls[1], "fetched", 0, time.time()).record())

    async def resumed() -> list[float]:
        async with Crawler("testbot", (), out, cache="memory", timeout=DEADLINE) as crawler:
            return [await crawler.frontier.claim(host, 1.0) for host in hosts]

    asyncio.run(killed())
    out_wait, read_wait, idle_wait = asyncio.run(resumed())
    assert out_wait > DEADLINE  # its deadline and the margin, from when it left
    assert 0.5 < read_wait <= 1.0  # its spacing after the answer
    assert idle_wait == 0.0  # nothing out: at once
