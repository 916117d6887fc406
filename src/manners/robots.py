"""RobotsTxt: one parsed file, answering for any robot under any profile.

Work is done on demand and kept.  The file is indexed by its agent lines only; the
rules of a group are read the first time a robot it applies to asks, and that first
answer is found in one pass over the rules as written.  A policy asked again is
compiled into an index, so a crawl pays for parsing once and then only for lookups.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from operator import itemgetter, methodcaller
from typing import NamedTuple

from .agents import agent_token, product_token
from .match import (
    Rule,
    compile_rule,
    google_escape,
    google_path,
    gopher_selectors,
    normalise,
    url_path,
    wild_tail,
)
from .parse import (
    RULE_LINE,
    AgentLine,
    Line,
    Prepared,
    RuleLine,
    classify,
    has_rule,
    iter_lines,
    prepare,
    rule_value,
    scan_agents,
    scan_rules,
    scan_sitemaps,
    split_line,
)
from .profiles import Profile, get_profile, profile_for, profile_of

_SPACE = " \t\n\r\v\f"
_RATE = re.compile(r"\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE | re.ASCII)
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}

Span = tuple[int, int]


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


class _Group(NamedTuple):
    members: tuple[AgentLine, ...]
    names: frozenset[str]
    virtual_names: frozenset[str]
    span: Span  # from the LF before its first agent line to the LF before the next group


class _Choice:
    """The rules of the groups chosen for one robot, read once, compiled when asked twice."""

    __slots__ = ("index", "label", "offsets", "raw", "spans")

    def __init__(self, label: str, spans: tuple[Span, ...]) -> None:
        self.label = label  # whose rules these are, for reasons: "user-agent googlebot"
        self.spans = spans
        self.raw: list[RuleLine] | None = None
        self.index: _Index | None = None
        self.offsets: list[int] | None = None  # where each rule line starts, for line numbers


class _Index:
    """Compiled rules, bucketed for the longest-match search.

    A pattern's first piece must be a prefix of the path, so a path only needs the
    rules whose first piece shares its first KEY characters.  Plain patterns (see
    parse.PLAIN) are prefixes that mean what they say: they are kept sorted, a
    bucket of them is a slice found by bisection, and the longest one a path starts
    with is found by ``filter`` in C.  A bucket is made when a path first needs it,
    so a crawl that stays in /blog never pays for the thousands of rules about
    /shop.  Other patterns are few; all are compiled at once.
    """

    __slots__ = ("_buckets", "_others", "_plain", "_profile", "_raw", "_rule_of", "_short_others", "_values")
    KEY = 2  # measured on the crawl benchmark: 2 beats 1, 3 and 4

    def __init__(self, profile: Profile, raw: list[RuleLine]) -> None:
        self._profile = profile
        self._raw = raw
        self._plain = plain = list(map(_PLAIN_VALUE, raw))
        eligible = plain if profile.allow else [line[1] for line in raw if line[0][0] not in "aA"]
        self._values = sorted(set(eligible))
        if self._values[:1] == [""]:  # lines that are not plain
            del self._values[0]
        self._rule_of: dict[str, Rule] = {}
        others: list[Rule] = []
        for ordinal in _positions(plain, ""):
            others += _line_rules(profile, raw[ordinal], ordinal)
        if profile.index_html:  # Allow .../index.html also makes a rule for .../
            for value in set(filter(_HAS_INDEX_HTML, plain)):
                others += _index_html_rules(profile, raw, plain, value)
        self._short_others = [r for r in others if len(r.pieces[0]) < self.KEY]
        self._others: dict[str, list[Rule]] = {}
        for rule in others:
            if len(rule.pieces[0]) >= self.KEY:
                self._others.setdefault(rule.pieces[0][: self.KEY], []).append(rule)
        self._buckets: dict[str, _Bucket] = {}

    def first(self, path: str) -> Rule | None:
        """The rule that decides for ``path``, or None when none matches."""
        k = path[: self.KEY]
        bucket = self._buckets.get(k)
        if bucket is None:
            bucket = self._buckets[k] = self._bucket(k)
        plain, others, other_firsts = bucket
        best = None
        if plain:  # longest first, so the first that matches decides among them
            value = next(filter(path.startswith, plain), None)
            if value is not None:
                best = self._rule_of.get(value) or self._plain_of(value)
        if others and path.startswith(other_firsts):
            for rule in others:
                if best is not None and (
                    rule[0] < best[0] or (rule[0] == best[0] and (best[1] or not rule[1]))
                ):
                    break  # in precedence order: no later rule can win either
                pieces = rule[2]
                if path.startswith(pieces[0]):
                    if len(pieces) == 1:
                        if not rule[3] or len(path) == len(pieces[0]):
                            return rule
                    elif rule[6] in path and wild_tail(pieces, rule[3], path):
                        return rule
        return best

    def _bucket(self, k: str) -> _Bucket:
        values = self._values
        plain = values[bisect_left(values, k) : bisect_left(values, k + "\U0010ffff")]
        for n in range(1, len(k)):  # shorter patterns that are prefixes of k
            i = bisect_left(values, k[:n])
            if i < len(values) and values[i] == k[:n]:
                plain.append(k[:n])
        plain.sort(key=len, reverse=True)
        others = self._others.get(k, []) + [r for r in self._short_others if k.startswith(r.pieces[0])]
        others.sort(key=_precedence)
        return tuple(plain), tuple(others), tuple({r.pieces[0]: None for r in others})

    def _plain_of(self, value: str) -> Rule:
        """The rule of the lines spelling ``value``: the first Allow, else the first."""
        ordinals = _positions(self._plain, value)
        allows = [self._raw[i][0][0] in "aA" for i in ordinals]
        allow = self._profile.allow and any(allows)  # without Allow, only Disallow lines spell a value here
        rule = self._rule_of[value] = _plain_rule(allow, value, ordinals[allows.index(allow)])
        return rule


# Plain values, longest first; other rules in precedence order; their first pieces.
_Bucket = tuple[tuple[str, ...], tuple[Rule, ...], tuple[str, ...]]


def _positions(values: list[str], value: str) -> list[int]:
    """Every index of ``value`` in ``values``, searched in C."""
    out = []
    i = -1
    for _ in range(values.count(value)):
        i = values.index(value, i + 1)
        out.append(i)
    return out


def _index_html_rules(profile: Profile, raw: list[RuleLine], plain: list[str], value: str) -> list[Rule]:
    """The extra ".../$" rules of the Allow lines whose plain value is ``value`` (google)."""
    return [
        rule
        for ordinal in _positions(plain, value)
        if raw[ordinal][0][0] in "aA"
        for rule in _rules(profile, True, value, ordinal, value)[1:]
    ]


def _line_rules(profile: Profile, line: RuleLine, ordinal: int) -> list[Rule]:
    allow = line[0][0] in "aA"
    if allow and not profile.allow:
        return []
    value = rule_value(line)
    return _rules(profile, allow, _PATTERN[profile.target](value), ordinal, value) if value else []


_PLAIN_VALUE = itemgetter(1)
_HAS_INDEX_HTML = methodcaller("__contains__", "/index.htm")


def _plain_rule(allow: bool, value: str, ordinal: int) -> Rule:
    """A pattern that is its own spelling and has no operator: a plain prefix."""
    return tuple.__new__(Rule, (len(value), allow, (value,), False, ordinal, value, value))


def _precedence(rule: Rule) -> tuple[int, bool]:
    """Longest pattern first; on a tie, Allow first."""
    return -rule.priority, not rule.allow


class _Policy(NamedTuple):
    choices: tuple[_Choice, ...]  # a target is allowed only if every choice allows it
    reason: str  # why, when there is no choice


class RobotsTxt:
    """A parsed robots.txt.  Build it with :func:`manners.parse`."""

    def __init__(self, prepared: Prepared, profile: Profile | None) -> None:
        self._prepared = prepared
        self._text = prepared.text
        self._profile = profile
        self._indexes: dict[str, tuple[list[_Group], int]] = {}
        self._policies: dict[tuple[str, str, tuple[str, ...]], _Policy] = {}
        self._sitemaps: list[str] | None = None
        self._diagnostics: list[Diagnostic] | None = None
        self._lfs: list[int] | None = None

    def __repr__(self) -> str:
        name = self._profile.name if self._profile else "auto"
        return f"<RobotsTxt profile={name} lines={self._text.count(chr(10))}>"

    @property
    def profile(self) -> Profile | None:
        """The profile given to parse(); None means: chosen by each target's scheme."""
        return self._profile

    @property
    def text(self) -> str:
        """The text as parsed: decoded, capped, BOM skipped."""
        return self._text[1:]

    # -- decisions ---------------------------------------------------------------

    def allowed(self, target: str, agent: str = "*", roles: Iterable[str] = ()) -> bool:
        """May ``agent`` (acting as ``roles``) fetch ``target``?"""
        if type(target) is not str:
            raise _target_type(target)
        profile = self._profile or profile_for(target)
        if type(roles) is not tuple:
            roles = _roles(roles)
        policy = self._policies.get((profile.name, agent, roles))
        if policy is None:
            policy = self._policy(profile, agent, roles)
        if not policy.choices:
            _check_target(profile, target)
            return True
        paths = _subjects(profile, target)
        if profile.always_allowed and not profile.always_allowed.isdisjoint(paths):
            return True
        for path in paths:
            for choice in policy.choices:
                index = choice.index
                rule = index.first(path) if index is not None else self._first(profile, choice, path)
                if rule is not None and not rule[1]:
                    return False
        return True

    def decide(self, target: str, agent: str = "*", roles: Iterable[str] = ()) -> Decision:
        """Like allowed(), with the deciding rule, its line and the reason."""
        if type(target) is not str:
            raise _target_type(target)
        profile = self._profile or profile_for(target)
        roles = _roles(roles)
        policy = self._policies.get((profile.name, agent, roles)) or self._policy(profile, agent, roles)
        paths = _subjects(profile, target)
        for path in paths:
            if path in profile.always_allowed:
                return Decision(True, None, None, f"{path} is always allowed", profile.name)
        if not policy.choices:
            return Decision(True, None, None, policy.reason, profile.name)
        best: tuple[Rule, _Choice, str] | None = None
        for path in paths:
            for choice in policy.choices:
                rule = self._first(profile, choice, path)
                if rule is None:
                    continue
                if not rule.allow:
                    return self._decision(False, rule, choice, path, paths, profile)
                if best is None:
                    best = (rule, choice, path)
        if best is not None:
            return self._decision(True, *best, paths, profile)
        labels = " and ".join(c.label for c in policy.choices)
        return Decision(True, None, None, f"no rule for {labels} matches", profile.name)

    def _decision(
        self, allowed: bool, rule: Rule, choice: _Choice, path: str, paths: tuple[str, ...], profile: Profile
    ) -> Decision:
        verb = "allows" if allowed else "disallows"
        subject = f" (as {path!r})" if len(paths) > 1 else ""
        reason = f"the longest matching rule for {choice.label} {verb} it{subject}"
        if choice.offsets is None:
            text = self._text
            choice.offsets = [
                m.start() for start, end in choice.spans for m in RULE_LINE.finditer(text, start, end)
            ]
        return Decision(allowed, self._line(choice.offsets[rule.ordinal]), rule.text, reason, profile.name)

    def _line(self, pos: int) -> int:
        """The 1-based number of the line after the LF at ``pos`` (or starting there)."""
        if self._lfs is None:
            text = self._text
            self._lfs = [m.start() for m in re.finditer("\n", text)]
        return bisect_right(self._lfs, pos)

    def _first(self, profile: Profile, choice: _Choice, path: str) -> Rule | None:
        """The deciding rule of one choice: read as written the first time, then indexed."""
        if choice.index is not None:
            return choice.index.first(path)
        if choice.raw is not None:  # asked before: worth indexing
            choice.index = _Index(profile, choice.raw)
            return choice.index.first(path)
        text = self._text
        choice.raw = raw = [r for start, end in choice.spans for r in scan_rules(text, start, end)]
        return _first_as_written(profile, raw, path)

    # -- fields ------------------------------------------------------------------

    # ``profile``: a profile name, or a URL whose scheme picks it, as a target's does; by
    # default the profile given to parse(), else gemini for a robot with roles, else rfc9309.

    def crawl_delay(
        self, agent: str = "*", roles: Iterable[str] = (), *, profile: str | Profile | None = None
    ) -> float | None:
        """Seconds between requests asked of this robot (the largest that applies)."""
        values = [_number(v) for v in self._fields("crawl-delay", agent, roles, profile)]
        return max((v for v in values if v is not None), default=None)

    def request_rate(
        self, agent: str = "*", roles: Iterable[str] = (), *, profile: str | Profile | None = None
    ) -> tuple[int, float] | None:
        """(requests, seconds) from Request-rate; the slowest when several apply."""
        rates = [_rate(v) for v in self._fields("request-rate", agent, roles, profile)]
        valid = [r for r in rates if r is not None]
        return max(valid, key=lambda r: r[1] / r[0], default=None)

    def check_interval(
        self, agent: str = "*", roles: Iterable[str] = (), *, profile: str | Profile | None = None
    ) -> float | None:
        """Seconds between re-checks of a resource, from the Gemini proposal's Check field."""
        values = [_number(v) for v in self._fields("check", agent, roles, profile)]
        return max((v for v in values if v is not None), default=None)

    def _fields(
        self, kind: str, agent: str, roles: Iterable[str], profile: str | Profile | None
    ) -> list[str]:
        roles = _roles(roles)
        if profile is not None:
            prof = profile_of(profile)
        else:
            prof = self._profile or get_profile("gemini" if roles else "rfc9309")
        policy = self._policies.get((prof.name, agent, roles)) or self._policy(prof, agent, roles)
        return [
            line.value
            for choice in policy.choices
            for start, end in choice.spans
            for line in iter_lines(self._text, start, end)
            if line.kind == kind
        ]

    @property
    def sitemaps(self) -> list[str]:
        """Sitemap URLs from anywhere in the file, in order, without repeats."""
        if self._sitemaps is None:
            self._sitemaps = scan_sitemaps(self._text)
        return list(self._sitemaps)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """(line, severity, code, message) for everything a reader may trip on."""
        if self._diagnostics is None:
            from .diagnostics import diagnose

            self._diagnostics = diagnose(self, self._profile or get_profile("rfc9309"))
        return list(self._diagnostics)

    def lines(self) -> list[Line]:
        """Every key/value line, numbered and classified."""
        return iter_lines(self._text)

    # -- groups ------------------------------------------------------------------

    def groups(self, profile: str | Profile | None = None) -> list[Group]:
        """The groups (records, for 1994) as a profile delimits them."""
        out = []
        for g in self._index(profile)[0]:
            agents = tuple((self._line(a.pos), a.value) for a in g.members if not a.virtual)
            virtual = tuple((self._line(a.pos), a.value) for a in g.members if a.virtual)
            out.append(
                Group(agents, virtual, g.names - {""}, g.virtual_names - {""}, self._line_range(g.span))
            )
        return out

    def applies(
        self, agent: str = "*", roles: Iterable[str] = (), profile: str | Profile | None = None
    ) -> tuple[list[tuple[str, list[tuple[int, int]]]], str]:
        """Whose rules decide for this robot: (who, [(first line, last line), ...]) in order of
        choice (all of them count: a target must pass each), and the reason when nobody's do."""
        prof = get_profile(profile) if profile is not None else self._profile or get_profile("rfc9309")
        policy = self._policy(prof, agent, _roles(roles))
        return [
            (c.label, [self._line_range(span) for span in c.spans]) for c in policy.choices
        ], policy.reason

    def _line_range(self, span: Span) -> tuple[int, int]:
        text = self._text
        if span[1] < len(text):
            last = self._line(span[1]) - 1
        else:  # to the end: the last line, not the nothing after a final LF
            last = self._line(len(text)) - (len(text) > 1 and text.endswith("\n"))
        return self._line(span[0]), last

    def _index(self, profile: str | Profile | None = None) -> tuple[list[_Group], int]:
        """The groups, and where the first starts: rules before it precede every agent line."""
        prof = get_profile(profile) if profile is not None else self._profile or get_profile("rfc9309")
        if prof.records == "1994":
            key = "1994"
        else:
            key = ("virtual" if prof.virtual_agents else "web") + (
                "+fields" if prof.fields_end_groups else ""
            )
        index = self._indexes.get(key)
        if index is None:
            if prof.records == "1994":
                index = self._records_1994()
            else:
                index = self._groups(prof.virtual_agents, prof.fields_end_groups)
            self._indexes[key] = index
        return index

    def _groups(self, virtual: bool, fields: bool) -> tuple[list[_Group], int]:
        """Runs of agent lines, each ended by a rule (with ``fields``, also by a Crawl-delay,
        Request-rate or Check line: "A / Crawl-delay / B" is two groups, as its author meant)."""
        text = self._text
        agents = [a for a in scan_agents(text) if virtual or not a.virtual]
        if not agents:
            return [], len(text)
        runs: list[list[AgentLine]] = []
        for i, a in enumerate(agents):
            if runs and not has_rule(text, agents[i - 1].end, a.pos, fields):
                runs[-1].append(a)
            else:
                runs.append([a])
        groups = []
        for n, run in enumerate(runs):
            end = runs[n + 1][0].pos if n + 1 < len(runs) else len(text)
            names = frozenset([agent_token(a.value) for a in run if not a.virtual])
            virtual_names = frozenset([agent_token(a.value) for a in run if a.virtual])
            groups.append(_Group(tuple(run), names, virtual_names, (run[0].pos, end)))
        return groups, agents[0].pos

    def _records_1994(self) -> tuple[list[_Group], int]:
        """Records as the 1994 standard has them: a blank line also ends one."""
        text = self._text
        groups: list[_Group] = []
        first = len(text)
        members: list[AgentLine] = []
        start = pos = 0
        seen_rule = False

        def close(end: int) -> None:
            if members:
                names = frozenset(_name_1994(a.value) for a in members) - {""}
                groups.append(_Group(tuple(members), names, frozenset(), (start, end)))

        for raw in text[1:].split("\n"):
            kv = split_line(raw)
            kind = classify(kv[0]) if kv else None
            if kv is None:
                if not raw.strip(_SPACE) and members:  # a blank line ends the record
                    close(pos)
                    members, seen_rule = [], False
            elif kind == "user-agent":
                if seen_rule or not members:
                    close(pos)
                    members, seen_rule, start = [], False, pos
                    first = min(first, pos)
                members.append(AgentLine(pos, pos + len(raw) + 1, False, kv[1]))
            elif kind in ("allow", "disallow"):
                seen_rule = True
            pos += len(raw) + 1
        close(len(text))
        return groups, first

    # -- choosing groups ---------------------------------------------------------

    def _policy(self, profile: Profile, agent: str, roles: tuple[str, ...]) -> _Policy:
        choices, reason = self._choose(profile, agent, roles)
        policy = _Policy(tuple(choices), reason)
        self._policies[(profile.name, agent, roles)] = policy
        return policy

    def _choose(self, profile: Profile, agent: str, roles: tuple[str, ...]) -> tuple[list[_Choice], str]:
        groups, first = self._index(profile)
        preamble: tuple[Span, ...] = ()
        if profile.preamble != "ignored" and has_rule(self._text, 0, first, profile.fields_end_groups):
            preamble = ((0, first),)
        # RFC 9309 names a robot by its product token: "mybot/1.0 (+http://x)" is mybot.
        # Google's parser compares the name as given (its callers pass a token).
        token = agent.lower() if profile.agent == "exact" else product_token(agent)

        if profile.records == "1994":
            for g in groups:
                if token and token != "*" and any(n != "*" and n in token for n in g.names):
                    return [_Choice(f"the record for {min(g.names)}", (g.span,))], ""
            for g in groups:
                if "*" in g.names:
                    return [_Choice("the record for *", (g.span,))], ""
            return [], "no record applies to this robot: everything is allowed"

        def choice(
            label: str, test: Callable[[_Group], bool], before: tuple[Span, ...] = ()
        ) -> list[_Choice]:
            spans = before + tuple(g.span for g in groups if test(g))
            return [_Choice(label, spans)] if spans else []

        choices: list[_Choice] = []
        if token and token != "*":  # a group naming the robot itself decides alone
            choices = choice(f"user-agent {token}", lambda g: token in g.names)
        named_roles = [r for r in dict.fromkeys(r.lower() for r in roles) if r and r != "*"]
        role_choices: list[_Choice] = []
        if not choices and profile.virtual_agents and roles:
            for role in named_roles:
                role_choices += choice(f"virtual agent {role}", _names(role))
            if profile.roles == "targeted":  # the most targeted groups there are decide
                choices = role_choices or choice("virtual-agent *", lambda g: "*" in g.virtual_names)
        if not choices:
            star_preamble = preamble if profile.preamble == "star" else ()
            choices = choice("user-agent *", lambda g: "*" in g.names, star_preamble)
            if profile.virtual_agents and roles and profile.roles == "combined":
                # The companion spec: respect '*' and every role's groups; err on the side of caution.
                choices += role_choices + choice("virtual-agent *", lambda g: "*" in g.virtual_names)
        if profile.preamble == "everyone" and preamble:
            for c in choices:
                c.spans = preamble + c.spans
            choices = choices or [_Choice("rules before any user-agent line", preamble)]
        return choices, "no group applies to this robot: everything is allowed"


