"""``manners crawl audit``: a crawl's manners proved from its workers' ledgers and pages files.

Most tests write the files as two or three workers would (a ledger line flushed before each
request, a pages record after each answer) with one fault planted, and check that the audit
names it, and only it.  The last runs a real single-process crawl over gophernicus, pygopherd
and jetforce, SIGKILLs it mid-crawl and resumes it, and holds the audit against what the
servers saw.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from manners.crawl import urls
from manners.crawl.audit import TOLERANCE, TURN, Report, add_parser, as_json, audit, render_text, run
from manners.crawl.audit_findings import Duplicate
from manners.vocabulary import timestamp
from test_cli_json import RFC3339, SHAPES, conforms

T0 = 1_764_115_200.0  # 2025-11-26T00:00:00Z
HOST = "gemini://capsule.example"
HOLE = "gopher://hole.example"
SRC = Path(__file__).resolve().parents[1] / "src"


class Worker:
    """Writes a worker's files in ``out`` as the crawler does: ``requests-ID.jsonl`` and, unless
    ``shared`` (a single-process crawl's ``pages.jsonl``, records without a worker key),
    ``pages-ID.jsonl``."""

    def __init__(self, out: Path, name: str, shared: bool = False) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.ledger = out / f"requests-{name}.jsonl"
        self.pages = out / ("pages.jsonl" if shared else f"pages-{name}.jsonl")
        self.shared = shared
        self.ledger.touch()
        self.pages.touch()

    def request(self, t: float, url: str, kind: str = "page", spacing: float | None = 1.0,
                not_before: float | None = None) -> None:  # fmt: skip
        wait = None if not_before is None else T0 + not_before
        line = {"at": timestamp(T0 + t), "t": T0 + t, "authority": urls.authority(url), "url": url,
                "kind": kind, "worker": self.name, "lease": "token" if kind == "page" else None,
                "spacing": spacing, "not_before": wait}  # fmt: skip
        with self.ledger.open("a") as f:
            f.write(json.dumps(line) + "\n")

    def settle(self, t: float, url: str, outcome: str = "fetched", status: int | None = 20,
               **extra: Any) -> None:  # fmt: skip
        record = {"url": url, "outcome": outcome, "status": status, "mime": "text/gemini", "title": None,
                  "bytes": 0, "sha256": None, "depth": 0, "links": [], "fetched_at": timestamp(T0 + t),
                  **extra}  # fmt: skip
        if not self.shared:
            record["worker"] = self.name
        with self.pages.open("a") as f:
            f.write(json.dumps(record) + "\n")

    def fetch(self, t: float, url: str, took: float = 0.1, **extra: Any) -> None:
        """A page requested at ``t`` and settled ``took`` seconds later."""
        self.request(t, url, **extra)
        self.settle(t + took, url)


def polite_crawl(out: Path, start: float = 0.0, names: tuple[str, ...] = ("w1", "w2", "w3")) -> None:
    """Three workers crawling two hosts together, every request a second after the host's last."""
    workers = [Worker(out, f"{out.name}-{n}") for n in names]
    for host in (HOST, HOLE):
        workers[0].request(start, f"{host}/robots.txt", kind="robots")
        if host == HOLE:
            workers[1 % len(workers)].request(start + 1, f"{HOLE}/0caps.txt", kind="caps")
        for i in range(5):
            t = start + (2 if host == HOLE else 1) + i * 1.0
            workers[i % len(workers)].fetch(t, f"{host}/{'1' if host == HOLE else ''}page{i}")


def audited(*dirs: Path, json_out: bool = False) -> tuple[int, str, str]:
    """``manners crawl audit DIR...`` through the parser ``add_parser`` makes: (status, stdout, stderr)."""
    parser = argparse.ArgumentParser(prog="manners crawl")
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["audit", *map(str, dirs), *(["--json"] if json_out else [])])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(args)
    return code, out.getvalue(), err.getvalue()


def test_a_clean_crawl_by_three_workers_passes(tmp_path: Path) -> None:
    polite_crawl(tmp_path / "crawl")
    code, out, err = audited(tmp_path / "crawl")
    assert (code, err) == (0, ""), out
    assert "VIOLATION" not in out and out.strip().endswith(
        "no violation (0 URLs asked more than once, 0 of them allowed)"
    )
    report = audit([tmp_path / "crawl"])
    assert report.requests == 13 and len(report.workers) == 3 and report.violations == 0
    gemini = next(h for h in report.hosts if h.authority == "gemini://capsule.example:1965")
    assert (gemini.requests, gemini.workers, gemini.required_gap, gemini.ok) == (6, 3, 1.0, True)
    assert gemini.smallest_gap == pytest.approx(1.0)


def test_two_crawls_of_one_host_at_once_each_polite_alone_are_caught_together(tmp_path: Path) -> None:
    """The issue's planted fault: each crawl keeps 1 s between its requests, and the two together
    hit the same host every 0.5 s.  Neither DIR alone shows it; the two audited together do."""
    a, b = tmp_path / "a", tmp_path / "b"
    polite_crawl(a, start=0.0, names=("w1",))
    polite_crawl(b, start=0.5, names=("w1",))
    assert audited(a)[0] == 0 and audited(b)[0] == 0
    code, out, _ = audited(a, b)
    assert code == 1
    report = audit([a, b])
    assert report.dirs == (str(a), str(b)) and len(report.workers) == 2
    for host in report.hosts:
        assert not host.ok and host.smallest_gap == pytest.approx(0.5) and host.required_gap == 1.0
    close = [c for c in report.too_close if c.authority == "gemini://capsule.example:1965"]
    assert len(close) == 11  # every request but the first came 0.5 s after the other crawl's
    assert {(c.earlier.worker, c.later.worker) for c in close if c.earlier} == {
        ("a-w1", "b-w1"),
        ("b-w1", "a-w1"),
    }
    assert all(c.gap == pytest.approx(0.5) and c.required == 1.0 for c in close)
    assert out.startswith("VIOLATION too close: gemini://capsule.example/robots.txt by worker b-w1")
    assert "0.500 s after gemini://capsule.example/robots.txt by worker a-w1" in out.splitlines()[0]
    # the two crawls fetched the same pages, which is no crawl's manners either
    assert {d.url for d in report.duplicates if d.violation} == {f"{HOST}/page{i}" for i in range(5)} | {
        f"{HOLE}/1page{i}" for i in range(5)
    }


