"""``manners crawl``: the command line over ``Crawler``.  cli.py only calls ``add_parser``.

``manners crawl status`` and ``manners crawl audit`` are subcommands of ``crawl``, which also
takes seeds as positional arguments: so the crawl's parser hands argument lists that start
with one of those words to a parser of its own (``CrawlParser``), and a seed is never taken
for a subcommand (a seed is a URL, with a scheme).

Exit status: 0 when the crawl completed (or reached a limit), 130 when interrupted
(Ctrl-C or SIGTERM: requests in flight end or go back to the queue, files are closed), 1 when
a crawl file or the frontier failed during the crawl, 2 for a mistake of the user's, told in
one sentence.  A revisiting crawl (--revisit) never completes: SIGTERM is its normal end (a
service manager stopping it), so it exits 0 then and its summary says it stopped as asked, not
that it was interrupted; Ctrl-C still gives 130.  SIGHUP starts new WARC, pages and ledger files
(as --warc-size does when a WARC file is full), for logrotate and the like.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cache import CacheError
from ..fetch.address import Network, parse_networks
from ..options import byte_size, count, interval, positive, positive_seconds, seconds
from ..output import UsageError
from ..terminal import safe
from .crawler import LEASE, WARC_SIZE, Crawler, check_seed, read_settings
from .frontier import is_shared, shown
from .outdir import CrawlFileError, prepare
from .revisit import REVISIT_MAX, REVISIT_MIN

EXAMPLES = """examples:
  manners crawl gemini://example.org/ --agent mybot --role indexer --out crawl
  manners crawl gopher://example.org/ --agent mybot --role archiver --out hole --max-pages 500
  manners crawl --out crawl                       (resume: the robot, its roles and the limits are kept)
  manners crawl --out hole --max-pages 1000       (resume with a limit raised: limits count the whole crawl)
  manners crawl --out crawl --retry-errors        (resume, and try again what failed)
  manners crawl gemini://example.org/ --agent mybot --out watch --revisit --revisit-min 6h
                                                  (come back to every page: 6 h after a change, doubling
                                                   up to a month while it stays the same; stop with SIGTERM)
  manners crawl gemini://example.org/ --agent mybot --frontier redis://db:6379/0 --name smallnet --out crawl
                                                  (a worker of the fleet crawling "smallnet": run it anywhere)
  manners crawl status --frontier redis://db:6379/0 --name smallnet
  manners crawl audit crawl other-machine-crawl   (prove the crawl's manners from the workers' files)"""
SUBCOMMANDS = ("status", "audit")

#: Options kept with a crawl and taken from it when a resume leaves them out (name: default).
#: Not --cache: where robots.txt files are kept is the machine's business (and may hold a password).
SETTINGS: dict[str, object] = {
    "max_pages": None, "max_depth": None, "max_per_host": None, "max_links": 10_000,
    "max_queued_per_host": 100_000, "max_bytes": 5 << 20, "min_delay": 1.0, "max_delay": 300.0,
    "concurrency": 16, "timeout": 30.0, "allow_private": None, "robots_backoff": 60.0,
    "robots_attempts": 4, "lease": LEASE, "revisit": False, "revisit_min": REVISIT_MIN,
    "revisit_max": REVISIT_MAX, "robots_max_age": None, "warc_size": WARC_SIZE,
}  # fmt: skip


class CrawlParser(argparse.ArgumentParser):
    """``crawl``'s parser: ``status ...`` and ``audit ...`` go to parsers of their own (made when
    asked for: ``audit`` lives in its own module), anything else is a crawl's arguments."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        given = list(sys.argv[1:] if args is None else args)
        if not given or given[0] not in SUBCOMMANDS:
            return super().parse_known_args(given, namespace)
        parser = argparse.ArgumentParser(prog=self.prog)
        sub = parser.add_subparsers(dest="crawl_command", required=True)
        add_status_parser(sub)
        if given[0] == "audit":
            from .audit import add_parser as add_audit  # written apart from the crawler

            add_audit(sub)
        parsed = parser.parse_args(given, namespace)
        if not hasattr(parsed, "json"):
            parsed.json = False
        return parsed, []


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``crawl`` on the ``manners`` command's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "crawl",
        help="crawl Geminispace and Gopherspace politely; run again with the same --out to resume",
        description="Crawl Geminispace and Gopherspace politely.\n\nA crawl keeps its robot (--agent,"
        " --role, --profile, --scope) and its options in its frontier:\na resume may leave them out and"
        " may raise a limit; one that names another robot is refused.\nWith --frontier redis://... --name"
        " CRAWL it is one worker of a fleet: every worker runs the same command.\n\nAlso: manners crawl"
        " status --frontier F [--name CRAWL] [--json]; manners crawl audit DIR... [--json].",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.__class__ = CrawlParser  # argparse makes subparsers of one class: status and audit are dispatched here
    p.add_argument("seeds", nargs="*", metavar="SEED", help="gemini:// or gopher:// URLs to start from")
    p.add_argument("--agent", metavar="NAME", help="the robot's name (product token); kept by the crawl")
    p.add_argument(
        "--role",
        action="append",
        default=None,
        metavar="ROLE",
        help="a virtual agent the crawler acts as: indexer, archiver, ... (repeatable); kept by the crawl",
    )
    p.add_argument(
        "--profile", help="how robots.txt is read (default: by each URL's scheme); kept by the crawl"
    )
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="where the frontier, pages.jsonl, the ledger and the WARC files go; the same DIR resumes",
    )
    p.add_argument(
        "--frontier",
        metavar="F",
        help="the crawl's frontier: a SQLite file (default: DIR/frontier.sqlite3), or redis://HOST:PORT/DB,"
        " rediss://... or redis-cluster://HOST:PORT to be one worker of a fleet",
    )
    p.add_argument("--name", metavar="CRAWL", help="the crawl's name on a Redis frontier (which holds many)")
    p.add_argument(
        "--lease",
        type=positive_seconds,
        metavar="S",
        help="seconds a lease lasts; renewed while its fetch runs, so only a dead worker's expire"
        " (default: 120); a worker waits out an unreachable Redis for half of it (30 s at most)",
    )
    p.add_argument(
        "--allow-unsafe-redis",
        action="store_true",
        help="start on a Redis that can lose the crawl (no appendonly nor save, or maxmemory with an"
        " evicting policy), with a warning; by default such a Redis is refused",
    )
    p.add_argument(
        "--max-pages",
        type=count,
        metavar="N",
        help="stop once N pages have been requested, over the whole crawl"
        " (robots.txt and caps.txt are not counted); with --revisit, watch the first N pages",
    )
    p.add_argument("--max-depth", type=count, metavar="N", help="links followed at most N deep (a seed is 0)")
    p.add_argument("--max-per-host", type=count, metavar="N", help="at most N URLs settled per host")
    p.add_argument(
        "--max-links",
        type=positive,
        metavar="N",
        help="links taken from one page, at most (default: 10000; the rest are counted)",
    )
    p.add_argument(
        "--max-queued-per-host",
        type=positive,
        metavar="N",
        help="URLs queued for one host, at most (default: 100000)",
    )
    p.add_argument(
        "--max-bytes", type=positive, metavar="N", help="bytes kept of a response (default: 5 MiB)"
    )
    p.add_argument(
        "--min-delay",
        type=seconds,
        metavar="S",
        help="seconds between two requests to one host, at least (default: 1)",
    )
    p.add_argument(
        "--max-delay",
        type=seconds,
        metavar="S",
        help="a host asking for a longer wait is parked, not waited for (default: 300)",
    )
    p.add_argument(
        "--concurrency",
        type=positive,
        metavar="N",
        help="requests on the wire at once; every host with work is worked at once (default: 16)",
    )
    p.add_argument(
        "--scope",
        choices=("seeds", "any"),
        default=None,
        help="seeds: only the seeds' hosts (default); any: follow links anywhere; kept by the crawl",
    )
    p.add_argument(
        "--allow-private",
        nargs="?",
        const="all",
        metavar="CIDRS",
        help="also connect to loopback, private and other non-public addresses (all, or these"
        " comma-separated networks); by default only public addresses and the seeds' own hosts",
    )
    p.add_argument(
        "--cache",
        default=None,
        help="where robots.txt files are kept: memory, sqlite (default), sqlite:///FILE or redis://...",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="S",
        help="seconds a request may take in all (default: 30)",
    )
    p.add_argument(
        "--robots-backoff",
        type=seconds,
        metavar="S",
        help="an unreachable robots.txt is tried again after S seconds, then twice as long each time"
        " (default: 60)",
    )
    p.add_argument(
        "--robots-attempts",
        type=positive,
        metavar="N",
        help="reads of an unreachable robots.txt before its host's URLs are settled as errors (default: 4)",
    )
    p.add_argument("--retry-errors", action="store_true", help="queue the URLs settled as errors again")
    p.add_argument(
        "--revisit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep coming back: every page is due again after its own interval, until the crawl is"
        " stopped (SIGTERM: exit 0); kept by the crawl (--no-revisit to end it)",
    )
    p.add_argument(
        "--revisit-min",
        type=interval,
        metavar="T",
        help="a page is asked again T after its first visit and after each change; the interval doubles"
        " while it stays the same (seconds, or 30m, 6h, 1d; default: 1d)",
    )
    p.add_argument(
        "--revisit-max",
        type=interval,
        metavar="T",
        help="the longest interval between two visits of a page (default: 30d); a server's Check: is"
        " never undercut, whatever these say",
    )
    p.add_argument(
        "--robots-max-age",
        type=interval,
        metavar="T",
        help="read robots.txt again after T at most during this crawl (default: 24h, or less where the"
        " server says so)",
    )
    p.add_argument(
        "--warc-size",
        type=byte_size,
        metavar="SIZE",
        help="start a new WARC file past SIZE bytes (K, M, G: 64M; default: 1G), and new numbered"
        " pages and ledger files with it (also on SIGHUP); kept by the crawl",
    )
    p.add_argument("--no-warc", action="store_true", help="write no WARC files")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_crawl)
    return p


