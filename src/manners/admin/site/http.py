"""How a Web server speaks to robots: pure checks over the answers to ``/robots.txt`` (RFC 9309),
and the sample's links (a home page's, a sitemap's).

The audit asks for ``/robots.txt`` as a robot does (``Accept-Encoding: gzip``, redirects
followed by hand, at most five, across authorities too) and hands every answer here.  What a
status *means* is RFC 9309 §2.3.1's, as the fetcher reads it (``manners.fetch.outcome``).
"""

from __future__ import annotations

import gzip
import html
import io
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from ...fetch.outcome import MAX_REDIRECTS, http_redirect
from .gemini import charset_findings
from .report import (
    ACCESS_WORDS,
    REDIRECT_WORDS,
    RFC9309,
    UNAVAILABLE_WORDS,
    UNREACHABLE_WORDS,
    Finding,
    Rule,
    plural,
    repr_text,
)

ROBOTS_LIMIT = 512_000  # RFC 9309 §2.5: "The parsing limit MUST be at least 500 kibibytes"
ROBOTS_ABSENT = Rule("http-robots-absent", "info", f"{RFC9309} §2.3.1.3", UNAVAILABLE_WORDS)
# an answer that keeps every robot off the whole server is a warning at least (report.KEPT_OFF)
ROBOTS_UNREACHABLE = Rule("http-robots-unreachable", "warning", f"{RFC9309} §2.3.1.4", UNREACHABLE_WORDS)
ROBOTS_REDIRECT = Rule("http-robots-redirect", "info", f"{RFC9309} §2.3.1.2", REDIRECT_WORDS)
ROBOTS_REDIRECTS_TOO_MANY = Rule(
    "http-robots-redirects-too-many", "warning", f"{RFC9309} §2.3.1.2", REDIRECT_WORDS
)
ROBOTS_TYPE = Rule("http-robots-type", "error", f"{RFC9309} §2.3", ACCESS_WORDS)
ROBOTS_HTML = Rule(
    "http-robots-html",
    "info",
    f"{RFC9309} §2.3.1.5",
    "Crawlers MUST try to parse each line of the robots.txt file. Crawlers MUST use the parseable rules.",
)
ROBOTS_CHARSET = Rule("http-robots-charset", "error", f"{RFC9309} §2.3", ACCESS_WORDS)
ROBOTS_TOO_LARGE = Rule(
    "http-robots-too-large",
    "info",
    f"{RFC9309} §2.5",
    "Crawlers SHOULD impose a parsing limit to protect their systems; see [security]. The parsing limit MUST"
    " be at least 500 kibibytes [KiB].",
)

RULES = (
    ROBOTS_ABSENT,
    ROBOTS_UNREACHABLE,
    ROBOTS_REDIRECT,
    ROBOTS_REDIRECTS_TOO_MANY,
    ROBOTS_TYPE,
    ROBOTS_HTML,
    ROBOTS_CHARSET,
    ROBOTS_TOO_LARGE,
)


@dataclass(frozen=True)
class Hop:
    """One request for robots.txt and its answer (a redirect's target is the next hop's URL)."""

    url: str
    status: int | None  # None when no answer came
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""  # decoded (gzip undone), at most the audit's cap
    truncated: bool = False  # the body went on past the cap
    error: str | None = None  # "name: why" when no answer came


