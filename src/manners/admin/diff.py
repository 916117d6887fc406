"""What an edit to robots.txt changes: the verdicts that flip, and the groups and rules that moved.

An admin about to deploy a new robots.txt wants to know which URLs a robot may no longer
fetch (or may now fetch), for which robots, and which line decides on each side.  This is the
pure part of ``manners diff`` (and of ``manners serve``'s page): two parsed files and a list
of URLs in, a :class:`Diff` out; nothing is fetched or printed here.

The API (stable; every value is immutable)::

    from manners import parse
    from manners.admin.diff import diff

    d = diff(parse(old_body), parse(new_body), ["https://example.org/private/x", "/about"])
    d.flipped                     # True when some verdict flips
    for flip in d.flips:          # Flip(url, profile, old: Decision, new: Decision, agents)
        flip.url, flip.profile, flip.old.allowed, flip.old.line, flip.new.rule
        for who in flip.agents:   # Asker(agent, roles): each robot it flips for
            who.agent, who.roles
    d.counts                      # AgentCount(agent, urls, allowed, disallowed), one per agent asked
    d.groups                      # GroupChange(change, old: GroupSide|None, new: GroupSide|None, rules)
    d.notes                       # sentences: where Google's PyPI binding would read a URL otherwise
    d.preferences                 # PreferenceChange(field, category, profile, old, new, urls, agents)
    d.changed                     # True when some verdict flips or some preference changes
    d.cells()                     # (url, agent, roles, profile, old, new), one per robot that flips

``diff(old, new, urls=None, *, agents=(), roles=(), profiles=(), default_profile="rfc9309")``:

* **who is asked**: ``*``, every agent named in either file and ``agents``; each on its own
  and, under a profile that reads Virtual-agent lines (gemini, gemini-targeted, gopher), also
  acting in each role alone: the four virtual agents (indexer, archiver, researcher,
  webproxy), every Virtual-agent named in either file, and ``roles`` (a role, or a tuple of
  roles a robot acts in at once, as ``manners check --role a --role b``).  Under the other
  profiles a role changes nothing, so a robot is asked once, with no role.
* **under which profile**: each URL's own (by its scheme, as ``manners check`` reads it; a
  path by ``default_profile``), or every profile in ``profiles``.  A target is asked about as
  a robot reading under that profile asks (``manners.targets.as_read_by``, as ``explain`` asks):
  a text that is no URL is a path, read from the root when it does not start with '/'
  (``1/secret`` is ``/1/secret``), except by the gopher profile, which reads it as a selector.
* **which URLs**: ``urls``, or when it is None each rule's own path in either file (as
  ``manners explain`` samples them; under google spelled as the google profile spells the
  rule, ``/café`` as ``/caf%C3%A9``, since Google's robots.cc compares a URL as given).
  Check what a user typed first, as the command does (``manners.targets.check_target``):
  ``example.org/x`` would be the path ``/example.org/x``.
* **what flips**: ``allowed`` differs between the two files.  A deciding line that moved
  while the verdict stayed is no flip.  Robots (and roles) that decide alike are grouped in
  one :class:`Flip` per URL and pair of decisions.
* **usage preferences**: under a profile that reads them (rfc9309, google), every robot asked
  about every target (``RobotsTxt.usage``) on both sides, where both files let it fetch the
  target (a verdict that flips is a flip; where a robot may not fetch, no preference
  applies).  A category of ``Content-Usage`` or ``Content-Signal`` whose value differs is a
  :class:`PreferenceChange`; a line that only moved is none.  Changes alike (the same field,
  category, profile, values and lines, and robots) are one, with every URL they apply to.
  Without given ``urls``, the targets also hold the path of each ``Content-Usage`` and
  ``Content-Signal`` line in either file, and ``/`` when one has no path.  A file with
  neither field on both sides costs nothing here.
* **groups and rules**: compared under ``Diff.profile`` (``profiles[0]`` when given, else the
  one profile every target was read under, else ``default_profile``).  Groups are matched by
  their agents, then a group with the same rules (a rename), then one that shares an agent;
  the rest are added or removed.  Rules are matched by kind and value; the same value with
  another kind (Allow to Disallow) is one changed rule.  A group whose lines moved but whose
  agents and rules did not is no change.  Groups for the same agents are one group
  (``GroupSide.parts``: each one's lines), as every profile but 1994's combines them, and a
  change that leaves every agent it names with the same rules is none: one ``User-agent: *``
  group split in two changes nothing.
* **notes**: where the google profile (Google's robots.cc, as given) reads a URL asked, or a
  rule changed, otherwise than fast-robotstxt 1.1.0 (Google's parser as its PyPI binding
  ships it, which decodes escapes and parses URLs with ada): a sentence per way (SPELLINGS),
  naming the URLs or rules.  Matching the binding there would fail Google's own conformance
  suite (non-ascii-paths), which the google profile passes.

A file that could not be read stands in as what robots make of it
(:func:`manners.robots.verdict`: everything allowed or disallowed) and is compared as that.

Speed (25,000 URLs and every robot of a file of thousands of rules, in well under a second
for a usual edit): a robot's verdicts can only differ when the rules of the groups that apply
to it differ between the files, so each robot is first placed by the groups it gets on each
side (``RobotsTxt.applies``).  Robots whose rules are the same on both sides are never asked;
robots that get the same groups on both sides are asked once; and only about the targets
that some rule in one file's groups and not in the other's matches (a target no changed rule
matches is matched by the same rules on both sides), found by a file of those rules alone.
They are asked with ``allowed()``, the engine's fastest question, once per set of rules (many
files give many robots the same rules), and with ``decide()`` only where the answers differ.
The tests check the result against asking every robot about every target.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import ne
from typing import Literal, NamedTuple

from .._core import google_escape, google_path
from ..profiles import get_profile, profile_for
from ..readers import ROLES, sample_paths
from ..robots import Decision, Group, RobotsTxt, parse
from ..targets import as_read_by, is_url
from .preference_changes import Asker, PreferenceChange, preference_changes, usage_paths

__all__ = [
    "AgentCount",
    "Asker",
    "Diff",
    "Flip",
    "GroupChange",
    "GroupSide",
    "PreferenceChange",
    "RuleChange",
    "RuleSide",
    "default_targets",
    "diff",
    "group_changes",
]

Change = Literal["added", "removed", "changed"]


class Flip(NamedTuple):
    """A URL whose verdict flips, under one profile, with the deciding line on both sides,
    and every robot it flips for that way.  (A NamedTuple, as Decision is: a diff of a
    crawl's URLs can hold a hundred thousand.)"""

    url: str  # as given
    profile: str
    old: Decision
    new: Decision
    agents: tuple[Asker, ...]


@dataclass(frozen=True, slots=True)
class AgentCount:
    """How many URLs flip for an agent, under any role and profile.  A URL that flips both
    ways (allowed in one role, disallowed in another) counts in ``allowed`` and ``disallowed``."""

    agent: str
    urls: int  # URLs whose verdict flips for it
    allowed: int  # of them, URLs the new file allows (in some role)
    disallowed: int  # of them, URLs the new file disallows (in some role)


@dataclass(frozen=True, slots=True)
class RuleSide:
    """A rule as one file has it."""

    line: int
    rule: str  # as written, e.g. "Disallow: /private"


@dataclass(frozen=True, slots=True)
class RuleChange:
    """A rule added (only ``new``), removed (only ``old``) or changed (the same path, another
    kind: Allow to Disallow or back)."""

    change: Change
    old: RuleSide | None
    new: RuleSide | None


@dataclass(frozen=True, slots=True)
class GroupSide:
    """A group as one file has it.  No agents at all: the rules before any User-agent line.

    Groups for the same agents are one group to every profile but 1994's (RFC 9309 §2.2.1:
    their rules are combined), so they are compared as one: ``parts`` then holds each
    group's first and last line, and ``lines`` the first of the first and the last of the last."""

    lines: tuple[int, int]  # its first and last line
    user_agents: tuple[str, ...]  # as written
    virtual_agents: tuple[str, ...]
    parts: tuple[tuple[int, int], ...] = ()  # each group's lines, when the file splits it

    def spans(self) -> str:
        """Its lines for people: '1-4', or '1-3 and 7-8' for a group the file splits."""
        parts = self.parts or (self.lines,)
        text = [f"{a}-{b}" for a, b in parts]
        return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]

    def named(self) -> str:
        """Its agent lines as the file has them, in one line (``manners diff``, ``serve``)."""
        lines = [f"User-agent: {v}" for v in self.user_agents]
        lines += [f"Virtual-agent: {v}" for v in self.virtual_agents]
        return "; ".join(lines) or "rules before any User-agent line"


