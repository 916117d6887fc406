"""Robot names: the product token a caller's name stands for, and the token a file's line names.

RFC 9309 §2.2.1 matches a robot by its *product token*: ``identifier = 1*(%x2D / %x41-5A /
%x5F / %x61-7A)``, letters, "-" and "_".  Callers often pass a whole User-Agent header
(``mybot/1.0 (+http://example.org/bot)``), so the token is what leads it.
"""

from __future__ import annotations

import re

_LEADING = re.compile(r"[^/\s(;]*")  # a name ends at "/", white space, "(" or ";"
_TOKEN = re.compile(r"[A-Za-z_-]+")
_FILE_TOKEN = re.compile(r"[A-Za-z_-]*")
_SPACE = " \t\n\r\v\f"


def product_token(agent: str) -> str | None:
    """The lower-cased product token a caller's name stands for; "*" for the star; None when the
    name leads with no valid token (``AB42bot``, ``""``): such a robot matches no named group."""
    if not isinstance(agent, str):
        raise TypeError(f"agent must be a str (a robot's name such as 'mybot'), not {type(agent).__name__}")
    if agent.isascii() and agent.isalpha():  # the common case, at no cost
        return agent.lower()
    lead = _LEADING.match(agent.strip(_SPACE))
    name = lead[0] if lead else ""
    if name == "*":
        return "*"
    return name.lower() if _TOKEN.fullmatch(name) else None


def require_token(agent: str) -> str:
    """``agent`` itself, after checking that it leads with a product token (or is "*").

    For robots that act (``Robot``, the crawler, the command line): a name with no valid
    token would match no group and quietly run under ``User-agent: *``.
    """
    if product_token(agent) is None:
        shown = agent.strip(_SPACE)[:60]
        raise ValueError(
            f"the robot name {shown!r} does not start with a product token (letters, '-' and '_' only,"
            " as RFC 9309 §2.2.1 has it), so no User-agent line could ever name it;"
            " use a name such as 'mybot' or 'mybot/1.0'"
        )
    return agent


def agent_token(value: str) -> str:
    """The token a file's agent line names: "*", or its leading [A-Za-z_-] run, lower-cased."""
    if value.isalpha() and value.isascii():
        return value.lower()
    if value[:1] == "*" and (len(value) == 1 or value[1] in _SPACE):
        return "*"
    m = _FILE_TOKEN.match(value)
    return m[0].lower() if m else ""
