"""The usage preferences on the command line (issue 35): ``check`` shows those that apply to
each URL, each with its line, and ``--json`` gives every category; ``lint`` knows both fields.

Run in process (``manners.cli.main``) with the output captured, so the quick tier sees the
modules that say them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import manners
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
"""

NEITHER = "User-agent: *\nAllow: /\nDisallow: /private\n"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_says_the_stated_preferences_each_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "robots.txt"
    f.write_text(BOTH)
    code, out, _ = run(capsys, "check", "/a", "/open/x", "/private/x", "--robots", str(f))
    assert code == 1
    page, open_, private = out.splitlines()
    assert page == (
        "allowed     /a  (line 2: Allow: /)  usage: train-ai=no (line 4), search=yes (line 4); "
        "signals: ai-train=no (line 5)"
    )
    # the longest path decides whole: search is not taken from the shorter rule
    assert open_ == (
        "allowed     /open/x  (line 2: Allow: /)  usage: train-ai=yes (line 6); signals: ai-train=no (line 5)"
    )
    # none for what may not be fetched
    assert private == "disallowed  /private/x  (line 3: Disallow: /private)"


def test_check_without_the_fields_says_what_it_said_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "robots.txt"
    f.write_text(NEITHER)
    code, out, _ = run(capsys, "check", "/a", "/private/x", "--robots", str(f))
    assert code == 1
    assert out.splitlines() == [
        "allowed     /a  (line 2: Allow: /)",
        "disallowed  /private/x  (line 3: Disallow: /private)",
    ]
    f.write_text(BOTH)  # a profile that does not read them: nothing said either
    code, out, _ = run(capsys, "check", "gemini://h/a", "--robots", str(f))
    assert "usage" not in out and "signals" not in out


def test_check_escapes_what_the_file_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "robots.txt"
    f.write_bytes(b"User-agent: *\nContent-Usage: /\x1b]0;x\x07/ train-ai=n\nContent-Usage: search=y\n")
    code, out, _ = run(capsys, "check", "/\x1b]0;x\x07/a", "--robots", str(f))
    assert code == 0 and "\x1b" not in out and "\x07" not in out
    why = "(no rule for user-agent * matches)"
    assert out == f"allowed     /\\x1b]0;x\\x07/a  {why}  usage: train-ai=no (line 2)\n"


def test_check_json_gives_every_category_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "robots.txt"
    f.write_text(BOTH)
    code, out, _ = run(capsys, "check", "/a", "/private/x", "--robots", str(f), "--json")
    assert code == 1
    data = json.loads(out)
    agrees("manners check", data)
    page, private = (r["usage"] for r in data["results"])
    assert page == {
        "categories": {
            "train-ai": {"value": "no", "line": 4},
            "ai-use": {"value": "unstated", "line": None},
            "search": {"value": "yes", "line": 4},
        },
        "signals": {
            "search": {"value": "unstated", "line": None},
            "ai-input": {"value": "unstated", "line": None},
            "ai-train": {"value": "no", "line": 5},
        },
    }
    assert {p["value"] for kind in private.values() for p in kind.values()} == {"unstated"}
    f.write_text(NEITHER)  # the same keys for a file without the fields
    code, out, _ = run(capsys, "check", "/a", "--robots", str(f), "--json")
    (result,) = json.loads(out)["results"]
    assert set(result["usage"]["categories"]) == {"train-ai", "ai-use", "search"}
    assert all(p == {"value": "unstated", "line": None} for p in result["usage"]["signals"].values())


def lint_json(capsys: pytest.CaptureFixture[str], path: Path, *more: str) -> list[dict[str, object]]:
    code, out, _ = run(capsys, "lint", str(path), "--json", *more)
    assert code == 0
    found: list[dict[str, object]] = json.loads(out)["diagnostics"]
    return found


def test_lint_a_file_using_both_fields_correctly_finds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "robots.txt"
    f.write_text(BOTH + "\nUser-agent: otherbot\nContent-Usage: train-ai=y\nContent-Signal: ai-train=yes\n")
    code, out, _ = run(capsys, "lint", str(f))
    assert (code, out) == (0, f"{f}: no findings (rfc9309)\n")


