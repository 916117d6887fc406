"""``manners site URL``: an audit of how one server speaks to robots.

:func:`audit_site` asks a Gemini, Gopher or Web server a few polite questions, checks its
answers against the words of RFC 9309, the Gopher draft, the 2019 Gopher robots proposal and
the Gemini companion, lints its robots.txt and says who may fetch which of its URLs.  It
returns a :class:`SiteReport`; ``manners site`` prints it and ``manners serve`` shows it.

- :mod:`.report`: the report (``SiteReport``, ``Finding``, ``Rule``, ``Column``, ``Row``);
- :mod:`.gopher`, :mod:`.gemini`, :mod:`.http`: the checks, pure functions over the replies;
- :mod:`.matrix`: who may fetch what, pure;
- :mod:`.probe` and :mod:`.sample`: the requests, paced, each with a deadline;
- :mod:`.command`: the command line.
"""

from __future__ import annotations

from .probe import UsageError, audit_site
from .report import Column, Finding, Reply, Row, Rule, Sample, Severity, SiteReport

__all__ = [
    "Column",
    "Finding",
    "Reply",
    "Row",
    "Rule",
    "Sample",
    "Severity",
    "SiteReport",
    "UsageError",
    "audit_site",
    "rules",
]


def rules() -> list[Rule]:
    """Every check the audit makes, Gopher's, Gemini's and the Web's, with its words."""
    from . import gemini, gopher, http
    from .report import UNANSWERED

    return [*gopher.RULES, *gemini.RULES, *http.RULES, UNANSWERED]
