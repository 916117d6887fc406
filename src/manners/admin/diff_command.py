"""``manners diff OLD NEW [URL...]``: what deploying NEW in place of OLD changes for robots.

OLD and NEW are robots.txt files, '-' (standard input) or URLs (the live file, fetched
afresh as every command fetches it).  The URLs come as arguments, '-' (standard input, one a
line), ``--urls FILE`` (one a line, or a crawl's ``pages.jsonl``, or the crawl's directory);
without any, each rule's own path in either file.  The comparison itself is
:func:`manners.admin.diff.diff`; this module reads, checks and prints.

Exit status, so that a deploy can be guarded by it: 0 when no verdict flips and no usage
preference changes (groups and rules may still have changed: they are listed), 1 when some
verdict flips or some preference (Content-Usage, Content-Signal) changes, 2 for a usage error
or a robots.txt that could not be fetched (there is nothing to compare then).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..diagnostics import quoted
from ..output import Out, UsageError
from ..profiles import PROFILES
from ..robots import Decision, Preference
from ..source import Source, about, blocked, first_words, read_source, unread_note
from ..targets import check_agent, check_target, scheme_profile
from ..terminal import safe
from .diff import Asker, Diff, Flip, GroupChange, GroupSide, PreferenceChange, RuleChange, diff

EXAMPLES = """examples:
  manners diff robots.txt robots.new.txt                (each rule's own path is a URL to compare)
  manners diff https://example.org/ robots.new.txt --urls urls.txt   (the live file, and the new one)
  manners diff old.txt new.txt --urls crawl/pages.jsonl --json        (a crawl's URLs)
  manners diff old.txt new.txt /private/x /about --agent mybot --role indexer
  manners diff old.txt new.txt - < urls.txt             (one URL a line)

Asked: '*', every agent either file names and each --agent; under the gemini and gopher
profiles also each in every role (indexer, archiver, researcher, webproxy, each Virtual-agent
named and each --role).

exit status: 0 no verdict flips and no usage preference changes; 1 some verdict flips or
some preference changes (a deploy guard);
2 a usage error, or a robots.txt that could not be fetched"""

MANY = 8  # robots named on a flip's line; the rest are counted (--json lists every one)


def add_parser(sub: Any, common: Callable[..., None]) -> argparse.ArgumentParser:
    """Register ``diff`` on the ``manners`` command's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "diff",
        help="what an edit to robots.txt changes: the URLs whose verdict flips, and for whom",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = "a robots.txt file, '-' for standard input, or a URL (the live file)"
    p.add_argument("old", metavar="OLD", help=f"the robots.txt before: {where}")
    p.add_argument("new", metavar="NEW", help=f"the robots.txt after: {where}")
    p.add_argument(
        "urls",
        nargs="*",
        metavar="URL",
        help="URLs or paths to compare (default: each rule's own path); '-': read them from stdin",
    )
    p.add_argument(
        "--urls",
        dest="url_file",
        metavar="FILE",
        help="read URLs from FILE: one a line, or a crawl's pages.jsonl (or the crawl's directory)",
    )
    p.add_argument(
        "--profile",
        action="append",
        default=[],
        choices=sorted(PROFILES),
        type=str.lower,
        help="compare as read under this profile (repeatable; default: by each URL's scheme)",
    )
    p.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="NAME",
        help="a robot to ask about too, besides '*' and every agent either file names (repeatable)",
    )
    p.add_argument(
        "--role",
        action="append",
        default=[],
        metavar="ROLE",
        help="a role to ask about too, besides the four virtual agents and those the files name"
        " (repeatable; given twice or more, also all of them at once, as check --role does)",
    )
    common(p, robot=False)
    p.set_defaults(func=cmd_diff)
    return p


# -- reading -------------------------------------------------------------------------------


def url_list(args: argparse.Namespace) -> list[str] | None:
    """The URLs given (arguments, '-' for standard input, --urls FILE), or None when none
    were given: the rules' own paths are compared then."""
    if "-" in args.urls and "-" in (args.old, args.new):
        raise UsageError("standard input cannot hold both the URLs (-) and a robots.txt (OLD or NEW -)")
    if not args.urls and not args.url_file:
        return None
    found: list[str] = []
    for url in args.urls:
        if url == "-":
            found += _read_lines(sys.stdin.buffer.read().decode(errors="surrogateescape"), "standard input")
        else:
            found.append(url)
    if args.url_file:
        found += _url_file(args.url_file)
    if not found:
        raise UsageError(
            "no URLs to compare in the list given: give URLs, or none at all to compare each rule's own path"
        )
    return found


def _url_file(name: str) -> list[str]:
    """One URL a line, or a crawl's pages.jsonl (given as the file or as the crawl's directory)."""
    path = Path(name)
    if path.is_dir():
        if not (path / "pages.jsonl").is_file():
            raise UsageError(
                f"--urls {quoted(name)} is a directory with no pages.jsonl: give a file of URLs,"
                " one a line, or a crawl's directory"
            )
        path = path / "pages.jsonl"
    try:
        text = path.read_bytes().decode(errors="surrogateescape")
    except FileNotFoundError:
        raise UsageError(f"no such file {quoted(name)} (--urls): give a file of URLs, one a line") from None
    except OSError as exc:
        raise UsageError(f"cannot read --urls {quoted(name)}: {exc.strerror}") from None
    return _read_lines(text, str(path))


def _read_lines(text: str, where: str) -> list[str]:
    """The URLs in ``text``: whitespace-separated, or a JSON object's ``url`` on a line that
    starts with '{' (a crawl's pages.jsonl)."""
    found: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("{"):
            found += line.split()
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        url = record.get("url") if isinstance(record, dict) else None
        if not isinstance(url, str):
            raise UsageError(
                f"{where}:{n}: a line starting with '{{' that is no JSON object with a \"url\":"
                " give one URL a line, or a crawl's pages.jsonl"
            )
        found.append(url)
    return found


def check_targets(urls: list[str], profile: str) -> None:
    """Each target checked as ``check`` checks one, before anything is fetched; a URL once per
    scheme and authority, all a URL's check depends on (25,000 of a crawl's URLs share a few)."""
    seen: set[str] = set()
    for url in urls:
        authority = _AUTHORITY.match(url)
        if authority is None or authority[0] not in seen:
            check_target(url, profile)
            if authority is not None:
                seen.add(authority[0])


_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*")  # what urlsplit takes for scheme and netloc


def source(where: str, args: argparse.Namespace, out: Out) -> Source:
    """OLD or NEW, read (a URL fetched afresh through the cache, as the robot given first, or
    as manners).  A URL that could not be fetched leaves nothing to compare: exit 2."""
    fetch = argparse.Namespace(**vars(args))
    fetch.agent, fetch.role = (args.agent[:1] or ["*"])[0], []
    src = read_source(where, None, fetch, out)
    if src.policy is not None and not src.read:
        note = unread_note(src.policy) or ""
        if blocked(src.policy):
            cause = note.removesuffix("; everything is disallowed until it can be")
            raise UsageError(f"{cause}; there is nothing to compare")
        out.note(note)  # missing (404, 51): robots may fetch everything, and that is compared
    for line in first_words(src):
        out.note(line)
    return src


# -- the command -----------------------------------------------------------------------------


def cmd_diff(args: argparse.Namespace, out: Out) -> int:
    for agent in args.agent:
        check_agent(agent)
    if args.old == "-" and args.new == "-":
        raise UsageError("standard input cannot hold both OLD and NEW: give one of them as a file or a URL")
    urls = url_list(args)
    # a path is read as the sources' scheme says (gemini://, gopher://), else as RFC 9309
    default = scheme_profile(args.old, scheme_profile(args.new, "rfc9309"))
    check_targets(urls or [], (args.profile or [default])[0])
    old, new = source(args.old, args, out), source(args.new, args, out)
    roles: list[str | tuple[str, ...]] = list(args.role)
    if len(set(args.role)) > 1:
        roles.append(tuple(dict.fromkeys(args.role)))
    d = diff(
        old.robots,
        new.robots,
        urls,
        agents=args.agent,
        roles=roles,
        profiles=args.profile,
        default_profile=default,
    )
    if out.json:
        out.data(as_json(d, old, new))
    else:
        show(out, d, old, new, given=urls is not None)
    return 1 if d.changed else 0


# -- JSON --------------------------------------------------------------------------------------


def as_json(d: Diff, old: Source, new: Source) -> dict[str, Any]:
    """The diff in the vocabulary every command's JSON shares (docs/json.md, "json: manners diff")."""
    return {
        "old": about(old),
        "new": about(new),
        "profile": d.profile,
        "profiles": list(d.profiles),
        "urls": len(d.urls),
        "roles": [list(r) for r in d.roles],
        "agents": [
            {"agent": c.agent, "urls": c.urls, "allowed": c.allowed, "disallowed": c.disallowed}
            for c in d.counts
        ],
        "flips": _flips_json(d.flips),
        "groups": [_group_json(g) for g in d.groups],
        "notes": list(d.notes),
        "preferences": [_preference_json(c) for c in d.preferences],
    }


def _preference_json(c: PreferenceChange) -> dict[str, Any]:
    return {
        "field": c.field,
        "category": c.category,
        "profile": c.profile,
        "old": {"value": c.old.value, "line": c.old.line},
        "new": {"value": c.new.value, "line": c.new.line},
        "urls": list(c.urls),
        "agents": [{"agent": w.agent, "roles": list(w.roles)} for w in c.agents],
    }


def _flips_json(flips: Sequence[Flip]) -> list[dict[str, Any]]:
    """Each flip as an object; a decision (many URLs share one) and a tuple of robots (every
    flip of robots placed alike shares one) made into JSON's form once each."""
    decisions: dict[Decision, dict[str, Any]] = {}
    robots: dict[int, list[dict[str, Any]]] = {}

    def decision(d: Decision) -> dict[str, Any]:
        found = decisions.get(d)
        if found is None:
            found = decisions[d] = {"allowed": d.allowed, "line": d.line, "rule": d.rule, "reason": d.reason}
        return found

    out = []
    for f in flips:
        who = robots.get(id(f.agents))
        if who is None:
            who = robots[id(f.agents)] = [{"agent": w.agent, "roles": list(w.roles)} for w in f.agents]
        out.append(
            {
                "url": f.url,
                "profile": f.profile,
                "old": decision(f.old),
                "new": decision(f.new),
                "agents": who,
            }
        )
    return out


def _group_json(g: GroupChange) -> dict[str, Any]:
    def side(s: GroupSide | None) -> dict[str, Any] | None:
        if s is None:
            return None
        agents = {"user_agents": list(s.user_agents), "virtual_agents": list(s.virtual_agents)}
        return {"lines": list(s.lines), **agents, "parts": [list(part) for part in s.parts]}

    def rule(r: RuleChange) -> dict[str, Any]:
        return {
            "change": r.change,
            "old": {"line": r.old.line, "rule": r.old.rule} if r.old else None,
            "new": {"line": r.new.line, "rule": r.new.rule} if r.new else None,
        }

    return {"change": g.change, "old": side(g.old), "new": side(g.new), "rules": [rule(r) for r in g.rules]}


# -- text ----------------------------------------------------------------------------------------


def show(out: Out, d: Diff, old: Source, new: Source, *, given: bool) -> None:
    """The diff for people: the groups and rules changed, each flip with the deciding line on
    both sides, a count per agent, and one line that sums it up."""
    several = len(d.profiles) > 1
    asked = _n(len(d.urls), "URL") + ("" if given else " (each rule's own path)")
    roles = f", each also in {_n(len(d.roles), 'role')}" if d.roles else ""
    read = ", ".join(d.profiles) or d.profile
    text: list[tuple[str, str]] = [
        (f"{old.name} -> {new.name}: {asked}, {_n(len(d.agents), 'agent')}{roles}, read as {read}", "bold"),
        ("", ""),
    ]
    if d.groups:
        text.append((f"groups and rules changed (as {d.profile} delimits groups):", "bold"))
        for g in d.groups:
            text += _group_lines(g)
    else:
        text.append((f"no group or rule changed (as {d.profile} delimits groups)", ""))
    text.append(("", ""))
    robots: dict[tuple[Asker, ...], str] = {}  # flips share their robots, and their decisions
    olds: dict[Decision, str] = {}
    news: dict[Decision, str] = {}
    for f in d.flips:
        where = f" ({f.profile})" if several else ""
        now = "now allowed" if f.new.allowed else "now disallowed"
        who = robots.get(f.agents) or robots.setdefault(f.agents, _who(f.agents))
        old_said = olds.get(f.old) or olds.setdefault(f.old, f"    old  {_verdict(f.old)}")
        new_said = news.get(f.new) or news.setdefault(f.new, f"    new  {_verdict(f.new)}")
        text += [
            (f"{now:14}  {f.url}{where}  for {who}", "green" if f.new.allowed else "bold red"),
            (old_said, ""),
            (new_said, ""),
        ]
    text += _preference_lines(d, several)
    flipping = [c for c in d.counts if c.urls]
    if flipping:
        text += [("", ""), ("URLs that flip, per agent:", "bold")]
        width = max(len(c.agent) for c in flipping)
        for c in flipping:
            ways = f"{c.allowed} now allowed, {c.disallowed} now disallowed"
            text.append((f"  {c.agent:{width}}  {c.urls:>6}  ({ways})", ""))
        rest = len(d.counts) - len(flipping)
        if rest:
            text.append((f"  {_n(rest, 'other agent')}: none", "dim"))
        flipped = len({f.url for f in d.flips})
        agents = _n(len(d.agents), "agent")
        verb = "flips" if flipped == 1 else "flip"
        text.append(
            (f"{flipped:,} of {_n(len(d.urls), 'URL')} {verb}, for {len(flipping)} of {agents}", "bold red")
        )
    else:
        asked = f"{_n(len(d.urls), 'URL')}, {_n(len(d.agents), 'agent')}"
        text.append((f"no verdict flips: {asked}", "bold green" if not d.preferences else "bold"))
    if d.preferences:
        urls = len({url for c in d.preferences for url in c.urls})
        changes = _n(len(d.preferences), "usage preference change")
        text.append((f"{changes}, for {urls:,} of {_n(len(d.urls), 'URL')}", "bold red"))
    text += [(f"note: {note}", "dim") for note in d.notes]
    emit(out, text)


def _preference_lines(d: Diff, several: bool) -> list[tuple[str, str]]:
    """Each usage preference that changes: its field and category, both sides with their
    lines, the robots, then the URLs it changes for (the first few: --json lists every one)."""
    if not d.preferences:
        return []
    text = [("", "")] if d.flips else []  # the groups end with a blank line, each flip without
    text.append(("usage preferences changed (where both files let the robot fetch):", "bold"))
    for c in d.preferences:
        where = f" ({c.profile})" if several else ""
        said = f"{c.category}: {_preference(c.old)} -> {_preference(c.new)}"
        text.append((f"  {c.field:14}  {said}{where}  for {_who(c.agents)}", "yellow"))
        urls = ", ".join(c.urls[:MANY]) + (f" and {len(c.urls) - MANY:,} more" if len(c.urls) > MANY else "")
        text.append((f"      {_n(len(c.urls), 'URL')}: {urls}", ""))
    return text


def _preference(p: Preference) -> str:
    """``yes (line 4)``; ``unstated`` (no line says it)."""
    return p.value if p.line is None else f"{p.value} (line {p.line})"


def _n(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _who(agents: tuple[Asker, ...]) -> str:
    """The robots a flip is for: 'mybot', 'mybot as indexer', ... and how many more."""
    names = [who.agent + (f" as {'+'.join(who.roles)}" if who.roles else "") for who in agents]
    if len(names) > MANY:
        return ", ".join(names[:MANY]) + f" and {len(names) - MANY} more"
    return ", ".join(names)


def _verdict(d: Decision) -> str:
    """A decision as check prints it: the verdict, and the deciding line (else the reason)."""
    why = f"line {d.line}: {d.rule}" if d.line is not None else d.reason
    return f"{'allowed' if d.allowed else 'disallowed':10}  ({why})"


def _group_lines(g: GroupChange) -> list[tuple[str, str]]:
    """A group changed, and its rules with '+' (added), '-' (removed) and '~' (changed)."""
    sides = [s for s in (g.old, g.new) if s is not None]
    names = [s.named() for s in sides]
    who = names[0] if len(set(names)) == 1 else f"{names[0]} -> {names[1]}"
    lines = ", ".join(
        f"{label} lines {s.spans()}" for label, s in (("old", g.old), ("new", g.new)) if s is not None
    )
    style = {"added": "green", "removed": "red", "changed": "yellow"}[g.change]
    out = [(f"  {g.change:8} {who}  ({lines})", style)]
    for r in g.rules:
        if r.change == "changed" and r.old and r.new:
            now = f"new line {r.new.line}: {r.new.rule}"
            out.append((f"      ~ old line {r.old.line}: {r.old.rule}  ->  {now}", "yellow"))
        elif r.old:
            out.append((f"      - old line {r.old.line}: {r.old.rule}", "red"))
        elif r.new:
            out.append((f"      + new line {r.new.line}: {r.new.rule}", "green"))
    return out


def emit(out: Out, text: list[tuple[str, str]]) -> None:
    """Every line made safe, written at once: a diff of 25,000 URLs is 75,000 lines."""
    if out.rich:
        from rich.text import Text

        styled = Text()
        for line, style in text:
            styled.append(safe(line) + "\n", style=style or None)
        out.console.print(styled, end="")
        return
    lines = [line for line, _ in text]
    whole = "\n".join(lines) + "\n"
    if whole.count("\n") == len(lines) and "\t" not in whole:  # line by line, or at once: the same
        sys.stdout.write(safe(whole, lines=True))
    else:
        sys.stdout.write("".join(safe(line) + "\n" for line in lines))