def test_a_gap_within_the_tolerance_passes_and_one_past_it_does_not(tmp_path: Path) -> None:
    w = Worker(tmp_path / "crawl", "w1")
    w.request(0, f"{HOST}/robots.txt", kind="robots", spacing=None)  # the first: nothing said
    w.fetch(2.0 - TOLERANCE / 2, f"{HOST}/a", spacing=2.0)  # Crawl-delay 2, a little clock jitter
    assert audited(tmp_path / "crawl")[0] == 0
    w.fetch(4.0 - TOLERANCE * 2, f"{HOST}/b", spacing=2.0)
    report = audit([tmp_path / "crawl"])
    assert [c.later.url for c in report.too_close] == [f"{HOST}/b"]
    assert report.too_close[0].why() == "a spacing of 2 s was in force"


def test_a_slow_down_asked_is_kept(tmp_path: Path) -> None:
    """A 44's wait, from the ledger's not_before and from a 44 page in a pages file."""
    w1, w2 = Worker(tmp_path / "crawl", "w1"), Worker(tmp_path / "crawl", "w2")
    w1.request(0, f"{HOST}/robots.txt", kind="robots")
    w1.request(1, f"{HOST}/a")  # answered 44 30: nothing before 31
    w2.fetch(31, f"{HOST}/a", not_before=31)
    w1.request(32, f"{HOST}/b")  # answered 44 with no number: 10 s at least
    w1.settle(32.1, f"{HOST}/b", outcome="error", status=44, reason="44 (still, after 3 attempts)")
    w2.fetch(42.2, f"{HOST}/c")
    w2.request(43.2, f"{HOST}/d")  # answered 44 5
    w2.settle(43.3, f"{HOST}/d", outcome="error", status=44, reason="44 5 (still, after 3 attempts)")
    assert audited(tmp_path / "crawl")[0] == 0

    w1.fetch(47, f"{HOST}/e")  # 3.7 s after a 44 asked for 5
    w2.fetch(50, f"{HOST}/f", not_before=60)  # the crawler itself said it was early
    report = audit([tmp_path / "crawl"])
    assert [(c.later.url, c.not_before) for c in report.too_close] == [
        (f"{HOST}/e", pytest.approx(T0 + 48.3)),
        (f"{HOST}/f", T0 + 60),
    ]
    assert report.too_close[0].required == pytest.approx(48.3 - 43.2)
    assert report.too_close[0].why() == f"a 44 asked for nothing before {timestamp(T0 + 48.3)}"


