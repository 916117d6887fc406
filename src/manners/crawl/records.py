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
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import BinaryIO, Literal

from ..terminal import readable
from ..vocabulary import timestamp
from .outdir import open_nofollow
from .urls import authority


class PageLog:
    """Appends records to ``path``, cutting a torn last line first (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_nofollow(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        self._out: BinaryIO = os.fdopen(fd, "r+b")  # kept open; closed in close()
        self.cut = _cut_torn_line(self._out)  # bytes dropped from a torn last line, for the record

    def write(self, record: dict[str, object]) -> None:
        """Append ``record`` as one line and flush it."""
        try:
            line = json.dumps(record)
        except TypeError:  # bytes in it
            line = ""
        if not line or "\\ud" in line:  # or a surrogate: perhaps a lone one, from bytes not UTF-8
            line = json.dumps(readable(record))
        self._out.write(line.encode("ascii") + b"\n")
        self._out.flush()

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
