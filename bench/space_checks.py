"""What a polite crawl of a ``Space`` must request, its ideal schedule, and the servers' logs held to both.

``plan`` reads each host's robots.txt with manners' own functions (``read_body``, the
robot's ``allowed`` and ``asked_spacing``, as the crawler reads them) and walks the links
from the seeds (every host's root) the way the crawler does, breadth first, to the depth
limit: the pages it must fetch, once each, and the pages it must never ask for.

The ideal schedule: each host busy from the start, one request at a time, each request
``spacing`` after the one before (or after its answer, when the answer takes longer), a
``44``'s wait honoured, an unreachable robots.txt tried ``attempts`` times ``backoff``
apart (doubling).  Its length for a host is the host's lower bound; the crawl's is the
largest of them, or the total number of requests over what the CPU allows (a bare fetch
loop's requests per second), whichever is larger.

``check`` reads the servers' logs: every planned page fetched once (a ``44`` and its retry
aside), nothing disallowed requested, no two connections to one host open at once, and no
connection set up sooner after the one before than the spacing in force (``min_delay`` before
robots.txt is known, the host's spacing after it; a ``44``'s wait from its answer).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from manners.fetch.outcome import read_body
from manners.robots import asked_spacing
from space_model import CLOSED, TRAP_PATH, Host, Space

ROBOTS_PATHS = frozenset({"/robots.txt", "robots.txt", "0/robots.txt"})
CAPS = "caps.txt"  # a hole's capabilities, asked once by the crawler after robots.txt
META_PATHS = ROBOTS_PATHS | {CAPS}


@dataclass(frozen=True)
class Crawl:
    """The crawl's robot and limits, as passed to ``manners crawl`` (times already compressed)."""

    agent: str = "spacebot"
    roles: tuple[str, ...] = ("indexer",)
    min_delay: float = 0.02
    max_depth: int = 40
    backoff: float = 1.2  # --robots-backoff
    attempts: int = 4  # --robots-attempts


@dataclass
class HostPlan:
    host: Host
    readable: bool  # robots.txt can be read (a file, or none: everything allowed)
    spacing: float
    robots_requests: int  # requests for robots.txt (and a hole's caps.txt) in the ideal schedule
    pages: dict[str, int] = field(default_factory=dict)  # path -> requests it takes (2 with a 44)
    disallowed: set[str] = field(default_factory=set)  # paths a link led to that must not be asked
    waits: float = 0.0  # seconds of 44 waits
    trap: int = 0  # trap pages among ``pages``

    def ideal(self, factor: float) -> float:
        """This host's lower bound: its requests back to back, each spacing (or its answer) apart."""
        answer = 2 * self.host.rtt / factor
        if self.host.fault == "dead" or not self.readable:
            gaps = sum(max(self.spacing, self.backoff * 2**k) for k in range(self.robots_requests - 1))
            return gaps + answer
        n = self.robots_requests + sum(self.pages.values())
        return (n - 1) * max(self.spacing, answer) + answer + self.waits

    backoff: float = 0.0


@dataclass
class Plan:
    space: Space
    crawl: Crawl
    hosts: dict[str, HostPlan]

    @property
    def pages(self) -> int:
        return sum(len(p.pages) for p in self.hosts.values())

    @property
    def requests(self) -> int:
        return sum(p.robots_requests + sum(p.pages.values()) for p in self.hosts.values())

    def host_bounds(self) -> dict[str, float]:
        return {name: p.ideal(self.space.factor) for name, p in self.hosts.items()}

    def politeness_bound(self) -> float:
        return max(self.host_bounds().values(), default=0.0)

    def bound(self, bare_rate: float | None) -> float:
        """The crawl's lower bound: the longest host, or all requests at the bare loop's rate."""
        cpu = self.requests / bare_rate if bare_rate else 0.0
        return max(self.politeness_bound(), cpu)


def robots_of(space: Space, host: Host, crawl: Crawl) -> tuple[bool, float, int]:
    """(readable, spacing, robots.txt requests) for ``host``."""
    if host.fault == "dead" or host.robots_answer in ("40", "silent"):
        per = 1 if host.scheme == "gemini" or host.fault == "dead" else 3
        return False, crawl.min_delay, crawl.attempts * per
    if host.robots_answer == "missing":
        return True, crawl.min_delay, 1 if host.scheme == "gemini" else 3 + 1  # + caps.txt
    return True, -1.0, 1 if host.scheme == "gemini" else 2 + 1