def cmd_crawl(args: argparse.Namespace, out: Any) -> int:
    for seed in args.seeds:
        try:
            check_seed(seed)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    shared = is_shared(args.frontier)
    if shared and not args.name:
        raise UsageError(f"{shown(args.frontier)} holds many crawls: name this one with --name CRAWL")
    if args.frontier is not None and "://" in args.frontier and not shared:
        raise UsageError(
            f"--frontier {shown(args.frontier)}: a SQLite file, or redis://, rediss:// or redis-cluster://"
        )
    if shared:
        _guard_redis(args.frontier, args.allow_unsafe_redis)
    elif args.allow_unsafe_redis:
        raise UsageError(
            "--allow-unsafe-redis accepts a Redis that can lose a fleet's crawl: this crawl is on SQLite"
        )
    try:
        kept = read_settings(args.out, args.frontier, args.name)  # read before DIR is made
    except CrawlFileError as exc:
        raise UsageError(str(exc)) from None
    crawl = f"the crawl {args.name!r} at {shown(args.frontier)}" if shared else str(args.out)
    if not args.seeds and kept is None:
        raise UsageError(f"no seeds, and {crawl} holds no crawl to resume: give gemini:// or gopher:// URLs")
    if args.agent is None and kept is None:
        raise UsageError("a new crawl needs the robot's name: --agent NAME (a product token, such as mybot)")
    try:
        prepare(args.out)
    except CrawlFileError as exc:
        raise UsageError(str(exc)) from None
    settings = {name: getattr(args, name) for name in SETTINGS}
    for name, default in SETTINGS.items():  # left out: as the crawl had it, else the default
        if settings[name] is None:
            settings[name] = (kept or {}).get(name, default)
    if not settings["revisit"]:
        given = [
            f"--{n.replace('_', '-')}" for n in ("revisit_min", "revisit_max") if getattr(args, n) is not None
        ]
        if given:
            raise UsageError(
                f"{' and '.join(given)} set how often a revisiting crawl comes back: add --revisit"
            )
    try:
        allow = _allow_private(settings["allow_private"])
        crawler = Crawler(
            args.agent,
            args.role,
            args.out,
            profile=args.profile,
            scope=args.scope,
            max_pages=settings["max_pages"],
            max_depth=settings["max_depth"],
            max_per_host=settings["max_per_host"],
            max_links=settings["max_links"],
            max_queued_per_host=settings["max_queued_per_host"],
            max_bytes=settings["max_bytes"],
            min_delay=settings["min_delay"],
            max_delay=max(settings["max_delay"], settings["min_delay"]),
            concurrency=settings["concurrency"],
            cache=args.cache or os.environ.get("MANNERS_CACHE", "sqlite"),
            warc=not args.no_warc,
            timeout=settings["timeout"] or 30.0,
            allow_private=allow,
            robots_backoff=settings["robots_backoff"] or 60.0,
            robots_attempts=settings["robots_attempts"],
            retry_errors=args.retry_errors,
            settings=settings,
            frontier=args.frontier,
            name=args.name,
            lease=settings["lease"],
            revisit=bool(settings["revisit"]),
            revisit_min=settings["revisit_min"],
            revisit_max=settings["revisit_max"],
            robots_max_age=settings["robots_max_age"],
            warc_size=settings["warc_size"],
        )
    except (ValueError, CacheError) as exc:
        raise UsageError(str(exc)) from None
    try:
        return asyncio.run(_run(crawler, args))
    except CacheError as exc:
        raise UsageError(f"{exc}; pass --cache memory to work without it") from None