@dataclass(frozen=True, slots=True)
class GroupChange:
    """A group added (only ``new``), removed (only ``old``), or changed: its agents (a rename)
    or its rules, listed in ``rules``."""

    change: Change
    old: GroupSide | None
    new: GroupSide | None
    rules: tuple[RuleChange, ...]


@dataclass(frozen=True, slots=True)
class Diff:
    """What changes from ``old`` to ``new``: see the module's docstring."""

    urls: tuple[str, ...]  # the targets asked about, in order (duplicates dropped)
    agents: tuple[str, ...]  # every agent asked: "*", those given, those the files name
    # the role sets asked besides none; empty when no profile asked reads Virtual-agent lines
    roles: tuple[tuple[str, ...], ...]
    profiles: tuple[str, ...]  # every profile some target was asked under
    profile: str  # the reading the groups and rules are compared under
    flips: tuple[Flip, ...]  # by URL (in order), then profile
    counts: tuple[AgentCount, ...]  # one per agent asked, in the order of ``agents``
    groups: tuple[GroupChange, ...]  # in the order of the files
    # where the google profile's reading of a target asked is not fast-robotstxt 1.1.0's: a sentence each
    notes: tuple[str, ...] = ()
    # the usage preferences that change, by the first URL each changes for
    preferences: tuple[PreferenceChange, ...] = ()

    @property
    def flipped(self) -> bool:
        """Does any verdict flip?"""
        return bool(self.flips)

    @property
    def changed(self) -> bool:
        """Does any verdict flip, or any usage preference change?"""
        return bool(self.flips or self.preferences)

    def cells(self) -> Iterator[tuple[str, str, tuple[str, ...], str, Decision, Decision]]:
        """Every flip robot by robot: (url, agent, roles, profile, old, new)."""
        for f in self.flips:
            for who in f.agents:
                yield f.url, who.agent, who.roles, f.profile, f.old, f.new