def plan(space: Space, crawl: Crawl) -> Plan:
    """Every host's pages to fetch (from the seeds, every root, breadth first) and its spacing."""
    key = {"gemini": "gemini://{}:1965", "gopher": "gopher://{}:70"}
    robots = {}
    plans: dict[str, HostPlan] = {}
    for host in space.hosts:
        readable, spacing, asks = robots_of(space, host, crawl)
        if readable and host.robots_answer == "file":
            parsed = read_body((host.robots_text or "").encode(), False, None)
            robots[host.name] = parsed
            asked = asked_spacing(
                parsed, crawl.agent, crawl.roles, profile=key[host.scheme].format(host.name)
            )
            spacing = max(crawl.min_delay, asked)
        plans[host.name] = HostPlan(host, readable, spacing, asks, backoff=crawl.backoff)

    def allowed(host: Host, url: str) -> bool:
        parsed = robots.get(host.name)
        return parsed is None or parsed.allowed(url, crawl.agent, crawl.roles)

    seen: set[str] = set()
    level = []
    for host in space.hosts:
        seen.add(host.root)
        level.append((host, 0, host.root))
    depth = 0
    while level:
        nxt = []
        for host, i, url in level:
            hp = plans[host.name]
            path = url.split(host.name, 1)[1]
            if host.scheme == "gopher":
                path = path[2:] or "/"
            if not hp.readable:
                continue
            if not allowed(host, url):
                hp.disallowed.add(path)
                continue
            if i < 0:  # a trap page
                hp.pages[path] = 1
                hp.trap += 1
                if depth < crawl.max_depth:
                    n = int(path[len(TRAP_PATH) :])
                    nxt.extend(linked(space, space.trap_links(host, n), seen))
                continue
            target = space.redirect(host, i)
            wait = space.slow_down(host, i)
            hp.pages[path] = 2 if wait is not None else 1
            if wait is not None:
                hp.waits += wait
            if target is not None:
                nxt_same = linked(space, [target], seen)
                level.extend(nxt_same)  # a redirect is no step deeper
                continue
            if depth < crawl.max_depth:
                nxt.extend(linked(space, space.links(host, i), seen))
        level = nxt
        depth += 1
    return Plan(space, crawl, plans)


def linked(space: Space, urls: Iterable[str], seen: set[str]) -> list[tuple[Host, int, str]]:
    """The pages of the space ``urls`` name, as (host, page, URL; a trap's page -1), each URL
    not in ``seen`` once (added to it): the plan's walk and the schedule model read a page's
    links the same way."""
    out = []
    for url in urls:
        if url in seen:
            continue
        seen.add(url)
        name = url.split("://", 1)[1].split("/", 1)[0]
        host = space.by_name[name]
        path = url.split(name, 1)[1]
        if host.scheme == "gopher":
            path = path[2:] or "/"
        if host.fault == "trap" and path.startswith(TRAP_PATH):
            out.append((host, -1, url))
            continue
        i = space.page_of(host, path)
        if i is not None:
            out.append((host, i, url))
    return out


# -- the servers' logs ---------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    accepted: float
    asked: float
    ended: float
    host: str
    peer: str
    scheme: str
    path: str  # Gemini: the URL's path; Gopher: the selector
    status: str
    sent: int

    @property
    def cut(self) -> bool:
        """Closed before its request came (the client killed): a connection that asked nothing."""
        return self.status.startswith(CLOSED)


def is_page(r: Request) -> bool:
    """``r`` asked for a page: not robots.txt or caps.txt, and not a connection closed unasked."""
    return r.path not in META_PATHS and not r.cut


def read_logs(paths: Iterable[Path]) -> list[Request]:
    out = []
    for p in paths:
        for line in p.read_text(errors="replace").splitlines():
            f = line.split("\t")
            if len(f) != 9:
                continue
            path = f[6]
            if f[5] == "gemini":
                rest = path.split("://", 1)[-1]
                path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
                path = path.split("?", 1)[0]
            else:
                path = path or "/"
            out.append(
                Request(float(f[0]), float(f[1]), float(f[2]), f[3], f[4], f[5], path, f[7], int(f[8]))
            )
    out.sort(key=lambda r: r.asked)
    return out


