"""Robot names: the product token a caller's name stands for, and the token a file's line names.

RFC 9309 §2.2.1 matches a robot by its *product token*: ``identifier = 1*(%x2D / %x41-5A /
%x5F / %x61-7A)``, letters, "-" and "_".  Callers often pass a whole User-Agent header
(``mybot/1.0 (+http://example.org/bot)``), so the token is what leads it.
"""

from __future__ import annotations

from ._core import agent_token, product_token

__all__ = ["agent_token", "product_token", "require_token"]

_SPACE = " \t\n\r\v\f"


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
