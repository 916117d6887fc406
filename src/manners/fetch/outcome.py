"""What a robots.txt fetch means: pure functions from what a server said to a result.

No sockets here (the transports beside this module do the I/O), so every row of
the outcome tables in docs/fetching.md is a plain function call away from a test.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urljoin, urlsplit

from ..profiles import Profile
from ..robots import RobotsTxt, parse, verdict
from ..terminal import safe

Outcome = Literal["ok", "unavailable", "unreachable", "retry"]

MAX_REDIRECTS = 5
GEMINI_HEADER_MAX = 1024  # bytes of meta the Gemini spec allows


@dataclass(frozen=True)
class FetchResult:
    """A robots.txt fetch, read as the protocol's rules say."""

    url: str  # the robots.txt address first asked for; its rules apply to that authority
    outcome: Outcome
    robots: RobotsTxt  # the file; allow-all when unavailable; disallow-all when unreachable or retry
    status: int | str  # HTTP code, Gemini status, "gopher-ok"/"gopher-error", or a network error name
    meaning: str  # the outcome in words, for people
    source: str  # the address finally read (after redirects)
    fetched_at: float  # seconds since the epoch
    retry_after: float | None = None  # seconds the server asked us to wait
    max_age: float | None = None  # seconds the server says the file stays fresh (HTTP caching headers)
    body: bytes = b""  # what was read, at most max_bytes of it
    truncated: bool = False  # the body went on past max_bytes
    redirects: tuple[str, ...] = ()  # each address a redirect led to, in order
    fingerprint: str | None = None  # SHA-256 of the Gemini server's certificate
    fingerprint_changed: bool = False  # it differs from the one recorded for host:port
    extra: dict[str, str] = field(default_factory=dict)  # protocol details (media type, selector)


def ok(url: str, source: str, body: bytes, status: int | str, max_bytes: int, **kw: object) -> FetchResult:
    """A file was read; ``body`` may hold one byte more than ``max_bytes`` to show it went on."""
    truncated = len(body) > max_bytes
    meaning = "robots.txt was read" + (
        f", but only its first {max_bytes} bytes are used" if truncated else ""
    )
    kept = body[:max_bytes]
    robots = read_body(kept, truncated)
    return _result(url, "ok", robots, status, meaning, source, body=kept, truncated=truncated, **kw)


def read_body(body: bytes, truncated: bool, profile: str | Profile | None = None) -> RobotsTxt:
    """The file a fetch read: ``body`` as kept (at most ``max_bytes``) and whether the file went on.

    Every fetched body is parsed here, fresh from the server or from a cache, so the
    cut is made once and the same way: the partial last line is dropped (half an
    ``Allow`` would allow too much) and the ``truncated`` diagnostic is kept.  The
    read stopped at the cap, so the cut is where the read stopped, byte order mark
    included (``parse`` counts its own cap after the mark).
    """
    if not truncated:
        return parse(body, profile, max_bytes=None)
    bom = 3 if body[:3] == b"\xef\xbb\xbf" else 2 if body[:2] == b"\xef\xbb" else int(body[:1] == b"\xef")
    if len(body) <= bom:
        return parse(body, profile, max_bytes=None)
    return parse(body + b"\n", profile, max_bytes=len(body) - bom)  # one byte past the cap: cut there


def unavailable(
    url: str, status: int | str, why: str, source: str | None = None, **kw: object
) -> FetchResult:
    meaning = f"{why}: robots.txt is unavailable, so everything is allowed"
    return _result(url, "unavailable", verdict(True, meaning), status, meaning, source or url, **kw)


def unreachable(
    url: str, status: int | str, why: str, source: str | None = None, **kw: object
) -> FetchResult:
    meaning = f"{why}: robots.txt is unreachable, so everything is disallowed"
    return _result(url, "unreachable", verdict(False, meaning), status, meaning, source or url, **kw)


def retry(
    url: str, status: int | str, why: str, after: float | None, source: str | None = None, **kw: object
) -> FetchResult:
    wait = f" for {after:g} s" if after is not None else ""
    meaning = f"{why}: the server asked us to wait{wait}; until then everything is disallowed"
    return _result(
        url, "retry", verdict(False, meaning), status, meaning, source or url, retry_after=after, **kw
    )


def _result(
    url: str, outcome: Outcome, robots: RobotsTxt, status: int | str, meaning: str, source: str, **kw: object
) -> FetchResult:
    return FetchResult(url, outcome, robots, status, meaning, source, time.time(), **kw)  # type: ignore[arg-type]


# -- HTTP (RFC 9309 §2.3.1) ----------------------------------------------------------


def http_redirect(status: int, headers: Mapping[str, str], current: str) -> str | None:
    """Where a 3xx answer sends us, or None when it is no redirect we can follow (no
    ``Location``, another scheme, or one holding a control character or a space: no URL)."""
    location = headers.get("location")
    if not 300 <= status < 400 or not location:
        return None
    if _NOT_IN_URL.search(location.strip()):
        return None
    target = urljoin(current, location.strip())
    return target if urlsplit(target).scheme in ("http", "https") else None


