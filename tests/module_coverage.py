"""The quick tier's promise, kept: every module of manners ran in it.

``scripts/test --quick`` runs ``pytest -m quick --every-module``.  With ``--every-module`` this
plugin watches the tests run (``sys.setprofile`` and ``threading.setprofile``: the standard
library, no coverage package) and fails the session naming each module of the package that no
test exercised, so a quick tier that looks green has touched every module at least once.

A module counts as exercised when one of its functions was called while tests ran (set-up and
tear-down of fixtures included; imports made at collection do not count), or, for a module with
no functions (a package's ``__init__``, ``__main__``), when its top-level code ran.  The modules
are listed from the files on disk when the session starts, so a module added later is held to
the rule at once.  Commands a test runs in a subprocess are not seen: a module that only they
reach needs an in-process test in the quick tier.  Under pytest-xdist each worker watches its
own tests and the controller adds up what they saw.  Once every module has been seen the
watching stops, so it costs little after the first tests.
"""

from __future__ import annotations

import ast
import inspect
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import manners

_SEEN_KEY = "manners_modules_seen"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--every-module",
        action="store_true",
        help="fail the session naming each module of src/manners that no test exercised "
        "(scripts/test --quick turns it on)",
    )


def _has_functions(path: Path) -> bool:
    """Whether the module defines a function with a body: a Protocol's stubs (a docstring, ``...``)
    are never called, so a module of them counts as one without functions."""
    tree = ast.parse(path.read_bytes(), str(path))
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not all(_stub(s) for s in node.body)
        for node in ast.walk(tree)
    )


def _stub(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Pass) or (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
    )


def package_modules() -> dict[str, bool]:
    """Each ``.py`` file of the manners package being tested, as Python names it in code objects,
    with whether it defines any function."""
    root = Path(manners.__file__).parent
    return {str(path): _has_functions(path) for path in sorted(root.rglob("*.py"))}


def module_name(filename: str) -> str:
    """``src/manners/crawl/frontier.py`` as ``manners.crawl.frontier``."""
    root = Path(manners.__file__).parent
    parts = Path(filename).relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class ModuleWatch:
    """Records which package files ran code while tests ran."""

    def __init__(self) -> None:
        self.modules = package_modules()
        # a module with functions waits for one of them; one without, for its top-level code
        self.pending = set(self.modules)
        self.seen: set[str] = set()
        self._lock = threading.Lock()

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        pending = self.pending
        if not pending:
            sys.setprofile(None)  # everything seen: stop watching this thread
            return
        code = frame.f_code
        filename = code.co_filename
        if filename not in pending:
            return
        if self.modules[filename]:
            # a function: not the module's body, a class body, a lambda or a comprehension
            if not code.co_flags & inspect.CO_OPTIMIZED or code.co_name.startswith("<"):
                return
        elif code.co_name != "<module>":
            return
        with self._lock:
            pending.discard(filename)
            self.seen.add(filename)

    def start(self) -> None:
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)

    def stop(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        # a module with no functions imported before the tests ran (at collection) counts too
        loaded = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
        for filename in list(self.pending):
            if not self.modules[filename] and filename in loaded:
                self.pending.discard(filename)
                self.seen.add(filename)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("every_module"):
        return
    config.stash[_watch_key] = ModuleWatch()
    config.stash[_seen_key] = set()


_watch_key = pytest.StashKey[ModuleWatch]()
_seen_key = pytest.StashKey[set[str]]()
_missing_key = pytest.StashKey[list[str]]()


def _is_controller(config: pytest.Config) -> bool:
    """True where tests run in workers elsewhere (pytest-xdist's controller)."""
    dist = getattr(config.option, "dist", "no")
    return dist != "no" and not hasattr(config, "workerinput")


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Iterator[None]:
    watch = session.config.stash.get(_watch_key, None)
    if watch is None or _is_controller(session.config):
        return (yield)
    watch.start()
    try:
        return (yield)
    finally:
        watch.stop()
        session.config.stash[_seen_key] |= watch.seen
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_SEEN_KEY] = sorted(watch.seen)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: a worker finished; add what it saw."""
    seen = getattr(node, "workeroutput", {}).get(_SEEN_KEY)
    if seen is not None and _seen_key in node.config.stash:
        node.config.stash[_seen_key] |= set(seen)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    watch = config.stash.get(_watch_key, None)
    if watch is None or hasattr(config, "workerinput"):
        return
    seen = config.stash[_seen_key]
    missing = sorted(module_name(f) for f in watch.modules if f not in seen)
    config.stash[_missing_key] = missing
    if missing and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    missing = config.stash.get(_missing_key, None)
    if missing is None:
        return
    total = len(config.stash[_watch_key].modules)
    if missing:
        terminalreporter.section("modules no test exercised", red=True)
        for name in missing:
            terminalreporter.line(f"  {name}")
        terminalreporter.line(
            f"{len(missing)} of {total} modules of manners ran no code in these tests: mark a test "
            "that exercises each in-process @pytest.mark.quick (a subprocess is not seen)",
            red=True,
        )
    else:
        terminalreporter.line(
            f"every module exercised: all {total} modules of manners ran code in these tests"
        )
