"""What a person sees while the crawler works: a live display on a terminal, plain lines when piped;
and ``manners crawl status``, what a crawl's frontier says of it (a fleet's workers included).

Everything shown that came from the network (URLs, titles, reasons, host names) goes through
``safe`` first: a server cannot move the cursor, clear the screen or retitle the terminal.

With thousands of hosts, nothing is shown a line per host: the busiest (most URLs queued), asked
of the frontier (``Frontier.busiest``, an index walk) in a task at most every ``BUSIEST_EVERY``
seconds, never waited for by a tick: the display shows the last answer, and the crawl goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections import deque
from typing import Any, TextIO

from .. import terminal
from ..vocabulary import timestamp
from .crawler import ALIVE, FOREVER, HEARTBEAT, IDENTITY, PATIENCE, Crawler, Page, Stats
from .frontier import DONE, IN_FLIGHT, QUEUED, Frontier

RECENT = 6  # pages and disallowed URLs shown in the live display
PLAIN_EVERY = 5.0  # seconds between plain progress lines
#: Beyond its patience (what it waits out of a frontier outage, as its heartbeat says) and two
#: heartbeats, a silent worker has stopped: killed, or given up on an unreachable frontier.
SILENT_AT_MOST = 2 * HEARTBEAT
HOSTS_COUNTED = 10_000  # hosts counted by status at most (a walk over the frontier's index)
BUSIEST_EVERY = 2.0  # seconds between asking the frontier for the busiest hosts (live display)
BUSIEST_PLAIN = 3  # busiest hosts named in a plain progress line
BUSIEST_STATUS = 10  # busiest hosts shown by status


def safe(text: object, limit: int = 200) -> str:
    """``text`` escaped as everywhere else (manners.terminal), and cut at ``limit`` characters."""
    s = str(text)
    return terminal.safe(s[:limit]) + ("…" if len(s) > limit else "")


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def rate(s: Stats) -> str:
    """Pages a second this run; "-" until a few seconds have passed (no rate from one page)."""
    elapsed = time.time() - s.started
    return f"{s.fetched / elapsed:.1f}" if elapsed >= 3 else "-"


def status_line(s: Stats, revisit: bool = False) -> str:
    line = (
        f"fetched {s.fetched}, queued {s.queued}, disallowed {s.disallowed}, errors {s.errors},"
        f" redirects {s.redirects}, skipped {s.skipped}, {size(s.bytes)}, {rate(s)} pages/s,"
        f" hosts active {s.hosts_active}, waiting {len(s.waiting) + len(s.parked)}"
    )
    return f"{line}, {coming(s)}" if revisit else line


def coming(s: Stats) -> str:
    """A revisiting crawl's line: what it found again, and what is due."""
    later = f"next due {timestamp(s.next_due)}" if s.next_due is not None else "none due later"
    return f"revisits {s.revisits} ({s.changed} changed), due now {s.due_now}, {later}"


def busiest_line(hosts: list[tuple[str, int]]) -> str:
    """The plain lines' "busiest: a (N), b (M)", each host safe for a terminal."""
    return "busiest: " + ", ".join(f"{safe(auth)} ({n})" for auth, n in hosts)


def describe(page: Page) -> str:
    """One line about a settled page, safe for a terminal."""
    if page.outcome == "disallowed" and page.decision is not None:
        d = page.decision
        why = f"line {d.line}: {d.rule}" if d.line is not None else d.reason
        return f"disallowed  {safe(page.url)}  ({safe(why)})"
    if page.outcome == "redirect":
        return f"redirect    {safe(page.url)} -> {safe(page.target)}"
    if page.outcome in ("error", "skipped", "gone"):
        return f"{page.outcome:<10}  {safe(page.url)}  ({safe(page.reason)})"
    what = page.mime or (f"type {page.item_type}" if page.item_type else "")
    title = f"  “{safe(page.title, 60)}”" if page.title else ""
    return f"fetched     {safe(page.url)}  {what} {size(page.bytes)}{title}"


