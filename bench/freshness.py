"""Benchmark: how many of a capsule's changes a revisiting crawl sees, against a fixed interval
spending the same requests.

``manners crawl --revisit`` asks for a page again after an interval that doubles while the page
stays the same (up to ``--revisit-max``) and goes back to ``--revisit-min`` when it changes
(``manners.crawl.revisit.next_interval``).  The point is to spend a server's requests where
the changes are: this bench measures whether that buys more of the changes than the obvious
alternative, one fixed interval for every page, tuned to spend the same number of requests.

A generated capsule: ``--pages`` pages (seeded), 20% of which never change; each of the others
changes as a Poisson process whose mean interval is drawn log-uniformly from 1 hour to 1 year.
Every page is first visited at time 0.  For each schedule it counts, over ``--days`` of
virtual time:

- requests: visits made in the horizon;
- changes seen: of the changes made in the horizon, the share whose new version was fetched
  at least once (a version is seen if a visit falls in its lifetime).  Each page's first
  version is not counted: every schedule fetches it at time 0.  Pooled, it is dominated by
  the busiest pages (a page changing hourly makes 8,760 changes a year), so it is also given
  per page (each changing page's share, averaged) and by how often pages change;
- freshness: the share of page-time during which the stored copy is the live page;
- mean age: over page-time, how long the stored copy has been out of date (0 while fresh).

The fixed schedule is ``next_interval`` with ``revisit_min == revisit_max == T`` (the crawler's
``--revisit-min T --revisit-max T``), T chosen so that both schedules spend the same requests
(within 1%; it says so when a page's visits are too few for that).  No ``Check:`` and no
``--min-delay``: the schedule alone.  It does not model hosts (one request at a time per host,
delays), requests that fail, pages appearing or going, nor changes whose timing is not
memoryless (a page edited every morning); see docs/benchmarks.md.

    .venv/bin/python bench/freshness.py [--pages 2000] [--days 365] [--seed 25]
                                        [--setting 1d:30d] [--setting 1h:30d ...] [--json]

``--live`` runs the same comparison time-compressed against a real capsule: jetforce serving
``--live-pages`` pages whose files this script rewrites on known random schedules (mean
interval log-uniform from 0.5 s to 10 min, 20% never), crawled by ``manners crawl --revisit
--revisit-min 1 --revisit-max 16`` in a subprocess for ``--live-seconds`` of wall time, then
stopped with SIGTERM; then the same with ``--revisit-min T --revisit-max T``, T from the first
run's requests (the budgets match to within half a visit a page).  Its figures come from
``pages.jsonl`` (each body's sha256 names the version it was) and this script's log of when it
rewrote each file; time before a page's first visit counts as not fresh.  Here the crawler's
own limits hold: one host, one request at a time, due times late when requests queue.

    .venv/bin/python bench/freshness.py --live [--live-pages 40] [--live-seconds 60]
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import servers  # noqa: E402
from manners.crawl.revisit import DAY, HOUR, REVISIT_MAX, REVISIT_MIN, next_interval, parse_interval  # noqa: E402

YEAR = 365 * DAY
STILL = 0.2  # the share of pages that never change
RATIOS = ("requests", "seen", "share_seen", "page_share_seen", "freshness", "mean_age_h")
KINDS = ("never", "< 1 d", "1-30 d", "> 30 d")  # pages by their mean interval between changes


# --------------------------------------------------------------------------- the capsule


@dataclass(frozen=True)
class Page:
    """One page's known schedule: when it changes, as seconds from the start."""

    mean: float | None  # mean seconds between changes; None: it never changes
    changes: tuple[float, ...]

    @property
    def kind(self) -> str:
        if self.mean is None:
            return KINDS[0]
        return KINDS[1] if self.mean < DAY else KINDS[2] if self.mean <= 30 * DAY else KINDS[3]


def capsule(n: int, horizon: float, rng: random.Random, fastest: float, slowest: float) -> list[Page]:
    """``n`` pages: a share :data:`STILL` never change, the others change as Poisson processes
    whose mean interval is log-uniform from ``fastest`` to ``slowest`` (as many pages in each
    factor of ten: busy, daily, monthly and quiet pages all weigh in; a spread to test the
    schedule on, not a measurement of any capsule)."""
    pages = []
    for _ in range(n):
        if rng.random() < STILL:
            pages.append(Page(None, ()))
            continue
        mean = math.exp(rng.uniform(math.log(fastest), math.log(slowest)))
        changes = []
        t = rng.expovariate(1 / mean)
        while t < horizon:
            changes.append(t)
            t += rng.expovariate(1 / mean)
        pages.append(Page(mean, tuple(changes)))
    return pages