# -- the rules of a file, by line ----------------------------------------------------------


class _Rules:
    """A file's Allow and Disallow lines, sorted by line number, to slice by line ranges."""

    def __init__(self, robots: RobotsTxt) -> None:
        rows = [ln for ln in robots.lines() if ln.kind in ("allow", "disallow")]
        self.numbers = [ln.number for ln in rows]
        self.rows = [(ln.number, ln.kind, f"{ln.key}: {ln.value}", ln.value) for ln in rows]
        self.kinds = [(ln.kind, ln.value) for ln in rows]
        self.made: dict[tuple[tuple[int, int], ...], tuple[tuple[str, str], ...]] = {}

    def between(self, first: int, last: int) -> list[tuple[int, str, str, str]]:
        """(line, kind, rule as written, value) of the rules on lines first..last."""
        return self.rows[bisect_left(self.numbers, first) : bisect_right(self.numbers, last)]

    def content(self, ranges: Sequence[tuple[int, int]]) -> tuple[tuple[str, str], ...]:
        """(kind, value) of the rules in ``ranges``, sorted: what a verdict can depend on (the
        longest match wins and Disallow wins a tie, so neither order nor line counts).  Made
        once per set of ranges: many robots share a group."""
        key = tuple(ranges)
        found = self.made.get(key)
        if found is None:
            rules: list[tuple[str, str]] = []
            for first, last in ranges:
                rules += self.kinds[bisect_left(self.numbers, first) : bisect_right(self.numbers, last)]
            found = self.made[key] = tuple(sorted(rules))
        return found


# -- one file, read under one profile ------------------------------------------------------


_OPAQUE = "a file that could not be read"
#: the rules of each group that applies to a robot, as (kind, value) sorted; for a file that
#: could not be read, an object equal to no other
Deciding = tuple[tuple[tuple[str, str], ...], ...] | object


class _Side:
    """One file under one profile, and how each robot is placed in it: by the groups that apply."""

    def __init__(self, robots: RobotsTxt, profile: str, rules: _Rules) -> None:
        # A file that could not be read is a verdict (manners.robots.verdict): the same answer
        # for every robot, which rereading would lose.
        self.opaque = type(robots) is not RobotsTxt
        self.robots = robots if self.opaque else robots.reread(profile)
        self.profile = profile
        self.rules = rules

    def place(self, agent: str, roles: tuple[str, ...]) -> tuple[str, Deciding]:
        """Where a robot stands in this file: a key (robots with the same key decide alike)
        and the rules that decide for it (robots with the same rules give the same verdicts)."""
        if self.opaque:
            return _OPAQUE, object()  # never the same rules as the other side's
        chosen, reason = self.robots.applies(agent, roles, self.profile)
        key = repr((chosen, reason))
        return key, tuple(self.rules.content(ranges) for _, ranges in chosen)


# -- diff ------------------------------------------------------------------------------------


