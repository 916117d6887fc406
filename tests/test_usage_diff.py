"""``manners diff`` shows usage preference changes (Content-Usage, Content-Signal) as it shows
verdict flips: the category, the URLs, both lines, exit 1; a line that only moved is none."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import manners
from manners.admin.diff import PreferenceChange, diff, usage_paths
from manners.cli import main
from manners.robots import Preference
from test_cli_json import agrees

pytestmark = pytest.mark.quick

OLD = """\
User-agent: *
Disallow: /private/
Content-Usage: train-ai=n
Content-Usage: /ai/ train-ai=y
Content-Signal: search=yes, ai-train=no

User-agent: gptbot
Disallow: /
"""
# only the /ai/ preference changes (and a category is stated that was not)
NEW = OLD.replace("Content-Usage: /ai/ train-ai=y", "Content-Usage: /ai/ train-ai=n, search=y")
# the same preferences, every line moved down two, and a comment added
MOVED = "# moved\n\n" + OLD


def files(tmp_path: Path, old: str, new: str) -> tuple[str, str]:
    (tmp_path / "old.txt").write_text(old)
    (tmp_path / "new.txt").write_text(new)
    return str(tmp_path / "old.txt"), str(tmp_path / "new.txt")


def test_a_preference_only_edit_exits_1_with_the_category_urls_and_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = files(tmp_path, OLD, NEW)
    assert main(["diff", old, new, "/ai/page", "/ai/", "/other", "/private/x"]) == 1
    out = capsys.readouterr().out
    assert "no verdict flips: 4 URLs, 2 agents" in out  # nothing flips: the preference alone
    assert re.search(r"^  Content-Usage +train-ai: yes \(line 4\) -> no \(line 4\)  for \*$", out, re.M)
    assert re.search(r"^  Content-Usage +search: unstated -> yes \(line 4\)  for \*$", out, re.M)
    assert out.count("      2 URLs: /ai/page, /ai/\n") == 2  # each change names the URLs it applies to
    assert "/other" not in out.split("usage preferences changed")[1].split("no verdict")[0]
    assert "2 usage preference changes, for 2 of 4 URLs" in out
    # the line moves too: both lines are the lines of each side
    moved = NEW.replace("Content-Usage: /ai/ train-ai=n, search=y\n", "") + (
        "\nUser-agent: *\nContent-Usage: /ai/ train-ai=n\n"
    )
    old, new = files(tmp_path, OLD, moved)
    assert main(["diff", old, new, "/ai/x"]) == 1
    out = capsys.readouterr().out
    assert "train-ai: yes (line 4) -> no (line 10)  for *" in out


def test_without_urls_the_preference_paths_are_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = files(tmp_path, OLD, NEW)
    assert main(["diff", old, new]) == 1
    out = capsys.readouterr().out
    assert "3 URLs (each rule's own path)" in out  # /private/, / and, from Content-Usage, /ai/
    assert "      1 URL: /ai/\n" in out
    assert usage_paths(manners.parse(OLD.encode())) == ["/", "/ai/"]
    scoped = manners.parse(
        b"User-agent: *\nContent-Signal: /a*b$ ai-train=no\nContent-Usage: /c\ttrain-ai=n\n"
    )
    assert usage_paths(scoped) == ["/axb", "/c"]


def test_a_change_for_one_robot_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = OLD.replace("User-agent: gptbot\nDisallow: /", "User-agent: gptbot\nContent-Signal: ai-train=yes")
    old, new_file = files(tmp_path, OLD, new)
    assert main(["diff", old, new_file, "/x"]) == 1
    out = capsys.readouterr().out
    # gptbot may fetch /x now: that is a flip, and no preference applied to it before
    assert "now allowed     /x  for gptbot" in out and "usage preferences changed" not in out
    d = diff(manners.parse(OLD.encode()), manners.parse(new.encode()), ["/x"])
    assert d.preferences == () and d.flipped


def test_lines_that_only_moved_are_no_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = files(tmp_path, OLD, MOVED)
    assert main(["diff", old, new, "/ai/page", "/other"]) == 0
    out = capsys.readouterr().out
    assert "usage preferences changed" not in out and "usage preference change" not in out
    assert "no verdict flips: 2 URLs, 2 agents" in out
    d = diff(manners.parse(OLD.encode()), manners.parse(MOVED.encode()))
    assert d.preferences == () and not d.changed
    # values respelled alike (white space after the path, the dictionary's spacing) are none
    respelled = OLD.replace("/ai/ train-ai=y", "/ai/ \t train-ai=y").replace(", ai-train", ",ai-train")
    assert diff(manners.parse(OLD.encode()), manners.parse(respelled.encode())).preferences == ()


def test_the_api_gives_each_change() -> None:
    d = diff(manners.parse(OLD.encode()), manners.parse(NEW.encode()), ["/ai/a", "https://example.org/ai/b"])
    assert d.changed and not d.flipped
    assert d.preferences[0] == PreferenceChange(
        "Content-Usage",
        "train-ai",
        "rfc9309",
        Preference("train-ai", "yes", 4),
        Preference("train-ai", "no", 4),
        ("/ai/a", "https://example.org/ai/b"),
        d.preferences[0].agents,
    )
    assert [w.agent for w in d.preferences[0].agents] == ["*"]
    # a signal change, under the google profile too; the 1994 profile reads no preferences
    signal = OLD.replace("ai-train=no", "ai-train=yes")
    for profiles in (["google"], ["rfc9309", "google"]):
        d = diff(manners.parse(OLD.encode()), manners.parse(signal.encode()), ["/z"], profiles=profiles)
        assert [
            (c.field, c.category, c.profile, c.old.value, c.new.value, c.new.line) for c in d.preferences
        ] == [("Content-Signal", "ai-train", p, "no", "yes", 5) for p in profiles]
    d = diff(manners.parse(OLD.encode()), manners.parse(signal.encode()), ["/z"], profiles=["1994"])
    assert d.preferences == () and not d.changed


def test_json_gives_the_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = files(tmp_path, OLD, NEW)
    assert main(["diff", old, new, "/ai/page", "/other", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    agrees("manners diff", data)
    assert data["flips"] == [] and data["preferences"] == [
        {
            "field": "Content-Usage",
            "category": "train-ai",
            "profile": "rfc9309",
            "old": {"value": "yes", "line": 4},
            "new": {"value": "no", "line": 4},
            "urls": ["/ai/page"],
            "agents": [{"agent": "*", "roles": []}],
        },
        {
            "field": "Content-Usage",
            "category": "search",
            "profile": "rfc9309",
            "old": {"value": "unstated", "line": None},
            "new": {"value": "yes", "line": 4},
            "urls": ["/ai/page"],
            "agents": [{"agent": "*", "roles": []}],
        },
    ]
    old, new = files(tmp_path, OLD, MOVED)
    assert main(["diff", old, new, "/ai/page", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    agrees("manners diff", data)
    assert data["preferences"] == []
