"""The ``manners`` command: check, explain, lint and fetch.

Colour and tables on a terminal (rich), plain lines when piped, ``--json`` for
scripts.  A user's mistake is one sentence on stderr and exit status 2, never a
traceback.  Every character that came from outside (a robots.txt, a URL, a server's
answer) goes through :mod:`manners.terminal` before it is printed.

Exit status, for every command: 0 when a robot may go ahead (every URL allowed, no
error-level finding, the file was read or is missing, which allows everything); 1
when it may not (a URL disallowed, including by a robots.txt that could not be
reached; an error-level finding, which ``explain`` reports too: a file that is no
robots.txt at all); 2 for a usage error.

Before any verdict, every command says what was not read as the robots.txt it
answers from: a file that could not be fetched, one cut at the size cap
(``--max-bytes``) or one that is no robots.txt at all, in ``lint``'s words
(:func:`manners.diagnostics.said`).  Every ``--json`` output shares one vocabulary
(README, "JSON"): the keys of :func:`about` for the robots.txt, integer statuses
and RFC 3339 timestamps (:mod:`manners.vocabulary`).

The command line fetches robots.txt afresh unless ``--cached`` is given: whoever just
edited the file must see the new answer.  The fetch still goes through the cache, so
the store (and a Robot sharing it) keeps the newest copy and certificate.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import os
import re
import shutil
import sys
import textwrap
import time
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from ._core import head_lines
from .agents import require_token
from .cache import CacheError
from .diagnostics import lint, quoted, rests_on, said, whole_file
from .fetch import robots_locations
from .fetch.locations import DEFAULT_PORTS
from .profiles import PROFILES, RFC9309, profile_for
from .robot import Policy, Robot
from .robots import Decision, Diagnostic, RobotsTxt, asked_spacing, parse
from .terminal import safe, safe_json
from .version import __version__
from .vocabulary import status_number, timestamp

ROLES = ("indexer", "archiver", "researcher", "webproxy")
MIN_DELAY, MAX_DELAY = 1.0, 300.0  # a Robot's defaults, for the spacing shown


class Reader(NamedTuple):
    """A column of explain's matrix: a kind of robot reading the file."""

    name: str
    profile: str
    roles: tuple[str, ...] = ()  # a Gemini column is its own role
    draft: bool = False  # stops at the end of the User-agent: * record


READERS: list[Reader] = [
    Reader("RFC 9309", "rfc9309"),
    Reader("Google", "google"),
    *(
        Reader(f"{label} {role}", profile, (role,))
        for role in ROLES
        for label, profile in (("Gemini", "gemini"), ("Gemini-targeted", "gemini-targeted"))
    ),
    Reader("Gopher", "gopher"),
    Reader("Gopher draft", "gopher", draft=True),
    Reader("1994", "1994"),
]
UNREAD = ("unreachable", "retry")  # nothing read: everything is disallowed (unless a copy answers)


class UsageError(Exception):
    """A mistake of the user's: one sentence saying what to do instead."""


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


# -- output ------------------------------------------------------------------------------


