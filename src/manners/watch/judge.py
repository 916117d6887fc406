"""Judging robots by a server's access log: from parsed requests and dated robots.txt versions
to a verdict per robot, with its evidence.

Pure (no file, no network, no printing) and a streaming fold: :class:`Judge` is fed one
:class:`~manners.watch.logs.Hit` at a time and :meth:`Judge.report` can be asked at any point
(``--follow`` keeps feeding); it keeps per-client sums and a few examples, never the requests,
so memory grows with clients, not lines.  The matching is the engine's
(:meth:`RobotsTxt.decide`, :func:`~manners.robots.asked_spacing`): nothing is matched here.

Benefit of the doubt, everywhere: a request is charged only when no reading the robot could
fairly have held allows it.

- Versions.  A client could have been reading the version in force at the request, or the one
  in force when it last fetched robots.txt itself (as the log shows, and only if that fetch was
  within 24 hours before the request: RFC 9309 §2.4 lets a crawler keep a copy that long).  It is
  charged only if every one of them forbids the request: nobody is accused for a rule added after
  their last fetch.  A request made before the first dated version (none undated) is not judged;
  in a log without times every version could have been in force, so every one must forbid.
- Whose rules.  Web: the group its User-Agent's product token selects (``*`` when it has no
  group, or sends no token).  Gopher: ``*``, read under the Gopher profile.  Gemini: the
  companion spec says a bot "should still respect robots.txt directives aimed at a User-agent of
  *", and "should respect directives aimed at any virtual user agent which matches their
  activity" (archiver, indexer, researcher, webproxy).  Which activity is a bot's an admin cannot
  see (Gemini clients send no name), and "a bot of no listed category" obeys ``*`` alone.  So a
  Gemini request is charged as impolite only when every reading forbids it, that is when it is
  disallowed for ``*`` alone; a request only a role's rules forbid is reported as evidence
  ("kept indexer and researcher; broke archiver: line 7, 3 requests") but makes no verdict
  impolite by itself.
- Pacing.  Against the Crawl-delay or Request-rate (:func:`~manners.robots.asked_spacing`) of
  the same reading, per host, the smaller of the versions it could have read.  Log times are
  whole seconds, so a gap is never judged alone below one second: a request is counted closer
  than asked when, with an earlier one of the last :data:`NEIGHBOURS` to that host k requests
  before it, the logged span plus :data:`TOLERANCE` is still under k times the spacing (three
  requests logged in one second break a Crawl-delay of 1; two a second apart do not).  Requests
  for robots.txt are not paced (the rules are not known before it).  A log without times cannot
  judge pacing, and the verdict says so.
- Slow down.  After a Gemini ``44`` or a Web ``429`` or ``503``, the next request to that host
  is "ignored" when it came sooner than :data:`SLOW_DOWN_WAIT` (less the tolerance).  The wait
  the server asked (the 44's meta, a Retry-After) is not in any log, and the Gemini
  specification gives the meta no default: the wait assumed is manners' own crawler's first
  wait for a 44 whose meta it cannot read, and the report says so.
- Staleness (RFC 9309's 24 hours) and whether robots.txt came first are evidence, not charges.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from manners._core import rate as _rate
from manners._core import url_path
from manners.robots import asked_spacing
from manners.watch.clients import (
    DEFAULT_GROUPING,
    PERSON_REQUESTS,
    PERSON_SECONDS,
    PROFILES,
    Grouping,
    Pace,
    client_of,
    kind_of,
    person_limit,
    token_of,
)
from manners.watch.logs import LACKS, Format, Hit, lacking
from manners.watch.verdicts import Breach, Example, Others, Pacing, Report, RobotVerdict, SlowDown
from manners.watch.versions import Versions, shown_when

__all__ = [
    "DAY",
    "EXAMPLES",
    "NEIGHBOURS",
    "ROLES",
    "SLOW_DOWN",
    "SLOW_DOWN_WAIT",
    "TOLERANCE",
    "Judge",
    "judge",
]

ROLES = ("archiver", "indexer", "researcher", "webproxy")  # the Gemini companion spec's virtual agents
DAY = 86400.0  # RFC 9309 §2.4: a cached robots.txt should not be used longer than 24 hours
TOLERANCE = 1.0  # seconds given back to every logged span: the logs write whole seconds
NEIGHBOURS = 8  # the last requests to a host kept to judge pacing
#: Seconds assumed asked by a 44, 429 or 503 (manners' crawler waits this after a 44 it cannot read).
SLOW_DOWN_WAIT = 10.0
SLOW_DOWN = {"gemini": frozenset({"44"}), "web": frozenset({"429", "503"}), "gopher": frozenset()}
EXAMPLES = 3  # offending requests kept of each kind
_DEFAULT_PORTS = {"gemini": ":1965", "gopher": ":70"}
_ROBOTS_SELECTORS = frozenset({"robots.txt", "/robots.txt", "0/robots.txt"})
_DECISIONS = 100_000  # decisions remembered (a log asks for the same pages over and over)


@dataclass(slots=True)
class _Tally:
    requests: int = 0
    line: int | None = None
    version: str = ""
    examples: list[Example] = field(default_factory=list)

    def add(self, hit: Hit) -> None:
        self.requests += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(Example(hit.file, hit.line, hit.target, hit.when))


@dataclass(slots=True)
class _Host:
    """A client's requests to one host, as far as pacing and slowing down go."""

    times: list[float] = field(default_factory=list)  # the last NEIGHBOURS times, sorted
    requests: int = 0
    asked: float = 0.0
    shortest: float | None = None
    closer: _Tally = field(default_factory=_Tally)
    slowed_at: float | None = None  # when it was last told to slow down, until its next request
    told: int = 0
    waited: int = 0
    ignored: _Tally = field(default_factory=_Tally)


