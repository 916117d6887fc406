"""The outcome tables, row by row, with no network: the sans-IO half of fetching."""

from __future__ import annotations

import pytest

import manners
from data_paths import CAPTURES
from manners.fetch.outcome import (
    cache_lifetime,
    gemini_header,
    gemini_redirect,
    gemini_result,
    http_redirect,
    http_result,
    retry_after,
)
from manners.gopher_reply import gopher_text

pytestmark = pytest.mark.quick

URL = "https://example.com/robots.txt"
BODY = b"User-agent: *\nDisallow: /private\n"


def http(status: int, headers: dict[str, str] | None = None, body: bytes = BODY) -> manners.FetchResult:
    return http_result(URL, URL, status, headers or {}, body, max_bytes=512_000, now=1_000_000.0)


def blocks(result: manners.FetchResult) -> bool:
    return not result.robots.allowed("https://example.com/private")


def allows_all(result: manners.FetchResult) -> bool:
    return result.robots.allowed("https://example.com/private") and result.robots.allowed("/")


def denies_all(result: manners.FetchResult) -> bool:
    return not result.robots.allowed("https://example.com/anything") and not result.robots.allowed("/")


@pytest.mark.parametrize("status", [200, 203, 206, 299])
def test_http_2xx_parses(status: int) -> None:
    r = http(status)
    assert (r.outcome, r.status) == ("ok", status)
    assert blocks(r) and r.robots.allowed("https://example.com/public")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451, 499])
def test_http_4xx_is_unavailable(status: int) -> None:
    r = http(status)
    assert r.outcome == "unavailable" and allows_all(r)
    assert "unavailable" in r.robots.decide("/x").reason


@pytest.mark.parametrize("status", [500, 502, 503, 504, 599])
def test_http_5xx_is_unreachable(status: int) -> None:
    r = http(status)
    assert r.outcome == "unreachable" and denies_all(r)
    d = r.robots.decide("/x")
    assert not d.allowed and d.line is None and f"HTTP {status}" in d.reason


def test_http_429_is_unreachable_and_retry_when_told_when() -> None:
    assert http(429).outcome == "unreachable" and denies_all(http(429))
    r = http(429, {"retry-after": "120"})
    assert (r.outcome, r.retry_after) == ("retry", 120.0) and denies_all(r)
    r = http(503, {"retry-after": "Mon, 12 Jan 1970 13:46:50 GMT"})  # 10 s after `now`
    assert (r.outcome, r.retry_after) == ("retry", 10.0)


def test_http_3xx_without_location_is_unavailable() -> None:
    assert http(301).outcome == "unavailable"
    assert http_redirect(301, {"location": "/elsewhere"}, URL) == "https://example.com/elsewhere"
    assert (
        http_redirect(302, {"location": "https://other.example/r.txt"}, URL) == "https://other.example/r.txt"
    )
    assert http_redirect(301, {"location": "ftp://example.com/robots.txt"}, URL) is None
    assert http_redirect(200, {"location": "/x"}, URL) is None


def test_http_cache_lifetime() -> None:
    now = 1_000_000.0
    assert cache_lifetime({"cache-control": "public, max-age=3600"}, now) == 3600
    assert cache_lifetime({"cache-control": "no-store"}, now) == 0
    assert cache_lifetime({"expires": "Tue, 13 Jan 1970 13:46:40 GMT"}, now) == 86400
    assert cache_lifetime({"expires": "garbage"}, now) == 0
    assert cache_lifetime({}, now) is None
    assert http(200, {"cache-control": "max-age=60"}).max_age == 60
    assert retry_after("soon", now) is None and retry_after(None, now) is None


def test_http_body_over_the_cap_is_cut_and_said() -> None:
    body = BODY + b"Disallow: /" + b"a" * 1000 + b"\n"
    r = http_result(URL, URL, 200, {}, body, max_bytes=40, now=0)
    assert r.outcome == "ok" and r.truncated and len(r.body) == 40
    assert "first 40 bytes" in r.meaning
    assert any(d.code == "truncated" for d in r.robots.diagnostics)
    assert blocks(r)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"20 text/plain\r\nbody", (20, "text/plain", 15)),
        (b"20 text/gemini; charset=utf-8\r\n", (20, "text/gemini; charset=utf-8", 31)),
        (b"51 Not Found\r\n", (51, "Not Found", 14)),
        (b"44 30\r\n", (44, "30", 7)),
        (b"20\r\n", (20, "", 4)),
        (b"20 text/pl", None),  # not all there yet
    ],
)
def test_gemini_header(data: bytes, expected: tuple[int, str, int] | None) -> None:
    assert gemini_header(data) == expected


@pytest.mark.parametrize(
    "data", [b"hello world\r\n", b"2 text/plain\r\n", b"200 OK\r\n", b"HTTP/1.1 200 OK\r\n", b"x" * 1100]
)
def test_gemini_malformed_header(data: bytes) -> None:
    with pytest.raises(ValueError):
        gemini_header(data)


