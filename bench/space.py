"""Benchmark: Geminispace in a box, crawled by ``manners crawl`` and held to its ideal schedule.

A space of N Gemini capsules and M Gopher holes (default 4,000 and 400; ``--small`` 400
and 40) is drawn from ``--seed`` (its shape: bench/space_model.py's docstring), each host a
name of its own on an address of its own in 127.0.0.0/8, inside a network namespace this
bench makes (``unshare -n -m``: only ``lo``, and a private mount namespace where the
space's hosts file is bind-mounted over /etc/hosts, so the crawler resolves the names as it
always does).  A few server processes (``--servers``, bench/space_servers.py) answer for
all of them and log every request.  Every name has a certificate of its own (self-signed,
one key; kept in ~/.cache/manners-space/seed-S, so a rerun does not make them again).

Time is compressed by one factor (``--factor``, default 50) for everything: ``--min-delay``
1 s is 20 ms, a Crawl-delay of 10 is served as 0.2, a round trip of 60 ms takes 1.2 ms,
robots.txt's backoff of 60 s is 1.2 s; a ``44``'s wait is whole seconds on the wire (1 or 2:
50 or 100 s of the small net).  The crawl's timeout is 10 s.

The ideal schedule (bench/space_checks.py): every host busy from the start, each request
its spacing after the one before; the lower bound is the longest host, or every request
at the bare fetch loop's rate (bench/space_bare.py, the same hosts, no politeness: what the
CPU allows), whichever is larger.  Then the real crawl: one process on SQLite, and with
``--workers 2,4`` a fleet on a redis-server in the namespace; the servers' logs are checked
(every allowed page once, nothing disallowed, one request at a time per host, no gap under
the spacing) and the figures written to OUT/report.json and OUT/space.png.

With ``--kill-at S`` the single process is also run SIGKILLed S seconds in and resumed at once
by the same command (its makespan counted from the first start; a page in flight at the kill
may be asked again, and is counted; a connection the kill cut before its request asked nothing).

Run: .venv/bin/python bench/space.py --small [--seed 1] [--workers 2,4] [--kill-at S] [--out space-out]
     .venv/bin/python bench/space.py --hosts 36 --holes 4 --cap 40     (a quick look)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from space_checks import Crawl, Plan, Request, Verdict, check, is_page, plan, read_logs  # noqa: E402
from space_model import FACTOR, Space, build  # noqa: E402

INSIDE = "MANNERS_SPACE_INSIDE"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "manners-space"
PYTHON = sys.executable
SRC = HERE.parent / "src"


# -- certificates --------------------------------------------------------------------------


def certificates(space: Space, cache: Path = CACHE) -> Path:
    """A certificate per capsule name (an expired one for the expired), made once per seed."""
    where = cache / f"seed-{space.seed}"
    where.mkdir(parents=True, exist_ok=True)
    key = where / "key.pem"
    if not key.exists():
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key))
    todo = []
    for h in space.capsules:
        if h.fault == "dead":
            continue
        out = where / (f"{h.name}.expired.pem" if h.fault == "expired" else f"{h.name}.pem")
        if not out.exists():
            todo.append((h.name, out, h.fault == "expired"))

    def make(item: tuple[str, Path, bool]) -> None:
        name, out, expired = item
        tmp = out.with_suffix(".tmp")
        subj = ["-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"]
        if expired:  # valid until yesterday: x509 -days -1
            csr = out.with_suffix(".csr")
            _openssl("req", "-new", "-key", str(key), *subj, "-out", str(csr))
            _openssl("x509", "-req", "-in", str(csr), "-signkey", str(key), "-days", "-1", "-out", str(tmp))
            csr.unlink()
        else:
            _openssl("req", "-x509", "-new", "-key", str(key), *subj, "-days", "3650", "-out", str(tmp))
        tmp.rename(out)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(make, todo))
    return where


def _openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"openssl {args[0]} failed: {done.stderr.strip()[-300:]}")


# -- the namespace -------------------------------------------------------------------------


def in_namespace(
    hosts_file: Path, argv: list[str], env: dict[str, str] | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in a network namespace of its own (``lo`` up) with ``hosts_file`` as /etc/hosts."""
    script = 'ip link set lo up && mount --bind "$0" /etc/hosts && exec "$@"'
    cmd = ["unshare", "-n", "-m", "sh", "-c", script, str(hosts_file), *argv]
    proc = subprocess.Popen(
        cmd,
        env={**os.environ, **(env or {}), INSIDE: "1"},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise SystemExit(f"the bench took more than {timeout:g} s:\n{err[-2000:]}") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


class Servers:
    """The space's server processes, a fresh set (and fresh logs) for each run."""

    def __init__(self, args: argparse.Namespace, certs: Path, work: Path) -> None:
        self.args, self.certs, self.work = args, certs, work
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def __enter__(self) -> Servers:
        a = self.args
        self.work.mkdir(parents=True, exist_ok=True)
        readies = []
        for shard in range(a.servers):
            log, ready = self.work / f"server{shard}.log", self.work / f"server{shard}.ready"
            ready.unlink(missing_ok=True)
            self.logs.append(log)
            readies.append(ready)
            cmd = [
                PYTHON,
                str(HERE / "space_servers.py"),
                str(a.seed),
                str(a.hosts),
                str(a.holes),
                str(a.cap or 0),
                str(a.factor),
                str(shard),
                str(a.servers),
                str(self.certs),
                str(log),
                str(ready),
            ]
            err = open(self.work / f"server{shard}.err", "wb")
            self.procs.append(subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, env=_env()))
        deadline = time.monotonic() + 120
        while not all(r.exists() for r in readies):
            for p in self.procs:
                if p.poll() is not None:
                    raise SystemExit(f"a server exited: {(self.work / 'server0.err').read_text()[-1000:]}")
            if time.monotonic() > deadline:
                raise SystemExit("the servers did not start in 120 s")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()

    def requests(self) -> list[Request]:
        return read_logs(self.logs)


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "PYTHONPATH": f"{SRC}:{HERE}" + (f":{path}" if path else ""),
        "PYTHONUNBUFFERED": "1",
    }


