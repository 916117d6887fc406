"""Who may fetch what on one server: robots (columns) against its URLs (rows), pure.

The columns: every robot (``*``), the four virtual agents of the Gemini companion (for Gemini
only: they are its companion's, and a Web or Gopher audit showing them would add four columns
of roles no robot there acts in), each robot
the file names in a User-agent line, and the robots the caller asks about.  Each cell is that
robot's decision and the line that makes it, the file read as the server's scheme calls for,
each target asked about as ``manners explain`` asks (a Gopher robot matches selectors).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...agents import product_token
from ...readers import ROLES
from ...robots import RobotsTxt
from ...targets import as_read_by
from .report import Column, Row


def columns_for(robots: RobotsTxt, profile: str, agents: Sequence[str], roles: Sequence[str]) -> list[Column]:
    """The robots of the matrix, each once: ``*``, the virtual agents (Gemini), the file's, and
    ``agents`` (acting in ``roles``)."""
    found: dict[tuple[str, tuple[str, ...]], Column] = {}
    names: set[str] = set()

    def add(name: str, agent: str, acting: Iterable[str], why: str) -> None:
        key = (agent.lower(), tuple(sorted(r.lower() for r in acting)))
        if key in found:
            return
        if name in names:  # a robot named like a virtual agent, read as a robot of that name
            name = f"{name} (User-agent)"
        names.add(name)
        found[key] = Column(name, agent, tuple(acting), why)

    add("*", "*", (), "every robot")
    if profile.startswith("gemini"):  # the companion's virtual agents: Gemini's own, no column elsewhere
        for role in ROLES:
            add(role, "*", (role,), "a virtual agent")
    for group in robots.groups(profile):
        for line, value in group.agents:
            token = product_token(value)
            if value.strip() == "*" or token is None:
                continue
            if token.lower() in ROLES and profile.startswith("gemini"):
                continue  # Gemini reads "User-agent: archiver" as the virtual agent: its column is there
            add(token, token, (), f"named in robots.txt (line {line})")
    for agent in agents:
        token = product_token(agent) or agent
        label = token + (f" ({', '.join(roles)})" if roles else "")
        add(label, agent, roles, "asked for (--agent)")
    return list(found.values())


def decide(
    robots: RobotsTxt, profile: str, targets: Sequence[tuple[str, str]], columns: list[Column]
) -> list[Row]:
    """Each column's decision for each ``(url, how it was found)``."""
    rows = []
    for url, how in targets:
        asked = as_read_by(url, profile)
        rows.append(Row(url, how, tuple(robots.decide(asked, c.agent, c.roles) for c in columns)))
    return rows
