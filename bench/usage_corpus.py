"""How many real robots.txt files state usage preferences (Content-Usage, Content-Signal)?

Issue 35 asks for the web corpus to be scanned for both fields, and for the counts to be in
the docs.  This script reads every file under a directory (default: data/unpacked/web, the
4,231 real robots.txt files) on its own, without the engine, so its counts do not depend on
the parser being measured; ``--engine`` then asks ``manners.parse(body).usage(...)`` the same
questions and prints every answer that differs from this script's reading.

How a line is read (draft-ietf-aipref-attach-05, Section 3.2 "Processing Content-Usage
Rules"): the label is matched case-insensitively with SP/HTAB ignored around it and around the
colon; the value runs to the first CR, LF or "#"; a value starting with "/" holds a path that
ends at the first SP or HTAB, and the rest is the preference, an RFC 9651 Dictionary
(draft-ietf-aipref-vocab, Section 6.5 "Processing Algorithm"): ``y``/``n`` Tokens count, any
other value is "unknown", and a Dictionary that does not parse makes every category unknown.
Content-Signal (draft-romm-aipref-contentsignals-00 gives only its labels, Section 4) is read
with the same Dictionary parser, with ``yes``/``no`` Tokens as Cloudflare's files write them.

Labels that are near misses (``Content_Usage``, ``ContentSignal``, ``Content-Signals``...) are
counted apart: the drafts do not allow them.

Usage: python bench/usage_corpus.py [DIR] [--examples N] [--engine]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

CATEGORIES = ("train-ai", "ai-use", "search")  # draft-ietf-aipref-vocab-08, flat
SIGNALS = ("search", "ai-input", "ai-train")  # draft-romm-aipref-contentsignals-00, Section 4
OUTSIDE = "(outside any group)"

# RFC 9651 Section 3.1.2 / 3.3.4 / 4.2.3: what keys and tokens may hold.
_KEY = re.compile(r"[a-z*][a-z0-9_\-.*]*")
_TOKEN = re.compile(r"[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*")
_NUMBER = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,3})?")
_BYTES = re.compile(r":[A-Za-z0-9+/=]*:")


class SFError(ValueError):
    """The text is no RFC 9651 Dictionary."""


def _bare_item(text: str, i: int) -> tuple[tuple[str, str], int]:
    """One bare item at text[i:] (RFC 9651 Section 4.2.3.1): (type, value), next index."""
    if i >= len(text):
        raise SFError("a value is missing")
    c = text[i]
    if c == '"':
        j, out = i + 1, []
        while j < len(text):
            if text[j] == "\\" and j + 1 < len(text) and text[j + 1] in '"\\':
                out.append(text[j + 1])
                j += 2
            elif text[j] == '"':
                return ("string", "".join(out)), j + 1
            elif not " " <= text[j] <= "~":
                raise SFError("a string holds a control or non-ASCII character")
            else:
                out.append(text[j])
                j += 1
        raise SFError("a string is not closed")
    if c == "?":
        if text[i + 1 : i + 2] in ("0", "1"):
            return ("boolean", text[i + 1]), i + 2
        raise SFError("a boolean is neither ?0 nor ?1")
    for kind, pattern in (("number", _NUMBER), ("token", _TOKEN), ("bytes", _BYTES)):
        m = pattern.match(text, i)
        if m:
            return (kind, m.group()), m.end()
    if c == "@":
        m = re.compile(r"@-?[0-9]{1,15}").match(text, i)
        if m:
            return ("date", m.group()), m.end()
    raise SFError(f"no value can start with {c!r}")


def _parameters(text: str, i: int) -> int:
    """Skip the parameters at text[i:] (RFC 9651 Section 4.2.3.2); their meaning is ignored."""
    while i < len(text) and text[i] == ";":
        i += 1
        while i < len(text) and text[i] == " ":
            i += 1
        m = _KEY.match(text, i)
        if not m:
            raise SFError("a parameter has no valid key")
        i = m.end()
        if i < len(text) and text[i] == "=":
            _, i = _bare_item(text, i + 1)
    return i


def parse_dictionary(text: str) -> dict[str, tuple[str, str]]:
    """An RFC 9651 Dictionary: key -> (type, value) of its last member (Section 4.2.2)."""
    out: dict[str, tuple[str, str]] = {}
    i = 0
    while i < len(text) and text[i] == " ":  # Section 4.2: leading SP only
        i += 1
    while i < len(text):
        m = _KEY.match(text, i)
        if not m:
            raise SFError("a key is not lowercase letters, digits, _ - . *")
        key, i = m.group(), m.end()
        if i < len(text) and text[i] == "=":
            i += 1
            if i < len(text) and text[i] == "(":  # an inner list: skip it
                close = text.find(")", i)
                if close < 0:
                    raise SFError("an inner list is not closed")
                value: tuple[str, str] = ("inner-list", text[i : close + 1])
                i = close + 1
            else:
                value, i = _bare_item(text, i)
        else:
            value = ("boolean", "1")  # a bare key is Boolean true
        i = _parameters(text, i)
        out.pop(key, None)
        out[key] = value  # the last one wins (Section 4.2.2)
        while i < len(text) and text[i] in " \t":
            i += 1
        if i == len(text):
            return out
        if text[i] != ",":
            raise SFError("members are not separated by commas")
        i += 1
        while i < len(text) and text[i] in " \t":
            i += 1
        if i == len(text):
            raise SFError("a trailing comma")
    return out


@dataclass
class Reading:
    """What one Content-Usage or Content-Signal line says."""

    field: str  # "content-usage" or "content-signal"
    line: int
    agents: tuple[str, ...]
    path: str | None
    raw: str
    values: dict[str, str]  # label -> yes/no/unstated, for the labels the field knows
    problems: list[str]


def split_usage_value(value: str) -> tuple[str | None, str]:
    """Attach draft Section 3.2: a value starting with "/" holds a path up to the first SP/HTAB."""
    if value.startswith("/"):
        m = re.match(r"([^ \t]*)[ \t](.*)", value, re.S)
        return (m.group(1), m.group(2)) if m else (value, "")
    return None, value


def read_preference(
    text: str, labels: tuple[str, ...], yes: str, no: str
) -> tuple[dict[str, str], list[str]]:
    """Vocab draft Section 6.5: a yes/no Token counts; anything else leaves the label unstated."""
    problems: list[str] = []
    try:
        parsed = parse_dictionary(text)
    except SFError as e:
        return dict.fromkeys(labels, "unstated"), [f"not a dictionary: {e}"]
    values = {}
    for label in labels:
        kind, v = parsed.get(label, ("absent", ""))
        if kind == "token" and v == yes:
            values[label] = "yes"
        elif kind == "token" and v == no:
            values[label] = "no"
        else:
            values[label] = "unstated"
            if kind != "absent":
                problems.append(f"{label}: {kind} {v!r} is neither {yes} nor {no}")
    problems += [f"unknown label {k!r}" for k in parsed if k not in labels]
    return values, problems


_FIELD = re.compile(r"[ \t]*([^:#\r\n]*?)[ \t]*:[ \t]*(.*)")
_SQUASH = re.compile(r"[ \t_\-]")
_RULES = {"allow", "disallow", "crawl-delay", "request-rate", "content-usage", "content-signal"}
_NEAR = {"contentusage", "contentsignal", "contentsignals"}


@dataclass
class FileReport:
    readings: list[Reading] = field(default_factory=list)
    near_misses: list[tuple[int, str]] = field(default_factory=list)


def scan(body: bytes) -> FileReport:
    """Every Content-Usage / Content-Signal line of one robots.txt, with its group's agents."""
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    report = FileReport()
    agents: list[str] = []
    in_rules = False
    for number, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        line = line.split("#", 1)[0]
        m = _FIELD.fullmatch(line)
        if not m:
            continue
        key, value = m.group(1).lower(), m.group(2).rstrip(" \t")
        if key in ("user-agent", "useragent", "user agent"):
            if in_rules:
                agents, in_rules = [], False
            agents.append(value)
            continue
        if key in _RULES:
            in_rules = True
        group = tuple(agents) or (OUTSIDE,)
        if key == "content-usage":
            path, pref = split_usage_value(value)
            values, problems = read_preference(pref, CATEGORIES, "y", "n")
            report.readings.append(Reading(key, number, group, path, value, values, problems))
        elif key == "content-signal":
            path, pref = split_usage_value(value)
            values, problems = read_preference(pref, SIGNALS, "yes", "no")
            report.readings.append(Reading(key, number, group, path, value, values, problems))
        elif _SQUASH.sub("", key) in _NEAR:
            report.near_misses.append((number, m.group(1)))
    return report