def _guard_redis(spec: str, allow: bool) -> None:
    """Refuse (exit 2, one sentence) a Redis whose settings can lose the crawl, before anything is
    written to it; with ``--allow-unsafe-redis``, or for what only loses part of it, warn."""
    from .frontier import FrontierError
    from .redis_frontier import durability
    from .redis_settings import sentence

    try:
        where, found = durability(spec)
    except FrontierError as exc:
        raise UsageError(str(exc)) from None
    refused = [f for f in found if f.refuse]
    if refused and not allow:
        raise UsageError(f"{sentence(where, refused)}, or pass --allow-unsafe-redis to accept the risk")
    if found:
        accepted = "; accepted by --allow-unsafe-redis" if refused else ""
        print(
            f"manners crawl: warning: {safe(sentence(where, found))}{accepted}", file=sys.stderr, flush=True
        )


def _allow_private(value: Any) -> bool | tuple[Network, ...]:
    if value is None:
        return False
    if value == "all":
        return True
    return parse_networks(str(value))


async def _run(crawler: Crawler, args: argparse.Namespace) -> int:
    from .frontier import CrawlLost, FrontierError
    from .progress import Progress, describe, safe, summary

    loop = asyncio.get_running_loop()
    interrupted = False
    stopped_by: int | None = None

    def on_signal(number: int) -> None:
        nonlocal interrupted, stopped_by
        if interrupted:  # a second Ctrl-C: stop waiting for requests in flight
            raise KeyboardInterrupt
        interrupted, stopped_by = True, number
        crawler.stop()
        print(
            "\nmanners crawl: stopping: requests in flight end or go back to the queue ...",
            file=sys.stderr,
            flush=True,
        )

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_signal, signal.SIGINT)
        loop.add_signal_handler(signal.SIGTERM, on_signal, signal.SIGTERM)
        if hasattr(signal, "SIGHUP"):
            loop.add_signal_handler(signal.SIGHUP, crawler.rotate)  # new files, as logrotate expects
    progress: Progress | None = None
    disallowed: list[str] = []
    failed: str | None = None
    lost = False  # the crawl is gone from its frontier (CrawlLost): exit 1, never "done"
    try:
        try:
            await crawler.open()
        except (FrontierError, CrawlFileError, ValueError) as exc:  # before anything is sent: a usage error
            raise UsageError(str(exc)) from None
        try:
            progress = Progress(crawler, live=None if not args.json else False)
            ticker = asyncio.ensure_future(_tick(progress))
            try:
                async for page in crawler.crawl(args.seeds):
                    progress.page(page)
                    if page.outcome == "disallowed" and len(disallowed) < 50:
                        disallowed.append(describe(page))
            except (
                FrontierError,
                CrawlFileError,
                OSError,
            ) as exc:  # during the crawl: in flight back to the queue
                failed = str(exc) if not isinstance(exc, OSError) else describe_os(exc, crawler.out)
                lost = isinstance(exc, CrawlLost)
            finally:
                ticker.cancel()
                await progress.aclose()
        finally:
            await crawler.close()
    finally:
        with contextlib.suppress(Exception):
            loop.remove_signal_handler(signal.SIGINT)
            loop.remove_signal_handler(signal.SIGTERM)
            if hasattr(signal, "SIGHUP"):
                loop.remove_signal_handler(signal.SIGHUP)
    # SIGTERM is a revisiting crawl's normal end (a service manager stopping it): stopped as asked
    asked = interrupted and crawler.revisit and stopped_by == signal.SIGTERM
    interrupted = interrupted and not asked
    result = summary(crawler, interrupted)
    ended = "failed" if failed else "interrupted" if interrupted else "stopped" if asked else "done"
    resume = _resume_command(args, crawler)
    s = crawler.stats
    more = _limit_hint(crawler, args) if s.limit and s.queued else None
    if args.json:
        import json

        resumable = resume if interrupted or asked or failed or result["queued"] else None
        print(json.dumps({**result, "ended": ended, "error": failed, "resume": resumable, "raise": more},
                         indent=2))  # fmt: skip
    else:
        whole = result["whole"]
        said = {"failed": "stopped", "stopped": "stopped as asked (SIGTERM, a revisiting crawl's normal end)"}
        print(
            f"{said.get(ended, ended)}: this run fetched {s.fetched},"
            f" disallowed {s.disallowed}, redirects {s.redirects}, errors {s.errors}, skipped {s.skipped},"
            f" {s.requests} requests, {result['bytes']} bytes in {result['seconds']} s"
        )
        names = ("pages", "fetched", "disallowed", "redirect", "error", "skipped", "gone", "queued")
        print("whole crawl: " + ", ".join(f"{k} {whole.get(k, 0)}" for k in names))  # type: ignore[attr-defined]
        for line in disallowed[:20]:
            print("  " + line)
        if len(disallowed) > 20 or s.disallowed > len(disallowed):
            print(f"  ... {s.disallowed - min(len(disallowed), 20)} more disallowed in pages.jsonl")
        for auth, why in result["parked"].items():  # type: ignore[attr-defined]
            print(f"parked: {safe(auth)}: {safe(why)}")
        if more:
            print(f"stopped at --{s.limit} {crawler.max_pages} (it counts the whole crawl); {s.queued} URLs"
                  f" still queued: to go on, raise it: {more}")  # fmt: skip
        print("files: " + ", ".join(str(f) for f in result["files"]))  # type: ignore[attr-defined]
        if interrupted or failed:
            print(f"to resume: {resume}")
        elif asked:
            print(f"to go on watching: {resume}")
    if failed and lost:
        print(f"manners crawl: {failed}", file=sys.stderr)  # nothing to take back: the crawl is gone
        return 1
    if failed:
        if crawler.shared:
            back = f"its leases expire within --lease {crawler.lease:g} s and the fleet takes them back"
        else:
            back = "what was in flight is queued again when the crawl resumes"
        print(f"manners crawl: {failed}; {back}", file=sys.stderr)
        return 1
    if interrupted:
        return 130
    return 0


