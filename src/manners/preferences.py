"""The usage preferences that apply to a URL, in the words and the JSON every command uses.

``robots.usage`` (:class:`manners.robots.Usage`) gives every category, stated or not; a
command shows only what the file states, each with its line, so that the output for a file
without ``Content-Usage`` or ``Content-Signal`` stays as it was.  The JSON keeps every
category, ``unstated`` included, so a script reads the same keys for every URL.  ``check``
uses both; the other commands (``explain``, ``serve``, ``site``) can share them, and so this
lies below the command line.
"""

from __future__ import annotations

from .robots import Preference, Usage


def _stated(prefs: tuple[Preference, ...]) -> str:
    return ", ".join(f"{p.category}={p.value} (line {p.line})" for p in prefs if p.value != "unstated")


def usage_words(usage: Usage) -> str:
    """``usage: train-ai=no (line 4), search=yes (line 4); signals: ai-train=no (line 5)``:
    only the stated preferences, each with its line; "" when the file states none."""
    parts = []
    categories, signals = _stated(usage.categories), _stated(usage.signals)
    if categories:
        parts.append(f"usage: {categories}")
    if signals:
        parts.append(f"signals: {signals}")
    return "; ".join(parts)


def usage_json(usage: Usage) -> dict[str, dict[str, dict[str, str | int | None]]]:
    """``{"categories": {"train-ai": {"value": "no", "line": 4}, ...}, "signals": {...}}``:
    every category of both vocabularies, an unstated one with ``line`` null."""
    return {
        "categories": {p.category: {"value": p.value, "line": p.line} for p in usage.categories},
        "signals": {p.category: {"value": p.value, "line": p.line} for p in usage.signals},
    }
