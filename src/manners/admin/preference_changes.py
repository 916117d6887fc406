"""What changed in the usage preferences (``Content-Usage``, ``Content-Signal``) from one
robots.txt to the next, for ``manners diff``: beside the verdict flips, and apart from them,
since a preference applies only to what a robot may fetch (draft-ietf-aipref-attach-05: "no
preferences are implied for resources that are disallowed").  A line that only moved is no
change; a value that differs is, with both lines.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from ..profiles import get_profile
from ..robots import Preference, RobotsTxt, parse
from ..targets import as_read_by

__all__ = ["Asker", "Field", "PreferenceChange", "preference_changes", "usage_paths"]

Field = Literal["Content-Usage", "Content-Signal"]


class Asker(NamedTuple):
    """A robot asked about a URL: its name, and the roles it acts in (none: ``()``)."""

    agent: str
    roles: tuple[str, ...]


class PreferenceChange(NamedTuple):
    """A usage preference whose value differs from OLD to NEW: one category of one field, the
    preference on both sides (each with its line, None when unstated), every URL it changes
    for and every robot it changes for there."""

    field: Field
    category: str  # "train-ai", "ai-use", "search" (Content-Usage); "search", "ai-input", "ai-train"
    profile: str
    old: Preference
    new: Preference
    urls: tuple[str, ...]  # as given, in order
    agents: tuple[Asker, ...]


_USAGE_KINDS = ("content-usage", "content-signal")


def usage_paths(robots: RobotsTxt) -> list[str]:
    """The path of each Content-Usage and Content-Signal line, sampled as a rule's path is
    (``sample_paths``), and ``/`` for a line without one (it applies to every path).  A value
    starting with '/' has a path up to the first space or tab (draft-ietf-aipref-attach-05,
    "Processing Content-Usage Rules"; the engine's ``usage::split_rule``)."""
    out: dict[str, None] = {}
    for line in robots.lines():
        if line.kind in _USAGE_KINDS:
            value = line.value
            path = re.split(r"[ \t]", value, maxsplit=1)[0] if value.startswith("/") else "/"
            out[path.replace("*", "x").removesuffix("$") or "/"] = None
    return list(out)


def _states_usage(robots: RobotsTxt) -> bool:
    return type(robots) is RobotsTxt and any(ln.kind in _USAGE_KINDS for ln in robots.lines())


def preference_changes(
    old: RobotsTxt,
    new: RobotsTxt,
    targets: list[str],
    batches: dict[str, list[int]],
    agents: list[str],
    role_sets: list[tuple[str, ...]],
) -> tuple[PreferenceChange, ...]:
    """The usage preferences that differ between the files, for every robot and target asked
    under a profile that reads them, where both files let the robot fetch the target."""
    if not (_states_usage(old) or _states_usage(new)):
        return ()  # nothing stated on either side: every preference is unstated on both
    Key = tuple[Field, str, str, Preference, Preference]
    found: dict[Key, dict[int, list[Asker]]] = {}
    for p, indices in batches.items():
        profile = get_profile(p)
        if not profile.usage_preferences:
            continue
        sides = [_UsageSide(robots, p) for robots in (old, new)]
        asked = [as_read_by(targets[n], p) for n in indices]
        for agent in agents:
            for roles in [(), *role_sets] if profile.virtual_agents else [()]:
                who = Asker(agent, roles)
                for n, target in zip(indices, asked, strict=True):
                    a, b = (side.usage(target, agent, roles) for side in sides)
                    if a is None or b is None or a == b:
                        continue
                    pairs: tuple[tuple[Field, tuple[Preference, ...], tuple[Preference, ...]], ...] = (
                        ("Content-Usage", a[0], b[0]),
                        ("Content-Signal", a[1], b[1]),
                    )
                    for field, xs, ys in pairs:
                        for x, y in zip(xs, ys, strict=True):
                            if x.value != y.value:
                                found.setdefault((field, x.category, p, x, y), {}).setdefault(n, []).append(
                                    who
                                )
    # changes alike for the same robots are one, with every URL: by the first URL, then field
    merged: dict[tuple[Key, tuple[Asker, ...]], list[int]] = {}
    for key, by_url in found.items():
        for n, robots in sorted(by_url.items()):
            merged.setdefault((key, tuple(robots)), []).append(n)
    order = sorted(merged.items(), key=lambda item: (item[1][0], item[0][0][0] != "Content-Usage"))
    return tuple(
        PreferenceChange(field, category, p, x, y, tuple(targets[n] for n in ns), robots)
        for ((field, category, p, x, y), robots), ns in order
    )


class _UsageSide:
    """One file's usage preferences under one profile.  A file that could not be read states
    none, and lets a robot fetch what its verdict says."""

    def __init__(self, robots: RobotsTxt, profile: str) -> None:
        self.opaque = type(robots) is not RobotsTxt
        self.robots = robots if self.opaque else robots.reread(profile)
        self.unstated: tuple[tuple[Preference, ...], tuple[Preference, ...]] | None = None

    def usage(
        self, target: str, agent: str, roles: tuple[str, ...]
    ) -> tuple[tuple[Preference, ...], tuple[Preference, ...]] | None:
        """(categories, signals) for the robot, or None when it may not fetch the target."""
        if self.opaque:
            if not self.robots.allowed(target, agent, roles):
                return None
            if self.unstated is None:
                u = parse(b"", "rfc9309").usage("/")
                self.unstated = (u.categories, u.signals)
            return self.unstated
        u = self.robots.usage(target, agent, roles)
        return (u.categories, u.signals) if u.allowed else None