@dataclass(slots=True)
class _Client:
    address: str
    token: str | None
    kind: str
    pace: Pace
    requests: int = 0
    timed: int = 0
    first: float | None = None
    last: float | None = None
    robots_fetches: int = 0
    robots_first: bool = False
    fetched_at: float | None = None  # its last successful robots.txt fetch
    fetched_version: int | None = None  # the version in force then (None: unknown)
    stale: int = 0
    charged: int = 0
    unjudged: int = 0  # requests no known version covered
    breaches: dict[tuple[str, str, int | None, str], _Tally] = field(default_factory=dict)
    roles: set[str] = field(default_factory=set)  # roles the versions it was judged by have rules for
    hosts: dict[str, _Host] = field(default_factory=dict)


class Judge:
    """The fold: :meth:`feed` each request in log order, then ask for the :meth:`report`.

    ``grouping``: prefix lengths that make one client (``--group``).  ``formats``: the log
    formats read, whose gaps the report states (:func:`~manners.watch.logs.lacking`).
    ``slow_down_wait``: the wait assumed asked by a 44, 429 or 503.
    """

    def __init__(
        self,
        versions: Versions,
        *,
        grouping: Grouping = DEFAULT_GROUPING,
        formats: Iterable[Format] = (),
        slow_down_wait: float = SLOW_DOWN_WAIT,
    ) -> None:
        self.versions = versions
        self.grouping = grouping
        self.formats = tuple(formats)
        self.slow_down_wait = slow_down_wait
        self._clients: dict[tuple[str, str | None, str], _Client] = {}
        self._unattributed = 0
        self._decisions: dict[tuple[int, str, str, str, str], tuple[bool, int | None]] = {}
        self._spacings: dict[tuple[int, str, str, int], float] = {}
        self._names: dict[tuple[int, str], frozenset[str]] = {}
        self._windowed: dict[int, bool] = {}

    # -- the fold ----------------------------------------------------------------------

    def feed(self, hit: Hit) -> None:
        """Take one request into account."""
        if not hit.client:
            self._unattributed += 1
            return
        kind = kind_of(hit.scheme)
        token = token_of(hit.agent) if kind == "web" else None
        key = (client_of(hit.client, self.grouping), token, kind)
        c = self._clients.get(key)
        if c is None:
            c = self._clients[key] = _Client(key[0], token, kind, Pace(kind))
        when = hit.when
        c.requests += 1
        is_robots = _is_robots(hit.target, kind)
        # its first request by time (a log's lines may be out of order), by line without times
        if c.requests == 1 or (
            when is not None and c.first is not None and (when < c.first or (when == c.first and is_robots))
        ):
            c.robots_first = is_robots
        if when is not None:
            c.timed += 1
            c.first = when if c.first is None else min(c.first, when)
            c.last = when if c.last is None else max(c.last, when)
        c.pace.add(when)
        host = self._host(c, hit, kind)
        self._slowed(c, host, hit)
        if is_robots:
            c.robots_fetches += 1
            if hit.status is None or hit.status[:1] == "2" or hit.status == "304":
                c.fetched_at = when
                c.fetched_version = self.versions.at(when)
            return
        if when is not None and c.fetched_at is not None and when - c.fetched_at > DAY:
            c.stale += 1
        readings = self._readings(c, when)
        if readings is None:
            c.unjudged += 1
            return
        agent = token or "*"
        self._rules(c, hit, kind, agent, readings)
        if when is not None:
            self._pacing(c, host, hit, when, kind, agent, readings)

    def _readings(self, c: _Client, when: float | None) -> tuple[int, ...] | None:
        """The versions the client could have been reading at ``when``, the one in force first;
        None when one of them is unknown (nothing can be charged)."""
        if when is None:
            return tuple(self.versions.every())
        now = self.versions.at(when)
        if now is None:
            return None
        fetched = c.fetched_at
        if fetched is None or not 0 <= when - fetched <= DAY or c.fetched_version == now:
            return (now,)
        if c.fetched_version is None:
            return None
        return (now, c.fetched_version)

    def _decide(
        self, index: int, profile: str, agent: str, role: str, target: str
    ) -> tuple[bool, int | None]:
        key = (index, profile, agent, role, target)
        found = self._decisions.get(key)
        if found is None:
            robots = self.versions.robots(index, profile)
            try:
                decision = robots.decide(target, agent, (role,) if role else ())
            except ValueError:  # no URL nor path (a TLS handshake sent to a Web server): no rule applies
                found = (True, None)
            else:
                found = (decision.allowed, decision.line)
            if len(self._decisions) >= _DECISIONS:
                self._decisions.clear()
            self._decisions[key] = found
        return found

    def _rules(self, c: _Client, hit: Hit, kind: str, agent: str, readings: tuple[int, ...]) -> None:
        profile = PROFILES[kind]
        target = hit.target
        decisions = [self._decide(v, profile, agent, "", target) for v in readings]
        if not any(allowed for allowed, _ in decisions):
            c.charged += 1
            reading = agent if agent in self._named(readings[0], profile) else "*"
            self._tally(c, "disallowed", reading, decisions[0][1], readings[0], hit)
            return
        if kind != "gemini":
            return
        present = {role for v in readings for role in self._roles_of(v)}
        c.roles.update(present)
        for role in sorted(present):
            said = [self._decide(v, profile, agent, role, target) for v in readings]
            if not any(allowed for allowed, _ in said):
                self._tally(c, "role", role, said[0][1], readings[0], hit)

    def _tally(self, c: _Client, rule: str, reading: str, line: int | None, version: int, hit: Hit) -> None:
        since = shown_when(self.versions.since(version))
        key = (rule, reading, line, since)
        tally = c.breaches.get(key)
        if tally is None:
            tally = c.breaches[key] = _Tally(line=line, version=since)
        tally.add(hit)

    def _named(self, index: int, profile: str) -> frozenset[str]:
        """The agents version ``index`` has a group for (lower-cased), virtual ones too."""
        key = (index, profile)
        found = self._names.get(key)
        if found is None:
            named: set[str] = set()
            for group in self.versions.robots(index, profile).groups():
                named |= group.names | group.virtual_names
            found = self._names[key] = frozenset(named)
        return found

    def _roles_of(self, index: int) -> tuple[str, ...]:
        """The virtual agents version ``index`` has rules for, under the Gemini profile."""
        named = self._named(index, "gemini")
        return tuple(r for r in ROLES if r in named)

    def _host(self, c: _Client, hit: Hit, kind: str) -> _Host:
        name = (hit.host or "").lower()
        port = _DEFAULT_PORTS.get(kind)
        if port and name.endswith(port):
            name = name[: -len(port)]
        elif kind == "web" and name.endswith((":80", ":443")):
            name = name.rpartition(":")[0]
        host = c.hosts.get(name)
        if host is None:
            host = c.hosts[name] = _Host()
        return host

    def _slowed(self, c: _Client, host: _Host, hit: Hit) -> None:
        """Whether the request comes soon after a slow down, then whether it is one."""
        when = hit.when
        if host.slowed_at is not None and when is not None:
            if when - host.slowed_at + TOLERANCE < self.slow_down_wait:
                host.ignored.add(hit)
            else:
                host.waited += 1
            host.slowed_at = None
        if hit.status in SLOW_DOWN[c.kind]:
            host.told += 1
            host.slowed_at = when

    def _pacing(self, c: _Client, host: _Host, hit: Hit, when: float, kind: str, agent: str,
                readings: tuple[int, ...]) -> None:  # fmt: skip
        spacing = min(self._spacing(v, kind, agent, when) for v in readings)
        host.requests += 1
        host.asked = max(host.asked, spacing)
        times = host.times
        at = bisect.bisect_right(times, when)
        for neighbour in times[max(at - 1, 0) : at + 1]:
            gap = abs(when - neighbour)
            host.shortest = gap if host.shortest is None else min(host.shortest, gap)
        times.insert(at, when)
        if spacing > 0:
            for i, other in enumerate(times):
                if i != at and abs(when - other) + TOLERANCE < abs(at - i) * spacing:
                    host.closer.add(hit)
                    break
        if len(times) > NEIGHBOURS:
            del times[0]

    def _spacing(self, index: int, kind: str, agent: str, when: float) -> float:
        """The spacing version ``index`` asks of ``agent`` at ``when`` (only a Request-rate given for
        a window of the day makes it depend on the minute)."""
        windowed = self._windowed.get(index)
        if windowed is None:
            lines = self.versions.robots(index, PROFILES[kind]).lines()
            rates = (_rate(line.value) for line in lines if line.kind == "request-rate")
            windowed = self._windowed[index] = any(r is not None and r.start_time is not None for r in rates)
        minute = int(when // 60 % 1440) if windowed else -1
        key = (index, kind, agent, minute)
        found = self._spacings.get(key)
        if found is None:
            robots = self.versions.robots(index, PROFILES[kind])
            moment = datetime.fromtimestamp(when, UTC)
            found = self._spacings[key] = asked_spacing(robots, agent, (), profile=PROFILES[kind], at=moment)
        return found

    # -- the report --------------------------------------------------------------------

    def report(self) -> Report:
        """Every robot so far, most offending first, and the others summed up.  Feeding may go on."""
        robots: list[RobotVerdict] = []
        others = others_requests = 0
        for c in self._clients.values():
            if c.robots_fetches:
                because = "it asked for robots.txt"
            elif c.pace.outpaced:
                because = f"it made {person_limit(c.kind)}"
            else:
                others += 1
                others_requests += c.requests
                continue
            robots.append(self._verdict(c, because))
        robots.sort(key=lambda r: (-r.offences, -r.requests, r.client, r.token or "", r.kind))
        return Report(
            tuple(robots),
            Others(others, others_requests, self._unattributed),
            tuple(shown_when(v.since) for v in self.versions.items),
            self._notes(),
        )

    def _verdict(self, c: _Client, because: str) -> RobotVerdict:
        breaches = sorted(c.breaches.values(), key=lambda t: -t.requests)
        keys = {id(t): k for k, t in c.breaches.items()}
        made = [
            Breach(keys[id(t)][0], keys[id(t)][1], t.line, t.version, t.requests, tuple(t.examples))
            for t in breaches
        ]
        made.sort(key=lambda b: (b.rule != "disallowed", -b.requests))
        pacing = tuple(
            Pacing(name, h.asked, h.shortest, h.closer.requests, h.requests, tuple(h.closer.examples))
            for name, h in sorted(c.hosts.items())
            if h.requests
        )
        slow = tuple(
            SlowDown(
                name, h.told, h.waited, h.ignored.requests, self.slow_down_wait, tuple(h.ignored.examples)
            )
            for name, h in sorted(c.hosts.items())
            if h.told
        )
        broke = tuple(sorted({b.reading for b in made if b.rule == "role"}))
        kept = tuple(r for r in ROLES if r in c.roles and r not in broke)
        reasons = [
            f"disallowed for {b.reading} by line {b.line} of the robots.txt of {b.version}: "
            f"{_requests(b.requests)}"
            for b in made
            if b.rule == "disallowed"
        ]
        reasons += [
            f"closer than the {p.asked:g} s asked at {p.host or 'the site'}: {_requests(p.closer)}"
            for p in pacing
            if p.closer
        ]
        reasons += [
            f"did not wait after being told to slow down at {s.host or 'the site'}: {_requests(s.ignored)}"
            for s in slow
            if s.ignored
        ]
        notes = []
        if not c.timed:
            notes.append(LACKS["when"])
        if c.unjudged:
            unknown = "made when no robots.txt version given was known to be in force: not judged"
            notes.append(f"{_requests(c.unjudged)} {unknown}")
        last_span = (c.last - c.first) if c.first is not None and c.last is not None else 0.0
        refetched = None if not c.robots_fetches or last_span <= DAY else c.stale == 0
        return RobotVerdict(
            client=c.address,
            token=c.token,
            kind=c.kind,
            verdict="impolite" if reasons else "polite",
            reasons=tuple(reasons),
            robot_because=because,
            requests=c.requests,
            first=c.first,
            last=c.last,
            robots_fetches=c.robots_fetches,
            robots_first=c.robots_first,
            refetched=refetched,
            stale=c.stale,
            charged=c.charged,
            breaches=tuple(made),
            kept_roles=kept,
            broke_roles=broke,
            roles=_roles_said(kept, [b for b in made if b.rule == "role"]),
            pacing=pacing if c.timed else (),
            slow_downs=slow,
            notes=tuple(notes),
        )

    def _notes(self) -> tuple[str, ...]:
        persons = ", ".join(f"{kind} {n}" for kind, n in PERSON_REQUESTS.items())
        notes = [
            f"a robot is a client that asked for robots.txt, or made more requests within "
            f"{PERSON_SECONDS:g} s than a person would ({persons}); the rest are not judged",
            "a request is charged only if every robots.txt version the client could have been reading "
            "forbids it: the one in force then, and the one it last fetched itself within 24 hours",
            "a Gemini robot is charged for what its rules for * forbid; what only a virtual agent's "
            "rules forbid is shown, not charged (which agents match a robot's activity is not logged)",
            f"pacing: logged times are whole seconds, so {TOLERANCE:g} s is given back to every span "
            "before a request is counted closer than asked",
            f"after a 44, 429 or 503, a next request to that host sooner than {self.slow_down_wait:g} s "
            "is counted as not waiting: the wait the server asked is not logged, and the Gemini "
            "specification gives a 44 no default",
        ]
        for fmt in self.formats:
            notes += [f"{fmt.name}: {said}" for said in lacking(fmt)]
        return tuple(notes)


def judge(
    hits: Iterable[Hit],
    versions: Versions,
    *,
    grouping: Grouping = DEFAULT_GROUPING,
    formats: Iterable[Format] = (),
    slow_down_wait: float = SLOW_DOWN_WAIT,
) -> Report:
    """The report on ``hits``, read by ``versions``: :class:`Judge` fed every hit."""
    folding = Judge(versions, grouping=grouping, formats=formats, slow_down_wait=slow_down_wait)
    for hit in hits:
        folding.feed(hit)
    return folding.report()


def _is_robots(target: str, kind: str) -> bool:
    """Whether a request asks for robots.txt."""
    if kind == "gopher":
        return target in _ROBOTS_SELECTORS
    if "://" in target:
        try:
            target = url_path(target)
        except ValueError:
            return False
    return target.partition("?")[0] == "/robots.txt"


def _requests(n: int) -> str:
    return f"{n} request" if n == 1 else f"{n} requests"


def _roles_said(kept: tuple[str, ...], broke: list[Breach]) -> str:
    """``kept indexer and researcher; broke archiver: line 7, 3 requests``."""
    parts = []
    if kept:
        parts.append("kept " + _and(list(kept)))
    by_role: dict[str, list[Breach]] = {}
    for b in broke:
        by_role.setdefault(b.reading, []).append(b)
    if by_role:
        said = [
            f"{role}: " + ", ".join(f"line {b.line}, {_requests(b.requests)}" for b in found)
            for role, found in sorted(by_role.items())
        ]
        parts.append("broke " + "; ".join(said))
    return "; ".join(parts)


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
