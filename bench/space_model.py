"""The shape of the bench's small net (bench/space.py), drawn from a seed: hosts, pages, links, robots.txt.

Everything here is pure and deterministic: the bench, each server process and the checks
rebuild the same ``Space`` from the same parameters, so no page is stored anywhere; a server
makes a page's bytes when it is asked for them, and the checks know what every server holds.

Shape (per host, drawn from ``random.Random(f"{seed}:{index}")``):

- pages per host: lognormal, median 6, sigma 2.3 (mean about 85: most hosts a handful,
  a few thousand or tens of thousands), so 4,400 hosts hold about 375,000 pages;
  ``cap`` bounds the biggest host (the test's small spaces);
- each host is a tree of pages, ``fanout`` 2 to 12 children a page (depth about log(n));
  every child of the root starts a branch with a section of its own, some of them the
  very paths the host's robots.txt names (so disallowed branches are real), the others
  ordinary ("/posts/", "/notes/", ...); a Gemini page also links to 0-3 pages of its own
  host and, one page in six, to a page of another host (Gemini or Gopher); a Gopher menu
  (a page with children) does the same among holes; a Gopher leaf is a text file;
- sizes: lognormal with mean 26 KB (sigma 1, median 15.8 KB), at most 1 MB;
- robots.txt: a Gemini capsule serves one of the corpus's gemini_*.txt files (55%),
  answers ``51`` (37%), ``40`` (4%) or closes without a word (4%); a Gopher hole serves one of
  gopher_*.txt (50%) or says "no such selector"; Crawl-delay and Request-rate in them are
  divided by the time factor;
- faults, each on a small share of hosts: dead (the name resolves, nothing listens: 2%),
  slow (a round trip 20 times the host's: 2%), ``44 SLOW DOWN`` (one page in five answers
  ``44 1`` or ``44 2`` once: 2% of capsules), redirects across hosts (one page in four
  answers ``31`` to a page of another capsule: 2% of capsules), an expired certificate (2% of
  capsules), and one trap capsule whose ``/cal/N`` links to ``/cal/N+1`` without end;
- latency: a round trip per host, lognormal with median 60 ms and sigma 0.8 (real-world
  distances), divided by the time factor like every other time.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from data_paths import SMALLNET as CORPUS  # noqa: E402  (the small-net robots.txt corpus)

GEMINI_PORT = 1965
GOPHER_PORT = 70
FACTOR = 50.0  # time compression: one second of the bench stands for FACTOR seconds of the small net
MEAN_SIZE = 26_000
MAX_SIZE = 1_000_000
TRAP_PATH = "/cal/"
CLOSED = "closed"  # the status a server logs for a connection closed before its request came
ORDINARY_SECTIONS = ("/posts/", "/notes/", "/log/", "/docs/", "/music/", "/archive/", "/photos/", "/")


def children(pages: int, fanout: int, i: int) -> range:
    """The pages page ``i`` of a host's tree is the parent of: its links within the host."""
    return range(i * fanout + 1, min(pages, (i + 1) * fanout + 1))


@dataclass(frozen=True)
class Host:
    """One capsule or hole: everything a server needs to answer for it."""

    index: int
    name: str
    scheme: str  # "gemini" or "gopher"
    address: str
    pages: int
    fanout: int
    sections: tuple[str, ...]  # the section of each branch (children of the root), cycled
    robots_file: str | None  # the corpus file served as robots.txt
    robots_answer: str  # "file", "missing" (51 or no such selector), "40", "silent"
    fault: str = ""  # "", "dead", "slow", "slowdown", "redirect", "expired", "trap"
    rtt: float = 0.06  # seconds, before compression
    robots_text: str | None = field(default=None, compare=False)  # served text (compressed delays)

    @property
    def port(self) -> int:
        return GEMINI_PORT if self.scheme == "gemini" else GOPHER_PORT

    @property
    def root(self) -> str:
        return f"gemini://{self.name}/" if self.scheme == "gemini" else f"gopher://{self.name}/1/"

    @property
    def authority(self) -> str:
        return f"{self.name}:{self.port}"


