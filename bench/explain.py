"""How long ``manners explain`` takes: every file of the web corpus, and generated large files.

The issue-10 bounds: every corpus file under 2 s, a 25,000-rule file under 5 s.  Run in
process (no interpreter start-up), output to /dev/null, the default target list (a path
per rule), plain text as when piped.

Run: python bench/explain.py [--limit N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from manners.cli import main

WEB = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "web"


def explain(path: Path, *more: str) -> float:
    """Seconds one ``manners explain PATH`` takes, output discarded."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        start = time.perf_counter()
        code = main(["explain", str(path), *more])
        took = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"manners explain {path} exited {code}")
    return took


def generated(rules: int, folder: Path) -> Path:
    """A file with ``rules`` distinct rules over a few groups, wildcards and anchors among them."""
    lines = []
    for n in range(rules):
        if n % 1000 == 0:
            lines.append(f"\nUser-agent: bot{n // 1000}" if n else "User-agent: *")
        kind = "Allow" if n % 5 == 0 else "Disallow"
        tail = "*.php" if n % 7 == 0 else "$" if n % 11 == 0 else "/"
        lines.append(f"{kind}: /section-{n % 97}/item-{n}{tail}")
    path = folder / f"generated-{rules}.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="only the first N corpus files")
    args = parser.parse_args()
    os.environ.setdefault("COLUMNS", "80")
    files = sorted(WEB.iterdir())
    if args.limit:
        files = files[: args.limit]
    times = sorted(((explain(f), f.name) for f in files), reverse=True)
    total = sum(t for t, _ in times)
    print(f"web corpus: {len(times)} files, {total:.1f} s in all; slowest:")
    for took, name in times[:5]:
        print(f"  {took:6.3f} s  {name}")
    with tempfile.TemporaryDirectory() as tmp:
        for rules in (4_000, 25_000):
            path = generated(rules, Path(tmp))
            print(f"generated, {rules:,} rules: {explain(path):.2f} s (text), "
                  f"{explain(path, '--json'):.2f} s (--json)")  # fmt: skip
    slowest = times[0][0] if times else 0.0
    sys.exit(0 if slowest < 2.0 else 1)


if __name__ == "__main__":
    run()
