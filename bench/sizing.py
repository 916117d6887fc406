"""Benchmark: how many bytes a revisiting crawl writes per visit, file by file.

A crawl that never ends (``manners crawl --revisit``) grows its files for as long as it runs:
the WARC files (a request and a response record per changed answer, a request and a revisit
record per unchanged one), ``pages.jsonl`` (a line per visit), the ledger (a line per request)
and the frontier (a row per URL, updated in place).  Operators size disks and ``--warc-size``
from these figures; this script measures them on a real crawl instead of guessing.

jetforce serves a generated capsule of ``--pages`` gemtext pages (``--page-bytes`` each, every
page linking to a few others), and gophernicus a Gopher hole of ``--pages`` text files under one
menu.  ``manners crawl --revisit --revisit-min 1 --revisit-max 4 --min-delay 0`` watches both
for ``--seconds`` of wall time while this script rewrites ``--changing`` of the pages every few
seconds (so some answers are changes, most are not); SIGTERM ends it.  Then it reads the crawl's
files: the WARC records by kind with their compressed sizes (warcio's offsets), the lines of
``pages.jsonl`` and of the ledger, and the frontier's size (after a WAL checkpoint) at the end of
the first pass and at the end.

    .venv/bin/python bench/sizing.py [--pages 200] [--page-bytes 2000] [--seconds 60] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import servers  # noqa: E402

WORDS = ["small", "net", "capsule", "gopher", "hole", "page", "text", "robots", "archive", "crawl", "version"]


def text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out)[:size]


def build(root: Path, hole: Path, pages: int, size: int, rng: random.Random) -> None:
    root.mkdir(parents=True)
    hole.mkdir(parents=True)
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    (root / "index.gmi").write_text("# Sizing\n" + "".join(f"=> p{i}.gmi page {i}\n" for i in range(pages)))
    for i in range(pages):
        links = "".join(f"=> p{rng.randrange(pages)}.gmi\n" for _ in range(3))
        (root / f"p{i}.gmi").write_text(f"# Page {i}\n{links}\n{text(rng, size)}")
        (hole / f"t{i}.txt").write_text(text(rng, size))


def rewrite(root: Path, hole: Path, changing: int, pages: int, size: int, stop: threading.Event) -> None:
    rng = random.Random(7)
    while not stop.wait(2.0):
        for i in rng.sample(range(pages), changing):
            (root / f"p{i}.gmi").write_text(f"# Page {i}, {time.time()}\n{text(rng, size)}")
            (hole / f"t{i}.txt").write_text(f"{time.time()}\n{text(rng, size)}")


def frontier_bytes(path: Path) -> int:
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path.stat().st_size


def warc_sizes(out: Path) -> dict[str, list[int]]:
    """Compressed bytes of each WARC record, by kind (warcio's offsets: one gzip member each)."""
    sizes: dict[str, list[int]] = defaultdict(list)
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as f:
            it = ArchiveIterator(f)
            for record in it:
                record.content_stream().read()
                sizes[record.rec_type].append(it.get_record_length())
    return sizes


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="manners-sizing-"))
    root, hole, out = work / "capsule", work / "hole", work / "out"
    build(root, hole, args.pages, args.page_bytes, rng)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with servers.jetforce(root) as port, servers.gophernicus(hole, options=["-na"]) as gport:
        seeds = [f"gemini://localhost:{port}/", f"gopher://127.0.0.1:{gport}/"]
        cmd = [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", "sizebot", "--out", str(out),
               "--allow-private", "--min-delay", "0", "--cache", "memory", "--revisit", "--revisit-min", "1",
               "--revisit-max", "4", "--json"]  # fmt: skip
        stop = threading.Event()
        changer = threading.Thread(target=rewrite, args=(root, hole, args.changing, args.pages,
                                                          args.page_bytes, stop))  # fmt: skip
        crawl = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        started = time.monotonic()
        first_pass = None
        urls = 2 * args.pages + 3  # pages, files, index, menu (and caps.txt)
        while time.monotonic() - started < args.seconds:
            time.sleep(0.5)
            if first_pass is None and (out / "pages.jsonl").exists():
                lines = (out / "pages.jsonl").read_text().count("\n")
                if lines >= urls:
                    first_pass = frontier_bytes(out / "frontier.sqlite3")
                    changer.start()
        stop.set()
        crawl.send_signal(signal.SIGTERM)
        stdout, _ = crawl.communicate(timeout=60)
        if changer.is_alive():
            changer.join()
    summary = json.loads(stdout)
    records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    ledgers = sorted(out.glob("requests-*.jsonl"))
    ledger_lines = [line for p in ledgers for line in p.read_bytes().splitlines()]
    sizes = warc_sizes(out)
    requests, responses, revisits = sizes["request"], sizes["response"], sizes["revisit"]
    visits = len(responses) + len(revisits)
    warc_total = sum(p.stat().st_size for p in (out / "warc").glob("*.warc.gz"))
    pages_total = (out / "pages.jsonl").stat().st_size
    ledger_total = sum(p.stat().st_size for p in ledgers)
    frontier_end = frontier_bytes(out / "frontier.sqlite3")
    per_request = sum(requests) / len(requests)
    return {
        "pages": args.pages,
        "page_bytes": args.page_bytes,
        "seconds": args.seconds,
        "exit": crawl.returncode,
        "ended": summary.get("ended"),
        "urls": len({r["url"] for r in records}),
        "visits": visits,
        "responses": len(responses),
        "revisits": len(revisits),
        "warc_bytes": warc_total,
        "warc_per_visit": round(warc_total / visits),
        "warc_per_changed_visit": round(per_request + sum(responses) / len(responses)),
        "warc_per_unchanged_visit": round(per_request + sum(revisits) / max(len(revisits), 1)),
        "pages_jsonl_bytes": pages_total,
        "pages_jsonl_per_line": round(pages_total / len(records)),
        "ledger_bytes": ledger_total,
        "ledger_per_request": round(ledger_total / len(ledger_lines)),
        "frontier_after_first_pass": first_pass,
        "frontier_end": frontier_end,
        "frontier_per_url": round(frontier_end / len({r["url"] for r in records})),
        "out": str(out),
    }


def main() -> None:
    how = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=how)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--page-bytes", type=int, default=2000)
    parser.add_argument("--changing", type=int, default=10, help="pages rewritten every 2 s")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:28} {value}")


if __name__ == "__main__":
    main()
