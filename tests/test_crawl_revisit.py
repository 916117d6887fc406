"""``manners crawl --revisit`` against real servers, time compressed (issue 25).

One crawl, run as the command is run, watches five jetforce capsules and a gophernicus hole with
``--revisit-min 1 --revisit-max 4 --robots-max-age 3`` (seconds) while the test edits their files;
what was requested, and when, is read from the servers' side (jetforce's access log, a logging
proxy in front of gophernicus), never from what the crawler says it did:

- an unchanged page is asked again after 1, 2, 4, 4 s; a page edited between two visits is asked
  again after the minimum;
- ``Check: 3`` for the robot's group is never undercut; ``Check: 60`` for another role's group
  does not slow it;
- robots.txt edited mid-crawl takes effect when the cached copy expires, not before: the page it
  now disallows is not requested after that (and is recorded with the new line), the page it no
  longer disallows is;
- a page answering 51 (Gemini) or an error (Gopher) three times in a row is not asked again.

Then the archive (revisit records that ``warcio index``/``check`` read, each naming a response
that exists), ``manners crawl status`` (due times, changes per visit), a crawl killed with
SIGKILL and started again (no URL asked before its due time), and the options' refusals.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

import servers
from proxy import logging_proxy
from test_cli_json import agrees

pytestmark = pytest.mark.serial  # asserts how long things take: one worker

AGENT = "testbot"
MIN, MAX, ROBOTS_AGE = 1.0, 4.0, 3.0
SLACK = 0.05  # seconds: clocks and timers between the crawler and the servers' logs
LATE = 0.6  # seconds a due request may come late (its host's turn, the event loop, a busy machine)
RUN = 17.0  # seconds the crawl is watched
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
WARCIO = str(Path(sys.executable).parent / "warcio")


def crawl_command(out: Path, *seeds: str, more: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", AGENT, "--role", "archiver",
            "--out", str(out), "--allow-private", "--min-delay", "0", "--cache", "memory", "--timeout", "5",
            "--revisit", "--revisit-min", f"{MIN:g}", "--revisit-max", f"{MAX:g}", "--robots-max-age",
            f"{ROBOTS_AGE:g}", *more]  # fmt: skip


def status_of(*how: str | Path) -> subprocess.CompletedProcess[str]:
    """``manners crawl status`` of a crawl, as a person runs it: its directory, or a fleet's options."""
    where = ["--frontier", str(how[0])] if isinstance(how[0], Path) else []
    cmd = [sys.executable, "-m", "manners", "crawl", "status", *where, *map(str, how[1 if where else 0 :])]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=30)


def records(out: Path) -> list[dict[str, Any]]:
    path = out / "pages.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def wait_for(what: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def gaps(times: list[float]) -> list[float]:
    return [round(b - a, 3) for a, b in itertools.pairwise(times)]


def doubling(got: list[float], expected: list[float]) -> bool:
    """``got`` gaps match ``expected`` ones: never early, at most ``LATE`` late."""
    return len(got) >= len(expected) and all(
        e - SLACK <= g <= e + LATE for g, e in zip(got, expected, strict=False)
    )


@dataclass
class Watched:
    """What the test saw of one revisiting crawl."""

    out: Path
    returncode: int
    stderr: str
    status: dict[str, Any]  # manners crawl status --json, mid-crawl
    summary: dict[str, Any]  # what the crawl printed with --json
    requests: dict[str, list[tuple[float, int]]]  # "capsule/path" -> [(time, status)]
    gopher: dict[str, list[float]]  # selector -> connection times
    ports: dict[str, int]
    edited_at: dict[str, float]
    seeds: list[str]

    def times(self, key: str) -> list[float]:
        return [t for t, _ in self.requests.get(key, [])]

    def pages(self, url_end: str) -> list[dict[str, Any]]:
        return [r for r in records(self.out) if str(r["url"]).endswith(url_end)]


