"""How many rfc9309 answers over the web corpus changed with issue 10 (product tokens, fields
that end agent runs), against the engine at an earlier git revision.

    .venv/bin/python bench/answers_changed.py [--base REV]

The earlier engine is taken from git (``git archive``) into a temporary directory and imported
as ``manners_before``, so both read the same files in one process.  Questions per file: the
paths its own rules name (tests/corpus.py), for each robot the file names (up to three) and
one it does not, each passed as a bare token and as a full User-Agent header.
"""

from __future__ import annotations

import argparse
import importlib
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import manners  # noqa: E402
from corpus import rule_paths, web_files  # noqa: E402


def engine_at(rev: str, where: Path) -> ModuleType:
    data = subprocess.run(
        ["git", "archive", rev, "src/manners"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(where, filter="data")
    (where / "src" / "manners").rename(where / "manners_before")
    sys.path.insert(0, str(where))
    return importlib.import_module("manners_before")


def header(token: str) -> str:
    return f"{token}/2.1 (+http://example.org/{token}.html)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="0b50954", help="the revision before issue 10 (default: 0b50954)")
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = engine_at(args.base, Path(tmp))
        counts = {"decisions": 0, "delays": 0}
        changed: dict[str, list[tuple[str, ...]]] = {
            "decisions, bare token (item 2)": [],
            "crawl delays, bare token (item 2)": [],
            "decisions, full header (items 1 and 2)": [],
            "crawl delays, full header (items 1 and 2)": [],
        }
        files_changed: set[str] = set()
        for path in web_files():
            body = path.read_bytes()
            old: Any = before.parse(body, profile="rfc9309")
            new = manners.parse(body, profile="rfc9309")
            named = sorted({n for g in new.groups() for n in g.names if n != "*"})[:3]
            paths = rule_paths(new)
            for token in [*named, "mannersbot"]:
                for form, agent in (("bare token", token), ("full header", header(token))):
                    items = "(item 2)" if form == "bare token" else "(items 1 and 2)"
                    counts["delays"] += 1
                    a, b = old.crawl_delay(agent), new.crawl_delay(agent)
                    if a != b:
                        changed[f"crawl delays, {form} {items}"].append((path.name, agent, str(a), str(b)))
                        files_changed.add(path.name)
                    for p in paths:
                        url = f"https://{path.name}{p}"
                        counts["decisions"] += 1
                        x, y = old.allowed(url, agent), new.allowed(url, agent)
                        if x != y:
                            changed[f"decisions, {form} {items}"].append(
                                (path.name, agent, url, str(x), str(y))
                            )
                            files_changed.add(path.name)
        asked = f"{counts['decisions']:,} decisions and {counts['delays']:,} crawl delays asked"
        print(
            f"web corpus: {len(web_files()):,} files; {asked};"
            f" answers changed in {len(files_changed):,} files"
        )
        for what, rows in changed.items():
            total = counts["decisions" if what.startswith("decisions") else "delays"] // 2
            print(f"\n{what}: {len(rows):,} of {total:,} changed")
            for row in rows[: args.examples]:
                print("   ", " | ".join(row))


if __name__ == "__main__":
    main()