def gem(status: int, meta: str, body: bytes = BODY) -> manners.FetchResult:
    url = "gemini://example.org/robots.txt"
    return gemini_result(url, url, status, meta, body, max_bytes=512_000)


@pytest.mark.parametrize("meta", ["text/plain", "text/gemini", "text/plain; charset=utf-8", "TEXT/Plain", ""])
def test_gemini_20_text_parses(meta: str) -> None:
    r = gem(20, meta)
    assert r.outcome == "ok" and not r.robots.allowed("gemini://example.org/private")


@pytest.mark.parametrize(("status", "meta"), [(20, "image/png"), (20, "application/octet-stream"), (21, "x")])
def test_gemini_other_2x_is_unavailable(status: int, meta: str) -> None:
    r = gem(status, meta)
    assert r.outcome == "unavailable" and r.robots.allowed("gemini://example.org/private")


@pytest.mark.parametrize("status", [40, 41, 42, 43])
def test_gemini_40_to_43_is_unreachable(status: int) -> None:
    r = gem(status, "temporary")
    assert r.outcome == "unreachable" and not r.robots.allowed("gemini://example.org/")


def test_gemini_44_slow_down_is_retry() -> None:
    r = gem(44, "30")
    assert (r.outcome, r.retry_after, r.status) == ("retry", 30.0, 44)
    assert not r.robots.allowed("gemini://example.org/")


@pytest.mark.parametrize("status", [10, 11, 50, 51, 52, 53, 59, 60, 61, 62])
def test_gemini_1x_5x_6x_are_unavailable(status: int) -> None:
    r = gem(status, "no")
    assert r.outcome == "unavailable" and r.robots.allowed("gemini://example.org/private")


def test_gemini_redirects() -> None:
    here = "gemini://example.org/robots.txt"
    assert gemini_redirect(31, "/r.txt", here) == "gemini://example.org/r.txt"
    assert gemini_redirect(30, "gemini://b.example/robots.txt", here) == "gemini://b.example/robots.txt"
    assert gemini_redirect(31, "https://example.org/robots.txt", here) is None
    assert gemini_redirect(20, "text/plain", here) is None
    assert gem(31, "").outcome == "unavailable"


@pytest.mark.parametrize(
    ("capture", "is_file"),
    [
        ("gophernicus-3.1.1_sel-robots.txt.bin", True),
        ("pygopherd-3.1.0_sel-robots.txt.bin", True),
        ("gophernicus-3.1.1_missing-file.bin", False),
        ("gophernicus-3.1.1_sel-0-robots.txt.bin", False),
        ("gophernicus-3.1.1_missing-dir-trailing-slash.bin", False),
        ("pygopherd-3.1.0_missing-file.bin", False),
        ("pygopherd-3.1.0_sel-0-robots.txt.bin", False),
        ("pygopherd-3.1.0_root-menu.bin", False),
    ],
)
def test_gopher_captures(capture: str, is_file: bool) -> None:
    text = gopher_text((CAPTURES / capture).read_bytes())
    assert (text is not None) == is_file
    if text is not None:
        robots = manners.parse(text)
        assert not robots.allowed("gopher://h/1/private") and robots.allowed("gopher://h/1/public")


def test_gopher_text_shapes() -> None:
    assert gopher_text(b"") is None
    assert gopher_text(b"\r\n\r\n") is None
    assert gopher_text(b"User-agent: *\r\nDisallow: x\r\n.\r\n") == b"User-agent: *\r\nDisallow: x\r\n"
    assert gopher_text(b"User-agent: *\nDisallow: x\n.\n") == b"User-agent: *\nDisallow: x\n"
    assert gopher_text(b"User-agent: *\nDisallow: x\n.") == b"User-agent: *\nDisallow: x\n"
    assert gopher_text(b"User-agent: *\nDisallow: x") == b"User-agent: *\nDisallow: x"
    assert gopher_text(b"Disallow: /a.\n") == b"Disallow: /a.\n"
    assert gopher_text(b"Error: no such file\r\n") is None
    assert gopher_text(b"3Not here\t\terror.host\t1\r\n") is None


def test_robots_locations() -> None:
    assert manners.robots_locations("https://Example.COM:443/a/b?c#d") == ["https://example.com/robots.txt"]
    assert manners.robots_locations("http://example.com:8080/") == ["http://example.com:8080/robots.txt"]
    assert manners.robots_locations("gemini://example.org/x") == ["gemini://example.org/robots.txt"]
    assert manners.robots_locations("gemini://[::1]:1966/") == ["gemini://[::1]:1966/robots.txt"]
    assert manners.robots_locations("gemini://bücher.example/") == [
        "gemini://xn--bcher-kva.example/robots.txt"
    ]
    assert manners.robots_locations("gopher://example.org/1/foo") == [
        "gopher://example.org/0robots.txt",
        "gopher://example.org/0/robots.txt",
        "gopher://example.org/00/robots.txt",
    ]


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "/just/a/path", "http:///nohost", "https://h:99999/", ""]
)
def test_robots_locations_refuses_what_it_cannot_fetch(url: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        manners.robots_locations(url)
