"""``manners watch LOG... (--site URL | --robots FILE[@WHEN]...)``: who keeps your robots.txt.

The command line over the layers below: it reads the robots.txt versions (files given with
``--robots FILE@WHEN``, or the live file of ``--site URL`` fetched once through manners' own
fetcher, with its deadline), reads the LOGs (:mod:`.sources`), keeps the requests between
``--since`` and ``--until``, feeds them to the :class:`~manners.watch.judge.Judge` and shows
its report (:mod:`.render`).  ``--nft FILE`` writes the impolite clients as an nftables set
(:mod:`.nft`).

``--follow`` keeps reading as the logs grow (:mod:`.follow`), until SIGINT or SIGTERM: the
judge is fed each batch of lines, and each time the follower has caught up with every log the
report is asked again, each verdict that changed is said (a robot newly impolite, or charged
more: one line, or one JSON object a line with ``--json``) and the --nft set rewritten if it
changed; at the end, the whole report as without --follow.

Exit status, as the other commands': 0 when every robot kept the file, 1 when any is
impolite (with --follow: in the last report), 2 for a usage error, a robots.txt that cannot be
had, or a LOG that is not an access log (one sentence, never a traceback).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..diagnostics import quoted
from ..output import Out, UsageError
from ..source import blocked, read_source, unread_note
from ..targets import check_url, is_url, scheme_profile
from ..terminal import readable
from .clients import DEFAULT_GROUPING, Grouping, parse_group
from .follow import FollowedLog, Follower
from .judge import Judge
from .logs import FORMATS, Hit
from .nft import NftError, write_set
from .render import Watched, as_json, change_json, change_line, show
from .sources import LogError, LogReader
from .verdicts import Report, RobotVerdict
from .versions import Version, Versions, parse_when, shown_when, split_robots

__all__ = ["EXAMPLES", "POLL", "Run", "add_parser", "changes", "cmd_watch", "read_versions", "window"]

EXAMPLES = """examples:
  manners watch /var/log/nginx/access.log --site https://example.org/
  manners watch jetforce.log --robots robots.txt                    (the file in force all along)
  manners watch access.log --robots old.txt --robots new.txt@2026-11-29T12:00:00Z
  manners watch gophernicus.log --robots robots.txt --since 2026-11-01 --group 24,64
  manners watch access.log --site gemini://example.org/ --json
  manners watch access.log --site https://example.org/ --nft impolite.nft   (nft -f impolite.nft)
  manners watch access.log --site https://example.org/ --follow --nft impolite.nft

A LOG names its rotated siblings too (access.log.1, access.log.2.gz), read oldest first.
A client is charged with a request only if every robots.txt version it could have been
reading forbids it: the one in force then, and the one it last fetched within 24 hours.

exit status: 0 every robot kept robots.txt; 1 some robot is impolite;
2 a usage error, a robots.txt that cannot be had, or a LOG that is no access log"""

POLL = 0.25  # seconds between two looks at a followed log


def add_parser(sub: Any, common: Callable[..., None]) -> argparse.ArgumentParser:
    """Register ``watch`` on the ``manners`` command's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "watch",
        help="who keeps your robots.txt: the robots a server's own access logs show breaking it",
        description="Read a Gemini, Gopher or Web server's own access logs and name the robots that break"
        " its robots.txt, each with its evidence: the rule, its line and how many requests, its pacing"
        " against Crawl-delay, what it did after being told to slow down.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("logs", nargs="+", metavar="LOG", help="an access log (its rotated siblings are read too)")
    p.add_argument("--site", metavar="URL", help="judge by the live robots.txt of this server (fetched once)")
    p.add_argument(
        "--robots",
        action="append",
        default=[],
        metavar="FILE[@WHEN]",
        help="a robots.txt version and the moment it came into force (RFC 3339 or a date); without"
        " @WHEN, the one in force from the start (repeatable)",
    )
    p.add_argument(
        "--format",
        choices=list(FORMATS),
        help="the logs' format (default: found in each file)",
    )
    p.add_argument("--since", metavar="T", help="skip requests before T (RFC 3339 or a date)")
    p.add_argument("--until", metavar="T", help="skip requests after T (RFC 3339 or a date)")
    p.add_argument(
        "--group",
        metavar="V4BITS,V6BITS",
        help="prefix lengths that make one client, such as 24,64 (default: 32,128, each address alone)",
    )
    p.add_argument(
        "--nft", metavar="FILE", help="write the impolite clients as an nftables set (load it: nft -f FILE)"
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="keep reading as lines are appended (and across rotation), saying each verdict that changes",
    )
    common(p, robot=False)
    p.set_defaults(func=cmd_watch, agent="*", role=[])
    return p


