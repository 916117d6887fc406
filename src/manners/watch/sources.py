"""The access log files themselves: each LOG as given with its rotated siblings, line by line.

A server's log is rotated under it (``access.log.1``, ``access.log.2.gz``, or logrotate's
``dateext`` ``access.log-20261129.gz``), so one LOG names the whole history: the siblings are
read oldest first, then the file itself, gzip-compressed ones decompressed (known by their
first bytes, not their name).  A line longer than :data:`MAX_LINE` bytes is counted as
unparseable without being kept whole; bytes that are not UTF-8 become U+FFFD.  The format is
found per file (:func:`manners.watch.logs.detect`) unless one is forced.

Lines no format reads are counted, and the first few kept escaped for the terminal, never a
crash; a file that is not a log at all (binary, unreadable, or no line of its format among its
first lines) raises :class:`LogError`, whose message is one sentence.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from manners._core import LogScan, WatchFold
from manners.terminal import safe
from manners.watch.logs import DETECT_LINES, FORMATS, NOISE, Format, Hit, detect

__all__ = [
    "GZIP_MAGIC",
    "MAX_LINE",
    "SHOWN",
    "SNIFF",
    "FileRead",
    "LogError",
    "LogReader",
    "Unparsed",
    "lines",
    "rotated",
]

MAX_LINE = 16 * 1024  # bytes in a line; beyond, the line is unparseable (nginx's longest is 8 KiB)
SHOWN = 5  # unparseable lines kept to be shown
SHOWN_CHARS = 200  # characters of each
SNIFF = 8192  # bytes read to tell a text file from a binary one
CHUNK = 1 << 20  # bytes handed to the engine at a time (LogReader.feed)
GZIP_MAGIC = b"\x1f\x8b"


class LogError(Exception):
    """A LOG that cannot be read as an access log; the message is one sentence."""


@dataclass(frozen=True)
class Unparsed:
    """An unparseable line, where it was and its start escaped for a terminal."""

    file: str
    line: int
    text: str  # escaped (manners.terminal.safe), at most SHOWN_CHARS characters and an ellipsis


@dataclass
class FileRead:
    """What one file held."""

    path: str
    format: str | None  # None: the file had no line to tell
    lines: int = 0  # non-empty lines
    hits: int = 0  # requests
    noise: int = 0  # lines of the server's that record no request
    unparsed: int = 0  # lines no parser read, the overlong among them
    overlong: int = 0  # lines longer than MAX_LINE bytes


_ROTATED = r"(?:\.(?P<n>\d+)|-(?P<date>\d{8}(?:\d\d)?))(?:\.gz)?"


def rotated(path: Path) -> list[Path]:
    """The files of ``path``'s history, oldest first, ``path`` last (if it exists): logrotate's
    dated siblings (``-20261129``) by date, then its numbered ones (``.2.gz`` before ``.1``)."""
    pattern = re.compile(re.escape(path.name) + _ROTATED + r"\Z")
    dated: list[tuple[str, Path]] = []
    numbered: list[tuple[int, Path]] = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        m = pattern.match(entry.name)
        if m is None or not entry.is_file():
            continue
        if m["n"] is not None:
            numbered.append((int(m["n"]), entry))
        else:
            dated.append((m["date"], entry))
    found = [p for _, p in sorted(dated)] + [p for _, p in sorted(numbered, reverse=True)]
    return [*found, path] if path.exists() or not found else found


def _open(path: Path) -> BinaryIO:
    """``path`` opened for reading, decompressed if it is gzip; LogError if it cannot be."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 (returned open)
    except IsADirectoryError:
        raise LogError(f"{safe(str(path))} is a directory, not an access log.") from None
    except OSError as exc:
        raise LogError(f"{safe(str(path))} cannot be read: {safe(exc.strerror or str(exc))}.") from None
    if raw.read(2) == GZIP_MAGIC:
        raw.seek(0)
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    raw.seek(0)
    return raw


