"""What a Gopher server's reply to a request for a file means: the file, or "no such file".

Gopher has no status codes: a server says a file is missing in several shapes (nothing, a
type-3 error item, gophernicus' plain error page, a menu).  The fetcher, the diagnostics
(``lint`` calls such a file no robots.txt, as the fetcher reads it), the crawler and the
site audit all read a reply these same ways; this module imports only :mod:`manners.terminal`,
so the lowest of them can.
"""

from __future__ import annotations

import re

from .terminal import printable

_MENU_LINE = re.compile(rb"[^\t\r\n]*\t[^\t\r\n]*\t[^\t\r\n]*\t[^\r\n]*")
_ERROR_PAGE_LINES = 3  # gophernicus: the message, a rule, a "Gophered by" footer


def gopher_text(raw: bytes) -> bytes | None:
    """The file a Gopher server sent (its final lone "." dropped), or None when what it
    sent says "no such file".

    Real servers say it in several shapes: nothing at all, a type-3 error line or
    menu (pygopherd, gophernicus for directories), a plain "Error: ..." page
    (gophernicus), or a menu where a file was asked for.
    """
    text = gopher_text_body(raw)
    content = [line for line in text.splitlines() if line.strip()]
    if not content or gopher_error(raw) is not None:
        return None
    if all(_MENU_LINE.fullmatch(line) for line in content):
        return None  # a menu, not a text file
    return text


def gopher_text_body(raw: bytes) -> bytes:
    """A text reply without its final lone "." line (the draft: clients SHOULD NOT show
    it, and only a "." just before the connection closes ends the text)."""
    end = len(raw.rstrip())
    if raw[:end] == b"." or raw[:end].endswith(b"\n."):
        return raw[: end - 1]
    return raw


def gopher_error(raw: bytes) -> str | None:
    """The message of a reply that says "error" instead of answering, else None.

    Two shapes: a type-3 item first (the draft's rule; pygopherd, gophernicus for a
    directory), and gophernicus' plain page for a missing file, a first line
    "Error: ..." and at most two more lines.  An empty reply is not an error here.
    """
    lines = [line for line in gopher_text_body(raw).splitlines() if line.strip()]
    if not lines:
        return None
    first = lines[0]
    if first[:1] == b"3" and _MENU_LINE.fullmatch(first):
        display, selector = first[1:].split(b"\t")[:2]
        return printable((display.strip() or selector.strip() or b"error").decode("utf-8", "replace"))
    if first.lstrip()[:6].lower() == b"error:" and len(lines) <= _ERROR_PAGE_LINES:
        return printable(first.strip().decode("utf-8", "replace"))
    return None
