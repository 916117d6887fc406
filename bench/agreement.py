"""Does the installed engine answer every question as the pure-Python engine did?

The issue that replaces the Python engine (parse, match, robots, profiles, agents and
diagnostics) with a Rust one asks that the Python modules be deleted only once the two agree
on every answer.  This script asks both the same questions, in one process:

* the old engine: those six modules as they were at ``--old-rev`` (default 2fc8753), taken
  from git (``git show REV:src/manners/NAME.py``) into a temporary directory and imported as
  the package ``manners_python_engine`` (they import each other only relatively);
* the new engine: whatever ``import manners`` gives (``manners.parse``).

Questions, for each robots.txt of the corpora in data/ (web, bench, smallnet; a
body found twice is asked once) under each profile (rfc9309, google, gemini, gemini-targeted,
gopher, 1994) and with no profile (chosen by each target's scheme):

* decide() and allowed() for targets built from the file's own Allow/Disallow values (each
  made concrete, one level deeper, with a query, re-escaped, cut in half, its directory...),
  for the star, Google's names, a full User-Agent header, a name the file gives, a name with
  no valid product token and the empty name, with the role sets (), ("archiver",) and
  ("indexer", "researcher") under the Gemini and Gopher profiles.  Web targets are asked as
  bare paths and as https:// URLs, Gemini ones as gemini:// URLs, Gopher ones as selectors and
  as gopher:// URLs of item types 1 and 0; a few odd targets (not URLs, no path, fragments)
  are asked everywhere, and for hosts the crawler benchmark visits some of its links.
  All fields of a Decision are compared; an exception is compared by whether both raised and,
  separately, by its type.
* crawl_delay(), request_rate(), check_interval() and applies() for every robot, groups(),
  diagnostics, sitemaps, lines() (number, kind, key, value) and text.
* the same for small files made by hypothesis from a grammar of realistic and odd lines
  (misspelt keys, missing colons, wildcards, %-escapes, non-ASCII, invalid UTF-8, a BOM, CR,
  CRLF and LF, odd numbers), with generated targets.

So that the default run takes a few minutes on two cores, each (profile, agent, roles) asks a
deterministic share of a file's targets (every ``--stride``-th, starting at an offset that
moves from robot to robot, so that every target is asked of some robots); "/" and
"/robots.txt" are asked of all.  ``--stride 1`` asks everything.

    .venv/bin/python bench/agreement.py                 # everything (see below for the time)
    .venv/bin/python bench/agreement.py --corpus smallnet --stride 1 --hypothesis 200
    .venv/bin/python bench/agreement.py --limit 300 --show 50

Counts per profile are printed ("decisions": decide() and allowed() answers; "answers": all
the others), then up to ``--show`` differences of the corpus and of the generated files; the
exit status is 1 when there is any difference.  Against the Python engine itself it must report
none.  With the Python engine on both sides the default run takes 8 minutes of CPU (so about 4
on two idle cores), about half of it the old engine's; a faster new engine saves most of the rest.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import itertools
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter, methodcaller
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from data_paths import SMALLNET, unpacked  # noqa: E402

WEB = unpacked("web")
BENCH = unpacked("bench")
OLD_REV = "2fc8753"
OLD_PACKAGE = "manners_python_engine"
ENGINE_MODULES = ("agents", "diagnostics", "match", "parse", "profiles", "robots")

PROFILES = ("rfc9309", "google", "gemini", "gemini-targeted", "gopher", "1994")
ROLE_PROFILES = frozenset({"gemini", "gemini-targeted", "gopher"})
AUTO = "auto"  # the row for parse(body) with no profile: each target's scheme chooses
AGENTS = ("*", "googlebot", "Googlebot-Image", "mybot/1.0 (+http://x)", "AB42bot", "")
ROLE_SETS: tuple[tuple[str, ...], ...] = ((), ("archiver",), ("indexer", "researcher"))
HOST = "example.org"
ALWAYS = ("/", "/robots.txt")  # asked of every robot, sampled or not
ODD_TARGETS = (
    "",
    "example.org/x",
    f"https://{HOST}",
    f"HTTPS://{HOST.upper()}/Robots.txt",
    f"//{HOST}/p",
    "/a#frag",
    "/a?b=%zz",
    f"gemini://{HOST}",
    f"gopher://{HOST}",
    f"gopher://{HOST}/1",
    "*",
    "/%2A",
    "/$",
)
#: the URL a field question names its profile by, for parse(body) with no profile
PROFILE_URLS = (f"https://{HOST}/", f"gemini://{HOST}/", f"gopher://{HOST}/")
LINKS_PER_FILE = 8


# -- the two engines ----------------------------------------------------------------------


def load_old_engine(rev: str, where: Path) -> ModuleType:
    """The engine modules at ``rev`` as the package OLD_PACKAGE; returns its ``robots`` module."""
    package = where / OLD_PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text(f'"""The manners engine at {rev}, for bench/agreement.py."""\n')
    for name in ENGINE_MODULES:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:src/manners/{name}.py"],
            capture_output=True,
            check=True,
        ).stdout
        (package / f"{name}.py").write_bytes(source)
    sys.path.insert(0, str(where))
    robots = importlib.import_module(f"{OLD_PACKAGE}.robots")
    importlib.import_module(f"{OLD_PACKAGE}.diagnostics")  # imported lazily by robots: check it now
    strays = [
        name
        for name, module in sys.modules.items()
        if name.startswith(OLD_PACKAGE) and not str(getattr(module, "__file__", "")).startswith(str(where))
    ]
    if strays:
        raise SystemExit(f"the old engine did not load from {where}: {strays}")
    return robots


# -- answers ------------------------------------------------------------------------------


class Raised:
    """An exception in place of an answer: equal to another of the same type."""

    __slots__ = ("kind", "message")

    def __init__(self, error: BaseException) -> None:
        self.kind = type(error).__name__
        self.message = str(error)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Raised) and other.kind == self.kind

    def __hash__(self) -> int:
        return hash(self.kind)

    def __repr__(self) -> str:
        return f"<raised {self.kind}: {self.message[:100]}>"


def as_is(x: Any) -> Any:
    return x


def ask(norm: Callable[[Any], Any], call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``norm(call(*args, **kwargs))``, or what it raised (a Rust panic is a BaseException)."""
    try:
        return norm(call(*args, **kwargs))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:
        return Raised(error)


