"""``--follow`` (manners.watch.follow), in process: logs read on as lines are written.

The first pass is sources.py's reading (rotated and gzipped siblings, CRLF, bad bytes, overlong
lines); then lines appended in pieces, a line ended later, rotation by rename with a new file
(and the server still writing to the renamed one a moment), truncation in place, a log created
after following began, following from the end.  Each asserts the exact sequence of (file, number,
text): no line lost, none given twice, no half line.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from manners.watch.follow import FollowedLog, Follower, Line, follow
from manners.watch.sources import MAX_LINE, LogError, LogReader, lines, rotated

pytestmark = pytest.mark.quick

POLL = 0.01
SETTLE = 0.15  # seconds nothing more may come after what was expected


class Collector:
    """A Follower read by a task of its own; the test waits for what it expects."""

    def __init__(self, *paths: Path, **options: object) -> None:
        options = {"poll": POLL, "linger": 0.3, **options}
        self.follower = Follower(paths, **options)  # type: ignore[arg-type]
        self.lines: list[Line] = []
        self.idle = 0  # empty batches: every file read to its end
        self.error: BaseException | None = None

    async def run(self) -> None:
        try:
            async for batch in self.follower.batches():
                if batch:
                    self.lines.extend(batch)
                else:
                    self.idle += 1
        except LogError as exc:
            self.error = exc

    async def until(self, count: int, timeout: float = 5.0) -> list[tuple[str, int, str | None]]:
        """The lines given so far, once there are ``count`` of them and then nothing more for a moment."""
        deadline = time.monotonic() + timeout
        while len(self.lines) < count and self.error is None:
            assert time.monotonic() < deadline, f"only {len(self.lines)} lines of {count}: {self.lines}"
            await asyncio.sleep(POLL)
        await asyncio.sleep(SETTLE)
        return [(Path(f).name, n, t) for f, n, t in self.lines]


def scenario(body: Callable[[Collector], Awaitable[None]], *paths: Path, **options: object) -> Collector:
    async def main() -> Collector:
        collector = Collector(*paths, **options)
        task = asyncio.create_task(collector.run())
        try:
            await body(collector)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            collector.follower.close()
        return collector

    return asyncio.run(main())


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as out:
        out.write(data)


def test_the_first_pass_reads_as_sources_does_and_holds_an_unended_last_line(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    (tmp_path / "access.log.2.gz").write_bytes(gzip.compress(b"two-a\ntwo-b\n"))
    (tmp_path / "access.log.1").write_bytes(b"one-a\r\n\none-\xffb\n" + b"x" * (MAX_LINE + 1) + b"\none-c")
    log.write_bytes(b"now-a\r\n" + b"y" * MAX_LINE + b"\n" + b"z" * (MAX_LINE + 1) + b"\r\nnow-b\nnow-c")
    expected = [
        (m.name, n, t) for m in rotated(log) for n, t in lines(m)
    ]  # what sources.py reads, the live file's unended "now-c" too

    async def body(c: Collector) -> None:
        got = await c.until(len(expected) - 1)
        assert got == expected[:-1]  # all but the unended line
        assert c.idle == 1  # caught up once
        append(log, b"\n")
        assert await c.until(len(expected)) == expected
        assert c.idle == 2

    scenario(body, log)


def test_appended_lines_in_pieces_are_given_whole_and_once(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b"a\n")

    async def body(c: Collector) -> None:
        assert await c.until(1) == [("access.log", 1, "a")]
        append(log, b"b\nc-first-ha")
        assert await c.until(2) == [("access.log", 1, "a"), ("access.log", 2, "b")]
        append(log, b"lf")
        await asyncio.sleep(SETTLE)
        assert len(c.lines) == 2  # never half a line
        append(log, b"\n\nd\n")
        assert await c.until(5) == [
            ("access.log", 1, "a"),
            ("access.log", 2, "b"),
            ("access.log", 3, "c-first-half"),
            ("access.log", 4, ""),
            ("access.log", 5, "d"),
        ]

    scenario(body, log)


def test_an_overlong_line_is_given_at_once_and_its_rest_skipped(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b"")

    async def body(c: Collector) -> None:
        append(log, b"q" * (MAX_LINE + 5))
        assert await c.until(1) == [("access.log", 1, None)]
        append(log, b"q" * 100)
        append(log, b"qq\nnext\n")
        assert await c.until(2) == [("access.log", 1, None), ("access.log", 2, "next")]

    scenario(body, log)


def test_rotation_by_rename_reads_the_old_to_its_end_then_the_new_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "access.log"

    async def body(c: Collector) -> None:
        server.write(b"1\n2\n3\n")
        await c.until(3)
        server.write(b"4\n")
        os.rename(log, tmp_path / "access.log.1")
        server.write(b"5\n")  # written after the rename, before the server reopens
        log.write_bytes(b"new-1\nnew-2\n")
        got = await c.until(7)
        assert got == [
            ("access.log", 1, "1"),
            ("access.log", 2, "2"),
            ("access.log", 3, "3"),
            ("access.log", 4, "4"),
            ("access.log", 5, "5"),
            ("access.log", 1, "new-1"),
            ("access.log", 2, "new-2"),
        ]
        server.write(b"6 late\n")  # still the old file: read while it lingers
        append(log, b"new-3\n")
        got = await c.until(9)
        assert sorted(got[7:]) == [("access.log", 3, "new-3"), ("access.log", 6, "6 late")]
        assert [line.file for line in c.lines] == [str(log)] * 9

    with open(log, "ab", buffering=0) as server:  # the server's own, kept across the rename
        scenario(body, log, linger=10.0)  # the late line comes well within


def test_a_renamed_log_that_ended_mid_line_gives_that_line_when_it_stops_growing(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b"a\nb-unended")

    async def body(c: Collector) -> None:
        assert await c.until(1) == [("access.log", 1, "a")]
        os.rename(log, tmp_path / "access.log.1")
        log.write_bytes(b"c\n")
        # the new file's line at once, the renamed one's unended line once it stopped growing
        got = await c.until(3)
        assert got == [("access.log", 1, "a"), ("access.log", 1, "c"), ("access.log", 2, "b-unended")]

    scenario(body, log, linger=0.5)


def test_the_log_renamed_away_and_created_later_loses_nothing(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b"a\n")

    async def body(c: Collector) -> None:
        await c.until(1)
        os.rename(log, tmp_path / "access.log.1")
        await asyncio.sleep(SETTLE)  # a few polls with no file at the path
        append(tmp_path / "access.log.1", b"b\n")
        await c.until(2)
        log.write_bytes(b"c\n")
        assert await c.until(3) == [("access.log", 1, "a"), ("access.log", 2, "b"), ("access.log", 1, "c")]

    scenario(body, log)


def test_a_log_truncated_in_place_is_read_again_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b"first-1\nfirst-2\nfirst-3\n")

    async def body(c: Collector) -> None:
        await c.until(3)
        with open(log, "r+b") as f:  # copytruncate's truncation, then the server writes on
            f.truncate(0)
        append(log, b"second-1\n")
        assert (await c.until(4))[3:] == [("access.log", 1, "second-1")]
        append(log, b"second-2\n")
        assert (await c.until(5))[3:] == [("access.log", 1, "second-1"), ("access.log", 2, "second-2")]

    scenario(body, log)


def test_a_log_created_after_following_began_is_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "access.log"

    async def body(c: Collector) -> None:
        assert await c.until(0) == []
        assert c.idle == 1  # the first pass: nothing
        log.write_bytes(b"x\ny\n")
        assert await c.until(2) == [("access.log", 1, "x"), ("access.log", 2, "y")]

    scenario(body, log)


def test_start_at_end_skips_what_is_there_and_keeps_the_numbers(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    (tmp_path / "access.log.1").write_bytes(b"old\n")
    log.write_bytes(b"a\nb\nc-unen")

    async def body(c: Collector) -> None:
        assert await c.until(0) == []
        append(log, b"ded\nd\n")
        assert await c.until(2) == [("access.log", 3, "c-unended"), ("access.log", 4, "d")]

    scenario(body, log, start_at_end=True)


def test_several_logs_each_in_order(tmp_path: Path) -> None:
    gem, web = tmp_path / "gemini.log", tmp_path / "web.log"
    gem.write_bytes(b"g1\n")
    web.write_bytes(b"w1\n")

    async def body(c: Collector) -> None:
        assert await c.until(2) == [("gemini.log", 1, "g1"), ("web.log", 1, "w1")]
        append(web, b"w2\n")
        append(gem, b"g2\n")
        got = await c.until(4)
        assert sorted(got[2:]) == [("gemini.log", 2, "g2"), ("web.log", 2, "w2")]

    scenario(body, gem, web, gem)  # the same log given twice is read once


def test_a_binary_log_is_one_sentence(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b"")

    async def body(c: Collector) -> None:
        append(log, b"ok\n\x00\x01\x02")
        await c.until(1)
        assert str(c.error) == f"{log} is a binary file, not an access log."

    scenario(body, log)


def test_follow_gives_line_by_line(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b"a\n")

    async def main() -> list[Line]:
        got: list[Line] = []
        agen = follow([log], poll=POLL)
        got.append(await anext(agen))
        append(log, b"b\n")
        got.append(await anext(agen))
        await agen.aclose()
        return got

    assert asyncio.run(main()) == [Line(str(log), 1, "a"), Line(str(log), 2, "b")]


MOLLY = "2026-11-29T11:13:5{s}Z\t127.0.0.1\t20\tgemini://localhost/{p}\n"


def test_followed_lines_become_the_requests_logreader_reads(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    first = "".join(MOLLY.format(s=i, p=f"a{i}") for i in range(3)) + "garbage \x1b[2J\n"
    log.write_text(first)
    reader = FollowedLog([log])
    whole = LogReader([log])
    expected = list(whole)

    async def body(c: Collector) -> None:
        await c.until(4)
        assert reader.hits(c.lines[:4]) == []  # three requests and a bad line: too few to tell yet
        got = reader.hits([], settle=True)  # caught up: told by what there is
        assert got == expected and [h.target for h in got] == [f"gemini://localhost/a{i}" for i in range(3)]
        assert reader.files == whole.files and reader.shown == whole.shown
        append(log, MOLLY.format(s=9, p="later").encode() + b"\x07more\n")
        await c.until(6)
        later = reader.hits(c.lines[4:])
        assert [(h.target, h.line) for h in later] == [("gemini://localhost/later", 5)]
        assert reader.files[0].hits == 4 and reader.files[0].unparsed == 2

    scenario(body, log)


def test_a_followed_file_that_is_no_log_is_one_sentence(tmp_path: Path) -> None:
    reader = FollowedLog(["x.log"])
    lines_ = [Line("x.log", n, f"just some prose, line {n}") for n in range(1, 51)]
    with pytest.raises(
        LogError, match=r"^x\.log is not an access log manners reads: none of its first 50 lines"
    ):
        reader.hits(lines_)
