"""How long ``manners explain`` takes, and what one question costs on a file of many rules.

Run in process (no interpreter start-up), output to /dev/null, plain text as when piped at
80 columns, the default target list (a path per rule), best of --repeat runs each:

1. docs.oracle.com, the corpus file with the most rules (19,126, of which 19,094 start with
   ``/html/``): as text and with ``--json``.  Targets: under 1.0 s and under 2.0 s.
2. Files of N ``Disallow: /*a*N`` rules (wildcards that share their first piece) and of N
   plain rules over a few groups, N from 1,000 to 30,000, each explained whole: seconds, and
   microseconds per rule.  Targets: 27,500 wildcard rules under 2 s; per-rule time flat for
   the wildcard files (the largest over the smallest under 1.5).  The plain files are shown
   beside them: their per-rule time falls as N grows, the start-up spread over more rules.
3. ``allowed()`` and ``decide()`` per call for 5,000 of docs.oracle.com's own paths, on that
   file and on a 10-rule file.  Target: at most 5x.
4. With ``--corpus``: every file of the web corpus, the slowest five (each under 2 s).

Exits 1 when a target is missed.

Run: .venv/bin/python bench/explain.py [--repeat N] [--corpus]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import manners
from manners.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from data_paths import unpacked

WEB = unpacked("web")
ORACLE = WEB / "docs.oracle.com"
SIZES = (1_000, 3_000, 10_000, 30_000)
# a generated file is explained whole: 30,000 rules are more than the default 512,000 bytes
WHOLE = ("--max-bytes", "100000000")
SMALL = (
    b"User-agent: *\nDisallow: /a\nDisallow: /b/\nAllow: /b/c\nDisallow: /*.pdf$\nDisallow: /html/x\n"
    b"Disallow: /html/y\nAllow: /html/z\nDisallow: /q?\nDisallow: /private\nDisallow: /tmp/\n"
)


def explain(path: Path, *more: str) -> float:
    """Seconds one ``manners explain PATH`` takes, output discarded."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        start = time.perf_counter()
        code = main(["explain", str(path), *more])
        took = time.perf_counter() - start
    if code not in (0, 1):
        raise SystemExit(f"manners explain {path} exited {code}")
    return took


def best(repeat: int, run: Callable[[], float]) -> float:
    return min(run() for _ in range(repeat))


def wildcards(rules: int, folder: Path) -> Path:
    """``rules`` wildcard rules that all start ``/*``: one group, one first piece."""
    path = folder / f"wildcards-{rules}.txt"
    path.write_text("User-agent: *\n" + "".join(f"Disallow: /*a*{n}\n" for n in range(rules)))
    return path


def plain(rules: int, folder: Path) -> Path:
    """``rules`` distinct rules over a few groups, wildcards and anchors among them."""
    lines = []
    for n in range(rules):
        if n % 1000 == 0:
            lines.append(f"\nUser-agent: bot{n // 1000}" if n else "User-agent: *")
        kind = "Allow" if n % 5 == 0 else "Disallow"
        tail = "*.php" if n % 7 == 0 else "$" if n % 11 == 0 else "/"
        lines.append(f"{kind}: /section-{n % 97}/item-{n}{tail}")
    path = folder / f"plain-{rules}.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def per_call(robots: manners.RobotsTxt, method: str, urls: list[str]) -> float:
    """Microseconds a call, over ``urls``, after the first two (which compile the rules)."""
    ask = getattr(robots, method)
    ask(urls[0], "googlebot")
    ask(urls[1], "googlebot")
    start = time.perf_counter()
    for url in urls:
        ask(url, "googlebot")
    return (time.perf_counter() - start) / len(urls) * 1e6


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best counts (default 3)")
    parser.add_argument("--corpus", action="store_true", help="also every file of the web corpus")
    args = parser.parse_args()
    os.environ["COLUMNS"] = "80"
    missed: list[str] = []

    def target(ok: bool, what: str) -> str:
        if not ok:
            missed.append(what)
        return "meets" if ok else "MISSES"

    text = best(args.repeat, lambda: explain(ORACLE))
    json = best(args.repeat, lambda: explain(ORACLE, "--json"))
    print(f"docs.oracle.com: {text:.2f} s as text ({target(text < 1.0, 'oracle text')} < 1.0 s), "
          f"{json:.2f} s with --json ({target(json < 2.0, 'oracle json')} < 2.0 s)")  # fmt: skip

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind, make in (("wildcard", wildcards), ("plain", plain)):
            rates = []
            for n in SIZES:
                took = best(args.repeat, functools.partial(explain, make(n, folder), *WHOLE))
                rates.append(took / n * 1e6)
                print(f"{kind:8} {n:>6,} rules: {took:6.2f} s, {rates[-1]:5.1f} us a rule")
            ratio = max(rates) / min(rates)
            if kind == "wildcard":  # the quadratic case; a plain file's fixed start-up weighs on 1,000 rules
                print(f"{kind:8} per-rule time, largest over smallest: {ratio:.2f} "
                      f"({target(ratio < 1.5, f'{kind} flat')} < 1.5)")  # fmt: skip
            else:
                print(f"{kind:8} per-rule time, largest over smallest: {ratio:.2f}")
        took = best(args.repeat, functools.partial(explain, wildcards(27_500, folder), *WHOLE))
        print(f"wildcard 27,500 rules: {took:.2f} s ({target(took < 2.0, 'wildcard 27,500')} < 2 s)")

    robots = manners.parse(ORACLE.read_bytes())
    values = [ln.value for ln in robots.lines() if ln.kind in ("allow", "disallow") and ln.value]
    urls = ["https://docs.oracle.com" + v.replace("*", "x").removesuffix("$") for v in values[:5000]]
    for method in ("allowed", "decide"):
        big = min(per_call(manners.parse(ORACLE.read_bytes()), method, urls) for _ in range(args.repeat))
        small = min(per_call(manners.parse(SMALL), method, urls) for _ in range(args.repeat))
        ratio = big / small
        print(f"{method}() on docs.oracle.com {big:.2f} us a call, on 10 rules {small:.2f} us: "
              f"{ratio:.1f}x ({target(ratio <= 5, method)} <= 5x)")  # fmt: skip

    if args.corpus:
        times = sorted(((explain(f), f.name) for f in sorted(WEB.iterdir())), reverse=True)
        print(f"web corpus: {len(times)} files, {sum(t for t, _ in times):.1f} s in all; slowest:")
        for took, name in times[:5]:
            print(f"  {took:6.3f} s  {name}")
        target(times[0][0] < 2.0, "corpus")
    if missed:
        print("missed:", ", ".join(missed))
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    run()
