"""Text that is safe to print: nothing a robots.txt, a URL or a server says reaches a terminal raw.

A robots.txt is written by strangers.  ``\\x1b]0;TITLE\\x07`` in it would retitle the
window, ``\\r`` would overwrite the line before it, a C1 byte or a bidi override would
reorder what the reader sees, and an undecodable byte (kept as a lone surrogate by
``surrogateescape``) would crash ``print``.  :func:`safe` shows every such character
as an escape; :func:`safe_json` is the same rule in JSON's own escapes, so a script
still reads back the exact text.
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
    DEL, C1 and lone surrogates raw; JSON's escape round-trips them exactly.
    """
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return UNSAFE.sub(lambda m: m[0] if m[0] == "\n" else f"\\u{ord(m[0]):04x}", text)
