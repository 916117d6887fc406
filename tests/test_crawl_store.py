"""The crawl's storage: the SQLite frontier's own (leases at a start, a resume, speed, kills
mid-write; what every frontier does is in test_frontier_redis.py), WARC files and pages.jsonl."""

from __future__ import annotations

import asyncio
import gzip
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from manners.crawl.frontier import Lease, SQLiteFrontier, open_frontier
from manners.crawl.records import PageLog
from manners.crawl.urls import authority
from manners.crawl.warc import WarcWriter

A = "gemini://a.example:1965"
B = "gemini://b.example:1965"
C = "gopher://c.example:70"


def run(test: Callable[[SQLiteFrontier], Awaitable[None]], path: Path) -> None:
    async def main() -> None:
        frontier = open_frontier(path)
        try:
            await test(frontier)
        finally:
            await frontier.close()

    asyncio.run(main())


def test_authority_is_scheme_host_and_explicit_port() -> None:
    assert authority("gemini://A.Example/x") == A
    assert authority("gopher://c.example/1/") == C
    assert authority("gemini://a.example:1966/") == "gemini://a.example:1966"
    assert authority("gemini://[::1]/") == "gemini://[::1]:1965"


def test_leases_expire_for_others_and_recover_at_start(tmp_path: Path) -> None:
    async def test(f: SQLiteFrontier) -> None:
        await f.add_many([f"gemini://a.example/{i}" for i in range(4)], 0)
        short = await f.lease(A, "one", 0.05)
        long = await f.lease(A, "one", 60)
        mine = await f.lease(A, "two", 60)
        assert short and long and mine
        time.sleep(0.06)
        assert await f.recover("three") == 1  # only the expired lease
        assert (await f.lease(A, "three", 60)) == Lease(short.url, 0, 0, None, 0)
        assert await f.recover("two") == 1  # a restarted worker takes back its own
        assert await f.recover() == 2  # a single-process crawl's start: everything in flight
        assert await f.counts() == {"queued": 4, "in_flight": 0, "done": 0}

    run(test, tmp_path)


def test_a_reopened_frontier_resumes_where_it_stopped(tmp_path: Path) -> None:
    async def first(f: SQLiteFrontier) -> None:
        await f.add_many(["gemini://a.example/1", "gemini://a.example/2"], 0)
        one = await f.lease(A, "me", 60)
        assert one is not None
        await f.done(one.url, "fetched")
        assert await f.lease(A, "me", 60) is not None  # in flight when the process stops
        await f.park(B, time.time() + 60, "44 slow down")
        await f.set_meta("seeds", '["gemini://a.example/1"]')
        f.known_hosts()["a.example:1965"] = "ab" * 32

    async def second(f: SQLiteFrontier) -> None:
        assert await f.recover() == 1
        lease = await f.lease(A, "me", 60)
        assert lease is not None and lease.url == "gemini://a.example/2"
        assert list(await f.parked()) == [B]
        assert await f.get_meta("seeds") == '["gemini://a.example/1"]'
        assert await f.get_meta("options") is None
        hosts = f.known_hosts()
        assert dict(hosts) == {"a.example:1965": "ab" * 32}
        hosts["a.example:1965"] = "cd" * 32  # a changed certificate, when the crawler accepts it
        with pytest.raises(KeyError):
            del hosts["b.example:1965"]
        assert len(hosts) == 1 and hosts["a.example:1965"] == "cd" * 32

    run(first, tmp_path)
    run(second, tmp_path / "frontier.sqlite3")


def test_ready_authorities_stay_fast_with_many_urls_and_hosts(tmp_path: Path) -> None:
    async def test(f: SQLiteFrontier) -> None:
        for host in range(0, 2000, 100):
            await f.add_many([f"gemini://h{host + i}.example/{j}" for i in range(100) for j in range(50)], 1)
        assert (await f.counts())["queued"] == 100_000
        start = time.perf_counter()
        for _ in range(200):
            ready = await f.ready_authorities(time.time(), (), 16)
            lease = await f.lease(ready[0], "me", 60)
            assert lease is not None
            await f.done(lease.url, "fetched")
        assert time.perf_counter() - start < 3.0  # about 0.1 s here: O(log n) per call, no scan

    run(test, tmp_path)