def http_result(
    url: str,
    source: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    max_bytes: int,
    redirects: tuple[str, ...] = (),
    now: float | None = None,
) -> FetchResult:
    """RFC 9309 §2.3.1 for a final answer (redirects already followed)."""
    now = time.time() if now is None else now
    kw: dict[str, object] = {"redirects": redirects}
    if 200 <= status < 300:
        return ok(url, source, body, status, max_bytes, max_age=cache_lifetime(headers, now), **kw)
    after = retry_after(headers.get("retry-after"), now)
    if status == 429 or (status == 503 and after is not None):
        if after is not None:
            return retry(url, status, f"HTTP {status}", after, source, **kw)
        return unreachable(url, status, "HTTP 429 Too Many Requests", source, **kw)
    if 300 <= status < 400:
        return unavailable(url, status, f"HTTP {status} with no redirect to follow", source, **kw)
    if 400 <= status < 500:
        return unavailable(url, status, f"HTTP {status}", source, max_age=cache_lifetime(headers, now), **kw)
    return unreachable(url, status, f"HTTP {status}", source, **kw)


def too_many_redirects(url: str, status: int | str, redirects: tuple[str, ...]) -> FetchResult:
    why = f"more than {MAX_REDIRECTS} redirects"
    return unavailable(url, status, why, redirects[-1] if redirects else url, redirects=redirects)


_NOT_IN_URL = re.compile(r"[\x00-\x20\x7f-\x9f]")  # RFC 3986: no control character, no space in a URL
_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-)?max-age\s*=\s*\"?(\d+)", re.IGNORECASE)


def cache_lifetime(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds the server says the answer stays fresh: Cache-Control, else Expires."""
    control = headers.get("cache-control", "")
    if re.search(r"no-store|no-cache", control, re.IGNORECASE):
        return 0.0
    m = _MAX_AGE.search(control)
    if m:
        return float(m[1])
    expires = headers.get("expires")
    if expires is not None:
        when = _http_date(expires)
        if when is None:
            return 0.0  # RFC 9111 §5.3: an invalid Expires means already expired
        date = _http_date(headers.get("date", "")) or now
        return max(0.0, when - date)
    return None


def retry_after(value: str | None, now: float) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    when = _http_date(value)
    return max(0.0, when - now) if when is not None else None


def _http_date(value: str) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# -- Gemini ----------------------------------------------------------------------------

_GEMINI_HEADER = re.compile(rb"([0-9]{2})(?:[ \t]([^\r\n]*))?\r?\n", re.DOTALL)


def gemini_header(data: bytes) -> tuple[int, str, int] | None:
    """(status, meta, where the body starts) from the bytes read so far.

    None while no complete header has arrived; raises ValueError for one that is
    malformed or longer than the spec allows.
    """
    end = data.find(b"\n")
    if end < 0:
        if len(data) > GEMINI_HEADER_MAX + 4:
            raise ValueError("no end of header within 1024 bytes")
        return None
    m = _GEMINI_HEADER.fullmatch(data[: end + 1])
    if m is None:
        shown = safe(bytes(data[: min(end, 40)]).removesuffix(b"\r").decode("utf-8", "surrogateescape"))
        raise ValueError(f"malformed header '{shown}'")
    meta = (m[2] or b"").strip()
    if len(meta) > GEMINI_HEADER_MAX:
        raise ValueError("header meta longer than 1024 bytes")
    try:
        return int(m[1]), meta.decode("utf-8"), end + 1
    except UnicodeDecodeError:
        raise ValueError("header meta is not UTF-8") from None


def gemini_redirect(status: int, meta: str, current: str) -> str | None:
    """Where a 3x answer sends us: a gemini:// URL, or None."""
    if status // 10 != 3 or not meta:
        return None
    if "://" in meta:
        target = meta
    else:  # urljoin knows no gemini scheme: join as https and put it back
        target = "gemini" + urljoin("https" + current[len("gemini") :], meta)[len("https") :]
    return target if target[:9].lower() == "gemini://" else None


def gemini_result(
    url: str,
    source: str,
    status: int,
    meta: str,
    body: bytes,
    *,
    max_bytes: int,
    redirects: tuple[str, ...] = (),
    **kw: object,
) -> FetchResult:
    """The Gemini table: see docs/fetching.md."""
    kw["redirects"] = redirects
    head = f"Gemini {status} {meta}".rstrip()
    if status == 20:
        media = meta.split(";", 1)[0].strip().lower() or "text/gemini"
        if media.startswith("text/"):
            return ok(url, source, body, status, max_bytes, extra={"media_type": media}, **kw)
        return unavailable(url, status, f"{head}: not a text file", source, **kw)
    family = status // 10
    if family == 2:
        return unavailable(url, status, head, source, **kw)
    if status == 44:
        after = float(meta) if meta.isdigit() else None
        return retry(url, status, head, after, source, **kw)
    if family == 4:
        return unreachable(url, status, head, source, **kw)
    if family == 3:
        return unavailable(url, status, f"{head}: a redirect that cannot be followed", source, **kw)
    return unavailable(url, status, head, source, **kw)  # 1x input, 5x permanent failure, 6x certificates


# -- Gopher ----------------------------------------------------------------------------

GOPHER_SELECTORS = ("robots.txt", "/robots.txt", "0/robots.txt")