def describe_os(exc: OSError, out: Path) -> str:
    from .outdir import describe

    return describe(exc, Path(exc.filename) if exc.filename else out)


def _limit_hint(crawler: Crawler, args: argparse.Namespace) -> str:
    """The resume command with the limit that stopped the crawl raised (doubled)."""
    limit = crawler.max_pages or 0
    return shlex.join([*_this_crawl(args, crawler), "--max-pages", str(max(limit * 2, limit + 1))])


async def _tick(progress: Any) -> None:
    while True:
        await asyncio.sleep(0.25)
        progress.tick()


def _resume_command(args: argparse.Namespace, crawler: Crawler) -> str:
    """The crawl keeps its robot and options: the directory (and a fleet's frontier) is all a resume needs."""
    return shlex.join(_this_crawl(args, crawler))


def _this_crawl(args: argparse.Namespace, crawler: Crawler) -> list[str]:
    """``manners crawl`` and what names this crawl: its directory, its frontier if not the
    directory's (a Redis URL without its password: the operator has it)."""
    where = ["--frontier", shown(args.frontier)] if args.frontier is not None else []
    if crawler.shared:
        where += ["--name", str(crawler.name)]
    return ["manners", "crawl", *where, "--out", str(args.out)]


# -- manners crawl status ---------------------------------------------------------------------