CAPSULES = {
    "edit": {"robots.txt": "User-agent: *\nDisallow: /private/\n",
             "index.gmi": "# A\n=> stable.gmi\n=> edited.gmi\n",
             "stable.gmi": "never changes\n", "edited.gmi": "version 1\n"},
    "check": {"robots.txt": f"User-agent: {AGENT}\nCheck: 3\n", "index.gmi": "# B\n=> page.gmi\n",
              "page.gmi": "watched no more often than every 3 s\n"},
    "role": {"robots.txt": "User-agent: indexer\nCheck: 60\n", "index.gmi": "# C\n=> page.gmi\n",
             "page.gmi": "the indexers' Check: is not ours\n"},
    "robots": {"robots.txt": "User-agent: *\nDisallow: /q.gmi\n", "index.gmi": "# D\n=> p.gmi\n=> q.gmi\n",
               "p.gmi": "allowed, then not\n", "q.gmi": "not allowed, then allowed\n"},
    "gone": {"robots.txt": "", "index.gmi": "# E\n=> g.gmi\n", "g.gmi": "here for now\n"},
}  # fmt: skip
ROBOTS_V2 = "User-agent: *\nDisallow: /p.gmi\n"


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    base = tmp_path_factory.mktemp("revisit")
    roots = {name: base / name for name in CAPSULES}
    for name, files in CAPSULES.items():
        write_tree(roots[name], files)
    hole = base / "hole"
    write_tree(hole, {"stable.txt": "a text that stays\n", "gone.txt": "a text that goes\n"})
    out = base / "out"
    with (
        logging_proxy(0, gopher=True) as gproxy,
        servers.gophernicus(hole, advertised_port=gproxy.port, options=["-na"]) as gport,
        servers.jetforce_hosts(list(roots.values())) as jet,
    ):
        gproxy.upstream = (servers.HOST, gport)
        ports = dict(zip(roots, jet.listen_ports, strict=True))
        names = {port: name for name, port in ports.items()}
        seeds = [f"gemini://localhost:{ports[n]}/" for n in roots] + [f"gopher://127.0.0.1:{gproxy.port}/"]
        crawler = subprocess.Popen(crawl_command(out, *seeds, more=("--json",)), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE,
                                   env=ENV, text=True)  # fmt: skip
        started = time.monotonic()
        edited_at: dict[str, float] = {}

        def requested(name: str, path: str, n: int = 1) -> bool:
            return sum(1 for a in jet.accesses() if a.url == f"gemini://localhost:{ports[name]}/{path}") >= n

        try:
            # edited.gmi changes between its 2nd and 3rd visits; robots.txt of "robots" after p.gmi's first
            # visit; g.gmi and gone.txt disappear after theirs
            wait_for(lambda: requested("robots", "p.gmi"))
            (roots["robots"] / "robots.txt").write_text(ROBOTS_V2)
            edited_at["robots"] = time.time()
            wait_for(lambda: requested("gone", "g.gmi"))
            (roots["gone"] / "g.gmi").unlink()
            wait_for(lambda: any(str(r["url"]).endswith("/gone.txt") for r in records(out)))  # answered
            (hole / "gone.txt").unlink()
            wait_for(lambda: requested("edit", "edited.gmi", 2))
            (roots["edit"] / "fresh.gmi").write_text("linked from version 2\n")
            (roots["edit"] / "edited.gmi").write_text("version 2\n=> fresh.gmi\n")
            edited_at["edit"] = time.time()
            time.sleep(max(0.0, started + 8 - time.monotonic()))
            status = status_of(out, "--json")
            assert status.returncode == 0, status.stderr
            time.sleep(max(0.0, started + RUN - time.monotonic()))
        finally:
            crawler.send_signal(signal.SIGTERM)
            stdout, stderr = crawler.communicate(timeout=30)
        per_url: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for a in jet.accesses():
            port = int(a.url.split("/")[2].rsplit(":", 1)[1])
            per_url[f"{names[port]}/{a.url.split('/', 3)[3]}"].append((a.time, a.status))
        selectors: dict[str, list[float]] = defaultdict(list)
        for c in gproxy.snapshot():
            if c.selector is not None:
                selectors[c.selector].append(c.opened)
        yield Watched(out, crawler.returncode, stderr, json.loads(status.stdout), json.loads(stdout),
                      dict(per_url), dict(selectors), ports, edited_at, seeds)  # fmt: skip


