"""What a worker keeps and shares, on a single process's SQLite frontier: the ledger written
before each request, the worker's id in every record, leases renewed while a fetch runs, request
slots booked in the frontier, ``manners crawl status``, and the ``status``/``audit`` subcommands.

Requests are read from the servers' side (logging proxies, a purpose-built Gopher server that
records each connection), never from what the crawler says it did.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import os
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import smallnet_site as sn
from manners.crawl import Crawler
from manners.crawl import crawler as crawler_module
from manners.crawl.frontier import FrontierError, Lease, Patient, SQLiteFrontier, open_frontier, shown
from manners.crawl.progress import Progress, summary
from slow_hole import slow_hole
from test_cli import manners as run_manners
from test_cli_json import agrees
from test_crawl_store import run

AGENT = "testbot"
SLACK = 0.02  # seconds of timer granularity between the crawler's clock and a server's
A = "gopher://a.example:70"


def manners(*args: str) -> subprocess.CompletedProcess[str]:
    """The ``manners`` command, its output plain (no colour, no live display)."""
    skip = ("FORCE_COLOR", "NO_COLOR", "MANNERS_CACHE")
    env = {k: v for k, v in os.environ.items() if k not in skip}
    return run_manners(*args, env={**env, "COLUMNS": "200"})


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --------------------------------------------------------------------------- the frontier's new calls


def test_each_lease_has_its_own_token_and_renew_extends_only_the_owners(tmp_path: Path) -> None:
    async def test(f: SQLiteFrontier) -> None:
        await f.add_many([f"{A}/0/{i}" for i in range(3)], 0)
        first, second = await f.lease(A, "me", 1.0), await f.lease(A, "other", 1.0)
        assert first is not None and second is not None
        assert first.token and second.token and first.token != second.token
        assert first == Lease(first.url, 0, 0, None, 0)  # the token is no part of equality
        await f.renew([first.url, second.url], "me", 60.0)
        db = sqlite3.connect(tmp_path / "f.sqlite3")
        until = dict(db.execute("SELECT url, lease_until FROM urls WHERE state = 'in_flight'").fetchall())
        assert until[first.url] > time.time() + 50 and until[second.url] < time.time() + 2
        await asyncio.sleep(1.1)
        assert await f.reclaim() == 1  # the other's expired; mine was renewed
        assert (await f.counts())["in_flight"] == 1
        again = await f.lease(A, "third", 60)
        assert again is not None and again.attempts == 1  # reclaimed: one attempt counted
        assert await f.reclaim() == 0

    run(test, tmp_path / "f.sqlite3")


@pytest.mark.serial  # a time bound
def test_book_and_claim_keep_the_cache_stores_semantics(tmp_path: Path) -> None:
    """Seconds from now, as the cache Store's: the slot after the last, a wait the server asked
    for, and a claim that tells a late sleeper how much longer to wait."""

    async def test(f: SQLiteFrontier) -> None:
        assert await f.book(A, 2.0) == pytest.approx(0.0, abs=0.05)
        assert await f.book(A, 2.0) == pytest.approx(2.0, abs=0.05)
        assert await f.book(A, 2.0, wait=10.0) == pytest.approx(10.0, abs=0.05)
        assert await f.book(A, 2.0) == pytest.approx(12.0, abs=0.05)
        assert await f.book("gemini://b.example:1965", 2.0) == pytest.approx(0.0, abs=0.05)
        assert await f.claim(A, 0.5) == 0.0
        assert await f.claim(A, 0.5) == pytest.approx(0.5, abs=0.05)
        await asyncio.sleep(0.5)
        assert await f.claim(A, 0.5) == 0.0
        assert await f.claim(A, 0.0) == 0.0  # no spacing: always claimed

    run(test, tmp_path / "f.sqlite3")


def test_heartbeats_workers_and_the_oldest_lease(tmp_path: Path) -> None:
    async def test(f: SQLiteFrontier) -> None:
        assert await f.workers() == {} and await f.oldest_lease() is None
        await f.heartbeat("w1", {"pid": 1, "state": "running"})
        await f.heartbeat("w2", {"pid": 2})
        await f.heartbeat("w1", {"pid": 1, "state": "stopped"})
        seen = await f.workers()
        assert set(seen) == {"w1", "w2"} and seen["w1"]["state"] == "stopped"
        assert abs(float(str(seen["w2"]["last_seen"])) - time.time()) < 2
        await f.add_many([f"{A}/0/{i}" for i in range(2)], 0)
        first = await f.lease(A, "w1", 30)
        await f.lease(A, "w2", 60)
        oldest = await f.oldest_lease()
        assert first is not None and oldest is not None
        assert (oldest["url"], oldest["owner"]) == (first.url, "w1")
        assert 28 < float(str(oldest["expires_in"])) <= 30

    run(test, tmp_path / "f.sqlite3")


def test_open_frontier_picks_by_scheme_and_hides_passwords(tmp_path: Path) -> None:
    assert isinstance(open_frontier(str(tmp_path / "x.sqlite3")), SQLiteFrontier)
    assert isinstance(open_frontier(tmp_path), SQLiteFrontier)  # a directory: its frontier.sqlite3
    with pytest.raises(FrontierError, match="name this one"):
        open_frontier("redis://127.0.0.1:1/0")
    with pytest.raises(FrontierError, match="not http://"):
        open_frontier("http://example.org/")
    assert shown("redis://:s3cret@db:6379/0") == "redis://:***@db:6379/0"
    assert shown("rediss://user:s3cret@db/0") == "rediss://user:***@db/0"
    assert shown("redis://db:6379/0") == "redis://db:6379/0"


def test_patient_waits_through_an_outage_then_gives_up_at_once(tmp_path: Path) -> None:
    """A call that fails with FrontierError is made again until the frontier answers; past the
    patience, it fails, and so does every later call, without waiting."""

    class Flaky(SQLiteFrontier):
        down_until = 0.0

        async def counts(self) -> dict[str, int]:
            if time.monotonic() < self.down_until:
                raise FrontierError("the frontier is unreachable")
            return await super().counts()

    async def main() -> None:
        inner = Flaky(tmp_path / "f.sqlite3")
        patient = Patient(inner, patience=1.0)
        inner.down_until = time.monotonic() + 0.4
        start = time.monotonic()
        assert (await patient.counts())["queued"] == 0
        assert 0.35 < time.monotonic() - start < 0.9
        inner.down_until = time.monotonic() + 60
        start = time.monotonic()
        with pytest.raises(FrontierError, match=r"for 1 s, so this worker stops"):
            await patient.counts()
        assert 0.9 < time.monotonic() - start < 2.5
        start = time.monotonic()
        with pytest.raises(FrontierError):
            await patient.counts()
        assert time.monotonic() - start < 0.5  # given up: no second wait (that would be 1 s)
        await patient.close()

    asyncio.run(main())


# --------------------------------------------------------------------------- a real crawl


def test_the_ledger_is_written_before_each_request_and_names_the_worker(tmp_path: Path) -> None:
    """Every connection the three servers received has its ledger line, written before it was
    opened (robots.txt fallbacks and caps.txt included, the URL or selector the same); every
    pages record names the worker whose ledger it is; docs/json.md's shapes hold."""
    with sn.running(tmp_path / "site") as site:
        seeds = [site.site.gemini_url, site.site.gophernicus_url, site.site.pygopherd_url]
        out = tmp_path / "out"

        async def crawl() -> str:
            async with Crawler(AGENT, sn.ARCHIVER, out, min_delay=0.2, cache=f"sqlite://{tmp_path}/robots.db",
                               timeout=10) as crawler:  # fmt: skip
                async for _ in crawler.crawl(seeds):
                    pass
                return crawler.owner

        worker = asyncio.run(crawl())
        proxies = {sn.authority(site.site.gophernicus_url): site.gophernicus,
                   sn.authority(site.site.pygopherd_url): site.pygopherd,
                   sn.authority(site.site.gemini_url): site.gemini}  # fmt: skip
        connections = {auth: proxy.snapshot() for auth, proxy in proxies.items()}

    ledger = lines(out / f"requests-{worker}.jsonl")
    assert [p.name for p in out.glob("requests*.jsonl")] == [f"requests-{worker}.jsonl"]
    for line in ledger:
        agrees("requests.jsonl", line)
        robots = ["source"] if line["kind"] == "robots" else []  # each fetched here: none from a cache
        assert list(line) == ["at", "t", "authority", "url", "kind", "worker", "lease", "spacing",
                              "not_before", *robots]  # fmt: skip
        assert line.get("source", "fetched") == "fetched"
        assert line["worker"] == worker and line["spacing"] >= 0.2
        assert (line["lease"] is None) == (line["kind"] == "robots")
    for auth, opened in connections.items():
        noted = sorted((line for line in ledger if line["authority"] == auth), key=lambda line: line["t"])
        assert len(noted) == len(opened), auth  # every request on record, and nothing else
        for line, conn in zip(noted, opened, strict=True):
            assert line["t"] <= conn.opened + SLACK, (auth, line, conn)  # noted before it left
            if auth.startswith("gopher"):
                assert sn.gopher_selector(line["url"]) == conn.selector
        kinds = [line["kind"] for line in noted]
        assert kinds[0] == "robots" and ("caps" in kinds) == auth.startswith("gopher")
    # the 44: its retry is the first request after the wait, and says so
    slow = [line for line in ledger if line["not_before"] is not None]
    assert len(slow) == 1 and slow[0]["t"] >= slow[0]["not_before"] - SLACK
    records = lines(out / "pages.jsonl")
    assert records and all(r["worker"] == worker for r in records)
    for record in records:
        agrees("pages.jsonl", record)

    # the frontier's own claims paced the crawl: every authority has a start, the robot's store
    # none (and one process books no slot ahead: nobody else orders its hosts' requests)
    db = sqlite3.connect(out / "frontier.sqlite3")
    assert {a for (a,) in db.execute("SELECT key FROM starts")} == set(connections)
    assert db.execute("SELECT count(*) FROM slots").fetchone() == (0,)
    cache = sqlite3.connect(tmp_path / "robots.db")
    assert cache.execute("SELECT count(*) FROM slots").fetchone() == (0,)
    assert cache.execute("SELECT count(*) FROM starts").fetchone() == (0,)

    # status reads the same frontier: the worker stopped, nothing in flight
    shown_status = manners("crawl", "status", "--frontier", str(out / "frontier.sqlite3"), "--json")
    assert shown_status.returncode == 0, shown_status.stderr
    status = json.loads(shown_status.stdout)
    agrees("manners crawl status", status)
    assert status["urls"]["queued"] == 0 and status["urls"]["in_flight"] == 0
    assert status["urls"]["done"] == len(records) - sum(1 for r in records if r.get("parent"))
    assert status["identity"] == {"agent": AGENT, "roles": ["archiver"], "profile": None, "scope": "seeds"}
    assert list(status["workers"]) == [worker] and not status["workers"][worker]["alive"]
    assert status["workers"][worker]["state"] == "stopped" and status["oldest_lease"] is None
    text = manners("crawl", "status", "--frontier", str(out))  # DIR names its frontier.sqlite3
    assert text.returncode == 0 and f"{worker}  stopped" in text.stdout, text.stdout
    assert "oldest lease: none" in text.stdout

    # the audit, through manners crawl: the crawl's manners hold
    audited = manners("crawl", "audit", str(out), "--json")
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert json.loads(audited.stdout)["violations"] == 0


