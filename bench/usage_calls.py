"""What ``robots.usage()`` costs a call, beside the questions a robot already asks.

Issue 35 sets "``usage()`` on a 2,000-rule file under 2 µs a call".  The file is drawn from a
seed: 2,000 Allow and Disallow rules with wildcards and ``$`` over a few hundred directories,
for ``*`` and three named agents, and Content-Usage lines with and without a path and a
Content-Signal line in each group (draft-ietf-aipref-attach-05, Section 3).  The same file
without its usage lines is measured too: ``usage()`` on a file that states no preference.

Beside it, in the same run and on the same URLs: manners' own ``allowed()`` and ``decide()``
on that file, and Protego's ``can_fetch``, as a yardstick of what a robots.txt question costs
elsewhere (Google's binding parses the file at every call, so it is no yardstick of a call).  Rounds
take turns and the best of ``--repeat`` counts.  Every call is made from Python.

Run: .venv/bin/python bench/usage_calls.py [--repeat N] [--urls N]
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import time
from collections.abc import Callable

import manners

AGENTS = ("*", "examplebot", "otherbot", "archivebot")
TARGET_US = 2.0


def draw_file(seed: int, rules: int = 2000, usage: bool = True) -> str:
    """A robots.txt of ``rules`` Allow/Disallow lines in four groups, with (or without) usage lines."""
    rng = random.Random(seed)
    dirs = [f"/{rng.choice(['docs', 'shop', 'blog', 'api', 'media'])}{i}" for i in range(300)]
    out: list[str] = []
    per_group = rules // len(AGENTS)
    for agent in AGENTS:
        out.append(f"User-agent: {agent}")
        for _ in range(per_group):
            d = rng.choice(dirs)
            tail = rng.choice(["/", "/*.pdf$", "/*?session=", "/private/", "$", "/*/print"])
            out.append(f"{rng.choice(['Allow', 'Disallow'])}: {d}{tail}")
        if usage:
            out.append("Content-Usage: train-ai=n, search=y")
            for d in rng.sample(dirs, 5):
                out.append(f"Content-Usage: {d}/ train-ai={rng.choice('yn')}, ai-use={rng.choice('yn')}")
            out.append("Content-Signal: search=yes, ai-input=yes, ai-train=no")
        out.append("")
    return "\n".join(out)


def draw_urls(seed: int, n: int) -> list[tuple[str, str]]:
    """``n`` (URL, agent) pairs under the file's directories and outside them."""
    rng = random.Random(seed + 1)
    dirs = [f"/{rng.choice(['docs', 'shop', 'blog', 'api', 'media'])}{i}" for i in range(300)]
    tails = ["/", "/a.pdf", "/page?session=1", "/private/x", "/x/print", "/index.html"]
    asking = (*AGENTS[1:], "somebot")
    return [(f"https://example.com{rng.choice(dirs)}{rng.choice(tails)}", rng.choice(asking))
            for _ in range(n)]  # fmt: skip


def contestants(text: str, bare: str) -> dict[str, Callable[[list[tuple[str, str]]], None]]:
    robots, plain = manners.parse(text), manners.parse(bare)

    def usage(urls: list[tuple[str, str]]) -> None:
        for u, a in urls:
            robots.usage(u, a)

    def usage_bare(urls: list[tuple[str, str]]) -> None:
        for u, a in urls:
            plain.usage(u, a)

    def allowed(urls: list[tuple[str, str]]) -> None:
        for u, a in urls:
            robots.allowed(u, a)

    def decide(urls: list[tuple[str, str]]) -> None:
        for u, a in urls:
            robots.decide(u, a)

    runs = {"usage()": usage, "usage(), no usage lines": usage_bare, "allowed()": allowed, "decide()": decide}
    try:
        from protego import Protego

        p = Protego.parse(text)

        def protego(urls: list[tuple[str, str]]) -> None:
            for u, a in urls:
                p.can_fetch(u, a)

        runs["protego can_fetch"] = protego
    except ImportError:
        print("missing peer protego")
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7, help="rounds; each one's best counts (default 7)")
    ap.add_argument("--urls", type=int, default=20_000, help="calls per contestant a round (default 20,000)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    text, bare = draw_file(args.seed), draw_file(args.seed, usage=False)
    urls = draw_urls(args.seed, args.urls)
    robots = manners.parse(text)
    rules = sum(1 for line in text.splitlines() if line.split(":")[0] in ("Allow", "Disallow"))
    stated = sum(1 for u, a in urls if any(p.value != "unstated" for p in robots.usage(u, a).categories))
    where = platform.processor() or platform.machine()
    print(f"{where}, Python {platform.python_version()}, manners {manners.__version__}")
    print(f"a file of {rules} rules, {len(text.splitlines())} lines; {len(urls):,} URLs,"
          f" {stated:,} with a stated Content-Usage preference; best of {args.repeat}")  # fmt: skip
    runs = contestants(text, bare)
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.repeat):
        for name, fn in runs.items():
            gc.collect()
            t = time.perf_counter()
            fn(urls)
            best[name] = min(best[name], time.perf_counter() - t)
    us = {name: secs / len(urls) * 1e6 for name, secs in best.items()}
    print(f"\n{'':26} {'µs a call':>10} {'of usage()':>11}")
    for name, each in us.items():
        print(f"{name:26} {each:10.3f} {each / us['usage()']:10.2f}x")
    verdict = "met" if us["usage()"] < TARGET_US else "NOT met"
    print(f"\nusage() {us['usage()']:.3f} µs a call: the {TARGET_US:g} µs target is {verdict}")


if __name__ == "__main__":
    main()