# -- the runs ------------------------------------------------------------------------------


def crawl_args(args: argparse.Namespace, crawl: Crawl, space: Space, out: Path) -> list[str]:
    f = args.factor
    roles = [x for r in crawl.roles for x in ("--role", r)]
    profile = ["-m", "cProfile", "-o", str(out.parent / "crawl.prof")] if args.profile else []
    return [
        PYTHON,
        *profile,
        "-m",
        "manners",
        "crawl",
        *(h.root for h in space.hosts),
        "--agent",
        crawl.agent,
        *roles,
        "--out",
        str(out),
        "--scope",
        "any",
        "--allow-private",
        "--min-delay",
        f"{crawl.min_delay:g}",
        "--max-delay",
        f"{300 / f:g}",
        "--robots-backoff",
        f"{crawl.backoff:g}",
        "--robots-attempts",
        str(crawl.attempts),
        "--max-depth",
        str(crawl.max_depth),
        "--timeout",
        "10",
        "--cache",
        "memory",
        "--json",
        *([] if args.warc else ["--no-warc"]),
        *(["--concurrency", str(args.concurrency)] if args.concurrency else []),
    ]


def bare(args: argparse.Namespace, the_plan: Plan, certs: Path, work: Path, workers: int) -> float:
    """Requests per second of ``workers`` bare fetch loops together, over the planned pages."""
    space = the_plan.space
    urls = []
    for hp in the_plan.hosts.values():
        for path, n in hp.pages.items():
            i = space.page_of(hp.host, path)
            if n == 1 and i is not None and space.redirect(hp.host, i) is None:
                urls.append(space.url(hp.host, i))
    urls = urls[: args.bare_sample]
    if not urls:
        return 0.0
    with Servers(args, certs, work / f"bare{workers}"):
        files = []
        for w in range(workers):
            p = work / f"bare{workers}" / f"urls{w}"
            p.write_text("\n".join(urls[w::workers]))
            files.append(p)
        procs = [
            subprocess.Popen(
                [PYTHON, str(HERE / "space_bare.py"), str(p), "64"],
                env=_env(),
                stdout=subprocess.PIPE,
                text=True,
            )
            for p in files
        ]
        said = [p.communicate()[0].split() for p in procs]
        return sum(int(s[0]) for s in said) / max(float(s[1]) for s in said)


