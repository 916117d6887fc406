"""The ``site``, ``diff`` and ``serve`` subcommands, added to the ``manners`` parser."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .diff_command import add_parser as add_diff
from .serve_command import add_parser as add_serve
from .site.command import add_parser as add_site

Common = Callable[..., None]  # cli.build_parser's common(parser, robot=True): --json, --agent, --role...


def add_parsers(sub: Any, common: Common) -> None:
    """Each command module's ``add_parser(sub, common)``; it sets ``func(args, out) -> int``."""
    adders: list[Callable[[Any, Common], argparse.ArgumentParser]] = [add_diff, add_serve, add_site]
    for add in adders:
        add(sub, common)
