"""``manners explain`` shows each group's usage preferences (issue 35): its ``Content-Usage``
and ``Content-Signal`` lines, each with its line, path and what it states, in the text and in
``--json`` (``groups[].usage``); a file without such lines explains as it did.

Run in process (``manners.cli.main``) with the output captured, so the quick tier sees the
modules that say them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from manners.cli import main
from test_cli_json import agrees

pytestmark = pytest.mark.quick

BOTH = """\
User-agent: *
Allow: /
Disallow: /private
Content-Usage: train-ai=n, search=y
Content-Signal: ai-train=no
Content-Usage: /open/ train-ai=y

User-agent: BotA
Content-Usage: /x search=n
User-agent: BotB
Disallow: /b
Content-Usage: bogus(
"""

NEITHER = "User-agent: *\nAllow: /\nDisallow: /private\n"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, _ = capsys.readouterr()
    return code, out


def robots(tmp_path: Path, text: str) -> str:
    f = tmp_path / "robots.txt"
    f.write_text(text)
    return str(f)


def test_explain_shows_each_groups_usage_lines_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out = run(capsys, "explain", robots(tmp_path, BOTH), "/a")
    assert code == 0
    lines = out.splitlines()
    star = lines.index("lines 1-7  User-agent: *  (applies)")
    assert lines[star + 1 : star + 7] == [
        "       2  Allow: /",
        "       3  Disallow: /private",
        "       4  Content-Usage: train-ai=n, search=y  (for every path: train-ai no, search yes)",
        "       5  Content-Signal: ai-train=no  (for every path: ai-train no)",
        "       6  Content-Usage: /open/ train-ai=y  (for /open/: train-ai yes)",
        "lines 8-12  User-agent: BotA; User-agent: BotB  (does not apply)",
    ]
    # the draft's grammar ends BotA's group at its usage line: said, as usage() reads it
    assert lines[star + 7] == (
        "       9  Content-Usage: /x search=n  (for /x: search no) [for BotA only: a usage line ends a run"
        " of User-agent lines]"
    )
    assert lines[star + 9] == (
        "      12  Content-Usage: bogus(  (for every path: no structured-field dictionary, so every category"
        " is unknown) [for BotB only: a usage line ends a run of User-agent lines]"
    )


def test_explain_json_gives_each_groups_usage_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "explain", robots(tmp_path, BOTH), "/a", "--json")
    assert code == 0
    data = json.loads(out)
    agrees("manners explain", data)
    star, named = data["groups"]
    assert star["usage"] == [
        {"line": 4, "field": "Content-Usage", "value": "train-ai=n, search=y", "path": None,
         "states": {"train-ai": "no", "search": "yes"}, "malformed": False, "user_agents": ["*"]},
        {"line": 5, "field": "Content-Signal", "value": "ai-train=no", "path": None,
         "states": {"ai-train": "no"}, "malformed": False, "user_agents": ["*"]},
        {"line": 6, "field": "Content-Usage", "value": "/open/ train-ai=y", "path": "/open/",
         "states": {"train-ai": "yes"}, "malformed": False, "user_agents": ["*"]},
    ]  # fmt: skip
    said = [(u["line"], u["path"], u["states"], u["malformed"], u["user_agents"]) for u in named["usage"]]
    assert said == [
        (9, "/x", {"search": "no"}, False, ["BotA"]),
        (12, None, {}, True, ["BotB"]),
    ]


def test_explain_without_usage_lines_is_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "explain", robots(tmp_path, NEITHER), "/a", "--json")
    assert code == 0
    data = json.loads(out)
    agrees("manners explain", data)
    assert all("usage" not in g for g in data["groups"])
    code, out = run(capsys, "explain", robots(tmp_path, NEITHER), "/a")
    lines = out.splitlines()
    at = lines.index("lines 1-3  User-agent: *  (applies)")
    assert lines[at + 1 : at + 4] == ["       2  Allow: /", "       3  Disallow: /private", ""]
    assert "Content-" not in out and "usage line" not in out


def test_explain_escapes_usage_lines_and_says_what_a_profile_ignores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    text = "Content-Usage: train-ai=n\nUser-agent: *\nContent-Usage: /p\x1b[31m search=n\n"
    code, out = run(capsys, "explain", robots(tmp_path, text), "/a")
    assert code == 0
    assert "\x1b" not in out
    assert "       3  Content-Usage: /p\\x1b[31m search=n  (for /p\\x1b[31m: search no)" in out.splitlines()
    assert "usage lines before any User-agent line (ignored):" in out
    assert "       1  Content-Usage: train-ai=n" in out.splitlines()
    code, out = run(capsys, "explain", robots(tmp_path, text), "/a", "--profile", "gemini")
    assert code == 0
    assert "(a gemini reader reads no Content-Usage or Content-Signal lines)" in out