class _Verdict(RobotsTxt):
    """One answer for every target: what a robots.txt that could not be read means."""

    def __init__(self, allowed: bool, reason: str, profile: Profile | None) -> None:
        super().__init__(prepare("", None), profile)
        self._allowed = allowed
        self._reason = reason

    def allowed(self, target: str, agent: str = "*", roles: Iterable[str] = ()) -> bool:
        return self._allowed

    def decide(self, target: str, agent: str = "*", roles: Iterable[str] = ()) -> Decision:
        profile = self._profile or profile_for(target)
        return Decision(self._allowed, None, None, self._reason, profile.name)


def verdict(allowed: bool, reason: str, profile: str | Profile | None = None) -> RobotsTxt:
    """A RobotsTxt that allows (or disallows) everything, saying why in every Decision."""
    return _Verdict(allowed, reason, get_profile(profile) if profile is not None else None)


def _rules(profile: Profile, allow: bool, pattern: str, ordinal: int, value: str) -> list[Rule]:
    """The rules one line makes: none when empty, two for Google's Allow .../index.html."""
    rule = compile_rule(allow, pattern, ordinal, value, profile.wildcards, profile.anchor)
    if rule is None:
        return []
    if allow and profile.index_html:
        slash = pattern.rfind("/")
        if slash >= 0 and pattern.startswith("/index.htm", slash):
            extra = compile_rule(
                True, pattern[: slash + 1] + "$", ordinal, value, profile.wildcards, profile.anchor
            )
            return [rule, extra]  # type: ignore[list-item]
    return [rule]