def lines(path: Path) -> Generator[tuple[int, str | None]]:
    """Each line of ``path`` (gzip decompressed) with its number from 1, its end of line removed,
    bytes that are not UTF-8 replaced; None in place of a line longer than MAX_LINE bytes.

    LogError when the file cannot be read, is binary (NUL bytes in its start) or is a broken gzip.
    """
    name = safe(str(path))
    with _open(path) as stream:
        compressed = isinstance(stream, gzip.GzipFile)
        try:
            if b"\0" in stream.peek(SNIFF)[:SNIFF]:  # type: ignore[attr-defined]
                raise LogError(f"{name} is a binary file, not an access log.")
            number = 0
            while chunk := stream.readline(MAX_LINE + 1):
                number += 1
                if len(chunk) > MAX_LINE and not chunk.endswith(b"\n"):
                    while chunk and not chunk.endswith(b"\n"):  # skip the rest of the line
                        chunk = stream.readline(MAX_LINE)
                    yield number, None
                    continue
                if chunk.endswith(b"\n"):
                    chunk = chunk[:-2] if chunk.endswith(b"\r\n") else chunk[:-1]
                if len(chunk) > MAX_LINE:  # the line feed was its MAX_LINE + 1st byte
                    yield number, None
                    continue
                yield number, chunk.decode("utf-8", "replace")
        except (OSError, EOFError, zlib.error) as exc:
            what = "a damaged gzip file" if compressed else "unreadable"
            raise LogError(f"{name} is {what}: {safe(str(exc))}.") from None


