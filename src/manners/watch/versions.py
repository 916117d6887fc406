"""The robots.txt an admin had, dated: which version was in force at each moment of a log.

A robots.txt is edited while its server keeps logging, so one log may span several files.
``manners watch --robots FILE@WHEN`` gives each version with the moment it came into force
(RFC 3339, or a date: its midnight UTC); a FILE without ``@WHEN`` was in force from the
start.  :class:`Versions` holds them in order and answers which one was in force at a time
(:meth:`Versions.at`), and reads each under the profile a request's scheme asks for, once.

Pure: the texts are given, not read here (the command line reads FILE, or fetches the live
file).  A WHEN that is no time is a ValueError whose message is one sentence.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from manners.robots import RobotsTxt, parse

__all__ = ["Version", "Versions", "parse_when", "shown_when", "split_robots"]

# RFC 3339's date-time (a space for the T, as its section 5.6 note allows), or its full-date.
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\d(?:[Tt ]\d\d:\d\d:\d\d(?:\.\d+)?(?:[Zz]|[+-]\d\d:\d\d))?\Z", re.ASCII)
_EXAMPLE = "RFC 3339 such as 2026-11-29T12:00:00Z, or a date such as 2026-11-29 (its midnight UTC)"


def parse_when(text: str) -> float:
    """``text``, an RFC 3339 date-time with its offset or a date (midnight UTC), as epoch seconds.

    ValueError, one sentence, for anything else: a local time without an offset names no
    instant, and ISO 8601's other spellings (``20261129``, week dates) are not taken."""
    shown = text[:60]
    if not _RFC3339.match(text):
        raise ValueError(f"{shown!r} is not a time: give one in {_EXAMPLE}.")
    try:
        if len(text) == 10:
            moment = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{shown!r} is not a real date or time: give one in {_EXAMPLE}.") from None
    return moment.timestamp()


def shown_when(when: float | None) -> str:
    """A version's moment as a report shows it: RFC 3339 in UTC, or ``always``."""
    if when is None:
        return "always"
    return datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z")


def split_robots(argument: str) -> tuple[str, float | None]:
    """``FILE@WHEN`` as (FILE, epoch seconds); ``FILE`` alone as (FILE, None).  The last ``@``
    separates WHEN, so a file whose name holds an ``@`` is given with its ``@WHEN``."""
    path, at, when = argument.rpartition("@")
    if not at:
        return argument, None
    if not path:
        raise ValueError(f"{argument[:60]!r} names no file before its @WHEN.")
    try:
        return path, parse_when(when)
    except ValueError as exc:
        raise ValueError(f"in --robots {argument[:60]!r}, {exc}") from None


@dataclass(frozen=True)
class Version:
    """One robots.txt as it stood: its text, when it came into force (None: from the start), and
    where it came from (a file name or URL, for the report)."""

    text: str
    since: float | None = None
    source: str = ""


class Versions:
    """The robots.txt versions of one site, oldest first.

    At most one is undated (in force before every dated one); two may not share a moment.
    Before the first dated version, when none is undated, no version is known.
    """

    def __init__(self, versions: Iterable[Version]) -> None:
        given = list(versions)
        if not given:
            raise ValueError("no robots.txt was given: name one with --robots FILE[@WHEN] or --site URL.")
        undated = [v for v in given if v.since is None]
        if len(undated) > 1:
            raise ValueError(
                "only one robots.txt may be given without @WHEN (the one in force from the start)."
            )
        dated = sorted((v for v in given if v.since is not None), key=lambda v: v.since or 0.0)
        for earlier, later in itertools.pairwise(dated):
            if earlier.since == later.since:
                moment = shown_when(later.since)
                raise ValueError(f"two robots.txt versions are dated {moment}: give each its own moment.")
        self.items: tuple[Version, ...] = (*undated, *dated)
        self._starts = [v.since for v in dated if v.since is not None]
        self._offset = len(undated)
        self._parsed: dict[tuple[int, str], RobotsTxt] = {}

    def __len__(self) -> int:
        return len(self.items)

    def at(self, when: float | None) -> int | None:
        """The index of the version in force at ``when``; None when none is known then (before the
        first dated version, with none undated).  ``when`` None (a log without times): None, for
        the caller to read every version."""
        if when is None:
            return None
        found = bisect.bisect_right(self._starts, when)  # dated versions begun by `when`
        if found:
            return self._offset + found - 1
        return 0 if self._offset else None

    def robots(self, index: int, profile: str) -> RobotsTxt:
        """Version ``index`` read under ``profile``, parsed once."""
        key = (index, profile)
        found = self._parsed.get(key)
        if found is None:
            found = self._parsed[key] = parse(self.items[index].text, profile)
        return found

    def since(self, index: int) -> float | None:
        return self.items[index].since

    def every(self) -> Sequence[int]:
        return range(len(self.items))