def run_crawl(
    args: argparse.Namespace,
    the_plan: Plan,
    crawl: Crawl,
    certs: Path,
    work: Path,
    workers: int,
    kill_at: float | None = None,
) -> dict[str, object]:
    """One crawl (1: one process on SQLite; K: K workers on Redis), checked from the servers' logs.

    ``kill_at``: the single process is SIGKILLed that many seconds after its start and the same
    command run again at once (it resumes from its frontier); the makespan counts from the first
    start, the CPU of both runs, the peak RSS of either."""
    space = the_plan.space
    label = "single" if workers == 1 else f"fleet{workers}"
    if kill_at is not None:
        label += "-killed"
    run = work / label
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    redis, empty, killed = None, 0, None
    if workers > 1:
        redis = subprocess.Popen(
            [
                "redis-server",
                "--port",
                "6390",
                "--bind",
                "127.0.0.1",
                "--dir",
                str(run),
                "--appendonly",
                "yes",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
        )
        _wait_port("127.0.0.1", 6390)
        empty = _frontier(run, True)[0]  # an empty Redis's own memory, not the frontier's
    try:
        with Servers(args, certs, run / "servers") as servers:
            start = time.time()
            cmds = []
            for w in range(workers):
                cmd = crawl_args(args, crawl, space, run / f"out{w}")
                if redis is not None:  # a fleet shares its frontier, and its robots.txt cache as fleets do
                    cmd += ["--frontier", "redis://127.0.0.1:6390/0", "--name", "space"]
                    cmd[cmd.index("--cache") + 1] = f"sqlite://{run / 'robots.sqlite3'}"
                cmds.append(cmd)
            ends: list[_End] = []
            if kill_at is not None:
                first = _start(cmds[0], run / "crawl0.err")
                while first.poll() is None and time.time() - start < kill_at:
                    time.sleep(0.05)
                if first.returncode is not None:
                    at = time.time() - start
                    raise SystemExit(f"the crawl ended at {at:.1f} s, before --kill-at {kill_at:g}")
                killed = time.time()
                first.send_signal(signal.SIGKILL)
                ends.append(_ended(first))
                print(f"{label}: SIGKILLed at {killed - start:.1f} s; resuming", flush=True)
            procs = [_start(cmd, run / f"crawl{w}.err") for w, cmd in enumerate(cmds)]
            ends += [_ended(p) for p in procs]
            ended = time.time()
            frontier_bytes, urls_known = _frontier(run, redis is not None)
            frontier_bytes -= empty
        requests = servers.requests()
    finally:
        if redis is not None:
            redis.terminate()
            redis.wait(10)
    requests = [r for r in requests if r.accepted >= start]
    verdict = check(the_plan, requests, args.tolerance, killed=killed)
    return {
        "label": label,
        "workers": workers,
        "exit": [e.code for e in ends[-workers:]],
        "start": start,
        "killed_at": None if killed is None else killed - start,
        "makespan": ended - start,
        "verdict": verdict,
        "requests": requests,
        "peak_rss": max(e.rss for e in ends),
        "cpu_s": sum(e.cpu for e in ends),
        "frontier_bytes": frontier_bytes,
        "urls_known": urls_known,
        "summary": ends[-1].out[-2000:],
    }


def _start(cmd: list[str], err: Path) -> subprocess.Popen[str]:
    with open(err, "a") as log:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, env=_env(), text=True)


class _End(NamedTuple):
    code: int
    out: str
    rss: int  # peak, bytes
    cpu: float  # user and system, seconds


def _ended(p: subprocess.Popen[str]) -> _End:
    """``p`` waited for: its exit code, output, peak RSS and CPU time."""
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    out = p.stdout.read() if p.stdout else ""
    return _End(p.returncode, out, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime)


def _frontier(run: Path, redis: bool) -> tuple[int, int]:
    """(bytes the frontier takes, URLs it knows)."""
    if redis:  # the URLs it knows: every state's count (manners crawl status, as an admin asks)
        import redis as redis_client

        used = int(redis_client.Redis(port=6390).info("memory")["used_memory"])
        cmd = [PYTHON, "-m", "manners", "crawl", "status", "--frontier", "redis://127.0.0.1:6390/0"]
        said = subprocess.run([*cmd, "--name", "space", "--json"], capture_output=True, text=True, env=_env())
        counts = json.loads(said.stdout).get("urls", {}) if said.returncode == 0 else {}
        return used, sum(int(counts.get(k, 0)) for k in ("queued", "in_flight", "done"))
    db = run / "out0" / "frontier.sqlite3"
    size = sum(p.stat().st_size for p in db.parent.glob("frontier.sqlite3*"))
    with sqlite3.connect(db) as c:
        known = int(c.execute("SELECT count(*) FROM urls").fetchone()[0])
    return size, known


def _wait_port(host: str, port: int) -> None:
    import socket

    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"nothing listens on {host}:{port}") from None
            time.sleep(0.05)


# -- figures -------------------------------------------------------------------------------