FRONTIER_WORKER = """
import asyncio, sys, time
from pathlib import Path
from manners.crawl.frontier import open_frontier

async def main():
    f = open_frontier(Path(sys.argv[1]))
    await f.recover()
    n = 0
    while True:
        for a in await f.ready_authorities(time.time(), (), 8) or [None]:
            if a is None:
                base = f"gemini://h{n % 7}.example/"
                await f.add_many([base + str(n + i) for i in range(5)], 0)
                continue
            lease = await f.lease(a, "w", 60)
            if lease is None:
                continue
            n += 1
            if n % 5 == 0:
                await f.retry(lease.url, 0)
            else:
                await f.done(lease.url, "fetched", [f"{a}/{n}/{i}" for i in range(3)], depth=lease.depth + 1)
            if n == 50:
                print("going", flush=True)

asyncio.run(main())
"""


def consistency(path: Path) -> dict[str, int]:
    """Check the file and every derived figure against the URL rows; return the state counts."""
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        states = dict(db.execute("SELECT state, count(*) FROM urls GROUP BY state").fetchall())
        outcomes = dict(db.execute("SELECT outcome, n FROM outcomes").fetchall())
        settled = "SELECT outcome, count(*) FROM urls WHERE state = 'done' GROUP BY 1"
        assert outcomes == dict(db.execute(settled).fetchall())
        rows = db.execute(
            "SELECT a.authority, a.queued, a.in_flight, a.done, a.eligible_at,"
            " (SELECT count(*) FROM urls u WHERE u.authority = a.authority AND state = 'queued'),"
            " (SELECT count(*) FROM urls u WHERE u.authority = a.authority AND state = 'in_flight'),"
            " (SELECT count(*) FROM urls u WHERE u.authority = a.authority AND state = 'done'),"
            " (SELECT min(not_before) FROM urls u WHERE u.authority = a.authority AND state = 'queued')"
            " FROM authorities a"
        ).fetchall()
        for _, queued, in_flight, done, eligible, *truth in rows:
            assert [queued, in_flight, done, eligible] == truth  # nothing parked here
        return {state: int(n) for state, n in states.items()}
    finally:
        db.close()


def test_a_frontier_killed_mid_write_stays_consistent(tmp_path: Path) -> None:
    path = tmp_path / "frontier.sqlite3"
    for pause in (0.0, 0.15, 0.3):
        worker = subprocess.Popen(
            [sys.executable, "-c", FRONTIER_WORKER, str(path)], stdout=subprocess.PIPE, text=True
        )
        assert worker.stdout is not None and worker.stdout.readline() == "going\n"
        time.sleep(pause)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        states = consistency(path)
        assert states["done"] >= 40 and states.get("in_flight", 0) <= 1

    async def resume(f: SQLiteFrontier) -> None:
        before = await f.counts()
        assert await f.recover() == before["in_flight"]
        assert (await f.counts())["in_flight"] == 0

    run(resume, path)
    consistency(path)


def read_warc(path: Path) -> list[Any]:
    """(type, headers, block) of each record that reads back, stopping at a torn end."""
    records = []
    with open(path, "rb") as stream:
        try:
            for record in ArchiveIterator(stream):
                records.append((record.rec_type, record.rec_headers, record.content_stream().read()))
        except Exception:  # a torn last member: everything before it was read
            pass
    return records


def test_warc_pairs_read_back_with_their_blocks(tmp_path: Path) -> None:
    at = 1_700_000_000.123456
    with WarcWriter(tmp_path, info={"robots": "crawler; roles: archiver"}) as writer:
        writer.write(
            "gemini://a.example/",
            b"gemini://a.example/\r\n",
            b"20 text/gemini\r\n# Hi\n",
            "gemini",
            at,
            "::1",
        )
        writer.write("gopher://c.example/7s%09x", b"s\tx\r\n", b"iHi\tfake\t(NULL)\t0\r\n.\r\n", "gopher", at)
    (path,) = writer.paths
    assert path.parent == tmp_path and path.name.startswith("manners-") and path.name.endswith(".warc.gz")
    records = read_warc(path)
    assert [r[0] for r in records] == ["warcinfo", "request", "response", "request", "response"]
    info = records[0][2].decode()
    assert "software: manners/" in info and "robots: crawler; roles: archiver" in info
    assert records[0][1].protocol == "WARC/1.1"
    expected = [
        ("application/gemini; msgtype=request", b"gemini://a.example/\r\n"),
        ("application/gemini; msgtype=response", b"20 text/gemini\r\n# Hi\n"),
        ("application/gopher; msgtype=request", b"s\tx\r\n"),
        ("application/gopher; msgtype=response", b"iHi\tfake\t(NULL)\t0\r\n.\r\n"),
    ]
    assert [(h.get_header("Content-Type"), block) for _, h, block in records[1:]] == expected
    request, response = records[1][1], records[2][1]
    assert request.get_header("WARC-Concurrent-To") == response.get_header("WARC-Record-ID")
    assert response.get_header("WARC-Concurrent-To") == request.get_header("WARC-Record-ID")
    assert response.get_header("WARC-Target-URI") == "gemini://a.example/"
    assert response.get_header("WARC-Date") == "2023-11-14T22:13:20.123456Z"
    assert response.get_header("WARC-IP-Address") == "::1"
    assert records[3][1].get_header("WARC-IP-Address") is None
    assert response.get_header("WARC-Block-Digest") and response.get_header("WARC-Payload-Digest")