# --------------------------------------------------------------------------- the simulation


@dataclass
class Tally:
    """What a schedule spent and got, summed over pages."""

    pages: int = 0
    requests: int = 0
    changes: int = 0  # changes made in the horizon
    seen: int = 0  # of which the new version was fetched
    changing: int = 0  # pages that changed in the horizon
    shares: float = 0.0  # the sum of their shares of changes seen
    fresh: float = 0.0  # page-seconds the stored copy was the live page
    age: float = 0.0  # the integral over page-time of how long the stored copy had been stale

    def add(self, other: Tally) -> None:
        for name in ("pages", "requests", "changes", "seen", "changing", "shares", "fresh", "age"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def figures(self, horizon: float) -> dict[str, Any]:
        span = self.pages * horizon
        return {
            "pages": self.pages,
            "requests": self.requests,
            "changes": self.changes,
            "seen": self.seen,
            "share_seen": self.seen / self.changes if self.changes else None,
            "page_share_seen": self.shares / self.changing if self.changing else None,
            "freshness": self.fresh / span if span else None,
            "mean_age_h": self.age / span / HOUR if span else None,
        }


def visit(page: Page, horizon: float, revisit_min: float, revisit_max: float) -> Tally:
    """Visit ``page`` over ``[0, horizon)`` as the crawler schedules it: first at 0, then each
    ``next_interval`` after the last, ``changed`` meaning the version differs from the last
    visit's (a first visit has changed, as in the crawler)."""
    changes = page.changes
    tally = Tally(pages=1, changes=len(changes))
    t, last, previous = 0.0, None, -1
    seen = set()
    while t < horizon:
        version = bisect.bisect_right(changes, t)  # versions 0..len(changes); version v from changes[v-1]
        seen.add(version)
        last = next_interval(last, version != previous, None, revisit_min, revisit_max, 0.0)
        following = min(t + last, horizon)
        stale_from = min(changes[version], following) if version < len(changes) else following
        tally.requests += 1
        tally.fresh += stale_from - t
        tally.age += (following - stale_from) ** 2 / 2
        t, previous = t + last, version
    tally.seen = len(seen) - (0 in seen)
    if changes:
        tally.changing, tally.shares = 1, tally.seen / len(changes)
    return tally


def simulate(
    pages: Sequence[Page], horizon: float, revisit_min: float, revisit_max: float
) -> dict[str, Tally]:
    """Each kind of page's tally, and ``"all"``."""
    tallies = {kind: Tally() for kind in (*KINDS, "all")}
    for page in pages:
        tally = visit(page, horizon, revisit_min, revisit_max)
        tallies[page.kind].add(tally)
        tallies["all"].add(tally)
    return tallies


def fixed_interval(requests: int, pages: int, horizon: float) -> float:
    """The interval T at which visiting every page from time 0 spends closest to ``requests``.

    A page gets k visits in the horizon for T = horizon / (k - 0.5) (visit k-1 falls half an
    interval before the end, so rounding cannot add or drop one); the two k around
    ``requests / pages`` are tried and each one's count is taken from :func:`visit` itself."""
    around = requests / pages
    best = min(
        (horizon / (k - 0.5) for k in {max(1, math.floor(around)), max(1, math.ceil(around))}),
        key=lambda t: abs(pages * visit(Page(None, ()), horizon, t, t).requests - requests),
    )
    return best


@dataclass(frozen=True)
class Comparison:
    """One setting: the adaptive schedule and the fixed one at its budget."""

    revisit_min: float
    revisit_max: float
    fixed: float
    adaptive_tallies: dict[str, Tally] = field(repr=False)
    fixed_tallies: dict[str, Tally] = field(repr=False)

    def figures(self, horizon: float) -> dict[str, Any]:
        a = self.adaptive_tallies["all"].figures(horizon)
        f = self.fixed_tallies["all"].figures(horizon)
        return {
            "revisit_min_s": self.revisit_min,
            "revisit_max_s": self.revisit_max,
            "fixed_interval_s": self.fixed,
            "adaptive": a,
            "fixed": f,
            "adaptive_over_fixed": {key: _ratio(a[key], f[key]) for key in RATIOS},
            "by_kind": {kind: {"adaptive": self.adaptive_tallies[kind].figures(horizon),
                               "fixed": self.fixed_tallies[kind].figures(horizon)} for kind in KINDS},
        }  # fmt: skip


def compare(pages: Sequence[Page], horizon: float, revisit_min: float, revisit_max: float) -> Comparison:
    adaptive = simulate(pages, horizon, revisit_min, revisit_max)
    fixed = fixed_interval(adaptive["all"].requests, len(pages), horizon)
    return Comparison(revisit_min, revisit_max, fixed, adaptive, simulate(pages, horizon, fixed, fixed))


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


# --------------------------------------------------------------------------- printing


def duration(seconds: float) -> str:
    """``seconds`` in the largest unit that keeps it readable: 1 d, 2.42 d, 8 h, 16 s."""
    for unit, size in (("d", DAY), ("h", HOUR), ("m", 60.0), ("s", 1.0)):
        if seconds >= size or unit == "s":
            return f"{seconds / size:.3g} {unit}"
    raise AssertionError


def show(comparison: Comparison, horizon: float, kinds: bool) -> None:
    """The comparison as a table; with ``kinds``, another by how often pages change."""
    fig = comparison.figures(horizon)
    a, f, r = fig["adaptive"], fig["fixed"], fig["adaptive_over_fixed"]
    lo, hi = duration(comparison.revisit_min), duration(comparison.revisit_max)
    print(f"{'schedule':<24}{'requests':>11}{'changes seen':>20}{'per page':>14}{'freshness':>11}"
          f"{'mean age':>10}")  # fmt: skip
    for name, x in ((f"adaptive {lo} to {hi}", a), (f"fixed every {duration(comparison.fixed)}", f)):
        seen = f"{x['seen']:,} ({x['share_seen']:.1%})"
        print(f"{name:<24}{x['requests']:>11,}{seen:>20}{x['page_share_seen']:>14.1%}{x['freshness']:>11.1%}"
              f"{x['mean_age_h']:>8.2f} h")  # fmt: skip
    print(f"{'adaptive / fixed':<24}{_x(r['requests'], 3):>11}{_x(r['seen']):>20}"
          f"{_x(r['page_share_seen']):>14}{_x(r['freshness']):>11}{_x(r['mean_age_h']):>10}")  # fmt: skip
    if abs(r["requests"] - 1) > 0.01:
        print("(the fixed interval could not match the budget within 1%: compare the requests too)")
    if kinds:
        print(f"\n{'pages changing':<16}{'pages':>7}{'changes':>11}{'requests a / f':>22}"
              f"{'changes seen a / f':>22}{'freshness a / f':>19}")  # fmt: skip
        for kind, both in fig["by_kind"].items():
            x, y = both["adaptive"], both["fixed"]
            seen = "-" if not x["changes"] else f"{x['share_seen']:.1%} / {y['share_seen']:.1%}"
            print(f"{'never' if kind == 'never' else 'every ' + kind:<16}{x['pages']:>7,}{x['changes']:>11,}"
                  f"{x['requests']:>12,} / {y['requests']:>7,}{seen:>22}"
                  f"{x['freshness']:>10.1%} / {y['freshness']:.1%}")  # fmt: skip


def setting(text: str) -> tuple[float, float]:
    """``MIN:MAX`` (intervals as ``manners crawl --revisit-min`` reads them) for argparse."""
    low, sep, high = text.partition(":")
    try:
        if not sep:
            raise ValueError(f"{text!r} is not MIN:MAX")
        pair = parse_interval(low), parse_interval(high)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if pair[0] > pair[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: the minimum is above the maximum")
    return pair


def simulation(args: argparse.Namespace) -> None:
    horizon = args.days * DAY
    started = time.perf_counter()
    pages = capsule(args.pages, horizon, random.Random(args.seed), HOUR, YEAR)
    comparisons = [
        compare(pages, horizon, low, high) for low, high in args.setting or [(REVISIT_MIN, REVISIT_MAX)]
    ]
    took = time.perf_counter() - started
    changes, still = sum(len(p.changes) for p in pages), sum(p.mean is None for p in pages)
    if args.json:
        print(json.dumps({"pages": args.pages, "still": still, "changes": changes, "days": args.days,
                          "seed": args.seed, "seconds": round(took, 2),
                          "settings": [c.figures(horizon) for c in comparisons]}, indent=2))  # fmt: skip
        return
    print(f"capsule: {args.pages:,} pages, {still:,} never change, the rest as"
          f" Poisson processes (mean interval 1 h to 1 y, log-uniform); {changes:,} changes in"
          f" {args.days:g} days; seed {args.seed}")  # fmt: skip
    for i, c in enumerate(comparisons):
        print()
        show(c, horizon, kinds=i == 0)
    print(f"\n({took:.1f} s)")


# --------------------------------------------------------------------------- live


@dataclass(frozen=True)
class LivePage:
    """A page of the live capsule: its file, and when this script rewrites it."""

    name: str  # the file, p00.gmi ...
    mean: float | None  # mean seconds between changes; None: it never changes
    changes: tuple[float, ...]  # seconds after the crawl's start

    def body(self, version: int) -> bytes:
        return f"# {self.name}\n\nversion {version}\n".encode()


class Rewriter(threading.Thread):
    """Rewrites each page's file at its change times (atomically: jetforce never serves half a
    file) and logs when each version went live, by the clock ``pages.jsonl`` uses."""

    def __init__(self, root: Path, pages: Sequence[LivePage]) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.events = sorted((t, p.name, v + 1) for p in pages for v, t in enumerate(p.changes))
        self.live: dict[str, list[float]] = {p.name: [0.0] for p in pages}  # version v went live at [v]
        self.pages = {p.name: p for p in pages}
        self.stopping = threading.Event()
        self.start_wall = 0.0
        for p in pages:
            self.write(p, 0)

    def write(self, page: LivePage, version: int) -> None:
        tmp = self.root / f".{page.name}.tmp"
        tmp.write_bytes(page.body(version))
        os.replace(tmp, self.root / page.name)

    def begin(self) -> None:
        self.start_wall = time.time()
        for times in self.live.values():
            times[0] = self.start_wall
        self.start()

    def run(self) -> None:
        start = time.monotonic()
        for offset, name, version in self.events:
            if self.stopping.wait(max(0.0, start + offset - time.monotonic())):
                return
            self.write(self.pages[name], version)
            self.live[name].append(time.time())


def live_capsule(n: int, rng: random.Random, seconds: float) -> list[LivePage]:
    """``n`` pages changing as :func:`capsule`'s do, on a scale of seconds: 0.5 s to 10 min."""
    return [
        LivePage(f"p{i:02d}.gmi", p.mean, p.changes)
        for i, p in enumerate(capsule(n, seconds + 60, rng, 0.5, 600.0))
    ]


def crawl_command(url: str, out: Path, revisit_min: str, revisit_max: str) -> list[str]:
    return [sys.executable, "-m", "manners", "crawl", url, "--agent", "benchbot", "--out", str(out),
            "--allow-private", "--min-delay", "0", "--cache", "memory",
            "--revisit", "--revisit-min", revisit_min, "--revisit-max", revisit_max]  # fmt: skip


def live_run(
    where: Path, pages: Sequence[LivePage], seconds: float, revisit: tuple[str, str]
) -> dict[str, Any]:
    """One crawl of a fresh copy of the capsule, stopped after ``seconds``; its figures."""
    root, out = where / "capsule", where / "out"
    root.mkdir(parents=True)
    (root / "robots.txt").write_text("User-agent: *\nDisallow:\n")
    (root / "index.gmi").write_text("# The capsule\n\n" + "".join(f"=> {p.name}\n" for p in pages))
    rewriter = Rewriter(root, pages)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    with servers.jetforce(root) as port, open(where / "crawl.log", "wb") as log:
        cmd = crawl_command(f"gemini://localhost:{port}/", out, *revisit)
        rewriter.begin()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        try:
            time.sleep(seconds)
            stop = time.time()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        finally:
            rewriter.stopping.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    rewriter.join()
    if code != 0:
        tail = (where / "crawl.log").read_text(errors="replace")[-2000:]
        print(f"manners crawl exited {code} after SIGTERM (0 expected); it said:\n{tail}", file=sys.stderr)
    return {"exit": code, "revisit_min": revisit[0], "revisit_max": revisit[1],
            **live_figures(out / "pages.jsonl", pages, rewriter, stop)}  # fmt: skip


def live_figures(jsonl: Path, pages: Sequence[LivePage], rewriter: Rewriter, stop: float) -> dict[str, Any]:
    """Requests, changes seen and freshness, from what the crawler wrote and the rewriter's log."""
    start = rewriter.start_wall
    versions = {
        hashlib.sha256(p.body(v)).hexdigest(): (p.name, v) for p in pages for v in range(len(p.changes) + 1)
    }
    fetches: dict[str, list[tuple[float, int]]] = {p.name: [] for p in pages}
    requests = unknown = disagree = 0
    first: list[float] = []
    for line in jsonl.read_text().splitlines() if jsonl.exists() else []:
        record = json.loads(line)
        name = str(record["url"]).rsplit("/", 1)[-1]
        if name not in fetches:
            continue  # the index page
        requests += 1
        if record["outcome"] != "fetched" or record.get("sha256") not in versions:
            unknown += 1
            continue
        _, version = versions[record["sha256"]]
        at = datetime.fromisoformat(str(record["fetched_at"]).replace("Z", "+00:00")).timestamp()
        history = fetches[name]
        if "changed" in record and record["changed"] != (not history or history[-1][1] != version):
            disagree += 1
        if not history:
            first.append(at - start)
        history.append((at, version))
    changes = seen = 0
    fresh = 0.0
    for name, history in fetches.items():
        live = [t for t in rewriter.live[name] if t < stop]  # versions that went live before the stop
        changes += len(live) - 1
        seen += len({v for _, v in history} - {0})
        for (at, version), following in zip(history, [t for t, _ in history[1:]] + [stop], strict=True):
            replaced = live[version + 1] if version + 1 < len(live) else stop
            fresh += max(0.0, min(replaced, following, stop) - at)
    return {"requests": requests, "not_a_version": unknown, "changed_flag_disagrees": disagree,
            "changes": changes, "seen": seen, "share_seen": seen / changes if changes else None,
            "freshness": fresh / (len(pages) * (stop - start)),
            "first_visit_s": sum(first) / len(first) if first else None}  # fmt: skip


def live(args: argparse.Namespace) -> None:
    pages = live_capsule(args.live_pages, random.Random(args.seed), args.live_seconds)
    n, seconds = len(pages), args.live_seconds
    with tempfile.TemporaryDirectory(prefix="manners-freshness-") as tmp:
        adaptive = live_run(Path(tmp) / "adaptive", pages, seconds, (args.live_min, args.live_max))
        # each page: a first visit, then one every T until the stop: k visits a page, as in
        # fixed_interval, when the k-th would fall half an interval after the stop
        first = adaptive["first_visit_s"] or 0.0
        t = (seconds - first) / (max(1, round(adaptive["requests"] / n)) - 0.5)
        fixed = live_run(Path(tmp) / "fixed", pages, seconds, (f"{t:.2f}", f"{t:.2f}"))
    keys = ("requests", "seen", "share_seen", "freshness")
    result = {"pages": n, "still": sum(p.mean is None for p in pages), "seconds": seconds, "seed": args.seed,
              "adaptive": adaptive, "fixed": fixed,
              "adaptive_over_fixed": {k: _ratio(adaptive[k], fixed[k]) for k in keys}}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"live capsule: {n} pages on jetforce, {result['still']} never change, the rest rewritten as Poisson"
        f" processes (mean interval 0.5 s to 10 min); {seconds:g} s of crawl each; seed {args.seed}\n"
    )
    print(f"{'schedule':<26}{'requests':>10}{'changes seen':>20}{'freshness':>11}   exit")
    for name, x in ((f"adaptive {args.live_min} s to {args.live_max} s", adaptive),
                    (f"fixed every {fixed['revisit_min']} s", fixed)):  # fmt: skip
        share = f"{x['share_seen']:.1%}" if x["share_seen"] is not None else "-"
        seen = f"{x['seen']} of {x['changes']} ({share})"
        print(f"{name:<26}{x['requests']:>10,}{seen:>20}"
              f"{x['freshness']:>11.1%}   {x['exit']}")  # fmt: skip
    r = result["adaptive_over_fixed"]
    print(f"{'adaptive / fixed':<26}{_x(r['requests']):>10}{_x(r['seen']):>20}{_x(r['freshness']):>11}")
    for name, x in (("adaptive", adaptive), ("fixed", fixed)):
        if x["not_a_version"] or x["changed_flag_disagrees"]:
            print(
                f"{name}: {x['not_a_version']} requests got no known version, "
                f"{x['changed_flag_disagrees']} 'changed' flags disagree with the bodies"
            )


def _x(ratio: float | None, digits: int = 2) -> str:
    return "-" if ratio is None else f"{ratio:.{digits}f}x"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--days", type=float, default=365.0, help="the horizon (default: 365)")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--setting", type=setting, action="append", metavar="MIN:MAX",
                    help="--revisit-min:--revisit-max to compare (repeatable; default: 1d:30d)")  # fmt: skip
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--live", action="store_true", help="crawl a real capsule with manners crawl --revisit")
    ap.add_argument("--live-pages", type=int, default=40)
    ap.add_argument("--live-seconds", type=float, default=60.0, help="wall time of each crawl (default: 60)")
    ap.add_argument("--live-min", default="1", help="--revisit-min of the live crawl (default: 1)")
    ap.add_argument("--live-max", default="16", help="--revisit-max of the live crawl (default: 16)")
    args = ap.parse_args(None if argv is None else list(argv))
    (live if args.live else simulation)(args)


if __name__ == "__main__":
    main()
