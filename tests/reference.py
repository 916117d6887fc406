"""A deliberately naive reader, for property tests: groups from the full line list,
Google's own position-set matcher, every rule tried.  Slow and obviously right."""

from __future__ import annotations

import manners
from manners._core import (
    agent_token,
    google_escape,
    google_path,
    gopher_selectors,
    normalise,
    product_token,
    url_path,
)


def matches(path: str, pattern: str, wildcards: bool, anchor: bool) -> bool:
    """robots.cc's Matches(): the set of path positions the pattern prefix can reach."""
    positions = [0]
    for i, ch in enumerate(pattern):
        if anchor and ch == "$" and i == len(pattern) - 1:
            return positions[-1] == len(path)
        if wildcards and ch == "*":
            positions = list(range(positions[0], len(path) + 1))
        else:
            positions = [p + 1 for p in positions if p < len(path) and path[p] == ch]
            if not positions:
                return False
    return True


def spell(profile: manners.Profile, value: str) -> str:
    if profile.target == "google":
        return google_escape(value)
    if profile.target == "selector":
        return value
    return normalise(value, pattern=profile.target == "rfc3986")


def subjects(profile: manners.Profile, target: str) -> tuple[str, ...]:
    if profile.target == "google":
        return (google_path(target),)
    if profile.target == "selector":
        return gopher_selectors(target)
    return (normalise(url_path(target), pattern=False),)


def allowed(robots: manners.RobotsTxt, profile: manners.Profile, target: str, agent: str, roles=()) -> bool:
    assert profile.records == "groups"
    groups: list[dict] = []
    preamble: list = []
    current = None
    seen_rule = False
    for line in robots.lines():
        is_agent = line.kind == "user-agent" or (profile.virtual_agents and line.kind == "virtual-agent")
        if is_agent:
            if current is None or seen_rule:
                current = {"names": set(), "virtual": set(), "rules": []}
                groups.append(current)
                seen_rule = False
            current["virtual" if line.kind == "virtual-agent" else "names"].add(agent_token(line.value))
        elif line.kind in ("allow", "disallow"):
            if current is None:
                preamble.append(line)
            else:
                current["rules"].append(line)
                seen_rule = True
        elif line.kind in ("crawl-delay", "request-rate", "check") and profile.fields_end_groups:
            seen_rule = current is not None
            if current is None:
                preamble.append(line)  # counts for "is there a preamble", matches nothing

    def rules_of(gs: list[dict]) -> list:
        return [r for g in gs for r in g["rules"]]

    preamble_rules = [r for r in preamble if r.kind in ("allow", "disallow")]
    sets: list[list] = []
    token = agent.lower() if profile.agent == "exact" else product_token(agent)
    own = [g for g in groups if token in g["names"] and token not in (None, "", "*")]
    if own:
        sets = [rules_of(own)]
    role_sets = []
    if not sets and profile.virtual_agents and roles:
        for role in dict.fromkeys(r.lower() for r in roles):
            gs = [g for g in groups if role in g["names"] or role in g["virtual"]]
            if role and role != "*" and gs:
                role_sets.append(rules_of(gs))
        vstar = [g for g in groups if "*" in g["virtual"]]
        if profile.roles == "targeted":
            sets = role_sets or ([rules_of(vstar)] if vstar else [])
        else:
            role_sets += [rules_of(vstar)] if vstar else []
    if not sets:
        gs = [g for g in groups if "*" in g["names"]]
        extra = preamble_rules if profile.preamble == "star" and preamble else []
        if gs or (profile.preamble == "star" and preamble):
            sets = [extra + rules_of(gs)]
        if profile.roles == "combined":
            sets += role_sets
    if profile.preamble == "everyone" and preamble:
        sets = [preamble_rules + s for s in sets] or [preamble_rules]

    paths = subjects(profile, target)
    if any(p in profile.always_allowed for p in paths):
        return True
    for path in paths:
        for rules in sets:
            best = (0, True)
            for r in rules:
                pattern = spell(profile, r.value)
                candidates = [pattern]
                if profile.index_html and r.kind == "allow":
                    slash = pattern.rfind("/")
                    if slash >= 0 and pattern.startswith("/index.htm", slash):
                        candidates.append(pattern[: slash + 1] + "$")
                for p in candidates:
                    if p and matches(path, p, profile.wildcards, profile.anchor):
                        best = max(best, (len(p), r.kind == "allow"))
            if not best[1]:
                return False
    return True