class Out:
    """Where every line goes; each is made safe here, and nowhere else needs to remember."""

    def __init__(self, as_json: bool) -> None:
        from rich.console import Console

        self.json = as_json
        self.console = Console(highlight=False, soft_wrap=True, emoji=False)
        self.rich = self.console.is_terminal and not as_json
        if self.rich:
            self.width = self.console.width
        else:
            self.width = shutil.get_terminal_size((80, 24)).columns  # COLUMNS when piped

    def line(self, text: str, style: str = "") -> None:
        if self.rich:
            self.console.print(safe(text), style=style or None, markup=False)
        else:
            print(safe(text))

    def body(self, text: str) -> None:
        """A file as it is, line feeds and tabs kept, everything else unsafe escaped."""
        text = safe(text, lines=True)
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")

    def note(self, text: str) -> None:
        """A remark on stderr, so that stdout stays one line per answer."""
        print(f"manners: {safe(text)}", file=sys.stderr)

    def data(self, value: Any) -> None:
        print(safe_json(value))

    def gap(self, header: list[list[str]], rows: list[list[str]]) -> int | None:
        """The spaces between columns that let the table fit the width (two, else one), or
        None when it does not fit even so.  A header is a column's label, a line a word."""
        widths = [max([*map(len, h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
        margin = 0 if self.rich else 2  # plain lines start with the '!' mark and a space
        for gap in (2, 1):
            if sum(widths) + gap * (len(widths) - 1) + margin <= self.width:
                return gap
        return None

    def table(
        self, title: str, header: list[list[str]], rows: list[list[str]], marks: list[bool], gap: int
    ) -> None:
        """A table with ``gap`` spaces between columns and labels stacked a word a line; rows
        flagged in ``marks`` are highlighted (plain output: a leading '!')."""
        header = [[safe(w) for w in h] for h in header]
        rows = [[safe(c) for c in r] for r in rows]
        if self.rich:
            from rich.table import Table
            from rich.text import Text

            t = Table(title=Text(title), title_justify="left", box=None, padding=(0, gap, 0, 0))
            t.pad_edge = False
            for h in header:
                t.add_column(Text("\n".join(h)), no_wrap=True)
            for row, mark in zip(rows, marks, strict=True):
                t.add_row(*(Text(c) for c in row), style="bold yellow" if mark else None)
            self.console.print(t)
            return
        print(safe(title))
        depth = max(map(len, header))  # labels stand on the rows, as rich sets them
        labels = [[([""] * (depth - len(h)) + h)[n] for h in header] for n in range(depth)]
        cells = [*labels, *rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
        sep = " " * gap
        lines = [
            ("!" if n >= depth and marks[n - depth] else " ")
            + " "
            + sep.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for n, row in enumerate(cells)
        ]
        print("\n".join(lines) + "\n")


# -- reading robots.txt ------------------------------------------------------------------


def is_url(text: str) -> bool:
    """Whether ``text`` is an absolute URL (a scheme, then "://"), not a file or a path."""
    return _URL_START.match(text) is not None


_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


def scheme_profile(source: str, default: str) -> str:
    """The profile a gemini:// or gopher:// source calls for, else ``default``."""
    name = profile_for(source).name if is_url(source) else RFC9309.name
    return default if name == RFC9309.name else name


def check_url(url: str) -> None:
    """A URL manners can find a robots.txt for: a scheme it reads, and a host."""
    if not is_url(url):
        raise UsageError(f"{quoted(url)} is no URL: give a full URL, such as https://example.org/")
    scheme = url.split("://", 1)[0].lower()
    if scheme not in DEFAULT_PORTS:
        known = ", ".join(f"{s}://" for s in DEFAULT_PORTS)
        raise UsageError(f"{url}: unknown scheme {quoted(scheme)}; manners reads robots.txt for {known} URLs")
    try:
        robots_locations(url)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_target(target: str, profile: str | None) -> None:
    """A target is a URL manners reads, or a path as the reading takes one (a path starting
    with '/'; a bare selector too under the gopher profile), exactly as the API accepts it.
    Anything else, such as ``example.org/x``, is one sentence before anything is fetched."""
    if is_url(target):
        check_url(target)
        return
    try:
        _blank(profile).decide(target)
    except ValueError:
        raise UsageError(
            f"{quoted(target)} is neither a URL nor a path: give a full URL (scheme://host/path)"
            " or a path starting with '/'"
        ) from None


@functools.cache
def _blank(profile: str | None) -> RobotsTxt:
    return parse(b"", profile)


def check_agent(agent: str) -> None:
    """A name with no product token would match no group and run under '*' unnoticed."""
    try:
        require_token(agent)
    except ValueError as exc:
        raise UsageError(f"--agent: {exc}") from None


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


# -- pace --------------------------------------------------------------------------------


def pace(robots: RobotsTxt, agent: str, roles: Sequence[str], profile: str) -> dict[str, Any]:
    """How fast this robot may go, and the sitemaps: what a crawler asks after may I."""
    delay = robots.crawl_delay(agent, roles, profile=profile)
    now = datetime.now(UTC)
    rate = robots.request_rate(agent, roles, profile=profile)  # the slowest, in its window or not
    # as a default Robot spaces requests now: a Request-rate counts inside its window only
    spacing = min(max(MIN_DELAY, asked_spacing(robots, agent, roles, profile=profile, at=now)), MAX_DELAY)
    window = {
        "start_time": rate.start_time.strftime("%H:%M") if rate and rate.start_time else None,
        "end_time": rate.end_time.strftime("%H:%M") if rate and rate.end_time else None,
    }
    return {
        "crawl_delay": delay,
        "request_rate": {"requests": rate[0], "seconds": rate[1]} | window if rate else None,
        "check_interval": robots.check_interval(agent, roles, profile=profile),
        "spacing": spacing,
        "sitemaps": robots.sitemaps,
    }


def pace_lines(p: dict[str, Any]) -> list[str]:
    rate = p["request_rate"]
    asked = [
        f"Crawl-delay {p['crawl_delay']:g} s" if p["crawl_delay"] is not None else "no Crawl-delay",
        f"Request-rate {rate['requests']}/{rate['seconds']:g} s{window_words(rate)}"
        if rate
        else "no Request-rate",
        f"Check every {p['check_interval']:g} s" if p["check_interval"] is not None else "no Check",
    ]
    lines = [f"pace: {'; '.join(asked)}: a Robot keeps {p['spacing']:g} s between requests"]
    lines += [f"sitemap: {s}" for s in p["sitemaps"]] or ["no Sitemap lines"]
    return lines


def window_words(rate: dict[str, Any]) -> str:
    """When a Request-rate applies, in words: nothing for one that always does."""
    if rate["start_time"] is None:
        return ""
    return f" from {rate['start_time']} to {rate['end_time']} UTC"


# -- check -------------------------------------------------------------------------------


def target_list(args: argparse.Namespace) -> list[str]:
    """The URLs given: as arguments, '-' for standard input, and --urls FILE, one a line;
    each checked before anything is fetched (paths only with --robots)."""
    if "-" in args.urls and args.robots == "-":
        raise UsageError("standard input cannot hold both URLs (check -) and robots.txt (--robots -)")
    found: list[str] = []
    for url in args.urls:
        found += sys.stdin.buffer.read().decode(errors="surrogateescape").split() if url == "-" else [url]
    if args.url_file:
        try:
            found += Path(args.url_file).read_text(errors="surrogateescape").split()
        except OSError as exc:
            raise UsageError(f"cannot read --urls {args.url_file}: {exc.strerror}") from None
    if not found:
        raise UsageError("no URLs to check: give them as arguments, '-' for standard input, or --urls FILE")
    for url in found:
        if args.robots:
            check_target(url, args.profile)
        elif not is_url(url):
            raise UsageError(
                f"{quoted(url)} is no URL: give full URLs, or --robots FILE to check paths against"
            )
        else:
            check_url(url)
    return found


def cmd_check(args: argparse.Namespace, out: Out) -> int:
    check_agent(args.agent)
    urls = target_list(args)
    known: dict[str, Source] = {}
    if args.robots:
        fixed = read_source(args.robots, args.profile, args, out)
        known[fixed.name] = fixed
        where = [fixed.name] * len(urls)
    else:
        for name, policy in policies(args, urls, args.profile).items():
            known[name] = fetched(policy)
            say_where_from(policy, args, out)
        where = [robots_locations(url)[0] for url in urls]
    for src in known.values():
        for line in first_words(src):
            out.note(line)
    results = []
    for url, name in zip(urls, where, strict=True):
        results.append(
            {"url": url, **known[name].robots.decide(url, args.agent, args.role)._asdict(), "robots": name}
        )
    if out.json:
        files = []
        for name, src in known.items():
            first = next(u for u, w in zip(urls, where, strict=True) if w == name)
            profile = args.profile or (first if is_url(first) else RFC9309.name)
            files.append(about(src) | pace(src.robots, args.agent, args.role, profile))
        out.data({"results": results, "robots": files})
    else:
        for r in results:
            verdict = "allowed" if r["allowed"] else "disallowed"
            why = f"line {r['line']}: {r['rule']}" if r["line"] is not None else r["reason"]
            out.line(f"{verdict:10}  {r['url']}  ({why})", "green" if r["allowed"] else "bold red")
    return 0 if all(r["allowed"] for r in results) else 1


# -- explain -----------------------------------------------------------------------------


def sample_paths(robots: RobotsTxt) -> list[str]:
    """A path per rule, spelled as the rule says: '*' as 'x', a final '$' dropped."""
    out: dict[str, None] = {}
    for line in robots.lines():
        if line.kind in ("allow", "disallow") and line.value:
            out[line.value.replace("*", "x").removesuffix("$") or "/"] = None
    return list(out)


def until_star(robots: RobotsTxt, body: bytes) -> RobotsTxt:
    """The file as a robot following the Gopher draft reads it: nothing after the
    'User-agent: *' record ("if it is not listed last of all, anything below it will be
    ignored"), and nothing past where ``robots`` was cut."""
    gopher = robots.reread("gopher")
    star = next((g for g in gopher.groups() if "*" in g.names), None)
    if star is None:
        return gopher
    return parse(head_lines(body, star.lines[1]), "gopher", max_bytes=None)


def as_read_by(target: str, profile: str) -> str:
    """``target`` as a robot reading the file under ``profile`` asks about it.

    A Gopher robot matches selectors: a gopher:// URL gives its own (the engine takes the
    item type off), and any other URL its path, as the rule rows spell paths, never a
    Gemini or Web path read as if its first character were a Gopher item type.  Every
    other robot matches URL paths, so a bare selector is a path from the root."""
    if profile == "gopher":
        if is_url(target) and target[:9].lower() != "gopher://":
            return url_path(target)
        return target
    return target if is_url(target) or target.startswith("/") else "/" + target


def url_path(url: str) -> str:
    """What follows the authority in ``url`` (its path and query), '/' when nothing does."""
    rest = url.split("://", 1)[1]
    at = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    return rest[at:].split("#", 1)[0] or "/"


def matrix_of(src: Source, targets: list[str], agent: str, roles: list[str]) -> list[list[Decision]]:
    """Each reader's decision for each target, each reading made once; every reader asks
    about the target as it reads one (as_read_by), as the rule rows do."""
    parsed: dict[tuple[str, bool], RobotsTxt] = {}
    for r in READERS:
        if (r.profile, r.draft) not in parsed:
            # the same file, cut where it was cut; the draft reader stops at the star record
            reading = until_star(src.robots, src.body) if r.draft else src.robots.reread(r.profile)
            parsed[r.profile, r.draft] = reading
    columns = [(parsed[r.profile, r.draft], r.roles or tuple(roles), r.profile) for r in READERS]
    # Readers that choose the same groups of the same reading decide alike: ask one of them.
    asked: dict[tuple[int, str], int] = {}
    first = []
    for n, (robots, rr, _) in enumerate(columns):
        first.append(asked.setdefault((id(robots), repr(robots.applies(agent, rr))), n))
    rows = []
    for t in targets:
        web, gopher = as_read_by(t, "rfc9309"), as_read_by(t, "gopher")  # each reading's form, once
        row: list[Decision] = []
        for n, (robots, rr, profile) in enumerate(columns):
            if first[n] < n:
                row.append(row[first[n]])
            else:
                row.append(robots.decide(gopher if profile == "gopher" else web, agent, rr))
        rows.append(row)
    return rows


def rules_by_group(robots: RobotsTxt, starts: list[int]) -> tuple[list[list[tuple[int, str]]], list[str]]:
    """The rules of each group (by its first line), and those before any group, in one pass."""
    per: list[list[tuple[int, str]]] = [[] for _ in starts]
    before: list[str] = []
    for ln in robots.lines():
        if ln.kind not in ("allow", "disallow"):
            continue
        n = bisect_right(starts, ln.number) - 1
        if n < 0:
            before.append(f"    {ln.number:>4}  {ln.key}: {ln.value}")
        else:
            per[n].append((ln.number, f"{ln.key}: {ln.value}"))
    return per, before


def verdict_cell(d: Decision) -> str:
    """A verdict as the list form names it: allow or DISALLOW, and the deciding line."""
    return ("allow" if d.allowed else "DISALLOW") + (f" {d.line}" if d.line else "")


def table_cell(d: Decision) -> str:
    """A verdict as the table shows it, short so that every reader's column fits: may the
    robot fetch it, yes or NO, and the deciding line."""
    return ("yes" if d.allowed else "NO") + (f" {d.line}" if d.line else "")


def label(name: str) -> list[str]:
    """A reader's name as a column label, a word a line ('Gemini-targeted' breaks after '-')."""
    return name.replace("-", "- ").split()


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Explain makes hundreds of thousands of small objects and no reference cycles: the
    cyclic collector would walk them again and again as they pile up (a quarter of the time
    on 30,000 rules), so it is off while they are made."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def cmd_explain(args: argparse.Namespace, out: Out) -> int:
    with no_cycle_collection():
        return explain(args, out)


def explain(args: argparse.Namespace, out: Out) -> int:
    check_agent(args.agent)
    profile = args.profile or scheme_profile(args.source, "gemini" if args.role else "rfc9309")
    for target in args.urls:  # each checked before anything is fetched
        check_target(target, profile)
    src = read_source(args.source, None, args, out)
    if not src.read:
        return explain_unread(args, out, src, profile)
    robots = src.robots
    chosen, reason = robots.applies(args.agent, args.role, profile)
    deciding = {rng for _, ranges in chosen for rng in ranges}
    groups = robots.groups(profile)
    # a group's rules run to its end, so the rules are bisected by where each group starts
    per_group, preamble = rules_by_group(robots, [g.lines[0] for g in groups])
    targets = list(args.urls) or sample_paths(robots)
    if src.policy is not None and not args.urls and args.source not in targets:
        targets.insert(0, args.source)  # the URL asked about is a target too
    matrix = matrix_of(src, targets, args.agent, args.role)
    speed = pace(robots, args.agent, args.role, profile)
    marks = [len({d.allowed for d in row}) > 1 for row in matrix]
    code = 1 if any(d.severity == "error" for d in src.findings) else 0  # no robots.txt at all

    if out.json:
        own = robots.reread(profile)
        out.data(
            about(src)
            | {
                "profile": profile,
                "agent": args.agent,
                "roles": args.role,
                "groups": [
                    {
                        "lines": list(g.lines),
                        "user_agents": [v for _, v in g.agents],
                        "virtual_agents": [v for _, v in g.virtual],
                        "applies": g.lines in deciding,
                        "rules": [{"line": n, "rule": rule} for n, rule in rules],
                    }
                    for g, rules in zip(groups, per_group, strict=True)
                ],
                "chosen": [{"who": who, "lines": [list(r) for r in ranges]} for who, ranges in chosen],
                "reason": None if chosen else reason,
                **speed,
                "results": results_of(own, targets, args, profile),
                "matrix": [
                    {
                        "url": t,
                        "disagree": mark,
                        "readers": {
                            r.name: {"allowed": d.allowed, "line": d.line}
                            for r, d in zip(READERS, row, strict=True)
                        },
                    }
                    for t, row, mark in zip(targets, matrix, marks, strict=True)
                ],
            }
        )
        return code

    who = args.agent + (f" with roles {', '.join(args.role)}" if args.role else "")
    style = "bold red" if code else "yellow"
    text: list[tuple[str, str]] = [(line, style) for line in first_words(src)]
    text += [(f"{src.name}, read as {profile} for {who}", "bold"), ("", "")]
    if chosen:
        text.append(("These groups decide (a target must pass each):", ""))
        text += [
            (f"  {label}: lines {', '.join(f'{a}-{b}' for a, b in ranges)}", "") for label, ranges in chosen
        ]
    else:
        text.append((reason, ""))
    text += [(line, "") for line in pace_lines(speed)]
    text.append(("", ""))
    for g, rules in zip(groups, per_group, strict=True):
        names = [f"User-agent: {v}" for _, v in g.agents] + [f"Virtual-agent: {v}" for _, v in g.virtual]
        applies = g.lines in deciding
        mark = "applies" if applies else "does not apply"
        text.append(
            (f"lines {g.lines[0]}-{g.lines[1]}  {'; '.join(names)}  ({mark})", "green" if applies else "dim")
        )
        text += [(f"    {n:>4}  {rule}", "") for n, rule in rules]
    if preamble:
        text.append((
            "rules before any User-agent line (RFC 9309 and Google ignore them;"
            " Gemini reads them as '*'; Gopher applies them to everyone):", "",
        ))  # fmt: skip
        text += [(line, "") for line in preamble]
    text.append(("", ""))
    width = max(40, out.width)
    wrapped: list[tuple[str, str]] = []
    for line, style in text:
        if len(line) <= width:
            wrapped.append((line, style))
        else:
            wrapped += [(part, style) for part in textwrap.wrap(line, width, subsequent_indent="    ")]
    text = wrapped
    if out.rich:
        for line, style in text:
            out.line(line, style)
    else:  # one write: a 25,000-rule file is 25,000 lines
        print("\n".join(safe(line) for line, _ in text))

    if not targets:
        out.line("no rules, and no targets given: nothing for the readers to decide")
        return code
    header = [["target"], *(label(r.name) for r in READERS)]
    rows: list[list[str]] = []
    gap = None
    # the narrowest the table could be: its cells are made only if that fits
    least = max(map(len, targets)) + sum(max(map(len, h)) + 1 for h in header[1:])
    if least <= out.width:
        rows = [[t, *map(table_cell, row)] for t, row in zip(targets, matrix, strict=True)]
        gap = out.gap(header, rows)
    if gap is not None:
        title = (
            f"May {args.agent} fetch it? What each reader decides (cell: yes or NO, and the deciding"
            " line; highlighted: readers disagree)"
        )
        out.table(title, header, rows, marks, gap)
    else:
        title = (
            f"What each reader decides for {args.agent}"
            " (cell: verdict and deciding line; highlighted: readers disagree)"
        )
        readers_by_line(out, title, targets, matrix, marks)
    n = sum(marks)
    out.line(
        f"{n} of {len(targets)} targets read differently by different robots"
        if n
        else "every reader agrees on every target"
    )
    return code


def results_of(
    robots: RobotsTxt, targets: list[str], args: argparse.Namespace, profile: str
) -> list[dict[str, Any]]:
    """What this robot decides for each target, as check's results say it."""
    return [
        {"url": t, **robots.decide(as_read_by(t, profile), args.agent, args.role)._asdict()} for t in targets
    ]


def readers_by_line(
    out: Out, title: str, targets: list[str], matrix: list[list[Decision]], marks: list[bool]
) -> None:
    """The matrix for a narrow terminal: per target, one line per distinct verdict, naming
    the readers that reach it, wrapped to the width."""
    width = max(40, out.width)
    lines = [*textwrap.wrap(title, width), ""]
    # The names wrap the same way after any verdict of the same length: wrapped once each,
    # so a file of 30,000 rules is not 50,000 calls to textwrap.
    wrapped: dict[tuple[int, tuple[str, ...]], list[str]] = {}
    for target, row, mark in zip(targets, matrix, marks, strict=True):
        lines.append(("! " if mark else "  ") + target)
        if not mark and len({d.line for d in row}) == 1:
            lines.append(f"      {verdict_cell(row[0])}: every reader")
            continue
        by: dict[str, list[str]] = {}
        for r, d in zip(READERS, row, strict=True):
            by.setdefault(verdict_cell(d), []).append(r.name)
        for cell, names in by.items():
            lead = f"      {cell}: "
            key = (len(lead), tuple(names))
            found = wrapped.get(key)
            if found is None:
                found = wrapped[key] = textwrap.wrap(
                    ", ".join(names), width, initial_indent=" " * len(lead), subsequent_indent=" " * 8
                )
            lines.append(lead + found[0][len(lead) :])
            lines += found[1:]
    if out.rich:
        for line in lines:
            out.line(line, "bold yellow" if line.startswith("! ") else "")
    else:
        print("\n".join(safe(line) for line in lines))
    out.line("")


def explain_unread(args: argparse.Namespace, out: Out, src: Source, profile: str) -> int:
    """Nothing was read, so nothing is explained: what a robot does instead, and for which target."""
    assert src.policy is not None
    note = unread_note(src.policy) or ""
    targets = list(args.urls) or [args.source]
    results = results_of(src.robots, targets, args, profile)
    if out.json:
        speed = pace(src.robots, args.agent, args.role, profile)
        out.data(about(src) | {"profile": profile, "agent": args.agent, "roles": args.role, "groups": [],
                               "chosen": [], "reason": note, **speed, "results": results,
                               "matrix": []})  # fmt: skip
    else:
        out.line(note, "bold red" if blocked(src.policy) else "yellow")
        for r in results:
            out.line(f"{'allowed' if r['allowed'] else 'disallowed':10}  {r['url']}  ({r['reason']})")
    return 0 if all(r["allowed"] for r in results) else 1


# -- lint ------------------------------------------------------------------------------


def cmd_lint(args: argparse.Namespace, out: Out) -> int:
    profile = args.profile or scheme_profile(args.source, "rfc9309")
    src = read_source(args.source, profile, args, out)
    if not src.read:
        assert src.policy is not None
        if out.json:
            out.data(about(src) | {"profile": profile, "diagnostics": []})
        else:
            out.line(unread_note(src.policy) or "", "bold red" if blocked(src.policy) else "yellow")
            out.line("there is no file to lint")
        return 1 if blocked(src.policy) else 0
    found = lint(src.robots, src.body)
    if out.json:
        out.data(about(src) | {"profile": profile, "diagnostics": [d._asdict() for d in found]})
    elif not found:
        out.line(f"{src.name}: no findings ({profile})", "green")
    else:
        style = {"error": "bold red", "warning": "yellow", "info": "dim"}
        for d in found:
            out.line(said(src.name, d), style[d.severity])
            basis = rests_on(d)
            if basis is not None:
                out.line(f'    rests on {basis[0]}: "{basis[1]}"', "dim")
        counts = {s: sum(d.severity == s for d in found) for s in ("error", "warning", "info")}
        out.line(", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items()))
    return 1 if any(d.severity == "error" for d in found) else 0


# -- fetch -------------------------------------------------------------------------------


def cmd_fetch(args: argparse.Namespace, out: Out) -> int:
    check_agent(args.agent)
    check_url(args.url)
    (policy,) = policies(args, [args.url], None).values()
    src = fetched(policy)
    e = policy.entry
    body = e.body.decode("utf-8", "surrogateescape") if src.read else None
    certificate = {"sha256": e.fingerprint} if e.fingerprint else None
    if out.json:
        out.data(about(src) | {"source": e.source, "expires_at": timestamp(e.expires_at), "cache": args.cache,
                               "cache_key": policy.key, "certificate": certificate,
                               "certificate_changed": e.fingerprint_changed, "truncated": e.truncated,
                               "body": body})  # fmt: skip
        return 1 if e.outcome in UNREAD else 0
    note = cached_note(policy, args.cached)
    if note is not None:
        out.note(note)
    if body is not None:
        out.body(body)
        out.line("")
    for line in first_words(src):
        out.line(f"# {line}", "bold yellow")
    out.line(f"# {e.url}: {e.outcome} (status {e.status})", "bold green" if e.outcome == "ok" else "bold red")
    out.line(f"# {unread_note(policy) or e.meaning}")
    if e.source != e.url:
        out.line(f"# read from {e.source}")
    if e.fingerprint:
        out.line(f"# certificate fingerprint {e.fingerprint}")
    if e.fingerprint_changed:
        out.line("# warning: the certificate changed since the last fetch", "bold yellow")
        out.note(f"{policy.key} presents a different certificate than when last fetched")
    out.line(
        f"# cache {args.cache}, key {policy.key}: fetched {_when(e.fetched_at)},"
        f" fetched again after {_when(e.expires_at)}"
        + (" (answering from an older copy)" if policy.stale else "")
    )
    return 1 if e.outcome in UNREAD else 0


def _when(t: float) -> str:
    """A moment for people (JSON says it with vocabulary.timestamp)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


# -- the parser --------------------------------------------------------------------------

EXAMPLES = {
    "check": """examples:
  manners check https://example.org/private/page --agent mybot
  manners check gemini://example.org/log/ --role indexer --role archiver
  manners check /private /public --robots robots.txt --json
  curl -s https://example.org/robots.txt | manners check /x --robots -
  manners check - < urls.txt                  (one URL a line; also --urls urls.txt)
  manners check https://example.org/ --cached  (answer from the cache, saying how old)

exit status: 0 every URL allowed (a missing robots.txt allows everything),
1 some disallowed (also when robots.txt could not be reached), 2 a usage error""",
    "explain": """examples:
  manners explain robots.txt
  manners explain gemini://example.org/ --agent mybot --role archiver
  manners explain robots.txt /search /about --json
  manners explain big-robots.txt --max-bytes 2000000   (read past a robot's 512,000 bytes)

exit status: 0; 1 when robots.txt could not be reached (everything is disallowed)
or is no robots.txt at all (an HTML page, a binary file, a Gopher error reply)""",
    "lint": """examples:
  manners lint robots.txt
  manners lint gopher://example.org/ --profile gopher --json

exit status: 0; 1 on an error-level finding or an unreachable robots.txt""",
    "fetch": """examples:
  manners fetch https://example.org/
  manners fetch gopher://example.org/ --cache memory --json
  manners fetch gemini://example.org/ --cache sqlite:///tofu.db   (remembers the certificate)

exit status: 0 read or missing (everything allowed); 1 unreachable (everything disallowed)""",
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
    from .options import positive, positive_seconds  # the same checks as crawl's

    def common(p: argparse.ArgumentParser, robot: bool = True) -> None:
        p.add_argument("--json", action="store_true", help="print JSON for scripts")
        if robot:
            p.add_argument(
                "--agent",
                default="*",
                metavar="NAME",
                help="the robot's name: a product token such as mybot, or mybot/1.0 (default: *)",
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
        p.add_argument(
            "--timeout", type=positive_seconds, default=30.0, help="seconds a fetch may take (default: 30)"
        )
        p.add_argument(
            "--max-bytes",
            type=positive,
            metavar="N",
            help="bytes of robots.txt read, as a robot would read them; the rest is ignored"
            " (default: 512000, a Robot's)",
        )
        p.add_argument(
            "--cached",
            action="store_true",
            help="answer from the cache when it holds a copy, and say how old it is"
            " (default: fetch robots.txt afresh)",
        )

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
    p.add_argument(
        "urls",
        nargs="*",
        metavar="URL",
        help="URLs to check (paths too, with --robots); '-': read them from stdin",
    )
    p.add_argument("--urls", dest="url_file", metavar="FILE", help="read URLs to check from FILE, one a line")
    p.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        type=str.lower,
        help="read robots.txt as this profile (default: by scheme)",
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
        "--profile",
        choices=sorted(PROFILES),
        type=str.lower,
        help="the reading whose groups are shown (default: by scheme)",
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
        type=str.lower,
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

    from .admin.command import add_parsers as add_admin
    from .crawl.command import add_parser as add_crawl

    add_crawl(sub)
    add_admin(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Out(args.json)
    try:
        code: int = args.func(args, out)
        return code
    except UsageError as exc:
        out.note(str(exc))
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # python -m manners.cli: run as manners.cli, so its UsageError is the one raised
    from manners.cli import main as manners_main

    sys.exit(manners_main())