def test_sigterm_ends_a_revisiting_crawl_cleanly_with_status_0(watched: Watched) -> None:
    assert watched.returncode == 0, watched.stderr
    summary = watched.summary
    agrees("manners crawl", summary)
    assert not summary["interrupted"] and not summary["completed"] and summary["resume"]
    assert summary["ended"] == "stopped"  # as asked: SIGTERM is a revisiting crawl's normal end
    assert summary["revisits"]["visits"] > summary["revisits"]["changed"] > 0
    for record in records(watched.out):
        agrees("pages.jsonl", record)
    db = sqlite3.connect(watched.out / "frontier.sqlite3")
    assert db.execute("SELECT count(*) FROM urls WHERE state = 'in_flight'").fetchone()[0] == 0
    db.close()


def test_an_unchanged_page_is_asked_again_at_doubling_intervals(watched: Watched) -> None:
    stable = gaps(watched.times("edit/stable.gmi"))
    assert doubling(stable, [MIN, 2 * MIN, MAX, MAX]), stable
    visits = watched.pages("/stable.gmi")
    assert [r["visit"] for r in visits] == list(range(1, len(visits) + 1))
    assert [r["changed"] for r in visits] == [True] + [False] * (len(visits) - 1)
    # the Gopher hole's unchanged text too (gophernicus, through the logging proxy)
    text = next(times for selector, times in watched.gopher.items() if selector.endswith("stable.txt"))
    assert doubling(gaps(text), [MIN, 2 * MIN, MAX]), gaps(text)


def test_a_page_edited_between_visits_is_asked_again_after_the_minimum(watched: Watched) -> None:
    times = watched.times("edit/edited.gmi")
    after = [t for t in times if t > watched.edited_at["edit"]]
    assert len(after) >= 2
    # the first visit after the edit finds it changed, and the next comes after the minimum again
    assert MIN - SLACK <= after[1] - after[0] <= MIN + LATE, gaps(times)
    before = [t for t in times if t <= watched.edited_at["edit"]]
    assert gaps(before) and gaps(before)[-1] >= MIN - SLACK
    visits = watched.pages("/edited.gmi")
    changed = [r["changed"] for r in visits]
    assert changed[:4] == [True, False, True, False], changed
    # the link the edit added joined the frontier like any other, and is watched in turn
    fresh = watched.times("edit/fresh.gmi")
    assert len(fresh) >= 2 and fresh[0] > watched.edited_at["edit"]


def test_check_for_the_robots_group_is_never_undercut(watched: Watched) -> None:
    times = watched.times("check/page.gmi")
    assert len(times) >= 3
    assert min(gaps(times)) >= 3 - SLACK, gaps(times)  # --revisit-min 1 would give 1, 2, 4


def test_check_for_another_roles_group_does_not_slow_the_robot(watched: Watched) -> None:
    times = watched.times("role/page.gmi")
    assert doubling(gaps(times), [MIN, 2 * MIN, MAX]), gaps(times)


def test_robots_txt_edited_mid_crawl_takes_effect_at_its_expiry_and_no_earlier(watched: Watched) -> None:
    robots = watched.times("robots/robots.txt")
    assert len(robots) >= 2
    edit = watched.edited_at["robots"]
    reread = next(t for t in robots if t > edit)
    assert reread >= robots[0] + ROBOTS_AGE - SLACK  # not read again before the copy expired
    assert min(gaps(robots)) >= ROBOTS_AGE - SLACK
    p = watched.times("robots/p.gmi")
    assert any(edit < t < reread for t in p)  # still allowed by the copy in force
    assert not [t for t in p if t > reread]  # never after
    q = watched.times("robots/q.gmi")
    assert q and min(q) > reread  # disallowed earlier, asked once the new file allows it
    last = watched.pages("/p.gmi")[-1]
    assert (last["outcome"], last["line"], last["rule"]) == ("disallowed", 2, "Disallow: /p.gmi")
    assert watched.pages("/q.gmi")[0]["outcome"] == "disallowed"


def test_a_page_answering_51_three_times_is_not_asked_again(watched: Watched) -> None:
    got = watched.requests["gone/g.gmi"]
    assert [s for _, s in got] == [20, 51, 51, 51], got
    # after the minimum, then after the maximum twice; then nothing until the crawl's end (> 4 s)
    assert doubling(gaps([t for t, _ in got]), [MIN, MAX, MAX])
    last = watched.pages("/g.gmi")[-1]
    assert last["outcome"] == "gone" and last["visit"] == 4 and last["status"] == 51 and last["due"] is None
    db = sqlite3.connect(watched.out / "frontier.sqlite3")
    state = db.execute("SELECT state, outcome FROM urls WHERE url LIKE '%/g.gmi'").fetchone()
    db.close()
    assert tuple(state) == ("done", "gone")
    assert watched.summary["whole"]["gone"] == 2  # g.gmi and gone.txt