def default_targets(old: RobotsTxt, new: RobotsTxt, profile: str = "rfc9309") -> list[str]:
    """Each rule's own path in either file, as ``manners explain`` samples one file, spelled as
    ``profile`` spells patterns: under google %-encoded (octets >= 0x80 escaped, hex upper-cased),
    since Google's robots.cc matches a URL as given, and ``/café`` as a URL is not the
    ``/caf%C3%A9`` that ``Disallow: /café`` matches (Google's conformance suite, non-ascii-paths).
    Then the paths of the usage preferences (:func:`usage_paths`)."""
    paths = [*sample_paths(old), *sample_paths(new), *usage_paths(old), *usage_paths(new)]
    if get_profile(profile).target == "google":
        paths = list(map(google_escape, paths))
    return list(dict.fromkeys(paths))


# -- where Google's robots.cc and its PyPI binding read a URL apart ----------------------------

#: an escape the google profile compares as written where the binding decodes it: of an ASCII
#: octet (which a rule or URL may write unescaped), or in lower-case hex in a URL (a rule's is
#: upper-cased; ``%C3%A9`` is how the google profile spells ``é`` in a rule, and matches alike)
_ASCII_ESCAPE = re.compile(r"%[0-7][0-9A-Fa-f]")
_LOWER_ESCAPE = re.compile(r"%(?:[a-f][0-9A-Fa-f]|[0-9A-F][a-f])")

#: Each way the google profile (Google's robots.cc, whose conformance suite it passes) reads a
#: target apart from fast-robotstxt 1.1.0 (Google's parser as its PyPI binding ships it, which
#: the tests ask): that binding parses a URL with ada (WHATWG) and decodes every %-escape when
#: matching.  robots.cc expects the caller to %-encode a URL and compares it as given; its own
#: suite expects ``/foo/bar/%62%61%7A`` not to be ``/foo/bar/baz`` and a raw ``ツ`` in a URL not
#: to match ``Allow: /foo/bar/ツ``, which the binding fails.  So the google profile keeps
#: robots.cc's reading, and diff says where the binding would answer otherwise.
SPELLINGS = {
    "escape": "%-escapes are compared as written, as Google's robots.cc compares them"
    " (/%7Euser is not /~user, %c3 is not %C3 in a URL); fast-robotstxt 1.1.0 and RFC 9309"
    " (--profile rfc9309) decode them first",
    "non-ascii": "octets beyond ASCII are compared as given: Google's robots.cc expects the caller"
    " to %-encode a URL (/café is not the /caf%C3%A9 that Disallow: /café matches);"
    " fast-robotstxt 1.1.0 and RFC 9309 (--profile rfc9309) encode them first",
    "escaped-rule": "a rule's %-escapes match only the same escapes in a URL, as in Google's"
    " robots.cc (Disallow: /%7Euser does not match /~user); fast-robotstxt 1.1.0 and RFC 9309"
    " (--profile rfc9309) decode both first",
    "empty-query": "an empty query is kept, as Google's robots.cc keeps it (/page? is matched"
    " by Disallow: /page?); fast-robotstxt 1.1.0 drops it from a URL (ada's search is empty)",
    "backslash": "a backslash is kept, as Google's robots.cc keeps it; fast-robotstxt 1.1.0 reads"
    " it as '/' in an http(s) URL",
}


def google_spelling(target: str) -> tuple[str, ...]:
    """How the google profile reads ``target`` apart from fast-robotstxt 1.1.0: the keys of
    SPELLINGS that apply, none when both read it alike (a bare path is taken as given by both,
    but for its escapes and octets beyond ASCII, which the binding decodes when matching)."""
    url = is_url(target)
    path = google_path(target) if url else target.split("#", 1)[0]
    found = []
    if _ASCII_ESCAPE.search(path) or _LOWER_ESCAPE.search(path):
        found.append("escape")
    if not path.isascii():
        found.append("non-ascii")
    if url and path.find("?") == len(path) - 1:
        found.append("empty-query")
    if url and target[:5].lower() in ("http:", "https") and "\\" in path.split("?", 1)[0]:
        found.append("backslash")
    return tuple(found)


