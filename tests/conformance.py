"""Reader for Google's language-neutral robots.txt conformance suite (textproto)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from data_paths import CONFORMANCE as SUITE

_TOKEN = re.compile(r'\s+|#[^\n]*|"((?:[^"\\\n]|\\.)*)"|([A-Za-z_][A-Za-z0-9_]*)|([:\[\]{},])')
_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)")
_SIMPLE = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b'"': b'"', b"'": b"'", b"\\": b"\\"}


class Expectation(NamedTuple):
    id: str  # file:test:expectation
    robotstxt: bytes
    url: str
    agent: str
    allowed: bool
    google_specific: bool


def _unescape(s: str) -> bytes:
    def one(m: re.Match[bytes]) -> bytes:
        e = m[1]
        if e[:1] == b"x":
            return bytes([int(e[1:], 16)])
        if e[:1].isdigit():
            return bytes([int(e, 8)])
        return _SIMPLE.get(e, e)

    return _ESCAPE.sub(one, s.encode("utf-8"))


def _tokens(text: str) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"cannot read textproto at {text[pos : pos + 30]!r}")
        pos = m.end()
        if m[1] is not None:
            value = _unescape(m[1])
            if out and out[-1][0] == "str":  # adjacent strings concatenate
                out[-1] = ("str", out[-1][1] + value)  # type: ignore[operator]
            else:
                out.append(("str", value))
        elif m[2] is not None:
            out.append(("id", m[2]))
        elif m[3] is not None:
            out.append(("punct", m[3]))
    return out


def _value(tokens: list[tuple[str, object]], i: int) -> tuple[object, int]:
    tok = tokens[i][1]
    if tok == "[":
        items = []
        i += 1
        while tokens[i][1] != "]":
            if tokens[i][1] == ",":
                i += 1
                continue
            item, i = _value(tokens, i)
            items.append(item)
        return items, i + 1
    if tok == "{":
        fields: dict[str, object] = {}
        i += 1
        while tokens[i][1] != "}":
            if tokens[i][1] == ",":
                i += 1
                continue
            name = tokens[i][1]
            i += 1
            if tokens[i][1] == ":":
                i += 1
            fields[str(name)], i = _value(tokens, i)
        return fields, i + 1
    return tok, i + 1


def load(path: Path) -> list[Expectation]:
    tokens = _tokens(path.read_text(encoding="utf-8"))
    root, _ = _value([("punct", "{"), *tokens, ("punct", "}")], 0)
    out = []
    for t, test in enumerate(root["tests"]):  # type: ignore[index]
        for e, exp in enumerate(test.get("test_expectations", [])):
            out.append(
                Expectation(
                    f"{path.parent.name}/{path.stem}:{t}:{e}",
                    test.get("robotstxt", b""),
                    exp["testurl"].decode("utf-8", "surrogateescape"),
                    exp["useragent"].decode("utf-8", "surrogateescape"),
                    exp["expected_outcome"] == "ALLOWED",
                    exp.get("test_type") == "GOOGLE_SPECIFIC",
                )
            )
    return out


def expectations() -> list[Expectation]:
    return [e for p in sorted(SUITE.rglob("*.textproto")) for e in load(p)]
