"""RobotsTxt: one parsed file, answering for any robot under any profile.

The engine is manners-core, in Rust (``manners._core``): it reads the file into a line table
once, and delimits groups, chooses them and compiles their rules the first time a robot
asks.  This module adds what Python users see: NamedTuples, profiles given by name or URL,
and the diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from . import _core
from .profiles import Profile, get_profile, profile_for, profile_of


class Decision(NamedTuple):
    """Whether a robot may fetch a target, and the line that says so."""

    allowed: bool
    line: int | None  # 1-based line of the deciding rule; None when no rule decided
    rule: str | None  # the deciding rule as written, e.g. "Disallow: /private"
    reason: str
    profile: str


class Diagnostic(NamedTuple):
    line: int | None
    severity: str  # "error", "warning" or "info"
    code: str
    message: str


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
        )
    return found


class RobotsTxt(_core.RobotsTxt):
    """A parsed robots.txt.  Build it with :func:`manners.parse`.

    ``allowed(target, agent="*", roles=())`` and ``decide(...)`` answer in the engine;
    immutable, so one parsed file may serve many threads.
    """

    __slots__ = ()

    # ``profile``: a profile name, or a URL whose scheme picks it, as a target's does; by
    # default the profile given to parse(), else gemini for a robot with roles, else rfc9309.

    def crawl_delay(
        self, agent: str = "*", roles: Iterable[str] = (), *, profile: str | Profile | None = None
    ) -> float | None:
        """Seconds between requests asked of this robot (the largest that applies)."""
        return self._field("crawl-delay", agent, roles, self._named(profile))  # type: ignore[return-value]

    def request_rate(
        self, agent: str = "*", roles: Iterable[str] = (), *, profile: str | Profile | None = None
    ) -> tuple[int, float] | None:
        """(requests, seconds) from Request-rate; the slowest when several apply."""
        return self._field("request-rate", agent, roles, self._named(profile))  # type: ignore[return-value]

    def check_interval(
        self, agent: str = "*", roles: Iterable[str] = (), *, profile: str | Profile | None = None
    ) -> float | None:
        """Seconds between re-checks of a resource, from the Gemini proposal's Check field."""
        return self._field("check", agent, roles, self._named(profile))  # type: ignore[return-value]

    @staticmethod
    def _named(profile: str | Profile | None) -> _core.Profile | None:
        return None if profile is None else core_profile(profile_of(profile))

    def _chosen(self, profile: str | Profile | None) -> Profile:
        return get_profile(profile) if profile is not None else self.profile or get_profile("rfc9309")

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """(line, severity, code, message) for everything a reader may trip on."""
        from .diagnostics import diagnose

        return diagnose(self, self.profile or get_profile("rfc9309"))

    def lines(self) -> list[Line]:
        """Every key/value line, numbered and classified."""
        return [Line._make(t) for t in self._lines()]

    def groups(self, profile: str | Profile | None = None) -> list[Group]:
        """The groups (records, for 1994) as a profile delimits them."""
        return [Group._make(t) for t in self._groups(core_profile(self._chosen(profile)))]

    def applies(
        self, agent: str = "*", roles: Iterable[str] = (), profile: str | Profile | None = None
    ) -> tuple[list[tuple[str, list[tuple[int, int]]]], str]:
        """Whose rules decide for this robot: (who, [(first line, last line), ...]) in order of
        choice (all of them count: a target must pass each), and the reason when nobody's do."""
        return self._applies(agent, roles, core_profile(self._chosen(profile)))

    def reread(self, profile: str | Profile) -> RobotsTxt:
        """The same file under another profile, sharing what was read."""
        prof = get_profile(profile)
        return RobotsTxt(self, prof, core_profile(prof))


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


def parse(
    data: bytes | bytearray | memoryview | str,
    profile: str | Profile | None = None,
    max_bytes: int | None = 512_000,
) -> RobotsTxt:
    """Parse a robots.txt body.  Never raises on content: anything at all parses.

    ``profile`` fixes how every question is answered; left as None, each target is
    read under the default for its scheme (gemini://, gopher://, else rfc9309).
    Only the first ``max_bytes`` are read (None: all).
    """
    if max_bytes is not None and (type(max_bytes) is not int or max_bytes < 1):
        raise ValueError("max_bytes must be a positive number of bytes, or None")
    if profile is None:
        return RobotsTxt(data, None, None, max_bytes)
    # a one-shot caller parses many small files: the profile is looked up once per name
    found = _PARSE_PROFILES.get(profile) if type(profile) is str else None
    if found is None:
        prof = get_profile(profile)
        found = (prof, core_profile(prof))
        if type(profile) is str:
            _PARSE_PROFILES[profile] = found
    return RobotsTxt(data, found[0], found[1], max_bytes)


# profile names as parse() was given them (only names get_profile knows), and what they mean
_PARSE_PROFILES: dict[str, tuple[Profile, _core.Profile]] = {}
