"""A deadline for each test: one that has not ended after ``MANNERS_TEST_DEADLINE`` seconds (300
unless set; the slowest test takes under a minute) has every thread's stack printed and its
process ended, so a hang fails the run naming the test and where it waited, instead of
stalling it until CI's own limit ends it with nothing said.

Under pytest-xdist the controller reports a worker's end against the test it was running, but a
worker's own stderr goes nowhere: so a worker writes its stacks to a file in a directory the
controller made, and the controller prints those files at the end of its report.  With ``-n 0``
the stacks go to stderr and the run stops there."""

from __future__ import annotations

import faulthandler
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

DEADLINE = float(os.environ.get("MANNERS_TEST_DEADLINE", "300"))
_DIR = "MANNERS_HANG_DIR"  # set by the controller, inherited by the workers it starts
_out: IO[str] | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _out
    if hasattr(config, "workerinput"):
        if where := os.environ.get(_DIR):
            _out = open(Path(where) / f"worker-{os.getpid()}.txt", "w")  # noqa: SIM115 (kept open)
    else:
        os.environ[_DIR] = tempfile.mkdtemp(prefix="manners-hangs-")
        # the terminal's stderr as it is now: while a test runs, fd 2 is pytest's capture file
        _out = os.fdopen(os.dup(2), "w")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    if _out is None:
        yield
        return
    worker = hasattr(item.config, "workerinput")
    if worker:  # the name is written now, so only a test that hangs leaves it in the file
        print(f"{item.nodeid} ran past its {DEADLINE:.0f} s:", file=_out, flush=True)
    faulthandler.dump_traceback_later(DEADLINE, exit=True, file=_out)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        if worker:
            _out.seek(0)
            _out.truncate()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    where = os.environ.get(_DIR)
    if hasattr(config, "workerinput") or where is None:
        return
    for dump in sorted(Path(where).glob("worker-*.txt")):
        if text := dump.read_text(errors="replace").strip():
            terminalreporter.section(f"a test past its deadline ({dump.name})", sep="=", red=True)
            terminalreporter.line(text)
    shutil.rmtree(where, ignore_errors=True)
