"""Gemtext links and title (Gemini spec v0.16.1 §5), pure.

Only lines outside preformatted blocks count: a line starting with three backticks
toggles the block, and a ``=>`` inside one is text someone shows, not a link.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_LINK = re.compile(r"=>[ \t]*([^ \t]+)(?:[ \t]+(.*))?")


@dataclass(frozen=True)
class Link:
    line: int  # 1-based
    target: str  # as written: resolve it against the page's final URL (urls.normalise)
    label: str  # "" when the line has none


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(number, line) of the lines outside preformatted blocks, toggle lines left out."""
    preformatted = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            preformatted = not preformatted
        elif not preformatted:
            yield number, line.removesuffix("\r")


def links(text: str) -> list[Link]:
    """The ``=>`` lines: white space between "=>", URL and label is optional; a line with
    no URL is no link."""
    found = []
    for number, line in _lines(text):
        m = _LINK.fullmatch(line) if line.startswith("=>") else None
        if m:
            found.append(Link(number, m[1], (m[2] or "").strip(" \t")))
    return found


def title(text: str) -> str | None:
    """The first level-1 heading ("#" not followed by "#"), stripped; None when none has text."""
    for _, line in _lines(text):
        if line.startswith("#") and not line.startswith("##"):
            heading = line[1:].strip(" \t")
            if heading:
                return heading
    return None
