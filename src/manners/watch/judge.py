"""Judging robots by a server's access log: from parsed requests and dated robots.txt versions
to a verdict per robot, with its evidence.

Pure (no file, no network, no printing) and a streaming fold: :class:`Judge` is fed one
:class:`~manners.watch.logs.Hit` at a time and :meth:`Judge.report` can be asked at any point
(``--follow`` keeps feeding); it keeps per-client sums and a few examples, never the requests,
so memory grows with clients, not lines.  The fold is the engine's
(:class:`manners._core.WatchFold`, ``crates/manners-core/src/watch/fold.rs``): a log is
millions of lines, and no per-request work is done in Python.  This module sets it up with
the versions and makes the report of its sums; the rules it applies are these.

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
  the server asked (the 44's meta, a Retry-After) is in no log manners reads as a number
  (jetforce logs a 44's meta as words), and the Gemini specification gives the meta no
  default: the wait assumed is manners' own crawler's first wait for a 44 whose meta it cannot
  read, and the report says so.
- Staleness (RFC 9309's 24 hours) and whether robots.txt came first are evidence, not charges.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from manners._core import WatchFold
from manners.robots import RobotsTxt
from manners.watch.clients import (
    DEFAULT_GROUPING,
    PERSON_REQUESTS,
    PERSON_SECONDS,
    PROFILES,
    Grouping,
    person_limit,
)
from manners.watch.logs import LACKS, Format, Hit, lacking
from manners.watch.verdicts import Breach, Example, Others, Pacing, Report, RobotVerdict, SlowDown
from manners.watch.versions import Versions, shown_when

__all__ = [
    "DAY",
    "EXAMPLES",
    "NEIGHBOURS",
    "ROLES",
    "SLOW_DOWN_WAIT",
    "TOLERANCE",
    "Judge",
    "judge",
]

ROLES: tuple[str, ...] = WatchFold.ROLES  # the Gemini companion spec's virtual agents
DAY = WatchFold.DAY  # RFC 9309 §2.4: a cached robots.txt should not be used longer than 24 hours
TOLERANCE = WatchFold.TOLERANCE  # seconds given back to every logged span: the logs write whole seconds
NEIGHBOURS = WatchFold.NEIGHBOURS  # the last requests to a host kept to judge pacing
#: Seconds assumed asked by a 44, 429 or 503 (manners' crawler waits this after a 44 it cannot read).
SLOW_DOWN_WAIT = WatchFold.SLOW_DOWN_WAIT
EXAMPLES = WatchFold.EXAMPLES  # offending requests kept of each kind


class Judge:
    """The fold: :meth:`feed` each request in log order, then ask for the :meth:`report`.

    ``grouping``: prefix lengths that make one client (``--group``).  ``formats``: the log
    formats read, whose gaps the report states (:func:`~manners.watch.logs.lacking`).
    ``slow_down_wait``: the wait assumed asked by a 44, 429 or 503.  The per-request work is
    the engine's (:class:`manners._core.WatchFold`); this makes the report of its sums.
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

        def robots(index: int, kind: str) -> RobotsTxt:
            return versions.robots(index, PROFILES[kind])

        read = [
            (v.since, shown_when(v.since), robots(i, "web"), robots(i, "gemini"), robots(i, "gopher"))
            for i, v in enumerate(versions.items)
        ]
        self.fold = WatchFold(read, grouping.v4, grouping.v6, slow_down_wait)

    def feed(self, hit: Hit) -> None:
        """Take one request into account."""
        self.fold.feed(
            hit.when, hit.client, hit.scheme, hit.host, hit.target, hit.status, hit.agent, hit.file, hit.line
        )

    # -- the report --------------------------------------------------------------------

    def report(self) -> Report:
        """Every robot so far, most offending first, and the others summed up.  Feeding may go on."""
        sums, others, others_requests, unattributed = self.fold.export()
        robots = [self._verdict(robot) for robot in sums]
        robots.sort(key=lambda r: (-r.offences, -r.requests, r.client, r.token or "", r.kind))
        return Report(
            tuple(robots),
            Others(others, others_requests, unattributed),
            tuple(shown_when(v.since) for v in self.versions.items),
            self._notes(),
        )

    def _verdict(self, sums: tuple[Any, ...]) -> RobotVerdict:
        """One robot's verdict from its sums (:meth:`manners._core.WatchFold.export`)."""
        (address, token, kind, _outpaced, requests, timed, first, last,
         robots_fetches, robots_first, stale, charged, unjudged, roles, breaches, hosts) = sums  # fmt: skip
        because = "it asked for robots.txt" if robots_fetches else f"it made {person_limit(kind)}"
        made = [
            Breach(rule, reading, line, version, n, tuple(Example(*e) for e in examples))
            for rule, reading, line, version, n, examples in breaches
        ]
        made.sort(key=lambda b: (b.rule != "disallowed", -b.requests))
        hosts = sorted(hosts)
        pacing = tuple(
            Pacing(name, asked, shortest, closer, n, tuple(Example(*e) for e in examples))
            for name, n, asked, shortest, closer, examples, *_ in hosts
            if n
        )
        slow = tuple(
            SlowDown(name, told, waited, ignored, self.slow_down_wait, tuple(Example(*e) for e in examples))
            for name, *_, told, waited, ignored, examples in hosts
            if told
        )
        broke = tuple(sorted({b.reading for b in made if b.rule == "role"}))
        kept = tuple(r for r in ROLES if r in roles and r not in broke)
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
        if not timed:
            notes.append(LACKS["when"])
        if unjudged:
            unknown = "made when no robots.txt version given was known to be in force: not judged"
            notes.append(f"{_requests(unjudged)} {unknown}")
        last_span = (last - first) if first is not None and last is not None else 0.0
        refetched = None if not robots_fetches or last_span <= DAY else stale == 0
        return RobotVerdict(
            client=address,
            token=token,
            kind=kind,
            verdict="impolite" if reasons else "polite",
            reasons=tuple(reasons),
            robot_because=because,
            requests=requests,
            first=first,
            last=last,
            robots_fetches=robots_fetches,
            robots_first=robots_first,
            refetched=refetched,
            stale=stale,
            charged=charged,
            breaches=tuple(made),
            kept_roles=kept,
            broke_roles=broke,
            roles=_roles_said(kept, [b for b in made if b.rule == "role"]),
            pacing=pacing if timed else (),
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