def figures(the_plan: Plan, result: dict[str, object], bare_rate: float) -> dict[str, object]:
    verdict: Verdict = result["verdict"]  # type: ignore[assignment]
    requests: list[Request] = result["requests"]  # type: ignore[assignment]
    start: float = result["start"]  # type: ignore[assignment]
    makespan: float = result["makespan"]  # type: ignore[assignment]
    bounds = the_plan.host_bounds()
    polite = the_plan.politeness_bound()
    bound = the_plan.bound(bare_rate)
    pages = sum(1 for r in requests if is_page(r))
    last: dict[str, float] = {}
    for r in requests:
        last[r.host] = max(last.get(r.host, 0.0), r.ended - start)
    slowest = sorted(last, key=lambda h: last[h] - bounds.get(h, 0.0), reverse=True)[:5]
    return {
        "run": result["label"],
        "exit": result["exit"],
        "ok": verdict.ok(),
        "checks": verdict.summary(),
        "counts": {
            k: len(getattr(verdict, k))
            for k in ("missing", "twice", "disallowed", "unplanned", "overlaps", "short", "robots_again")
        },
        "pages_checked": verdict.pages,
        "makespan_s": round(makespan, 2),
        **({"killed_at_s": round(result["killed_at"], 2)} if result.get("killed_at") is not None else {}),  # type: ignore[call-overload]
        "asked_again_after_kill": len(verdict.again_after_kill),
        "bound_s": round(bound, 2),
        "politeness_bound_s": round(polite, 2),
        "cpu_bound_s": round(the_plan.requests / bare_rate, 2) if bare_rate else None,
        "makespan_over_bound": round(makespan / bound, 3) if bound else None,
        "pages": pages,
        "pages_per_s": round(pages / makespan, 2),
        "politeness_pages_per_s": round(the_plan.pages / polite, 2) if polite else None,
        "bare_pages_per_s": round(bare_rate, 2) if bare_rate else None,
        "pages_per_s_over_lesser": round((pages / makespan) / min(the_plan.pages / polite, bare_rate), 3)
        if polite and bare_rate
        else None,
        "slowest_hosts": [
            {
                "host": h,
                "last_answer_s": round(last[h], 2),
                "ideal_s": round(bounds.get(h, 0.0), 2),
                "pages": len(the_plan.hosts[h].pages),
                "first_asked_s": round(min(r.asked for r in requests if r.host == h) - start, 2),
            }
            for h in slowest
        ],
        "crawler_cpu_s": round(result["cpu_s"], 2),  # type: ignore[call-overload]
        "crawler_cpu_ms_per_request": round(1000 * result["cpu_s"] / max(1, len(requests)), 2),  # type: ignore[operator]
        "peak_rss_mib": round(result["peak_rss"] / 2**20, 1),  # type: ignore[operator]
        "frontier_bytes": result["frontier_bytes"],
        "urls_known": result["urls_known"],
        "frontier_bytes_per_url": round(result["frontier_bytes"] / max(1, result["urls_known"]), 1),  # type: ignore[operator,call-overload]
    }


