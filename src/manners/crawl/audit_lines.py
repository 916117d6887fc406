"""What the ledgers and pages files of a crawl say, as values: reading for ``manners crawl audit``.

Pure (bytes in, values out): :func:`read_lines` splits a JSON Lines file (a torn last line is a
crash mid-write, skipped; any other damage an :class:`AuditError` naming the file and line),
:func:`ledger_entry` makes a ledger line a :class:`Request`, a :class:`Copy` or an
:class:`Event`, and :func:`pages_record` a pages line a :class:`Record`.  Kept apart from the
judging (``audit_judging``) and the report (``audit``), so each can be read and tested alone.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..cache.entry import TTL
from ..vocabulary import moment, timestamp

#: Seconds a gap may fall short of the one required: a ledger line is timed just before its
#: request is written, so clock jitter and timer granularity show up as a few milliseconds.
TOLERANCE = 0.02
#: Seconds a page's request may leave after the robots.txt copy it was decided under expired: it
#: waited for its turn at the host in between (the crawler's default --max-delay).
TURN = 300.0
REQUESTS = ("page", "robots", "caps")  # the ledger's kinds of request; other lines are events


class AuditError(Exception):
    """The audit cannot be made: one sentence for the operator (exit status 2)."""


@dataclass(frozen=True, slots=True)
class Request:
    """One ledger line: a request about to leave."""

    t: float  # seconds since the epoch, as the worker's clock had it
    authority: str
    url: str
    kind: str  # page, robots or caps
    worker: str
    spacing: float | None  # seconds required since the host's previous request; None: not said
    not_before: float | None  # a pending slow-down: nothing to the host before this moment
    dir: str
    lease: str | None = None  # the lease's token the request was made under (pages)

    def as_json(self) -> dict[str, object]:
        return {"url": self.url, "kind": self.kind, "worker": self.worker, "at": timestamp(self.t)}


@dataclass(frozen=True, slots=True)
class Copy:
    """A ledger's robots line with ``source`` ``cache``: the worker decided by a robots.txt copy it
    found in the shared cache (fetched by another worker, or an earlier run) and made no request."""

    t: float  # when the worker took it up
    authority: str
    url: str
    worker: str
    fetched_at: float  # when that copy was fetched
    expires_at: float  # when it had to be read again (``fetched_at`` + a day when not said)
    dir: str

    def covers(self, t: float) -> bool:
        """A page requested at ``t`` was decided under this copy, read in time and in force (a page
        is decided before it waits for its turn at the host: up to ``TURN`` seconds later)."""
        taken = self.fetched_at <= self.t + TOLERANCE
        return taken and self.t <= t + TOLERANCE and t <= self.expires_at + TURN


@dataclass(frozen=True, slots=True)
class Event:
    """A ledger line that is no request: ``lease-lost`` (its worker learnt that a lease it held
    was no longer its own and dropped that URL's work), or a kind this audit does not know."""

    t: float
    kind: str
    url: str | None
    worker: str | None
    lease: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class Record:
    """What the audit needs of one pages record (the rest of it is ignored)."""

    url: str
    outcome: str
    at: float  # fetched_at
    worker: str | None  # the record's own, else its file's (pages-WORKER.jsonl); None: unknown
    status: int | None
    reason: str | None
    rule: str | None
    robots: str | None
    line: int | None
    due: float | None = None  # a revisiting crawl's record: when the URL was due again
    revisiting: bool = False  # the record is a revisiting crawl's (it has ``visit``)
    was: str | None = None  # an ``unsettled`` line: the outcome of the line before, not committed
    linked: bool = False  # a link recorded as skipped (it has ``parent``): no URL of the frontier's


def read_lines(data: bytes, name: str) -> tuple[list[tuple[int, dict[str, Any]]], int | None]:
    """Each line of a JSON Lines file as (line number, object), and the number of a torn last line
    skipped (None: none was).  A line is written with its newline in one flushed write, so a last
    line without one that is no JSON object was cut by a crash mid-write; anywhere else, a line
    that is no JSON object is an AuditError naming ``name`` and the line."""
    lines = data.split(b"\n")
    last = lines.pop()  # b"" when the file ends with a newline
    out = [(n, _object(raw, name, n)) for n, raw in enumerate(lines, 1) if raw.strip()]
    if not last.strip():
        return out, None
    try:
        out.append((len(lines) + 1, _object(last, name, len(lines) + 1)))
    except AuditError:
        return out, len(lines) + 1
    return out, None


def _object(raw: bytes, name: str, n: int) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise AuditError(f"{name}:{n} is no JSON line ({why}): the file is damaged") from None
    if not isinstance(value, dict):
        raise AuditError(f"{name}:{n} is no JSON object: the file is damaged")
    return value


def ledger_line(obj: dict[str, Any], where: str, dir: str) -> Request:
    """A ledger's request line (``where``: "FILE:LINE", for the sentence when it is malformed)."""
    return Request(
        t=_number(obj, "t", where),
        authority=_text(obj, "authority", where),
        url=_text(obj, "url", where),
        kind=_text(obj, "kind", where),
        worker=_text(obj, "worker", where),
        spacing=_number(obj, "spacing", where, null=True),
        not_before=_number(obj, "not_before", where, null=True),
        dir=dir,
        lease=_optional_text(obj, "lease"),
    )


def ledger_entry(obj: dict[str, Any], where: str, dir: str) -> Request | Copy | Event:
    """Any ledger line: a request (page, robots fetched, caps), a robots.txt copy taken from the
    cache (a robots line with ``source`` ``cache``: no request), or an event (``lease-lost``, or a
    kind not known here: no request either)."""
    kind = obj.get("kind")
    if kind == "robots" and obj.get("source") == "cache":
        fetched = _moment_of(obj, "fetched_at", where)
        assert fetched is not None
        expires = _moment_of(obj, "expires_at", where, null=True)
        return Copy(
            t=_number(obj, "t", where),
            authority=_text(obj, "authority", where),
            url=_text(obj, "url", where),
            worker=_text(obj, "worker", where),
            fetched_at=fetched,
            expires_at=expires if expires is not None else fetched + TTL,
            dir=dir,
        )
    if not isinstance(kind, str) or kind in REQUESTS:
        return ledger_line(obj, where, dir)  # a damaged line is named as a request's would be
    return Event(
        t=_number(obj, "t", where),
        kind=kind,
        url=_optional_text(obj, "url"),
        worker=_optional_text(obj, "worker"),
        lease=_optional_text(obj, "lease"),
        reason=_optional_text(obj, "reason"),
    )


def _moment_of(obj: dict[str, Any], key: str, where: str, null: bool = False) -> float | None:
    """An RFC 3339 moment as epoch seconds (a naive one taken as UTC)."""
    if null and obj.get(key) is None:
        return None
    text = _text(obj, key, where)
    try:
        return moment(text)
    except ValueError:
        raise AuditError(f"{where}: {key!r} is no RFC 3339 moment: the file is damaged") from None


def pages_record(obj: dict[str, Any], where: str, worker: str | None) -> Record:
    """A pages record, read tolerantly: keys it does not need are ignored.  ``worker``: the
    worker its file belongs to (``pages-WORKER.jsonl``), used when the record names none.  An
    ``unsettled`` line may have no ``fetched_at``: it is NaN then, and the line before stands in
    (:func:`judge`)."""
    unsettled = obj.get("outcome") == "unsettled"
    moment = _moment_of(obj, "fetched_at", where, null=unsettled)
    own = obj.get("worker")
    status, line = obj.get("status"), obj.get("line")
    due = _optional_text(obj, "due")
    try:
        due_at = datetime.fromisoformat(due).timestamp() if due is not None else None
    except ValueError:
        raise AuditError(f"{where}: 'due' is no RFC 3339 moment: the file is damaged") from None
    return Record(
        url=_text(obj, "url", where),
        outcome=_text(obj, "outcome", where),
        at=moment if moment is not None else math.nan,
        worker=own if isinstance(own, str) else worker,
        status=status if isinstance(status, int) and not isinstance(status, bool) else None,
        reason=_optional_text(obj, "reason"),
        rule=_optional_text(obj, "rule"),
        robots=_optional_text(obj, "robots"),
        line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        due=due_at,
        revisiting="visit" in obj,
        was=_optional_text(obj, "was") if unsettled else None,
        linked="parent" in obj,
    )


def _text(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise AuditError(f"{where}: {_missing(obj, key, 'text')}: the file is damaged")
    return value


def _optional_text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _number(obj: dict[str, Any], key: str, where: str, null: bool = False) -> Any:
    value = obj.get(key)
    if value is None and null:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise AuditError(f"{where}: {_missing(obj, key, 'a number')}: the file is damaged")
    return float(value)


def _missing(obj: dict[str, Any], key: str, kind: str) -> str:
    return f"{key!r} is missing" if key not in obj else f"{key!r} is not {kind}"
