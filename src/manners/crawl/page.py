"""A settled URL (``Page``, and its ``pages.jsonl`` line) and the crawl's running counts (``Stats``).

Plain records, kept apart from the crawler that makes them: the run, the reading of answers
(``answers``), the archive and the progress display all name a page, and none of them needs
the crawler itself to do so.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from ..robot import RobotDecision
from ..vocabulary import timestamp

Outcome = Literal["fetched", "disallowed", "redirect", "error", "skipped", "gone"]  # gone: --revisit


@dataclass(frozen=True)
class Page:
    """One URL settled: fetched, disallowed, a redirect, an error, or skipped (and why)."""

    url: str
    outcome: Outcome
    depth: int
    fetched_at: float  # seconds since the epoch (when settled, for URLs never requested)
    status: int | None = None  # Gemini status; None for Gopher
    mime: str | None = None  # Gemini media type
    item_type: str | None = None  # Gopher item type
    title: str | None = None
    body: bytes = b""  # Gopher text without its final "." line
    links: tuple[str, ...] = ()  # normalised gemini:// and gopher:// URLs found on the page
    decision: RobotDecision | None = None
    target: str | None = None  # redirect
    permanent: bool = False  # a 31 redirect
    reason: str | None = None  # error, skipped, disallowed
    truncated: bool = False
    sha256: str | None = None
    bytes: int = 0
    mirrors: tuple[str, ...] = ()  # Gopher "+" alternatives: recorded, not crawled
    certificate_changed: bool = False
    certificate: dict[str, object] | None = None  # Gemini: fingerprint, notAfter, names the host, TOFU
    peer: str | None = None  # the IP address the request went to
    parent: str | None = None  # skipped links: the page that held them
    links_more: int = 0  # links past --max-links: counted, not taken
    links_skipped: int = 0  # links that can never be requested (recorded as skipped, up to 100)
    visit: int | None = None  # a revisiting crawl: the URL's visit this is (1: its first)
    changed: bool | None = None  # a revisiting crawl: the payload differs from the last visit's
    due: float | None = None  # a revisiting crawl: when the URL is asked again (None: never)

    def record(self) -> dict[str, object]:
        """The ``pages.jsonl`` object for this page."""
        r: dict[str, object] = {"url": self.url, "outcome": self.outcome, "status": self.status}
        if self.item_type is not None:
            r["item_type"] = self.item_type
        else:
            r["mime"] = self.mime
        r.update(title=self.title, bytes=self.bytes, sha256=self.sha256, depth=self.depth,
                 links=list(self.links), fetched_at=timestamp(self.fetched_at))  # fmt: skip
        if self.outcome == "disallowed" and self.decision is not None:
            r.update(line=self.decision.line, rule=self.decision.rule, robots=self.decision.robots_url)
        if self.target is not None:
            r["target"] = self.target
            r["permanent"] = self.permanent
        if self.reason is not None:
            r["reason"] = self.reason
        if self.truncated:
            r["truncated"] = True
        if self.mirrors:
            r["mirrors"] = list(self.mirrors)
        if self.certificate_changed:
            r["certificate_changed"] = True
        if self.certificate is not None:
            r["certificate"] = self.certificate
        if self.peer is not None:
            r["peer"] = self.peer
        if self.parent is not None:
            r["parent"] = self.parent
        for key in ("links_more", "links_skipped"):
            if getattr(self, key):
                r[key] = getattr(self, key)
        if self.visit is not None:
            r["visit"] = self.visit
            r["changed"] = bool(self.changed)
            r["due"] = timestamp(self.due) if self.due is not None else None
        return r


@dataclass
class Stats:
    """What the crawl has done so far, for the progress display and the summary."""

    fetched: int = 0
    disallowed: int = 0
    redirects: int = 0
    errors: int = 0
    skipped: int = 0
    gone: int = 0  # a revisiting crawl: URLs settled as gone (51 or a Gopher error, 3 in a row)
    retries: int = 0
    bytes: int = 0
    requests: int = 0
    queued: int = 0
    in_flight: int = 0
    done: int = 0
    hosts_active: int = 0
    waiting: dict[str, str] = field(default_factory=dict)  # authority -> why it waits
    parked: dict[str, str] = field(default_factory=dict)  # authority -> why it is parked
    started: float = field(default_factory=time.time)
    completed: bool = False  # nothing left to do (or a limit was reached)
    stopped: bool = False  # stop() was called before that
    limit: str | None = None  # the limit that ended the crawl
    dropped: int = 0  # links not queued: their host's queue was full (--max-queued-per-host)
    revisits: int = 0  # a revisiting crawl: responses to URLs visited before
    changed: int = 0  # of which the payload had changed
    due_now: int = 0  # URLs visited before and due now (the frontier's, refreshed with the counts)
    next_due: float | None = None  # when the next URL visited before is due

    def count(self, page: Page) -> None:
        kind = {"fetched": "fetched", "disallowed": "disallowed", "redirect": "redirects",
                "error": "errors", "skipped": "skipped", "gone": "gone"}[page.outcome]  # fmt: skip
        setattr(self, kind, getattr(self, kind) + 1)
        self.bytes += page.bytes
        if page.visit is not None and page.visit > 1 and page.changed is not None:
            self.revisits += 1
            self.changed += page.changed


def digest_fields(body: bytes) -> dict[str, Any]:
    """A page's ``sha256`` and ``bytes``, as ``Page`` takes them."""
    return {"sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}