def _notes(
    targets: Sequence[str], batches: dict[str, list[int]], groups: Sequence[GroupChange]
) -> tuple[str, ...]:
    """A sentence for each way a target asked under google, or a rule changed with a
    %-escape, is read apart from fast-robotstxt 1.1.0."""
    google = [name for name in batches if get_profile(name).target == "google"]
    found: dict[str, list[str]] = {}
    for name in google:
        for n in batches[name]:
            for key in google_spelling(targets[n]):
                found.setdefault(key, []).append(targets[n])
    if google:
        for g in groups:
            for r in g.rules:
                for label, side in (("old", r.old), ("new", r.new)):
                    if side is not None and _ASCII_ESCAPE.search(side.rule):
                        said = f"{label} line {side.line}: {side.rule}"
                        found.setdefault("escaped-rule", []).append(said)
    out = []
    for key, sentence in SPELLINGS.items():
        urls = list(dict.fromkeys(found.get(key, [])))
        if urls:
            some = ", ".join(urls[:3]) + (f" and {len(urls) - 3:,} more" if len(urls) > 3 else "")
            out.append(f"under google, {sentence}: {some}")
    return tuple(out)


def diff(
    old: RobotsTxt,
    new: RobotsTxt,
    urls: Sequence[str] | None = None,
    *,
    agents: Sequence[str] = (),
    roles: Sequence[str | Sequence[str]] = (),
    profiles: Sequence[str] = (),
    default_profile: str = "rfc9309",
) -> Diff:
    """Every URL whose verdict flips from ``old`` to ``new``, for which robots, under which
    profile, with the deciding line on both sides; and the groups and rules that changed.
    See the module's docstring for who is asked, under which profile, and about what."""
    asked_profiles = [get_profile(p).name for p in profiles]
    default_profile = get_profile(default_profile).name
    spelled = (asked_profiles or [default_profile])[0]
    targets = list(dict.fromkeys(default_targets(old, new, spelled) if urls is None else urls))
    # each target, under each profile it is asked under
    batches: dict[str, list[int]] = {}
    for n, url in enumerate(targets):
        for p in asked_profiles or [profile_for(url).name if is_url(url) else default_profile]:
            batches.setdefault(p, []).append(n)
    reading = (
        asked_profiles[0] if asked_profiles else next(iter(batches)) if len(batches) == 1 else default_profile
    )

    old_rules, new_rules = _Rules(old), _Rules(new)
    named = _agents(old, new, [*batches, reading], agents)
    role_sets = _role_sets(old, new, [*batches, reading], roles)
    found: dict[tuple[int, str, Decision, Decision], list[Asker]] = {}
    for p, indices in batches.items():
        asked = [as_read_by(targets[n], p) for n in indices]
        _flips(
            _Side(old, p, old_rules),
            _Side(new, p, new_rules),
            named,
            [(), *role_sets] if get_profile(p).virtual_agents else [()],
            asked,
            indices,
            found,
        )
    # by URL, each URL's in the order found: by profile, then by robot
    by_url: list[list[Flip]] = [[] for _ in targets]
    shared: dict[int, tuple[Asker, ...]] = {}  # robots placed alike share one tuple
    for (n, p, o, w), who in found.items():
        robots = shared.get(id(who))
        if robots is None:
            robots = shared[id(who)] = tuple(who)
        by_url[n].append(Flip(targets[n], p, o, w, robots))
    flips = tuple(f for at in by_url for f in at)
    groups = _group_changes(old, new, reading, old_rules, new_rules)
    return Diff(
        urls=tuple(targets),
        agents=tuple(named),
        roles=tuple(role_sets) if any(get_profile(p).virtual_agents for p in batches) else (),
        profiles=tuple(batches),
        profile=reading,
        flips=flips,
        counts=_counts(named, flips),
        groups=groups,
        notes=_notes(targets, batches, groups),
        preferences=preference_changes(old, new, targets, batches, named, role_sets),
    )


# -- usage preferences -------------------------------------------------------------------------


