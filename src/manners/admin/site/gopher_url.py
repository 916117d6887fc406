"""The page a Gopher server sends for a ``URL:`` selector, checked against the draft.

The contemporary Gopher draft ("Linking to Web Addresses"): a server asked for
``URL:http://...`` SHALL answer with an HTML page that redirects there within 10 seconds,
with no image, frame or script and no reference to anything but the destination.  The
audit asks for :data:`URL_SELECTOR` (a benign destination) and hands the reply here; the
rest of a Gopher server's checks are :mod:`manners.admin.site.gopher`'s.
"""

from __future__ import annotations

import html
import re

from ...gopher_reply import gopher_error
from .report import DRAFT, Finding, Reply, Rule, repr_text

URL_SELECTOR = "URL:http://example.com/"  # a benign destination: some servers echo it unescaped
DESTINATION = URL_SELECTOR[4:]
_URL_PAGE = (
    "This document may be any desired by the server authors, but MUST adhere to the following requirements."
)

URL_NO_REDIRECT = Rule(
    "gopher-url-no-redirect",
    "error",
    f"{DRAFT}, Linking to Web Addresses",
    "When a Gopher server receives a request from a client beginning with the string `URL:`,"
    " it SHALL write out an HTML document that redirects the browser to the appropriate place.",
)
URL_REFRESH = Rule(
    "gopher-url-refresh",
    "error",
    f"{DRAFT}, Linking to Web Addresses",
    f"{_URL_PAGE} * It SHALL provide a refresh of a duration of 10 seconds or less",
)
URL_IMG_OR_SCRIPT = Rule(
    "gopher-url-img-or-script",
    "error",
    f"{DRAFT}, Linking to Web Addresses",
    f"{_URL_PAGE} [...] * It SHALL NOT use `IMG` tags, frames [...] * It SHALL NOT use JavaScript.",
)
URL_OUTSIDE_REF = Rule(
    "gopher-url-outside-ref",
    "error",
    f"{DRAFT}, Linking to Web Addresses",
    f"{_URL_PAGE} [...] * It SHALL NOT [...] have any reference whatsoever to content outside"
    " that particular file, with the sole exception of the link to the real destination.",
)

_TAG = re.compile(r"<\s*([A-Za-z][A-Za-z0-9]*)\b([^>]*)>", re.DOTALL)
_ATTRIBUTE = re.compile(r"""([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""")
_REFERENCES = ("href", "src", "action", "background", "longdesc", "codebase", "usemap", "cite", "data")
_REFRESH = re.compile(r"\s*(\d+)\s*(?:[;,]\s*(?:url\s*=\s*)?(.*))?$", re.IGNORECASE | re.DOTALL)
_FORBIDDEN_TAGS = {"img", "frame", "iframe", "frameset", "script"}


def check_url_page(url: Reply) -> list[Finding]:
    """The page a ``URL:`` selector gets: HTML that redirects within 10 s, with no image, frame,
    script or reference to anything but the destination."""
    if url.error is not None:
        return []
    data = url.data
    text = data.decode("utf-8", "replace")
    if gopher_error(data) is not None or not text.strip() or not re.search(r"<\s*(html|meta)\b", text, re.I):
        shape = (
            "an error"
            if gopher_error(data) is not None
            else "nothing"
            if not text.strip()
            else "no HTML page"
        )
        return [
            URL_NO_REDIRECT.found(
                f"{url.asked} is answered with {shape}, not an HTML page that redirects to {DESTINATION}",
                sent=data,
                asked=url.asked,
            )
        ]
    out = []
    refreshes: list[tuple[int, str]] = []
    references: list[str] = []
    forbidden: list[str] = []
    for tag in _TAG.finditer(text):
        name = tag[1].lower()
        attributes = {a[1].lower(): a[2].strip("\"'") for a in _ATTRIBUTE.finditer(tag[2])}
        if name in _FORBIDDEN_TAGS:
            forbidden.append(f"<{name}>")
        forbidden += [f"{a}=" for a in attributes if a.startswith("on")]
        forbidden += [
            f"{a}=javascript:" for a, v in attributes.items() if v.strip().lower().startswith("javascript:")
        ]
        references += [v for a, v in attributes.items() if a in _REFERENCES]
        if name == "link":
            references.append(attributes.get("href", "<link>"))
        if name == "meta" and attributes.get("http-equiv", "").lower() == "refresh":
            m = _REFRESH.match(html.unescape(attributes.get("content", "")))
            if m is not None:
                refreshes.append((int(m[1]), (m[2] or "").strip().strip("\"'")))
    references += [r for _, r in refreshes if r]
    references += re.findall(r"url\(\s*['\"]?([^'\")]*)", text, re.I) + re.findall(
        r"@import\s+['\"]?([^'\";\s]*)", text, re.I
    )
    if not any(seconds <= 10 for seconds, _ in refreshes):
        said = (
            f"a refresh of {refreshes[0][0]} s" if refreshes else 'no refresh (<meta http-equiv="refresh">)'
        )
        out.append(
            URL_REFRESH.found(
                f"the redirect page has {said}, not one of 10 seconds or less", sent=data, asked=url.asked
            )
        )
    if forbidden or re.search(r"javascript:", text, re.I):
        what = ", ".join(dict.fromkeys(forbidden)) or "javascript:"
        out.append(URL_IMG_OR_SCRIPT.found(f"the redirect page uses {what}", sent=data, asked=url.asked))
    outside = [r for r in dict.fromkeys(references) if not _same_place(r, DESTINATION)]
    if outside:
        out.append(
            URL_OUTSIDE_REF.found(
                f"the redirect page refers to {', '.join(repr_text(r) for r in outside[:3])}"
                f"{' and more' if len(outside) > 3 else ''}, not only to its destination {DESTINATION}",
                sent=data,
                asked=url.asked,
            )
        )
    return out


def _same_place(reference: str, destination: str) -> bool:
    """The same URL once HTML escapes are undone and a lone '/' path is dropped (pygopherd
    writes ``http://example.com`` for ``http://example.com/``)."""

    def norm(url: str) -> str:
        url = html.unescape(url).strip()
        return url[:-1] if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*/", url) else url

    return norm(reference) == norm(destination)