def _first_as_written(profile: Profile, raw: list[RuleLine], path: str) -> Rule | None:
    """The deciding rule, found without a Python step per line.

    Plain patterns (see parse.PLAIN) are prefixes that mean what they say, so
    ``filter(path.startswith, ...)`` finds the ones that match, in C; only those and
    the lines that are not plain get a look of their own.  Same answer as an _Index.
    """
    plain = list(map(_PLAIN_VALUE, raw))
    startswith = path.startswith
    candidates: list[Rule] = []
    for value in set(filter(startswith, plain)):
        if value:
            candidates += (_plain_rule(raw[i][0][0] in "aA", value, i) for i in _positions(plain, value))
    for ordinal in _positions(plain, ""):
        line = raw[ordinal]
        if startswith(line[2]):  # else no spelling of its pattern can match
            candidates += (r for r in _line_rules(profile, line, ordinal) if r.matches(path))
    if profile.index_html and path.endswith("/"):
        for value in set(filter(methodcaller("startswith", path + "index.htm"), plain)):
            if value.rfind("/") == len(path) - 1:
                candidates += _index_html_rules(profile, raw, plain, value)
    if not profile.allow:
        candidates = [r for r in candidates if not r.allow]
    return min(candidates, key=_precedence, default=None)


def _roles(roles: Iterable[str]) -> tuple[str, ...]:
    """Roles as a tuple; a lone string is one role, not a run of letters."""
    if isinstance(roles, str):
        return (roles,)
    out = tuple(roles)
    if not all(isinstance(r, str) for r in out):
        raise TypeError("roles must be names such as 'indexer' or 'archiver' (str)")
    return out