def _flips(
    old: _Side,
    new: _Side,
    agents: list[str],
    role_sets: list[tuple[str, ...]],
    asked: list[str],
    indices: list[int],
    found: dict[tuple[int, str, Decision, Decision], list[Asker]],
) -> None:
    """Add to ``found`` the flips of one profile's targets (``asked``, the targets' numbers
    ``indices``), for every robot: each class of robots placed alike on both sides asked once,
    about the targets some changed rule of theirs matches (all of them when that cannot be told)."""
    classes: dict[tuple[str, str], tuple[Deciding, Deciding, list[Asker]]] = {}
    for agent in agents:
        for roles in role_sets:
            old_key, old_rules = old.place(agent, roles)
            new_key, new_rules = new.place(agent, roles)
            if old_rules == new_rules:
                continue  # the same rules decide on both sides: no verdict can flip
            classes.setdefault((old_key, new_key), (old_rules, new_rules, []))[2].append(Asker(agent, roles))
    # which targets a set of changed rules matches (None: every target may flip), and the
    # answers for a set of rules: robots with the same rules (many files copy a group for
    # each robot) give the same answers, whatever their lines
    matched: dict[frozenset[tuple[str, str]] | None, tuple[list[int] | None, list[str]]] = {}
    answers: dict[tuple[int, Deciding, frozenset[tuple[str, str]] | None], list[bool]] = {}
    for old_rules, new_rules, who in classes.values():
        agent, roles = who[0]
        changed = _changed(old_rules, new_rules)
        known = matched.get(changed)
        if known is None:
            some = None if changed is None else _matching(changed, old.profile, asked)
            known = matched[changed] = (some, asked if some is None else [asked[i] for i in some])
        some, ask = known
        both = []
        for n, side, rules in ((0, old, old_rules), (1, new, new_rules)):
            answer = answers.get((n, rules, changed))
            if answer is None:
                answer = answers[n, rules, changed] = list(
                    map(side.robots.allowed, ask, repeat(agent), repeat(roles))
                )
            both.append(answer)
        for n in compress(range(len(ask)), map(ne, both[0], both[1])):  # where the answers differ
            o = old.robots.decide(ask[n], agent, roles)
            w = new.robots.decide(ask[n], agent, roles)
            if o.allowed is not w.allowed:  # as allowed() said: decide() is the same question
                i = n if some is None else some[n]
                key = (indices[i], old.profile, o, w)
                have = found.get(key)
                found[key] = who if have is None else have + who  # ``who`` itself is shared, never changed


def _changed(old: Deciding, new: Deciding) -> frozenset[tuple[str, str]] | None:
    """The rules in one file's groups for a robot and not in the other's, group by group
    (the first that applies in OLD against the first in NEW, ...); None when the files give
    it a different number of groups (or one was not read), so that no rule can be singled out.

    A target that none of them matches is matched by the same rules on both sides, group by
    group, so it gets the same verdict: the longest match, and a group's verdict, depend
    only on the rules that match."""
    if not isinstance(old, tuple) or not isinstance(new, tuple) or len(old) != len(new):
        return None
    changed: set[tuple[str, str]] = set()
    for a, b in zip(old, new, strict=True):
        changed |= set(a) ^ set(b)
    return frozenset(changed)


def _matching(rules: frozenset[tuple[str, str]], profile: str, targets: list[str]) -> list[int] | None:
    """The numbers of the targets that some of ``rules`` matches, as ``profile`` reads them:
    asked of a file of those rules alone, each as a Disallow (a pattern matches alike in an
    Allow and a Disallow line).  None when that file would not answer exactly: Google's
    ``Allow: .../index.html`` also allows its directory, which a Disallow does not."""
    if get_profile(profile).index_html and any(k == "allow" and "index.htm" in v for k, v in rules):
        return None
    values = sorted({value for _, value in rules if value})  # an empty rule matches nothing
    if not values:
        return []
    body = "User-agent: *\n" + "".join(f"Disallow: {v}\n" for v in values)
    alone = parse(body.encode("utf-8", "surrogateescape"), profile, max_bytes=None)
    if sorted(ln.value for ln in alone.lines() if ln.kind == "disallow") != values:
        return None  # not read back as written: ask every target
    return [n for n, allowed in enumerate(map(alone.allowed, targets)) if not allowed]


def _agents(old: RobotsTxt, new: RobotsTxt, profiles: list[str], given: Sequence[str]) -> list[str]:
    """'*', the agents given, then every User-agent either file names (under any profile
    asked), sorted; each once, whatever its case."""
    names: set[str] = set()
    for robots in (old, new):
        for p in dict.fromkeys(profiles):
            for g in robots.groups(p):
                names |= g.names
    out: dict[str, str] = {}
    for name in ["*", *given, *sorted(names)]:
        out.setdefault(name.lower(), name)
    return list(out.values())


def _role_sets(
    old: RobotsTxt, new: RobotsTxt, profiles: list[str], given: Sequence[str | Sequence[str]]
) -> list[tuple[str, ...]]:
    """Each virtual agent alone (the four roles, and every Virtual-agent either file names),
    and the roles given (a role, or several acted in at once)."""
    named: set[str] = set()
    for robots in (old, new):
        for p in dict.fromkeys(profiles):
            if get_profile(p).virtual_agents:
                for g in robots.groups(p):
                    named |= g.virtual_names
    alone = [(r,) for r in dict.fromkeys([*ROLES, *sorted(named - {"*"})])]
    extra = [(r,) if isinstance(r, str) else tuple(r) for r in given]
    return list(dict.fromkeys([*alone, *extra]))


