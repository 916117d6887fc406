"""``--follow``: the access logs read on as the server appends to them, as ``tail -F`` does.

A server writes its log while ``manners watch --follow`` judges it, and rotates it under it.
So each LOG is polled (every ``poll`` seconds: no inotify, no dependency) and read on from where
it was, line by line, in the same form as :func:`manners.watch.sources.lines` gives (a line's
number from 1, its end of line removed, bytes that are not UTF-8 replaced, None for a line
longer than :data:`~manners.watch.sources.MAX_LINE` bytes), so the parsers see the same input:

- First, what there is: each LOG's rotated siblings, oldest first, read as sources.py reads them
  (gzip too), then the LOG itself (``start_at_end`` skips both and begins at the LOG's end,
  keeping the true line numbers).
- A line is given only once its line feed is written: a log that ends mid-line is held until
  the rest comes.  A part longer than MAX_LINE is given at once as an overlong line (None), and
  the rest of it skipped.
- Rotation by rename (``access.log`` renamed ``access.log.1``, a new ``access.log`` created): the
  renamed file is read to its end, then the new one from its start (numbers from 1 again).  A
  server may write a little more to the renamed file before it reopens its log, so that one is
  still read until it has not grown for :data:`LINGER` seconds since the rename was seen; then
  a last line without a line feed is given as sources.py gives it.
- Truncated in place (``copytruncate``): read again from its start (numbers from 1 again).
- A LOG that does not exist yet is waited for, then read from its start.

Lines keep the name of the LOG they were read as (the renamed file's too: the lines were
``access.log``'s when the server wrote them).  A binary file is :class:`LogError`, as in
sources.py.
"""

from __future__ import annotations

import asyncio
import io
import os
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from manners.terminal import safe
from manners.watch.logs import DETECT_LINES, Format, Hit
from manners.watch.sources import (
    GZIP_MAGIC,
    MAX_LINE,
    SNIFF,
    FileRead,
    LogError,
    LogReader,
    lines,
    rotated,
    telling,
)

__all__ = ["BATCH", "LINGER", "FollowedLog", "Follower", "Line", "follow"]

LINGER = 5.0  # seconds a renamed log is still read after it last grew
CHUNK = 1 << 20  # bytes read at a time
BATCH = 4096  # lines of a rotated sibling given at a time


class Line(NamedTuple):
    """One line of a log: the file it was read as, its number there from 1, and its text (None:
    longer than MAX_LINE bytes), as :func:`manners.watch.sources.lines` gives it."""

    file: str
    number: int
    text: str | None


def _text(raw: bytes) -> str | None:
    if len(raw) > MAX_LINE:
        return None
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", "replace")