# --------------------------------------------------------------------------- a slow server


def _states(frontier: Path, url: str, until: threading.Event, seen: list[tuple[str, float | None]]) -> None:
    """Poll ``url``'s state and lease expiry in the frontier file until ``until`` is set."""
    while not until.is_set():
        with contextlib.suppress(sqlite3.Error):
            db = sqlite3.connect(f"file:{frontier}?mode=ro", uri=True)
            row = db.execute("SELECT state, lease_until FROM urls WHERE url = ?", (url,)).fetchone()
            db.close()
            if row is not None:
                seen.append((row[0], row[1]))
        time.sleep(0.05)


@pytest.mark.parametrize("renewing", [True, False], ids=["renewed", "control-not-renewed"])
def test_a_lease_is_renewed_while_a_slow_fetch_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renewing: bool
) -> None:
    """A fetch of 3 s under a lease of 1 s: the worker renews it every third of a second, so it
    stays in flight until settled, and no reclaim puts it back in the queue.  The control, with
    renewing switched off, shows that the reclaim would (and then the settling of the fetch made
    under the lost lease is refused, recorded unsettled: the URL is fetched again)."""
    if not renewing:

        async def no_renewal(self: Crawler) -> None:
            return None

        monkeypatch.setattr(Crawler, "_renew", no_renewal)
    with slow_hole(3.0) as hole:
        seed = f"gopher://127.0.0.1:{hole.port}/1/slow"
        out = tmp_path / "out"
        seen: list[tuple[str, float | None]] = []
        done = threading.Event()
        watcher = threading.Thread(target=_states, args=(out / "frontier.sqlite3", seed, done, seen))

        async def crawl() -> list[str]:
            async with Crawler(AGENT, (), out, min_delay=0.05, cache="memory", timeout=10, lease=1.0,
                               allow_private=True) as crawler:  # fmt: skip
                watcher.start()
                if not renewing:  # never renewed, its every fetch outlives its lease: stop after the first
                    asyncio.get_running_loop().call_later(4.5, crawler.stop)
                return [p.outcome async for p in crawler.crawl([seed])]

        try:
            outcomes = asyncio.run(crawl())
        finally:
            done.set()
            watcher.join()
    flight = [until for state, until in seen if state == "in_flight"]
    assert flight, seen
    after = list(itertools.dropwhile(lambda s: s[0] != "in_flight", seen))
    if renewing:
        assert max(u for u in flight if u is not None) - min(u for u in flight if u is not None) > 1.5
        assert all(state != "queued" for state, _ in after), seen  # never back in the queue
        assert "fetched" in outcomes
        assert hole.selectors().count("/slow") == 1
    else:
        assert any(state == "queued" for state, _ in after), seen  # reclaimed under the fetch
        records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
        assert [r["outcome"] for r in records if r["url"] == seed][:2] == ["fetched", "unsettled"]