def decision(d: Any) -> tuple[Any, ...]:
    return (d.allowed, d.line, d.rule, d.reason, d.profile)


def pairs(items: Iterable[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(x) for x in items)


def group(g: Any) -> tuple[Any, ...]:
    return (pairs(g.agents), pairs(g.virtual), frozenset(g.names), frozenset(g.virtual_names), tuple(g.lines))


def groups(gs: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(map(group, gs))


def lines(ls: Iterable[Any]) -> tuple[Any, ...]:
    return tuple((x.number, x.kind, x.key, x.value) for x in ls)


def diagnostics(ds: Iterable[Any]) -> tuple[Any, ...]:
    return tuple((d.line, d.severity, d.code, d.message) for d in ds)


def applies(answer: Any) -> tuple[Any, ...]:
    choices, reason = answer
    return tuple((label, pairs(ranges)) for label, ranges in choices), reason


def optional_pair(value: Any) -> Any:
    return None if value is None else tuple(value)


def profile_name(profile: Any) -> Any:
    return getattr(profile, "name", profile)


# -- targets ------------------------------------------------------------------------------

_ESCAPE = re.compile(r"%([0-9a-fA-F]{2})")


def variants(value: str) -> list[str]:
    """Paths that exercise one Allow/Disallow value, most telling first."""
    base = value.replace("*", "x")
    if base.endswith("$"):
        base = base[:-1]
    if _ESCAPE.search(base):  # the same octets, other spelling: hex case flipped
        escaped = _ESCAPE.sub(lambda m: "%" + m[1].swapcase(), base)
    else:  # an unreserved character %-escaped: RFC 3986 decodes it, Google does not
        letters = [i for i, c in enumerate(base) if c.isascii() and c.isalnum()]
        i = letters[-1] if letters else -1
        escaped = base[:i] + f"%{ord(base[i]):02X}" + base[i + 1 :] if i >= 0 else base + "%7E"
    return [
        base,
        base + "a",
        base[: max(1, len(base) // 2)],
        base + "/",
        base[: base.rfind("/") + 1] or "/",  # its directory: Google's Allow .../index.html
        base + "?q=1",
        escaped,
        base + "/\u00e9",
        base + "/%c3%a9",
    ]


def rule_paths(values: Sequence[str], cap: int) -> list[str]:
    """Up to ``cap`` paths from a file's rule values: ALWAYS, then variants round-robin over a
    spread of the values (ordered by CRC, so a long file is sampled all along)."""
    distinct = sorted({v for v in values if v}, key=lambda v: (zlib.crc32(v.encode("utf-8", "replace")), v))
    distinct = distinct[: max(8, cap // 4)]
    table = [variants(v) for v in distinct]
    out = dict.fromkeys(ALWAYS)
    for rank in range(max((len(t) for t in table), default=0)):
        for vs in table:
            if len(out) >= cap:
                return list(out)
            if rank < len(vs):
                out.setdefault(vs[rank])
    return list(out)


def slashed(path: str) -> str:
    return path if path.startswith("/") else "/" + path


def targets_for(profile: str, paths: Sequence[str], links: Sequence[str]) -> list[str]:
    """What a robot under ``profile`` asks about, from paths: ALWAYS first."""
    out: list[str] = list(ALWAYS)
    if profile == "gopher":
        for p in paths:
            out += [p, f"gopher://{HOST}/1{p}", f"gopher://{HOST}/0{p}"]
    elif profile in ("gemini", "gemini-targeted"):
        out += [f"gemini://{HOST}{slashed(p)}" for p in paths]
    elif profile == AUTO:
        for p in paths:
            out += [f"https://{HOST}{slashed(p)}", f"gemini://{HOST}{slashed(p)}", f"gopher://{HOST}/1{p}"]
        out += links
    else:
        for p in paths:
            out += [p, f"https://{HOST}{slashed(p)}"]
        out += links
    out += ODD_TARGETS
    return list(dict.fromkeys(out))


def sample(targets: Sequence[str], cell: int, stride: int) -> list[str]:
    """Every ``stride``-th target from an offset that moves with the cell; ALWAYS for all."""
    if stride <= 1:
        return list(targets)
    return [t for j, t in enumerate(targets) if t in ALWAYS or (j + cell) % stride == 0]


# -- comparing ----------------------------------------------------------------------------


class Diff(NamedTuple):
    part: str  # "corpus" or "hypothesis"
    source: str
    profile: str
    what: str
    agent: str | None
    roles: tuple[str, ...] | None
    target: str | None
    old: Any
    new: Any


class Tally:
    """Counts per (part, profile, kind) and the first differences found."""

    def __init__(self, show: int) -> None:
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.diffs: list[Diff] = []
        self.show = show

    def merge(self, other: Tally) -> None:
        """Add another tally's counts, and its differences up to ``show`` of each part."""
        self.counts.update(other.counts)
        for d in other.diffs:
            if sum(1 for x in self.diffs if x.part == d.part) < self.show:
                self.diffs.append(d)


class Checker:
    """Asks the old and the new engine the same questions about one body."""

    def __init__(self, old: ModuleType, new: ModuleType, tally: Tally, part: str) -> None:
        self.old = old
        self.new = new
        self.tally = tally
        self.part = part
        self.source = ""
        self.memo: dict[tuple[str, Any], Any] = {}

    def same(
        self,
        profile: str,
        what: str,
        a: Any,
        b: Any,
        agent: str | None = None,
        roles: tuple[str, ...] | None = None,
        target: str | None = None,
        kind: str = "answers",
    ) -> None:
        """Count one answer; a difference is counted and kept (up to the tally's ``show``)."""
        counts = self.tally.counts
        counts[self.part, profile, kind] += 1
        if a == b:
            return
        counts[self.part, profile, "differences"] += 1
        if isinstance(a, Raised) != isinstance(b, Raised):
            what += " (only one raised)"
        elif isinstance(a, Raised):
            what += " (exception types differ)"
        if len(self.tally.diffs) < self.tally.show:
            self.tally.diffs.append(Diff(self.part, self.source, profile, what, agent, roles, target, a, b))

    def both(
        self,
        profile: str,
        what: str,
        norm: Callable[[Any], Any],
        question: Callable[[Any], Any],
        o: Any,
        n: Any,
        agent: str | None = None,
        roles: tuple[str, ...] | None = None,
    ) -> None:
        """Ask ``question`` of the old (``o``) and the new (``n``) RobotsTxt."""
        self.same(profile, what, ask(norm, question, o), ask(norm, question, n), agent, roles)

    def decisions(
        self, profile: str, o: Any, n: Any, targets: Sequence[str], agent: str, roles: tuple[str, ...]
    ) -> None:
        questions = (("decide", decision, o.decide, n.decide), ("allowed", as_is, o.allowed, n.allowed))
        counts, key = self.tally.counts, (self.part, profile, "decisions")
        for t in targets:
            for name, shape, old, new in questions:
                a = ask(shape, old, t, agent, roles)
                b = ask(shape, new, t, agent, roles)
                if a == b:
                    counts[key] += 1
                else:
                    self.same(profile, name, a, b, agent, roles, t, "decisions")

    def fields(self, row: str, o: Any, n: Any, agent: str, roles: tuple[str, ...], **profile: str) -> None:
        """crawl_delay, request_rate and check_interval, with ``profile=`` when given.

        The old engine reads these from the lines of the groups chosen for the robot, afresh
        on every call: slow on a long file, and the same for every robot given the same groups.
        So its answers are kept per body, keyed by the groups (its applies(), under the profile
        the call resolves to); the new engine is asked every time.
        """
        shown = f" profile={profile['profile']!r}" if profile else ""
        named = profile.get("profile")
        if named is None:  # as RobotsTxt._fields chooses
            named = o.profile.name if o.profile is not None else "gemini" if roles else "rfc9309"
        elif "://" in named:
            named = self.old.profile_for(named).name
        chosen = ask(applies, o.applies, agent, roles, named)
        for name, norm in (
            ("crawl_delay", as_is),
            ("request_rate", optional_pair),
            ("check_interval", as_is),
        ):
            question = methodcaller(name, agent, roles, **profile)
            key = (name, chosen)
            if isinstance(chosen, Raised) or key not in self.memo:
                self.memo[key] = ask(norm, question, o)
            a = self.memo[key]
            self.same(row, name + shown, a, ask(norm, question, n), agent, roles)

    def check(
        self,
        source: str,
        body: Any,
        *,
        max_bytes: int | None = 512_000,
        agents: Sequence[str] = AGENTS,
        web_role_sets: Sequence[tuple[str, ...]] = ((),),
        role_sets: Sequence[tuple[str, ...]] = ROLE_SETS,
        extra_targets: Sequence[str] = (),
        links: Sequence[str] = (),
        cap: int = 48,
        stride: int = 1,
    ) -> None:
        """Every question about one body, under every profile and with none."""
        self.source = source
        self.memo: dict[tuple[str, Any], Any] = {}  # old field answers, see fields()
        counts, both = self.tally.counts, self.both
        old_auto = ask(as_is, self.old.parse, body, None, max_bytes)
        new_auto = ask(as_is, self.new.parse, body, None, max_bytes)
        counts[self.part, AUTO, "files"] += 1
        if isinstance(old_auto, Raised) or isinstance(new_auto, Raised):
            self.same(AUTO, "parse", old_auto, new_auto)
            return
        old_lines = old_auto.lines()
        values = [x.value for x in old_lines if x.kind in ("allow", "disallow")]
        named = [x.value for x in old_lines if x.kind == "user-agent" and x.value and x.value[0] != "*"]
        robots = list(dict.fromkeys([*agents, *named[:1]]))
        paths = rule_paths(values, cap)

        # what does not depend on a profile, and the defaults of parse(body)
        both(AUTO, "lines()", lines, methodcaller("lines"), old_auto, new_auto)
        both(AUTO, "sitemaps", tuple, attrgetter("sitemaps"), old_auto, new_auto)
        both(AUTO, "profile", profile_name, attrgetter("profile"), old_auto, new_auto)
        both(AUTO, "diagnostics", diagnostics, attrgetter("diagnostics"), old_auto, new_auto)
        both(AUTO, "groups()", groups, methodcaller("groups"), old_auto, new_auto)

        for profile in PROFILES:
            counts[self.part, profile, "files"] += 1
            o = ask(as_is, self.old.parse, body, profile, max_bytes)
            n = ask(as_is, self.new.parse, body, profile, max_bytes)
            if isinstance(o, Raised) or isinstance(n, Raised):
                self.same(profile, "parse", o, n)
                continue
            both(profile, "profile", profile_name, attrgetter("profile"), o, n)
            both(profile, "diagnostics", diagnostics, attrgetter("diagnostics"), o, n)
            both(profile, "groups()", groups, methodcaller("groups"), o, n)
            both(
                profile,
                "groups(profile) of auto",
                groups,
                methodcaller("groups", profile),
                old_auto,
                new_auto,
            )
            targets = targets_for(profile, paths, links) + list(extra_targets)
            sets = role_sets if profile in ROLE_PROFILES else web_role_sets
            for cell, (agent, roles) in enumerate(itertools.product(robots, sets)):
                self.fields(profile, o, n, agent, roles)
                if cell % stride == 0:  # the same, through parse(body) and profile=: sampled
                    self.fields(profile, old_auto, new_auto, agent, roles, profile=profile)
                applied = methodcaller("applies", agent, roles)
                both(profile, "applies()", applies, applied, o, n, agent, roles)
                applied = methodcaller("applies", agent, roles, profile)
                both(profile, "applies(profile) of auto", applies, applied, old_auto, new_auto, agent, roles)
                self.decisions(profile, o, n, sample(targets, cell, stride), agent, roles)

        targets = targets_for(AUTO, paths, links) + list(extra_targets)
        for cell, (agent, roles) in enumerate(itertools.product(robots, role_sets)):
            self.fields(AUTO, old_auto, new_auto, agent, roles)
            for url in PROFILE_URLS if cell % stride == 0 else ():
                self.fields(AUTO, old_auto, new_auto, agent, roles, profile=url)
            applied = methodcaller("applies", agent, roles)
            both(AUTO, "applies()", applies, applied, old_auto, new_auto, agent, roles)
            self.decisions(AUTO, old_auto, new_auto, sample(targets, cell, stride), agent, roles)


# -- the corpora --------------------------------------------------------------------------


class Source(NamedTuple):
    label: str
    path: str


def corpus_files(which: str) -> list[Source]:
    """Files of the chosen corpora, sorted; a body found twice only the first time."""
    dirs = {  # name: (the corpus, the directories of it read)
        "web": (WEB, [WEB]),
        "bench": (BENCH, [BENCH / "robotfiles"]),
        "smallnet": (SMALLNET, [SMALLNET, SMALLNET / "server_transcripts"]),
    }
    chosen = list(dirs) if which == "all" else [which]
    out: list[Source] = []
    seen: set[bytes] = set()
    for name in chosen:
        root, read = dirs[name]
        for d in read:
            for path in sorted(p for p in d.iterdir() if p.is_file() and p.name != "SOURCES.md"):
                digest = hashlib.sha1(path.read_bytes()).digest()
                if digest not in seen:
                    seen.add(digest)
                    out.append(Source(f"{name}/{path.relative_to(root)}", str(path)))
    return out


def links_of(path: Path) -> list[str]:
    """A spread of the links the crawler benchmark follows on the file's host."""
    links_file = BENCH / "links" / path.name
    if not links_file.is_file():
        return []
    links = [x for x in links_file.read_text("utf-8", "replace").splitlines() if x.strip()]
    step = max(1, len(links) // LINKS_PER_FILE)
    return links[::step][:LINKS_PER_FILE]


# -- hypothesis -----------------------------------------------------------------------------

# fmt: off
_TOKENS = ("*", "googlebot", "Googlebot", "GoogleBot-Image", "googlebot-image", "mybot", "MyBot/2.0",
           "mybot/1.0 (+http://x)", "archiver", "Archiver", "indexer", "researcher", "webproxy", "AB42bot",
           "bot_x", "*bot", "google", "", "* ", "*/1", "veronica", "Mediapartners-Google*", "my bot",
           "\u00fcnicode", "-", "_", "CyberMapper/2.1")
_AGENT_KEYS = ("User-agent", "user-agent", "USER-AGENT", "User-Agent", "useragent", "user agent",
               "User-agents", "user_agent", "Virtual-agent", "virtual-agent", "VIRTUAL-AGENT", "virtualagent")
_RULE_KEYS = ("Allow", "allow", "ALLOW", "Allowed", "Disallow", "disallow", "DISALLOW", "Disallowed",
              "dissallow", "dissalow", "disalow", "diasllow", "disallaw", "Diallow", "dis allow")
_FIELD_KEYS = ("Crawl-delay", "crawl-delay", "Crawl-Delay", "crawldelay", "crawl_delay", "Crawl delay",
               "Request-rate", "request-rate", "requestrate", "request_rate", "Check", "check", "CHECK",
               "Check-interval")
_NUMBERS = ("10", "0", "0.5", "-1", "1e3", "nan", "inf", "abc", "", " 5 ", "1_000", "0x10", "\u0663", "5s",
            "1/5", "1/5s", "2/1m", "0/5", "1/0", "1 / 10 h", "3/2.5d", "x/5", "1/5x", "\u0661/5", "1/1e3",
            "10.", ".5")
_OTHER = ("Sitemap: https://example.org/s.xml", "sitemap: /rel.xml", "Site-map: x", "SITEMAP:https://h/s.xml#f",
          "Sitemap https://h/two-words.xml", "Host: h", "Noindex: /x", "# comment", "#", "", "   ", "\t",
          "Clean-param: x", "veronicaindex: yes", ":", ": /x", "Disallow", "junk", "a b", "a b c",
          "Disallow /a /b", "<html><body>", "User-agent", "Allow:")
_PIECES = ("/", "/", "/", "a", "b", "x", "private", "index.html", "index.htm", "*", "*", "$", "$",
           "%2F", "%2f", "%41", "%61", "%7e", "%7E", "%c3%a9", "%C3%A9", "%zz", "%", "%2", "\u00e9",
           "\u65e5\u672c", "?", "=", "&", ";", "q=1", ".", "..", "~", " ", "+", "%20", "%24", "%2A", "#",
           "\\", "1", "0")
_PREFIXES = ("", "", "", "https://h", "http://H:80", "HTTPS://h", "gemini://h", "gemini://h:1965",
             "gopher://h/1", "gopher://h/0", "gopher://h/", "gopher://h", "//h", "ftp://h", "x")
# fmt: on
_SUFFIXES = ("", "", "", "?q=1", "#frag", "?", "/", "\t+", "/robots.txt")
_ROLES = ("archiver", "indexer", "researcher", "webproxy", "*", "", "Archiver", "other")
_BAD_BYTES = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe9", b"\x00")


class Case(NamedTuple):
    body: Any
    max_bytes: int | None
    agents: tuple[str, ...]
    role_sets: tuple[tuple[str, ...], ...]
    targets: tuple[str, ...]


def case_strategy() -> Any:
    from hypothesis import strategies as st

    path = st.builds(
        lambda lead, pieces: lead + "".join(pieces),
        st.sampled_from(["/", "/", "/", "/", ""]),
        st.lists(st.sampled_from(_PIECES), max_size=6),
    )
    space = st.sampled_from(["", "", "", " ", "\t", "\v"])
    tail = st.sampled_from(["", "", "", " ", "\t", " # c", "#x", "\f"])
    sep = st.sampled_from([": ", ": ", ": ", ":", " : ", ":\t", " ", "  ", "\t", ""])

    def keyed(keys: Sequence[str], values: Any) -> Any:
        return st.builds(
            lambda a, k, s, v, b: f"{a}{k}{s}{v}{b}", space, st.sampled_from(keys), sep, values, tail
        )

    line = st.one_of(
        keyed(_AGENT_KEYS, st.sampled_from(_TOKENS)),
        keyed(_RULE_KEYS, path),
        keyed(_RULE_KEYS, path),
        keyed(_FIELD_KEYS, st.sampled_from(_NUMBERS)),
        st.sampled_from(_OTHER),
    )

    @st.composite
    def case(draw: Any) -> Case:
        texts = draw(st.lists(line, max_size=14))
        if draw(st.integers(0, 49)) == 0:  # a line longer than Google's buffer, cut where it ends
            texts.insert(draw(st.integers(0, len(texts))), "Disallow: /" + "a" * 16_700)
        raw = b""
        for text in texts:
            ending = draw(st.sampled_from([b"\n", b"\n", b"\n", b"\r\n", b"\r"]))
            data = text.encode("utf-8")
            if draw(st.integers(0, 19)) == 0:  # an invalid UTF-8 sequence somewhere in the line
                cut = draw(st.integers(0, len(data)))
                data = data[:cut] + draw(st.sampled_from(_BAD_BYTES)) + data[cut:]
            raw += data + ending
        if raw and draw(st.booleans()):
            raw = raw.rstrip(b"\r\n")
        raw = draw(st.sampled_from([b"", b"", b"", b"", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"])) + raw
        form = draw(st.sampled_from(["bytes", "bytes", "bytes", "bytearray", "memoryview", "str"]))
        body: Any = raw
        if form == "str":
            try:
                body = raw.decode("utf-8")
            except UnicodeDecodeError:
                body = raw
        elif form != "bytes":
            body = bytearray(raw) if form == "bytearray" else memoryview(raw)
        max_bytes = draw(st.sampled_from([512_000, 512_000, 512_000, None, 40, 7]))
        agents = tuple(draw(st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=2, unique=True)))
        roles = tuple(draw(st.lists(st.sampled_from(_ROLES), max_size=2)))
        targets = draw(
            st.lists(
                st.builds(
                    lambda a, b, c: a + b + c, st.sampled_from(_PREFIXES), path, st.sampled_from(_SUFFIXES)
                ),
                max_size=6,
            )
        )
        return Case(body, max_bytes, ("*", *agents), tuple(dict.fromkeys([(), roles])), tuple(targets))

    return case()


def run_hypothesis(checker: Checker, chunk: int, examples: int) -> int:
    """``examples`` generated files, seeded by ``chunk``; returns how many were run."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    done = itertools.count()

    @seed(chunk)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(case_strategy())
    def agree(case: Case) -> None:
        body = case.body if isinstance(case.body, str) else bytes(case.body)
        checker.check(
            f"hypothesis#{chunk}.{next(done)} {type(case.body).__name__} {body!r} max_bytes={case.max_bytes}",
            case.body,
            max_bytes=case.max_bytes,
            agents=case.agents,
            web_role_sets=case.role_sets,
            role_sets=case.role_sets,
            extra_targets=case.targets,
            cap=12,
        )

    agree()
    return next(done)


# -- running ------------------------------------------------------------------------------

_OLD: ModuleType | None = None
_NEW: ModuleType | None = None
_OPTIONS: argparse.Namespace | None = None


def work(task: tuple[str, Any, Any]) -> Tally:
    """One task in a worker: ("file", Source) or ("hypothesis", chunk, examples)."""
    assert _OLD is not None and _NEW is not None and _OPTIONS is not None
    opts = _OPTIONS
    tally = Tally(opts.show)
    if task[0] == "hypothesis":
        checker = Checker(_OLD, _NEW, tally, "hypothesis")
        tally.counts["hypothesis", "-", "examples"] += run_hypothesis(checker, task[1], task[2])
        return tally
    source: Source = task[1]
    path = Path(source.path)
    checker = Checker(_OLD, _NEW, tally, "corpus")
    checker.check(source.label, path.read_bytes(), links=links_of(path), cap=opts.paths, stride=opts.stride)
    return tally


def spread(items: Sequence[Source], n: int) -> list[Source]:
    """``n`` items evenly spaced through ``items`` (all when n is larger)."""
    if n >= len(items):
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def short(value: Any, width: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def report(tally: Tally, elapsed: float) -> None:
    kinds = ("files", "decisions", "answers", "differences")
    for part in ("corpus", "hypothesis"):
        rows = [p for p in (*PROFILES, AUTO) if any(tally.counts[part, p, k] for k in kinds)]
        if not rows:
            continue
        extra = f", {tally.counts[part, '-', 'examples']:,} examples" if part == "hypothesis" else ""
        print(f"\n{part}{extra}:")
        print(f"  {'profile':<16}{'files':>8}{'decisions':>13}{'answers':>11}{'differences':>13}")
        for p in rows:
            cells = zip(kinds, (8, 13, 11, 13), strict=True)
            print(f"  {p:<16}" + "".join(f"{tally.counts[part, p, k]:>{w},}" for k, w in cells))
        total = [sum(tally.counts[part, p, k] for p in rows) for k in kinds[1:]]
        print(f"  {'total':<24}" + "".join(f"{v:>{w},}" for v, w in zip(total, (13, 11, 13), strict=True)))
    diffs = sum(v for (_, _, k), v in tally.counts.items() if k == "differences")
    if tally.diffs:
        print(f"\nfirst {len(tally.diffs)} of {diffs:,} differences:")
        for d in tally.diffs:
            print(f"  {short(d.source, 200)} [{d.profile}] {d.what}", end="")
            if d.agent is not None:
                print(f" agent={d.agent!r} roles={d.roles!r}", end="")
            if d.target is not None:
                print(f" target={d.target!r}", end="")
            print(f"\n      old: {short(d.old)}\n      new: {short(d.new)}")
    print(f"\n{diffs:,} differences; {elapsed:.0f} s")


def main() -> int:
    global _OLD, _NEW, _OPTIONS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", choices=("web", "bench", "smallnet", "all"), default="all")
    parser.add_argument("--limit", type=int, default=None, help="ask about N files, spread through the list")
    parser.add_argument("--hypothesis", type=int, default=2000, metavar="N", help="generated files (0: none)")
    parser.add_argument(
        "--old-rev", default=OLD_REV, help=f"the Python engine's revision (default {OLD_REV})"
    )
    parser.add_argument(
        "--show", type=int, default=20, help="differences to print, of each part (default 20)"
    )
    parser.add_argument("--stride", type=int, default=8, help="ask each robot every Nth target (1: all)")
    parser.add_argument("--paths", type=int, default=48, help="paths per file from its rules (default 48)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    opts = parser.parse_args()

    import manners

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agreement-") as tmp:
        old = load_old_engine(opts.old_rev, Path(tmp))
        new_type = type(manners.parse(b""))
        print(f"old: {OLD_PACKAGE} from git {opts.old_rev} ({', '.join(ENGINE_MODULES)})")
        where = Path(manners.__file__).parent
        print(f"new: manners {manners.__version__} from {where}, RobotsTxt from {new_type.__module__}")
        if new_type.__module__.startswith(OLD_PACKAGE):
            raise SystemExit("the new engine is the old one's copy: nothing to compare")
        sources = corpus_files(opts.corpus)
        found = len(sources)
        if opts.limit is not None:
            sources = spread(sources, opts.limit)
        spread_note = " (spread through the list)" if len(sources) < found else ""
        print(f"corpus {opts.corpus}: {found:,} distinct bodies, asking about {len(sources):,}{spread_note}")
        if opts.stride > 1:
            print(
                f"sampled: each (profile, agent, roles) asks every {opts.stride}th target of a file"
                f" (offset moving with the robot) plus {' and '.join(ALWAYS)}; --stride 1 asks all"
            )
        print(f"hypothesis: {opts.hypothesis:,} generated files, every question about each")

        _OLD, _NEW, _OPTIONS = old, manners, opts
        tasks: list[tuple[str, Any, Any]] = []
        chunks = 8 if opts.hypothesis >= 8 else (1 if opts.hypothesis else 0)
        for k in range(chunks):  # a fixed split, so the examples do not depend on --jobs
            n = opts.hypothesis // chunks + (k < opts.hypothesis % chunks)
            tasks.append(("hypothesis", k, n))
        tasks += [("file", s, None) for s in sources]
        tally = Tally(opts.show)
        if opts.jobs > 1:
            with multiprocessing.get_context("fork").Pool(opts.jobs) as pool:
                for result in pool.imap(work, tasks):
                    tally.merge(result)
        else:
            for task in tasks:
                tally.merge(work(task))
    # Corpus differences before generated ones: keep the order of parts stable for reading.
    tally.diffs.sort(key=lambda d: d.part != "corpus")
    report(tally, time.perf_counter() - start)
    return 1 if any(v for (_, _, k), v in tally.counts.items() if k == "differences") else 0


if __name__ == "__main__":
    sys.exit(main())