def test_a_gopher_selector_that_errs_three_times_is_not_asked_again(watched: Watched) -> None:
    got = next(times for selector, times in watched.gopher.items() if selector.endswith("gone.txt"))
    assert len(got) == 4, gaps(got)
    assert [r["outcome"] for r in watched.pages("/gone.txt")] == ["fetched", "error", "error", "gone"]
    assert doubling(gaps(got), [MIN, MAX, MAX])


def test_the_audit_finds_every_revisit_due_and_nothing_disallowed_requested(watched: Watched) -> None:
    """``manners crawl audit`` proves the schedule from the crawl's own files: every repeat of a
    URL came once it was due (each pages record says when), and q.gmi, disallowed at first, was
    asked only after robots.txt had been read again."""
    got = subprocess.run([sys.executable, "-m", "manners", "crawl", "audit", str(watched.out), "--json"],
                         capture_output=True, text=True, env=ENV, timeout=60)  # fmt: skip
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr
    report = json.loads(got.stdout)
    assert not report["disallowed_requested"]
    repeated = {d["url"]: d for d in report["duplicates"]}
    stable = next(d for url, d in repeated.items() if url.endswith("/stable.gmi"))
    assert stable["times"] >= 5 and stable["revisits"] == stable["times"] - 1
    assert (
        f"{stable['revisits']} revisits, each once due, the closest" in stable["why"]
    )  # one line, summarised
    assert report["reconciled"]["figures"][0]["name"] == "pages"  # its one DIR holds the frontier