def test_the_frontier_paces_by_crawl_delay_and_a_resume_keeps_the_spacing(tmp_path: Path) -> None:
    """robots.txt asks for 1 s: every request, as the server saw them, at least 1 s after the one
    before, across a stop and a resume (the slots are in the frontier, not the process)."""
    with slow_hole(0.0, robots="User-agent: *\r\nCrawl-delay: 1\r\n", items=4) as hole:
        seed = f"gopher://127.0.0.1:{hole.port}/1/"
        out = tmp_path / "out"

        async def crawl(pages: int) -> None:
            cache = f"sqlite://{tmp_path}/robots.db"
            async with Crawler(AGENT, (), out, min_delay=0.05, cache=cache, timeout=5, max_pages=pages,
                               allow_private=True) as crawler:  # fmt: skip
                async for _ in crawler.crawl([seed]):
                    pass

        asyncio.run(crawl(3))  # stops at --max-pages 3 ...
        asyncio.run(crawl(10))  # ... and the resume goes on at once
        times = hole.times()
    assert len(times) == 7, hole.selectors()  # robots.txt, caps.txt, the menu and its 4 items
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 1.0 - SLACK, gaps
    ledger = [line for path in out.glob("requests-*.jsonl") for line in lines(path)]
    copies = [line for line in ledger if line.get("source") == "cache"]  # the resume's robots.txt: no request
    assert [line["kind"] for line in copies] == ["robots"]
    ledger = [line for line in ledger if line not in copies]
    assert len(ledger) == len(times) and len({line["worker"] for line in ledger}) == 2
    assert all(line["spacing"] == 1.0 for line in ledger if line["kind"] != "robots")