def add_status_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``status`` on ``crawl``'s own subparsers (see ``CrawlParser``)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "status",
        help="what a crawl's frontier says: URLs by state and outcome, hosts, workers, the oldest lease",
        description="What a crawl's frontier says of it: URLs by state and outcome, hosts queued, ready"
        " and parked, the workers with their last heartbeat, and the lease that expires first.",
    )
    p.add_argument(
        "--frontier",
        required=True,
        metavar="F",
        help="the crawl's frontier: DIR/frontier.sqlite3 (or DIR), or a redis:// URL with --name",
    )
    p.add_argument("--name", metavar="CRAWL", help="the crawl's name on a Redis frontier")
    p.add_argument("--json", action="store_true", help="print it as JSON")
    p.set_defaults(func=cmd_status)
    return p


def cmd_status(args: argparse.Namespace, out: Any) -> int:
    from .frontier import FrontierError, open_frontier
    from .progress import crawl_status, status_lines

    spec: str | Path = args.frontier
    if is_shared(args.frontier):
        if not args.name:
            raise UsageError(f"{shown(args.frontier)} holds many crawls: name one with --name CRAWL")
    else:
        path = Path(args.frontier)
        spec = path / "frontier.sqlite3" if path.is_dir() else path
        if "://" in args.frontier or not Path(spec).is_file():
            raise UsageError(
                f"{shown(args.frontier)} is no crawl's frontier (a frontier.sqlite3, or a redis:// URL)"
            )

    name = args.name if is_shared(args.frontier) else None

    async def read() -> dict[str, object]:
        frontier = open_frontier(str(spec), None, name)
        try:
            if name is not None and await frontier.get_meta("identity") is None:
                raise FrontierError(f"{shown(args.frontier)} holds no crawl named {name!r}")
            return await crawl_status(frontier, shown(args.frontier), name)
        finally:
            await frontier.close()

    try:
        status = asyncio.run(read())
    except FrontierError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        out.data(status)
    else:
        for line in status_lines(status):
            out.line(line)
    return 0