def engine_disagreements(body: bytes, report: FileReport) -> list[str]:
    """Ask manners.parse(body).usage() what this script read; say where the answers differ."""
    import manners

    robots = manners.parse(body)
    out = []
    for r in report.readings:
        if r.field != "content-usage" or OUTSIDE in r.agents:
            continue
        target = r.path.replace("*", "x").rstrip("$") if r.path else "/"
        usage = robots.usage(target, agent=r.agents[0])
        for label, mine in r.values.items():
            theirs = usage.categories[label].value
            if theirs != mine and robots.allowed(target, agent=r.agents[0]):
                out.append(f"line {r.line} {label}: script {mine}, engine {theirs} (for {target})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default="data/unpacked/web", type=Path)
    parser.add_argument("--examples", type=int, default=3, help="examples shown per kind")
    parser.add_argument("--engine", action="store_true", help="compare with manners' usage()")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"no corpus directory at {args.corpus}", file=sys.stderr)
        return 2
    if args.engine:
        import manners

        if not hasattr(manners.RobotsTxt, "usage"):
            print("this manners has no RobotsTxt.usage() yet: nothing to compare", file=sys.stderr)
            return 2

    files = sorted(p for p in args.corpus.rglob("*") if p.is_file())
    with_field: dict[str, set[Path]] = defaultdict(set)
    lines: Counter[str] = Counter()
    values: dict[str, Counter[str]] = defaultdict(Counter)
    agents: dict[str, Counter[str]] = defaultdict(Counter)
    problems: dict[str, Counter[str]] = defaultdict(Counter)
    with_path: Counter[str] = Counter()
    near: Counter[str] = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    disagreements = 0
    for path in files:
        body = path.read_bytes()
        report = scan(body)
        for number, label in report.near_misses:
            near[label] += 1
            if len(examples["near miss"]) < args.examples:
                examples["near miss"].append(f"{path.name}:{number}: {label}")
        for r in report.readings:
            with_field[r.field].add(path)
            lines[r.field] += 1
            values[r.field][" ".join(r.raw.split())] += 1
            for a in r.agents:
                agents[r.field][a.lower()] += 1
            if r.path is not None:
                with_path[r.field] += 1
            for p in r.problems:
                problems[r.field][re.sub(r"'[^']*'", "'…'", p)] += 1
                if len(examples[r.field + " malformed"]) < args.examples:
                    examples[r.field + " malformed"].append(f"{path.name}:{r.line}: {r.raw!r}: {p}")
        if args.engine and report.readings:
            for d in engine_disagreements(body, report):
                disagreements += 1
                print(f"{path.name}: {d}")

    both = with_field["content-usage"] & with_field["content-signal"]
    print(f"files scanned: {len(files)} under {args.corpus}")
    for name in ("content-usage", "content-signal"):
        print(f"{name}: {len(with_field[name])} files, {lines[name]} lines, {with_path[name]} with a path")
    print(f"both fields: {len(both)} files")
    print(f"near-miss labels (not allowed by the drafts): {sum(near.values())} lines {dict(near)}")
    for name in ("content-usage", "content-signal"):
        for title, counter in (("values", values), ("groups", agents), ("problems", problems)):
            for item, n in counter[name].most_common(10):
                print(f"  {name} {title}: {n:5d}  {item}")
    for kind, shown in sorted(examples.items()):
        for e in shown:
            print(f"  example ({kind}): {e}")
    if args.engine:
        print(f"engine disagreements: {disagreements}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