# --------------------------------------------------------------------------- the command line


def test_status_and_audit_are_subcommands_and_seeds_stay_seeds(tmp_path: Path) -> None:
    missing = manners("crawl", "status", "--json")
    assert missing.returncode == 2 and "--frontier" in missing.stderr
    nothing = manners("crawl", "status", "--frontier", str(tmp_path / "none.sqlite3"))
    assert nothing.returncode == 2 and "is no crawl's frontier" in nothing.stderr
    unnamed = manners("crawl", "status", "--frontier", "redis://127.0.0.1:1/0")
    assert unnamed.returncode == 2 and "--name CRAWL" in unnamed.stderr
    no_ledger = manners("crawl", "audit", str(tmp_path))
    assert no_ledger.returncode == 2 and "ledger" in no_ledger.stderr
    seed = manners("crawl", "status:", "--agent", AGENT, "--out", str(tmp_path / "c"))
    assert seed.returncode == 2 and "no gemini:// or gopher:// URL" in seed.stderr
    helped = manners("crawl", "--help")
    assert "manners crawl status" in helped.stdout and "manners crawl audit" in helped.stdout
    unnamed_crawl = manners("crawl", "gemini://x.example/", "--agent", AGENT, "--frontier", "redis://h/0",
                            "--out", str(tmp_path / "d"))  # fmt: skip
    assert unnamed_crawl.returncode == 2 and "--name CRAWL" in unnamed_crawl.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.quick
def test_a_lease_option_is_kept_with_the_crawl(tmp_path: Path) -> None:
    assert crawler_module.LEASE == 120.0
    with pytest.raises(ValueError, match="lease"):
        Crawler(AGENT, (), tmp_path, lease=0)
    with pytest.raises(ValueError, match="name this one"):
        Crawler(AGENT, (), tmp_path, frontier="redis://127.0.0.1:1/0")


@pytest.mark.quick
def test_the_summary_and_the_plain_progress_of_a_crawl_not_yet_run(tmp_path: Path) -> None:
    """What --json and a person are shown at the end and on the way, here in this process (the
    crawls that print them run manners crawl as a subprocess, which the quick tier cannot see)."""
    crawler = Crawler(AGENT, ("gemini://capsule.example/",), tmp_path)
    said = summary(crawler, interrupted=True)
    assert (said["completed"], said["interrupted"], said["fetched"]) == (False, True, 0)
    assert (said["out"], said["files"]) == (str(tmp_path), [str(tmp_path / "frontier.sqlite3")])
    shown = io.StringIO()
    progress = Progress(crawler, shown, live=False)
    progress.tick()
    progress.close()
    assert shown.getvalue().startswith("manners crawl: fetched 0, queued 0, disallowed 0, errors 0")