def test_lint_finds_a_category_stated_twice_for_one_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "robots.txt"
    f.write_text(
        "User-agent: *\n"
        "Content-Usage: /a train-ai=n, search=y\n"  # 2
        "Content-Usage: /a train-ai=y\n"  # 3: conflicts with line 2
        "Content-Usage: /a search=y\n"  # 4: the same again
        "Content-Usage: /b train-ai=y\n"  # 5: another path
        "Content-Signal: search=no\n"  # 6
        "Content-Signal: search=no\n"  # 7: the same again
        "Disallow: /private\n"  # a rule: the group ends at the next User-agent line
        "\nUser-agent: otherbot\nContent-Usage: /a train-ai=y\n"  # 11: another group
    )
    found = [(d["line"], d["severity"], d["code"]) for d in lint_json(capsys, f)]
    assert found == [(3, "warning", "duplicate"), (4, "info", "duplicate"), (7, "info", "duplicate")]
    # without a rule, preference lines end the group all the same, as the attachment draft's
    # grammar makes them rules (docs/api.md): otherbot's line 10 repeats nothing of its own group
    # (and lint says that RFC 9309 readers see one group there: usage-splits-group)
    f.write_text(f.read_text().replace("Disallow: /private\n", ""))
    split = (9, "warning", "usage-splits-group")
    assert [(d["line"], d["severity"], d["code"]) for d in lint_json(capsys, f)] == [*found, split]
    code, out, _ = run(capsys, "lint", str(f))
    assert code == 0
    assert (
        f"{f}:3: warning: duplicate: Content-Usage train-ai=y for '/a' conflicts with train-ai=n on line 2"
        in out
    )
    assert f"{f}:4: info: duplicate: Content-Usage search=y for '/a' repeats line 2" in out


def test_lint_finds_the_two_fields_contradicting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "robots.txt"
    f.write_text(
        "User-agent: *\n"
        "Content-Usage: train-ai=y, search=y\n"  # 2
        "Content-Signal: ai-train=no, search=yes\n"  # 3: ai-train contradicts line 2
        "Content-Signal: /p ai-input=no\n"  # 4
        "Content-Usage: /p ai-use=y\n"  # 5: contradicts line 4
        "Content-Usage: /q ai-use=y\n"  # 6: another path
    )
    found = lint_json(capsys, f)
    assert [(d["line"], d["severity"], d["code"]) for d in found] == [
        (3, "warning", "contradictory"),
        (5, "warning", "contradictory"),
    ]
    first = str(found[0]["message"])
    assert first.startswith(
        "Content-Signal ai-train=no for every path contradicts Content-Usage train-ai=y on line 2"
    )
    assert "neither draft defines" in first
    assert "Content-Usage ai-use=y for '/p' contradicts Content-Signal ai-input=no on line 4" in str(
        found[1]["message"]
    )
    # a profile that does not read the fields says only that, once a line
    found = lint_json(capsys, f, "--profile", "gemini")
    assert {d["code"] for d in found} == {"content-usage", "content-signal"}


def test_lint_leaves_a_malformed_statement_to_bad_content_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "robots.txt"
    f.write_text(
        "User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: train-ai=n,\nContent-Signal: ai-train=yes\n"
    )
    found = [(d["line"], d["code"]) for d in lint_json(capsys, f)]
    assert found == [(3, "bad-content-usage"), (4, "contradictory")]


def test_lint_finds_a_usage_line_that_splits_a_run_of_user_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RFC 9309 reads lines 1-4 as one group (a and b disallowed /x); the attachment draft's
    grammar ends the group at line 2, so its readers give /x to b alone and line 2 to a alone."""
    f = tmp_path / "robots.txt"
    f.write_text(
        "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\nDisallow: /x\n"  # 3: splits
        "\nUser-agent: c\nDisallow: /y\nContent-Signal: ai-train=no\n"  # a rule first: no split
        "\nUser-agent: d\nDisallow: /\n"
    )
    found = lint_json(capsys, f)
    assert [(d["line"], d["severity"], d["code"]) for d in found] == [(3, "warning", "usage-splits-group")]
    assert "(line 2)" in str(found[0]["message"]) and "to 'b' alone" in str(found[0]["message"])
    robots = manners.parse(f.read_text())
    assert not robots.allowed("https://e.com/x", "a")  # verdicts: RFC 9309's one group
    assert robots.usage("https://e.com/z", "a").category("train-ai").line == 2
    assert robots.usage("https://e.com/z", "b").category("train-ai").value == "unstated"
    # readers that do not read usage lines see nothing to warn of
    assert [d["code"] for d in lint_json(capsys, f, "--profile", "gemini")] == [
        "content-usage",
        "content-signal",
    ]
