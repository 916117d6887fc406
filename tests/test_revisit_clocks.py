"""A revisiting crawl over time (issue 31): clocks that ran ahead, refusals decided again, the end.

Each test runs ``manners crawl --revisit`` as a person runs it, against jetforce, and reads what
was asked for from jetforce's own access log:

- a robots.txt cache entry written by a process whose clock ran two hours ahead is expired, not
  fresh for two hours: robots.txt is read again within ``--robots-max-age``, and the page it now
  disallows is not asked for;
- a due time further off than ``--revisit-max`` (that clock again, or a crawl resumed with a
  smaller maximum) is brought forward to it, on SQLite and on Redis;
- a disallowed URL decided again at every robots.txt expiry writes one pages.jsonl line, not one
  per expiry, and a line again when the decision changes (another line refuses it, or it is
  allowed);
- SIGTERM ends a revisiting crawl as asked, and its summary says so.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import servers
from manners.cache.entry import CLOCK_TOLERANCE, Entry, expires, is_fresh
from manners.crawl.frontier import Visit, open_frontier
from test_crawl_revisit import AGENT, ENV, records, wait_for, write_tree

pytestmark = pytest.mark.serial  # asserts how long things take: one worker

AHEAD = 2 * 3600.0  # the clock that ran ahead


def revisiting(out: Path, *seeds: str, more: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", AGENT, "--out", str(out),
            "--allow-private", "--min-delay", "0", "--timeout", "5", "--revisit", *more]  # fmt: skip


def robots_reads(jet: Any) -> list[float]:
    return [a.time for a in jet.accesses() if a.url.endswith("/robots.txt")]


# -- the cache entry, pure ------------------------------------------------------------------------


def _entry(fetched_at: float, life: float = 86_400.0, outcome: str = "ok") -> Entry:
    return Entry("gemini://h:1965/robots.txt", outcome, "20", "gemini://h:1965/robots.txt", fetched_at,
                 fetched_at + life, good="ok" if outcome == "ok" else None,
                 good_at=fetched_at if outcome == "ok" else None)  # fmt: skip


def test_an_entry_from_the_future_is_expired_and_a_small_skew_is_not() -> None:
    now = 1_800_000_000.0
    assert not is_fresh(_entry(now + AHEAD, life=5), now, ttl=5)  # fresh for 2 h before the fix
    assert not is_fresh(_entry(now + AHEAD), now)
    assert not is_fresh(_entry(now + AHEAD, life=60, outcome="unreachable"), now)
    assert expires(_entry(now + AHEAD), now) == 0.0  # long ago, whichever clock compares
    assert is_fresh(_entry(now + CLOCK_TOLERANCE / 2, life=5), now, ttl=5)  # two clocks a little apart
    assert is_fresh(_entry(now - 1, life=5), now, ttl=5) and not is_fresh(_entry(now - 6, life=5), now, ttl=5)
    assert expires(_entry(now - 1), now, ttl=5) == now + 4  # ttl bounds a readable answer
    assert expires(_entry(now - 1, life=60, outcome="retry"), now, ttl=5) == now + 59  # not a backoff


# -- a robots.txt copy from a clock that ran ahead --------------------------------------------------


def test_a_robots_copy_from_a_clock_two_hours_ahead_is_read_again_within_max_age(tmp_path: Path) -> None:
    """The shared SQLite cache holds a robots.txt copy that allowed everything, written by a process
    whose clock ran two hours ahead; the file now disallows /new.gmi.  With --robots-max-age 5 the
    crawl reads robots.txt again at once, so /new.gmi is never asked for."""
    from manners.cache.sqlite import SQLiteStore

    root = tmp_path / "capsule"
    write_tree(root, {"robots.txt": "User-agent: *\nDisallow: /new.gmi\n", "index.gmi": "# I\n=> new.gmi\n",
                      "new.gmi": "disallowed since the copy was read\n"})  # fmt: skip
    db = tmp_path / "robots.sqlite3"
    out = tmp_path / "out"
    with servers.jetforce_hosts([root]) as jet:
        port = jet.listen_ports[0]
        seed = f"gemini://localhost:{port}/"
        ahead = time.time() + AHEAD
        old = Entry(f"{seed}robots.txt", "ok", "20", f"{seed}robots.txt", ahead, ahead + 5, good="ok",
                    good_at=ahead, good_status="20", body=b"User-agent: *\nAllow: /\n")  # fmt: skip

        async def plant() -> None:
            store = SQLiteStore(db)
            await store.put(f"gemini://localhost:{port}", old)
            await store.close()

        asyncio.run(plant())
        more = ("--cache", f"sqlite://{db}", "--robots-max-age", "5", "--revisit-min", "1",
                "--revisit-max", "2")  # fmt: skip
        crawl = subprocess.Popen(revisiting(out, seed, more=more), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, env=ENV, text=True)  # fmt: skip
        started = time.time()
        try:
            wait_for(lambda: jet.urls().count(seed) >= 3, timeout=40)  # index.gmi watched a while
        finally:
            crawl.send_signal(signal.SIGTERM)
            _, err = crawl.communicate(timeout=30)
        assert crawl.returncode == 0, err
        reads = robots_reads(jet)
        asked = jet.urls()
    assert reads and reads[0] < started + 5 + 2, reads  # read within --robots-max-age, not 2 h later
    assert f"{seed}new.gmi" not in asked, asked
    refused = [r for r in records(out) if r["url"] == f"{seed}new.gmi"]
    assert refused and refused[0]["outcome"] == "disallowed" and refused[0]["rule"] == "Disallow: /new.gmi"


# -- due times further off than --revisit-max ---------------------------------------------------------


async def _cap(frontier: Any) -> tuple[int, dict[str, float], float]:
    """Two URLs visited once, due in two hours and in a second; a new one; capped to a minute."""
    now = time.time()
    for url in ("gemini://a.example/far", "gemini://a.example/near", "gemini://b.example/new"):
        await frontier.add(url, 0)
    for url, due in (("gemini://a.example/far", now + AHEAD), ("gemini://a.example/near", now + 1)):
        lease = await frontier.lease("gemini://a.example:1965", "w", 60)
        assert lease is not None and lease.url == url
        visit = Visit(1, due, 1.0, "sha1:X", now, 0, True, lease.token)
        await frontier.done(lease.url, "fetched", visit=visit)
    moved = await frontier.cap_due(now + 60)
    again = await frontier.cap_due(now + 60)
    assert again == 0
    coming = await frontier.revisits(now + 61)
    return moved, {"due_now": coming.due_now}, now


def test_a_due_time_beyond_revisit_max_is_capped_on_sqlite(tmp_path: Path) -> None:
    frontier = open_frontier(tmp_path / "frontier.sqlite3")

    async def main() -> None:
        try:
            moved, coming, _ = await _cap(frontier)
            assert moved == 1 and coming["due_now"] == 2  # both revisits due within the minute now
            assert await frontier.next_ready_at() is not None
        finally:
            await frontier.close()

    asyncio.run(main())
    db = sqlite3.connect(tmp_path / "frontier.sqlite3")
    due = dict(db.execute("SELECT url, not_before FROM urls").fetchall())
    db.close()
    assert due["gemini://a.example/far"] < time.time() + 61 and due["gemini://b.example/new"] == 0


def test_a_due_time_beyond_revisit_max_is_capped_on_redis(redis_port: int) -> None:
    frontier = open_frontier(f"redis://127.0.0.1:{redis_port}/0", name=f"cap{time.time_ns()}")

    async def main() -> None:
        try:
            moved, coming, now = await _cap(frontier)
            assert moved == 1 and coming["due_now"] == 2
            # the authority's next ready time came forward with it: it is leased within the minute
            assert await frontier.lease("gemini://a.example:1965", "w", 60) is None
            ready = await frontier.next_ready_at()
            assert ready is not None and ready <= now + 60.001
        finally:
            await frontier.close()

    asyncio.run(main())


def test_a_crawl_resumed_with_a_smaller_revisit_max_asks_within_it(tmp_path: Path) -> None:
    """Pages due two hours from now (a clock that ran ahead settled them, or a larger maximum):
    resumed with --revisit-max 2, the crawl asks for them within seconds, not hours."""
    root = tmp_path / "capsule"
    write_tree(root, {"index.gmi": "# R\n=> a.gmi\n", "a.gmi": "a\n"})
    out = tmp_path / "out"
    more = ("--cache", "memory", "--revisit-min", "1", "--revisit-max", "2")
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        first = subprocess.Popen(revisiting(out, seed, more=more), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=ENV)  # fmt: skip
        wait_for(lambda: jet.urls().count(f"{seed}a.gmi") >= 1)
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) == 0
        db = sqlite3.connect(out / "frontier.sqlite3")
        later = (time.time() + AHEAD,)
        db.execute("UPDATE urls SET not_before = ? WHERE state = 'queued' AND visits > 0", later)
        db.execute("UPDATE authorities SET eligible_at = ? WHERE eligible_at IS NOT NULL", later)
        db.commit()
        db.close()
        before = len(jet.urls())
        resumed = time.time()
        second = subprocess.Popen(revisiting(out, more=more), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, env=ENV, text=True)  # fmt: skip
        try:
            wait_for(lambda: f"{seed}a.gmi" in jet.urls()[before:], timeout=30)
        finally:
            second.send_signal(signal.SIGTERM)
            _, err = second.communicate(timeout=30)
        assert second.returncode == 0, err
        again = [a.time for a in jet.accesses()[before:] if a.url == f"{seed}a.gmi"]
    assert again and again[0] < resumed + 2 + 10  # within --revisit-max (and a loaded machine's start)


# -- a refusal decided again ---------------------------------------------------------------------------


def test_a_disallowed_url_is_recorded_once_until_the_decision_changes(tmp_path: Path) -> None:
    """robots.txt expires every second and the disallowed URL is decided again each time: one
    pages.jsonl line while the same line refuses it; a line when another line refuses it; a line
    (and a request) when the file allows it."""
    root = tmp_path / "capsule"
    write_tree(root, {"robots.txt": "User-agent: *\nDisallow: /no.gmi\n", "index.gmi": "# D\n=> no.gmi\n",
                      "no.gmi": "refused, then allowed\n"})  # fmt: skip
    out = tmp_path / "out"
    more = ("--cache", "memory", "--robots-max-age", "1", "--revisit-min", "1", "--revisit-max", "2")
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        url = f"{seed}no.gmi"
        crawl = subprocess.Popen(revisiting(out, seed, more=(*more, "--json")), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=ENV, text=True)  # fmt: skip
        try:
            wait_for(lambda: len(robots_reads(jet)) >= 6, timeout=60)  # decided again at each expiry
            mine = [r for r in records(out) if r["url"] == url]
            assert len(mine) == 1 and mine[0]["outcome"] == "disallowed" and mine[0]["visit"] == 1, mine
            (root / "robots.txt").write_text("User-agent: *\nDisallow: /elsewhere\nDisallow: /no.gmi\n")
            wait_for(lambda: sum(1 for r in records(out) if r["url"] == url) >= 2, timeout=30)
            reads = len(robots_reads(jet))
            wait_for(lambda: len(robots_reads(jet)) >= reads + 4, timeout=60)
            refused = [r for r in records(out) if r["url"] == url]
            (root / "robots.txt").write_text("User-agent: *\nDisallow: /elsewhere\n")
            wait_for(lambda: url in jet.urls(), timeout=30)
            wait_for(lambda: any(r["outcome"] == "fetched" for r in records(out) if r["url"] == url))
        finally:
            crawl.send_signal(signal.SIGTERM)
            stdout, err = crawl.communicate(timeout=30)
        assert crawl.returncode == 0, err
    assert [(r["outcome"], r.get("line"), r["visit"]) for r in refused] == [
        ("disallowed", 2, 1),
        ("disallowed", 3, 2),  # another line refuses it: a new decision, recorded
    ], refused
    lines = [r for r in records(out) if r["url"] == url]
    assert [r["visit"] for r in lines] == list(range(1, len(lines) + 1))
    assert lines[2]["outcome"] == "fetched" and lines[2]["visit"] == 3
    summary = json.loads(stdout)
    assert summary["disallowed"] == 2  # what the summary counts: decisions, not expiries


# -- SIGTERM, the normal end --------------------------------------------------------------------------


def test_sigterm_says_a_revisiting_crawl_stopped_as_asked_and_ctrl_c_still_interrupts(tmp_path: Path) -> None:
    root = tmp_path / "capsule"
    write_tree(root, {"index.gmi": "# S\n"})
    more = ("--cache", "memory", "--revisit-min", "1", "--revisit-max", "2")
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        said = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            out = tmp_path / f"out-{sig.name}"
            crawl = subprocess.Popen(revisiting(out, seed, more=more), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=ENV, text=True)  # fmt: skip
            wait_for(lambda out=out: len(records(out)) >= 1)  # type: ignore[misc]
            crawl.send_signal(sig)
            stdout, err = crawl.communicate(timeout=30)
            said[sig] = (crawl.returncode, stdout, err)
    code, stdout, err = said[signal.SIGTERM]
    assert code == 0, err
    first = stdout.splitlines()[0]
    assert first.startswith("stopped as asked (SIGTERM") and "interrupted" not in stdout, stdout
    assert "to go on watching: manners crawl --out" in stdout
    code, stdout, _ = said[signal.SIGINT]
    assert code == 130 and stdout.splitlines()[0].startswith("interrupted:"), stdout


def test_sigterm_ends_a_crawl_that_does_not_revisit_as_interrupted(tmp_path: Path) -> None:
    """Only a revisiting crawl ends normally on SIGTERM: any other crawl was cut short (130)."""
    root = tmp_path / "capsule"
    write_tree(root, {"index.gmi": "# T\n" + "".join(f"=> p{i}.gmi\n" for i in range(50)),
                      **{f"p{i}.gmi": f"{i}\n" for i in range(50)}})  # fmt: skip
    out = tmp_path / "out"
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        cmd = revisiting(out, seed, more=("--cache", "memory", "--min-delay", "0.3", "--json"))
        cmd.remove("--revisit")
        crawl = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, text=True)
        wait_for(lambda: len(records(out)) >= 2)
        crawl.send_signal(signal.SIGTERM)
        stdout, err = crawl.communicate(timeout=30)
    assert crawl.returncode == 130, err
    summary = json.loads(stdout)
    assert summary["interrupted"] and summary["ended"] == "interrupted"


# -- the archive: revisit records name their capture, a certificate is no capture ------------------------

CDXJ = str(Path(sys.executable).parent / "cdxj-indexer")


def test_revisit_records_refer_to_their_capture_by_id_across_runs_and_certificates_are_not_indexed(
    tmp_path: Path,
) -> None:
    """A page watched over two runs of the crawl: every revisit record's WARC-Refers-To is the
    WARC-Record-ID of the response record that holds its payload (the one the first run wrote,
    too); the certificate's metadata record refers to the response it came with; and cdxj-indexer
    indexes the pages' captures (responses, revisits) and never the PEM under a page's URL."""
    from warcio.archiveiterator import ArchiveIterator

    root = tmp_path / "capsule"
    write_tree(root, {"index.gmi": "# W\n=> same.gmi\n", "same.gmi": "never changes\n"})
    out = tmp_path / "out"
    more = ("--cache", "memory", "--revisit-min", "1", "--revisit-max", "1")
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        for run, seeds in enumerate(([seed], [])):
            crawl = subprocess.Popen(revisiting(out, *seeds, more=more), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=ENV, text=True)  # fmt: skip
            wait_for(lambda n=3 * (run + 1): jet.urls().count(f"{seed}same.gmi") >= n)  # type: ignore[misc]
            crawl.send_signal(signal.SIGTERM)
            _, err = crawl.communicate(timeout=30)
            assert crawl.returncode == 0, err
    warcs = sorted((out / "warc").glob("*.warc.gz"))
    assert len(warcs) == 2  # one per run
    ids: dict[str, tuple[str, str, str]] = {}  # record id -> type, target, date
    revisits, metadata = [], []
    for path in warcs:
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                h = record.rec_headers
                ids[h.get_header("WARC-Record-ID")] = (record.rec_type, h.get_header("WARC-Target-URI"),
                                                       h.get_header("WARC-Date"))  # fmt: skip
                if record.rec_type == "revisit":
                    revisits.append(h)
                elif record.rec_type == "metadata":
                    metadata.append(h)
    assert len(revisits) >= 4
    for h in revisits:
        refers = h.get_header("WARC-Refers-To")
        assert refers is not None, h
        assert ids[refers] == ("response", h.get_header("WARC-Refers-To-Target-URI"),
                               h.get_header("WARC-Refers-To-Date"))  # fmt: skip
    second_run = [h for h in revisits if h.get_header("WARC-Target-URI").endswith("/same.gmi")][-1]
    assert ids[second_run.get_header("WARC-Refers-To")][2] < second_run.get_header("WARC-Date")
    assert metadata, "the certificate is archived"
    for h in metadata:
        assert h.get_header("WARC-Target-URI").startswith("urn:certificate:gemini://localhost:")
        assert ids[h.get_header("WARC-Refers-To")][0] in ("response", "revisit")  # the capture it came with

    index = subprocess.run([CDXJ, *map(str, warcs)], capture_output=True, text=True, timeout=60)
    assert index.returncode == 0, index.stderr
    lines = [json.loads(line.split(" ", 2)[2]) for line in index.stdout.splitlines()]
    pages = [entry for entry in lines if entry["url"].startswith("gemini://")]
    assert pages and all(entry.get("mime") != "application/x-pem-file" for entry in pages), pages
    captures = sum(1 for kind, target, _ in ids.values() if kind in ("response", "revisit")
                   and target.startswith("gemini://"))  # fmt: skip
    assert len(pages) == captures  # one index line per capture of a page, none for its certificate