def test_warc_files_rotate_and_a_new_writer_never_appends(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, prefix="run", max_size=2000) as writer:
        for i in range(10):
            writer.write(
                f"gopher://c.example/0{i}", b"%d\r\n" % i, bytes(range(256)) * 2, "gopher", time.time()
            )
    assert len(writer.paths) > 2
    sizes = {path: path.stat().st_size for path in writer.paths}
    for path in writer.paths:
        assert read_warc(path)[0][0] == "warcinfo"
    blocks = [r[2] for path in writer.paths for r in read_warc(path) if r[0] == "request"]
    assert blocks == [b"%d\r\n" % i for i in range(10)]
    with WarcWriter(tmp_path, prefix="run") as again:
        again.write("gopher://c.example/0x", b"x\r\n", b"x", "gopher", time.time())
    assert again.paths[0] not in sizes
    assert {path: path.stat().st_size for path in writer.paths} == sizes


WARC_WORKER = """
import sys, time
from pathlib import Path
from manners.crawl.warc import WarcWriter

writer = WarcWriter(Path(sys.argv[1]))
n = 0
while True:
    writer.write(f"gemini://a.example/{n}", f"gemini://a.example/{n}\\r\\n".encode(),
                 b"20 text/plain\\r\\n" + str(n).encode() * 20000, "gemini", time.time())
    n += 1
    print(n, flush=True)
"""


