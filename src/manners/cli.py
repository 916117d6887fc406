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
(docs/json.md): the keys of :func:`manners.source.about` for the robots.txt, integer
statuses and RFC 3339 timestamps (:mod:`manners.vocabulary`).

What the commands share lives below the command line, so that ``crawl``, ``site``,
``diff`` and ``serve`` import it and not this module: :mod:`manners.output` (the words and
a usage error), :mod:`manners.targets` (URLs, paths and agents checked),
:mod:`manners.source` (a robots.txt read, and what is said of it first),
:mod:`manners.readers` (every kind of robot reading it) and :mod:`manners.pace`.

The command line fetches robots.txt afresh unless ``--cached`` is given: whoever just
edited the file must see the new answer.  The fetch still goes through the cache, so
the store (and a Robot sharing it) keeps the newest copy and certificate.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import textwrap
import time
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from pathlib import Path

from .diagnostics import lint, quoted, rests_on, said
from .fetch import robots_locations
from .output import Out, UsageError
from .pace import pace, pace_lines
from .preferences import UsageLine, line_json, line_words, usage_json, usage_lines, usage_words
from .profiles import PROFILES, RFC9309, get_profile
from .readers import READERS, label, matrix_of, results_of, sample_paths, table_cell, verdict_cell
from .robots import Decision, Group, RobotsTxt
from .source import (
    UNREAD,
    Source,
    about,
    blocked,
    cached_note,
    fetched,
    first_words,
    policies,
    read_source,
    say_where_from,
    unread_note,
)
from .targets import check_agent, check_target, check_url, is_url, scheme_profile
from .terminal import safe
from .version import __version__
from .vocabulary import timestamp

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
    usages = []
    for url, name in zip(urls, where, strict=True):
        robots = known[name].robots
        results.append({"url": url, **robots.decide(url, args.agent, args.role)._asdict(), "robots": name})
        usages.append(robots.usage(url, args.agent, args.role))
    if out.json:
        files = []
        for name, src in known.items():
            first = next(u for u, w in zip(urls, where, strict=True) if w == name)
            profile = args.profile or (first if is_url(first) else RFC9309.name)
            files.append(about(src) | pace(src.robots, args.agent, args.role, profile))
        for r, usage in zip(results, usages, strict=True):
            r["usage"] = usage_json(usage)
        out.data({"results": results, "robots": files})
    else:
        for r, usage in zip(results, usages, strict=True):
            verdict = "allowed" if r["allowed"] else "disallowed"
            why = f"line {r['line']}: {r['rule']}" if r["line"] is not None else r["reason"]
            prefs = usage_words(usage)  # only what the file states: nothing for a file without
            text = f"{verdict:10}  {r['url']}  ({why})" + (f"  {prefs}" if prefs else "")
            out.line(text, "green" if r["allowed"] else "bold red")
    return 0 if all(r["allowed"] for r in results) else 1


# -- explain -----------------------------------------------------------------------------


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
    usage_per_group, usage_before = usage_lines(robots, groups)
    has_usage = bool(usage_before) or any(usage_per_group)
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
                    | ({"usage": [line_json(u) for u in used]} if has_usage else {})
                    for g, rules, used in zip(groups, per_group, usage_per_group, strict=True)
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
    for g, rules, used in zip(groups, per_group, usage_per_group, strict=True):
        names = [f"User-agent: {v}" for _, v in g.agents] + [f"Virtual-agent: {v}" for _, v in g.virtual]
        applies = g.lines in deciding
        mark = "applies" if applies else "does not apply"
        text.append(
            (f"lines {g.lines[0]}-{g.lines[1]}  {'; '.join(names)}  ({mark})", "green" if applies else "dim")
        )
        if used:  # in the file's order, rules and usage lines together
            shown = sorted(
                [(n, f"    {n:>4}  {rule}") for n, rule in rules]
                + [(u.line, usage_line_text(u, g)) for u in used]
            )
            text += [(line, "") for _, line in shown]
        else:
            text += [(f"    {n:>4}  {rule}", "") for n, rule in rules]
    if usage_before:
        text.append(("usage lines before any User-agent line (ignored):", ""))
        text += [(f"    {u.line:>4}  {u.field}: {u.value}", "") for u in usage_before]
    if has_usage and not get_profile(profile).usage_preferences:
        text.append((f"(a {profile} reader reads no Content-Usage or Content-Signal lines)", ""))
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


def usage_line_text(u: UsageLine, g: Group) -> str:
    """``   3  Content-Usage: /x train-ai=n  (for /x: train-ai no)``, and the agents it is for
    when the attachment draft's grammar ends the group earlier than verdicts do."""
    said = f"    {u.line:>4}  {u.field}: {u.value}  ({line_words(u)})"
    if len(u.agents) < len(g.agents) + len(g.virtual):
        said += f" [for {', '.join(u.agents)} only: a usage line ends a run of User-agent lines]"
    return said


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
    from .watch.command import add_parser as add_watch

    add_crawl(sub)
    add_admin(sub, common)
    add_watch(sub, common)
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


if __name__ == "__main__":  # python -m manners.cli
    sys.exit(main())