class Progress:
    """Feed it each page (``page()``) and call ``tick()`` often; ``close()`` at the end.

    ``frontier``: where the busiest hosts are asked (default: the crawler's, once it is open)."""

    def __init__(
        self,
        crawler: Crawler,
        stream: TextIO | None = None,
        live: bool | None = None,
        frontier: Frontier | None = None,
    ) -> None:
        from rich.console import Console

        self.crawler = crawler
        self.frontier = frontier if frontier is not None else getattr(crawler, "frontier", None)
        self.busiest: list[tuple[str, int]] = []  # the frontier's last answer, most queued first
        self._asking: asyncio.Task[None] | None = None
        self._asked = float("-inf")  # monotonic: when the last question was put
        self.stream = stream or sys.stderr
        self.console = Console(file=self.stream, highlight=False)
        self.live_mode = self.console.is_terminal if live is None else live
        self.every = BUSIEST_EVERY if self.live_mode else PLAIN_EVERY  # seconds between questions
        self.recent: deque[str] = deque(maxlen=RECENT)
        self.disallowed: deque[str] = deque(maxlen=RECENT)
        self._last_plain = 0.0
        self._live: Any = None
        if self.live_mode:
            from rich.live import Live

            self._live = Live(self.render(), console=self.console, refresh_per_second=4, transient=False)
            self._live.start()

    def page(self, page: Page) -> None:
        line = describe(page)
        (self.disallowed if page.outcome == "disallowed" else self.recent).append(line)
        self.tick()

    def tick(self) -> None:
        self._ask()
        if self._live is not None:
            self._live.update(self.render())
        elif time.monotonic() - self._last_plain >= PLAIN_EVERY:
            self._last_plain = time.monotonic()
            line = status_line(self.crawler.stats, self.crawler.revisit)
            if self.busiest:
                line += f", {busiest_line(self.busiest[:BUSIEST_PLAIN])}"
            print(f"manners crawl: {line}", file=self.stream, flush=True)

    async def aclose(self) -> None:
        """``close``, and the question to the frontier still out ended before this returns: left
        running, it would be cancelled again as the event loop closes, and on a Redis Cluster
        with a master gone its calls, cut off halfway, end in tracebacks as the process exits."""
        asking, self._asking = self._asking, None
        if asking is not None:
            asking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asking
        self.close()

    def close(self) -> None:
        if self._asking is not None:
            self._asking.cancel()
            self._asking = None
        if self._live is not None:
            self._live.update(self.render())
            self._live.stop()
            self._live = None

    def _ask(self) -> None:
        """Ask the frontier for the busiest hosts, in a task, if ``every`` seconds have passed
        and the last question is answered: a tick never waits for it (a frontier waited for
        through an outage answers late, and the display shows the last answer till then)."""
        if self.frontier is None or (self._asking is not None and not self._asking.done()):
            return
        if time.monotonic() - self._asked < self.every:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a display driven by hand): nothing to ask with
            return
        self._asked = time.monotonic()
        self._asking = asyncio.ensure_future(self._answer(self.frontier))

    async def _answer(self, frontier: Frontier) -> None:
        # The crawl itself meets the frontier's failures; the display keeps its last answer.
        with contextlib.suppress(Exception):
            self.busiest = await frontier.busiest(RECENT)

    def render(self) -> Any:
        """What the live display shows now (a rich renderable), one screen whatever the crawl's size."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        s = self.crawler.stats
        figures = Table.grid(padding=(0, 2))
        for _ in range(6):
            figures.add_column()
        figures.add_row("fetched", str(s.fetched), "queued", str(s.queued), "bytes", size(s.bytes))
        figures.add_row("disallowed", str(s.disallowed), "errors", str(s.errors), "pages/s",
                        rate(s))  # fmt: skip
        figures.add_row("redirects", str(s.redirects), "skipped", str(s.skipped), "hosts active",
                        str(s.hosts_active))  # fmt: skip
        if self.crawler.revisit:
            later = timestamp(s.next_due) if s.next_due is not None else "-"
            figures.add_row("revisits", str(s.revisits), "changed", str(s.changed), "due now", str(s.due_now))
            figures.add_row("next due", later, "", "", "", "")
        parts: list[Any] = [Text("manners crawl", style="bold"), figures]
        if self.busiest:
            parts.append(Text("busiest hosts:", style="bold"))
            for auth, n in self.busiest[:RECENT]:
                parts.append(Text(f"  {safe(auth)}  {n} queued", style="cyan"))
        waiting = {**dict(s.waiting), **dict(s.parked)}
        if waiting:
            parts.append(Text("hosts waiting:", style="bold"))
            for auth, why in list(waiting.items())[:RECENT]:
                parts.append(Text(f"  {safe(auth)}  {safe(why)}", style="yellow"))
            if len(waiting) > RECENT:
                parts.append(Text(f"  ... and {len(waiting) - RECENT} more", style="dim"))
        if self.disallowed:
            parts.append(Text("disallowed (never requested):", style="bold"))
            parts.extend(Text("  " + line, style="red") for line in self.disallowed)
        if self.recent:
            parts.append(Text("latest:", style="bold"))
            parts.extend(Text("  " + line, style="dim") for line in self.recent)
        return Group(*parts)


def summary(crawler: Crawler, interrupted: bool) -> dict[str, object]:
    """The end of a crawl, for --json and for people."""
    s = crawler.stats
    elapsed = time.time() - s.started
    out = crawler.out
    logs = (getattr(crawler, "pages", None), getattr(crawler, "ledger", None))
    files = [str(path) for log in logs if log is not None for path in log.paths]  # rolled files too
    if not crawler.shared:
        files.append(str(crawler.frontier_spec))
    if crawler.warc is not None:
        files += [str(p) for p in crawler.warc.paths]
    return {
        "completed": s.completed and not interrupted,
        "interrupted": interrupted,
        "limit": s.limit,
        "fetched": s.fetched,
        "disallowed": s.disallowed,
        "redirects": s.redirects,
        "errors": s.errors,
        "skipped": s.skipped,
        "retries": s.retries,
        "requests": s.requests,
        "bytes": s.bytes,
        "queued": s.queued,
        "seconds": round(elapsed, 3),
        "pages_per_second": round(s.fetched / elapsed, 2) if elapsed > 0 else 0.0,
        "parked": {safe(a): safe(why) for a, why in s.parked.items()},
        "recovered": getattr(crawler, "recovered", 0),
        "requeued": getattr(crawler, "requeued", 0),
        "dropped": s.dropped,
        "revisits": {"visits": s.revisits, "changed": s.changed} if crawler.revisit else None,
        "whole": {
            "pages": crawler.whole.get("pages", 0),
            "queued": crawler.whole.get("queued", 0),
            **{
                k: crawler.whole.get(k, 0)
                for k in ("fetched", "disallowed", "redirect", "error", "skipped", "gone")
            },
        },
        "out": str(out),
        "worker": crawler.owner,
        "files": files,
    }


async def crawl_status(frontier: Frontier, where: str, name: str | None) -> dict[str, object]:
    """What ``frontier`` says of its crawl, for ``manners crawl status``: URLs by state and
    outcome, hosts queued, ready and parked, the busiest hosts (most URLs queued), the workers
    and when each was last heard of, and the lease that expires first (a worker stuck or dead
    holds it)."""
    now = time.time()
    counts = await frontier.counts()
    identity = json.loads(await frontier.get_meta("identity") or "null")
    queued = await frontier.ready_authorities(now + FOREVER, (), HOSTS_COUNTED)
    ready = await frontier.ready_authorities(now, (), HOSTS_COUNTED)
    parked = await frontier.parked()
    busiest = await frontier.busiest(BUSIEST_STATUS)
    held = await frontier.held()
    workers = {
        worker: _worker(seen, now, held.get(worker, 0)) for worker, seen in (await frontier.workers()).items()
    }
    oldest = await frontier.oldest_lease()
    coming = await frontier.revisits(now)
    per_visit: dict[str, dict[str, int]] = {}
    for key, n in counts.items():
        kind, _, number = key.partition(":")
        if kind in ("visit", "changed") and number.isdigit():
            figures = per_visit.setdefault(number, {"visited": 0, "changed": 0})
            figures["visited" if kind == "visit" else "changed"] = n
    lease = None
    if oldest is not None:
        left = round(float(str(oldest["expires_in"])), 3)
        lease = {"url": str(oldest["url"]), "owner": str(oldest["owner"]), "expires_in": left}
    return {
        "frontier": where,
        "name": name,
        "at": timestamp(now),
        "identity": {k: identity.get(k) for k in IDENTITY} if isinstance(identity, dict) else None,
        "seeds": json.loads(await frontier.get_meta("seeds") or "[]"),
        "urls": {state: counts.get(state, 0) for state in (QUEUED, IN_FLIGHT, DONE)},
        "outcomes": {
            k: n for k, n in sorted(counts.items()) if k not in (QUEUED, IN_FLIGHT, DONE) and ":" not in k
        },
        "revisits": {
            "due_now": coming.due_now,
            "next_due": timestamp(coming.next_due) if coming.next_due is not None else None,
            "per_visit": dict(sorted(per_visit.items(), key=lambda item: int(item[0]))),
        },
        "hosts": {"queued": len(queued), "ready": len(ready), "parked": len(parked)},
        "busiest": [{"host": auth, "queued": n} for auth, n in busiest],
        "parked": {
            a: {"until": timestamp(min(t, now + FOREVER)), "reason": why} for a, (t, why) in parked.items()
        },
        "workers": dict(sorted(workers.items())),
        "oldest_lease": lease,
    }


_BEAT = ("last_seen", "ago")  # what the frontier adds to what a worker said


def _worker(seen: dict[str, object], now: float, leases: int) -> dict[str, object]:
    """A heartbeat as status shows it, whether the frontier keeps what the worker said under
    ``info`` or beside ``last_seen``; ``ago`` by the frontier's clock where it gives one.

    ``leases``: what the frontier says it holds now, shown as its ``in_flight`` too: a killed
    worker's last heartbeat would say what it held when it died, and its leases are none once
    reclaimed.  ``condition``: alive (heard from lately, not stopped); stopped (it said so, or it
    has been silent past what it waits out of a frontier outage: killed, or stopped by that
    outage, whose end it could not report); else silent (waiting out an outage, or stuck)."""
    said = seen.get("info")
    info = dict(said) if isinstance(said, dict) else {k: v for k, v in seen.items() if k not in _BEAT}
    last = float(str(seen["last_seen"]))
    ago = float(str(seen["ago"])) if "ago" in seen else now - last
    said_stopped = info.get("state") == "stopped"
    alive = ago <= ALIVE and not said_stopped
    patience = info.get("patience")
    waits = (
        float(patience) if isinstance(patience, int | float) and not isinstance(patience, bool) else PATIENCE
    )
    condition = "alive" if alive else "stopped" if said_stopped or ago > waits + SILENT_AT_MOST else "silent"
    info["in_flight"] = leases  # the frontier's word now, not a heartbeat's of up to 5 s (or a death) ago
    seen_now = {"condition": condition, "leases": leases}
    return {"alive": alive, "last_seen": timestamp(last), "ago": round(ago, 3), **info, **seen_now}


def status_lines(status: dict[str, Any]) -> list[str]:
    """``crawl_status`` for people, each line safe for a terminal."""
    who = status["identity"] or {}
    name = f"the crawl {status['name']!r} at " if status["name"] else ""
    roles = " ".join(who.get("roles") or []) or "(none)"
    lines = [f"{name}{status['frontier']}: robot {who.get('agent')}, roles {roles}, scope {who.get('scope')}"]
    urls, outcomes, hosts = status["urls"], status["outcomes"], status["hosts"]
    settled = f" ({', '.join(f'{k} {n}' for k, n in outcomes.items())})" if outcomes else ""
    lines.append(
        f"URLs: queued {urls['queued']}, in flight {urls['in_flight']}, done {urls['done']}{settled}"
    )

    def capped(n: int) -> str:
        return f"{n}+" if n >= HOSTS_COUNTED else str(n)

    lines.append(f"hosts: {capped(hosts['queued'])} with URLs queued, {capped(hosts['ready'])} ready now,"
                 f" {hosts['parked']} parked")  # fmt: skip
    if status["busiest"]:
        lines.append("busiest hosts (URLs queued):")
        lines.extend(f"  {b['host']}  {b['queued']} queued" for b in status["busiest"])
    revisits = status["revisits"]
    if revisits["per_visit"] or revisits["due_now"] or revisits["next_due"]:
        later = f"next due {revisits['next_due']}" if revisits["next_due"] else "none due later"
        lines.append(f"revisits: due now {revisits['due_now']}, {later}")
        shown = list(revisits["per_visit"].items())
        if shown:
            lines.append("  changed per visit: " + "; ".join(
                f"visit {n}: {v['changed']} of {v['visited']}" for n, v in shown[-RECENT:]))  # fmt: skip
    for auth, park in list(status["parked"].items())[:RECENT]:
        lines.append(f"  parked {auth} until {park['until']}: {park['reason']}")
    if len(status["parked"]) > RECENT:
        lines.append(f"  ... and {len(status['parked']) - RECENT} more parked")
    workers = status["workers"]
    alive = sum(1 for w in workers.values() if w["alive"])
    stopped = sum(1 for w in workers.values() if w["condition"] == "stopped")
    lines.append(f"workers: {alive} alive, {stopped} stopped, {len(workers) - alive - stopped} silent")
    for worker, w in workers.items():
        state = w["condition"]
        if state == "stopped" and w.get("state") != "stopped":
            state = "stopped without a word (killed, or stopped by a frontier outage)"
        lines.append(f"  {worker}  {state}, last heard {w['ago']:.1f} s ago; fetched {w.get('fetched', '?')},"
                     f" requests {w.get('requests', '?')}, in flight {w.get('in_flight', '?')}")  # fmt: skip
    oldest = status["oldest_lease"]
    if oldest is None:
        lines.append("oldest lease: none (nothing in flight)")
    else:
        due = oldest["expires_in"]
        when = f"expires in {due:.0f} s" if due >= 0 else f"expired {-due:.0f} s ago, to be reclaimed"
        lines.append(f"oldest lease: {oldest['url']} held by {oldest['owner']}, {when}")
    return [safe(line, 2000) for line in lines]