def test_a_url_in_flight_at_a_workers_death_is_named_so(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    w1, w2 = Worker(out, "w1"), Worker(out, "w2")
    w1.request(0, f"{HOST}/robots.txt", kind="robots")
    w1.fetch(1, f"{HOST}/a")
    w1.request(2, f"{HOST}/b")  # SIGKILLed here: no answer, nothing more from w1
    w2.fetch(130, f"{HOST}/b")  # its lease expired: w2 takes it
    w2.request(131, f"{HOST}/c")  # 44 5: retried by the same worker, no answer settled between
    w2.fetch(136, f"{HOST}/c")
    code, text, _ = audited(out)
    assert code == 0, text
    report = audit([out])
    b, c = report.duplicates
    assert (b.url, b.in_flight_at_death, b.violation) == (f"{HOST}/b", True, False)
    assert b.why() == "in flight at the death of worker w1"
    assert (c.url, c.in_flight_at_death, c.violation) == (f"{HOST}/c", False, False)
    said = f"requested again (no violation): {HOST}/b (2 times): in flight at the death of worker w1"
    assert said in text.splitlines()


def test_a_single_process_crawl_killed_and_resumed(tmp_path: Path) -> None:
    """One DIR, one pages.jsonl with no worker key: the resumed run is another worker."""
    out = tmp_path / "crawl"
    first, second = Worker(out, "host-100-aaaa", shared=True), Worker(out, "host-200-bbbb", shared=True)
    first.request(0, f"{HOST}/robots.txt", kind="robots")
    first.fetch(1, f"{HOST}/a")
    first.request(2, f"{HOST}/b")  # killed in flight
    second.request(60, f"{HOST}/robots.txt", kind="robots")
    second.fetch(61, f"{HOST}/b")
    report = audit([out])
    assert [(d.url, d.in_flight_at_death, d.violation) for d in report.duplicates] == [
        (f"{HOST}/b", True, False)
    ]
    assert report.violations == 0


def test_a_url_fetched_twice_is_a_violation(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    w1, w2 = Worker(out, "w1"), Worker(out, "w2")
    w1.request(0, f"{HOST}/robots.txt", kind="robots")
    w1.fetch(1, f"{HOST}/a")
    w2.fetch(2, f"{HOST}/a")  # settled already, fetched again
    code, text, _ = audited(out)
    assert code == 1
    (dup,) = audit([out]).duplicates
    assert (dup.in_flight_at_death, dup.violation) == (False, True)
    assert dup.why() == "fetched twice: worker w1 settled it (fetched) and worker w2 asked again"
    assert text.startswith("VIOLATION requested again: gemini://capsule.example/a (2 times): fetched twice")


def test_a_disallowed_url_that_was_requested_is_flagged(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    w1, w2 = Worker(out, "w1"), Worker(out, "w2")
    w1.request(0, f"{HOST}/robots.txt", kind="robots")
    w1.settle(0.5, f"{HOST}/private/x", outcome="disallowed", status=None, line=2, rule="Disallow: /private",
              robots=f"{HOST}/robots.txt", reason="the longest matching rule ...")  # fmt: skip
    evil = f"{HOST}/private/\x1b]0;owned\x07"  # a server's text: never raw on the terminal
    w1.settle(0.6, evil, outcome="disallowed", status=None)
    w2.fetch(1, f"{HOST}/private/x")
    w2.fetch(2, evil)
    w2.fetch(3, f"{HOST}/public")
    code, text, _ = audited(out)
    assert code == 1
    report = audit([out])
    assert [(d.request.url, d.request.worker, d.record.rule) for d in report.disallowed_requested] == [
        (f"{HOST}/private/x", "w2", "Disallow: /private"),
        (evil, "w2", None),
    ]
    assert "\x1b" not in text and "\x07" not in text and "\\x1b]0;owned\\x07" in text
    assert text.splitlines()[0] == (
        f"VIOLATION disallowed yet requested: {HOST}/private/x by worker w2 at {timestamp(T0 + 1)},"
        f" settled as disallowed (Disallow: /private, {HOST}/robots.txt)"
    )


def test_a_revisiting_crawl_asks_again_once_due_and_not_before(tmp_path: Path) -> None:
    """--revisit: each record says when the URL is due again; a request from then on is a revisit,
    one before it is a violation (the crawler's schedule, proved from its own files)."""
    out = tmp_path / "crawl"
    w = Worker(out, "w1")
    page = f"{HOST}/a"
    w.request(0, f"{HOST}/robots.txt", kind="robots")
    for t, visit, due in ((1, 1, 3), (3, 2, 7), (6, 3, 14)):
        w.request(t, page)
        w.settle(t + 0.1, page, visit=visit, changed=visit == 1, due=timestamp(T0 + due))
    code, _, _ = audited(out)
    assert code == 1
    (dup,) = audit([out]).duplicates
    assert [kind for kind, _ in dup.repeats] == ["revisit", "twice"]
    assert "revisited 1.00 s before it was due" in dup.why()


def test_a_revisiting_crawl_may_ask_a_url_disallowed_before_once_robots_txt_is_read_again(
    tmp_path: Path,
) -> None:
    out = tmp_path / "crawl"
    w = Worker(out, "w1")
    robots, kept, relented = f"{HOST}/robots.txt", f"{HOST}/kept", f"{HOST}/relented"
    w.request(0, robots, kind="robots")
    for url in (kept, relented):
        w.settle(0.5, url, outcome="disallowed", status=None, visit=1, changed=True, due=timestamp(T0 + 3))
    w.fetch(2, kept)  # under the file that disallowed it: a violation
    w.request(3, robots, kind="robots")  # read again: the new file decides
    w.fetch(4, relented)
    code, _, _ = audited(out)
    assert code == 1
    assert [d.request.url for d in audit([out]).disallowed_requested] == [kept]


def test_a_page_before_robots_txt_is_flagged(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    w1, w2 = Worker(out, "w1"), Worker(out, "w2")
    w2.fetch(0, f"{HOST}/early")  # w2 did not wait for robots.txt
    w1.request(1, f"{HOST}/robots.txt", kind="robots")
    w1.fetch(2, f"{HOST}/a")
    w1.fetch(0.5, f"{HOLE}/1", kind="page")  # robots.txt never asked of the hole
    w1.fetch(1.5, f"{HOLE}/1b", kind="page")
    code, text, _ = audited(out)
    assert code == 1
    late = {r.authority: r for r in audit([out]).robots_first_violations}
    assert set(late) == {"gemini://capsule.example:1965", "gopher://hole.example:70"}
    capsule, hole = late["gemini://capsule.example:1965"], late["gopher://hole.example:70"]
    assert (capsule.first.url, capsule.first.worker, capsule.pages_before, capsule.robots_at) == (
        f"{HOST}/early", "w2", 1, T0 + 1)  # fmt: skip
    assert (hole.first.url, hole.pages_before, hole.robots_at) == (f"{HOLE}/1", 2, None)
    assert "robots.txt never asked" in text


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    """A worker killed mid-write leaves half a line at the end of its files: no error."""
    out = tmp_path / "crawl"
    polite_crawl(out)
    ledger, pages = sorted(out.glob("requests-*.jsonl"))[0], sorted(out.glob("pages-*.jsonl"))[0]
    torn = (
        f"{ledger}:{len(ledger.read_bytes().splitlines()) + 1}",
        f"{pages}:{len(pages.read_bytes().splitlines()) + 1}",
    )
    with ledger.open("a") as f:
        f.write('{"at": "2025-11-26T00:01:00.000Z", "t": 17641152')
    with pages.open("a") as f:
        f.write('{"url": "gemini://capsule.example/x", "outc')
    code, text, err = audited(out)
    assert (code, err) == (0, ""), text
    report = audit([out])
    assert report.requests == 13
    assert report.torn_lines == torn
    assert f"skipped a torn last line (a crash mid-write): {torn[0]}" in text.splitlines()


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("not json\n", "requests-DIR-w1.jsonl:3 is no JSON line (Expecting value): the file is damaged"),
        ("[1, 2]\n", "requests-DIR-w1.jsonl:3 is no JSON object: the file is damaged"),
        ('{"t": "soon"}\n', "requests-DIR-w1.jsonl:3: 't' is not a number: the file is damaged"),
        ('{"t": 1.5}\n', "requests-DIR-w1.jsonl:3: 'authority' is missing: the file is damaged"),
    ],
)
def test_a_malformed_line_in_the_middle_is_one_sentence_and_exit_2(tmp_path: Path, damage: str,
                                                                   said: str) -> None:  # fmt: skip
    out = tmp_path / "DIR"
    polite_crawl(out, names=("w1",))
    ledger = out / "requests-DIR-w1.jsonl"
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text("".join(lines[:2]) + damage + "".join(lines[2:]))
    code, text, err = audited(out)
    assert (code, text) == (2, "")
    assert err == f"manners crawl audit: {out}/{said}\n"


def test_usage_errors_are_one_sentence(tmp_path: Path) -> None:
    code, _, err = audited(tmp_path / "nowhere")
    assert (code, err) == (
        2,
        f"manners crawl audit: {tmp_path}/nowhere is no directory: name a crawl's --out\n",
    )
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "pages.jsonl").write_text("")
    code, _, err = audited(tmp_path / "old")
    assert code == 2 and err.count("\n") == 1 and "holds no ledger (requests-*.jsonl)" in err
    polite_crawl(tmp_path / "crawl")
    (tmp_path / "crawl" / "pages-crawl-w2.jsonl").write_text('{"url": "x"}\n{"url": "y"}\n')
    code, _, err = audited(tmp_path / "crawl")
    assert err == (f"manners crawl audit: {tmp_path}/crawl/pages-crawl-w2.jsonl:1: 'fetched_at' is missing:"
                   " the file is damaged\n")  # fmt: skip


def test_json_is_the_documented_shape(tmp_path: Path) -> None:
    """Every key docs/json.md's ``json: manners crawl audit`` block names, of its type: timestamps
    RFC 3339 with Z, counts integers; with one violation of each kind planted."""
    a, b = tmp_path / "a", tmp_path / "b"
    polite_crawl(a, names=("w1",))
    polite_crawl(b, start=0.5, names=("w1",))
    w = Worker(a, "w9")
    w.fetch(20, f"{HOST}/page0")
    w.settle(20.5, f"{HOST}/private", outcome="disallowed", status=None, rule="Disallow: /private",
             line=1, robots=f"{HOST}/robots.txt")  # fmt: skip
    w.fetch(22, f"{HOST}/private")
    w.fetch(23, "gemini://other.example/x", not_before=30)
    w.request(24, f"{HOST}/died")
    Worker(b, "w8").fetch(200, f"{HOST}/died")
    code, text, _ = audited(a, b, json_out=True)
    assert code == 1
    data = json.loads(text)
    assert conforms(data, SHAPES["manners crawl audit"]) == []
    assert data["violations"] == audit([a, b]).violations and isinstance(data["violations"], int)
    assert data["dirs"] == [str(a), str(b)] and data["tolerance"] == TOLERANCE
    for key in ("too_close", "duplicates", "disallowed_requested", "robots_first_violations"):
        assert data[key], key
    (first,) = [c for c in data["too_close"] if c["earlier"] is None]
    assert first["later"]["url"] == "gemini://other.example/x" and RFC3339.match(first["not_before"])
    died = next(d for d in data["duplicates"] if d["url"] == f"{HOST}/died")
    assert died == {"url": f"{HOST}/died", "times": 2, "at": [timestamp(T0 + 24), timestamp(T0 + 200)],
                    "workers": ["w9", "w8"], "in_flight_at_death": True, "in_flight": True, "revisits": 0,
                    "closest_to_due": None, "violation": False,
                    "why": "in flight at the death of worker w9"}  # fmt: skip
    assert all(RFC3339.match(w["first"]) and RFC3339.match(w["last"]) for w in data["workers"])
    assert re.search(r'\n  "hosts": \[\n    \{"authority": ', text)  # a host a line, as every --json


@pytest.mark.quick
def test_as_json_and_render_text_of_an_empty_crawl(tmp_path: Path) -> None:
    Worker(tmp_path / "crawl", "w1")  # started, sent nothing
    report = audit([tmp_path / "crawl"])
    assert report == Report((str(tmp_path / "crawl"),), (), 0, (), (), (), (), (), ())
    assert as_json(report)["violations"] == 0
    assert render_text(report) == (
        "0 requests by 0 workers in 1 directory to 0 hosts: no violation"
        " (0 URLs asked more than once, 0 of them allowed)"
    )


def test_python_m_entry(tmp_path: Path) -> None:
    polite_crawl(tmp_path / "a", names=("w1",))
    polite_crawl(tmp_path / "b", start=0.5, names=("w1",))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for dirs, code in (([tmp_path / "a"], 0), ([tmp_path / "a", tmp_path / "b"], 1), ([tmp_path / "c"], 2)):
        p = subprocess.run([sys.executable, "-m", "manners.crawl.audit", *map(str, dirs), "--json"],
                           capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
        assert p.returncode == code, p.stderr
        if code < 2:
            assert json.loads(p.stdout)["violations"] == audit(dirs).violations


# -- a real crawl -----------------------------------------------------------------------------------


def test_a_real_crawl_killed_and_resumed_audits_as_the_servers_saw_it(tmp_path: Path) -> None:
    """``manners crawl`` over gophernicus, pygopherd and jetforce (each behind a logging proxy),
    SIGKILLed mid-crawl and resumed: the audit passes, counts the requests each server received,
    and names as requested twice exactly the URLs the servers received twice."""
    import smallnet_site as sn

    with sn.running(tmp_path / "site") as site:
        gophernicus, pygopherd = site.site.gophernicus_url, site.site.pygopherd_url
        seeds = [site.site.gemini_url, gophernicus, pygopherd]
        out = tmp_path / "out"
        cmd = [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", "testbot", "--role", "archiver",
               "--out", str(out), "--min-delay", "0.2", "--cache", f"sqlite://{tmp_path}/robots.db",
               "--timeout", "10", "--no-warc"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _settled(out, 25):
            time.sleep(0.05)
        killed_at = time.time()
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert list(out.glob("requests*.jsonl")), "manners crawl keeps no ledger (requests-WORKER.jsonl) yet"
        second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180)
        assert second.returncode == 0, second.stderr

        code, text, err = audited(out)
        report = audit([out])
        # A page's record is written before its settling is committed (milliseconds later), so a
        # kill between the two leaves it on record and still queued, and the resume asks it again:
        # the audit, which cannot tell that from a settled page asked twice, calls it a violation
        # (about one run in seven).  Allowed here only for a page the killed run asked in its last
        # half second, answered and put on record, and no other violation at all.
        twice_on_record = {d.url for d in report.duplicates if d.violation}
        at_kill = {d.url for d in report.duplicates if _on_record_at_the_kill(d, killed_at)}
        assert err == "" and (code == 0 or twice_on_record <= at_kill), text
        assert len(report.workers) == 2  # the killed run and the resume
        # its one DIR holds the frontier: the totals reconciled, and they agree
        assert report.reconciled is not None and report.reconciled.agree, text
        assert "they agree" in text and report.reconciled.figures[0].files > 10
        received = {
            sn.authority(gophernicus): len(site.gophernicus.snapshot()),
            sn.authority(pygopherd): len(site.pygopherd.snapshot()),
            sn.authority(site.site.gemini_url): len(site.gemini.snapshot()),
        }
        on_record = {h.authority: h.requests for h in report.hosts}
        assert on_record.keys() == received.keys(), (on_record, received)
        # every request on record, and one more at most per host: one request at a time per host,
        # and its ledger line is written before it leaves, so the kill may fall between the two
        assert all(0 <= on_record[a] - received[a] <= 1 for a in received), (on_record, received)
        assert all(
            h.ok and h.smallest_gap is not None and h.smallest_gap >= 0.2 - TOLERANCE for h in report.hosts
        )

        # what the servers received twice: Gopher request lines at the proxies, Gemini URLs in
        # jetforce's log; robots.txt and caps.txt are no pages
        received_twice: Counter[tuple[str, str]] = Counter()
        for proxy, seed in ((site.gophernicus, gophernicus), (site.pygopherd, pygopherd)):
            received_twice.update(
                (sn.authority(seed), c.request.decode()) for c in proxy.snapshot() if c.request
            )
        received_twice.update((sn.authority(url), url) for url in site.jetforce.urls())
        said = {_request_line(d.url): len(d.requests) for d in report.duplicates}
        not_pages = ("robots.txt", "caps.txt")
        pages_received = {k: n for k, n in received_twice.items() if not k[1].endswith(not_pages)}
        twice = {k: n for k, n in pages_received.items() if n > 1}
        assert {k: said.get(k) for k in twice} == twice, (said, twice)  # every repeat the servers saw
        # and no more, but for the request on record when the kill came (its ledger line is written
        # before it leaves, so the kill may fall between the line and the request): one more at most
        at_death = {_request_line(d.url) for d in report.duplicates if d.in_flight_at_death}
        extra = {k: n for k, n in said.items() if k not in twice}
        assert all(k in at_death and n == pages_received.get(k, 0) + 1 for k, n in extra.items()), (
            extra,
            pages_received,
        )
        # each repeat explained: the capsule's "44 5" page asked again, or in flight at the kill
        # (if a request was: the kill may fall between two)
        slow = site.site.expect(seeds, sn.ARCHIVER, "testbot").slow_down
        assert all(d.url in slow or d.in_flight_at_death or d.url in at_kill for d in report.duplicates), text
        assert all(
            d.in_flight_at_death or d.url in at_kill for d in report.duplicates if d.url not in slow
        ), text


def _on_record_at_the_kill(d: Duplicate, killed_at: float) -> bool:
    """Asked by the killed run in its last half second, then asked again by the resumed one."""
    first, again = d.requests[0], d.requests[1]
    return len(d.requests) == 2 and first.worker != again.worker and killed_at - 0.5 <= first.t <= killed_at


def _request_line(url: str) -> tuple[str, str]:
    """A URL as its server received it: (authority, Gopher selector or Gemini URL)."""
    import smallnet_site as sn

    return sn.authority(url), sn.gopher_selector(url) if url.startswith("gopher:") else url


def _settled(out: Path, n: int) -> bool:
    """``n`` pages settled, in ``pages.jsonl`` or a worker's ``pages-WORKER.jsonl``."""
    return sum(len(p.read_bytes().splitlines()) for p in out.glob("pages*.jsonl")) >= n


# -- issue 31: robots.txt from the cache, repeats in flight, revisits summarised ------------------


def _line(worker: Worker, obj: dict[str, Any]) -> None:
    with worker.ledger.open("a") as f:
        f.write(json.dumps(obj) + "\n")


def cached(worker: Worker, t: float, host: str, fetched: float, expires: float | None = None) -> None:
    """A robots line with ``source`` ``cache`` as the crawler writes it (interfaces item 3)."""
    line = {"at": timestamp(T0 + t), "t": T0 + t, "authority": urls.authority(host),
            "url": f"{host}/robots.txt", "kind": "robots", "worker": worker.name, "lease": None,
            "spacing": None, "not_before": None,
            "source": "cache", "fetched_at": timestamp(T0 + fetched)}  # fmt: skip
    if expires is not None:
        line["expires_at"] = timestamp(T0 + expires)
    _line(worker, line)


def lease_lost(worker: Worker, t: float, url: str, lease: str = "token", reason: str = "re-leased") -> None:
    """A ``lease-lost`` ledger line (interfaces item 1)."""
    _line(worker, {"at": timestamp(T0 + t), "t": T0 + t, "authority": urls.authority(url), "url": url,
                   "kind": "lease-lost", "worker": worker.name, "lease": lease,
                   "reason": reason})  # fmt: skip


def unsettled(worker: Worker, url: str, was: str = "fetched", reason: str = "the lease is no longer held",
              fetched_at: float | None = None) -> None:  # fmt: skip
    """A pages ``unsettled`` line after the worker's line for ``url`` (interfaces item 2)."""
    record: dict[str, Any] = {"url": url, "outcome": "unsettled", "was": was, "reason": reason,
                              "worker": worker.name}  # fmt: skip
    if fetched_at is not None:
        record["fetched_at"] = timestamp(T0 + fetched_at)
    with worker.pages.open("a") as f:
        f.write(json.dumps(record) + "\n")


def test_a_page_after_a_cached_robots_txt_in_force_is_fine_and_no_request(tmp_path: Path) -> None:
    """The second crawl found robots.txt in the shared cache: no robots request in its ledger,
    a ``cache`` line instead.  Audit takes it for robots.txt read (a page after it, while the copy
    is in force, is fine) and counts it as no request; a page after the copy expired, or before
    it was taken up, or under a copy that claims a fetch after it was taken, is still a violation."""
    out = tmp_path / "crawl"
    w = Worker(out, "w1")
    cached(w, 0, HOST, fetched=-3600, expires=20)
    w.fetch(1, f"{HOST}/a")
    w.fetch(2, f"{HOST}/b")
    code, text, err = audited(out)
    assert (code, err) == (0, ""), text
    report = audit([out])
    assert (report.requests, report.robots_cached) == (2, 1)
    assert text.strip().endswith("; robots.txt taken from the cache 1 time")
    assert [h.requests for h in report.hosts] == [2]

    late = tmp_path / "late"
    w = Worker(late, "w1")
    w.fetch(0, f"{HOLE}/1early")  # before the copy was taken up
    cached(w, 1, HOLE, fetched=-10, expires=5)
    w.fetch(2, f"{HOLE}/1ok")
    w.fetch(6, f"{HOLE}/1waited")  # decided before the copy expired at 5, then its turn came
    w.fetch(5 + TURN + 1, f"{HOLE}/1expired")  # no wait is that long: nothing read robots.txt again
    cached(w, 5 + TURN + 2, HOST, fetched=5 + TURN + 3)  # "fetched" after it was taken: not read in time
    w.fetch(5 + TURN + 4, f"{HOST}/future")
    code, text, _ = audited(late)
    assert code == 1
    found = {r.authority: r for r in audit([late]).robots_first_violations}
    assert (found["gopher://hole.example:70"].pages_before, found["gopher://hole.example:70"].first.url) == (
        2,
        f"{HOLE}/1early",
    )
    assert found["gemini://capsule.example:1965"].cached_at == T0 + 5 + TURN + 2
    assert "a cached copy taken at" in text and "robots.txt never asked" in text


def test_a_copy_without_expires_at_lasts_a_day(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    w = Worker(out, "w1")
    cached(w, 0, HOST, fetched=-86_000)  # 400 s of its day left
    w.fetch(1, f"{HOST}/a")
    w.fetch(400 + TURN + 1, f"{HOST}/b")
    assert [r.first.url for r in audit([out]).robots_first_violations] == [f"{HOST}/b"]


def test_repeats_in_flight_are_allowed_and_named_others_are_not(tmp_path: Path) -> None:
    """A URL asked again after its worker wrote that its settling was not committed, or that it
    lost the URL's lease, is in flight (allowed, counted, shown); the same repeat with neither is
    fetched twice.  Ledger lines of other kinds are no requests."""
    out = tmp_path / "crawl"
    w1, w2 = Worker(out, "w1"), Worker(out, "w2")
    w1.request(0, f"{HOST}/robots.txt", kind="robots")
    # (b) settled as fetched, but the frontier refused the settling: an unsettled line follows
    w1.fetch(1, f"{HOST}/unsettled")
    unsettled(w1, f"{HOST}/unsettled", reason="the frontier could not be reached")
    # (c) w1 lost the lease of a page in flight, and dropped it; w1 went on living
    w1.request(2, f"{HOST}/lost")
    lease_lost(w1, 3, f"{HOST}/lost", reason="renewal found it re-leased")
    w1.fetch(4, f"{HOST}/other")
    # (c) again, the lease-lost line written after the other worker had asked (w1 paused)
    w1.request(5, f"{HOST}/paused")
    # the real one: settled, then asked again, no line explaining it
    w1.fetch(6, f"{HOST}/twice")
    w2.fetch(10, f"{HOST}/unsettled")
    w2.fetch(11, f"{HOST}/lost")
    w2.fetch(12, f"{HOST}/paused")
    w2.fetch(13, f"{HOST}/twice")
    lease_lost(w1, 14, f"{HOST}/paused", reason="renewal found it gone")
    _line(
        w1, {"at": timestamp(T0 + 15), "t": T0 + 15, "kind": "settle-refused", "worker": "w1"}
    )  # a kind unknown
    w1.fetch(16, f"{HOST}/last")
    code, text, err = audited(out)
    assert (code, err) == (1, ""), text
    report = audit([out])
    by_url = {d.url.removeprefix(f"{HOST}/"): d for d in report.duplicates}
    assert {u: (d.in_flight, d.violation) for u, d in by_url.items()} == {
        "unsettled": (True, False),
        "lost": (True, False),
        "paused": (True, False),
        "twice": (False, True),
    }
    assert by_url["unsettled"].why() == (
        "in flight: worker w1 asked for it, then its settling (fetched) was not committed:"
        " the frontier could not be reached"
    )
    assert (
        by_url["lost"].why()
        == "in flight: worker w1 asked for it, then it lost its lease (renewal found it re-leased)"
    )
    assert report.requests == 11 and report.events == 3  # the two lease-lost lines and the unknown kind
    assert [(v.later.url, v.earlier.url if v.earlier else None) for v in report.too_close] == []
    assert report.violations == 1
    lines = text.splitlines()
    assert f"requested again (no violation): {HOST}/lost (2 times): {by_url['lost'].why()}" in lines
    assert lines[0].startswith(f"VIOLATION requested again: {HOST}/twice (2 times): fetched twice")
    assert lines[-1].endswith("(4 URLs asked more than once, 3 of them allowed, 3 of them in flight)")
    data = as_json(report)
    assert data["in_flight"] == 3 and data["events"] == 3
    assert conforms(data, SHAPES["manners crawl audit"]) == []


def test_an_unsettled_line_undoes_the_line_before_it(tmp_path: Path) -> None:
    """A disallowed outcome never committed is no verdict: the URL decided again (allowed, under a
    robots.txt read since) and fetched is fine; an unsettled line with its own time counts too."""
    out = tmp_path / "crawl"
    w1, w2 = Worker(out, "w1"), Worker(out, "w2")
    w1.request(0, f"{HOST}/robots.txt", kind="robots")
    w1.settle(0.5, f"{HOST}/x", outcome="disallowed", status=None)
    unsettled(w1, f"{HOST}/x", was="disallowed", fetched_at=0.6)
    w2.fetch(3, f"{HOST}/x")
    w1.fetch(4, f"{HOST}/y")
    unsettled(w1, f"{HOST}/y", fetched_at=4.2)
    w2.fetch(6, f"{HOST}/y")
    code, text, _ = audited(out)
    assert code == 0, text
    (y,) = audit([out]).duplicates
    assert y.in_flight and not y.violation


def test_a_long_revisiting_ledger_is_summarised(tmp_path: Path) -> None:
    """22 minutes of revisits made 40 KB of due times: the text now says, per URL, how many
    revisits and the closest to its due time, and stays short; --json keeps every request time."""
    out = tmp_path / "crawl"
    w = Worker(out, "w1")
    w.request(0, f"{HOST}/robots.txt", kind="robots")
    pages = [f"{HOST}/p{i}" for i in range(60)]
    t = 1.0
    visits = 40
    for visit in range(1, visits + 1):
        for page in pages:
            w.request(t, page)
            w.settle(
                t + 0.01,
                page,
                visit=visit,
                changed=False,
                due=timestamp(T0 + t + 60.5 - 0.25 * (page == pages[0])),
            )
            t += 1.0
        t += 1.0  # then every page is due again, 60.5 s after its last visit
    code, text, err = audited(out)
    assert (code, err) == (0, ""), text[:2000]
    assert len(text) < 12_000, len(text)
    first = next(line for line in text.splitlines() if f"{pages[0]} " in line)
    assert re.fullmatch(
        rf"requested again \(no violation\): {re.escape(pages[0])} \(40 times\): 39 revisits, each once due,"
        r" the closest 0\.75 s after it \(the first due \S+Z\)",
        first,
    ), first
    data = as_json(audit([out]))
    p0 = next(d for d in data["duplicates"] if d["url"] == pages[0])  # type: ignore[union-attr]
    assert len(p0["at"]) == 40 and p0["revisits"] == 39 and p0["closest_to_due"] == pytest.approx(0.75)


def test_a_second_crawl_sharing_the_default_cache_audits_clean(tmp_path: Path) -> None:
    """Two real crawls in a row of one jetforce capsule, sharing the machine's default robots.txt
    cache (``XDG_CACHE_HOME``, no ``--cache``): the second finds robots.txt in it and sends no
    request for it (jetforce's log: robots.txt asked once in all), and its ledger says where its
    copy came from (``source: cache``, with the first crawl's fetch time), so its audit passes."""
    import servers

    root = tmp_path / "capsule"
    root.mkdir()
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private\n")
    (root / "index.gmi").write_text("# home\n=> /a.gmi a\n=> /b.gmi b\n=> /private/x.gmi x\n")
    for name in ("a", "b"):
        (root / f"{name}.gmi").write_text(f"# {name}\n")
    env = {k: v for k, v in os.environ.items() if k != "MANNERS_CACHE"}
    env |= {"PYTHONPATH": str(SRC), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.public_ports[0]}/"
        outs = [tmp_path / "first", tmp_path / "second"]
        for out in outs:
            cmd = [sys.executable, "-m", "manners", "crawl", seed, "--agent", "testbot", "--out", str(out),
                   "--min-delay", "0.2", "--timeout", "10", "--no-warc"]  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
            assert done.returncode == 0, done.stderr
        asked = jet.urls()
    assert list((tmp_path / "xdg").rglob("*")), "the crawl used no default cache under XDG_CACHE_HOME"
    assert sum(url.endswith("/robots.txt") for url in asked) == 1, asked  # the second never asked
    assert sum(url.endswith("/a.gmi") for url in asked) == 2  # both crawls fetched the pages

    code, text, err = audited(outs[1])
    assert (code, err) == (0, ""), text
    (first,) = outs[0].glob("requests-*.jsonl")
    (second,) = outs[1].glob("requests-*.jsonl")
    fetched = [json.loads(line) for line in first.read_text().splitlines()]
    robots = [line for line in fetched if line["kind"] == "robots"]
    assert [line["source"] for line in robots] == ["fetched"]
    kept = [json.loads(line) for line in second.read_text().splitlines()]
    (copy,) = [line for line in kept if line["kind"] == "robots"]
    assert copy["source"] == "cache" and copy["fetched_at"] <= copy["at"] < copy["expires_at"]
    assert abs(datetime.fromisoformat(copy["fetched_at"]).timestamp() - robots[0]["t"]) < 10
    assert kept.index(copy) == 0  # before the first page it allowed

    report = audit([outs[1]])
    assert report.robots_cached == 1 and report.requests == sum(1 for line in kept if line is not copy)
    assert report.requests == len(asked) - len(fetched)  # every request jetforce had of the second
    assert not [url for url in asked if "/private" in url]


@pytest.mark.quick
def test_the_totals_are_reconciled_with_the_frontier(tmp_path: Path) -> None:
    """The files' totals against the frontier's counts: a page whose settling the frontier never
    took, recorded as fetched with no unsettled line after it, makes them disagree (said, not a
    violation of manners); with the unsettled line, the outcomes agree, and the page requested but
    not settled is the one difference left, while the frontier holds it in flight."""
    import asyncio

    from manners.crawl.frontier import open_frontier

    out = tmp_path / "crawl"
    w = Worker(out, "w1")
    w.request(0, f"{HOST}/robots.txt", kind="robots")
    w.fetch(1, f"{HOST}/a")
    w.fetch(2, f"{HOST}/b")  # the frontier never took its settling
    w.settle(2.5, f"{HOST}/d", outcome="disallowed", status=None)
    w.settle(2.6, f"{HOST}/link", outcome="skipped", status=None, parent=f"{HOST}/a")  # no frontier URL

    async def frontier() -> None:
        f = open_frontier(out / "frontier.sqlite3")
        try:
            await f.add_many([f"{HOST}/a", f"{HOST}/b", f"{HOST}/d"], 0)
            auth = urls.authority(HOST)
            for _ in range(3):
                lease = await f.lease(auth, "w1", 60)
                assert lease is not None
                if lease.url.endswith("/a"):
                    await f.done(lease.url, "fetched", page=True)
                elif lease.url.endswith("/d"):
                    await f.done(lease.url, "disallowed")
        finally:
            await f.close()

    asyncio.run(frontier())
    code, text, err = audited(out)  # the one DIR's frontier.sqlite3, read without being named
    assert (code, err) == (0, ""), text
    said = [line for line in text.splitlines() if line.startswith("totals against the frontier")]
    assert said == [
        f"totals against the frontier {out / 'frontier.sqlite3'}: pages 2 (the frontier says 1),"
        " disallowed 1, fetched 2 (the frontier says 1): THEY DISAGREE; the crawl is not finished"
        " (0 queued, 1 in flight): totals may differ until then"
    ]
    unsettled(w, f"{HOST}/b", reason="the frontier could not be reached")
    report = audit([out], str(out))
    assert report.reconciled is not None
    assert [(f.name, f.files, f.frontier) for f in report.reconciled.figures] == [
        ("pages", 2, 1),
        ("disallowed", 1, 1),
        ("fetched", 1, 1),
    ]
    data = as_json(report)
    assert conforms(data, SHAPES["manners crawl audit"]) == []
    assert data["reconciled"]["in_flight"] == 1 and data["reconciled"]["agree"] is False  # type: ignore[index]
    from manners.crawl.audit import AuditError

    with pytest.raises(AuditError, match=r"nowhere is no crawl's frontier"):
        audit([out], str(tmp_path / "nowhere"))
    with pytest.raises(AuditError, match="name one with --name CRAWL"):
        audit([out], "redis://127.0.0.1:1/0")


def test_a_lease_lost_names_its_lease_and_excuses_no_other_request(tmp_path: Path) -> None:
    """A ``lease-lost`` line is about one lease: it labels a repeat of the request made under that
    lease as in flight, not a repeat of an earlier request settled under another lease."""
    out = tmp_path / "crawl"
    w1, w2 = Worker(out, "w1"), Worker(out, "w2")
    w1.request(0, f"{HOST}/robots.txt", kind="robots")
    url = f"{HOST}/x"
    _line(w1, {"at": timestamp(T0 + 1), "t": T0 + 1, "authority": urls.authority(url), "url": url,
               "kind": "page", "worker": "w1", "lease": "first", "spacing": 1.0,
               "not_before": None})  # fmt: skip
    w1.settle(1.5, url)
    lease_lost(w1, 3, url, lease="second")  # a later lease of it, lost before any request
    w2.fetch(4, url)
    code, text, _ = audited(out)
    assert code == 1, text
    (dup,) = audit([out]).duplicates
    assert dup.violation and not dup.in_flight
