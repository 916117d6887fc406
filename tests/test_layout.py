"""The package's layout: no import circles, no module too long to read, no lower layer
importing the command line.

Read from the source, not by importing it: every import statement counts, those inside
functions and under ``TYPE_CHECKING`` too, since a circle broken only by where an import
stands still ties the two modules together.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "manners"
MOST_LINES = 800
CRAWLER_LINES = 600  # crawl/crawler.py: the loop, its parts in modules of their own


def module_files() -> dict[str, Path]:
    """Each Python module of the package, by its dotted name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def is_package(name: str, path: Path) -> bool:
    return path.name == "__init__.py"


def imports(
    name: str, path: Path, modules: dict[str, Path], compiled: frozenset[str] = frozenset()
) -> set[str]:
    """The modules of the package that ``name`` imports, anywhere in its text.

    ``import a.b`` reaches ``a.b``; ``from pkg import x`` reaches ``pkg.x`` when that is a
    module, else ``pkg``; relative imports are resolved.  A parent package run on the way
    (``a`` for ``a.b``) is no edge: it is imported first, but imports nothing of ``a.b``'s.
    A module in ``compiled`` (the engine) is reached but is no Python module: no edge.
    """
    package = name if is_package(name, path) else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            for alias in node.names:
                below = f"{origin}.{alias.name}"
                found.add(below if below in modules or below in compiled else origin)
    return {m for m in found if m in modules and m != name}


def extensions() -> set[str]:
    """Modules of the package that are no Python source (the compiled engine, ``_core``)."""
    found = set()
    for path in PACKAGE.rglob("*"):
        if path.suffix in (".so", ".pyd", ".pyi") and not path.with_suffix(".py").exists():
            parts = path.relative_to(SRC).parts
            found.add(".".join([*parts[:-1], parts[-1].split(".")[0]]))
    return found


def graph() -> dict[str, set[str]]:
    modules, compiled = module_files(), frozenset(extensions())
    return {name: imports(name, path, modules, compiled) for name, path in modules.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The circles among the modules: for each module on one, a shortest circle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    parts: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the package is shallow enough to recurse
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                parts.append(sorted(part))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    found: dict[tuple[str, ...], None] = {}
    for part in parts:
        for start in part:
            found[turned(chain(start, set(part), edges))] = None
    return [list(c) for c in found]


def turned(circle: list[str]) -> tuple[str, ...]:
    """A circle started at its first module by name, so that one circle is named one way."""
    ring = circle[:-1]
    at = ring.index(min(ring))
    ring = ring[at:] + ring[:at]
    return (*ring, ring[0])


def chain(start: str, inside: set[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest circle from ``start`` among the modules ``inside``, start repeated at the end."""
    came: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(edges[v] & inside):
                if w == start:
                    path = [start]
                    while v != start:
                        path.append(v)
                        v = came[v]
                    return [start, *reversed(path[1:]), start]
                if w not in came:
                    came[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"no circle through {start}")


def test_the_reading_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_reading_resolves_imports(tmp_path: Path) -> None:
    modules = {
        "p": tmp_path / "p" / "__init__.py",
        "p.a": tmp_path / "p" / "a.py",
        "p.b": tmp_path / "p" / "b.py",
        "p.q": tmp_path / "p" / "q" / "__init__.py",
        "p.q.c": tmp_path / "p" / "q" / "c.py",
    }
    for path in modules.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    modules["p.q.c"].write_text(
        "from .. import a\nfrom ..b import thing\nfrom . import helper\nfrom .. import _ext\n"
        "def f():\n    import p.q\n"
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p import zzz\n"
    )
    assert imports("p.q.c", modules["p.q.c"], modules, frozenset({"p._ext"})) == {"p.a", "p.b", "p.q", "p"}
    modules["p.q"].write_text("from .c import x\nfrom . import c\n")
    assert imports("p.q", modules["p.q"], modules) == {"p.q.c"}


def test_no_import_circle() -> None:
    found = circles(graph())
    assert not found, "import circles:\n" + "\n".join("  " + " -> ".join(c) for c in found)


def test_no_module_too_long() -> None:
    long = {
        str(path.relative_to(SRC)): n
        for path in module_files().values()
        if (n := len(path.read_text().splitlines())) > MOST_LINES
    }
    assert not long, f"modules over {MOST_LINES} lines: {long}"


def test_crawler_is_short() -> None:
    path = PACKAGE / "crawl" / "crawler.py"
    n = len(path.read_text().splitlines())
    assert n < CRAWLER_LINES, f"{path.relative_to(SRC)} is {n} lines, not under {CRAWLER_LINES}"


def test_only_the_entry_point_imports_the_command_line() -> None:
    edges = graph()
    users = sorted(name for name, to in edges.items() if "manners.cli" in to and name != "manners.__main__")
    assert not users, f"modules importing manners.cli (only manners.__main__ may): {users}"
