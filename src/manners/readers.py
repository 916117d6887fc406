"""Every kind of robot reading one robots.txt, and what each decides.

``explain``'s matrix, the site audit's, ``diff``'s and ``serve``'s all have the same
columns (:data:`READERS`): RFC 9309, Google, Gemini per role, Gopher, the Gopher draft
(which stops at the ``User-agent: *`` record) and 1994.  Each asks about a target as it
reads one (:func:`manners.targets.as_read_by`).
"""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple

from ._core import head_lines
from .robots import Decision, RobotsTxt, parse
from .source import Source
from .targets import as_read_by

ROLES = ("indexer", "archiver", "researcher", "webproxy")


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


def results_of(
    robots: RobotsTxt, targets: list[str], args: argparse.Namespace, profile: str
) -> list[dict[str, Any]]:
    """What this robot decides for each target, as check's results say it."""
    return [
        {"url": t, **robots.decide(as_read_by(t, profile), args.agent, args.role)._asdict()} for t in targets
    ]


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