def plot(the_plan: Plan, results: list[dict[str, object]], path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("bench/space.py: the plot needs matplotlib: pip install -e '.[bench]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(9, 3.2 * len(results)), squeeze=False)
    bounds = sorted(the_plan.host_bounds().values())
    for ax, result in zip(axes[:, 0], results, strict=True):
        requests: list[Request] = result["requests"]  # type: ignore[assignment]
        start: float = result["start"]  # type: ignore[assignment]
        span = max(1, int(result["makespan"]) + 1)  # type: ignore[call-overload]
        pages = [0] * span
        busy: list[set[str]] = [set() for _ in range(span)]
        for r in requests:
            t = min(span - 1, max(0, int(r.asked - start)))
            busy[t].add(r.host)
            if is_page(r):
                pages[t] += 1
        xs = list(range(span))
        ax.plot(xs, pages, label="pages/s", color="tab:blue")
        ax.set_ylabel("pages/s")
        ax2 = ax.twinx()
        ax2.plot(xs, [len(b) for b in busy], label="busy hosts", color="tab:orange")
        ax2.plot(
            xs,
            [sum(1 for b in bounds if b > t) for t in xs],
            label="busy hosts, ideal",
            color="tab:gray",
            linestyle="--",
        )
        ax2.set_ylabel("hosts (log scale)")
        ax2.set_yscale("symlog", linthresh=10)  # thousands at the start, a handful at the end
        if result.get("killed_at") is not None:
            ax.axvline(result["killed_at"], color="tab:red", linestyle=":", label="SIGKILL, resumed")  # type: ignore[arg-type]
        ax.set_title(f"{result['label']}: makespan {result['makespan']:.1f} s")
        ax.set_xlabel("seconds from the start")
        lines = ax.get_legend_handles_labels()
        lines2 = ax2.get_legend_handles_labels()
        ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


# -- the command ---------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--small", action="store_true", help="400 capsules and 40 holes")
    p.add_argument("--hosts", type=int, default=None, help="Gemini capsules (default 4000)")
    p.add_argument("--holes", type=int, default=None, help="Gopher holes (default 400)")
    p.add_argument("--cap", type=int, default=None, help="pages of the biggest host, at most")
    p.add_argument("--factor", type=float, default=FACTOR, help="time compression (default 50)")
    p.add_argument("--servers", type=int, default=2, help="server processes (default 2)")
    p.add_argument("--workers", default="", help="fleet sizes on Redis, such as 2,4 (default: none)")
    p.add_argument(
        "--concurrency", type=int, default=None, help="the crawl's --concurrency (default: its own)"
    )
    p.add_argument("--bare-sample", type=int, default=20000, help="requests of the bare loop, at most")
    p.add_argument(
        "--no-bare", action="store_true", help="skip the bare loop (no CPU bound: the checks only)"
    )
    p.add_argument("--tolerance", type=float, default=0.003, help="seconds of clock slack in the checks")
    p.add_argument("--warc", action="store_true", help="let the crawl write WARC files")
    p.add_argument("--out", type=Path, default=Path("space-out"))
    p.add_argument("--profile", action="store_true", help="run the crawl under cProfile (RUN/crawl.prof)")
    p.add_argument("--no-single", action="store_true", help="the fleets only (--workers), not one process")
    p.add_argument(
        "--kill-at",
        type=float,
        default=None,
        metavar="S",
        help="also run the single process SIGKILLed S seconds in and resumed (makespan from the first start)",
    )
    p.add_argument(
        "--killed-only",
        action="store_true",
        help="with --kill-at: the killed and resumed run only, not the uninterrupted one before it",
    )
    args = p.parse_args(argv)
    if args.killed_only and args.kill_at is None:
        p.error("--killed-only needs --kill-at S")
    if args.hosts is None:
        args.hosts = 400 if args.small else 4000
    if args.holes is None:
        args.holes = 40 if args.small else 400
    return args


def compressed(args: argparse.Namespace) -> Crawl:
    return Crawl(min_delay=1 / args.factor, backoff=60 / args.factor)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    space = build(args.seed, args.hosts, args.holes, cap=args.cap, factor=args.factor)
    args.out = args.out.resolve()
    if os.environ.get(INSIDE) != "1":
        if shutil.which("unshare") is None or os.geteuid() != 0:
            raise SystemExit("the bench makes a network namespace: it needs unshare (util-linux) and root")
        certificates(space)
        args.out.mkdir(parents=True, exist_ok=True)
        hosts = args.out / "hosts"
        hosts.write_text(space.hosts_file())
        done = in_namespace(hosts, [PYTHON, str(Path(__file__).resolve()), *argv, "--out", str(args.out)])
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        return done.returncode
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    crawl = compressed(args)
    the_plan = plan(space, crawl)
    certs = certificates(space)
    print(
        f"space: {args.hosts} capsules, {args.holes} holes, {space.page_count()} pages held, "
        f"{the_plan.pages} to fetch, {the_plan.requests} requests; factor {args.factor:g}; "
        f"politeness bound {the_plan.politeness_bound():.2f} s",
        flush=True,
    )
    fleet = [int(w) for w in args.workers.split(",") if w.strip()]
    report: dict[str, object] = {
        "seed": args.seed,
        "capsules": args.hosts,
        "holes": args.holes,
        "pages_held": space.page_count(),
        "pages_planned": the_plan.pages,
        "requests_planned": the_plan.requests,
        "factor": args.factor,
        "cpus": os.cpu_count(),
        "runs": [],
    }
    results = []
    for workers in [*([] if args.no_single else [1]), *fleet]:
        rate = (
            0.0 if args.no_bare else bare(args, the_plan, certs, args.out, min(workers, os.cpu_count() or 1))
        )
        kills: list[float | None] = [None]
        if workers == 1 and args.kill_at is not None:
            kills = [args.kill_at] if args.killed_only else [None, args.kill_at]
        for kill_at in kills:
            result = run_crawl(args, the_plan, crawl, certs, args.out, workers, kill_at)
            fig = figures(the_plan, result, rate)
            print(json.dumps(fig, indent=1), flush=True)
            report["runs"].append(fig)  # type: ignore[attr-defined]
            results.append(result)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    plot(the_plan, results, args.out / "space.png")
    return 0 if all(r["ok"] for r in report["runs"]) else 1  # type: ignore[attr-defined,index]


if __name__ == "__main__":
    sys.exit(main())