def test_revisit_records_are_read_by_warcio_and_name_responses_that_exist(watched: Watched) -> None:
    warcs = sorted((watched.out / "warc").glob("*.warc.gz"))
    assert warcs
    check = subprocess.run([WARCIO, "check", *map(str, warcs)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    index = subprocess.run([WARCIO, "index", "-f", "warc-type,warc-target-uri,warc-date", *map(str, warcs)],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert index.returncode == 0, index.stderr
    kinds = [json.loads(line)["warc-type"] for line in index.stdout.splitlines()]
    assert "revisit" in kinds and "response" in kinds
    responses, revisits = warc_records(watched.out)
    stable = [h for h in revisits if h.get_header("WARC-Target-URI").endswith("/stable.gmi")]
    assert len(stable) >= 3  # each unchanged visit of stable.gmi: a revisit, not a second response
    for h in revisits:
        assert (
            h.get_header("WARC-Profile") == "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
        )
        target = (h.get_header("WARC-Refers-To-Target-URI"), h.get_header("WARC-Refers-To-Date"))
        assert target in responses, target
        assert responses[target] == h.get_header("WARC-Payload-Digest")
    assert sum(1 for uri, _ in responses if uri.endswith("/stable.gmi")) == 1


def test_status_shows_what_is_due_and_changes_per_visit(watched: Watched) -> None:
    agrees("manners crawl status", watched.status)
    coming = watched.status["revisits"]
    assert isinstance(coming["due_now"], int) and coming["next_due"].endswith("Z")
    first = coming["per_visit"]["1"]
    assert first["visited"] >= 10 and first["changed"] == first["visited"]  # a first visit is a change
    assert coming["per_visit"]["3"]["visited"] > coming["per_visit"]["3"]["changed"] >= 1  # edited.gmi
    after = status_of(watched.out, "--json")
    per_visit = json.loads(after.stdout)["revisits"]["per_visit"]
    lines = records(watched.out)
    for number, figures in per_visit.items():
        changed = sum(1 for r in lines if r.get("visit") == int(number) and r.get("changed")
                      and r["outcome"] != "disallowed")  # fmt: skip
        assert figures["changed"] == changed, (number, figures)
    plain = status_of(watched.out)
    assert "revisits: due now" in plain.stdout and "changed per visit: visit " in plain.stdout


def warc_records(out: Path) -> tuple[dict[tuple[str, str], str], list[Any]]:
    """The responses of the WARCs in ``out`` by (URI, date), with their payload digests; the revisits."""
    responses: dict[tuple[str, str], str] = {}
    revisits = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                h = record.rec_headers
                if record.rec_type == "response":
                    uri, date = h.get_header("WARC-Target-URI"), h.get_header("WARC-Date")
                    responses[(uri, date)] = h.get_header("WARC-Payload-Digest")
                elif record.rec_type == "revisit":
                    revisits.append(h)
    return responses, revisits


# -- a fleet on Redis ---------------------------------------------------------------------------


def page_workers(out: Path) -> set[str]:
    """The workers with a line in a fleet's pages files so far."""
    return {
        json.loads(line)["worker"]
        for path in out.glob("pages-*.jsonl")
        for line in path.read_text().splitlines()
        if line.endswith("}")
    }


def fleet_timeline(out: Path, served: list[Any], stopped: str, stderr: list[str]) -> str:
    """What a fleet's run did, for a failure's message: every request each worker noted before it
    left and every answer the server logged, in order, seconds from the first; which worker was
    stopped; what the workers wrote to stderr."""
    events = [(a.time, f"served {a.url.rsplit('/', 1)[-1] or '/'}") for a in served]
    for path in out.glob("requests-*.jsonl"):
        for line in path.read_text().splitlines():
            if line.endswith("}"):
                r = json.loads(line)
                events.append((r["t"], f"{r['worker']} asks {r['url'].rsplit('/', 1)[-1] or '/'}"))
    t0 = min((t for t, _ in events), default=0.0)
    lines = [f"{t - t0:7.3f} {what}" for t, what in sorted(events)]
    return "\n".join([*lines, f"stopped: {stopped or 'none'}", *(e[-2000:] for e in stderr if e)])


def test_two_workers_on_redis_revisit_on_one_schedule(tmp_path: Path, redis_port: int) -> None:
    """The due times live in the Redis frontier: two workers keep one schedule per page between
    them, and a revisit record may name a capture the other worker wrote."""
    root = tmp_path / "capsule"
    write_tree(
        root, {"index.gmi": "# F\n=> stable.gmi\n=> edited.gmi\n", "stable.gmi": "s\n", "edited.gmi": "1\n"}
    )
    out = tmp_path / "out"
    name = f"revisit-{os.getpid()}-{time.monotonic_ns()}"
    fleet = ("--frontier", f"redis://127.0.0.1:{redis_port}/0", "--name", name)
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        command = crawl_command(out, seed, more=fleet)
        workers = [
            subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, text=True)
            for _ in range(2)
        ]
        stopped: list[subprocess.Popen[str]] = []
        try:
            wait_for(lambda: jet.urls().count(f"{seed}edited.gmi") >= 2)
            (root / "edited.gmi").write_text("2\n")
            edited = time.time()
            time.sleep(8)
            status = status_of(*fleet, "--json")
            # which worker has a host's next turn is a race of their timers: on a busy machine one
            # may win every one, so if only one has recorded a page it is stopped, and the other
            # must take the schedule on from the frontier
            winners = page_workers(out)
            if len(winners) == 1:
                [winner] = [w for w in workers if f"-{w.pid}-" in next(iter(winners))]
                winner.send_signal(signal.SIGTERM)
                stopped.append(winner)
            wait_for(lambda: len(page_workers(out)) == 2, timeout=40)
        finally:
            for worker in workers:
                if worker not in stopped:
                    worker.send_signal(signal.SIGTERM)
            codes = [worker.wait(30) for worker in workers]
        stderr = [w.stderr.read() if w.stderr else "" for w in workers]
        assert codes == [0, 0], stderr
        served = jet.accesses()
    stable = [a.time for a in served if a.url == f"{seed}stable.gmi"]
    edits = [a.time for a in served if a.url == f"{seed}edited.gmi" and a.time > edited]
    happened = fleet_timeline(out, served, " ".join(str(w.pid) for w in stopped), stderr)
    assert doubling(gaps(stable), [MIN, 2 * MIN, MAX]), (gaps(stable), happened)
    assert len(edits) >= 2 and MIN - SLACK <= edits[1] - edits[0] <= MIN + LATE, (gaps(edits), happened)
    lines = [json.loads(line) for path in out.glob("pages-*.jsonl") for line in path.read_text().splitlines()]
    assert len({line["worker"] for line in lines}) == 2  # both worked
    visits = sorted(int(line["visit"]) for line in lines if line["url"] == f"{seed}stable.gmi")
    assert visits == list(range(1, len(visits) + 1))  # one schedule: each visit once
    responses, revisits = warc_records(out)
    assert revisits
    for h in revisits:
        target = (h.get_header("WARC-Refers-To-Target-URI"), h.get_header("WARC-Refers-To-Date"))
        assert responses.get(target) == h.get_header("WARC-Payload-Digest")
    per_visit = json.loads(status.stdout)["revisits"]["per_visit"]
    assert per_visit["1"]["visited"] == 3 and per_visit["2"]["visited"] == 3


# -- a crawl killed and started again ----------------------------------------------------------


def test_sigkill_and_restart_keep_due_times_and_nothing_is_asked_early(tmp_path: Path) -> None:
    root = tmp_path / "capsule"
    write_tree(root, {"index.gmi": "# K\n=> a.gmi\n=> b.gmi\n", "a.gmi": "a\n", "b.gmi": "b\n"})
    out = tmp_path / "out"
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        cmd = crawl_command(out, seed)
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
        wait_for(lambda: sum(1 for r in records(out) if r.get("visit") == 2) >= 3)  # each visited twice
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        killed = time.time()
        db = sqlite3.connect(out / "frontier.sqlite3")
        due = dict(db.execute("SELECT url, not_before FROM urls").fetchall())
        db.close()
        # the due times were kept (a URL whose settling the kill cut short is due at once)
        assert len(due) == 3 and sum(at > killed for at in due.values()) >= 2
        second = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, text=True)
        time.sleep(6)
        second.send_signal(signal.SIGINT)  # Ctrl-C: a clean stop, status 130
        _, err = second.communicate(timeout=30)
        assert second.returncode == 130, err
        asked = [a for a in jet.accesses() if a.time > killed and not a.url.endswith("/robots.txt")]
        for url, at in due.items():
            mine = [a.time for a in asked if a.url == url]
            assert mine, url  # the crawl went on where it was
            assert min(mine) >= at - SLACK, (url, min(mine) - at)
        # and it kept counting visits where it was
        assert max(int(r.get("visit", 0)) for r in records(out)) >= 3


def test_a_crawl_made_without_revisit_is_watched_once_resumed_with_it(tmp_path: Path) -> None:
    root = tmp_path / "capsule"
    write_tree(root, {"index.gmi": "# W\n=> a.gmi\n", "a.gmi": "a\n"})
    out = tmp_path / "out"
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        once = subprocess.run(
            crawl_command(out, seed)[:-7], capture_output=True, text=True, env=ENV, timeout=60
        )
        assert once.returncode == 0, once.stderr
        assert jet.urls().count(f"{seed}a.gmi") == 1
        resumed = subprocess.Popen(crawl_command(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=ENV)  # fmt: skip
        wait_for(lambda: jet.urls().count(f"{seed}a.gmi") >= 3)
        resumed.send_signal(signal.SIGTERM)
        assert resumed.wait(30) == 0
    visits = [r for r in records(out) if r["url"] == f"{seed}a.gmi"]
    assert [r.get("visit") for r in visits][:3] == [None, 2, 3]


@pytest.mark.parametrize("limit", ["--max-pages", "--max-per-host"])
def test_a_revisiting_crawls_limits_bound_the_pages_watched(tmp_path: Path, limit: str) -> None:
    """A crawl that never ends has no "stop at N": the limit bounds what it watches, and it goes on."""
    root = tmp_path / "capsule"
    write_tree(root, {"index.gmi": "# L\n=> a.gmi\n=> b.gmi\n=> c.gmi\n", "a.gmi": "a\n", "b.gmi": "b\n",
                      "c.gmi": "c\n"})  # fmt: skip
    out = tmp_path / "out"
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        crawl = subprocess.Popen(crawl_command(out, seed, more=(limit, "2")), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, env=ENV, text=True)  # fmt: skip
        wait_for(lambda: jet.urls().count(seed) >= 3)  # the watched pages come back
        crawl.send_signal(signal.SIGTERM)
        assert crawl.wait(30) == 0, crawl.stderr.read() if crawl.stderr else ""
        asked = [u for u in jet.urls() if not u.endswith("/robots.txt")]
    assert set(asked) == {seed, f"{seed}a.gmi"}, asked  # two pages, watched; none past the limit
    assert asked.count(f"{seed}a.gmi") >= 2
    skipped = {r["url"]: r for r in records(out) if r["outcome"] == "skipped"}
    assert set(skipped) == {f"{seed}b.gmi", f"{seed}c.gmi"}
    assert all(r["reason"].startswith(f"{limit} 2:") for r in skipped.values())


def test_no_revisit_on_resume_ends_a_revisiting_crawl_after_one_last_visit(tmp_path: Path) -> None:
    """--revisit is kept by the crawl (a resume without it still revisits); --no-revisit ends it:
    what is due is visited once more and the crawl completes, exit 0, nothing left queued."""
    root = tmp_path / "capsule"
    write_tree(root, {"index.gmi": "# N\n=> a.gmi\n", "a.gmi": "a\n"})
    out = tmp_path / "out"
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": ENV}
        first = subprocess.Popen(crawl_command(out, seed), **quiet)  # type: ignore[call-overload]
        wait_for(lambda: jet.urls().count(f"{seed}a.gmi") >= 2)
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) == 0
        resume = [sys.executable, "-m", "manners", "crawl", "--out", str(out)]
        kept = subprocess.Popen(resume, **quiet)  # type: ignore[call-overload]
        wait_for(lambda: jet.urls().count(f"{seed}a.gmi") >= 3)  # still revisiting
        kept.send_signal(signal.SIGTERM)
        assert kept.wait(30) == 0
        before = jet.urls().count(f"{seed}a.gmi")
        last = subprocess.run([*resume, "--no-revisit", "--json"], capture_output=True, text=True, env=ENV,
                              timeout=60)  # fmt: skip
        assert last.returncode == 0, last.stderr
        summary = json.loads(last.stdout)
        assert summary["completed"] and summary["queued"] == 0 and summary["revisits"] is None
        assert jet.urls().count(f"{seed}a.gmi") <= before + 1


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--revisit-min", "1h"], "add --revisit"),
        (["--revisit", "--revisit-min", "2d", "--revisit-max", "1d"], "up to its maximum"),
        (["--revisit", "--revisit-min", "0"], "longer than 0 seconds"),
        (["--revisit", "--revisit-max", "soon"], "not an interval"),
        (["--revisit", "--robots-max-age", "-1"], "not an interval"),
    ],
)
def test_bad_revisit_options_are_one_sentence_and_exit_2(
    tmp_path: Path, options: list[str], said: str
) -> None:
    got = subprocess.run([sys.executable, "-m", "manners", "crawl", "gemini://localhost/", "--agent", AGENT,
                          "--out", str(tmp_path / "out"), *options], capture_output=True, text=True, env=ENV,
                         timeout=30)  # fmt: skip
    assert got.returncode == 2 and said in got.stderr.strip().splitlines()[-1], got.stderr
    assert "Traceback" not in got.stderr