def _counts(agents: list[str], flips: Sequence[Flip]) -> tuple[AgentCount, ...]:
    """How many URLs flip for each agent (each URL once, whatever its roles and profiles)."""
    urls: dict[str, set[str]] = {a: set() for a in agents}
    allowed: dict[str, set[str]] = {a: set() for a in agents}
    disallowed: dict[str, set[str]] = {a: set() for a in agents}
    names: dict[int, set[str]] = {}  # by the robots' tuple, which flips share
    for f in flips:
        way = allowed if f.new.allowed else disallowed
        of = names.get(id(f.agents))
        if of is None:
            of = names[id(f.agents)] = {who.agent for who in f.agents}
        for agent in of:
            urls[agent].add(f.url)
            way[agent].add(f.url)
    return tuple(AgentCount(a, len(urls[a]), len(allowed[a]), len(disallowed[a])) for a in agents)


# -- groups and rules ------------------------------------------------------------------------


class _Group(NamedTuple):
    side: GroupSide
    key: tuple[frozenset[str], frozenset[str]]  # its agents, as robots match them
    rules: list[tuple[int, str, str, str]]  # (line, kind, rule as written, value)
    content: tuple[tuple[str, str], ...]  # (kind, value) sorted


def _groups_of(robots: RobotsTxt, profile: str, rules: _Rules) -> list[_Group]:
    """The file's groups under ``profile``, and before them the rules before any group.

    Groups for the same agents are one (see GroupSide), placed where the first of them is,
    except under 1994's reading, where a robot obeys the first record that names it."""
    groups: list[Group] = robots.groups(profile) if type(robots) is RobotsTxt else []
    starts = [g.lines[0] for g in groups]
    out: list[_Group] = []
    before = rules.between(1, starts[0] - 1) if starts else rules.between(1, 1 << 62)
    if before:
        side = GroupSide((before[0][0], before[-1][0]), (), ())
        out.append(_Group(side, (frozenset(), frozenset()), before, _content(before)))
    merges = _merges(profile)
    alike: dict[object, list[tuple[Group, list[tuple[int, str, str, str]]]]] = {}
    for n, g in enumerate(groups):
        end = starts[n + 1] - 1 if n + 1 < len(starts) else 1 << 62
        key: object = (g.names, g.virtual_names) if merges else n
        alike.setdefault(key, []).append((g, rules.between(g.lines[0], end)))
    for parts in alike.values():
        first = parts[0][0]
        mine = [r for _, some in parts for r in some]
        if len(parts) == 1:
            agents = tuple(v for _, v in first.agents)
            side = GroupSide(first.lines, agents, tuple(v for _, v in first.virtual))
        else:
            side = GroupSide(
                (first.lines[0], parts[-1][0].lines[1]),
                _once(v for g, _ in parts for _, v in g.agents),
                _once(v for g, _ in parts for _, v in g.virtual),
                tuple(g.lines for g, _ in parts),
            )
        out.append(_Group(side, (first.names, first.virtual_names), mine, _content(mine)))
    return out


def _merges(profile: str) -> bool:
    """Does ``profile`` combine the rules of groups for the same agents (all but 1994's)?"""
    return get_profile(profile).records == "groups"


def _once(names: Iterable[str]) -> tuple[str, ...]:
    """Each agent once, as first written (a robot matches names whatever their case)."""
    out: dict[str, str] = {}
    for name in names:
        out.setdefault(name.lower(), name)
    return tuple(out.values())


