"""Benchmark: ``manners watch`` on million-line logs, side by side with GoAccess on the Web one.

Two logs are drawn from ``--seed`` (and kept in ~/.cache/manners-watch/seed-S-L, so a rerun
does not draw them again), each ``--lines`` long (default 1,000,000), in time order over a day:

- web.log, nginx ``combined``: 10,000 clients, 2,000 of them robots (each a product token of
  its own among 500, several addresses sharing one), the other 8,000 people browsing (a page and
  its images, then a pause: never more than a person's pace).  Its robots.txt has 2,000 rules,
  a quarter with wildcards (``*``, ``$``), in a ``*`` group and 20 groups of named robots, with a
  Crawl-delay of 2.  Of the robots, 1,900 are polite (robots.txt first and again within a day,
  only allowed pages, spaced at least the delay); 100 are rude, a third of each: one never
  reads robots.txt and asks disallowed pages, one reads it and asks disallowed pages anyway,
  one reads it and ignores the Crawl-delay (three requests in a second).
- gemini.log, jetforce's format: 5,000 clients, 1,000 robots (50 rude the same ways), a
  robots.txt with ``*`` and the virtual agents' groups, a Crawl-delay of 2.

Timed end to end, each as a fresh process (the wall clock from start to exit, the peak RSS from
the kernel's accounting of that child): ``manners watch web.log --robots ... --json``,
GoAccess (Debian's ``goaccess``) on the same web.log writing its JSON report, and ``manners
watch gemini.log``.  Memory growth: ``manners watch`` on the first tenth of web.log too, so
the peak RSS at a tenth of the lines and at all of them can be set against the clients each
held.  The bench checks what it times: the robots ``manners watch`` calls impolite must be
exactly the rude ones drawn, and no polite one.

Targets (issue 34): manners at least 1.0x GoAccess's lines per second on web.log; at least
250,000 lines per second on gemini.log; peak RSS at most 200 MiB at 1,000,000 lines.

Run: .venv/bin/python bench/watch.py [--lines 1000000] [--seed 1] [--out watch-out]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANNERS = [sys.executable, "-m", "manners"]
DAY = 86400.0
START = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
SINCE = "2026-10-01"  # the robots.txt was in force from then: every request is judged by it
DELAY = 2  # the Crawl-delay of both robots.txt files
RUDE_KINDS = ("no-robots", "disallowed", "fast")
TARGET_RATIO = 1.0  # of GoAccess's lines per second, on web.log
TARGET_GEMINI = 250_000  # lines per second on gemini.log
TARGET_RSS_MIB = 200.0


@dataclass
class Drawn:
    """A log and what was drawn into it: which clients are rude (and how)."""

    path: Path
    robots: Path
    lines: int
    clients: int
    rude: dict[str, str] = field(default_factory=dict)  # client address: how it is rude


# ------------------------------------------------------------------------------- the robots.txt


def web_robots(rng: random.Random) -> str:
    """2,000 rules: a ``*`` group of 1,600 and 20 named groups of 20; a quarter wildcards.  Every
    rule is under /d (so /pub, where polite robots and people go, is allowed for everyone)."""
    out = ["User-agent: *"]
    for i in range(1600):
        out.append(_rule(rng, i))
    out.append(f"Crawl-delay: {DELAY}")
    for g in range(20):
        out += ["", f"User-agent: named{g}"]
        out += [_rule(rng, 1600 + g * 20 + j) for j in range(19)]
        out += ["Disallow: /d", f"Crawl-delay: {DELAY}"]
    return "\n".join(out) + "\n"


def _rule(rng: random.Random, i: int) -> str:
    if i % 4 == 0:
        return rng.choice([f"Disallow: /d{i}/*.pdf$", f"Disallow: /d*/{i}/print", f"Disallow: /d{i}*?sid="])
    if i % 9 == 0:
        return f"Allow: /d{i}/open/"
    return f"Disallow: /d{i}/"


#: Rules of the * group that are a plain ``Disallow: /dN/`` (what rude robots ask for).
PLAIN = [i for i in range(1600) if i % 4 and i % 9]


def gemini_robots() -> str:
    return (
        "User-agent: *\nDisallow: /d/\nDisallow: /*.zip$\nCrawl-delay: 2\n\n"
        "User-agent: archiver\nDisallow: /d/\nDisallow: /big/\n\n"
        "User-agent: indexer\nDisallow: /d/\nDisallow: /search\n"
    )


# ------------------------------------------------------------------------------- the clients


def _address(n: int) -> str:
    return f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


def robot(rng: random.Random, requests: int, rude: str | None, gemini: bool) -> Iterator[tuple[float, str]]:
    """(time, path) of one robot's requests, from a start in the first hour."""
    t = START + rng.uniform(0, 3600)
    if rude == "no-robots":  # past a person's pace on the Web (120 in a minute) even in a short log
        requests = max(requests, 150)
    else:
        yield t, "/robots.txt"
        t += rng.uniform(DELAY, DELAY + 3)
    fetched = t
    burst = 0
    for n in range(requests):
        if rude != "no-robots" and t - fetched > DAY * 0.8:  # read it again within the day
            yield t, "/robots.txt"
            fetched = t
            t += DELAY + rng.uniform(0, 2)
        if rude in ("no-robots", "disallowed") and n % 10 == 3:
            path = f"/d/{n}.gmi" if gemini else f"/d{rng.choice(PLAIN)}/x{n}.html"
        else:
            path = f"/pub/{rng.randrange(100_000)}.gmi" if gemini else f"/pub/{rng.randrange(100_000)}.html"
        yield t, path
        if rude == "no-robots":  # a robot by its pace alone: faster than any person
            t += rng.uniform(0.2, 0.4)
        elif rude == "fast" and burst < 2:
            burst += 1
            t += rng.uniform(0.0, 0.3)
        else:
            burst = 0
            t += DELAY + rng.expovariate(1 / (60 if gemini else 150))