def _names(role: str) -> Callable[[_Group], bool]:
    """Whether a group names ``role``, by User-agent or Virtual-agent."""
    return lambda g: role in g.names or role in g.virtual_names


def _check_target(profile: Profile, target: str) -> None:
    """ValueError for a target no rule was needed to answer for, but that names no path."""
    if profile.target in ("rfc3986", "plain"):
        url_path(target)


def _target_type(target: object) -> TypeError:
    return TypeError(f"target must be a URL or a path (str), not {type(target).__name__}")


def _name_1994(value: str) -> str:
    """A robot's name without version, lower-cased: "CyberMapper/2.1" -> "cybermapper"."""
    return value.split("/", 1)[0].strip(_SPACE).lower()


def _number(value: str) -> float | None:
    try:
        n = float(value)
    except ValueError:
        return None
    return n if math.isfinite(n) and n >= 0 else None


def _rate(value: str) -> tuple[int, float] | None:
    m = _RATE.match(value)
    if m is None or int(m[1]) == 0:
        return None
    return int(m[1]), float(m[2]) * _UNITS[m[3].lower()]


def _normalised_path(target: str) -> str:
    return normalise(url_path(target), pattern=False)


# What a target is matched as: one path, except for Gopher (see _subjects).
_PATH: dict[str, Callable[[str], str]] = {
    "rfc3986": _normalised_path,
    "plain": _normalised_path,
    "google": google_path,
}


def _subjects(profile: Profile, target: str) -> tuple[str, ...]:
    if profile.target == "selector":
        return gopher_selectors(target)
    return (_PATH[profile.target](target),)


_PATTERN: dict[str, Callable[[str], str]] = {
    "rfc3986": lambda v: normalise(v, pattern=True),
    "plain": lambda v: normalise(v, pattern=False),
    "google": google_escape,
    "selector": lambda v: v,
}


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
    prof = get_profile(profile) if profile is not None else None
    if not isinstance(data, (bytes, bytearray, memoryview, str)):
        raise TypeError(f"robots.txt must be bytes or str, not {type(data).__name__}")
    if max_bytes is not None and max_bytes < 1:
        raise ValueError("max_bytes must be a positive number of bytes, or None")
    return RobotsTxt(prepare(data, max_bytes), prof)
