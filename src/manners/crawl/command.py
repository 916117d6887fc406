"""``manners crawl``: the command line over ``Crawler``.  cli.py only calls ``add_parser``.

Exit status: 0 when the crawl completed (or reached a limit), 130 when interrupted
(Ctrl-C: requests in flight end or go back to the queue, files are closed), 2 for a
mistake of the user's, told in one sentence.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from ..cache import CacheError
from .crawler import Crawler, check_seed

EXAMPLES = """examples:
  manners crawl gemini://example.org/ --agent mybot --role indexer --out crawl
  manners crawl gopher://example.org/ --agent mybot --role archiver --out hole --max-pages 500
  manners crawl --agent mybot --out crawl      (resume: the seeds are kept in crawl/)"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``crawl`` on the ``manners`` command's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "crawl",
        help="crawl Geminispace and Gopherspace politely; run again with the same --out to resume",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("seeds", nargs="*", metavar="SEED", help="gemini:// or gopher:// URLs to start from")
    p.add_argument("--agent", required=True, metavar="NAME", help="the robot's name (product token)")
    p.add_argument(
        "--role",
        action="append",
        default=[],
        metavar="ROLE",
        help="a virtual agent the crawler acts as: indexer, archiver, ... (repeatable)",
    )
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="where the frontier, pages.jsonl and the WARC files go; the same DIR resumes",
    )
    p.add_argument("--max-pages", type=_count, metavar="N", help="stop after N requests")
    p.add_argument("--max-depth", type=_count, metavar="N", help="links followed at most N deep")
    p.add_argument("--max-per-host", type=_count, metavar="N", help="at most N pages per host")
    p.add_argument(
        "--max-bytes",
        type=_count,
        default=5 << 20,
        metavar="N",
        help="bytes kept of a response; longer ones are cut (default: 5 MiB)",
    )
    p.add_argument(
        "--min-delay",
        type=_seconds,
        default=1.0,
        metavar="S",
        help="seconds between two requests to one host, at least (default: 1)",
    )
    p.add_argument(
        "--max-delay",
        type=_seconds,
        default=300.0,
        metavar="S",
        help="a host asking for a longer wait is parked, not waited for (default: 300)",
    )
    p.add_argument("--concurrency", type=_count, default=16, metavar="N", help="hosts at once (default: 16)")
    p.add_argument(
        "--scope",
        choices=("seeds", "any"),
        default="seeds",
        help="seeds: only the seeds' hosts (default); any: follow links anywhere",
    )
    p.add_argument(
        "--cache",
        default=os.environ.get("MANNERS_CACHE", "sqlite"),
        help="where robots.txt files are kept: memory, sqlite (default), sqlite:///FILE or redis://...",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=30.0,
        metavar="S",
        help="seconds a request may take in all (default: 30)",
    )
    p.add_argument("--no-warc", action="store_true", help="write no WARC files")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_crawl)
    return p


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return n


def _seconds(text: str) -> float:
    try:
        n = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not n >= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds")
    return n


def cmd_crawl(args: argparse.Namespace, out: Any) -> int:
    from ..cli import UsageError

    for seed in args.seeds:
        try:
            check_seed(seed)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if not args.seeds and not (args.out / "frontier.sqlite3").exists():
        raise UsageError(
            f"no seeds, and {args.out} holds no crawl to resume: give gemini:// or gopher:// URLs"
        )
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"{args.out} is a file: --out needs a directory")
    try:
        crawler = Crawler(
            args.agent,
            args.role,
            args.out,
            max_pages=args.max_pages,
            max_depth=args.max_depth,
            max_per_host=args.max_per_host,
            max_bytes=args.max_bytes,
            min_delay=args.min_delay,
            max_delay=max(args.max_delay, args.min_delay),
            concurrency=max(args.concurrency, 1),
            scope=args.scope,
            cache=args.cache,
            warc=not args.no_warc,
            timeout=args.timeout or 30.0,
        )
    except (ValueError, CacheError) as exc:
        raise UsageError(str(exc)) from None
    try:
        return asyncio.run(_run(crawler, args))
    except CacheError as exc:
        raise UsageError(f"{exc}; pass --cache memory to work without it") from None


async def _run(crawler: Crawler, args: argparse.Namespace) -> int:
    from ..cli import UsageError
    from .frontier import FrontierError
    from .progress import Progress, describe, safe, summary

    loop = asyncio.get_running_loop()
    interrupted = False

    def on_signal() -> None:
        nonlocal interrupted
        if interrupted:  # a second Ctrl-C: stop waiting for requests in flight
            raise KeyboardInterrupt
        interrupted = True
        crawler.stop()
        print(
            "\nmanners crawl: stopping: requests in flight end or go back to the queue ...",
            file=sys.stderr,
            flush=True,
        )

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_signal)
        loop.add_signal_handler(signal.SIGTERM, on_signal)
    progress: Progress | None = None
    disallowed: list[str] = []
    try:
        async with crawler:
            progress = Progress(crawler, live=None if not args.json else False)
            ticker = asyncio.ensure_future(_tick(progress))
            try:
                async for page in crawler.crawl(args.seeds):
                    progress.page(page)
                    if page.outcome == "disallowed" and len(disallowed) < 50:
                        disallowed.append(describe(page))
            finally:
                ticker.cancel()
                progress.close()
    except FrontierError as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    finally:
        with contextlib.suppress(Exception):
            loop.remove_signal_handler(signal.SIGINT)
            loop.remove_signal_handler(signal.SIGTERM)
    result = summary(crawler, interrupted)
    resume = _resume_command(args)
    if args.json:
        import json

        print(json.dumps({**result, "resume": resume if interrupted or result["queued"] else None}, indent=2))
    else:
        s = crawler.stats
        print(
            f"{'interrupted' if interrupted else 'done'}: fetched {s.fetched}, disallowed {s.disallowed},"
            f" redirects {s.redirects}, errors {s.errors}, skipped {s.skipped}, {s.requests} requests,"
            f" {result['bytes']} bytes in {result['seconds']} s"
        )
        for line in disallowed[:20]:
            print("  " + line)
        if len(disallowed) > 20 or s.disallowed > len(disallowed):
            print(f"  ... {s.disallowed - min(len(disallowed), 20)} more disallowed in pages.jsonl")
        for auth, why in result["parked"].items():  # type: ignore[attr-defined]
            print(f"parked: {safe(auth)}: {safe(why)}")
        if s.limit:
            print(f"stopped at --{s.limit}; {s.queued} URLs still queued")
        print("files: " + ", ".join(str(f) for f in result["files"]))  # type: ignore[attr-defined]
        if interrupted or (s.queued and s.limit):
            print(f"to resume: {resume}")
    return 130 if interrupted else 0


async def _tick(progress: Any) -> None:
    while True:
        await asyncio.sleep(0.25)
        progress.tick()


def _resume_command(args: argparse.Namespace) -> str:
    argv = ["manners", "crawl", *sys.argv[2:]] if sys.argv[1:2] == ["crawl"] else None
    if argv is None:
        argv = ["manners", "crawl", "--agent", args.agent, "--out", str(args.out)]
        for role in args.role:
            argv += ["--role", role]
    return shlex.join(argv)