def test_a_warc_killed_mid_write_keeps_every_earlier_record(tmp_path: Path) -> None:
    worker = subprocess.Popen(
        [sys.executable, "-c", WARC_WORKER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None
    while int(worker.stdout.readline()) < 30:
        pass
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    printed = worker.stdout.read().split()
    written = int(printed[-1]) if printed else 30  # pairs known complete (fsynced) before the kill
    (path,) = tmp_path.glob("*.warc.gz")
    records = read_warc(path)
    assert records[0][0] == "warcinfo"
    check_pairs(records[1:], written)
    with WarcWriter(tmp_path) as again:  # the resumed run: a new file, the torn one untouched
        again.write("gemini://a.example/", b"gemini://a.example/\r\n", b"20 \r\n", "gemini", time.time())
    assert len(list(tmp_path.glob("*.warc.gz"))) == 2
    assert len(read_warc(again.paths[0])) == 3


def check_pairs(pairs: list[Any], complete: int) -> None:
    """The first ``complete`` pairs are whole; what follows them is at most one torn pair."""
    assert 2 * complete <= len(pairs) <= 2 * complete + 2
    for i, (kind, headers, block) in enumerate(pairs[: 2 * complete]):
        n = i // 2
        assert kind == ("request", "response")[i % 2]
        assert headers.get_header("WARC-Target-URI") == f"gemini://a.example/{n}"
        assert headers.get_header("Content-Type") == f"application/gemini; msgtype={kind}"
        expected = f"gemini://a.example/{n}\r\n".encode() if kind == "request" else None
        assert block == (expected or b"20 text/plain\r\n" + str(n).encode() * 20000)


def test_a_warc_cut_anywhere_keeps_the_records_before_the_cut(tmp_path: Path) -> None:
    ends = []
    with WarcWriter(tmp_path / "w") as writer:
        for n in range(6):
            writer.write(f"gemini://a.example/{n}", f"gemini://a.example/{n}\r\n".encode(),
                         b"20 text/plain\r\n" + str(n).encode() * 20000, "gemini", time.time())  # fmt: skip
            ends.append(writer.paths[0].stat().st_size)
    data = writer.paths[0].read_bytes()
    for cut in range(ends[0] - 1, len(data), 37):
        torn = tmp_path / "torn.warc.gz"
        torn.write_bytes(data[:cut])
        check_pairs(read_warc(torn)[1:], sum(end <= cut for end in ends))


@pytest.mark.quick
def test_page_log_writes_one_valid_utf8_object_per_line(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    with PageLog(path) as log:
        log.write({"url": "gemini://a.example/", "title": "Caf\xe9 \u2603", "links": ("x", "y")})
        log.write({"url": "gopher://c.example/", "title": b"bad \xff byte", "display": "raw \udcff"})
    lines = path.read_bytes().decode("utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [
        {"url": "gemini://a.example/", "title": "Caf\xe9 \u2603", "links": ["x", "y"]},
        {"url": "gopher://c.example/", "title": "bad \\xff byte", "display": "raw \\xff"},
    ]


def test_page_log_cuts_a_torn_last_line_when_reopened(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    path.write_bytes(b'{"url": "a"}\n{"url": "b", "tit')
    with PageLog(path) as log:
        assert log.cut == len(b'{"url": "b", "tit')
        log.write({"url": "b"})
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"url": "a"}, {"url": "b"}]
    path.write_bytes(b'{"url": "only half')
    PageLog(path).close()
    assert path.read_bytes() == b""
    path.write_bytes(b'{"url": "a"}\n')
    with PageLog(path) as log:
        assert log.cut == 0
    assert path.read_bytes() == b'{"url": "a"}\n'


def test_warc_bodies_are_gzip_members_each(tmp_path: Path) -> None:
    with WarcWriter(tmp_path) as writer:
        writer.write("gemini://a.example/", b"gemini://a.example/\r\n", b"20 \r\n", "gemini", time.time())
    data = writer.paths[0].read_bytes()
    assert data.count(b"\x1f\x8b\x08") >= 3  # warcinfo, request, response: separately decompressible
    assert gzip.decompress(data).count(b"WARC/1.1\r\n") == 3


def test_changes_asked_for_together_share_a_commit_in_order(tmp_path: Path) -> None:
    """lease and done are asked for when called: a page settled and the next lease asked for in
    the same turn are applied in that order (the lease sees the settled page's links)."""

    async def test(f: SQLiteFrontier) -> None:
        await f.add(A + "/", 0)
        first = await f.lease(A, "me", 60)
        assert first is not None
        settled = f.done(first.url, "fetched", [A + "/next"], depth=1)
        asked = f.lease(A, "me", 60)  # before the settling is awaited
        await settled
        assert await asked == Lease(A + "/next", 1, 0, A + "/", 0)
        assert await f.counts() == {"queued": 0, "in_flight": 1, "done": 1, "fetched": 1}

    run(test, tmp_path / "f.sqlite3")


def test_a_failing_change_fails_only_its_own_caller(tmp_path: Path) -> None:
    def strict(url: str) -> str:
        if "bad" in url:
            raise ValueError(f"no authority in {url}")
        return authority(url)

    async def main() -> None:
        f = SQLiteFrontier(tmp_path / "f.sqlite3", authority_of=strict)
        try:
            await f.add(A + "/", 0)
            lease = await f.lease(A, "me", 60)
            assert lease is not None
            good = f.done(lease.url, "fetched", [A + "/1"])
            bad = f.add_many(["gemini://bad/"], 0)  # the same turn: the same transaction at first
            results = await asyncio.gather(good, bad, return_exceptions=True)
            assert results[0] == 1  # the one new link
            assert isinstance(results[1], ValueError)
            assert await f.counts() == {"queued": 1, "in_flight": 0, "done": 1, "fetched": 1}
        finally:
            await f.close()

    asyncio.run(main())


@pytest.mark.quick
def test_close_commits_what_was_asked_for(tmp_path: Path) -> None:
    async def main() -> None:
        f = open_frontier(tmp_path / "f.sqlite3")
        asked = f.add_many([A + "/1", A + "/2"], 0)
        await f.close()
        assert await asked == [A + "/1", A + "/2"]
        again = open_frontier(tmp_path / "f.sqlite3")
        assert (await again.counts())["queued"] == 2
        await again.close()

    asyncio.run(main())
