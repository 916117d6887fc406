"""What a cache remembers about one authority's robots.txt, and what it means later.

Pure functions: a fetch result and the previous entry in, the next entry out; an
entry and a time in, the policy in force out.  The stores only keep entries.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

from ..fetch import FetchResult
from ..fetch.outcome import read_body
from ..robots import RobotsTxt, verdict

DAY: float = 86_400.0
TTL: float = DAY  # RFC 9309 §2.4: SHOULD NOT cache longer than 24 hours; the Gopher proposal: a day
STALE_LIMIT = 30 * DAY  # §2.4: an unreachable file may be answered from a copy this old
MIN_TTL = 60.0  # however the server asks, a robots.txt is not fetched more often than this
FIRST_BACKOFF = 60.0  # after a failed fetch: 1 min, then 2, 4, 8, ... up to TTL
OLD_MAX_BYTES = 512_000  # the default cap, for entries written before they recorded ``truncated``
CLOCK_TOLERANCE = 5.0  # seconds an entry's fetch time may lie ahead of this clock and still be believed


@dataclass(frozen=True)
class Entry:
    """One authority's robots.txt as a cache holds it."""

    url: str  # the robots.txt address
    outcome: str  # of the latest fetch: ok, unavailable, unreachable or retry
    status: str  # its protocol status, as text
    source: str  # the address read at that fetch
    fetched_at: float
    expires_at: float  # fetch again after this (the TTL, or the backoff after a failure)
    good: str | None = None  # what the last readable answer was: "ok", "unavailable", or None (never)
    good_at: float | None = None
    good_status: str = ""
    body: bytes = b""  # the last file read ("ok")
    failures: int = 0  # failed fetches since the last readable answer
    retry_after: float | None = None  # seconds the server asked us to wait, from fetched_at
    meaning: str = ""  # the latest fetch's outcome in words
    truncated: bool = False  # the file went on past the bytes kept in body: its last partial line is dropped
    fingerprint: str | None = None  # SHA-256 of the Gemini server's certificate, as last seen
    fingerprint_changed: bool = False  # the latest fetch saw a certificate other than the one remembered
    known_hosts: tuple[tuple[str, str], ...] = ()  # Gemini host:port -> fingerprint, for trust on first use

    def dumps(self) -> bytes:
        """The fields as one line of JSON, then the body as it was read: no base64 to undo."""
        fields = asdict(self)
        del fields["body"]
        return json.dumps(fields, separators=(",", ":")).encode() + b"\n" + self.body

    @classmethod
    def loads(cls, data: str | bytes) -> Entry:
        """An entry as dumps() wrote it, or as older versions did (one JSON object with the body
        in base64); entries written before a field existed get its default."""
        if isinstance(data, bytes) and (end := data.find(b"\n")) >= 0:
            fields = json.loads(data[:end])
            fields["body"] = data[end + 1 :]
        else:  # JSON has no raw line end: this is the older form
            fields = json.loads(data)
            fields["body"] = base64.b64decode(fields["body"])
        # Before ``truncated`` was kept, a body was cut at the default cap with no mark.
        fields.setdefault("truncated", len(fields["body"]) >= OLD_MAX_BYTES)
        fields["known_hosts"] = tuple((str(h), str(f)) for h, f in fields.get("known_hosts", ()))
        return cls(**fields)

    @property
    def keep_until(self) -> float:
        """Until when the entry is worth keeping: its stale copy may still answer."""
        return max(self.expires_at, (self.good_at or 0.0) + STALE_LIMIT)


def entry_after(
    previous: Entry | None,
    result: FetchResult,
    now: float,
    ttl: float = TTL,
    known_hosts: Mapping[str, str] | None = None,
    backoff: float = FIRST_BACKOFF,
) -> Entry:
    """The entry after a fetch: a readable answer replaces everything, a failure keeps the last copy.

    ``known_hosts`` is the Gemini trust-on-first-use mapping after the fetch; it and the
    certificate seen are kept whatever the outcome, so a later run can tell a change.
    """
    known = tuple(sorted(known_hosts.items())) if known_hosts else (previous.known_hosts if previous else ())
    fingerprint = result.fingerprint or (previous.fingerprint if previous else None)
    latest = {"outcome": result.outcome, "status": str(result.status), "source": result.source,
              "fetched_at": now, "retry_after": result.retry_after, "meaning": result.meaning,
              "fingerprint": fingerprint, "fingerprint_changed": result.fingerprint_changed,
              "known_hosts": known}  # fmt: skip
    if result.outcome in ("ok", "unavailable"):
        life = ttl if result.max_age is None else min(ttl, max(MIN_TTL, result.max_age))
        ok = result.outcome == "ok"
        body = result.body if ok else b""
        return Entry(result.url, expires_at=now + life, good=result.outcome, good_at=now,
                     good_status=str(result.status), body=body, truncated=ok and result.truncated,
                     **latest)  # type: ignore[arg-type]  # fmt: skip
    failures = (previous.failures if previous else 0) + 1
    wait = result.retry_after if result.retry_after else min(TTL, backoff * 2 ** (failures - 1))
    if previous is None:
        return Entry(result.url, expires_at=now + wait, failures=failures, **latest)  # type: ignore[arg-type]
    return replace(previous, expires_at=now + wait, failures=failures, **latest)  # type: ignore[arg-type]


def expires(entry: Entry, now: float, ttl: float | None = None) -> float:
    """When ``entry``, read at ``now``, must be fetched again: its own ``expires_at``, or ``ttl`` after
    its fetch, whichever comes first (``ttl`` bounds a readable answer only: a failed fetch keeps
    its backoff, so a server's Retry-After is honoured whatever the ttl).

    An entry fetched "in the future", more than :data:`CLOCK_TOLERANCE` after ``now``, was
    written by a process whose clock ran ahead (another worker sharing the cache, or this
    machine before its clock was set back): its times say nothing true about its age, and
    believing them would keep it fresh until the real clock caught up, hours perhaps, past any
    ``--robots-max-age``.  It has expired (0: long ago, whatever clock compares), so the file is
    read again."""
    if entry.fetched_at > now + CLOCK_TOLERANCE:
        return 0.0
    if ttl is not None and entry.outcome in ("ok", "unavailable"):
        return min(entry.expires_at, entry.fetched_at + ttl)
    return entry.expires_at


def is_fresh(entry: Entry, now: float, ttl: float | None = None) -> bool:
    """Whether ``entry`` still answers at ``now`` without a fetch (see :func:`expires`)."""
    return now < expires(entry, now, ttl)


def policy_of(entry: Entry, now: float, profile: str | None = None) -> tuple[RobotsTxt, bool]:
    """The robots.txt in force, and whether it is a stale copy standing in for a failed fetch."""
    stale = entry.outcome not in ("ok", "unavailable")
    if (
        entry.good is not None
        and entry.good_at is not None
        and (not stale or now - entry.good_at <= STALE_LIMIT)
    ):
        if entry.good == "ok":
            return read_body(entry.body, entry.truncated, profile), stale
        why = f"robots.txt was unavailable ({entry.good_status})"
        return verdict(True, f"{why}: everything is allowed", profile), stale
    if entry.outcome == "retry":
        why = f"the server asked us to wait ({entry.status})"
    else:
        why = f"robots.txt is unreachable ({entry.status})"
    return verdict(
        False, f"{why} and no copy of it younger than 30 days is known: everything is disallowed"
    ), False
