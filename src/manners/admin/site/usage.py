"""What a Web site says robots may do with what they fetch: the usage preferences its robots.txt
states, and the ``Content-Usage`` header field of the answer robots.txt came in.

Two places, two scopes.  The robots.txt rules (``Content-Usage``, draft-ietf-aipref-attach,
"Robots Exclusion Protocol Content-Usage Rule"; Cloudflare's ``Content-Signal``) apply to the
site's URLs, each as ``robots.usage`` reads it for the robot asked about.  The header field
(attach, "HTTP Content-Usage Header Field") is representation metadata: it applies to the
content of the message it comes in, robots.txt itself, and says nothing of the site's other
URLs; the report says exactly that.  Its value comes from the network: it is read by the
engine's one reader of RFC 9651 dictionaries (``_core.parse_usage_statement``, the whole value
as received), kept to HEADER_KEEP characters for the report, and escaped where it is shown.
Several field lines are combined with commas, as HTTP combines them (RFC 9110 §5.3) and as a
structured field is parsed from them (RFC 9651 §4.2): one report line.

Gemini and Gopher answers have no header fields, and their profiles do not read usage lines
(lint reports them as information): there is nothing here for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._core import parse_usage_statement
from ...preferences import usage_json, usage_words
from ...robots import RobotsTxt, Usage
from ...targets import as_read_by
from ...terminal import safe

HEADER_KEEP = 1024  # characters of a Content-Usage header field's value kept for the report
HEADER_SECTION = 'draft-ietf-aipref-attach, "HTTP Content-Usage Header Field"'


@dataclass(frozen=True)
class Header:
    """The Content-Usage header field of the answer robots.txt came in, as the engine reads it."""

    url: str  # the URL that answered with robots.txt (after redirects)
    value: str  # as received (field lines comma-joined), at most HEADER_KEEP characters
    length: int  # characters received
    categories: tuple[tuple[str, str], ...]  # every category: "yes", "no" or "unstated"
    malformed: tuple[int, str] | None  # no RFC 9651 dictionary: (offset, why); every category unknown

    @property
    def cut(self) -> bool:
        return self.length > len(self.value)

    def words(self) -> str:
        """What the field states, in words (one sentence of the report)."""
        if self.malformed is not None:
            at, why = self.malformed
            said = f"no structured-field dictionary (at byte {at}: {why}), so every category is unknown"
        else:
            stated = [f"{c}={v}" for c, v in self.categories if v != "unstated"]
            said = ", ".join(stated) if stated else "no category it knows"
        return (
            f"robots.txt's own Content-Usage header: {said}; it applies to the content of that answer,"
            f" robots.txt itself, not to the site's other URLs ({HEADER_SECTION})"
        )

    def sent(self) -> str:
        """The value as sent, escaped for a terminal, and how much of it was kept."""
        cut = f" … (cut: {self.length:,} characters sent, {len(self.value):,} kept)" if self.cut else ""
        return f"Content-Usage: {safe(self.value)}{cut}"

    def as_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "value": self.value,
            "length": self.length,
            "cut": self.cut,
            "categories": dict(self.categories),
            "malformed": None if self.malformed is None else self.malformed[1],
        }


def header(url: str, headers: Mapping[str, str]) -> Header | None:
    """The Content-Usage field of an answer (``headers`` with lower-case names, field lines
    already comma-joined), or None when it has none."""
    value = headers.get("content-usage")
    if value is None:
        return None
    categories, malformed = parse_usage_statement(value)
    return Header(url, value[:HEADER_KEEP], len(value), categories, malformed)


@dataclass(frozen=True)
class SiteUsage:
    """The usage preferences robots.txt states for one robot, by URL: the site's root first,
    then each URL of the matrix."""

    agent: str
    roles: tuple[str, ...]
    urls: tuple[tuple[str, Usage], ...]

    def lines(self, shown: Sequence[str]) -> list[str]:
        """One line per URL with a stated preference (``shown``: each URL as the report names
        it), each preference with its line; none at all when the file states none."""
        out = []
        for name, (_, usage) in zip(shown, self.urls, strict=True):
            words = usage_words(usage)
            if words:
                out.append(f"  {name}: {words}")
        if not out:
            return []
        who = self.agent + (f" acting as {', '.join(self.roles)}" if self.roles else "")
        return [f"usage preferences robots.txt states for {who} (Content-Usage, Content-Signal):", *out]

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "roles": list(self.roles),
            "urls": [{"url": url, **usage_json(usage)} for url, usage in self.urls],
        }


def site_usage(
    robots: RobotsTxt, profile: str, root: str, urls: Sequence[str], agent: str, roles: tuple[str, ...]
) -> SiteUsage:
    """The preferences for ``root`` and ``urls`` (once each), as ``agent`` acting in ``roles``
    reads them under ``profile``."""
    seen = dict.fromkeys([root, *urls])
    return SiteUsage(
        agent, roles, tuple((url, robots.usage(as_read_by(url, profile), agent, roles)) for url in seen)
    )
