"""The last requests a killed run made, read from its own files: which hosts may still be answering.

One process resuming a crawl must not ask a host again while its server may still be answering
the killed run's last request to it.  The frontier cannot say which hosts those are: it knows
which URLs were leased, not which had a request out, and a request's start joins its next
commit, which a kill may forestall.  At a kill mid-crawl almost every host at work had a URL
leased (1,485 of 4,400), most of them waiting for their turn with nothing out, and giving each a
request's deadline cost the resumed run 10-13 s, most of it on the biggest host, whose last page
had been answered but not yet settled.

The run's files can say.  The ledger has a line flushed before each request leaves (robots.txt's
and caps.txt's too), and the pages file a record once a page's answer is in; flushed, both
outlive a SIGKILL.  So a host whose last request has a record after it was answered, and is
spaced from that answer; one whose last request has none may be answered until that request's
deadline (begun a moment after its line: ``LATE``), as long as a request that timed out holds
its host in a run not killed; one with no request in the last deadline has nothing out.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..vocabulary import moment
from .outdir import open_nofollow
from .records import LEDGERS, PAGES, log_files, series_of

LATE = 1.0  # seconds from a request's ledger line to the start of its deadline, at most (a busy loop)
OUT_OF_ORDER = 60.0  # seconds a page record may come after a later one (records are written as pages settle)
CHUNK = 1 << 20  # bytes read at a time, from a file's end back


def still_answering(out: Path, deadline: float, now: float | None = None) -> dict[str, float] | None:
    """For each host the killed run asked in the last ``deadline`` seconds (and ``LATE``),
    the moment its next request is to be spaced from: its last request's answer, or that request's
    deadline when no answer is on record (robots.txt's never is).  ``out``: the crawl's directory,
    holding every worker's ledger and pages files.  Unreadable or damaged lines are passed over:
    this only narrows the wait the frontier would otherwise give every host with a URL leased.
    None when ``out`` holds no ledger (a crawl made before there was one): the files say nothing."""
    now = time.time() if now is None else now
    since = now - deadline - LATE  # a request older than this is past its deadline
    last: dict[str, tuple[float, str]] = {}  # authority -> its last request: when, which URL
    ledgers = _series(out, LEDGERS)
    if not ledgers:
        return None
    for series in ledgers:
        for obj in _backwards(series):
            t = obj.get("t")
            if not isinstance(t, int | float) or isinstance(t, bool):
                continue
            if t < since:
                break  # one writer's lines are in the order they were written
            auth, url = obj.get("authority"), obj.get("url")
            if obj.get("kind") not in ("page", "robots", "caps") or obj.get("source") == "cache":
                continue  # an event, or a robots.txt copy taken from the cache: no request
            if isinstance(auth, str) and isinstance(url, str) and t > last.get(auth, (-1.0, ""))[0]:
                last[auth] = (t, url)
    answered: dict[str, float] = {}  # URL -> its last record's moment
    for series in _series(out, PAGES):
        for obj in _backwards(series):
            at, url = _moment(obj.get("fetched_at")), obj.get("url")
            if at is None:
                continue
            if at < since - OUT_OF_ORDER:
                break
            if isinstance(url, str) and at > answered.get(url, -1.0):
                answered[url] = at
    return {
        auth: answered[url] if answered.get(url, -1.0) >= t - 0.001 else t + deadline + LATE
        for auth, (t, url) in last.items()
    }  # a record's moment has milliseconds: one a request before this one's answer is older


def _series(out: Path, patterns: Iterable[str]) -> list[list[Path]]:
    """``out``'s logs matching ``patterns``, one list per series (a writer's files, in order)."""
    found: dict[str, list[Path]] = {}
    for path in log_files(out, patterns):
        found.setdefault(series_of(path)[0], []).append(path)
    return list(found.values())


def _backwards(files: list[Path]) -> Iterator[dict[str, object]]:
    """The JSON objects of one series' ``files``, the last one written first.  A torn or damaged
    line (a process killed as it wrote) is passed over."""
    for path in reversed(files):
        for line in _lines_backwards(path):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                yield obj


def _lines_backwards(path: Path) -> Iterator[bytes]:
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except OSError:
        return
    with os.fdopen(fd, "rb") as f:
        end, rest = f.seek(0, os.SEEK_END), b""
        while end > 0:
            start = max(0, end - CHUNK)
            f.seek(start)
            lines = (f.read(end - start) + rest).split(b"\n")
            end = start
            rest = lines.pop(0) if start > 0 else b""  # may begin in the block before
            for line in reversed(lines):
                if line.strip():
                    yield line


def _moment(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return moment(value)
    except ValueError:
        return None
