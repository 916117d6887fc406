"""The usage preferences that apply to a URL, in the words and the JSON every command uses.

``robots.usage`` (:class:`manners.robots.Usage`) gives every category, stated or not; a
command shows only what the file states, each with its line, so that the output for a file
without ``Content-Usage`` or ``Content-Signal`` stays as it was.  The JSON keeps every
category, ``unstated`` included, so a script reads the same keys for every URL.  ``check``
uses both; the other commands (``explain``, ``serve``, ``site``) can share them, and so this
lies below the command line.  ``explain`` shows each group's own lines (:func:`usage_lines`),
each in the words of what it states.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from .diagnostics import usage_statement
from .robots import Group, Preference, RobotsTxt, Usage


def _stated(prefs: tuple[Preference, ...]) -> str:
    return ", ".join(f"{p.category}={p.value} (line {p.line})" for p in prefs if p.value != "unstated")


def usage_words(usage: Usage) -> str:
    """``usage: train-ai=no (line 4), search=yes (line 4); signals: ai-train=no (line 5)``:
    only the stated preferences, each with its line; "" when the file states none."""
    parts = []
    categories, signals = _stated(usage.categories), _stated(usage.signals)
    if categories:
        parts.append(f"usage: {categories}")
    if signals:
        parts.append(f"signals: {signals}")
    return "; ".join(parts)


def usage_json(usage: Usage) -> dict[str, dict[str, dict[str, str | int | None]]]:
    """``{"categories": {"train-ai": {"value": "no", "line": 4}, ...}, "signals": {...}}``:
    every category of both vocabularies, an unstated one with ``line`` null."""
    return {
        "categories": {p.category: {"value": p.value, "line": p.line} for p in usage.categories},
        "signals": {p.category: {"value": p.value, "line": p.line} for p in usage.signals},
    }


class UsageLine(NamedTuple):
    """A Content-Usage or Content-Signal line of a group, and what it states."""

    line: int
    field: str  # as written: "Content-Usage", "Content-Signal"
    value: str  # as written
    path: str | None  # its path scope; None: every path
    states: tuple[tuple[str, str], ...]  # (category, "yes" or "no"), in the engine's order
    malformed: bool  # no structured-field dictionary: every category unknown
    agents: tuple[str, ...]  # the User-agent lines it is for, by the attachment draft's grammar


def usage_lines(robots: RobotsTxt, groups: list[Group]) -> tuple[list[list[UsageLine]], list[UsageLine]]:
    """The usage lines of each group (groups as ``robots.groups()`` gives them, for verdicts),
    and those before any group.  Each line names the agents it is for as ``robots.usage`` reads
    the file: by the attachment draft's grammar a usage line is a rule, so a User-agent line
    after it in the same verdict group starts another group (draft-ietf-aipref-attach,
    "Robots Exclusion Protocol Content-Usage Rule")."""
    starts = [g.lines[0] for g in groups]
    per: list[list[UsageLine]] = [[] for _ in groups]
    before: list[UsageLine] = []
    found = [ln for ln in robots.lines() if ln.kind in ("content-usage", "content-signal")]
    if not found:
        return per, before
    by_group: dict[int, list[tuple[int, str | None]]] = {}  # group -> (line, agent or None)
    for ln in found:
        n = bisect_right(starts, ln.number) - 1
        if n >= 0 and ln.number <= groups[n].lines[1]:
            by_group.setdefault(n, []).append((ln.number, None))
    for n in by_group:
        by_group[n] += [(line, v) for line, v in groups[n].agents + groups[n].virtual]
        by_group[n].sort(key=lambda item: item[0])
    agents_at: dict[int, tuple[str, ...]] = {}
    for items in by_group.values():
        run: list[str] = []
        after_rule = False
        for line, agent in items:
            if agent is None:
                agents_at[line] = tuple(run)
                after_rule = True
            else:
                if after_rule:
                    run, after_rule = [], False
                run.append(agent)
    for ln in found:
        read = usage_statement(ln.kind, ln.value)
        path, states = read if read is not None else (None, [])
        if read is None and ln.value.startswith("/"):
            path = ln.value.split(None, 1)[0]
        item = UsageLine(
            ln.number, ln.key, ln.value, path, tuple(states), read is None, agents_at.get(ln.number, ())
        )
        n = bisect_right(starts, ln.number) - 1
        if ln.number in agents_at:
            per[n].append(item)
        else:
            before.append(item)
    return per, before


def line_words(u: UsageLine) -> str:
    """``for /x: train-ai no, search yes``: what a usage line states, in words."""
    where = f"for {u.path}" if u.path is not None else "for every path"
    if u.malformed:
        return f"{where}: no structured-field dictionary, so every category is unknown"
    if not u.states:
        return f"{where}: states nothing"
    return f"{where}: " + ", ".join(f"{c} {v}" for c, v in u.states)


def line_json(u: UsageLine) -> dict[str, object]:
    """A usage line in explain's JSON: ``{"line": 3, "field": "Content-Usage", ...}``."""
    return {
        "line": u.line,
        "field": u.field,
        "value": u.value,
        "path": u.path,
        "states": dict(u.states),
        "malformed": u.malformed,
        "user_agents": list(u.agents),
    }