class _Tail:
    """One open file read on from where it was: its identity, offset, line count and the part
    of a line not yet ended."""

    def __init__(self, name: str, path: Path, handle: io.FileIO, ident: tuple[int, int]) -> None:
        self.name = name
        self.path = path
        self.handle = handle
        self.ident = ident
        self.pos = 0
        self.number = 0
        self.partial = b""
        self.skipping = False  # in the rest of an overlong line
        self.compressed = False
        self.grew = time.monotonic()

    @classmethod
    def open(cls, name: str, path: Path, at_end: bool = False) -> _Tail | None:
        """``path`` opened (None when it does not exist), at its start or at its last line's start."""
        try:
            handle = open(path, "rb", buffering=0)  # noqa: SIM115 (kept open while followed)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise LogError(f"{safe(str(path))} is a directory, not an access log.") from None
        except OSError as exc:
            raise LogError(f"{safe(str(path))} cannot be read: {safe(exc.strerror or str(exc))}.") from None
        st = os.fstat(handle.fileno())
        tail = cls(name, path, handle, (st.st_dev, st.st_ino))
        if handle.read(2) == GZIP_MAGIC:
            tail.compressed = True  # read whole by sources.lines, never appended to
        handle.seek(0)
        if at_end and not tail.compressed:
            tail._skip_to_end()
        return tail

    def _skip_to_end(self) -> None:
        """Count the lines there are and stand at the start of the last, unended one."""
        start = 0
        while chunk := self.handle.read(CHUNK):
            self.number += chunk.count(b"\n")
            end = chunk.rfind(b"\n")
            if end >= 0:
                start = self.pos + end + 1
            self.pos += len(chunk)
        self.handle.seek(start)
        self.pos = start

    def close(self) -> None:
        self.handle.close()

    def size(self) -> int:
        return os.fstat(self.handle.fileno()).st_size

    def restart(self) -> None:
        """Truncated in place: from the start again."""
        self.handle.seek(0)
        self.pos = self.number = 0
        self.partial = b""
        self.skipping = False

    def read(self) -> Iterator[list[Line]]:
        """The lines ended since the last read, a list per chunk read."""
        if self.compressed:
            if self.pos == 0:
                self.pos = 1
                batch: list[Line] = []
                for number, text in lines(self.path):
                    batch.append(Line(self.name, number, text))
                    if len(batch) >= BATCH:
                        yield batch
                        batch = []
                yield batch
            return
        while chunk := self.handle.read(CHUNK):
            if self.pos < SNIFF and b"\0" in chunk[: SNIFF - self.pos]:
                raise LogError(f"{safe(str(self.path))} is a binary file, not an access log.")
            self.pos += len(chunk)
            self.grew = time.monotonic()
            yield self._split(chunk)

    def _split(self, chunk: bytes) -> list[Line]:
        data = self.partial + chunk if self.partial else chunk
        found: list[Line] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if self.skipping:
                self.skipping = False
            else:
                self.number += 1
                found.append(Line(self.name, self.number, _text(data[start:end])))
            start = end + 1
        rest = data[start:]
        if self.skipping:
            rest = b""
        elif len(rest) > MAX_LINE:  # overlong before its end: given now, the rest skipped
            self.number += 1
            found.append(Line(self.name, self.number, None))
            self.skipping = True
            rest = b""
        self.partial = rest
        return found

    def finish(self) -> list[Line]:
        """The file will grow no more: a last line without a line feed, as sources.py gives it."""
        if self.partial and not self.skipping:
            self.number += 1
            last = Line(self.name, self.number, _text(self.partial))
            self.partial = b""
            return [last]
        return []


class Follower:
    """The lines of each LOG in ``paths`` as they are written: iterate :meth:`batches` (or use
    :func:`follow`).  See the module's docstring for rotation, truncation and partial lines."""

    def __init__(
        self,
        paths: Sequence[str | Path],
        *,
        poll: float = 0.25,
        start_at_end: bool = False,
        linger: float = LINGER,
    ) -> None:
        self.poll = poll
        self.start_at_end = start_at_end
        self.linger = linger
        self.paths: list[Path] = []
        seen: set[Path] = set()
        for given in paths:
            path = Path(given)
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                self.paths.append(path)
        self.tails: dict[Path, _Tail | None] = {}
        self.retired: list[_Tail] = []  # renamed away, read on a while

    async def batches(self) -> AsyncIterator[list[Line]]:
        """The lines, a list at a time, in order for each file; an empty list each time every
        file has been read to its end (once after the first pass, then after each round that
        found lines): the moment to judge again.  Never ends; LogError for a file that is no
        text."""
        for path in self.paths:
            if not self.start_at_end:
                for member in rotated(path):
                    if member == path:
                        continue
                    batch: list[Line] = []
                    for number, text in lines(member):
                        batch.append(Line(str(member), number, text))
                        if len(batch) >= BATCH:
                            yield batch
                            batch = []
                    if batch:
                        yield batch
            tail = _Tail.open(str(path), path, at_end=self.start_at_end)
            self.tails[path] = tail
            if tail is not None:
                for batch in tail.read():
                    if batch:
                        yield batch
                    await asyncio.sleep(0)
        yield []
        while True:
            found = False
            for batch in self._round():
                if batch:
                    found = True
                    yield batch
                await asyncio.sleep(0)
            if found:
                yield []
            await asyncio.sleep(self.poll)

    def _round(self) -> Iterator[list[Line]]:
        """One poll of every file."""
        for path in self.paths:
            yield from self._poll(path)
        now = time.monotonic()
        for old in list(self.retired):
            yield from old.read()
            if now - old.grew >= self.linger:
                yield old.finish()
                old.close()
                self.retired.remove(old)

    def _poll(self, path: Path) -> Iterator[list[Line]]:
        tail = self.tails.get(path)
        if tail is None:
            tail = self.tails[path] = _Tail.open(str(path), path)
            if tail is None:
                return  # not there yet
        yield from tail.read()
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return  # renamed away, the new one not made yet: the old one is read on meanwhile
        if (st.st_dev, st.st_ino) != tail.ident:  # rotated: the old one to its end, then the new
            yield from tail.read()
            tail.grew = time.monotonic()  # the server may not have reopened its log yet
            self.retired.append(tail)
            fresh = self.tails[path] = _Tail.open(str(path), path)
            if fresh is not None:
                yield from fresh.read()
        elif tail.size() < tail.pos:  # truncated in place
            tail.restart()
            yield from tail.read()

    def close(self) -> None:
        for tail in [*self.tails.values(), *self.retired]:
            if tail is not None:
                tail.close()
        self.tails.clear()
        self.retired.clear()