def _authority(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{(parts.netloc or '').lower()}"


def check(hops: list[Hop]) -> list[Finding]:
    """The findings one chain of answers for /robots.txt gives, first request first."""
    first, final = hops[0], hops[-1]
    out: list[Finding] = []
    moved = [
        h for h in hops if h.status is not None and http_redirect(h.status, h.headers, h.url) is not None
    ]
    if moved:
        targets = [http_redirect(h.status or 0, h.headers, h.url) or "" for h in moved]
        across = any(_authority(t) != _authority(first.url) for t in targets)
        out.append(
            ROBOTS_REDIRECT.found(
                f"/robots.txt is redirected {plural(len(moved), 'time')}"
                f"{', across authorities (which RFC 9309 allows)' if across else ''}: "
                + " -> ".join([first.url, *targets]),
                sent=f"{moved[0].status} Location: {targets[0]}",
                asked=moved[0].url,
            )
        )
    if len(moved) > MAX_REDIRECTS:
        out.append(
            ROBOTS_REDIRECTS_TOO_MANY.found(
                f"more than {MAX_REDIRECTS} redirects in a row for /robots.txt: robots may stop there and"
                " take the"
                " file as unavailable (allowing everything)",
                asked=final.url,
            )
        )
        return out
    if final.error is not None:  # said once: the error's words are robots.txt's meaning, shown above it
        out.append(
            ROBOTS_UNREACHABLE.found(
                f"robots.txt got no answer ({final.error.partition(':')[0]}): robots must take everything"
                " on the server as disallowed until it can be read",
                asked=final.url,
            )
        )
        return out
    status = final.status
    assert status is not None
    if 200 <= status < 300:
        return out + _file(final)
    if status == 429 or status >= 500:
        out.append(
            ROBOTS_UNREACHABLE.found(
                f"/robots.txt is answered HTTP {status}: robots must take everything as disallowed meanwhile",
                sent=f"HTTP {status}",
                asked=final.url,
            )
        )
    else:
        location = final.headers.get("location")
        if 300 <= status < 400 and location:
            why = f"with a Location robots cannot follow ({repr_text(location)})"
        else:
            why = "with no redirect to follow" if 300 <= status < 400 else "(unavailable)"
        out.append(
            ROBOTS_ABSENT.found(
                f"/robots.txt is answered HTTP {status} {why}: robots may fetch everything",
                sent=f"HTTP {status}",
                asked=final.url,
            )
        )
    return out


def _file(final: Hop) -> list[Finding]:
    out = []
    content_type = final.headers.get("content-type")
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != "text/plain":
        if content_type is None:
            said = "/robots.txt is served with no Content-Type, not text/plain"
        elif media in ("text/html", "application/xhtml+xml"):
            said = f"/robots.txt is served as an HTML page ({media}), not text/plain"
        else:
            said = f"/robots.txt is served as {media or repr_text(content_type)}, not text/plain"
        out.append(
            ROBOTS_TYPE.found(
                said, sent=f"Content-Type: {content_type}" if content_type else None, asked=final.url
            )
        )
    if looks_like_html(final.body):
        out.append(
            ROBOTS_HTML.found(
                "/robots.txt holds an HTML page (a soft 404?): robots find no rules in it and fetch"
                " everything",
                sent=final.body,
                asked=final.url,
            )
        )
    out += charset_findings(ROBOTS_CHARSET, content_type or "", final.body, final.truncated, final.url)
    if len(final.body) > ROBOTS_LIMIT:
        out.append(
            ROBOTS_TOO_LARGE.found(
                f"/robots.txt is larger than {ROBOTS_LIMIT:,} bytes (500 KiB): robots may read only that"
                " much",
                asked=final.url,
            )
        )
    return out


_HTML_START = re.compile(rb"\s*(<!doctype\s+html|<html)", re.IGNORECASE)
_HTML_PARTS = re.compile(rb"<(head|body)[\s>]", re.IGNORECASE)


def looks_like_html(body: bytes) -> bool:
    """An HTML page: it starts with a doctype or <html>, or holds <head> or <body>, in its first KiB."""
    head = body[:1024].removeprefix(b"\xef\xbb\xbf")
    return _HTML_START.match(head) is not None or _HTML_PARTS.search(head) is not None


# -- the sample's links --------------------------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "base" and values.get("href") and self.base is None:
            self.base = values["href"]
        elif tag in ("a", "area") and values.get("href"):
            self.found.append(values["href"] or "")


def page_links(body: bytes, url: str) -> list[str]:
    """The links of an HTML page to URLs of its own server, once each, fragments off."""
    parser = _Links()
    try:
        parser.feed(body.decode("utf-8", "replace"))
        parser.close()
    except (AssertionError, ValueError):  # html.parser gives up on some broken pages: keep what it found
        pass
    base = urljoin(url, parser.base) if parser.base else url
    return own([urljoin(base, href.strip()) for href in parser.found], url)


_LOC = re.compile(rb"<(?:\w+:)?loc>\s*(.*?)\s*</(?:\w+:)?loc>", re.DOTALL | re.IGNORECASE)
SITEMAP_MAX = 5 << 20  # bytes of a sitemap read, decompressed


def sitemap_text(body: bytes) -> bytes:
    """A sitemap as XML: gzip undone (at most SITEMAP_MAX bytes of it), or nothing if it cannot be."""
    if body[:2] != b"\x1f\x8b":
        return body
    try:
        return gzip.GzipFile(fileobj=io.BytesIO(body)).read(SITEMAP_MAX)
    except (OSError, EOFError, zlib.error):
        return b""


def sitemap_locations(xml: bytes) -> list[str]:
    """The ``<loc>`` URLs of a sitemap or sitemap index, in order."""
    return [html.unescape(m.decode("utf-8", "replace")) for m in _LOC.findall(xml)]


def is_sitemap_index(xml: bytes) -> bool:
    """A sitemap index (its locations are sitemaps), not a sitemap (its locations are pages)."""
    return b"<sitemapindex" in xml[:4096].lower()


def own(urls: list[str], site: str) -> list[str]:
    """Those of ``urls`` on ``site``'s scheme and authority, fragments off, once each, in order."""
    mine = _authority(site)
    seen: dict[str, None] = {}
    for url in urls:
        url = url.split("#", 1)[0]
        if url and _authority(url) == mine:
            seen.setdefault(url)
    return list(seen)
