"""The crawler against real servers on loopback: gophernicus, pygopherd and jetforce serving the
generated small-net site (tests/smallnet_site.py), each behind a logging proxy, and fault servers.

What was requested is read from the servers' side (the proxies' connection logs, jetforce's
access log) and compared with the site's ground truth, never with what the crawler says it did.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

import smallnet_site as sn
from manners.cli import main
from manners.crawl import Crawler
from manners.crawl.client import gemini_get, gopher_get
from proxy import fault_server

AGENT = "testbot"
DELAY = 0.3  # --min-delay: seconds between two requests to one host
ROBOTS_SELECTORS = {"robots.txt", "/robots.txt", "0/robots.txt"}
SLACK = 0.02  # seconds: timer granularity between the crawler's clock and the proxy's


def records(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]


def page_selectors(proxy: sn.LoggingProxy) -> list[str]:
    return [s for s in proxy.selectors() if s not in ROBOTS_SELECTORS | {"caps.txt"}]


def gemini_pages(run: sn.Running) -> list[str]:
    return [u for u in run.jetforce.urls() if not u.endswith("/robots.txt")]


def warc_responses(out: Path) -> Counter[str]:
    found: Counter[str] = Counter()
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "response":
                    found[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return found


def spacing_ok(times: list[float], delay: float) -> list[float]:
    """The gaps shorter than ``delay`` between consecutive requests (empty: polite)."""
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return [g for g in gaps if g < delay - SLACK]


@pytest.mark.parametrize("roles", [sn.ARCHIVER, sn.INDEXER], ids=["archiver", "indexer"])
def test_crawl_requests_exactly_the_ground_truth(tmp_path: Path, roles: tuple[str, ...]) -> None:
    with sn.running(tmp_path / "site") as run:
        site = run.site
        seeds = [site.gemini_url, site.gophernicus_url, site.pygopherd_url]
        expect = site.expect(seeds, roles, AGENT)
        out = tmp_path / "out"

        async def crawl() -> list[str]:
            async with Crawler(AGENT, roles, out, min_delay=DELAY, cache=f"sqlite://{tmp_path}/robots.db",
                               timeout=10) as crawler:  # fmt: skip
                return [page.url async for page in crawler.crawl(seeds)]

        settled = asyncio.run(crawl())

        # exactly the expected selectors and URLs, each once (the 44 URL twice)
        for proxy, seed in ((run.gophernicus, site.gophernicus_url), (run.pygopherd, site.pygopherd_url)):
            assert sorted(page_selectors(proxy)) == expect.selectors[sn.authority(seed)]
        assert sorted(gemini_pages(run)) == sorted(u for v in expect.gemini_requests.values() for u in v)

        # nothing disallowed was requested; each is recorded with its line and rule
        requested = set(gemini_pages(run))
        assert not requested & expect.disallowed
        got = {str(r["url"]): r for r in records(out) if r["outcome"] == "disallowed"}
        assert set(got) == set(expect.disallowed)
        for url, decision in expect.decisions.items():
            assert (got[url]["line"], got[url]["rule"]) == (decision.line, decision.rule)
        for proxy, seed in ((run.gophernicus, site.gophernicus_url), (run.pygopherd, site.pygopherd_url)):
            refused = {
                sn.gopher_selector(u) for u in expect.disallowed if sn.authority(u) == sn.authority(seed)
            }
            assert refused and not refused & set(page_selectors(proxy))

        # every settled URL once in pages.jsonl, every stored one in the WARC
        assert len(settled) == len(set(settled))
        fetched = {str(r["url"]) for r in records(out) if r["outcome"] == "fetched"}
        assert expect.fetched <= fetched | {u for u in expect.fetched if "caps.txt" in u}
        responses = warc_responses(out)
        assert fetched <= set(responses)

        # one request at a time per host, never closer than its delay
        for proxy in (run.gophernicus, run.pygopherd, run.gemini):
            pages = [c.opened_monotonic for c in proxy.snapshot() if c.selector not in ROBOTS_SELECTORS]
            shown = [(c.selector, round(c.opened_monotonic, 3)) for c in proxy.snapshot()]
            assert spacing_ok(pages, DELAY) == [], shown

        # after "44 5" the capsule saw nothing for 5 s
        slow = [a for a in run.jetforce.accesses() if a.status == 44]
        assert len(slow) == 1 and slow[0].meta == "5"
        later = [c.opened for c in run.gemini.snapshot() if c.opened > slow[0].time]
        assert later and min(later) >= slow[0].time + 5 - SLACK


def test_sigkill_then_resume_fetches_each_page_once(tmp_path: Path) -> None:
    with sn.running(tmp_path / "site") as run:
        site = run.site
        seeds = [site.gemini_url, site.gophernicus_url, site.pygopherd_url]
        expect = site.expect(seeds, sn.ARCHIVER, AGENT)
        out = tmp_path / "out"
        concurrency = 16
        cmd = [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", AGENT, "--role", "archiver",
               "--out", str(out), "--min-delay", "0.2", "--cache", f"sqlite://{tmp_path}/robots.db",
               "--concurrency", str(concurrency), "--timeout", "10"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (out / "pages.jsonl").exists() and len((out / "pages.jsonl").read_bytes().splitlines()) >= 25:
                break
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        killed_at = len(records(out))
        assert 25 <= killed_at < len(expect.requested)  # it was killed mid-crawl
        second = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, timeout=120)
        assert second.returncode == 0, second.stderr
        summary = json.loads(second.stdout)
        assert summary["completed"] and summary["queued"] == 0

        # each page requested once; only those in flight at the kill (one per host at most) twice
        repeats = 0
        for proxy, seed in ((run.gophernicus, site.gophernicus_url), (run.pygopherd, site.pygopherd_url)):
            got = Counter(page_selectors(proxy))
            assert sorted(got) == sorted(set(expect.selectors[sn.authority(seed)]))
            repeats += sum(n - 1 for n in got.values())
        want = Counter(u for v in expect.gemini_requests.values() for u in v)
        got_gemini = Counter(gemini_pages(run))
        assert set(got_gemini) == set(want)
        repeats += sum(max(0, got_gemini[u] - want[u]) for u in got_gemini)
        assert repeats <= 3  # three hosts, one request in flight each

        # the WARC reads back: one response record per fetched page (a page in flight at the kill may
        # have its record twice), every earlier record readable
        fetched = {str(r["url"]) for r in records(out) if r["outcome"] == "fetched"}
        responses = warc_responses(out)
        assert fetched <= set(responses)
        extra = sum(n - 1 for u, n in responses.items() if u not in expect.slow_down)
        assert extra <= 3
        settled = Counter(str(r["url"]) for r in records(out))
        assert sum(n - 1 for n in settled.values()) <= 3


def test_http_seed_is_one_sentence_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["crawl", "https://example.org/", "--agent", AGENT, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert "Scrapy integration" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("fault", "scheme"),
    [
        ("malformed", "gemini"),
        ("trickle", "gemini"),
        ("silent", "gemini"),
        ("trickle", "gopher"),
        ("silent", "gopher"),
    ],
)
@pytest.mark.serial  # a time bound
def test_fault_servers_cannot_hold_a_request(fault: str, scheme: str) -> None:
    with fault_server(fault, scheme, interval=0.2) as server:  # type: ignore[arg-type]

        async def get() -> tuple[float, str | None]:
            start = time.monotonic()
            if scheme == "gemini":
                r = await gemini_get(server.url, timeout=2, max_bytes=1 << 20, known_hosts={})
            else:
                r = await gopher_get(server.url, timeout=2, max_bytes=1 << 20)
            return time.monotonic() - start, r.error

        took, error = asyncio.run(get())
        assert took < 3 and error is not None
        assert server.requests()  # it was asked, and answered badly


def test_fault_servers_do_not_stall_the_crawl(tmp_path: Path) -> None:
    with (
        fault_server("malformed", "gemini") as malformed,
        fault_server("trickle", "gemini", interval=0.2) as trickle,
        fault_server("silent", "gemini") as silent,
        fault_server("silent", "gopher") as gopher_silent,
        sn.running(tmp_path / "site") as run,
    ):
        seeds = [malformed.url, trickle.url, silent.url, gopher_silent.url, run.site.gemini_url]

        async def crawl() -> list[tuple[str, tuple[str, str | None]]]:
            async with Crawler(AGENT, (), tmp_path / "out", min_delay=0.05, cache="memory", timeout=2,
                               robots_backoff=0.5, robots_attempts=2) as crawler:  # fmt: skip
                return [(p.url, (p.outcome, p.reason)) async for p in crawler.crawl(seeds)]

        start = time.monotonic()
        settled = dict(asyncio.run(crawl()))
        assert time.monotonic() - start < 20
        for server in (malformed, trickle, silent, gopher_silent):
            # robots.txt was no file either: read twice, then the URL is an error, never "disallowed"
            outcome, reason = settled[server.url]
            assert outcome == "error" and reason is not None and reason.startswith("unreachable")
            robots = [r for r in server.requests() if b"robots.txt" in r]
            assert len(robots) == 2  # Gopher too: its first selector timed out, so the next was not tried
        assert settled[run.site.gemini_url][0] == "fetched"


def test_the_client_stamps_a_request_again_once_its_bytes_are_written(tmp_path: Path) -> None:
    """The crawler spaces a host's next request from the last ``leaving`` call: the first is as the
    connection is begun (the turn's fence), the last once the request is written (said so: it
    must not refuse what is already sent), so a request whose bytes a busy loop sent late is not
    followed by one closer than the spacing to them."""
    with sn.running(tmp_path / "site") as run:

        async def stamps(url: str) -> tuple[list[tuple[float, bool]], float, float]:
            calls: list[tuple[float, bool]] = []

            def leaving(written: bool = False) -> None:
                calls.append((time.monotonic(), written))

            before = time.monotonic()
            if url.startswith("gemini:"):
                r = await gemini_get(url, timeout=5, max_bytes=1 << 20, known_hosts={},
                                     leaving=leaving)  # fmt: skip
            else:
                r = await gopher_get(url, timeout=5, max_bytes=1 << 20,
                                     leaving=leaving)  # fmt: skip
            assert r.error is None and r.raw
            return calls, before, time.monotonic()

        for url in (run.site.gemini_url, run.site.gophernicus_url):
            calls, before, after = asyncio.run(stamps(url))
            assert [written for _, written in calls] == [False, True], url  # begun, then written
            assert before <= calls[0][0] < calls[1][0] <= after