async def follow(
    paths: Sequence[str | Path], *, poll: float = 0.25, start_at_end: bool = False
) -> AsyncIterator[Line]:
    """Each line of the LOGs in ``paths``, as it is written (see :class:`Follower`); never ends."""
    follower = Follower(paths, poll=poll, start_at_end=start_at_end)
    try:
        async for batch in follower.batches():
            for line in batch:
                yield line
    finally:
        follower.close()


@dataclass
class FollowedLog(LogReader):
    """Followed lines read into requests as :class:`LogReader` reads a file: each file's format
    found from its first lines (or ``fmt``), the same counts in :attr:`files` and the same
    unparseable lines in :attr:`shown`, LogError for a file that is no log.  A file's lines
    wait until its format can be told: DETECT_LINES lines, or the moment the follower has
    caught up (its empty batch: pass ``settle=True``).  A new file under a LOG's name (rotation,
    truncation) keeps that LOG's format and counts."""

    _read: dict[str, tuple[Format, FileRead]] = field(default_factory=dict, repr=False)
    _heads: dict[str, list[Line]] = field(default_factory=dict, repr=False)

    def hits(self, batch: Sequence[Line], *, settle: bool = False) -> list[Hit]:
        """The requests among ``batch``'s lines (and those held until now)."""
        found: list[Hit] = []
        for line in batch:
            known = self._read.get(line.file)
            if known is not None:
                self._found(known[0], known[1], line, found)
                continue
            head = self._heads.setdefault(line.file, [])
            head.append(line)
            if sum(telling(t) for _, _, t in head) >= DETECT_LINES:
                self._decide(line.file, found)
        if settle:
            for name in list(self._heads):
                self._decide(name, found)
        return found

    def _decide(self, name: str, found: list[Hit]) -> None:
        head = self._heads[name]
        texts = [t for _, _, t in head if t is not None and t.strip()]
        overlong = any(t is None for _, _, t in head)
        if not texts and not overlong:
            return  # empty lines only: nothing to tell the format by yet
        fmt = self._format(Path(name), texts, overlong)
        assert fmt is not None  # None only for a file with no line
        summary = FileRead(name, fmt.name)
        self.files.append(summary)
        self._read[name] = (fmt, summary)
        del self._heads[name]
        for line in head:
            self._found(fmt, summary, line, found)

    def _found(self, fmt: Format, summary: FileRead, line: Line, found: list[Hit]) -> None:
        """One line, as LogReader.read takes it."""
        hit = self._take(fmt, summary, line.file, line.number, line.text)
        if hit is not None:
            found.append(hit)
