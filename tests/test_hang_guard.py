"""The suite's deadline per test (tests/hang_guard.py): a test that hangs fails the run in seconds,
named, with the line it waited on, in parallel workers and in one process; the others still pass."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent

HANGS = """
import time

def test_hangs():
    time.sleep(600)  # the line the report names

def test_ends():
    pass
"""


@pytest.mark.parametrize("workers", ["2", "0"])
def test_a_test_that_hangs_ends_the_run_named_with_where_it_waited(tmp_path: Path, workers: str) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["hang_guard"]\n')
    (tmp_path / "test_hangs.py").write_text(HANGS)
    env = {**os.environ, "PYTHONPATH": str(HERE), "MANNERS_TEST_DEADLINE": "3"}
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", workers, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    said = run.stdout + run.stderr
    assert run.returncode != 0, said
    assert took < 60, f"the run took {took:.0f} s"
    assert 'test_hangs.py", line 5 in test_hangs' in said, said
    if workers != "0":  # the other worker's test is reported; in one process the run stops there
        assert "test_hangs.py::test_hangs ran past its 3 s" in said, said
        assert "1 failed, 1 passed" in said, said
