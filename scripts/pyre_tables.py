"""Writes crates/manners-core/src/watch/pyre.rs: Python's ``re`` classes ``\\d``, ``\\s``, ``\\w`` for
``str`` patterns, as tables.

The access-log parsers of ``manners watch`` were Python regular expressions before they moved into
the engine; the engine reads a hostile line as they did, so it needs their character classes (which
are Unicode's, as this Python has them).  Run: ``python scripts/pyre_tables.py > crates/...``.
"""

from __future__ import annotations

import re
import sys
import unicodedata


def ranges(pattern: str) -> list[tuple[int, int]]:
    """The runs of code points ``pattern`` matches, as (first, last)."""
    rx = re.compile(pattern)
    out: list[tuple[int, int]] = []
    start = None
    for c in range(sys.maxunicode + 2):
        ok = c <= sys.maxunicode and rx.match(chr(c)) is not None
        if ok and start is None:
            start = c
        if not ok and start is not None:
            out.append((start, c - 1))
            start = None
    return out


def table(name: str, runs: list[tuple[int, int]], doc: str) -> str:
    flat = ", ".join(f"0x{a:X}, 0x{b:X}" for a, b in runs if b >= 0x80)
    return f"/// {doc}\nstatic {name}: &[u32] = &[{flat}];\n"


def main() -> None:
    digits, spaces, words = ranges(r"\d"), ranges(r"\s"), ranges(r"\w")
    for a, b in digits:  # every run starts at its zero: a digit's value is its offset mod 10
        assert all(unicodedata.digit(chr(c)) == (c - a) % 10 for c in range(a, b + 1))
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    print(f"""//! Python's `re` character classes for `str` patterns (`\\d`, `\\s`, `\\w`) beyond ASCII, as
//! Python {version} (Unicode {unicodedata.unidata_version}) has them: the log parsers were its regular
//! expressions, and a hostile line is read as they read it.  Written by scripts/pyre_tables.py.
""")
    print(table("DIGITS", digits, "Runs of decimal digits, first and last, each from its zero."))
    print(table("SPACES", spaces, "Whitespace (`str.isspace`), first and last of each run."))
    print(table("WORD", words, "Word characters (`str.isalnum`, `_`), first and last of each run."))
    print("""/// Whether `c` is in the runs of `table` (pairs of first and last, in order).
fn within(table: &[u32], c: char) -> bool {
    let c = c as u32;
    // the number of bounds at or below c: odd when c is inside a run (a bound is inclusive)
    let below = table.partition_point(|&bound| bound < c);
    below % 2 == 1 || table.get(below) == Some(&c)
}

/// The value of `c` if it is a decimal digit (`\\d`).
pub(crate) fn digit(c: char) -> Option<u32> {
    if c.is_ascii() {
        return c.to_digit(10);
    }
    let at = DIGITS.partition_point(|&bound| bound < c as u32);
    let first = if at % 2 == 1 {
        DIGITS[at - 1]
    } else if DIGITS.get(at) == Some(&(c as u32)) {
        c as u32
    } else {
        return None;
    };
    Some((c as u32 - first) % 10)
}

/// Whether `c` is whitespace (`\\s`): Unicode's, and the ASCII separators 0x1C to 0x1F.
pub(crate) fn space(c: char) -> bool {
    if c.is_ascii() {
        return matches!(c, '\\t'..='\\r' | '\\x1c'..=' ');
    }
    within(SPACES, c)
}

/// Whether `c` is a word character (`\\w`).
pub(crate) fn word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    within(WORD, c)
}""")


if __name__ == "__main__":
    main()
