"""The named rule sets a file can be read under.

A profile is data, not code: the engine reads these switches, so the differences
between the Web, Gemini, Gopher and 1994 readings are all in one table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    #: how a target becomes what patterns are matched against
    target: Literal["rfc3986", "google", "selector", "plain"]
    wildcards: bool = True  # "*" matches any run of characters
    anchor: bool = True  # a final "$" anchors the pattern at the end
    allow: bool = True  # Allow lines count
    index_html: bool = False  # Google: Allow .../index.html also allows .../
    virtual_agents: bool = False  # Virtual-agent lines and robot roles
    #: what rules before the first agent line mean
    preamble: Literal["ignored", "star", "everyone"] = "ignored"
    #: how groups are delimited and chosen
    records: Literal["groups", "1994"] = "groups"
    always_allowed: frozenset[str] = frozenset()
    #: how the caller's name is compared: its product token, or exactly as given (Google)
    agent: Literal["token", "exact"] = "token"
    #: Crawl-delay, Request-rate and Check lines end a run of agent lines, as a rule does
    fields_end_groups: bool = True
    #: with virtual agents: "combined" (the star, role and virtual-star groups together, a
    #: target must pass each) or "targeted" (only the most targeted of them)
    roles: Literal["combined", "targeted"] = "combined"
    #: Content-Usage and Content-Signal lines are read (draft-ietf-aipref-attach updates RFC
    #: 9309); elsewhere they are lines outside the profile's reading
    usage_preferences: bool = False


RFC9309 = Profile(
    "rfc9309",
    "RFC 9309, with RFC 3986 normalisation of URL and patterns",
    target="rfc3986",
    always_allowed=frozenset({"/robots.txt"}),
    usage_preferences=True,
)
GOOGLE = Profile(
    "google",
    "exactly what Google's reference parser (google/robotstxt) decides",
    target="google",
    index_html=True,
    agent="exact",
    fields_end_groups=False,
    usage_preferences=True,
)
GEMINI = Profile(
    "gemini",
    "RFC 9309 matching plus the Gemini companion spec's virtual agents, erring on the side of caution",
    target="rfc3986",
    virtual_agents=True,
    preamble="star",
    always_allowed=frozenset({"/robots.txt"}),
)
GEMINI_TARGETED = replace(
    GEMINI,
    name="gemini-targeted",
    summary="Gemini, as the list proposal has it: only the most targeted group decides",
    roles="targeted",
)
GOPHER = Profile(
    "gopher",
    "the 2019 Gopher proposal and the contemporary Gopher draft: selectors, no $",
    target="selector",
    anchor=False,
    virtual_agents=True,
    preamble="everyone",
    always_allowed=frozenset({"robots.txt", "/robots.txt", "0/robots.txt"}),
)
ORIGINAL = Profile(
    "1994",
    "the 1994 robots exclusion standard: records, substring agents, plain prefixes",
    target="plain",
    wildcards=False,
    anchor=False,
    allow=False,
    records="1994",
)

PROFILES: dict[str, Profile] = {
    p.name: p for p in (RFC9309, GOOGLE, GEMINI, GEMINI_TARGETED, GOPHER, ORIGINAL)
}


def profile_for(target: str) -> Profile:
    """The default profile for a target: by URL scheme, rfc9309 for bare paths."""
    scheme = target[:9].lower()
    if scheme.startswith("gemini://"):
        return GEMINI
    if scheme == "gopher://":
        return GOPHER
    return RFC9309


def get_profile(name: str | Profile) -> Profile:
    """A profile by name, case-insensitively (a Profile is returned as it is)."""
    if isinstance(name, Profile):
        return name
    if not isinstance(name, str):
        raise TypeError(f"profile must be a name such as 'rfc9309', not {type(name).__name__}")
    try:
        return PROFILES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}: use one of {', '.join(PROFILES)}") from None


def profile_of(name: str | Profile) -> Profile:
    """A profile given by name, or by a URL whose scheme picks it (see profile_for)."""
    if isinstance(name, str) and "://" in name:
        return profile_for(name)
    return get_profile(name)