def _moment(option: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse_when(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def read_versions(args: argparse.Namespace, out: Out) -> list[Version]:
    """The robots.txt versions: the live file of ``--site``, or each ``--robots FILE[@WHEN]``."""
    if bool(args.site) == bool(args.robots):
        raise UsageError(
            "give either --site URL (the live robots.txt) or --robots FILE[@WHEN] (repeatable), not "
            + ("both" if args.site else "neither")
        )
    if args.site:
        if not is_url(args.site):
            raise UsageError(
                f"--site takes a server's URL, such as gemini://example.org/, not {quoted(args.site)}"
            )
        check_url(args.site)
        src = read_source(args.site, scheme_profile(args.site, "rfc9309"), args, out)
        assert src.policy is not None
        if blocked(src.policy):
            why = unread_note(src.policy) or ""
            why = why.rpartition(";")[0]  # not "everything is disallowed": nothing is judged
            raise UsageError(f"{why}: nothing to judge by; give the file with --robots FILE")
        if src.policy.entry.outcome != "ok" and not src.policy.stale:
            out.note(unread_note(src.policy) or "")  # a missing robots.txt: everything allowed
        return [Version(src.body.decode("utf-8", "replace"), None, src.name)]
    found = []
    for given in args.robots:
        try:
            name, since = split_robots(given)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        path = Path(name)
        if path.is_dir():
            raise UsageError(f"--robots {quoted(name)} is a directory: give the robots.txt file in it")
        try:
            body = path.read_bytes()
        except FileNotFoundError:
            raise UsageError(f"no such file {quoted(name)} (--robots takes a robots.txt file)") from None
        except OSError as exc:
            raise UsageError(f"cannot read --robots {quoted(name)}: {exc.strerror}") from None
        found.append(Version(body.decode("utf-8", "replace"), since, name))
    return found


def window(
    hits: Iterable[Hit], since: float | None, until: float | None, untimed: list[int]
) -> Iterator[Hit]:
    """The ``hits`` from ``since`` to ``until`` (both included); a hit without a time is kept, and
    counted in ``untimed[0]`` when bounds were given (they cannot be applied to it)."""
    if since is None and until is None:
        yield from hits
        return
    low = since if since is not None else float("-inf")
    high = until if until is not None else float("inf")
    for hit in hits:
        when = hit.when
        if when is None:
            untimed[0] += 1
            yield hit
        elif low <= when <= high:
            yield hit


def cmd_watch(args: argparse.Namespace, out: Out) -> int:
    try:
        grouping = parse_group(args.group) if args.group is not None else DEFAULT_GROUPING
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    since, until = _moment("--since", args.since), _moment("--until", args.until)
    if since is not None and until is not None and until < since:
        raise UsageError(f"--until {shown_when(until)} comes before --since {shown_when(since)}")
    given = read_versions(args, out)
    try:
        versions = Versions(given)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    folding = Judge(versions, grouping=grouping)
    run = Run(folding, given, grouping, since, until, args, out)
    if args.follow:
        return asyncio.run(run.follow())
    reader = LogReader(args.logs, args.format)
    try:
        run.untimed[0] += reader.feed(folding.fold, since, until)
    except LogError as exc:
        raise UsageError(str(exc).rstrip(".")) from None
    watched = run.watched(reader)
    run.write_nft(watched.report)
    if out.json:
        out.data(as_json(watched))
    else:
        show(watched, out)
    return 1 if watched.report.impolite else 0


Key = tuple[str, str | None, str]  # a robot: its client, product token and kind


def changes(before: dict[Key, int], report: Report) -> list[tuple[str, RobotVerdict]]:
    """The verdicts that changed since ``before`` (each impolite robot's offences then, updated
    here): ``impolite`` for a robot newly impolite, ``charged`` for one charged more."""
    found = []
    for r in report.impolite:
        key = (r.client, r.token, r.kind)
        was = before.get(key)
        if was is None or r.offences > was:
            found.append(("impolite" if was is None else "charged", r))
            before[key] = r.offences
    return found


class Run:
    """One ``manners watch``: the judge and what the report is shown with."""

    def __init__(
        self,
        folding: Judge,
        given: list[Version],
        grouping: Grouping,
        since: float | None,
        until: float | None,
        args: argparse.Namespace,
        out: Out,
    ) -> None:
        self.folding = folding
        self.given = given
        self.grouping = grouping
        self.since = since
        self.until = until
        self.args = args
        self.out = out
        self.untimed = [0]  # requests without a time when --since or --until was given

    def watched(self, reader: LogReader) -> Watched:
        """The report so far and what it was made from."""
        names = dict.fromkeys(f.format for f in reader.files if f.format)
        self.folding.formats = tuple(FORMATS[name] for name in names)
        report = self.folding.report()
        notes = []
        untimed = self.untimed[0]
        if untimed:
            notes.append(
                f"--since and --until cannot be applied to {untimed} request{'s' if untimed != 1 else ''} "
                "logged without a time: they were judged"
            )
        return Watched(
            report, list(reader.files), list(reader.shown), self.given, self.grouping, self.since, self.until,
            tuple(notes),
        )  # fmt: skip

    def write_nft(self, report: Report) -> None:
        if self.args.nft:
            try:
                write_set(self.args.nft, report)
            except NftError as exc:
                raise UsageError(str(exc).rstrip(".")) from None

    async def follow(self) -> int:
        """Follow the logs until SIGINT or SIGTERM; the exit status of the last report."""
        follower = Follower(self.args.logs, poll=POLL)
        reader = FollowedLog(self.args.logs, self.args.format)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for number in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(number, stop.set)
        reading = asyncio.ensure_future(self._read(follower, reader))
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({reading, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if reading.done():
                reading.result()  # LogError, NftError: said as one sentence
        except LogError as exc:
            raise UsageError(str(exc).rstrip(".")) from None
        finally:
            for task in (reading, stopped):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, LogError, UsageError):
                    await task
            follower.close()
            for number in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(Exception):
                    loop.remove_signal_handler(number)
        try:  # lines held to tell their file's format: judged too
            for hit in window(reader.hits([], settle=True), self.since, self.until, self.untimed):
                self.folding.feed(hit)
        except LogError as exc:
            raise UsageError(str(exc).rstrip(".")) from None
        watched = self.watched(reader)
        if self.out.json:
            self._record(as_json(watched))
        else:
            self.out.line("")
            show(watched, self.out)
        return 1 if watched.report.impolite else 0

    async def _read(self, follower: Follower, reader: FollowedLog) -> None:
        """Feed the judge batch by batch; at each catching up, say what changed."""
        before: dict[Key, int] = {}
        first = True
        async for batch in follower.batches():
            caught_up = not batch
            for hit in window(reader.hits(batch, settle=caught_up), self.since, self.until, self.untimed):
                self.folding.feed(hit)
            if not caught_up:
                continue
            watched = self.watched(reader)
            changed = changes(before, watched.report)
            if changed or first:  # the set first: when a change is said, the file holds it
                self.write_nft(watched.report)
            first = False
            for change, robot in changed:
                if self.out.json:
                    self._record(change_json(change, robot, watched))
                else:
                    self.out.line(change_line(change, robot), "bold red" if change == "impolite" else "")
            sys.stdout.flush()

    def _record(self, value: Any) -> None:
        """One JSON object on one line (JSON lines), every byte that is not UTF-8 as text."""
        print(json.dumps(readable(value)), flush=True)
