"""``pages.jsonl``: one JSON object per settled URL, for people and scripts; and the ledger.

Lines are appended and flushed one at a time, so a reader tailing the file sees whole lines
except, at worst, the one being written.  A process killed mid-line leaves a torn last line;
when the log is opened again (a resumed crawl), that partial line is cut off, back to the last
newline, before anything is appended, so the file stays one valid object per line.  The torn
URL was still in flight in the frontier, so the resumed crawl settles it again and writes its line.

Output is ASCII JSON (``ensure_ascii``): every character past ASCII, C1 and bidi controls
(U+009B, U+202E) among them, is a ``\\u`` escape, so a terminal that ``cat``s the file never
gets a control sequence from a server.  Network text may hold bytes that are not UTF-8:
``bytes`` values are decoded with backslash escapes, and strings carrying lone surrogates
(``surrogateescape`` decoding) get the same treatment, so ``\\xff`` appears as the four
characters ``\\xff``, as in every ``--json`` output (:func:`manners.terminal.readable`).
Timestamps are RFC 3339 UTC with milliseconds (:func:`manners.vocabulary.timestamp`) and
statuses integers or null, as there too.  The file is opened without following a symlink
(``outdir``).

The ledger (``requests-WORKER.jsonl``, :class:`Ledger`) is the same kind of file, one line per
request, written and flushed *before* the request leaves: a request whose answer never came
back (its worker killed mid-fetch) is on record all the same, for ``manners crawl audit``.
It also holds ``lease-lost`` lines (:meth:`Ledger.event`): no request, a lease the worker lost.

Rotation: a crawl that never ends (``--revisit``) must not grow one file for ever, so each log
is a series, ``NAME.jsonl`` then ``NAME.00001.jsonl``, ``NAME.00002.jsonl``...; :meth:`PageLog.rotate`
closes the file (fsynced) and starts the next number.  A log opened again (a resumed crawl) goes
on in the last file of its series.  :func:`log_files` lists a directory's logs in order, each
series from its first file to its last, for whoever reads them all (``manners crawl audit``).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, Literal

from ..terminal import readable
from ..vocabulary import timestamp
from .outdir import open_nofollow
from .urls import authority

#: A crawl's directory's logs: every worker's ledger, and every pages file (``pages.jsonl`` is
#: a single-process crawl's), with the numbered files each rolled on to (``pages.00001.jsonl``,
#: ``requests-WORKER.00001.jsonl``: ``log_files`` lists each series in order).
LEDGERS = ("requests.jsonl", "requests-*.jsonl", "requests.*.jsonl")
PAGES = ("pages.jsonl", "pages-*.jsonl", "pages.*.jsonl")
#: A log's name: its series' stem and, past the first file, its number (``pages.00002.jsonl``).
_NAME = re.compile(r"(?P<stem>.+?)(?:\.(?P<number>[0-9]{5,}))?\.jsonl")


def series_of(path: Path) -> tuple[str, int]:
    """A log file's series (the stem, ``pages`` or ``requests-WORKER``) and its number in it (0:
    the first file, ``NAME.jsonl``)."""
    found = _NAME.fullmatch(path.name)
    if found is None:
        return path.name, 0
    return found["stem"], int(found["number"] or 0)


def numbered(first: Path, number: int) -> Path:
    """The file ``number`` of the series that ``first`` (``NAME.jsonl``) begins."""
    stem, _ = series_of(first)
    return first if number == 0 else first.with_name(f"{stem}.{number:05d}.jsonl")


def log_files(directory: Path, patterns: Iterable[str]) -> list[Path]:
    """The files of ``directory`` matching ``patterns`` (globs), each series in the order it was
    written, its first file then the numbered ones, so records read in this order are in the
    order each writer wrote them."""
    found = {p for pattern in patterns for p in directory.glob(pattern) if p.is_file()}
    return sorted(found, key=lambda p: (series_of(p), p.name))


class PageLog:
    """Appends records to ``path``, cutting a torn last line first (see the module docstring).

    ``path`` names the series (``NAME.jsonl``); the records go to its last file, ``self.path``,
    and from :meth:`rotate` on to the next.  ``paths``: the files this log has written to."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        stem, _ = series_of(path)
        taken = [n for p in path.parent.glob(f"{glob_escape(stem)}.*.jsonl") if (n := _number(p, stem))]
        self._first = path
        self._number = max(taken, default=0)
        self.paths: list[Path] = []
        self.cut = self._open()  # bytes dropped from a torn last line, for the record

    def _open(self) -> int:
        path = numbered(self._first, self._number)
        fd = open_nofollow(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        self._out: BinaryIO = os.fdopen(fd, "r+b")  # kept open; closed in close()
        self.path = path
        self.paths.append(path)
        self.size = self._out.seek(0, os.SEEK_END)
        cut = _cut_torn_line(self._out)
        self.size -= cut
        return cut

    def rotate(self) -> Path:
        """Go on in the next file of the series, the last one closed (fsynced); returns the new
        file.  OSError when it cannot be made: the records go on in this one.  A file that holds
        nothing yet is kept on: a rotation never leaves an empty file behind."""
        if self.size == 0 and not self._out.closed:
            return self.path
        done = self._out
        self._number += 1
        try:
            self._open()
        except OSError:
            self._number -= 1
            raise
        if not done.closed:
            done.flush()
            os.fsync(done.fileno())
            done.close()
        return self.path

    def write(self, record: dict[str, object]) -> None:
        """Append ``record`` as one line and flush it."""
        try:
            line = json.dumps(record)
        except TypeError:  # bytes in it
            line = ""
        if not line or "\\ud" in line:  # or a surrogate: perhaps a lone one, from bytes not UTF-8
            line = json.dumps(readable(record))
        data = line.encode("ascii") + b"\n"
        self._out.write(data)
        self._out.flush()
        self.size += len(data)

    def close(self) -> None:
        if not self._out.closed:
            self._out.flush()
            os.fsync(self._out.fileno())
            self._out.close()

    def __enter__(self) -> PageLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Ledger:
    """A worker's ``requests-WORKER.jsonl``: :meth:`note` each request just before it leaves.

    One line a request, its keys in this order: ``at`` (RFC 3339 UTC, milliseconds), ``t`` (the
    same moment, epoch seconds), ``authority`` (``scheme://host:port``), ``url`` (the URL, for
    Gopher the selector's URL), ``kind`` (page, robots or caps), ``worker``, ``lease`` (the
    lease's token; null for robots.txt), ``spacing`` (the seconds this worker keeps between
    requests to the authority then; null when unknown) and ``not_before`` (the end, epoch
    seconds, of a wait the server asked for, 44 or Retry-After, that this request is the first
    of the worker's to honour; else null).  A robots line adds ``source``: ``fetched`` (this
    request fetched it); a robots.txt copy the worker found in the shared cache, fetched by
    another worker or an earlier run, is written by :meth:`robots_copy` as a robots line with
    ``source`` ``cache``, the copy's ``fetched_at`` and ``expires_at``: no request was made, but
    the pages that follow were decided under a file read in time (``manners crawl audit``)."""

    def __init__(self, path: Path, worker: str) -> None:
        self.path = path
        self.worker = worker
        self._log = PageLog(path)

    def note(
        self,
        url: str,
        kind: Literal["page", "robots", "caps"],
        lease: str | None,
        spacing: float | None,
        not_before: float | None,
    ) -> None:
        now = time.time()
        line = {"at": timestamp(now), "t": now, "authority": authority(url), "url": url, "kind": kind}
        fields = {"worker": self.worker, "lease": lease, "spacing": spacing, "not_before": not_before}
        self._log.write({**line, **fields, **({"source": "fetched"} if kind == "robots" else {})})

    @property
    def paths(self) -> list[Path]:
        return self._log.paths

    def rotate(self) -> Path:
        """Go on in the next file of this worker's ledger (``requests-WORKER.00001.jsonl``...)."""
        self.path = self._log.rotate()
        return self.path

    def event(self, url: str, kind: Literal["lease-lost"], lease: str | None, reason: str) -> None:
        """A line that is no request: ``kind`` ``lease-lost`` when the worker learns that the lease
        ``lease`` on ``url`` is no longer its own (renewal found it gone, a slot claim or a settling
        was refused) and drops that URL's work.  Keys: ``at``, ``t``, ``authority``, ``url``,
        ``kind``, ``worker``, ``lease``, ``reason``; ``audit`` counts no request for it, and
        labels with it a repeat of ``url`` by another worker."""
        now = time.time()
        line = {"at": timestamp(now), "t": now, "authority": authority(url), "url": url, "kind": kind}
        self._log.write({**line, "worker": self.worker, "lease": lease, "reason": reason})

    def close(self) -> None:
        self._log.close()

    def robots_copy(self, url: str, auth: str, fetched_at: float, expires_at: float) -> None:
        """A robots.txt copy (``url``) taken from the cache, not fetched, for the pages of ``auth``:
        written once per copy, before the first request it allows (see the class docstring)."""
        now = time.time()
        self._log.write(
            {"at": timestamp(now), "t": now, "authority": auth, "url": url, "kind": "robots",
             "worker": self.worker, "lease": None, "spacing": None, "not_before": None, "source": "cache",
             "fetched_at": timestamp(fetched_at), "expires_at": timestamp(expires_at)}
        )  # fmt: skip


def glob_escape(text: str) -> str:
    """``text`` as a glob that matches it alone."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def _number(path: Path, stem: str) -> int:
    """``path``'s number in the series ``stem`` (0 when it is not a numbered file of it)."""
    their_stem, number = series_of(path)
    return number if their_stem == stem else 0


def _cut_torn_line(handle: BinaryIO) -> int:
    """Truncate the file after its last newline if it does not end with one; return bytes cut."""
    size = handle.seek(0, os.SEEK_END)
    end = size
    while end > 0:
        start = max(0, end - 65536)
        handle.seek(start)
        chunk = handle.read(end - start)
        if end == size and chunk.endswith(b"\n"):
            return 0
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            keep = start + newline + 1
            break
        end = start
    else:
        keep = 0
    handle.truncate(keep)
    return size - keep
