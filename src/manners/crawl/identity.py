"""What a crawl is, kept in its frontier: its robot (agent, roles, profile, scope), its seeds' check,
and the options it was last run with.

Apart from the crawler because more than the crawler reads it: ``manners crawl`` checks seeds and
reads a crawl's settings before any crawler is made, and ``manners crawl status`` names a crawl's
identity.  A robot never changes its manners mid-crawl: a resume that names another is refused here.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from . import urls
from .answers import SCHEMES
from .frontier import Frontier, FrontierError, is_shared, open_frontier
from .outdir import CrawlFileError

IDENTITY = ("agent", "roles", "profile", "scope")  # what a crawl is, kept in the frontier; never changes
WEB_SEED = "the Web is served by the Scrapy integration (manners.scrapy), not by manners crawl"


class CrawlMismatch(ValueError):
    """A resume that names another agent, roles, profile or scope than the crawl it resumes."""


async def settle_identity(
    frontier: Frontier,
    agent: str | None,
    roles: tuple[str, ...] | None,
    profile: str | None,
    scope: Literal["seeds", "any"] | None,
    where: str,
    shared: bool,
) -> tuple[str, tuple[str, ...], str | None, Literal["seeds", "any"]]:
    """The crawl's agent, roles, profile and scope: as kept, as given, or refused when they differ.

    Returns the agent, roles, profile and scope to crawl as.  ``where``: the crawl as a sentence
    names it; ``shared``: a fleet's (its crawls have names)."""
    kept = json.loads(await frontier.get_meta("identity") or "null")
    given = {"agent": agent, "roles": _roles(roles) if roles is not None else None,
             "profile": profile, "scope": scope}  # fmt: skip
    if kept is None:
        if agent is None:
            raise CrawlMismatch(
                f"name the robot with --agent: {where} keeps no robot's name yet"
                " (a new crawl, or one made by an older manners)"
            )
        kept = {"agent": agent, "roles": given["roles"] or [], "profile": profile,
                "scope": scope or "seeds"}  # fmt: skip
        await frontier.set_meta("identity", json.dumps(kept))
    differs = [
        f"{name} {_shown(given[name])} (the crawl's is {_shown(kept[name])})"
        for name in IDENTITY
        if given[name] is not None and given[name] != kept[name]
    ]
    if profile is None and kept["profile"] is not None:
        profile = kept["profile"]
    if differs:
        elsewhere = "under another --name" if shared else "in another --out"
        raise CrawlMismatch(
            f"{where} is a crawl by another robot: {'; '.join(differs)}; a robot keeps its manners"
            f" for a whole crawl (resume with the crawl's own, or start a new one {elsewhere})"
        )
    return kept["agent"], tuple(kept["roles"]), profile, kept["scope"]


def check_seed(seed: str) -> str:
    """A seed, normalised; ValueError (one sentence) for one the crawler cannot start from."""
    scheme = seed.split(":", 1)[0].lower() if ":" in seed else ""
    if scheme in ("http", "https"):
        raise ValueError(f"{seed}: {WEB_SEED}")
    if scheme not in SCHEMES:
        raise ValueError(f"{seed!r} is no gemini:// or gopher:// URL, so it cannot be a seed")
    try:
        return urls.normalise(seed)
    except ValueError as exc:
        raise ValueError(f"{seed!r} is no usable URL: {exc}") from None


def read_settings(
    out: Path, frontier: Path | str | None = None, name: str | None = None
) -> dict[str, Any] | None:
    """The options a crawl was last run with ({} when it kept none); None: no such crawl yet.

    The crawl is the one in ``out`` (its ``frontier.sqlite3``), or in the SQLite file ``frontier``
    names, or the crawl ``name`` on the Redis ``frontier`` names (one that keeps no identity yet
    is none).  A SQLite file is read read-only, and without the directory's lock: a crawl still
    running keeps it, and its own start refuses then."""
    if is_shared(frontier):
        assert isinstance(frontier, str)
        return asyncio.run(_read_shared_settings(frontier, name))
    path = out / "frontier.sqlite3" if frontier is None else Path(frontier)
    if path.is_dir():
        path = path / "frontier.sqlite3"
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise CrawlFileError(f"cannot read the crawl in {path}: {exc}") from None
    kept = json.loads(row[0]) if row else {}
    return kept if isinstance(kept, dict) else {}


async def _read_shared_settings(spec: str, name: str | None) -> dict[str, Any] | None:
    try:
        frontier = open_frontier(spec, None, name)
        try:
            identity, settings = await frontier.get_meta("identity"), await frontier.get_meta("settings")
        finally:
            await frontier.close()
    except FrontierError as exc:
        raise CrawlFileError(str(exc)) from None
    if identity is None:
        return None
    kept = json.loads(settings) if settings else {}
    return kept if isinstance(kept, dict) else {}


def _roles(roles: Iterable[str]) -> list[str]:
    """Roles as a crawl's identity keeps them: lower case, each once, sorted."""
    return sorted({r.lower() for r in roles})


def _shown(value: object) -> str:
    if isinstance(value, list):
        return " ".join(value) if value else "(none)"
    return "(by scheme)" if value is None else str(value)
