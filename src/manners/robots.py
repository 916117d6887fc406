"""RobotsTxt: one parsed file, answering for any robot under any profile.

The engine is manners-core, in Rust (``manners._core``): it reads the file into a line table
once, and delimits groups, chooses them and compiles their rules the first time a robot
asks.  ``RobotsTxt`` and ``parse`` are the engine's own; this module holds the NamedTuples
they return (``Diagnostic`` from :mod:`manners.diagnostics`), how profiles are found by name or
URL, and the way to the diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, time
from typing import Literal, NamedTuple

from . import _core
from .diagnostics import Diagnostic as Diagnostic  # a finding, as RobotsTxt.diagnostics gives it
from .diagnostics import diagnose
from .profiles import Profile, get_profile, profile_for, profile_of


class Decision(NamedTuple):
    """Whether a robot may fetch a target, and the line that says so."""

    allowed: bool
    line: int | None  # 1-based line of the deciding rule; None when no rule decided
    rule: str | None  # the deciding rule as written, e.g. "Disallow: /private"
    reason: str
    profile: str


class Preference(NamedTuple):
    """One category of use, what the file prefers for it, and the line that says so."""

    category: str  # its label: "train-ai", "ai-use", "search" (Content-Usage); "ai-input", ...
    value: Literal["yes", "no", "unstated"]  # unstated: unknown, which is no default
    line: int | None  # the line that says it; None when unstated


class Usage(NamedTuple):
    """The usage preferences for what a robot fetches from a target (``robots.usage``).

    ``categories`` are the vocabulary of the Content-Usage rule (draft-ietf-aipref-attach-05,
    draft-ietf-aipref-vocab-08: ``train-ai``, ``ai-use``, ``search``); ``signals`` those of the
    Content-Signal line (draft-romm-aipref-contentsignals-00: ``search``, ``ai-input``,
    ``ai-train``).  Preferences apply only to what may be fetched: when ``allowed`` is False,
    every category is unstated ("no preferences are implied for resources that are
    disallowed").  Profiles other than rfc9309 and google do not read them.
    """

    allowed: bool  # the robot may fetch the target
    categories: tuple[Preference, ...]
    signals: tuple[Preference, ...]
    profile: str

    def category(self, label: str) -> Preference:
        """The Content-Usage preference for a category, by its label (``"train-ai"``)."""
        return _by_label(self.categories, label, "Content-Usage category")

    def signal(self, label: str) -> Preference:
        """The Content-Signal value for a category, by its label (``"ai-train"``)."""
        return _by_label(self.signals, label, "Content-Signal category")


def _by_label(prefs: tuple[Preference, ...], label: str, what: str) -> Preference:
    for p in prefs:
        if p.category == label:
            return p
    known = ", ".join(p.category for p in prefs)
    raise KeyError(f"no {what} {label!r}: one of {known}")


class RequestRate(tuple[int, float]):
    """``(requests, seconds)`` from a Request-rate line, and the part of the day it is given for.

    ``Request-rate: 1/10s 1820-1940`` is one request every 10 seconds between 18:20 and 19:40
    UTC (the 1996 extended standard): ``start_time`` and ``end_time`` are those times of day,
    both within the window, and None for a rate without one.  It is a pair, so it compares
    and unpacks as the rate it is; the window goes with it.
    """

    start_time: time | None
    end_time: time | None

    def __new__(
        cls, requests: int, seconds: float, start_time: time | None = None, end_time: time | None = None
    ) -> RequestRate:
        made = super().__new__(cls, (requests, seconds))
        made.start_time = start_time
        made.end_time = end_time
        return made

    @property
    def requests(self) -> int:
        return self[0]

    @property
    def seconds(self) -> float:
        return self[1]

    def __repr__(self) -> str:
        window = f", start_time={self.start_time!r}, end_time={self.end_time!r}" if self.start_time else ""
        return f"RequestRate(requests={self[0]!r}, seconds={self[1]!r}{window})"


class Group(NamedTuple):
    """A run of agent lines and every line up to the next group."""

    agents: tuple[tuple[int, str], ...]  # (line, value) of each User-agent line
    virtual: tuple[tuple[int, str], ...]  # (line, value) of each Virtual-agent line
    names: frozenset[str]  # User-agent tokens, lower-cased ("*" for the star)
    virtual_names: frozenset[str]
    lines: tuple[int, int]  # first and last line


class Line(NamedTuple):
    """One line of the file that carries a key and a value."""

    number: int
    kind: str  # user-agent, virtual-agent, allow, disallow, sitemap, crawl-delay, ...
    key: str  # the key as written
    value: str  # the value, trimmed, as written


_CORE: dict[Profile, _core.Profile] = {}


def core_profile(profile: Profile) -> _core.Profile:
    """The engine's form of a profile, made once per Profile."""
    found = _CORE.get(profile)
    if found is None:
        found = _CORE[profile] = _core.Profile(
            profile.name,
            profile.target,
            profile.wildcards,
            profile.anchor,
            profile.allow,
            profile.index_html,
            profile.virtual_agents,
            profile.preamble,
            profile.records,
            sorted(profile.always_allowed),
            profile.agent,
            profile.fields_end_groups,
            profile.roles,
            profile.usage_preferences,
        )
    return found


RobotsTxt = _core.RobotsTxt
parse = _core.parse


def asked_spacing(
    robots: RobotsTxt,
    agent: str = "*",
    roles: Iterable[str] | None = (),
    *,
    profile: str | Profile | None = None,
    at: datetime | None = None,
) -> float:
    """Seconds between requests a file asks of this robot: the larger of its Crawl-delay and of
    the Request-rate in force ``at`` (default: now), 0 when it asks neither.

    A Request-rate with a window of the day (``1/10s 1820-1940``, UTC) is in force only inside
    it, so the answer changes with the time of day: a robot asks again for each request.
    """
    return _core.asked_spacing(robots, agent, roles, profile, at or datetime.now(UTC))


# What the engine calls back for: profiles by name or URL, and diagnostics.


def _profile_pair(profile: str | Profile) -> tuple[Profile, _core.Profile]:
    prof = get_profile(profile)
    return prof, core_profile(prof)


def _named(profile: str | Profile) -> _core.Profile:
    """A profile name, or a URL whose scheme picks it, as a target's does."""
    return core_profile(profile_of(profile))


def _chosen(robots: RobotsTxt, profile: str | Profile | None) -> _core.Profile:
    """The profile given, else the one given to parse(), else rfc9309."""
    chosen = get_profile(profile) if profile is not None else robots.profile or get_profile("rfc9309")
    return core_profile(chosen)


def _diagnostics(robots: RobotsTxt) -> list[Diagnostic]:
    return diagnose(robots, robots.profile or get_profile("rfc9309"))


class _Verdict(RobotsTxt):
    """One answer for every target: what a robots.txt that could not be read means."""

    __slots__ = ("_allowed", "_reason")

    def __init__(self, allowed: bool, reason: str, profile: Profile | None) -> None:
        self._allowed = allowed
        self._reason = reason

    def __new__(cls, allowed: bool, reason: str, profile: Profile | None) -> _Verdict:
        made = super().__new__(cls, b"", profile, core_profile(profile) if profile else None)
        assert isinstance(made, _Verdict)
        return made

    def allowed(self, target: str, agent: str = "*", roles: Iterable[str] | None = ()) -> bool:
        return self._allowed

    def decide(self, target: str, agent: str = "*", roles: Iterable[str] | None = ()) -> Decision:
        profile = self.profile or profile_for(target)
        return Decision(self._allowed, None, None, self._reason, profile.name)


def verdict(allowed: bool, reason: str, profile: str | Profile | None = None) -> RobotsTxt:
    """A RobotsTxt that allows (or disallows) everything, saying why in every Decision."""
    return _Verdict(allowed, reason, get_profile(profile) if profile is not None else None)
