"""The shared corpora, and test URLs built from each file's own rules."""

from __future__ import annotations

from pathlib import Path

import manners
from manners.match import google_escape

SHARED = Path(__file__).resolve().parents[2] / "shared"
WEB = SHARED / "corpus" / "web"
BENCH = SHARED / "corpus" / "bench"
SMALLNET = SHARED / "corpus" / "smallnet"
AGENTS = ("googlebot", "mannersbot")


def web_files() -> list[Path]:
    return sorted(WEB.iterdir())


def rule_paths(robots: manners.RobotsTxt, limit: int = 40) -> list[str]:
    """Paths that exercise a file's rules: each pattern made concrete, and one level deeper.

    Paths are %-encoded (non-ASCII as UTF-8 escapes), as Google's parser expects URLs.
    """
    paths = ["/", "/robots.txt"]
    for line in robots.lines():
        if line.kind not in ("allow", "disallow") or not line.value:
            continue
        path = google_escape(line.value.replace("*", "x").removesuffix("$"))
        if not path.startswith("/"):
            path = "/" + path
        paths += [path, path.rstrip("/") + "/x/y.html"]
        if len(paths) >= limit:
            break
    return list(dict.fromkeys(paths))
