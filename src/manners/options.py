"""argparse types the commands share: one message for one mistake.

Each turns an option's text into its value or raises ``ArgumentTypeError`` with one sentence,
which argparse prints after the option's name (``argument --sample: give 0 or more, not -1``)
with exit status 2.  A number of seconds is finite: no deadline or pause is endless.
"""

from __future__ import annotations

import argparse
import math
import re

from .crawl.revisit import parse_interval
from .pace import MAX_DELAY


def count(text: str) -> int:
    """A whole number, 0 or more (pages, depths, URLs: 0 is none)."""
    return _whole(text, least=0)


def positive(text: str) -> int:
    """A whole number, 1 or more (bytes, hosts at once, attempts)."""
    return _whole(text, least=1)


def seconds(text: str) -> float:
    """A number of seconds, 0 or more."""
    return _seconds(text)


def positive_seconds(text: str) -> float:
    """A number of seconds, more than 0 (a lease, a deadline)."""
    return _seconds(text, above_zero=True)


def delay(text: str) -> float:
    """Seconds between two requests to one server: from 0 to MAX_DELAY, the longest a Robot waits."""
    return _seconds(text, most=MAX_DELAY)


def interval(text: str) -> float:
    """A revisit interval: seconds, or a number with ``s``, ``m``, ``h`` or ``d``; more than 0."""
    try:
        return parse_interval(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(?P<unit>[KMGT]?)(?:I?B)?", re.ASCII)


def byte_size(text: str, least: int = 1024) -> int:
    """A size in bytes: a number, or one with K, M, G or T (binary: 1K is 1024 bytes; KiB, MB and
    the like are read alike), at least ``least`` (a WARC file holds a warcinfo record at least)."""
    found = _SIZE.fullmatch(text.strip().upper())
    if found is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (bytes, or a number with K, M or G: 64M)")
    size = float(found["number"]) * SIZE_UNITS[found["unit"]]
    if size > 1 << 50:
        raise argparse.ArgumentTypeError(f"{text!r} is larger than any file system holds")
    if size < least:
        raise argparse.ArgumentTypeError(f"give {least} bytes (1K) or more, not {text!r}")
    return int(size)


def _whole(text: str, least: int) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < least:
        raise argparse.ArgumentTypeError(f"give {least} or more, not {n}")
    return n


def _seconds(text: str, most: float = math.inf, above_zero: bool = False) -> float:
    try:
        n = float(text)
    except ValueError:
        n = math.nan
    if not math.isfinite(n):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds")
    if above_zero and n <= 0:
        raise argparse.ArgumentTypeError(f"give more than 0 seconds, not {n:g}")
    if not 0 <= n <= most:
        said = "0 seconds or more" if math.isinf(most) else f"seconds from 0 to {most:g}"
        raise argparse.ArgumentTypeError(f"give {said}, not {n:g}")
    return n
