"""The spellings every JSON output shares: ``--json`` of each command and ``pages.jsonl``.

A script that reads one output should read them all the same way, so a moment and a
status are spelled here, once, and every writer of JSON calls these functions.
"""

from __future__ import annotations

from datetime import datetime, timezone


def timestamp(t: float) -> str:
    """``t`` (seconds since the epoch) as RFC 3339 UTC with milliseconds and ``Z``, such as
    ``2026-11-24T07:36:39.444Z``: one form that every language's date parser reads."""
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def moment(text: str) -> float:
    """A moment ``timestamp`` wrote (any RFC 3339 one) as seconds since the epoch, a naive one
    taken as UTC; ValueError when ``text`` is none."""
    when = datetime.fromisoformat(text)
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def status_number(status: int | str | None) -> int | None:
    """A protocol status as the integer it is (HTTP 200, Gemini 20), or None when the answer
    had none: a Gopher server's, or a fetch that failed below the protocol (its name is kept
    elsewhere).  Caches keep statuses as text, so "200" is read back as 200 here."""
    if isinstance(status, int):
        return status
    return int(status) if status is not None and status.isdigit() else None
