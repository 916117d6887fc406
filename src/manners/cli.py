"""The ``manners`` command: check, explain, lint and fetch.

Colour and tables on a terminal (rich), plain lines when piped, ``--json`` for
scripts.  A user's mistake is one sentence on stderr and exit status 2, never a
traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .cache import CacheError
from .fetch.locations import DEFAULT_PORTS
from .profiles import PROFILES, RFC9309, profile_for
from .robot import Policy, Robot
from .robots import RobotsTxt, parse

READERS: list[tuple[str, str, tuple[str, ...]]] = [  # column, profile, roles
    ("RFC 9309", "rfc9309", ()),
    ("Google", "google", ()),
    ("Gemini indexer", "gemini", ("indexer",)),
    ("Gemini archiver", "gemini", ("archiver",)),
    ("Gemini researcher", "gemini", ("researcher",)),
    ("Gemini webproxy", "gemini", ("webproxy",)),
    ("Gopher", "gopher", ()),
    ("Gopher draft", "gopher", ()),  # stops at the end of the User-agent: * record
    ("1994", "1994", ()),
]
UNREAD = ("unavailable", "unreachable", "retry")


class UsageError(Exception):
    """A mistake of the user's: one sentence saying what to do instead."""


@dataclass
class Source:
    """A robots.txt as read for a command: from a file, standard input or a server."""

    robots: RobotsTxt
    body: bytes
    name: str
    policy: Policy | None = None  # when fetched through the cache


# -- output ------------------------------------------------------------------------------