@dataclass
class Verdict:
    missing: list[tuple[str, str]] = field(default_factory=list)
    twice: list[tuple[str, str, int]] = field(default_factory=list)
    disallowed: list[tuple[str, str]] = field(default_factory=list)
    unplanned: list[tuple[str, str]] = field(default_factory=list)  # asked, but not in the plan
    overlaps: list[tuple[str, float]] = field(default_factory=list)
    short: list[tuple[str, float, float]] = field(default_factory=list)  # host, gap, spacing due
    # host, robots.txt (and caps.txt) requests, planned: read again past its attempts (a dead host)
    robots_again: list[tuple[str, int, int]] = field(default_factory=list)
    # a crawl killed and resumed: pages asked before the kill (in flight, or answered but not yet
    # settled in the frontier) and again after it.  Not a failure; one asked long before is (twice)
    again_after_kill: list[tuple[str, str]] = field(default_factory=list)
    pages: int = 0
    requests: int = 0

    def ok(self) -> bool:
        return not (
            self.missing
            or self.twice
            or self.disallowed
            or self.unplanned
            or self.overlaps
            or self.short
            or self.robots_again
        )

    def summary(self) -> str:
        def few(xs: Sequence[object]) -> str:
            return f"{len(xs)}" + (f" (e.g. {xs[:3]})" if xs else "")

        return (
            f"{self.requests} requests, {self.pages} pages; missing {few(self.missing)}; "
            f"twice {few(self.twice)}; disallowed {few(self.disallowed)}; "
            f"unplanned {few(self.unplanned)}; in flight together {few(self.overlaps)}; "
            f"gaps under spacing {few(self.short)}; robots.txt read again {few(self.robots_again)}"
            + (f"; asked again after the kill {few(self.again_after_kill)}" if self.again_after_kill else "")
        )


IN_FLIGHT_AT_KILL = 11.0  # seconds: the bench's crawl timeout (10 s) and a second


def _in_flight_at(killed: float, got: list[Request], path: str) -> bool:
    """``path`` asked once before ``killed`` (lately enough to have been in flight) and once after."""
    before = [r.accepted for r in got if r.path == path and r.accepted < killed and not r.cut]
    after = [r for r in got if r.path == path and r.accepted >= killed and not r.cut]
    return len(before) >= 1 and len(after) >= 1 and killed - max(before) <= IN_FLIGHT_AT_KILL


def check(
    plan: Plan, requests: list[Request], tolerance: float = 0.003, killed: float | None = None
) -> Verdict:
    """The servers' logs against the plan (see the module's docstring).

    ``killed``: when the crawl was SIGKILLed (and then resumed with the same command).  A page
    asked before it and again after it is allowed once more if its last request before the kill
    began within ``IN_FLIGHT_AT_KILL`` seconds of it (the crawl's timeout and then some: it was in
    flight, or its settling not yet committed); robots.txt is judged on each side of the kill
    apart (a resumed crawl reads it again: the robot cache of the bench's crawl is in memory),
    and so is the spacing: until the resumed crawl has read a host's robots.txt again it knows
    only --min-delay (a Gopher hole's two robots.txt selectors, asked that far apart)."""
    v = Verdict(requests=len(requests))
    by_host: dict[str, list[Request]] = defaultdict(list)
    for r in requests:
        by_host[r.host].append(r)
    for name, hp in plan.hosts.items():
        got = by_host.get(name, [])
        asks = [r for r in got if not r.cut]
        counts: dict[str, int] = defaultdict(int)
        for r in got:
            if is_page(r):
                counts[r.path] += 1
        for path, times in hp.pages.items():
            n = counts.pop(path, 0)
            if n == 0:
                v.missing.append((name, path))
            elif n > times:
                if killed is not None and n == times + 1 and _in_flight_at(killed, got, path):
                    v.again_after_kill.append((name, path))
                else:
                    v.twice.append((name, path, n))
            v.pages += min(n, 1)
        for path in counts:
            (v.disallowed if path in hp.disallowed or not hp.readable else v.unplanned).append((name, path))
        sides = [asks]
        if killed is not None:
            sides = [[r for r in asks if r.accepted < killed], [r for r in asks if r.accepted >= killed]]
        for side in sides:
            meta = sum(1 for r in side if r.path in META_PATHS)
            if meta > hp.robots_requests:
                v.robots_again.append((name, meta, hp.robots_requests))
        # one at a time, and spaced
        got.sort(key=lambda r: r.accepted)
        for a, b in itertools.pairwise(got):
            if b.accepted < a.ended - tolerance:
                v.overlaps.append((name, round(a.ended - b.accepted, 4)))
        known = False
        for a, b in itertools.pairwise(got):
            if killed is not None and a.accepted < killed <= b.accepted:
                known = False  # resumed, the crawl reads robots.txt again: until then --min-delay
            known = known or (a.path in ROBOTS_PATHS and a.status in ("20", "51", "0"))
            due = hp.spacing if known and hp.spacing > 0 else plan.crawl.min_delay
            gap = b.accepted - a.accepted
            if a.status == "44":
                wait = plan.space.slow_down(hp.host, plan.space.page_of(hp.host, a.path) or 0) or 0
                gap, due = b.accepted - a.ended, float(wait)
            if gap < due - tolerance:
                v.short.append((name, round(gap, 4), due))
    return v
