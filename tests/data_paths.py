"""Where the tests and benches find the repository's data (``data/``, described in data/SOURCES.md).

The one definition of these paths for Python.  Small parts are plain files under ``data/``; the
large corpora are archives there that scripts/setup unpacks into ``data/unpacked/`` (git-ignored),
so a path into them comes from ``unpacked()``, which first checks that the unpacked copy is there
and is of the archive now in the clone, and otherwise stops with one sentence saying what to run.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
ARCHIVES = DATA / "corpus"
UNPACKED = DATA / "unpacked"
SMALLNET = DATA / "corpus" / "smallnet"
CAPTURES = SMALLNET / "server_transcripts"
CONFORMANCE = DATA / "conformance" / "google-spec-test"
SEEDS = DATA / "seeds"
RUN = "run scripts/setup (or scripts/unpack-data)"


def stale(name: str) -> str | None:
    """Why ``data/unpacked/NAME`` cannot be read (missing, or unpacked from another copy of the
    archive), as a sentence; None when it can."""
    archive = ARCHIVES / f"{name}.tar.xz"
    stamp = UNPACKED / f"{name}.sha256"
    try:
        unpacked_from = stamp.read_text().strip()
    except FileNotFoundError:
        unpacked_from = None
    if unpacked_from is not None and (UNPACKED / name).is_dir():
        if unpacked_from == hashlib.sha256(archive.read_bytes()).hexdigest():
            return None
        return f"{archive.relative_to(ROOT)} changed since it was unpacked: {RUN}"
    return f"{archive.relative_to(ROOT)} is not unpacked: {RUN}"


def all_stale() -> str | None:
    """The first archive of ``data/corpus`` that is not unpacked as it is now, as a sentence."""
    for archive in sorted(ARCHIVES.glob("*.tar.xz")):
        if (why := stale(archive.name.removesuffix(".tar.xz"))) is not None:
            return why
    return None


@functools.cache
def unpacked(name: str) -> Path:
    """``data/unpacked/NAME``, the unpacked ``data/corpus/NAME.tar.xz``; exits with a sentence
    saying to run scripts/setup when it is missing or out of date."""
    if (why := stale(name)) is not None:
        raise SystemExit(why)
    return UNPACKED / name
