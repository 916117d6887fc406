"""Text that is safe to print: nothing a robots.txt, a URL or a server says reaches a terminal raw.

A robots.txt is written by strangers.  ``\\x1b]0;TITLE\\x07`` in it would retitle the
window, ``\\r`` would overwrite the line before it, a C1 byte or a bidi override would
reorder what the reader sees, and an undecodable byte (kept as a lone surrogate by
``surrogateescape``) would crash ``print``.  :func:`safe` shows every such character
as an escape; :func:`safe_json` is the same rule in JSON's own escapes, so a script
still reads back the exact text.  A byte that is not UTF-8 is shown as ``\\xff`` on the
terminal and, by :func:`readable`, as the same four characters in every JSON output
(``--json`` and ``pages.jsonl``): a lone surrogate is no text most JSON readers accept.
:func:`printable` is the shorter rule for a log line: a control character becomes "?".
"""

from __future__ import annotations

import json
import re
from typing import Any

#: C0 controls, DEL, C1 controls, bidi controls, line/paragraph separators, and surrogates
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_KEEP_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape could not decode: show the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str, lines: bool = False) -> str:
    """``text`` with every control, bidi and undecodable character escaped (``\\x1b``).

    ``lines`` keeps line feeds and tabs, for a file's body shown as it is.
    """
    return (_KEEP_LINES if lines else UNSAFE).sub(_escape, text)


def safe_json(value: Any) -> str:
    """``value`` as indented JSON, every unsafe character as a ``\\uXXXX`` escape.

    ``json.dumps`` escapes C0 controls itself but, with ``ensure_ascii=False``, leaves
    DEL, C1 and lone surrogates raw; JSON's escape round-trips the controls exactly, and a
    byte that was not UTF-8 becomes the text ``\\xff`` (as :func:`readable` makes it), all
    in one pass over the text: a large output is not walked twice.
    """
    try:
        text = _indented(value, JSON_DEPTH, "")
    except TypeError:  # bytes in it
        text = _indented(readable(value), JSON_DEPTH, "")
    # JSON holds no raw tab, and its line feeds are its own indentation: both are kept
    return _KEEP_LINES.sub(_json_escape, text)


# Levels of JSON laid out a key or an item a line: a result, a page or a row of a matrix is
# written on one line.
JSON_DEPTH = 2
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def _indented(value: Any, depth: int, pad: str) -> str:
    """``value`` as JSON indented two spaces a level, ``depth`` levels deep, each deeper value
    on one line.  ``json.dumps(indent=2)`` runs Python's own encoder, which took seconds over
    explain's 26 MB for a file of 20,000 rules; this runs the C one for all but the top."""
    if depth == 0 or not isinstance(value, dict | list) or not value:
        return _ENCODE(value)
    inner = pad + "  "
    if isinstance(value, dict):
        items = [
            f"{inner}{_ENCODE(key if isinstance(key, str) else _ENCODE(key))}: "
            f"{_indented(item, depth - 1, inner)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    return "[\n" + ",\n".join(inner + _indented(item, depth - 1, inner) for item in value) + "\n" + pad + "]"


def _json_escape(match: re.Match[str]) -> str:
    if _SURROGATE.match(match[0]):  # the text readable() makes of it, its backslash escaped for JSON
        return "\\" + _as_text(match)
    return f"\\u{ord(match[0]):04x}"


def readable(value: object) -> object:
    """``value`` for JSON, with every byte that is not UTF-8 written ``\\xff``, as the terminal shows it.

    Such a byte reaches us as ``bytes`` or as a lone surrogate (``surrogateescape``
    decoding); JSON would carry the surrogate as ``\\udcff``, which most readers refuse
    or replace.  Each surrogate is read on its own, as :func:`safe` reads it.
    """
    if isinstance(value, str):
        return _SURROGATE.sub(_as_text, value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {readable(k): readable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [readable(v) for v in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _as_text(match: re.Match[str]) -> str:
    """A lone surrogate as text: ``\\xff`` for a byte ``surrogateescape`` kept (U+DC80..U+DCFF),
    ``\\ud800`` for any other."""
    code = ord(match[0])
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def printable(text: str, limit: int = 300) -> str:
    """Text from the network made safe to log or show: control characters become "?"."""
    clean = "".join(c if c.isprintable() else "?" for c in text[:limit])
    return clean if len(text) <= limit else clean + "…"
