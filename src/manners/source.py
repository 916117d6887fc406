"""A robots.txt as a command reads it, and what every command says of it first.

From a file, standard input or a server (fetched through the cache: afresh, or with
``--cached`` from the copy kept).  Before any verdict, a command says what was not read
as the robots.txt it answers from (:func:`first_words`, :func:`unread_note`), and every
``--json`` output names the file in the keys of :func:`about` (docs/json.md).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cache import CacheError
from .diagnostics import quoted, said, whole_file
from .fetch import robots_locations
from .output import Out, UsageError
from .robot import Policy, Robot
from .robots import Diagnostic, RobotsTxt, parse
from .targets import check_url, is_url
from .vocabulary import status_number, timestamp

UNREAD = ("unreachable", "retry")  # nothing read: everything is disallowed (unless a copy answers)


@dataclass
class Source:
    """A robots.txt as read for a command: from a file, standard input or a server."""

    robots: RobotsTxt
    body: bytes
    name: str
    policy: Policy | None = None  # when fetched through the cache

    @property
    def read(self) -> bool:
        """Whether there is a file behind the answers: read now, or a copy standing in."""
        return self.policy is None or self.policy.entry.outcome == "ok" or self.policy.stale

    @functools.cached_property
    def findings(self) -> list[Diagnostic]:
        """What of the file is not read as a robots.txt (see diagnostics.whole_file)."""
        return whole_file(self.robots, self.body) if self.read else []


def fetched(policy: Policy) -> Source:
    """The Source a fetch through the cache gave."""
    return Source(policy.robots, policy.entry.body, policy.entry.url, policy)


def capped(args: argparse.Namespace) -> dict[str, Any]:
    """``max_bytes`` for parse() and Robot() when --max-bytes is given; else their own default."""
    return {"max_bytes": args.max_bytes} if args.max_bytes is not None else {}


def read_source(where: str, profile: str | None, args: argparse.Namespace, out: Out) -> Source:
    """A robots.txt from a path, '-' (standard input) or a URL (fetched through the cache)."""
    if where == "-":
        body = sys.stdin.buffer.read()
        return Source(parse(body, profile, **capped(args)), body, "standard input")
    if is_url(where):
        check_url(where)
        (policy,) = policies(args, [where], profile).values()
        if policy.entry.outcome == "ok" or policy.stale:  # else the command says so first, on stdout
            say_where_from(policy, args, out)
        return fetched(policy)
    path = Path(where)
    if path.is_dir():
        raise UsageError(f"{where} is a directory: give the robots.txt file in it, or a URL")
    try:
        body = path.read_bytes()
    except FileNotFoundError:
        hint = f" (https://{where}?)" if re.match(r"[\w-]+(\.[\w-]+)+(/|$)", where) else ""
        raise UsageError(
            f"no such file {quoted(where)}{hint}: give a robots.txt file, '-' for standard input, or a URL"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot read {where}: {exc.strerror}") from None
    return Source(parse(body, profile, **capped(args)), body, where)


def policies(args: argparse.Namespace, urls: Iterable[str], profile: str | None) -> dict[str, Policy]:
    """The policy for each authority among ``urls`` (keyed by its robots.txt address), each
    fetched once, all at the same time: afresh, or from the cache with ``--cached``."""
    first: dict[str, str] = {}
    for url in urls:
        try:
            first.setdefault(robots_locations(url)[0], url)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    try:
        robot = Robot(
            args.agent, args.role, args.cache, timeout=args.timeout, profile=profile, **capped(args)
        )
    except (ValueError, CacheError) as exc:
        raise UsageError(str(exc)) from None

    async def read() -> list[Policy]:
        async with robot as r:
            return await asyncio.gather(*(r.policy(url, refresh=not args.cached) for url in first.values()))

    try:
        return dict(zip(first, asyncio.run(read()), strict=True))
    except CacheError as exc:
        raise UsageError(f"{exc}; pass --cache memory to work without it") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return f"{int(seconds)} s ago"


def cause(policy: Policy) -> str:
    """Why the latest fetch read no file, without the verdict the fetch's meaning ends with
    (the note says its own) and without the address the note names already."""
    e = policy.entry
    why = e.meaning.rsplit(": ", 1)[0] if ": " in e.meaning else e.meaning or f"status {e.status}"
    for url in (e.source, e.url):
        why = why.removesuffix(f" while fetching {url}")
    return why


def unread_note(policy: Policy) -> str | None:
    """What a robot must know first when the file was not read, in one sentence; None when
    it was.  Every command says it in these words."""
    e = policy.entry
    if e.outcome == "ok":
        return None
    if e.outcome == "unavailable":
        return f"robots.txt at {e.url} is unavailable: {cause(policy)}; everything is allowed"
    why = cause(policy)
    if e.outcome == "retry":
        why = why.removesuffix(": the server asked us to wait")  # retry's meaning has two parts
        wait = f" {e.retry_after:g} s" if e.retry_after else ""
        why += f", and the server asked to wait{wait}"
    sentence = f"robots.txt at {e.url} could not be fetched: {why}"
    if policy.stale and e.good_at is not None:
        return sentence + f"; answering from the copy read {ago(time.time() - e.good_at)}"
    return sentence + "; everything is disallowed until it can be"


def cached_note(policy: Policy, cached: bool) -> str | None:
    """With --cached, how old the answer is (the same words for every command)."""
    if not cached or policy.entry.outcome != "ok":
        return None
    e = policy.entry
    return f"{e.url}: the cached copy read {ago(time.time() - e.fetched_at)} (--cached)"


def blocked(policy: Policy | None) -> bool:
    """Did the fetch fail with no copy to stand in, so that everything is disallowed?"""
    return policy is not None and policy.entry.outcome in UNREAD and not policy.stale


def say_where_from(policy: Policy, args: argparse.Namespace, out: Out) -> None:
    """With --cached, how old the answer is; always, when the file was not read."""
    for note in (unread_note(policy), cached_note(policy, args.cached)):
        if note is not None:
            out.note(note)


def first_words(src: Source) -> list[str]:
    """What the verdicts rest on, said before them: the file was cut, or is no robots.txt."""
    return [said(src.name, d) for d in src.findings]


def about(src: Source) -> dict[str, Any]:
    """The robots.txt an answer comes from, in the keys every command's JSON shares."""
    info: dict[str, Any] = {"robots": src.name, "outcome": None, "status": None, "network_error": None,
                            "meaning": None, "fetched_at": None, "age": None, "stale": False,
                            "note": None}  # fmt: skip
    if src.policy is not None:
        e = src.policy.entry
        status = status_number(e.status)
        failed = status is None and e.outcome in UNREAD  # a fetch that failed below the protocol
        info |= {"outcome": e.outcome, "status": status, "network_error": e.status if failed else None,
                 "meaning": e.meaning, "fetched_at": timestamp(e.fetched_at),
                 "age": round(time.time() - e.fetched_at, 3), "stale": src.policy.stale,
                 "note": unread_note(src.policy)}  # fmt: skip
    return info | {"findings": [d._asdict() for d in src.findings]}
