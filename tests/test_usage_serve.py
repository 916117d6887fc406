"""``manners serve`` shows the usage preferences (Content-Usage, Content-Signal) in its matrices.

Each robot's matrix ("what each reader decides") gets a column with the preferences the file
states for each target, in ``check``'s words, each line a link to it, when the file states
any; a file that states none looks as it did before.  The real command is started as
``tests/test_serve.py`` starts it (``manners serve --port 0 --json``) and asked over HTTP,
and once by a headless Chromium; one quick test asks the app's own function in this process.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from urllib.parse import urlencode

import httpx
import pytest

from manners.admin.answer import Ask
from manners.admin.serve import answer
from manners.cli import build_parser
from manners.readers import READERS
from manners.robots import Preference
from test_serve import CHROMIUM, DRAFT, Node, Served, dom, lines_of, matrix_table, serve, stop

COLUMN = "usage preferences"
USAGE = (
    "User-agent: *\n"  # 1
    "Content-Usage: train-ai=n\n"  # 2
    "Content-Usage: /ai-ok/ train-ai=y\n"  # 3: for the path /ai-ok/ only
    "Content-Signal: search=yes, ai-train=no\n"  # 4
    "Disallow: /private\n"  # 5
    "\n"
    "User-agent: mybot\n"  # 7
    "Content-Usage: ai-use=n\n"  # 8
    "Allow: /\n"  # 9
)
URLS = "/x\n/ai-ok/y\n/private/z"
STAR = {  # what the usage column says for '*', and the lines it links to
    "/x": (
        "usage: train-ai=no (line 2); signals: search=yes (line 4), ai-train=no (line 4)",
        ["#L2", "#L4", "#L4"],
    ),
    "/ai-ok/y": (
        "usage: train-ai=yes (line 3); signals: search=yes (line 4), ai-train=no (line 4)",
        ["#L3", "#L4", "#L4"],
    ),
    "/private/z": ("none: disallowed", []),  # no preferences are implied for what may not be fetched
}
MYBOT = {url: ("usage: ai-use=no (line 8)", ["#L8"]) for url in URLS.split()}  # its own group


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = serve(tmp_path_factory.mktemp("serve"), "--port", "0", "--cache", "memory", "--timeout", "5")
    try:
        yield served
    finally:
        code = stop(served.proc)
        said = served.stderr.read_text()
        assert "Traceback" not in said, said
        assert code in (0, 130, -signal.SIGINT), (code, said)


def usage_column(section: Node) -> dict[str, tuple[str, list[str]]]:
    """A robot's matrix: target -> (the usage cell's text, the lines its links go to)."""
    table = section.one("table", "matrix")
    heads = [th.text for th in table.one("thead").all("th")]
    assert heads == ["target", *(r.name for r in READERS), COLUMN], heads
    found = {}
    for tr in table.one("tbody").all("tr"):
        usage = tr.all("td")[-1]
        assert "usage" in usage.attrs["class"].split()
        found[tr.one("th").text] = (usage.text, [a.attrs["href"] for a in usage.all("a")])
    return found


def no_usage_column(tree: Node) -> None:
    """Every matrix as it was before there was a usage column."""
    for section in tree.all("section", "readers"):
        heads = [th.text for th in section.one("table", "matrix").one("thead").all("th")]
        assert heads == ["target", *(r.name for r in READERS)], heads
    assert tree.all("td", "usage") == [] and tree.all("th", "usage") == []


def test_each_robots_matrix_shows_its_usage_preferences_with_their_lines(page: Served) -> None:
    answered = httpx.post(page.url, data={"draft": USAGE, "urls": URLS, "agent": "*\nmybot"}, timeout=30)
    assert answered.status_code == 200, answered.text[:2000]
    tree = dom(answered.text)
    star, mybot = tree.all("section", "readers")
    assert usage_column(star) == STAR
    assert usage_column(mybot) == MYBOT
    th = star.one("th", "usage").attrs["title"]
    assert th == "Content-Usage and Content-Signal, as rfc9309 reads them, for *"
    lines = {f"#{i}": text for i, text, _ in lines_of(tree.one("section", "file"))}
    assert lines["#L3"] == "Content-Usage: /ai-ok/ train-ai=y" and lines["#L4"].startswith("Content-Signal")
    assert lines["#L8"] == "Content-Usage: ai-use=n"
    # the verdict cells are as they were: the column is beside them, not in them
    verdicts, _ = matrix_table(star)
    assert verdicts["/private/z"]["RFC 9309"] == ("NO 5", "#L5")
    assert verdicts["/x"]["Google"] == ("yes", None)


def test_the_usage_column_follows_the_profile_read(page: Served) -> None:
    """The preferences are read as the page reads the file: with a role (and no profile chosen)
    the draft is read as gemini, which reads no usage lines: no column; choose rfc9309 or
    google and they are there again, for the robot in its role."""
    asked = {"draft": USAGE, "urls": URLS, "agent": "mybot", "role": "archiver"}
    as_gemini = httpx.post(page.url, data=asked, timeout=30)
    assert as_gemini.status_code == 200, as_gemini.text[:2000]
    no_usage_column(dom(as_gemini.text))
    as_google = httpx.post(page.url, data={**asked, "profile": "google"}, timeout=30)
    section = dom(as_google.text).one("section", "readers")
    assert usage_column(section) == MYBOT
    title = section.one("th", "usage").attrs["title"]
    assert title.endswith("as google reads them, for mybot with roles archiver")


def test_a_file_without_usage_lines_shows_no_usage_column(page: Served) -> None:
    answered = httpx.post(page.url, data={"draft": DRAFT, "urls": URLS, "agent": "*\nmybot"}, timeout=30)
    assert answered.status_code == 200, answered.text[:2000]
    tree = dom(answered.text)
    assert len(tree.all("section", "readers")) == 2
    no_usage_column(tree)
    assert COLUMN not in answered.text
    # usage lines that state nothing for the robots asked (another robot's group): no column either
    other = "User-agent: otherbot\nContent-Usage: train-ai=n\nDisallow: /x\n\nUser-agent: *\nAllow: /\n"
    answered = httpx.post(page.url, data={"draft": other, "urls": URLS}, timeout=30)
    no_usage_column(dom(answered.text))


def test_the_usage_column_is_escaped(page: Served) -> None:
    """A usage line holding markup: shown as text in the file, never as markup; the column
    says the preference it states for the target under that path."""
    hostile = (
        "User-agent: *\n"
        "Content-Usage: /<script>alert(1)</script> train-ai=n\n"
        'Content-Signal: search=yes, <script>="no"\n'
        "Allow: /\n"
    )
    target = "/<script>alert(1)</script>x"
    answered = httpx.post(page.url, data={"draft": hostile, "urls": f"{target}\n/y"}, timeout=30)
    assert answered.status_code == 200, answered.text[:2000]
    shown = answered.text.split("</textarea>", 1)[1]  # past the draft's text box (HTML-escaped too)
    assert "<script>" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    tree = dom(answered.text)
    assert tree.all("script") == [s for s in tree.all("script") if s.attrs.get("src") == "/page.js"]
    column = usage_column(tree.one("section", "readers"))
    assert column == {
        target: ("usage: train-ai=no (line 2)", ["#L2"]),
        "/y": ("none stated", []),  # the Content-Signal line is no dictionary: it states nothing
    }
    texts = [t for _, t, _ in lines_of(tree.one("section", "file"))]
    assert texts[1] == "Content-Usage: /<script>alert(1)</script> train-ai=n"


def test_a_browser_shows_the_usage_column(page: Served) -> None:
    """Headless Chromium builds the answer's GET address into a DOM with the column."""
    assert CHROMIUM is not None, "chromium is not installed (apt-get install chromium)"
    query = urlencode({"draft": USAGE, "urls": URLS, "agent": "*"})
    p = subprocess.run(
        [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom", f"{page.url}?{query}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    assert usage_column(dom(p.stdout).one("section", "readers")) == STAR


@pytest.mark.quick
def test_the_answer_holds_each_robots_usage_for_each_target() -> None:
    """The answer's data (what the page is written from): for each robot's matrix, each
    target's preferences, every category with the line that states it (None: unstated)."""
    settings = build_parser().parse_args(["serve", "--cache", "memory"])
    _, a = answer(Ask(draft=USAGE, agents=("*", "mybot"), urls=tuple(URLS.split())), settings)
    assert a.states_usage and [agent for agent, _ in a.matrices] == ["*", "mybot"]
    (x, ok, private), (mine, _, _) = a.usage
    assert x.category("train-ai") == Preference("train-ai", "no", 2)
    assert ok.category("train-ai") == Preference("train-ai", "yes", 3)
    assert ok.category("ai-use") == Preference("ai-use", "unstated", None)
    assert ok.signal("search") == Preference("search", "yes", 4)
    assert ok.signal("ai-train") == Preference("ai-train", "no", 4)
    assert not private.allowed and {p.value for p in private.categories + private.signals} == {"unstated"}
    assert mine.category("ai-use") == Preference("ai-use", "no", 8)
    assert mine.category("train-ai") == Preference("train-ai", "unstated", None)
    _, plain = answer(Ask(draft=DRAFT, urls=("/x",)), settings)
    assert not plain.states_usage