@dataclass
class LogReader:
    """The requests of every LOG in ``paths`` and their rotated siblings, in order, in their
    format (``fmt``, or each file's own): iterate it for the :class:`Hit` s.  What each file
    held is in :attr:`files`, the first SHOWN unparseable lines in :attr:`shown`."""

    paths: Sequence[str | Path]
    fmt: str | None = None
    siblings: bool = True
    files: list[FileRead] = field(default_factory=list)
    shown: list[Unparsed] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.fmt is not None and self.fmt not in FORMATS:
            names = ", ".join(FORMATS)
            raise LogError(f"{safe(self.fmt)} is no log format manners reads (it reads {names}).")

    @property
    def unparsed(self) -> int:
        return sum(f.unparsed for f in self.files)

    def order(self) -> list[Path]:
        """Every file to read, in order, each once."""
        found: list[Path] = []
        seen: set[Path] = set()
        for given in self.paths:
            path = Path(given)
            for member in rotated(path) if self.siblings else [path]:
                key = member.resolve()
                if key not in seen:
                    seen.add(key)
                    found.append(member)
        return found

    def __iter__(self) -> Iterator[Hit]:
        for path in self.order():
            yield from self.read(path)

    def read(self, path: Path) -> Iterator[Hit]:
        """The requests of one file (LogError before the first if it is no log)."""
        fmt, summary, head, numbered = self._head(path)
        if fmt is None:
            return
        for number, text in _chain(head, numbered):
            hit = self._take(fmt, summary, summary.path, number, text)
            if hit is not None:
                yield hit

    def feed(self, fold: WatchFold, since: float | None = None, until: float | None = None) -> int:
        """Every file's requests from ``since`` to ``until`` (None: unbounded) folded into
        ``fold`` by the engine, a chunk of bytes at a time: a log is millions of lines, and none
        of them crosses into Python.  The same counts, shown lines and LogError as iterating.
        Returns how many requests without a time were kept because bounds cannot apply to them."""
        untimed = 0
        for path in self.order():
            fmt, summary, _, numbered = self._head(path)
            numbered.close()
            if fmt is None:
                continue
            scan = LogScan(fmt.name)
            room = max(SHOWN - len(self.shown), 0)
            with _open(path) as stream:
                held = b""
                try:
                    while True:
                        chunk = stream.read(CHUNK)
                        data = held + chunk if held else chunk
                        used = scan.feed(fold, data, not chunk, summary.path, since, until, room)
                        held = data[used:]
                        if not chunk:
                            break
                except (OSError, EOFError, zlib.error) as exc:
                    what = "a damaged gzip file" if isinstance(stream, gzip.GzipFile) else "unreadable"
                    raise LogError(f"{safe(summary.path)} is {what}: {safe(str(exc))}.") from None
            summary.lines, summary.hits, summary.noise, summary.unparsed, summary.overlong, kept = scan.counts
            untimed += kept
            self.shown += [Unparsed(summary.path, number, _shown(text)) for number, text in scan.shown]
        return untimed

    def _head(
        self, path: Path
    ) -> tuple[Format | None, FileRead, list[tuple[int, str | None]], Generator[tuple[int, str | None]]]:
        """The format of ``path`` told from its first lines (LogError if it is no log), its
        summary (now in :attr:`files`), those lines and the rest of them."""
        numbered = lines(path)
        head: list[tuple[int, str | None]] = []
        filled = 0
        for number, text in numbered:
            head.append((number, text))
            filled += telling(text)
            if filled >= DETECT_LINES:
                break
        texts = [t for _, t in head if t is not None and t.strip()]
        fmt = self._format(path, texts, any(t is None for _, t in head))
        summary = FileRead(str(path), fmt.name if fmt else None)
        self.files.append(summary)
        return fmt, summary, head, numbered

    def _take(self, fmt: Format, summary: FileRead, name: str, number: int, text: str | None) -> Hit | None:
        """One line of file ``name`` read as ``fmt`` (None: longer than MAX_LINE), counted in
        ``summary``: the request it logs, if it logs one."""
        if text is None:
            summary.lines += 1
            summary.overlong += 1
            self._unparsed(summary, number, None)
            return None
        if not text or text.isspace():
            return None
        summary.lines += 1
        parsed = fmt.parse(text, name, number)
        if parsed is None:
            self._unparsed(summary, number, text)
            return None
        if parsed is NOISE:
            summary.noise += 1
            return None
        assert isinstance(parsed, Hit)
        summary.hits += 1
        return parsed

    def _format(self, path: Path, texts: list[str], overlong: bool) -> Format | None:
        name = safe(str(path))
        if self.fmt is not None:
            fmt = FORMATS[self.fmt]
            if texts and not any(fmt.parse(t, "", 0) is not None for t in texts):
                first = len(texts)
                raise LogError(f"{name} is not a {fmt.name} log: none of its first {first} lines is one.")
            return fmt
        if not texts:
            if overlong:  # lines, every one too long
                raise LogError(f"{name} is not an access log: its first lines are longer than any log's.")
            return None  # empty: nothing to read, nothing wrong
        found = detect(texts)
        if found is None:
            raise LogError(
                f"{name} is not an access log manners reads: none of its first {len(texts)} lines is "
                f"one of {', '.join(FORMATS)}."
            )
        return FORMATS[found]

    def _unparsed(self, summary: FileRead, number: int, text: str | None) -> None:
        """Count an unparseable line (None: an overlong one) and keep it escaped if among the first."""
        summary.unparsed += 1
        if len(self.shown) < SHOWN:
            self.shown.append(Unparsed(summary.path, number, _shown(text)))


def _shown(text: str | None) -> str:
    """An unparseable line as shown: escaped, cut (None: an overlong line, not kept)."""
    if text is None:
        return f"(a line longer than {MAX_LINE} bytes)"
    return safe(text[:SHOWN_CHARS]) + ("…" if len(text) > SHOWN_CHARS else "")


def telling(text: str | None) -> bool:
    """A line that counts towards telling a file's format: an overlong one (None) or one not blank."""
    return text is None or (text != "" and not text.isspace())


def _chain(
    head: list[tuple[int, str | None]], rest: Iterator[tuple[int, str | None]]
) -> Iterator[tuple[int, str | None]]:
    yield from head
    yield from rest
