"""The front page: README.md stays short, and every relative link in it leads somewhere.

The documentation lives in docs/ and `mkdocs build --strict` (scripts/test) fails on a broken
link or anchor there; the README is no page of that site, so its links are checked here: a
file that is not in the repository, or a heading anchor its target does not have, fails.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 200

FENCE = re.compile(r"^ {0,3}```.*?^ {0,3}```[ \t]*$", re.DOTALL | re.MULTILINE)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def prose(markdown: str) -> str:
    """The text outside code: fenced blocks and code spans hold no links."""
    return CODE.sub("", FENCE.sub("", markdown))


def anchors(markdown: str) -> set[str]:
    """The anchors of a page's headings that both GitHub and MkDocs give (a link to one of
    these works on either)."""
    found = set()
    for title in HEADING.findall(FENCE.sub("", markdown)):
        text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", title)
        github = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
        mkdocs = re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", ascii_text).strip().lower())
        if github == mkdocs:
            found.add(github)
    return found


def broken_links(markdown: str, base: Path) -> list[str]:
    """Each relative link of ``markdown`` (read as a file in ``base``) whose file is not there,
    or whose ``#anchor`` is no heading of its target, with why."""
    broken = []
    for target in LINK.findall(prose(markdown)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not in the repository
            continue
        path, _, anchor = target.partition("#")
        file = (base / path).resolve() if path else None
        if file is not None and not file.exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor:
            page = file.read_text() if file is not None else markdown
            if file is not None and file.suffix != ".md":
                broken.append(f"{target}: an anchor into a file that is no Markdown page")
            elif anchor not in anchors(page):
                broken.append(f"{target}: no heading has the anchor #{anchor}")
    return broken


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_every_relative_link_in_the_readme_leads_somewhere() -> None:
    text = README.read_text()
    assert LINK.search(prose(text)), "the README links into the docs"
    assert broken_links(text, ROOT) == []


def test_the_link_check_finds_what_is_broken() -> None:
    """The checker itself: a missing file, a missing anchor and an anchor into a file that is no
    page fail; links that work, links outside the repository and links in code do not."""
    page = "\n".join([
        "# manners", "## The main job: crawl the small net", "```", "[in code](nowhere.md)", "```",
        "[ok](docs/index.md) [ok](README.md#manners) [ok](#the-main-job-crawl-the-small-net)",
        "[ok](https://example.org/nowhere.md) [ok](scripts/demo) `[code](nowhere.md)`",
        "[gone](docs/nowhere.md) [no anchor](README.md#nowhere) [here](#nothing)",
        "[not a page](scripts/demo#x)",
    ])  # fmt: skip
    assert broken_links(page, ROOT) == [
        "docs/nowhere.md: no such file",
        "README.md#nowhere: no heading has the anchor #nowhere",
        "#nothing: no heading has the anchor #nothing",
        "scripts/demo#x: an anchor into a file that is no Markdown page",
    ]


def test_anchors_are_those_github_and_mkdocs_agree_on() -> None:
    assert anchors("# Robot: cache and per-host scheduler\n## `manners crawl` audit") == {
        "robot-cache-and-per-host-scheduler",
        "manners-crawl-audit",
    }
    assert anchors("## a -- b") == set()  # GitHub keeps both hyphens, MkDocs makes one
