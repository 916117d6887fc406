"""Where a command's words go, and the one mistake it reports as a sentence.

Every command of ``manners`` (the checks, ``crawl``, ``site``, ``diff``, ``serve``) writes
through an :class:`Out`: colour and tables on a terminal (rich), plain lines when piped,
JSON with ``--json``; every character that came from outside goes through
:mod:`manners.terminal` here.  A user's mistake is a :class:`UsageError`, one sentence on
stderr and exit status 2, never a traceback.  The commands import this module, not the
command line that runs them.
"""

from __future__ import annotations

import shutil
import sys
from typing import Any

from .terminal import safe, safe_json


class UsageError(Exception):
    """A mistake of the user's: one sentence saying what to do instead."""


class Out:
    """Where every line goes; each is made safe here, and nowhere else needs to remember."""

    def __init__(self, as_json: bool) -> None:
        from rich.console import Console

        self.json = as_json
        self.console = Console(highlight=False, soft_wrap=True, emoji=False)
        self.rich = self.console.is_terminal and not as_json
        if self.rich:
            self.width = self.console.width
        else:
            self.width = shutil.get_terminal_size((80, 24)).columns  # COLUMNS when piped

    def line(self, text: str, style: str = "") -> None:
        if self.rich:
            self.console.print(safe(text), style=style or None, markup=False)
        else:
            print(safe(text))

    def body(self, text: str) -> None:
        """A file as it is, line feeds and tabs kept, everything else unsafe escaped."""
        text = safe(text, lines=True)
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")

    def note(self, text: str) -> None:
        """A remark on stderr, so that stdout stays one line per answer."""
        print(f"manners: {safe(text)}", file=sys.stderr)

    def data(self, value: Any) -> None:
        print(safe_json(value))

    def gap(self, header: list[list[str]], rows: list[list[str]]) -> int | None:
        """The spaces between columns that let the table fit the width (two, else one), or
        None when it does not fit even so.  A header is a column's label, a line a word."""
        widths = [max([*map(len, h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
        margin = 0 if self.rich else 2  # plain lines start with the '!' mark and a space
        for gap in (2, 1):
            if sum(widths) + gap * (len(widths) - 1) + margin <= self.width:
                return gap
        return None

    def table(
        self, title: str, header: list[list[str]], rows: list[list[str]], marks: list[bool], gap: int
    ) -> None:
        """A table with ``gap`` spaces between columns and labels stacked a word a line; rows
        flagged in ``marks`` are highlighted (plain output: a leading '!')."""
        header = [[safe(w) for w in h] for h in header]
        rows = [[safe(c) for c in r] for r in rows]
        if self.rich:
            from rich.table import Table
            from rich.text import Text

            t = Table(title=Text(title), title_justify="left", box=None, padding=(0, gap, 0, 0))
            t.pad_edge = False
            for h in header:
                t.add_column(Text("\n".join(h)), no_wrap=True)
            for row, mark in zip(rows, marks, strict=True):
                t.add_row(*(Text(c) for c in row), style="bold yellow" if mark else None)
            self.console.print(t)
            return
        print(safe(title))
        depth = max(map(len, header))  # labels stand on the rows, as rich sets them
        labels = [[([""] * (depth - len(h)) + h)[n] for h in header] for n in range(depth)]
        cells = [*labels, *rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
        sep = " " * gap
        lines = [
            ("!" if n >= depth and marks[n - depth] else " ")
            + " "
            + sep.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for n, row in enumerate(cells)
        ]
        print("\n".join(lines) + "\n")