def person(rng: random.Random, requests: int) -> Iterator[tuple[float, str]]:
    """A person's visits: a page and up to five of its images at once, then minutes of reading."""
    t = START + rng.uniform(0, DAY / 2)  # all begun before the log is cut at its length
    made = 0
    while made < requests:
        yield t, f"/pub/{rng.randrange(100_000)}.html"
        made += 1
        for k in range(min(rng.randrange(6), requests - made)):
            yield t + 0.1 * (k + 1), f"/pub/static/{rng.randrange(500)}.png"
            made += 1
        t += rng.uniform(30, 600)


def _merged(streams: list[tuple[int, Iterator[tuple[float, str]]]]) -> Iterator[tuple[float, int, str]]:
    """Every client's requests in time order: (time, client, path)."""
    return heapq.merge(*(_tagged(c, s) for c, s in streams))


def _tagged(client: int, stream: Iterator[tuple[float, str]]) -> Iterator[tuple[float, int, str]]:
    for t, path in stream:
        yield t, client, path


def draw_web(out: Path, lines: int, seed: int) -> Drawn:
    rng = random.Random(seed)
    robots = out / "robots-web.txt"
    robots.write_text(web_robots(rng))
    n_robots, n_people, n_rude = 2000, 8000, 100
    robot_share = 0.6
    per_robot = max(1, int(lines * robot_share / n_robots))
    per_person = max(1, (lines - per_robot * n_robots) * 11 // 10 // n_people)  # some over: cut at lines
    drawn = Drawn(out / "web.log", robots, 0, n_robots + n_people)
    agents: dict[int, str] = {}
    streams: list[tuple[int, Iterator[tuple[float, str]]]] = []
    for c in range(n_robots):
        rude = RUDE_KINDS[c % 3] if c < n_rude else None
        if rude:
            drawn.rude[_address(c)] = rude
        token = f"named{c % 20}" if c % 25 == 24 else f"crawler{c % 500}"
        agents[c] = f"{token.capitalize()}/2.{c % 7} (+https://{token}.example/bot)"
        streams.append((c, robot(rng, per_robot, rude, gemini=False)))
    browsers = [
        "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0",
    ]
    for c in range(n_robots, n_robots + n_people):
        agents[c] = browsers[c % 2]
        streams.append((c, person(rng, per_person)))
    addresses = {c: _address(c) for c in agents}

    def line(c: int, stamp: str, path: str, second: int) -> str:
        size = 200 + (c * 7919 + second) % 30000
        return f'{addresses[c]} - - [{stamp}] "GET {path} HTTP/1.1" 200 {size} "-" "{agents[c]}"\n'

    return _written(drawn, streams, lines, line)


def draw_gemini(out: Path, lines: int, seed: int) -> Drawn:
    rng = random.Random(seed + 1)
    robots = out / "robots-gemini.txt"
    robots.write_text(gemini_robots())
    n_robots, n_people, n_rude = 1000, 4000, 50
    per_robot = max(1, int(lines * 0.8 / n_robots))
    per_person = max(1, (lines - per_robot * n_robots) * 11 // 10 // n_people)  # some over: cut at lines
    drawn = Drawn(out / "gemini.log", robots, 0, n_robots + n_people)
    streams: list[tuple[int, Iterator[tuple[float, str]]]] = []
    for c in range(n_robots):
        rude = RUDE_KINDS[c % 3] if c < n_rude else None
        if rude:
            drawn.rude[_address(c)] = rude
        streams.append((c, robot(rng, per_robot, rude, gemini=True)))
    for c in range(n_robots, n_robots + n_people):
        streams.append((c, person(rng, per_person)))

    def line(c: int, stamp: str, path: str, second: int) -> str:
        size = (c * 31 + second) % 26000
        return f'{_address(c)} [{stamp}] "gemini://capsule.example{path}" 20 "text/gemini" {size}\n'

    return _written(drawn, streams, lines, line)


def _written(
    drawn: Drawn,
    streams: list[tuple[int, Iterator[tuple[float, str]]]],
    lines: int,
    line: Callable[[int, str, str, int], str],
) -> Drawn:
    """Every client's requests, in time order, written to ``drawn.path`` as ``line`` makes them
    (client, the time as logged, path, the second), to ``lines`` of them."""
    stamps: dict[int, str] = {}
    with drawn.path.open("w") as f:
        for t, c, path in _merged(streams):
            second = int(t)
            stamp = stamps.get(second)
            if stamp is None:
                stamps.clear()
                stamp = stamps[second] = datetime.fromtimestamp(second, UTC).strftime(
                    "%d/%b/%Y:%H:%M:%S +0000"
                )
            f.write(line(c, stamp, path, second))
            drawn.lines += 1
            if drawn.lines >= lines:
                break
    return drawn


def drawn_logs(lines: int, seed: int) -> tuple[Drawn, Drawn]:
    """The two logs, drawn once per seed and size and kept."""
    cache = (
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "manners-watch"
        / f"seed-{seed}-{lines}"
    )
    facts = cache / "drawn.json"
    if facts.exists():
        saved = json.loads(facts.read_text())
        return tuple(  # type: ignore[return-value]
            Drawn(Path(d["path"]), Path(d["robots"]), d["lines"], d["clients"], d["rude"]) for d in saved
        )
    cache.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    web, gemini = draw_web(cache, lines, seed), draw_gemini(cache, lines, seed)
    saved = [
        {"path": str(d.path), "robots": str(d.robots), "lines": d.lines, "clients": d.clients, "rude": d.rude}
        for d in (web, gemini)
    ]
    facts.write_text(json.dumps(saved))
    print(f"drew the logs in {time.monotonic() - started:.0f} s, into {cache}", file=sys.stderr)
    return web, gemini


# ------------------------------------------------------------------------------- the runs


@dataclass
class Timed:
    seconds: float
    rss_mib: float
    status: int


def timed(argv: list[str], stdout: Path) -> Timed:
    """Run ``argv`` to its end, its output into ``stdout``: wall seconds, peak RSS, exit status."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with stdout.open("wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {err[-2000:]}")
    return Timed(seconds, usage.ru_maxrss / 1024, proc.returncode)


def watch(log: Path, robots: Path, out: Path) -> tuple[Timed, dict]:
    run = timed([*MANNERS, "watch", str(log), "--robots", f"{robots}@{SINCE}", "--json"], out)
    return run, json.loads(out.read_text())


def named(report: dict) -> set[str]:
    return {r["client"] for r in report["robots"] if r["verdict"] == "impolite"}


def clients(report: dict) -> int:
    return len({(r["client"], r.get("token")) for r in report["robots"]}) + report["others"]["clients"]


def check(drawn: Drawn, report: dict) -> list[str]:
    """What ``manners watch`` got wrong about the drawn log: the rude it missed, the polite it charged."""
    found = named(report)
    wrong = [
        f"rude {c} ({how}) not called impolite" for c, how in sorted(drawn.rude.items()) if c not in found
    ]
    wrong += [f"polite {c} called impolite" for c in sorted(found - set(drawn.rude))]
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("watch-out"))
    args = parser.parse_args()
    goaccess = shutil.which("goaccess")
    if goaccess is None:
        raise SystemExit("bench/watch.py needs GoAccess: apt-get install goaccess (scripts/setup does)")
    args.out.mkdir(parents=True, exist_ok=True)
    web, gemini = drawn_logs(args.lines, args.seed)
    tenth = args.out / "web-tenth.log"
    with web.path.open() as f, tenth.open("w") as t:
        for n, line in enumerate(f):
            if n >= web.lines // 10:
                break
            t.write(line)

    ours_web, web_report = watch(web.path, web.robots, args.out / "watch-web.json")
    theirs = timed([goaccess, str(web.path), "--log-format=COMBINED", "--no-global-config", "-o",
                    str(args.out / "goaccess.json")], args.out / "goaccess.out")  # fmt: skip
    ours_gemini, gemini_report = watch(gemini.path, gemini.robots, args.out / "watch-gemini.json")
    ours_tenth, tenth_report = watch(tenth, web.robots, args.out / "watch-tenth.json")

    wrong = check(web, web_report) + check(gemini, gemini_report)
    rate = {
        "manners web": web.lines / ours_web.seconds,
        "goaccess web": web.lines / theirs.seconds,
        "manners gemini": gemini.lines / ours_gemini.seconds,
    }
    figures = {
        "lines": {"web": web.lines, "gemini": gemini.lines, "web tenth": web.lines // 10},
        "seconds": {"manners web": ours_web.seconds, "goaccess web": theirs.seconds,
                    "manners gemini": ours_gemini.seconds, "manners web tenth": ours_tenth.seconds},
        "lines per second": rate,
        "ratio to goaccess": rate["manners web"] / rate["goaccess web"],
        "peak rss MiB": {"manners web": ours_web.rss_mib, "goaccess web": theirs.rss_mib,
                         "manners gemini": ours_gemini.rss_mib, "manners web tenth": ours_tenth.rss_mib},
        "clients": {"web": clients(web_report), "web tenth": clients(tenth_report),
                    "gemini": clients(gemini_report)},
        "impolite named": {"web": len(named(web_report)), "gemini": len(named(gemini_report))},
        "rude drawn": {"web": len(web.rude), "gemini": len(gemini.rude)},
        "wrong": wrong,
        "machine": f"{os.cpu_count()} CPUs, {_mem_gib():.0f} GiB; Python {sys.version.split()[0]}",
    }  # fmt: skip
    (args.out / "report.json").write_text(json.dumps(figures, indent=2))
    _print(figures)
    met = (
        figures["ratio to goaccess"] >= TARGET_RATIO
        and rate["manners gemini"] >= TARGET_GEMINI
        and max(ours_web.rss_mib, ours_gemini.rss_mib) <= TARGET_RSS_MIB
    )
    print(f"targets {'met' if met else 'NOT met'}; checks {'passed' if not wrong else 'FAILED'}")
    return 0 if not wrong else 1


def _mem_gib() -> float:
    with open("/proc/meminfo") as f:
        return int(f.readline().split()[1]) / 2**20


def _print(f: dict) -> None:
    sec, rss = f["seconds"], f["peak rss MiB"]
    print(f"{'run':<22}{'lines':>10}{'seconds':>10}{'lines/s':>12}{'peak RSS':>12}")
    rows = [("manners web", "web"), ("goaccess web", "web"), ("manners gemini", "gemini"),
            ("manners web tenth", "web tenth")]  # fmt: skip
    for name, log in rows:
        lines = f["lines"][log]
        print(f"{name:<22}{lines:>10,}{sec[name]:>10.2f}{lines / sec[name]:>12,.0f}{rss[name]:>9.1f} MiB")
    print(f"manners / GoAccess on web.log: {f['ratio to goaccess']:.2f}x (target {TARGET_RATIO:.1f}x)")
    print(f"clients: web {f['clients']['web']:,}, its first tenth {f['clients']['web tenth']:,}; "
          f"gemini {f['clients']['gemini']:,}")  # fmt: skip
    print(f"impolite named: web {f['impolite named']['web']} of {f['rude drawn']['web']} rude drawn; "
          f"gemini {f['impolite named']['gemini']} of {f['rude drawn']['gemini']}")  # fmt: skip
    for w in f["wrong"][:20]:
        print("  wrong:", w)


if __name__ == "__main__":
    sys.exit(main())
