"""The corpora of data/, and test URLs built from each file's own rules."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import manners
from data_paths import SMALLNET as SMALLNET
from data_paths import unpacked
from manners._core import google_escape

WEB = unpacked("web")
BENCH = unpacked("bench")
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


def binding_rewrite(url: str) -> str:
    """What fast-robotstxt does to a URL before matching (it parses URLs with ada, per
    WHATWG): an empty query is dropped and a backslash becomes a slash."""
    return url.removesuffix("?").replace("\\", "/")


class Comparison(NamedTuple):
    answers: int
    differences: list[tuple[str, str, str, bool, bool]]  # host, agent, url, ours, theirs


def compare_with_google() -> Comparison:
    """Ask the google profile and Google's C++ parser (fast-robotstxt) the same questions."""
    import robotstxt

    matcher = robotstxt.RobotsMatcher()
    answers = 0
    differences = []
    for path in web_files():
        body = path.read_bytes().decode("utf-8", "replace")
        robots = manners.parse(body, profile="google", max_bytes=None)
        for p in rule_paths(robots):
            url = f"https://{path.name}{p}"
            for agent in AGENTS:
                answers += 1
                ours = robots.allowed(url, agent)
                theirs = matcher.is_allowed(body, agent, url)
                if ours != theirs:
                    differences.append((path.name, agent, url, ours, theirs))
    return Comparison(answers, differences)


if __name__ == "__main__":
    result = compare_with_google()
    n, d = result.answers, len(result.differences)
    rewritten = sum(1 for x in result.differences if binding_rewrite(x[2]) != x[2])
    print(f"{n:,} answers, {d:,} differ: agreement {1 - d / n:.4%}")
    print(f"{rewritten:,} of the differences are on URLs the binding rewrites before matching")
    for x in result.differences:
        print("  ", *x)
