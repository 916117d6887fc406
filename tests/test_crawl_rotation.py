"""A crawl's files that do not grow for ever (issue 31): ``--warc-size`` and SIGHUP.

The WARC files roll at ``--warc-size`` bytes (they rolled only at a fixed 1 GiB), and the pages
file and the ledger roll with them into numbered files (``pages.00001.jsonl``,
``requests-WORKER.00001.jsonl``); SIGHUP rolls all three at once, as logrotate expects.  Read back
with warcio, and by ``manners crawl audit``, which must read every file in order.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

import servers
from manners.crawl.crawler import read_settings
from manners.crawl.records import PageLog, log_files, series_of
from test_crawl_revisit import AGENT, ENV, wait_for, write_tree

PAGES = ("pages.jsonl", "pages.*.jsonl")
LEDGERS = ("requests-*.jsonl",)


def crawl_command(out: Path, *seeds: str, more: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", AGENT, "--out", str(out),
            "--allow-private", "--min-delay", "0", "--timeout", "5", "--cache", "memory", "--revisit",
            "--revisit-min", "1", "--revisit-max", "1", *more]  # fmt: skip


def lines(paths: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for path in paths for line in path.read_text().splitlines()]


def warc_responses(out: Path) -> int:
    n = 0
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as f:
            n += sum(1 for r in ArchiveIterator(f) if r.rec_type in ("response", "revisit"))
    return n


CAPSULE = {"index.gmi": "# G\n" + "".join(f"=> p{i}.gmi\n" for i in range(6)),
           **{f"p{i}.gmi": f"page {i}\n" * 20 for i in range(6)}}  # fmt: skip


# -- the logs, sans network --------------------------------------------------------------------------


def test_a_log_rolls_into_numbered_files_and_goes_on_in_the_last_when_opened_again(tmp_path: Path) -> None:
    log = PageLog(tmp_path / "pages.jsonl")
    log.write({"n": 1})
    assert log.rotate() == tmp_path / "pages.00001.jsonl"
    assert log.rotate() == tmp_path / "pages.00001.jsonl"  # nothing written there yet: no empty file
    log.write({"n": 2})
    log.rotate()
    log.write({"n": 3})
    log.close()
    again = PageLog(tmp_path / "pages.jsonl")  # a resumed crawl: the last file of the series
    assert again.path == tmp_path / "pages.00002.jsonl"
    again.write({"n": 4})
    again.close()
    found = log_files(tmp_path, PAGES)
    assert [p.name for p in found] == ["pages.jsonl", "pages.00001.jsonl", "pages.00002.jsonl"]
    assert [r["n"] for r in lines(found)] == [1, 2, 3, 4]
    assert series_of(tmp_path / "pages-h.example-12-abcdef12.00003.jsonl") == (
        "pages-h.example-12-abcdef12",
        3,
    )


# -- --warc-size --------------------------------------------------------------------------------------


def test_warc_size_rolls_the_warc_pages_and_ledger_files_and_audit_reads_them_all(tmp_path: Path) -> None:
    root = tmp_path / "capsule"
    write_tree(root, CAPSULE)
    out = tmp_path / "out"
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        for seeds in ([seed], []):  # the second run resumes: --warc-size is kept with the crawl
            more = ("--warc-size", "2K") if seeds else ()
            crawl = subprocess.Popen(crawl_command(out, *seeds, more=more), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=ENV, text=True)  # fmt: skip
            asked = len(jet.urls())
            wait_for(lambda asked=asked: len(jet.urls()) >= asked + 25, timeout=60)  # type: ignore[misc]
            crawl.send_signal(signal.SIGTERM)
            _, err = crawl.communicate(timeout=30)
            assert crawl.returncode == 0, err
            if seeds:
                first_run = sorted((out / "warc").glob("*.warc.gz"))
        asked_in_all = [a for a in jet.accesses() if a.url != f"{seed}robots.txt"]
    assert (read_settings(out) or {}).get("warc_size") == 2048
    warcs = sorted((out / "warc").glob("*.warc.gz"))
    assert len(first_run) >= 3 and len(warcs) >= len(first_run) + 3, warcs  # 1 per run without the option
    assert all(p.stat().st_size < 2048 + 1500 for p in warcs[:-1])  # rolled once past the size
    pages = log_files(out, PAGES)
    ledgers = log_files(out, LEDGERS)
    assert len(pages) >= 3 and len(ledgers) >= 3 + 2, (pages, ledgers)  # numbered files, both runs
    assert any(series_of(p)[1] > 0 for p in ledgers)
    records = lines(pages)
    fetched = [r for r in records if r["outcome"] == "fetched"]
    assert len(fetched) == warc_responses(out) == len(asked_in_all)  # nothing lost between the files
    requests = [r for r in lines(ledgers) if r["kind"] == "page"]
    assert len(requests) == len(asked_in_all)
    audit = subprocess.run([sys.executable, "-m", "manners", "crawl", "audit", str(out), "--json"],
                           capture_output=True, text=True, env=ENV, timeout=60)  # fmt: skip
    assert audit.returncode == 0, audit.stdout[-2000:] + audit.stderr
    report = json.loads(audit.stdout)
    assert report["requests"] == len(lines(ledgers))  # every ledger file, the rolled ones too
    repeated = {d["url"]: d for d in report["duplicates"]}
    # each repeat a revisit once due: the due times come from every pages file
    assert repeated and all(d["revisits"] == d["times"] - 1 and not d["violation"] for d in repeated.values())


def test_sighup_starts_new_files(tmp_path: Path) -> None:
    root = tmp_path / "capsule"
    write_tree(root, CAPSULE)
    out = tmp_path / "out"
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        crawl = subprocess.Popen(crawl_command(out, seed), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=ENV, text=True)  # fmt: skip
        try:
            wait_for(lambda: len(jet.urls()) >= 10)
            before = (
                sorted((out / "warc").glob("*.warc.gz")),
                log_files(out, PAGES),
                log_files(out, LEDGERS),
            )
            assert [len(files) for files in before] == [1, 1, 1]
            crawl.send_signal(signal.SIGHUP)
            asked = len(jet.urls())
            wait_for(lambda: len(jet.urls()) >= asked + 6)
            time.sleep(0.5)
            crawl.send_signal(signal.SIGHUP)
            asked = len(jet.urls())
            wait_for(lambda: len(jet.urls()) >= asked + 6)
        finally:
            crawl.send_signal(signal.SIGTERM)
            stdout, err = crawl.communicate(timeout=30)
        assert crawl.returncode == 0, err
    warcs = sorted((out / "warc").glob("*.warc.gz"))
    pages, ledgers = log_files(out, PAGES), log_files(out, LEDGERS)
    assert (len(warcs), len(pages), len(ledgers)) == (3, 3, 3), (warcs, pages, ledgers)
    assert [p.name for p in pages] == ["pages.jsonl", "pages.00001.jsonl", "pages.00002.jsonl"]
    assert all(p.stat().st_size > 0 for p in [*pages, *ledgers])
    assert len([r for r in lines(pages) if r["outcome"] == "fetched"]) == warc_responses(out)
    assert "Traceback" not in err
    files = next(line for line in stdout.splitlines() if line.startswith("files: "))
    assert all(str(p) in files for p in [*pages, *ledgers, *warcs]), files  # the summary names them all


@pytest.mark.parametrize(
    ("size", "said"),
    [
        ("10Q", "is not a size"),
        ("0", "or more"),
        ("100", "or more"),
        ("-1M", "is not a size"),
        ("", "not a size"),
    ],
)
def test_bad_warc_sizes_are_one_sentence_and_exit_2(tmp_path: Path, size: str, said: str) -> None:
    cmd = [sys.executable, "-m", "manners", "crawl", "gemini://localhost/", "--agent", AGENT,
           "--out", str(tmp_path / "out"), f"--warc-size={size}"]  # fmt: skip
    got = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=30)
    assert got.returncode == 2 and said in got.stderr.strip().splitlines()[-1], got.stderr
    assert "Traceback" not in got.stderr and not (tmp_path / "out").exists()


def test_audit_reads_every_rolled_file(tmp_path: Path) -> None:
    """A single-process crawl rolled its ledger and pages.jsonl: a URL refused in the rolled pages
    file (pages.00001.jsonl), then requested (in the rolled ledger), is caught, and every request
    of both ledger files is counted."""
    from test_audit import HOST, Worker, audited

    out = tmp_path / "crawl"
    w = Worker(out, "vm-12-abcdef12", shared=True)
    w.request(0, f"{HOST}/robots.txt", kind="robots")
    w.fetch(1, f"{HOST}/a")
    w.ledger, w.pages = out / "requests-vm-12-abcdef12.00001.jsonl", out / "pages.00001.jsonl"
    w.settle(2, f"{HOST}/no", outcome="disallowed", status=None, line=2, rule="Disallow: /no",
             robots=f"{HOST}/robots.txt")  # fmt: skip
    w.fetch(3, f"{HOST}/no")
    code, stdout, _ = audited(out, json_out=True)
    report = json.loads(stdout)
    assert code == 1 and report["requests"] == 3, report
    assert [d["url"] for d in report["disallowed_requested"]] == [f"{HOST}/no"]


def test_sizes_read_as_people_write_them() -> None:
    from manners.options import byte_size

    assert [byte_size(t) for t in ("1024", "2K", "1.5k", "64M", "64MiB", "1G", "1 GB")] == [
        1024, 2048, 1536, 64 << 20, 64 << 20, 1 << 30, 1 << 30,
    ]  # fmt: skip


def test_without_warc_the_logs_roll_when_pages_jsonl_reaches_the_size(tmp_path: Path) -> None:
    root = tmp_path / "capsule"
    write_tree(root, CAPSULE)
    out = tmp_path / "out"
    with servers.jetforce_hosts([root]) as jet:
        seed = f"gemini://localhost:{jet.listen_ports[0]}/"
        more = ("--no-warc", "--warc-size", "4K")
        crawl = subprocess.Popen(crawl_command(out, seed, more=more), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, env=ENV, text=True)  # fmt: skip
        try:
            wait_for(lambda: len(jet.urls()) >= 30, timeout=60)
        finally:
            crawl.send_signal(signal.SIGTERM)
            _, err = crawl.communicate(timeout=30)
        assert crawl.returncode == 0, err
        asked = [a for a in jet.accesses() if not a.url.endswith("/robots.txt")]
    pages = log_files(out, PAGES)
    assert not (out / "warc").exists() or not list((out / "warc").iterdir())
    assert len(pages) >= 3 and len(log_files(out, LEDGERS)) == len(pages), pages
    assert all(p.stat().st_size < 4096 + 1024 for p in pages[:-1])  # rolled at the first line past 4K
    assert len([r for r in lines(pages) if r["outcome"] == "fetched"]) == len(asked)