class Out:
    def __init__(self, as_json: bool) -> None:
        from rich.console import Console

        self.json = as_json
        self.console = Console(highlight=False, soft_wrap=True)
        self.rich = self.console.is_terminal and not as_json

    def line(self, text: str, style: str = "") -> None:
        if self.rich:
            self.console.print(text, style=style or None, markup=False)
        else:
            print(text)

    def data(self, value: Any) -> None:
        print(json.dumps(value, indent=2, ensure_ascii=False))

    def table(
        self, title: str, header: list[str], rows: list[list[str]], marks: list[bool] | None = None
    ) -> None:
        """A table; rows flagged in ``marks`` are highlighted (plain output: a leading '!')."""
        marks = marks or [False] * len(rows)
        if self.rich:
            from rich.table import Table

            t = Table(title=title, title_justify="left", show_lines=False)
            for h in header:
                t.add_column(h)
            for row, mark in zip(rows, marks, strict=True):
                t.add_row(*row, style="bold yellow" if mark else None)
            self.console.print(t)
            return
        print(title)
        cells = [header, *rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
        for n, row in enumerate(cells):
            flag = "!" if n and marks[n - 1] else " "
            print(flag + " " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        print()


# -- reading robots.txt ------------------------------------------------------------------


def is_url(text: str) -> bool:
    return "://" in text


def scheme_profile(source: str, default: str) -> str:
    """The profile a gemini:// or gopher:// source calls for, else ``default``."""
    name = profile_for(source).name if is_url(source) else RFC9309.name
    return default if name == RFC9309.name else name


def check_url(url: str) -> None:
    scheme = url.split("://", 1)[0].lower()
    if scheme not in DEFAULT_PORTS:
        known = ", ".join(f"{s}://" for s in DEFAULT_PORTS)
        raise UsageError(f"{url}: unknown scheme {scheme!r}; manners reads robots.txt for {known} URLs")


def read_source(where: str, profile: str | None, robot: Callable[[], Robot]) -> Source:
    """A robots.txt from a path, '-' (standard input) or a URL (fetched through the cache)."""
    if where == "-":
        body = sys.stdin.buffer.read()
        return Source(parse(body, profile), body, "standard input")
    if is_url(where):
        check_url(where)
        (policy,) = policies(robot, [where])
        return Source(policy.robots, policy.entry.body, policy.entry.url, policy)
    path = Path(where)
    if path.is_dir():
        raise UsageError(f"{where} is a directory: give the robots.txt file in it, or a URL")
    try:
        body = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(
            f"no such file {where!r}: give a robots.txt file, '-' for standard input, or a URL"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot read {where}: {exc.strerror}") from None
    return Source(parse(body, profile), body, where)


def policies(robot: Callable[[], Robot], urls: list[str]) -> list[Policy]:
    """The policy for each URL's authority, through one robot and its cache."""

    async def read() -> list[Policy]:
        async with robot() as r:
            return [await r.policy(url) for url in urls]

    try:
        return asyncio.run(read())
    except CacheError as exc:
        raise UsageError(f"{exc}; pass --cache memory to work without it") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def make_robot(args: argparse.Namespace, profile: str | None = None) -> Callable[[], Robot]:
    def build() -> Robot:
        try:
            return Robot(
                args.agent, args.role, args.cache, timeout=args.timeout, min_delay=0, profile=profile
            )
        except (ValueError, CacheError) as exc:
            raise UsageError(str(exc)) from None

    return build


def unread_note(policy: Policy) -> str:
    e = policy.entry
    what = "unreachable for now" if e.outcome == "retry" else e.outcome
    return f"robots.txt at {e.url} is {what} ({e.status}): {e.meaning or 'see manners fetch'}"


# -- check -------------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace, out: Out) -> int:
    for url in args.urls:
        if is_url(url):
            check_url(url)
    robot = make_robot(args, args.profile)
    if args.robots:
        fixed = read_source(args.robots, args.profile, robot)
        found: list[tuple[RobotsTxt, Policy | None, str]] = [(fixed.robots, fixed.policy, fixed.name)] * len(
            args.urls
        )
    else:
        for url in args.urls:
            if not is_url(url):
                raise UsageError(
                    f"{url!r} is no URL: give full URLs, or --robots FILE to check paths against"
                )
        found = [(p.robots, p, p.entry.url) for p in policies(robot, args.urls)]
    results, unread = [], {}
    for url, (robots, policy, name) in zip(args.urls, found, strict=True):
        d = robots.decide(url, args.agent, args.role)
        if policy is not None and policy.entry.outcome in UNREAD:
            unread[policy.entry.url] = unread_note(policy)
        results.append({"url": url, **d._asdict(), "robots": name})
    if out.json:
        out.data({"results": results, "unread": list(unread.values())})
    else:
        for r in results:
            verdict = "allowed" if r["allowed"] else "disallowed"
            why = f"line {r['line']}: {r['rule']}" if r["line"] is not None else r["reason"]
            out.line(f"{verdict:10}  {r['url']}  ({why})", "green" if r["allowed"] else "bold red")
        for note in unread.values():
            print(f"manners: {note}", file=sys.stderr)
    if unread:
        return 2
    return 0 if all(r["allowed"] for r in results) else 1


# -- explain -----------------------------------------------------------------------------


def sample_paths(robots: RobotsTxt) -> list[str]:
    """A path per rule, spelled as the rule says: '*' as 'x', a final '$' dropped."""
    out: dict[str, None] = {}
    for line in robots.lines():
        if line.kind in ("allow", "disallow") and line.value:
            out[line.value.replace("*", "x").removesuffix("$") or "/"] = None
    return list(out)


def until_star(body: bytes) -> bytes:
    """The file as a robot following the Gopher draft reads it: nothing after the
    'User-agent: *' record ("if it is not listed last of all, anything below it will be
    ignored")."""
    robots = parse(body, "gopher")
    star = next((g for g in robots.groups() if "*" in g.names), None)
    if star is None:
        return body
    return "\n".join(robots.text.split("\n")[: star.lines[1]]).encode("utf-8", "surrogateescape")


def cmd_explain(args: argparse.Namespace, out: Out) -> int:
    for url in args.urls:
        if is_url(url):
            check_url(url)
    src = read_source(args.source, None, make_robot(args))
    robots = src.robots
    profile = args.profile or scheme_profile(args.source, "gemini" if args.role else "rfc9309")
    chosen, reason = robots.applies(args.agent, args.role, profile)
    deciding = {rng for _, ranges in chosen for rng in ranges}
    groups = robots.groups(profile)
    lines = robots.lines()
    targets = list(args.urls) or sample_paths(robots)
    readers = [
        parse(until_star(src.body) if name == "Gopher draft" else src.body, prof) for name, prof, _ in READERS
    ]
    matrix = []
    for target in targets:
        row = [
            r.decide(target, args.agent, roles or args.role)  # a Gemini column is its own role
            for r, (_, _, roles) in zip(readers, READERS, strict=True)
        ]
        matrix.append((target, row))

    if out.json:
        out.data(
            {
                "source": src.name,
                "profile": profile,
                "agent": args.agent,
                "roles": args.role,
                "groups": [
                    {
                        "lines": list(g.lines),
                        "user_agents": [v for _, v in g.agents],
                        "virtual_agents": [v for _, v in g.virtual],
                        "applies": g.lines in deciding,
                        "rules": [
                            {"line": ln.number, "rule": f"{ln.key}: {ln.value}"}
                            for ln in lines
                            if ln.kind in ("allow", "disallow") and g.lines[0] <= ln.number <= g.lines[1]
                        ],
                    }
                    for g in groups
                ],
                "chosen": [{"who": who, "lines": [list(r) for r in ranges]} for who, ranges in chosen],
                "reason": None if chosen else reason,
                "matrix": [
                    {
                        "target": t,
                        "disagree": len({d.allowed for d in row}) > 1,
                        "readers": {
                            name: {"allowed": d.allowed, "line": d.line}
                            for (name, _, _), d in zip(READERS, row, strict=True)
                        },
                    }
                    for t, row in matrix
                ],
            }
        )
        return 0

    who = args.agent + (f" with roles {', '.join(args.role)}" if args.role else "")
    out.line(f"{src.name}, read as {profile} for {who}", "bold")
    out.line("")
    if chosen:
        out.line("These groups decide (a target must pass each):")
        for label, ranges in chosen:
            out.line(f"  {label}: lines {', '.join(f'{a}-{b}' for a, b in ranges)}")
    else:
        out.line(reason)
    out.line("")
    for g in groups:
        names = [f"User-agent: {v}" for _, v in g.agents] + [f"Virtual-agent: {v}" for _, v in g.virtual]
        mark = "applies" if g.lines in deciding else "does not apply"
        out.line(
            f"lines {g.lines[0]}-{g.lines[1]}  {'; '.join(names)}  ({mark})",
            "green" if g.lines in deciding else "dim",
        )
        for ln in lines:
            if ln.kind in ("allow", "disallow") and g.lines[0] <= ln.number <= g.lines[1]:
                out.line(f"    {ln.number:>4}  {ln.key}: {ln.value}")
    preamble = [
        ln
        for ln in lines
        if ln.kind in ("allow", "disallow") and (not groups or ln.number < groups[0].lines[0])
    ]
    if preamble:
        out.line(
            "rules before any User-agent line (RFC 9309 and Google ignore them;"
            " Gemini reads them as '*'; Gopher applies them to everyone):"
        )
        for ln in preamble:
            out.line(f"    {ln.number:>4}  {ln.key}: {ln.value}")
    out.line("")
    rows, marks = [], []
    for target, row in matrix:
        cells = [("allow" if d.allowed else "DISALLOW") + (f" {d.line}" if d.line else "") for d in row]
        rows.append([target, *cells])
        marks.append(len({d.allowed for d in row}) > 1)
    title = (
        f"What each reader decides for {args.agent}"
        " (cell: verdict and deciding line; highlighted: readers disagree)"
    )
    out.table(title, ["target", *(name for name, _, _ in READERS)], rows, marks)
    n = sum(marks)
    out.line(
        f"{n} of {len(rows)} targets read differently by different robots"
        if n
        else "every reader agrees on every target"
    )
    return 0


# -- lint ------------------------------------------------------------------------------


def cmd_lint(args: argparse.Namespace, out: Out) -> int:
    profile = args.profile or scheme_profile(args.source, "rfc9309")
    src = read_source(args.source, profile, make_robot(args, profile))
    found = src.robots.diagnostics
    if out.json:
        out.data({"source": src.name, "profile": profile, "diagnostics": [d._asdict() for d in found]})
    elif not found:
        out.line(f"{src.name}: no findings ({profile})", "green")
    else:
        style = {"error": "bold red", "warning": "yellow", "info": "dim"}
        for d in found:
            where = f"{src.name}:{d.line}" if d.line is not None else src.name
            out.line(f"{where}: {d.severity}: {d.code}: {d.message}", style[d.severity])
        counts = {s: sum(d.severity == s for d in found) for s in ("error", "warning", "info")}
        out.line(", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items()))
    return 1 if any(d.severity == "error" for d in found) else 0


# -- fetch -------------------------------------------------------------------------------


def cmd_fetch(args: argparse.Namespace, out: Out) -> int:
    check_url(args.url)
    (policy,) = policies(make_robot(args), [args.url])
    e = policy.entry
    info = {
        "robots_url": e.url,
        "source": e.source,
        "status": e.status,
        "outcome": e.outcome,
        "meaning": e.meaning,
        "fetched_at": _when(e.fetched_at),
        "expires_at": _when(e.expires_at),
        "stale": policy.stale,
        "cache": args.cache,
        "cache_key": policy.key,
        "body": e.body.decode("utf-8", "replace") if e.outcome == "ok" else None,
    }
    if policy.stale:
        info["body"] = e.body.decode("utf-8", "replace")
    if out.json:
        out.data(info)
    else:
        if info["body"] is not None:
            sys.stdout.write(
                info["body"] if info["body"].endswith("\n") or not info["body"] else info["body"] + "\n"
            )
            out.line("")
        out.line(
            f"# {e.url}: {e.outcome} (status {e.status})", "bold green" if e.outcome == "ok" else "bold red"
        )
        out.line(f"# {e.meaning}")
        if e.source != e.url:
            out.line(f"# read from {e.source}")
        out.line(
            f"# cache {args.cache}, key {policy.key}: fetched {info['fetched_at']},"
            f" fetched again after {info['expires_at']}"
            + (" (answering from an older copy)" if policy.stale else "")
        )
    return 0 if e.outcome == "ok" else 2


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


# -- the parser --------------------------------------------------------------------------

EXAMPLES = {
    "check": """examples:
  manners check https://example.org/private/page --agent mybot
  manners check gemini://example.org/log/ --role indexer --role archiver
  manners check /private /public --robots robots.txt --json
  curl -s https://example.org/robots.txt | manners check /x --robots -""",
    "explain": """examples:
  manners explain robots.txt
  manners explain gemini://example.org/ --agent mybot --role archiver
  manners explain robots.txt /search /about --json""",
    "lint": """examples:
  manners lint robots.txt
  manners lint gopher://example.org/ --profile gopher --json""",
    "fetch": """examples:
  manners fetch https://example.org/
  manners fetch gopher://example.org/ --cache memory --json""",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="manners",
        description="robots.txt for robots that behave: on the Web, in Geminispace and in Gopherspace.",
        epilog="Run 'manners COMMAND --help' for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"manners {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    raw = argparse.RawDescriptionHelpFormatter

    def common(p: argparse.ArgumentParser, robot: bool = True) -> None:
        p.add_argument("--json", action="store_true", help="print JSON for scripts")
        if robot:
            p.add_argument(
                "--agent", default="*", metavar="NAME", help="the robot's product token (default: *)"
            )
            p.add_argument(
                "--role",
                action="append",
                default=[],
                metavar="ROLE",
                help="a virtual agent the robot acts as: indexer, archiver, researcher, webproxy, ..."
                " (repeatable)",
            )
        p.add_argument(
            "--cache",
            default=os.environ.get("MANNERS_CACHE", "sqlite"),
            help="where fetched robots.txt files are kept: memory, sqlite (default), sqlite:///FILE or redis://...",
        )
        p.add_argument("--timeout", type=float, default=30.0, help="seconds a fetch may take (default: 30)")

    def source(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "source", metavar="FILE_OR_URL", help="a robots.txt file, '-' for standard input, or a URL"
        )

    p = sub.add_parser(
        "check",
        help="may a robot fetch these URLs, and why not?",
        epilog=EXAMPLES["check"],
        formatter_class=raw,
    )
    p.add_argument("urls", nargs="+", metavar="URL", help="URLs to check (paths too, with --robots)")
    p.add_argument(
        "--profile", choices=sorted(PROFILES), help="read robots.txt as this profile (default: by scheme)"
    )
    p.add_argument(
        "--robots",
        metavar="FILE_OR_URL",
        help="use this robots.txt ('-': standard input) instead of fetching",
    )
    common(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "explain",
        help="the groups, the rules, and what every kind of robot decides",
        epilog=EXAMPLES["explain"],
        formatter_class=raw,
    )
    source(p)
    p.add_argument(
        "urls", nargs="*", metavar="URL", help="targets for the matrix (default: each rule's own path)"
    )
    p.add_argument(
        "--profile", choices=sorted(PROFILES), help="the reading whose groups are shown (default: by scheme)"
    )
    common(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser(
        "lint",
        help="findings with line numbers, severity and a stable code",
        epilog=EXAMPLES["lint"],
        formatter_class=raw,
    )
    source(p)
    p.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        help="judge the file as this profile (default: by scheme, else rfc9309)",
    )
    common(p)
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser(
        "fetch",
        help="the robots.txt a robot receives, and what the answer means",
        epilog=EXAMPLES["fetch"],
        formatter_class=raw,
    )
    p.add_argument("url", metavar="URL", help="any URL on the server")
    common(p)
    p.set_defaults(func=cmd_fetch)

    from .crawl.command import add_parser as add_crawl

    add_crawl(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Out(args.json)
    try:
        code: int = args.func(args, out)
        return code
    except UsageError as exc:
        print(f"manners: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