def _content(rules: list[tuple[int, str, str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((kind, value) for _, kind, _, value in rules))


def group_changes(old: RobotsTxt, new: RobotsTxt, profile: str) -> tuple[GroupChange, ...]:
    """The groups added, removed and changed from ``old`` to ``new``, as ``profile`` delimits
    them: matched by their agents, then (a rename) by their rules, then by any agent shared."""
    return _group_changes(old, new, get_profile(profile).name, _Rules(old), _Rules(new))


def _group_changes(
    old: RobotsTxt, new: RobotsTxt, profile: str, old_rules: _Rules, new_rules: _Rules
) -> tuple[GroupChange, ...]:
    before = _groups_of(old, profile, old_rules)
    after = _groups_of(new, profile, new_rules)
    pairs: dict[int, int] = {}  # old group -> new group
    free = list(range(len(after)))
    for same in (_same_agents, _renamed, _shares_an_agent):
        for i, g in enumerate(before):
            j = None if i in pairs else next((j for j in free if same(g, after[j])), None)
            if j is not None:
                pairs[i] = j
                free.remove(j)
    changes: list[tuple[int, GroupChange]] = []
    no_effect = _same_effect(before, after) if _merges(profile) else (lambda *_: False)
    for i, g in enumerate(before):
        if no_effect(g, after[pairs[i]] if i in pairs else None):
            continue
        if i not in pairs:
            gone = tuple(RuleChange("removed", RuleSide(n, rule), None) for n, _, rule, _ in g.rules)
            changes.append((g.side.lines[0], GroupChange("removed", g.side, None, gone)))
            continue
        h = after[pairs[i]]
        ruled = _rule_changes(g.rules, h.rules)
        if ruled or g.key != h.key:
            changes.append((h.side.lines[0], GroupChange("changed", g.side, h.side, ruled)))
    for j in free:
        h = after[j]
        if no_effect(None, h):
            continue
        added = tuple(RuleChange("added", None, RuleSide(n, rule)) for n, _, rule, _ in h.rules)
        changes.append((h.side.lines[0], GroupChange("added", None, h.side, added)))
    return tuple(c for _, c in sorted(changes, key=lambda item: item[0]))


def _same_effect(before: list[_Group], after: list[_Group]) -> Callable[[_Group | None, _Group | None], bool]:
    """Whether a change between two groups (either None: added or removed) changes nothing a
    robot obeys: every agent either names gets the same rules from all the groups that name
    it in OLD as in NEW (``Disallow: /b`` moved to another ``User-agent: *`` group, or a
    group for two agents split into one for each).  Under a profile that merges groups."""

    def effect(groups: list[_Group]) -> dict[tuple[int, str], frozenset[tuple[str, str]]]:
        out: dict[tuple[int, str], set[tuple[str, str]]] = {}
        for g in groups:
            for kind, names in enumerate(g.key):
                for name in names:
                    out.setdefault((kind, name), set()).update(g.content)
        return {k: frozenset(v) for k, v in out.items()}

    old, new = effect(before), effect(after)

    def same(a: _Group | None, b: _Group | None) -> bool:
        sides = [g for g in (a, b) if g is not None]
        if not all(_named(g) for g in sides):
            return False  # the rules before any group: compared as they are
        agents = {(kind, name) for g in sides for kind, names in enumerate(g.key) for name in names}
        # no group for an agent (it obeys '*') is not a group without rules (it obeys none)
        return all(old.get(k) == new.get(k) for k in agents)

    return same


def _same_agents(a: _Group, b: _Group) -> bool:
    return a.key == b.key


def _renamed(a: _Group, b: _Group) -> bool:
    """Other agents, the same rules (none of them the rules before any group)."""
    return bool(a.content) and a.content == b.content and _named(a) and _named(b)


def _shares_an_agent(a: _Group, b: _Group) -> bool:
    return bool((a.key[0] & b.key[0]) | (a.key[1] & b.key[1]))


def _named(g: _Group) -> bool:
    return bool(g.key[0] | g.key[1])


def _rule_changes(
    old: list[tuple[int, str, str, str]], new: list[tuple[int, str, str, str]]
) -> tuple[RuleChange, ...]:
    """The rules of a group added, removed and changed: a rule is its kind and value (its
    line and spelling may move); the same value with another kind is a changed rule."""
    kept = Counter((kind, value) for _, kind, _, value in old) & Counter(
        (kind, value) for _, kind, _, value in new
    )
    left_old, left_new = _unkept(old, kept), _unkept(new, kept)
    changes: list[tuple[int, RuleChange]] = []
    for n, kind, rule, value in left_old:
        other = next((r for r in left_new if r[3] == value and r[1] != kind), None)
        if other is not None:
            left_new.remove(other)
            changes.append((other[0], RuleChange("changed", RuleSide(n, rule), RuleSide(other[0], other[2]))))
        else:
            changes.append((n, RuleChange("removed", RuleSide(n, rule), None)))
    changes += [(n, RuleChange("added", None, RuleSide(n, rule))) for n, _, rule, _ in left_new]
    return tuple(c for _, c in sorted(changes, key=lambda item: item[0]))


def _unkept(
    rules: list[tuple[int, str, str, str]], kept: Counter[tuple[str, str]]
) -> list[tuple[int, str, str, str]]:
    """``rules`` without those both sides have (each as many times as both have it)."""
    left = Counter(kept)
    out = []
    for r in rules:
        if left[r[1], r[3]] > 0:
            left[r[1], r[3]] -= 1
        else:
            out.append(r)
    return out
