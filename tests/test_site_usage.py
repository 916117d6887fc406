"""``manners site`` on usage preferences: what a Web site's robots.txt states (Content-Usage,
Content-Signal) for the robot asked about, and the Content-Usage header field of the answer
robots.txt came in (draft-ietf-aipref-attach, "HTTP Content-Usage Header Field").

nginx serves each robots.txt, ``add_header`` sends the header field (twice, to see field lines
combined; a hostile one, long and with control characters, to see it cut and escaped); a site
with neither must give the report it gave before.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from manners.admin.site import SiteReport, audit_site
from manners.admin.site.command import show
from manners.admin.site.usage import HEADER_KEEP, header, site_usage
from manners.output import Out
from manners.robots import parse
from servers import HOST, gophernicus, nginx
from test_cli import manners
from test_cli_json import agrees

DELAY = 0.02
PREFS = (
    "User-agent: *\n"  # 1
    "Content-Usage: train-ai=n\n"  # 2
    "Content-Usage: /blog/ search=y\n"  # 3
    "Content-Signal: search=yes, ai-train=no\n"  # 4
    "Disallow: /private\n"  # 5
    "\n"  # 6
    "User-agent: mybot\n"  # 7
    "Content-Usage: ai-use=n\n"  # 8
    "Allow: /\n"  # 9
)
PLAIN = "User-agent: *\nDisallow: /private\n"
HOME = '<html><body><a href="/a.html">A</a> <a href="/blog/post.html">B</a> <a href="/private/p.html">P</a>'
# ESC, a C1 control (U+009B, CSI) and DEL inside, and far more than HEADER_KEEP characters
HOSTILE = "train-ai=n, x=\x1b[31m\u009b\x7f, " + "a" * 3000 + "=y, search=n"
LONG = "train-ai=n, " + "a=y, " * 600 + "search=n"  # a dictionary, its last member past the cut


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    root = tmp_path_factory.mktemp("www")
    for name, text in {"prefs.txt": PREFS, "plain.txt": PLAIN, "index.html": HOME}.items():
        (root / name).write_text(text)

    def robots(name: str, *headers: str) -> str:
        added = " ".join(f'add_header Content-Usage "{_quote(h)}";' for h in headers)
        return f"location = /robots.txt {{ alias {root}/{name}; {added} }}"

    blocks = {
        "prefs": robots("prefs.txt", "train-ai=n"),
        "plain": robots("plain.txt"),
        "two-fields": robots("plain.txt", "train-ai=n", "search=y"),
        "hostile": robots("plain.txt", HOSTILE),
        "long": robots("plain.txt", LONG),
        "malformed": robots("plain.txt", "train-ai=n search=y"),
        "absent": 'location = /robots.txt { add_header Content-Usage "train-ai=n" always; return 404; }',
    }
    with nginx(list(blocks.values()), root) as ports:
        yield dict(zip(blocks, ports, strict=True))


def audit(url: str, **options: Any) -> SiteReport:
    options.setdefault("delay", DELAY)
    options.setdefault("timeout", 5.0)
    return asyncio.run(audit_site(url, **options))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "MANNERS_CACHE")}
    return {**clean, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200"}


def site_text(port: int, env: dict[str, str], *args: str) -> str:
    p = manners("site", f"http://{HOST}:{port}/", "--delay", str(DELAY), *args, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_robots_txt_preferences_and_header_in_the_report(web: dict[str, int], env: dict[str, str]) -> None:
    """The root and each sampled URL the robot may fetch: each stated preference with its line
    (/blog/'s own rule is the longest match there: attach, "Content-Usage Rule Semantics"); the
    disallowed URL none (none are implied); the header field as robots.txt's own."""
    out = site_text(web["prefs"], env)
    assert "usage preferences robots.txt states for * (Content-Usage, Content-Signal):" in out
    lines = out.splitlines()
    everywhere = "usage: train-ai=no (line 2); signals: search=yes (line 4), ai-train=no (line 4)"
    assert f"  /: {everywhere}" in lines and f"  /a.html: {everywhere}" in lines
    assert (
        "  /blog/post.html: usage: search=yes (line 3); signals: search=yes (line 4), ai-train=no (line 4)"
    ) in lines
    assert not [line for line in lines if line.startswith("  /private/p.html:")]  # disallowed: none implied
    said = next(line for line in lines if line.startswith("robots.txt's own Content-Usage header"))
    assert said.startswith("robots.txt's own Content-Usage header: train-ai=no; it applies to the content")
    assert "robots.txt itself, not to the site's other URLs" in said
    assert "    sent: Content-Usage: train-ai=n" in lines
    mine = site_text(web["prefs"], env, "--agent", "mybot")  # the robot asked about: its own group
    assert "usage preferences robots.txt states for mybot (Content-Usage, Content-Signal):" in mine
    assert "  /private/p.html: usage: ai-use=no (line 8)" in mine.splitlines()


def test_robots_txt_preferences_and_header_in_json(web: dict[str, int], env: dict[str, str]) -> None:
    url = f"http://{HOST}:{web['prefs']}/"
    p = manners("site", url, "--json", "--delay", str(DELAY), env=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    agrees("manners site", data)
    usage = data["usage"]
    assert usage["agent"] == "*" and usage["roles"] == []
    by = {u["url"]: u for u in usage["urls"]}
    assert list(by) == [url, f"{url}a.html", f"{url}blog/post.html", f"{url}private/p.html"]
    assert by[url]["categories"] == {
        "train-ai": {"value": "no", "line": 2},
        "ai-use": {"value": "unstated", "line": None},
        "search": {"value": "unstated", "line": None},
    }
    assert by[f"{url}blog/post.html"]["categories"]["search"] == {"value": "yes", "line": 3}
    assert by[url]["signals"]["ai-train"] == {"value": "no", "line": 4}
    assert by[f"{url}private/p.html"]["categories"]["train-ai"]["value"] == "unstated"
    assert data["content_usage"] == {
        "url": f"{url}robots.txt",
        "value": "train-ai=n",
        "length": 10,
        "cut": False,
        "categories": {"train-ai": "no", "ai-use": "unstated", "search": "unstated"},
        "malformed": None,
    }


def test_a_site_stating_none_reports_as_before(
    web: dict[str, int], env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """No usage lines, no header field: not one line more than the report without the feature."""
    report = audit(f"http://{HOST}:{web['plain']}/", sample=5)
    assert report.content_usage is None and report.usage is not None
    assert all(all(p.value == "unstated" for p in u.categories + u.signals) for _, u in report.usage.urls)
    show(report, Out(False))
    shown = capsys.readouterr().out
    report.usage = None
    show(report, Out(False))
    assert capsys.readouterr().out == shown
    out = site_text(web["plain"], env)
    assert "usage" not in out.lower() and "content-" not in out.lower()
    url = f"http://{HOST}:{web['plain']}/"
    data = json.loads(manners("site", url, "--json", "--delay", str(DELAY), env=env).stdout)
    assert data["content_usage"] is None and data["usage"]["urls"][0]["url"] == url


def test_header_field_lines_combined(web: dict[str, int]) -> None:
    """Two Content-Usage field lines: one value, comma-joined as HTTP combines them (RFC 9110
    §5.3) and as RFC 9651 §4.2 parses a dictionary from several lines."""
    report = audit(f"http://{HOST}:{web['two-fields']}/", sample=0)
    assert report.content_usage is not None
    assert report.content_usage.value == "train-ai=n, search=y"
    assert dict(report.content_usage.categories) == {"train-ai": "no", "ai-use": "unstated", "search": "yes"}


def test_hostile_header_is_cut_and_escaped(web: dict[str, int], env: dict[str, str]) -> None:
    """Long, with ESC, a C1 control and DEL: kept to HEADER_KEEP characters, escaped on the
    terminal and in JSON; no dictionary, so every category is unknown."""
    url = f"http://{HOST}:{web['hostile']}/"
    out = site_text(web["hostile"], env)
    assert "\x1b" not in out and "\x9b" not in out and "\x7f" not in out
    (sent,) = [line for line in out.splitlines() if line.startswith("    sent: Content-Usage:")]
    assert "train-ai=n, x=\\x1b[31m\\x9b\\x7f, aaa" in sent
    assert sent.endswith(f"… (cut: {len(HOSTILE):,} characters sent, {HEADER_KEEP:,} kept)")
    assert len(sent) < HEADER_KEEP + 200
    assert "robots.txt's own Content-Usage header: no structured-field dictionary (at byte 14:" in out
    p = manners("site", url, "--json", "--delay", str(DELAY), "--sample", "0", env=env)
    data = json.loads(p.stdout)
    agrees("manners site", data)
    assert "\x1b" not in p.stdout and "\\u001b" in p.stdout and "\x9b" not in p.stdout
    found = data["content_usage"]
    assert found["cut"] is True and len(found["value"]) == HEADER_KEEP
    assert found["value"].startswith("train-ai=n, x=\x1b[31m\u009b\x7f, aaa")
    assert found["length"] == len(HOSTILE)  # httpx decodes the field as UTF-8 when it is
    assert found["malformed"] is not None and set(found["categories"].values()) == {"unstated"}


def test_long_header_is_read_whole(web: dict[str, int]) -> None:
    """The engine reads the whole value as received; only what the report keeps is cut."""
    report = audit(f"http://{HOST}:{web['long']}/", sample=0)
    assert report.content_usage is not None and report.content_usage.cut
    assert report.content_usage.length == len(LONG) and len(report.content_usage.value) == HEADER_KEEP
    assert dict(report.content_usage.categories) == {"train-ai": "no", "ai-use": "unstated", "search": "no"}


def test_malformed_header_and_none_on_an_error_answer(web: dict[str, int], env: dict[str, str]) -> None:
    report = audit(f"http://{HOST}:{web['malformed']}/", sample=0)
    assert report.content_usage is not None and report.content_usage.malformed is not None
    assert "no structured-field dictionary" in report.content_usage.words()
    assert set(dict(report.content_usage.categories).values()) == {"unstated"}
    # a 404 with the field: the answer is no robots.txt, and the field is about that page
    report = audit(f"http://{HOST}:{web['absent']}/", sample=0)
    assert report.robots.outcome == "unavailable" and report.content_usage is None


def test_small_net_sites_have_no_usage_report(tmp_path: Path) -> None:
    """A Gopher hole with the same lines: its profile does not read them and its answers carry no
    header fields, so the report has no usage for it; lint says the lines mean nothing there."""
    (tmp_path / "hole").mkdir()
    (tmp_path / "hole" / "robots.txt").write_text(PREFS)
    with gophernicus(tmp_path / "hole") as port:
        report = audit(f"gopher://{HOST}:{port}/", sample=0)
    assert report.usage is None and report.content_usage is None
    assert [(d.line, d.code) for d in report.diagnostics if d.severity == "info"] == [
        (2, "content-usage"),
        (3, "content-usage"),
        (4, "content-signal"),
        (8, "content-usage"),
    ]
    data = report.as_json()
    assert data["usage"] is None and data["content_usage"] is None


# -- without servers -----------------------------------------------------------------------------


@pytest.mark.quick
def test_header_read_by_the_engine_and_bounded() -> None:
    assert header("u", {}) is None
    h = header("https://h/robots.txt", {"content-usage": "train-ai=n, search=y"})
    assert h is not None and not h.cut and h.malformed is None
    assert h.categories == (("train-ai", "no"), ("ai-use", "unstated"), ("search", "yes"))
    assert "train-ai=no, search=yes; it applies to the content of that answer, robots.txt itself" in h.words()
    assert h.sent() == "Content-Usage: train-ai=n, search=y"
    # a path is no part of a header's statement (attach: that is the robots.txt rule's)
    assert header("u", {"content-usage": "/x train-ai=n"}).malformed is not None  # type: ignore[union-attr]
    long = header("u", {"content-usage": "\x1b" * 5000 + "train-ai=n"})
    assert long is not None and long.cut and len(long.value) == HEADER_KEEP and long.length == 5010
    assert "\x1b" not in long.sent() and long.sent().endswith("(cut: 5,010 characters sent, 1,024 kept)")
    assert long.as_json()["cut"] is True and long.as_json()["malformed"] is not None
    empty = header("u", {"content-usage": ""})
    assert empty is not None and "no category it knows" in empty.words()


@pytest.mark.quick
def test_site_usage_lines_only_what_is_stated() -> None:
    robots = parse(PREFS)
    usage = site_usage(robots, "rfc9309", "https://h/", ["https://h/", "https://h/blog/x"], "*", ())
    assert [u for u, _ in usage.urls] == ["https://h/", "https://h/blog/x"]  # the root once
    assert usage.lines(["/", "/blog/x"])[1:] == [
        "  /: usage: train-ai=no (line 2); signals: search=yes (line 4), ai-train=no (line 4)",
        "  /blog/x: usage: search=yes (line 3); signals: search=yes (line 4), ai-train=no (line 4)",
    ]
    none = site_usage(parse(PLAIN), "rfc9309", "https://h/", ["https://h/a"], "*", ())
    assert none.lines(["/", "/a"]) == [] and len(none.as_json()["urls"]) == 2