def _unit(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts``."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _lognormal(u: float, median: float, sigma: float) -> float:
    return median * math.exp(sigma * statistics.NormalDist().inv_cdf(min(max(u, 1e-12), 1 - 1e-12)))


def scale_delays(text: str, factor: float) -> str:
    """``Crawl-delay: 10`` -> ``Crawl-delay: 0.2`` at factor 50; ``Request-rate: 1/10`` likewise."""

    def delay(m: re.Match[str]) -> str:
        return f"{m.group(1)}{float(m.group(2)) / factor:g}"

    def rate(m: re.Match[str]) -> str:
        unit = {"s": 1, "m": 60, "h": 3600}[(m.group(4) or "s").lower()]
        return f"{m.group(1)}{m.group(2)}/{float(m.group(3)) * unit / factor:g}s"

    text = re.sub(r"(?im)^(\s*crawl-delay\s*:\s*)([0-9.]+)", delay, text)
    return re.sub(r"(?im)^(\s*request-rate\s*:\s*)(\d+)/([0-9.]+)([smh])?", rate, text)


def robots_sections(text: str) -> list[str]:
    """Concrete sections for the paths a robots.txt names (``/github/*/files`` -> ``/github/x/files/``)."""
    out = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() not in ("disallow", "allow") or not value.strip():
            continue
        path = value.strip().split("#", 1)[0].strip().replace("*", "x").rstrip("$")
        if path.startswith(("0/", "1/")):
            path = path[1:]
        if not path.startswith("/"):
            path = "/" + path
        if path in ("/", "/x", "/x/"):
            continue
        out.append(path if path.endswith("/") else path + "/")
    return list(dict.fromkeys(out))


def corpus_files(scheme: str) -> list[str]:
    return sorted(p.name for p in CORPUS.glob(f"{scheme}_*.txt"))


@dataclass
class Space:
    """The hosts of a space; pages, links and answers are computed from them on demand."""

    seed: int
    hosts: list[Host]
    factor: float = FACTOR
    trap_depth: int = 0  # informative only: how deep the crawl may follow the trap

    @cached_property
    def by_name(self) -> dict[str, Host]:
        return {h.name: h for h in self.hosts}

    @cached_property
    def capsules(self) -> list[Host]:
        return [h for h in self.hosts if h.scheme == "gemini"]

    @cached_property
    def holes(self) -> list[Host]:
        return [h for h in self.hosts if h.scheme == "gopher"]

    # -- pages -------------------------------------------------------------------------------

    def branch(self, host: Host, i: int) -> int:
        while i > host.fanout:
            i = (i - 1) // host.fanout
        return i

    def section(self, host: Host, i: int) -> str:
        return "/" if i == 0 else host.sections[(self.branch(host, i) - 1) % len(host.sections)]

    def is_menu(self, host: Host, i: int) -> bool:
        """A page with children: a Gopher menu (a Gemini page is gemtext either way)."""
        return i == 0 or i * host.fanout + 1 < host.pages

    def path(self, host: Host, i: int) -> str:
        """The page's path (Gemini) or selector (Gopher)."""
        if i == 0:
            return "/"
        section = self.section(host, i)
        if host.scheme == "gemini":
            return f"{section}{i}.gmi"
        return f"{section}{i}" if self.is_menu(host, i) else f"{section}{i}.txt"

    def url(self, host: Host, i: int) -> str:
        if host.scheme == "gemini":
            return f"gemini://{host.name}{self.path(host, i)}"
        return f"gopher://{host.name}/{'1' if self.is_menu(host, i) else '0'}{self.path(host, i)}"

    def page_of(self, host: Host, path: str) -> int | None:
        """The page a path or selector names, or None."""
        if host.scheme == "gemini":
            if path == "/":
                return 0
            m = re.search(r"/(\d+)\.gmi$", path)
        else:
            if path in ("", "/"):
                return 0
            m = re.search(r"/(\d+)(\.txt)?$", path)
        if not m:
            return None
        i = int(m.group(1))
        return i if 0 < i < host.pages and self.path(host, i) == path else None

    def size(self, host: Host, i: int) -> int:
        return min(
            MAX_SIZE, int(_lognormal(_unit(self.seed, host.index, i, "size"), MEAN_SIZE / math.e**0.5, 1.0))
        )

    def _rng(self, host: Host, i: int) -> random.Random:
        return random.Random(f"{self.seed}:{host.index}:{i}")

    def links(self, host: Host, i: int) -> list[str]:
        """The URLs page ``i`` links to (a Gopher text file links to nothing)."""
        if host.scheme == "gopher" and not self.is_menu(host, i):
            return []
        out = [self.url(host, c) for c in children(host.pages, host.fanout, i)]
        rng = self._rng(host, i)
        for _ in range(rng.randrange(4)):
            out.append(self.url(host, rng.randrange(host.pages)))
        if rng.random() < 1 / 6:
            pool = self.capsules if host.scheme == "gemini" and rng.random() < 0.9 else self.holes
            if pool:
                other = pool[rng.randrange(len(pool))]
                out.append(self.url(other, rng.randrange(other.pages)))
        if host.fault == "trap" and i == 0:
            out.append(f"gemini://{host.name}{TRAP_PATH}0")
        return list(dict.fromkeys(out))

    def trap_links(self, host: Host, n: int) -> list[str]:
        return [f"gemini://{host.name}{TRAP_PATH}{n + 1}", f"gemini://{host.name}/"]

    def redirect(self, host: Host, i: int) -> str | None:
        """Where page ``i`` of a redirecting capsule sends the client (another capsule's page)."""
        if host.fault != "redirect" or i == 0 or _unit(self.seed, host.index, i, "redirect") >= 0.25:
            return None
        others = [h for h in self.capsules if h.fault in ("", "expired") and h is not host]
        if not others:
            return None
        rng = self._rng(host, -i)
        other = others[rng.randrange(len(others))]
        return self.url(other, rng.randrange(other.pages))

    def slow_down(self, host: Host, i: int) -> int | None:
        """Seconds of the ``44`` page ``i`` answers the first time it is asked, or None."""
        if host.fault != "slowdown" or i == 0 or _unit(self.seed, host.index, i, "44") >= 0.2:
            return None
        return 1 + int(_unit(self.seed, host.index, i, "44s") * 2)

    def page_count(self) -> int:
        return sum(h.pages for h in self.hosts)

    def pages(self, host: Host) -> Iterator[int]:
        return iter(range(host.pages))

    def hosts_file(self) -> str:
        return "127.0.0.1\tlocalhost\n" + "".join(f"{h.address}\t{h.name}\n" for h in self.hosts)


def build(seed: int, capsules: int, holes: int, *, cap: int | None = None, factor: float = FACTOR) -> Space:
    """The space drawn from ``seed``: ``capsules`` Gemini hosts, then ``holes`` Gopher hosts."""
    gemini_files = corpus_files("gemini")
    gopher_files = corpus_files("gopher")
    if not gemini_files or not gopher_files:
        raise SystemExit(f"the small-net corpus is missing: no gemini_*.txt or gopher_*.txt in {CORPUS}")
    texts = {
        f: scale_delays((CORPUS / f).read_text(errors="replace"), factor) for f in gemini_files + gopher_files
    }
    hosts = []
    trap_at = int(random.Random(f"{seed}:trap").randrange(capsules)) if capsules >= 20 else -1
    for k in range(capsules + holes):
        rng = random.Random(f"{seed}:{k}")
        scheme = "gemini" if k < capsules else "gopher"
        n = max(1, round(_lognormal(rng.random(), 6.0, 2.3)))
        if cap is not None:
            n = min(n, cap)
        fanout = rng.randrange(2, 13)
        r = rng.random()
        if scheme == "gemini":
            answer = "file" if r < 0.55 else "missing" if r < 0.92 else "40" if r < 0.96 else "silent"
            robots = gemini_files[rng.randrange(len(gemini_files))] if answer == "file" else None
            name = f"c{k:04d}.gemini.test"
            address = f"127.10.{k // 250}.{k % 250 + 1}"
        else:
            answer = "file" if r < 0.5 else "missing"
            robots = gopher_files[rng.randrange(len(gopher_files))] if answer == "file" else None
            j = k - capsules
            name = f"h{j:03d}.gopher.test"
            address = f"127.20.{j // 250}.{j % 250 + 1}"
        f = rng.random()
        fault = ""
        if k == trap_at:
            fault = "trap"
        elif f < 0.02:
            fault = "dead"
        elif f < 0.04:
            fault = "slow"
        elif scheme == "gemini" and f < 0.06:
            fault = "slowdown"
        elif scheme == "gemini" and f < 0.08:
            fault = "redirect"
        elif scheme == "gemini" and f < 0.10:
            fault = "expired"
        rtt = _lognormal(rng.random(), 0.06, 0.8) * (20 if fault == "slow" else 1)
        own = robots_sections(texts[robots]) if robots else []
        ordinary = list(ORDINARY_SECTIONS)
        rng.shuffle(ordinary)
        sections = tuple(dict.fromkeys(own[: rng.randrange(len(own) + 1)] + ordinary[: rng.randrange(1, 5)]))
        if scheme == "gopher":
            sections = tuple(s.rstrip("/") + "/" if s != "/" else "/" for s in sections)
        hosts.append(
            Host(
                k,
                name,
                scheme,
                address,
                n,
                fanout,
                sections,
                robots,
                answer,
                fault,
                rtt,
                texts[robots] if robots else None,
            )
        )
    return Space(seed, hosts, factor)
