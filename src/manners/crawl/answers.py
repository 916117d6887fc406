"""What a Gemini or Gopher answer comes to for the crawl: the page recorded and the next step (pure).

``meaning`` says what a status means (store, follow, retry, slow down); this module reads a whole
response with it: the ``Page`` to record, whether the response goes to the WARC first, and what
the crawl does next (read the page's links, follow a redirect, ask again later).  No I/O, no
clock, no crawl state: the worker does what an ``Answer`` says (``worker.Worker._answered``), and
the rules can be read apart from the waiting, the leases and the files.  The URL facts an answer
is read by (a Gopher URL's item type, caps.txt) are here too.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Any, Literal

from ..fetch.certificate import Certificate, read_certificate
from ..robot import RobotDecision
from . import gophermap, links, meaning, urls
from .client import Response
from .frontier import Lease
from .page import Outcome, Page, digest_fields

SCHEMES = ("gemini", "gopher")
MAX_REDIRECTS = 5  # a chain of redirects longer than this is an error
MAX_ATTEMPTS = 3  # temporary failures (40-44) are retried this many times
RETRY_BASE = 2.0  # seconds before the first retry of a temporary failure; doubles each time

Step = Literal["settle", "gemtext", "menu", "redirect", "retry", "slow-down"]


@dataclass(frozen=True)
class Answer:
    """One answer, read: ``page`` and what to do with it (``step``).

    - ``settle``: the page is settled as it is;
    - ``gemtext``, ``menu``: its links are read first (``text``; a menu from ``page.body``);
    - ``redirect``: ``page.target`` is followed, if wanted (``skipped``: it can never be requested);
    - ``retry``, ``slow-down``: asked again ``wait`` seconds later (a 44 with no number: None), or,
      ``final``, the attempts spent, ``page`` (an error) is settled."""

    page: Page
    step: Step
    archive: bool = True  # the response goes to the WARC before anything else (not: no answer came)
    requested: bool = True  # a page was asked for (--max-pages)
    text: str | None = None
    wait: float | None = None
    final: bool = False
    skipped: links.Skipped | None = None
    gone: bool = False  # the answer says the URL has gone (a Gopher error): see ``visits``
    caps: str | None = None  # a Gopher server's caps.txt, as the frontier keeps it
    certificate: Certificate | None = None  # the Gemini server's, for the WARC


def gemini(r: Response, lease: Lease, auth: str, decision: RobotDecision, now: float) -> Answer:
    """A Gemini answer to the request for ``lease.url`` at ``auth``, come at ``now``."""
    url, depth = lease.url, lease.depth
    cert = read_certificate(r.certificate) if r.certificate else None
    record = cert.record(host_port(auth)[0], now, r.tofu or "new") if cert is not None else None
    base: dict[str, Any] = {"decision": decision, "status": r.status, "peer": r.peer,
                            "certificate_changed": r.fingerprint_changed,
                            "certificate": record}  # fmt: skip
    if r.error is not None or r.status is None:
        page = Page(url, "error", depth, now, reason=r.error, **base)
        return Answer(page, "settle", archive=False, requested=bool(r.request), certificate=cert)
    action = meaning.gemini_action(r.status, r.meta, url)
    if action.kind == "store":
        mime = action.mime or "text/gemini"
        page = Page(url, "fetched", depth, now, mime=mime, body=r.body, truncated=r.truncated,
                    **digest_fields(r.body), **base)  # fmt: skip
        if meaning.media_type(mime) != "text/gemini":
            return Answer(page, "settle", certificate=cert)
        text = r.body.decode(codec(meaning.charset(mime)), "replace")
        return Answer(page, "gemtext", text=text, certificate=cert)
    if action.kind == "redirect":
        target = action.target
        if target is None or target.split(":", 1)[0] not in SCHEMES:
            reason = f"{r.status} {r.meta}: a redirect to nowhere the crawler can follow"
            return Answer(Page(url, "error", depth, now, reason=reason, **base), "settle", certificate=cert)
        if lease.redirects >= MAX_REDIRECTS:
            reason = f"more than {MAX_REDIRECTS} redirects in a row"
            page = Page(url, "error", depth, now, target=target, reason=reason, **base)
            return Answer(page, "settle", certificate=cert)
        page = Page(url, "redirect", depth, now, target=target, links=(target,),
                    permanent=action.permanent, **base)  # fmt: skip
        problem = links.request_problem(target)
        skipped = links.Skipped(target[:200], problem) if problem is not None else None
        return Answer(page, "redirect", skipped=skipped, certificate=cert)
    if action.kind in ("slow-down", "retry"):
        reason = f"{r.status} {r.meta}".strip() + f" (still, after {MAX_ATTEMPTS} attempts)"
        page = Page(url, "error", depth, now, reason=reason, **base)
        wait = action.wait if action.kind == "slow-down" else RETRY_BASE * 2**lease.attempts
        final = lease.attempts + 1 >= MAX_ATTEMPTS
        return Answer(page, action.kind, wait=wait, final=final, certificate=cert)
    kind: Outcome = "skipped" if action.kind in ("input", "certificate") else "error"
    return Answer(Page(url, kind, depth, now, reason=action.reason, **base), "settle", certificate=cert)


def gopher(r: Response, lease: Lease, decision: RobotDecision, now: float) -> Answer:
    """A Gopher reply to the request for ``lease.url``, come at ``now``."""
    url, depth = lease.url, lease.depth
    kind = item_type(url) or "1"
    base: dict[str, Any] = {"decision": decision, "item_type": kind, "peer": r.peer}
    if r.error is not None:
        page = Page(url, "error", depth, now, reason=r.error, **base)
        return Answer(page, "settle", archive=False, requested=bool(r.request))
    caps = is_caps(url)
    binary = kind in gophermap.BINARY_TYPES
    error = None if binary else gophermap.error_reply(r.body)
    if error is not None or (not r.body and not binary):
        reason = error or "the server sent nothing"
        if caps:  # caps.txt is optional: its absence is no error of the crawl's
            page = Page(url, "skipped", depth, now, reason=f"no caps.txt: {reason}", **base)
            return Answer(page, "settle", requested=False, gone=True)
        return Answer(Page(url, "error", depth, now, reason=reason, **base), "settle", gone=True)
    if kind == "1":
        page = Page(url, "fetched", depth, now, body=r.body, truncated=r.truncated, **digest_fields(r.body),
                    **base)  # fmt: skip
        return Answer(page, "menu")
    body = r.body if binary else gophermap.text_body(r.body)
    kept = body[:65536].decode("utf-8", "replace") if caps else None
    page = Page(url, "fetched", depth, now, body=body, truncated=r.truncated, **digest_fields(r.body), **base)
    return Answer(page, "settle", requested=not caps, caps=kept)


def unreadable(page: Page, error: str) -> Page:
    """A Gopher menu whose links could not be read (``links.Found.error``): settled as an error."""
    return Page(page.url, "error", page.depth, page.fetched_at, reason=error, decision=page.decision,
                item_type=page.item_type, peer=page.peer)  # fmt: skip


def item_type(url: str) -> str | None:
    """A Gopher URL's item type (None: not Gopher, or no usable Gopher URL)."""
    if not url.startswith("gopher:"):
        return None
    try:
        return urls.gopher_ref(url).item_type
    except ValueError:
        return None


def scheme_of(target: str) -> str | None:
    """A link's scheme as written (None: a relative reference, or no URL at all)."""
    try:
        return urls.scheme(target)
    except ValueError:
        return None


def is_caps(url: str) -> bool:
    """Whether ``url`` is a Gopher server's caps.txt."""
    if url[:7].lower() != "gopher:":  # asked of every page: most are not Gopher's at all
        return False
    try:
        ref = urls.gopher_ref(url)
    except ValueError:
        return False
    return ref.selector == "caps.txt" and ref.search is None


def host_port(auth: str) -> tuple[str, int]:
    """``gemini://host:1965`` -> ``("host", 1965)`` (an IPv6 host without its brackets)."""
    hostport = auth.split("://", 1)[1]
    host, _, port = hostport.rpartition(":")
    return host.strip("[]"), int(port)


def codec(charset: str) -> str:
    """A charset a server named, if Python knows it; else UTF-8 (Gemini's default)."""
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return "utf-8"