# -- robots.txt's age, whoever read it -------------------------------------------------------------


def test_a_robot_with_a_shorter_ttl_reads_again_a_copy_another_robot_cached_for_a_day(tmp_path: Path) -> None:
    """The robots.txt cache is shared (other robots, other runs): an entry another robot read with a
    day's life is not kept past this robot's ``ttl`` (``--robots-max-age``)."""
    import asyncio

    from manners.robot import Robot

    root = tmp_path / "capsule"
    write_tree(root, {"robots.txt": "User-agent: *\nDisallow: /no\n"})
    cache = f"sqlite://{tmp_path / 'robots.db'}"
    with servers.jetforce_hosts([root]) as jet:
        page = f"gemini://localhost:{jet.listen_ports[0]}/page"

        async def main() -> None:
            async with Robot(AGENT, cache=cache) as daily, Robot(AGENT, cache=cache, ttl=1.0) as brief:
                assert await daily.allowed(page)
                first = await brief.decide(page)  # the daily robot's copy, young enough
                assert first.expires_at <= first.fetched_at + 1.0
                await asyncio.sleep(1.2)
                assert await brief.allowed(page)  # read again
                assert await daily.allowed(page)  # its own copy still fresh: not read again

        asyncio.run(main())
        reads = [a for a in jet.accesses() if a.url.endswith("/robots.txt")]
    assert len(reads) == 2, reads
