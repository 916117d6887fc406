"""fetch_robots against real servers on loopback: nginx, gophernicus, pygopherd, jetforce.

The servers are started here (tests/servers.py) and a test fails, never skips,
when one cannot start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

import manners
from servers import gophernicus, jetforce, nginx, pygopherd

ROBOTS = "User-agent: *\nDisallow: /private\n\nUser-agent: mybot\nDisallow: /mine\n"


def fetch(url: str, **kw: object) -> manners.FetchResult:
    return asyncio.run(manners.fetch_robots(url, timeout=10.0, **kw))  # type: ignore[arg-type]


# -- HTTP: nginx ---------------------------------------------------------------------


def chain(hops: int, tag: str) -> str:
    """/robots.txt redirects ``hops`` times before a file that disallows /``tag``."""
    names = ["robots.txt", *(f"r{n}" for n in range(1, hops + 1))]
    moves = " ".join(f"location = /{a} {{ return 302 /{b}; }}" for a, b in pairwise(names))
    text = f"'User-agent: *\\nDisallow: /{tag}\\n'"
    return f"{moves} location = /{names[-1]} {{ default_type text/plain; return 200 {text}; }}"


CASES = {
    "ok": "expires 1h;",
    "missing": "location = /robots.txt { return 404; }",
    "forbidden": "location = /robots.txt { return 403; }",
    "gone": "location = /robots.txt { return 410; }",
    "error": "location = /robots.txt { return 500; }",
    "unavailable": "location = /robots.txt { return 503; }",
    "busy": "location = /robots.txt { add_header Retry-After 30 always; return 429; }",
    "busy-silent": "location = /robots.txt { return 429; }",
    # across hosts: 127.0.0.1 sends us to localhost
    "moved": "location = /robots.txt { return 301 http://localhost:$server_port/real.txt; }"
    " location = /real.txt { default_type text/plain; return 200 'User-agent: *\\nDisallow: /moved\\n'; }",
    "five": chain(5, "five"),
    "six": chain(6, "six"),
    "loop": "location = /robots.txt { return 301 /robots.txt; }",
    "big": "location = /robots.txt { alias BIG; }",
    "agent": "location = /robots.txt { default_type text/plain;"
    " if ($http_user_agent ~ '^mybot \\(manners/') { return 200 'User-agent: *\\nDisallow: /seen\\n'; }"
    " return 404; }",
}  # fmt: skip


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    root = tmp_path_factory.mktemp("www")
    (root / "robots.txt").write_text(ROBOTS * 40)  # big enough for nginx to gzip it
    big = root / "big.txt"
    with big.open("w") as f:
        f.write("User-agent: *\n")
        for _ in range(20 * 1024 * 16):
            f.write("Disallow: /big" + "x" * 49 + "\n")  # 64 bytes a line, 20 MiB in all
    blocks = [body.replace("BIG", str(big)) for body in CASES.values()]
    with nginx(blocks, root) as ports:
        yield {name: f"http://127.0.0.1:{port}/page" for name, port in zip(CASES, ports, strict=True)}


def test_http_ok_gzip_and_cache_lifetime(web: dict[str, str]) -> None:
    r = fetch(web["ok"])
    assert (r.outcome, r.status, r.truncated) == ("ok", 200, False)
    assert r.body == (ROBOTS * 40).encode()
    assert r.max_age == 3600 and r.source.endswith("/robots.txt") and r.redirects == ()
    assert not r.robots.allowed(web["ok"].replace("/page", "/private/x"))
    assert not r.robots.allowed("http://127.0.0.1/mine", agent="mybot")
    d = r.robots.decide("http://127.0.0.1/private", agent="otherbot")
    assert (d.allowed, d.line, d.rule) == (False, 2, "Disallow: /private")


@pytest.mark.parametrize(("case", "status"), [("missing", 404), ("forbidden", 403), ("gone", 410)])
def test_http_4xx_allows_everything(web: dict[str, str], case: str, status: int) -> None:
    r = fetch(web[case])
    assert (r.outcome, r.status) == ("unavailable", status)
    assert r.robots.allowed("http://127.0.0.1/private")


@pytest.mark.parametrize(("case", "status"), [("error", 500), ("unavailable", 503), ("busy-silent", 429)])
def test_http_5xx_and_429_disallow_everything(web: dict[str, str], case: str, status: int) -> None:
    r = fetch(web[case])
    assert (r.outcome, r.status) == ("unreachable", status)
    assert not r.robots.allowed("http://127.0.0.1/")


def test_http_429_with_retry_after(web: dict[str, str]) -> None:
    r = fetch(web["busy"])
    assert (r.outcome, r.status, r.retry_after) == ("retry", 429, 30.0)
    assert not r.robots.allowed("http://127.0.0.1/")


def test_http_redirect_across_hosts(web: dict[str, str]) -> None:
    r = fetch(web["moved"])
    port = web["moved"].split(":")[2].split("/")[0]
    assert r.outcome == "ok" and r.url == f"http://127.0.0.1:{port}/robots.txt"
    assert r.source == r.redirects[-1] == f"http://localhost:{port}/real.txt"
    assert not r.robots.allowed("http://127.0.0.1/moved")


def test_http_five_redirects_are_followed_six_are_not(web: dict[str, str]) -> None:
    five = fetch(web["five"])
    assert five.outcome == "ok" and len(five.redirects) == 5 and not five.robots.allowed("/five")
    six = fetch(web["six"])
    assert (six.outcome, six.status, len(six.redirects)) == ("unavailable", 302, 5)
    assert six.robots.allowed("/six") and "more than 5 redirects" in six.meaning


def test_http_redirect_loop(web: dict[str, str]) -> None:
    r = fetch(web["loop"])
    assert (r.outcome, r.status) == ("unavailable", 301) and len(r.redirects) == 5


def test_http_20_mb_file_is_cut_at_max_bytes(web: dict[str, str]) -> None:
    r = fetch(web["big"])
    assert (r.outcome, r.status, r.truncated, len(r.body)) == ("ok", 200, True, 512_000)
    assert not r.robots.allowed("/big" + "x" * 49)
    assert any(d.code == "truncated" for d in r.robots.diagnostics)


def test_http_sends_the_robots_user_agent(web: dict[str, str]) -> None:
    assert fetch(web["agent"], agent="mybot").outcome == "ok"
    assert not fetch(web["agent"], agent="mybot").robots.allowed("/seen")
    assert fetch(web["agent"]).outcome == "unavailable"  # "*" sends manners' own name


# -- Gopher: gophernicus and pygopherd -------------------------------------------------


def gopher_roots(base: Path) -> dict[str, Path]:
    roots = {name: base / name for name in ("plain", "none", "typed")}
    for root in roots.values():
        root.mkdir()
        (root / "hello.txt").write_text("hello\n")
    (roots["plain"] / "robots.txt").write_text("User-agent: *\nDisallow: /private\nDisallow: 1/private\n")
    (roots["typed"] / "0").mkdir()  # a UMN-style server keeps the item type in the selector
    (roots["typed"] / "0" / "robots.txt").write_text("User-agent: *\nDisallow: 0/secret\n")
    return roots


@pytest.mark.parametrize("server", [gophernicus, pygopherd], ids=["gophernicus", "pygopherd"])
def test_gopher_servers(tmp_path: Path, server) -> None:  # type: ignore[no-untyped-def]
    roots = gopher_roots(tmp_path)
    with server(roots["plain"]) as port:
        r = fetch(f"gopher://127.0.0.1:{port}/1/")
        assert (r.outcome, r.status, r.extra["selector"]) == ("ok", "gopher-ok", "robots.txt")
        assert r.source == f"gopher://127.0.0.1:{port}/0robots.txt"
        assert not r.robots.allowed(f"gopher://127.0.0.1:{port}/1/private")
        assert not r.robots.allowed(f"gopher://127.0.0.1:{port}/0/private/file.txt")
        assert r.robots.allowed(f"gopher://127.0.0.1:{port}/0/hello.txt")
        assert b"Error" not in r.body and not r.body.rstrip().endswith(b"\n.")
    with server(roots["none"]) as port:
        r = fetch(f"gopher://127.0.0.1:{port}/")
        assert (r.outcome, r.status) == ("unavailable", "gopher-error")
        assert r.robots.allowed(f"gopher://127.0.0.1:{port}/1/private")  # an error page is no policy
    with server(roots["typed"]) as port:
        r = fetch(f"gopher://127.0.0.1:{port}/")
        assert (r.outcome, r.extra["selector"]) == ("ok", "0/robots.txt")
        assert not r.robots.allowed(f"gopher://127.0.0.1:{port}/00/secret")  # selector 0/secret


# -- Gemini: jetforce ------------------------------------------------------------------


def test_jetforce(tmp_path: Path) -> None:
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    (tmp_path / "with" / "robots.txt").write_text(
        "User-agent: *\nDisallow: /private/\n\nUser-agent: archiver\nDisallow: /\n"
    )
    (tmp_path / "without" / "index.gmi").write_text("# hello\n")
    known: dict[str, str] = {}
    with jetforce(tmp_path / "with") as port:
        r = fetch(f"gemini://localhost:{port}/page", known_hosts=known)
        assert (r.outcome, r.status, r.extra["media_type"]) == ("ok", 20, "text/plain")
        assert r.fingerprint == known[f"localhost:{port}"] and not r.fingerprint_changed
        assert not r.robots.allowed(f"gemini://localhost:{port}/private/x")
        assert not r.robots.allowed(f"gemini://localhost:{port}/x", roles=["archiver"])
        assert r.robots.allowed(f"gemini://localhost:{port}/x", roles=["indexer"])
        wrong = fetch(f"gemini://127.0.0.1:{port}/")  # jetforce refuses to proxy for other hosts
        assert (wrong.outcome, wrong.status) == ("unavailable", 53)
    with jetforce(tmp_path / "without") as port:
        r = fetch(f"gemini://localhost:{port}/")
        assert (r.outcome, r.status) == ("unavailable", 51)
        assert r.robots.allowed(f"gemini://localhost:{port}/private/x")
