"""``manners serve``: the real command on a loopback port, asked over HTTP as a browser asks it.

One server for the module (``manners serve --port 0 --json``, a subprocess), one nginx serving
the live robots.txt (and a home page for the audit's sample), a jetforce for a gemini:// one,
and httpx with no JavaScript anywhere: a form posts, the page answers.  The answers are read
as HTML (a small tree built with :mod:`html.parser`), so each check is about the table a
reader sees: the file's lines with their findings under them, the matrices' cells and the
line each links to.  Then a real headless Chromium: ``--dump-dom`` on an answer's GET
address, and, driven over the DevTools protocol with JavaScript off, the form typed into,
posted and a cell clicked to its line.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from manners.admin.serve import make_app
from manners.cli import build_parser
from servers import jetforce, nginx
from test_cli import ENTRY
from test_cli_json import agrees

# line 1 comes before any group (Gemini and Gopher read it, RFC 9309 does not); line 3 is a typo
DRAFT = (
    "Disallow: /search\n"
    "User-agent: *\n"
    "Disalow: /typo\n"
    "Disallow: /private\n"
    "\n"
    "User-agent: mybot\n"
    "Allow: /private/mine\n"
    "Disallow: /\n"
)
LIVE = "User-agent: *\nDisallow: /private\nDisallow: /old\n"
HOME = '<html><body><a href="/a.html">a</a> <a href="/private/b.html">b</a></body></html>\n'
START = 20.0  # seconds for the server to say where it listens


# -- the server ----------------------------------------------------------------------------


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    url: str
    first: dict[str, object]
    stderr: Path


def serve(tmp: Path, *args: str) -> Served:
    """``manners serve ARGS --json`` started; its first line read (the page's address)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "MANNERS_CACHE")}
    env["XDG_CACHE_HOME"] = str(tmp / "cache")
    err = tmp / f"serve-{time.monotonic_ns()}.stderr"
    with open(err, "wb") as sink:
        proc = subprocess.Popen(
            [str(ENTRY), "serve", "--json", *args], stdout=subprocess.PIPE, stderr=sink, env=env
        )
    try:
        first = announced(proc, err)
    except BaseException:
        if proc.poll() is None:
            stop(proc)
        raise
    return Served(proc, str(first["page"]), first, err)


def announced(proc: subprocess.Popen[bytes], err: Path) -> dict[str, object]:
    """The JSON object ``manners serve --json`` prints once it listens."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(START):
            raise AssertionError(f"manners serve said nothing in {START:g} s: {err.read_text()}")
    text = b""
    while not text.endswith(b"}\n"):  # one JSON object, laid out as every --json output is
        line = proc.stdout.readline()
        if not line:
            proc.wait(10)
            raise AssertionError(f"manners serve exited {proc.returncode}: {err.read_text()}")
        text += line
    first: dict[str, object] = json.loads(text)
    return first


def stop(proc: subprocess.Popen[bytes]) -> int:
    """Ctrl-C, as a person stops it; the exit status."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("manners serve did not stop within 10 s of Ctrl-C") from None


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("serve")
    served = serve(tmp, "--port", "0", "--cache", "memory", "--timeout", "5", "--delay", "0.1")
    try:
        yield served
    finally:
        code = stop(served.proc)
        said = served.stderr.read_text()
        assert "Traceback" not in said, said  # no answer of the module's ever failed inside
        assert code in (0, 130, -signal.SIGINT), (code, said)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("www")
    (root / "robots.txt").write_text(LIVE)
    (root / "index.html").write_text(HOME)
    with nginx(["location = /robots.txt { default_type text/plain; }"], root) as (port,):
        yield f"http://127.0.0.1:{port}/"


def post(page: Served, **fields: str) -> httpx.Response:
    return httpx.post(page.url, data=fields, timeout=30)


# -- reading the HTML ----------------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def all(self, tag: str, cls: str | None = None) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if child.tag == tag and (cls is None or cls in child.attrs.get("class", "").split()):
                    found.append(child)
                found += child.all(tag, cls)
        return found

    def one(self, tag: str, cls: str | None = None) -> Node:
        (found,) = self.all(tag, cls)
        return found

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def href(self) -> str | None:
        links = self.all("a")
        return links[0].attrs.get("href") if links else None


class Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for n in range(len(self.stack) - 1, 0, -1):
            if self.stack[n].tag == tag:
                del self.stack[n:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def dom(text: str) -> Node:
    tree = Tree()
    tree.feed(text)
    tree.close()
    return tree.root


def lines_of(section: Node) -> list[tuple[str, str, list[str]]]:
    """A file section's table: (row id, the line's text, the findings shown under it)."""
    rows: list[tuple[str, str, list[str]]] = []
    for tr in section.one("table", "lines").all("tr"):
        if "finding" in tr.attrs.get("class", ""):
            rows[-1][2].append(tr.text)
        else:
            rows.append((tr.attrs["id"], tr.all("td")[0].text, []))
    return rows


Cells = dict[str, dict[str, tuple[str, str | None]]]


def matrix_table(section: Node) -> tuple[Cells, set[str]]:
    """A matrix: target -> reader -> (the cell's text, the line it links to); and the targets
    highlighted because readers disagree."""
    table = section.one("table", "matrix")
    readers = [th.text for th in table.one("thead").all("th")][1:]
    cells: Cells = {}
    disagree = set()
    for tr in table.one("tbody").all("tr"):
        target = tr.one("th").text
        cells[target] = {r: (td.text, td.href) for r, td in zip(readers, tr.all("td"), strict=True)}
        if "disagree" in tr.attrs.get("class", "").split():
            disagree.add(target)
    return cells, disagree


def field_text(tree: Node, name: str) -> str:
    (found,) = [t for t in tree.all("textarea") if t.attrs["name"] == name]
    return found.text


def error_of(response: httpx.Response, status: int) -> str:
    """The one sentence of an error page, after checking it is one, with no traceback."""
    assert response.status_code == status, (response.status_code, response.text[:2000])
    assert response.headers["content-type"].startswith("text/html")
    assert "Traceback" not in response.text and 'File "' not in response.text
    alert = dom(response.text).one("section", "error")
    assert alert.attrs["role"] == "alert" and alert.one("h2").text.startswith(str(status))
    return alert.one("p").text


# -- the tests -----------------------------------------------------------------------------


def test_it_says_where_it_listens_in_the_json_vocabulary(page: Served) -> None:
    agrees("manners serve", page.first)
    assert page.first["host"] == "127.0.0.1" and page.url == f"http://127.0.0.1:{page.first['port']}/"


@pytest.mark.quick
def test_the_app_answers_in_this_process() -> None:
    """The page's app called here, without a server: the quick tier's test of serve and page
    (the tests around it run ``manners serve`` as a subprocess, which the quick tier cannot see)."""
    settings = build_parser().parse_args(["serve", "--cache", "memory"])

    async def ask() -> httpx.Response:
        app = httpx.ASGITransport(app=make_app(settings))
        async with httpx.AsyncClient(transport=app, base_url="http://127.0.0.1") as client:
            return await client.get("/", params={"draft": DRAFT, "urls": "/private/x\n/open", "agent": "*"})

    answered = asyncio.run(ask())
    assert answered.status_code == 200, answered.text[:2000]
    who, _ = matrix_table(dom(answered.text).one("section", "who"))
    assert who["/private/x"]["*"] == ("NO 4", "#L4") and who["/open"]["*"] == ("yes", None)


def test_the_form_flow_works_without_javascript(page: Served) -> None:
    first = httpx.get(page.url, timeout=10)
    assert first.status_code == 200
    form = dom(first.text).one("form")
    assert (form.attrs["method"], form.attrs["action"]) == ("post", "/")
    assert {n.attrs["name"] for n in form.all("textarea") + form.all("input") + form.all("select")} >= {
        "draft", "live", "agent", "role", "urls", "profile"}  # fmt: skip
    csp = first.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "form-action 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "<script>" not in first.text  # the page's one script is a file, loaded under the CSP

    answered = post(page, draft=DRAFT, urls="/search\n/private/x\n/open", agent="*\nmybot")
    assert answered.status_code == 200, answered.text[:2000]
    tree = dom(answered.text)
    lines = lines_of(tree.one("section", "file"))
    assert [(i, t) for i, t, _ in lines] == [
        (f"L{n}", text) for n, text in enumerate(DRAFT.split("\n")[:-1], 1)
    ]
    under = {i: found for i, _, found in lines}
    assert any("typo" in f and "'Disalow' is read as Disallow" in f for f in under["L3"]), under
    assert not under["L4"] and not under["L7"]

    who, who_disagree = matrix_table(tree.one("section", "who"))  # robots against the URLs
    assert who["/private/x"]["*"] == ("NO 4", "#L4") and who["/private/x"]["mybot"] == ("NO 8", "#L8")
    assert who["/open"]["*"] == ("yes", None) and who["/open"]["mybot"] == ("NO 8", "#L8")
    assert "/open" in who_disagree and "/private/x" not in who_disagree

    (star, star_disagree), (mybot, _) = (matrix_table(s) for s in tree.all("section", "readers"))
    assert star["/private/x"]["RFC 9309"] == ("NO 4", "#L4")
    assert set(star["/private/x"].values()) == {("NO 4", "#L4")}  # every reader, the same line
    assert star_disagree == {"/search"}
    assert star["/open"]["Google"] == ("yes", None)
    search = star["/search"]  # before any group: the Web readers ignore it, Gemini and Gopher do not
    assert search["RFC 9309"] == ("yes", None) and search["1994"] == ("yes", None)
    assert search["Gemini indexer"] == ("NO 1", "#L1") and search["Gopher"] == ("NO 1", "#L1")
    assert mybot["/open"]["RFC 9309"] == ("NO 8", "#L8")
    assert mybot["/private/x"]["Google"] == ("NO 8", "#L8") and mybot["/search"]["1994"] == ("NO 8", "#L8")
    ids = {i for i, _, _ in lines}
    for table in (star, mybot):  # every deciding line a cell links to is a line on the page
        links = {href[1:] for row in table.values() for _, href in row.values() if href}
        assert links and links <= ids

    profiles = tree.one("section", "profiles").one("table")
    assert [th.text for th in profiles.one("thead").all("th")][1:] == [
        "rfc9309", "google", "gemini", "gemini-targeted", "gopher", "1994"]  # fmt: skip


def test_the_answer_has_its_own_get_address(page: Served) -> None:
    query = urlencode({"draft": DRAFT, "urls": "/private/x", "agent": "mybot", "role": "indexer"})
    got = httpx.get(f"{page.url}?{query}", timeout=30)
    assert got.status_code == 200
    tree = dom(got.text)
    matrix, _ = matrix_table(tree.one("section", "readers"))
    assert matrix["/private/x"]["RFC 9309"] == ("NO 8", "#L8")
    assert "mybot with roles indexer" in tree.one("section", "readers").one("h2").text
    link = tree.one("p", "link").one("a").attrs["href"]
    again = httpx.get(page.url.rstrip("/") + link, timeout=30)
    assert again.status_code == 200 and matrix_table(dom(again.text).one("section", "readers"))[0] == matrix


def test_a_live_file_fetched_from_nginx(page: Served, live: str) -> None:
    answered = post(page, live=live, urls=f"{live}private/a\n{live}old\n{live}new")
    assert answered.status_code == 200, answered.text[:2000]
    tree = dom(answered.text)
    section = tree.one("section", "file")
    assert section.one("h2").text == f"{live}robots.txt"
    assert [t for _, t, _ in lines_of(section)] == LIVE.split("\n")[:-1]
    matrix, _ = matrix_table(tree.one("section", "readers"))
    assert matrix[f"{live}private/a"]["RFC 9309"] == ("NO 2", "#L2")
    assert matrix[f"{live}old"]["Google"] == ("NO 3", "#L3")
    assert matrix[f"{live}new"]["RFC 9309"] == ("yes", None)

    loaded = post(page, live=live, do="load")  # the live file into the draft, to edit
    assert field_text(dom(loaded.text), "draft") == "\n" + LIVE  # a lead line feed, as HTML asks
    same = dom(loaded.text).one("section", "diff").one("p", "same").text  # the draft is the live file
    assert same.startswith("no verdict flips: ")


def test_a_draft_against_the_live_file(page: Served, live: str) -> None:
    edited = LIVE.replace("Disallow: /old\n", "Disallow: /new\n")
    answered = post(page, draft=edited, live=live, urls="/private/a\n/old\n/new")
    assert answered.status_code == 200, answered.text[:2000]
    tree = dom(answered.text)
    draft, shown_live = tree.all("section", "file")
    assert [t for _, t, _ in lines_of(draft)] == edited.split("\n")[:-1]
    assert [i for i, _, _ in lines_of(shown_live)] == ["live-L1", "live-L2", "live-L3"]
    assert matrix_table(tree.one("section", "readers"))[0]["/new"]["RFC 9309"] == ("NO 3", "#L3")
    diff = tree.one("section", "diff")
    flips = {}
    for tr in diff.one("table", "flips").one("tbody").all("tr"):
        cells = tr.all("td")
        flips[cells[1].text] = ([td.text for td in cells], [a.attrs["href"] for a in tr.all("a")])
    assert flips == {
        "/old": (["now allowed", "/old", "*", "disallowed (line 3: Disallow: /old)",
                  "allowed (no rule for user-agent * matches)"], ["#live-L3"]),
        "/new": (["now disallowed", "/new", "*", "allowed (no rule for user-agent * matches)",
                  "disallowed (line 3: Disallow: /new)"], ["#L3"]),
    }  # fmt: skip
    assert diff.one("p", "flipped").text == "2 of 3 URLs flip, for 1 of 1 robot"
    changed = diff.one("ul", "groups").text
    assert "- live line 3: Disallow: /old" in changed and "+ draft line 3: Disallow: /new" in changed


def test_a_live_server_that_is_down_is_said_first(page: Served) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}/"
    answered = post(page, live=down)
    assert answered.status_code == 200
    tree = dom(answered.text)
    note = tree.one("section", "file").one("ul", "notes").text
    assert note == (
        f"robots.txt at {down}robots.txt could not be fetched: the connection was refused;"
        " everything is disallowed until it can be"
    )
    verdicts = tree.one("section", "unread").one("tbody").all("tr")
    assert [tr.all("td")[2].text for tr in verdicts] == ["disallowed"]


def test_bad_input_is_a_clear_error_page(page: Served) -> None:
    too_big = httpx.post(page.url, content=b"draft=" + b"x" * (5 << 20), timeout=30,
                         headers={"content-type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert "larger than 4,194,304 bytes" in error_of(too_big, 413)
    said = error_of(post(page, live="ftp://example.org/"), 400)
    assert said == (
        "ftp://example.org/: unknown scheme 'ftp'; manners reads robots.txt for http://, https://,"
        " gemini://, gopher:// URLs"
    )
    assert "is no URL" in error_of(post(page, live="example.org"), 400)
    assert "is neither a URL nor a path" in error_of(post(page, draft=DRAFT, urls="example.org/x"), 400)
    assert "does not start with a product token" in error_of(post(page, draft=DRAFT, agent="42"), 400)
    assert "unknown profile" in error_of(post(page, draft=DRAFT, profile="bing"), 400)
    as_json = httpx.post(page.url, json={"draft": DRAFT}, timeout=10)
    assert error_of(as_json, 415) == (
        "the page takes its form as application/x-www-form-urlencoded, not application/json"
    )
    multipart = httpx.post(page.url, files={"draft": ("robots.txt", DRAFT.encode())}, timeout=10)
    assert "not multipart/form-data" in error_of(multipart, 415)
    assert "unknown field 'x'" in error_of(httpx.get(page.url + "?x=1", timeout=10), 400)
    assert "there is no page at '/nope'" in error_of(httpx.get(page.url + "nope", timeout=10), 404)
    assert "PUT is not how" in error_of(httpx.put(page.url, content=b"", timeout=10), 405)
    # a page elsewhere cannot use it: not by DNS rebinding, nor by posting to it
    rebound = httpx.get(page.url, headers={"host": "evil.example"}, timeout=10)
    assert "not 'evil.example'" in error_of(rebound, 400)
    across = httpx.post(
        page.url, data={"draft": DRAFT}, headers={"origin": "http://evil.example"}, timeout=10
    )
    assert "another site" in error_of(across, 403)
    # the form is given back as it was sent, to be corrected
    kept = dom(post(page, draft=DRAFT, urls="example.org/x").text)
    assert field_text(kept, "draft") == "\n" + DRAFT and field_text(kept, "urls") == "\nexample.org/x"


def test_everything_shown_is_escaped(page: Served) -> None:
    hostile = 'User-agent: *\nDisallow: /<script>alert(1)</script>\nDisallow: /"onmouseover="x\x1b]0;t\x07\n'
    answered = post(page, draft=hostile, urls="/<b>x</b>")
    assert answered.status_code == 200
    assert "<script>alert" not in answered.text and "<b>x</b>" not in answered.text
    escaped = hostile.replace("<", "&lt;").replace(">", "&gt;")
    editable = f'<textarea id="draft" name="draft" rows="14" spellcheck="false">\n{escaped}</textarea>'
    assert editable in answered.text  # the draft to edit: as it was typed, only <&> escaped
    shown = answered.text.replace(editable, "")
    assert "\x1b" not in shown and "\x07" not in shown  # everywhere else: escaped
    texts = [t for _, t, _ in lines_of(dom(answered.text).one("section", "file"))]
    assert texts[1] == "Disallow: /<script>alert(1)</script>"  # shown as text, as it is written
    assert texts[2] == 'Disallow: /"onmouseover="x\\x1b]0;t\\x07'  # controls as the terminal shows them


def test_it_binds_loopback_only_unless_told(page: Served, tmp_path: Path) -> None:
    def listening(port: int) -> set[str]:
        found = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for row in Path(table).read_text().splitlines()[1:]:
                local, state = row.split()[1], row.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    found.add(local.rsplit(":", 1)[0])
        return found

    assert listening(int(str(page.first["port"]))) == {"0100007F"}  # 127.0.0.1 and nothing else
    other = serve(tmp_path, "--port", "0", "--host", "127.0.0.2", "--cache", "memory")
    try:
        assert listening(int(str(other.first["port"]))) == {"0200007F"}
        assert httpx.get(other.url, timeout=10).status_code == 200  # the host it was told to serve
        assert httpx.get(other.url, headers={"host": "evil.example"}, timeout=10).status_code == 400
    finally:
        assert stop(other.proc) in (0, 130, -signal.SIGINT)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        p = subprocess.run(
            [str(ENTRY), "serve", "--port", str(port)], capture_output=True, text=True, timeout=30
        )
    assert p.returncode == 2 and p.stdout == ""
    assert (
        p.stderr
        == f"manners: cannot listen on 127.0.0.1 port {port}: Address already in use; choose another --port\n"
    )


CHROMIUM = shutil.which("chromium")


def test_a_browser_shows_the_matrix(page: Served) -> None:
    """Chromium, headless, loads the answer's GET address; the DOM it built has the matrix and
    the file's lines, and it reported no Content-Security-Policy refusal of the page's own parts."""
    assert CHROMIUM is not None, "chromium is not installed (apt-get install chromium)"
    query = urlencode({"draft": DRAFT, "urls": "/search\n/private/x", "agent": "*"})
    p = subprocess.run(
        [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0",
         "--dump-dom", f"{page.url}?{query}#L4"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    tree = dom(p.stdout)
    matrix, disagree = matrix_table(tree.one("section", "readers"))
    assert matrix["/private/x"]["Gemini-targeted webproxy"] == ("NO 4", "#L4")
    assert disagree == {"/search"}
    assert [i for i, _, _ in lines_of(tree.one("section", "file"))][:4] == ["L1", "L2", "L3", "L4"]
    assert "Content Security Policy" not in p.stderr, p.stderr[-3000:]


def test_the_server_audited_and_its_urls_sampled(page: Served, live: str) -> None:
    """manners site's audit on the page, its sample of the server's URLs the matrix's rows."""
    answered = post(page, live=live, sample="5", audit="on", agent="mybot")
    assert answered.status_code == 200, answered.text[:2000]
    tree = dom(answered.text)
    site = tree.one("section", "site")
    assert site.all("h2")[0].text == "How the server speaks to robots"
    assert "the server's answers break no rule the audit checks" in site.text  # nginx serves it right
    who, _ = matrix_table(tree.one("section", "who"))
    assert who[f"{live}private/b.html"]["mybot"] == ("NO 2", "#L2")
    assert who[f"{live}a.html"]["mybot"] == ("yes", None)
    served, _ = matrix_table(site.one("section", "served"))
    assert served[f"{live}private/b.html"]["mybot"] == ("NO 2", "#L2")
    said = error_of(post(page, draft=DRAFT, sample="5"), 400)
    assert said == "auditing or sampling a server needs its URL: give the live URL"
    assert "give a number of pages from 0 to 50" in error_of(post(page, live=live, sample="500"), 400)


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
    JSON messages ended by NUL on fds 3 and 4), JavaScript off in the page: it is typed into and
    clicked as a person does, so what it shows is what the page does without script."""

    def __init__(self, chromium: str, profile: Path) -> None:
        to_chrome, self._in = os.pipe()
        self._out, from_chrome = os.pipe()
        launch = (
            "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4);"
            " os.execv(sys.argv[3], sys.argv[3:])"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", launch, str(to_chrome), str(from_chrome), chromium, "--headless",
             "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe", f"--user-data-dir={profile}",
             "about:blank"],
            pass_fds=(to_chrome, from_chrome), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []  # not yet waited for
        self.log: list[dict[str, Any]] = []  # every event, in order
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "DOM", "CSS", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setScriptExecutionDisabled", session=True, value=True)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            with selectors.DefaultSelector() as sel:
                sel.register(self._out, selectors.EVENT_READ)
                if left <= 0 or not sel.select(left):
                    raise AssertionError("Chromium did not answer in time")
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                raise AssertionError(f"Chromium went away (status {self.proc.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        found: dict[str, Any] = json.loads(message)
        if "method" in found:
            self.log.append(found)
        return found

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._in, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 30
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                assert "error" not in reply, (method, reply["error"])
                result: dict[str, Any] = reply["result"]
                return result
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The first event ``method`` not yet waited for (earlier ones are kept in order)."""
        deadline = time.monotonic() + 30
        while True:
            for n, event in enumerate(self.events):
                if event.get("method") == method:
                    del self.events[: n + 1]
                    return event
            self.events.append(self._read(deadline))

    def go(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")

    def request_events(self, request: str, *methods: str) -> dict[str, dict[str, Any]]:
        """The events ``methods`` about one request, by method, waiting for those still to come
        (Chromium sends the ExtraInfo ones from its network process, possibly after the load)."""
        deadline = time.monotonic() + 30
        while True:
            found = {e["method"]: e["params"] for e in self.log if e["params"].get("requestId") == request}
            if all(m in found for m in methods):
                return found
            self.events.append(self._read(deadline))

    def node(self, selector: str) -> int:
        root = self.call("DOM.getDocument", session=True, depth=0)["root"]["nodeId"]
        found: int = self.call("DOM.querySelector", session=True, nodeId=root, selector=selector)["nodeId"]
        assert found, f"no {selector} on the page"
        return found

    def type_into(self, selector: str, text: str) -> None:
        self.call("DOM.focus", session=True, nodeId=self.node(selector))
        self.call("Input.insertText", session=True, text=text)

    def click(self, selector: str) -> None:
        node = self.node(selector)
        self.call("DOM.scrollIntoViewIfNeeded", session=True, nodeId=node)
        quad = self.call("DOM.getBoxModel", session=True, nodeId=node)["model"]["content"]
        x, y = (quad[0] + quad[4]) / 2, (quad[1] + quad[5]) / 2
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button="left", clickCount=1
            )

    def html(self) -> str:
        root = self.call("DOM.getDocument", session=True, depth=0)["root"]["nodeId"]
        text: str = self.call("DOM.getOuterHTML", session=True, nodeId=root)["outerHTML"]
        return text

    def style(self, selector: str, name: str) -> str:
        computed = self.call("CSS.getComputedStyleForNode", session=True, nodeId=self.node(selector))
        return next(p["value"] for p in computed["computedStyle"] if p["name"] == name)

    def url(self) -> str:
        history = self.call("Page.getNavigationHistory", session=True)
        found: str = history["entries"][history["currentIndex"]]["url"]
        return found

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._in, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._in)
        os.close(self._out)


def test_a_browser_without_javascript_posts_the_form_and_follows_a_cell_to_its_line(
    page: Served, tmp_path: Path
) -> None:
    """The main flow in a real browser with JavaScript off: type a draft and URLs, click Answer;
    the form posts (same origin: accepted), the answer has the matrix, the stylesheet loaded
    under the CSP, and clicking a cell lights its deciding line by CSS ``:target`` alone."""
    assert CHROMIUM is not None, "chromium is not installed (apt-get install chromium)"
    browser = Browser(CHROMIUM, tmp_path / "chromium")
    try:
        browser.go(page.url)
        browser.type_into("#draft", DRAFT)
        browser.type_into("#urls", "/search\n/private/x")
        browser.events.clear()
        browser.log.clear()
        browser.click('button[value="answer"]')
        browser.wait_for("Page.loadEventFired")
        sent = [e["params"]["request"] for e in browser.log if e["method"] == "Network.requestWillBeSent"]
        got = [e["params"]["response"] for e in browser.log if e["method"] == "Network.responseReceived"]
        assert [(r["method"], r["url"]) for r in sent if r["url"] == page.url] == [("POST", page.url)]
        assert [r["status"] for r in got if r["url"] == page.url] == [200]
        tree = dom(browser.html())
        who, _ = matrix_table(tree.one("section", "who"))
        assert who["/private/x"]["*"] == ("NO 4", "#L4")
        assert browser.style("#L4", "background-color") == "rgba(0, 0, 0, 0)"  # not lit yet
        browser.click('section.who a[href="#L4"]')
        deadline = time.monotonic() + 10  # the click's navigation ends after the call returns
        while not browser.url().endswith("#L4") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert browser.url().endswith("#L4")
        assert browser.style("#L4", "background-color") == "rgb(255, 226, 122)"  # :target, page.css
        assert browser.style("#L3", "background-color") == "rgba(0, 0, 0, 0)"
    finally:
        browser.close()


def test_a_live_gemini_file_is_read_as_gemini(page: Served, tmp_path: Path) -> None:
    """A gemini:// live URL: fetched over TLS from jetforce, read under the gemini profile (its
    Virtual-agent groups), as every command reads a gemini:// source."""
    (tmp_path / "robots.txt").write_text(
        "User-agent: *\nDisallow: /private\n\nVirtual-agent: archiver\nDisallow: /\n"
    )
    with jetforce(tmp_path) as port:
        live = f"gemini://localhost:{port}/"
        answered = post(page, live=live, urls="/log/\n/private/x", role="archiver")
    assert answered.status_code == 200, answered.text[:2000]
    tree = dom(answered.text)
    section = tree.one("section", "file")
    assert section.one("h2").text == f"{live}robots.txt"
    assert "read as gemini:" in section.text
    who, _ = matrix_table(tree.one("section", "who"))
    assert who["/log/"]["*"] == ("yes", None) and who["/log/"]["archiver"] == ("NO 5", "#L5")


# -- a live file with controls, bidi and bytes that are not UTF-8: the draft keeps them ------

# ESC and BEL in rules, a RIGHT-TO-LEFT OVERRIDE, a byte that is not UTF-8 (Latin-1 é) and a NUL:
# each changes what a rule matches, so a draft that lost or escaped one would show rules changed
HOSTILE_LIVE = (
    b"User-agent: *\n"
    b"Disallow: /a\x1bb\n"
    b"Disallow: /bell\x07\n"
    b"Disallow: /\xe2\x80\xaeevil\n"
    b"Disallow: /caf\xe9\n"
    b"Disallow: /nul\x00x\n"
    b"\n"
    b"User-agent: mybot\n"
    b"Disallow: /private\n"
)
HOSTILE_SHOWN = [  # the read-only view of the file: every unsafe character as an escape
    "User-agent: *",
    "Disallow: /a\\x1bb",
    "Disallow: /bell\\x07",
    "Disallow: /\\u202eevil",
    "Disallow: /caf\\xe9",
    "Disallow: /nul\\x00x",
    "",
    "User-agent: mybot",
    "Disallow: /private",
]


@contextlib.contextmanager
def hostile_live(root: Path) -> Iterator[str]:
    (root / "robots.txt").write_bytes(HOSTILE_LIVE)
    with nginx(["location = /robots.txt { default_type text/plain; }"], root) as (port,):
        yield f"http://127.0.0.1:{port}/"


def unchanged(tree: Node) -> None:
    """The answer says the draft is the live file: no group or rule changed, no verdict flips;
    and its read-only views (the draft's lines and the live file's) show the escapes."""
    diff = tree.one("section", "diff")
    assert diff.all("ul", "groups") == [] and diff.all("table", "flips") == [], diff.text
    assert "no group or rule changed" in diff.text
    assert diff.one("p", "same").text.startswith("no verdict flips: ")
    draft, live = tree.all("section", "file")
    assert [t for _, t, _ in lines_of(draft)] == HOSTILE_SHOWN
    assert [t for _, t, _ in lines_of(live)] == HOSTILE_SHOWN


def test_the_live_file_loaded_into_the_draft_comes_back_unchanged(page: Served, tmp_path: Path) -> None:
    """Load the live file (controls, a bidi override, a byte that is not UTF-8, a NUL), post
    the form back as a browser does (the textarea's text, CR LF line ends, the hidden fields):
    the answer shows no change and no flip; the textarea held the characters themselves, the
    read-only views their escapes."""
    with hostile_live(tmp_path) as live:
        loaded = post(page, live=live, do="load")
        assert loaded.status_code == 200, loaded.text[:2000]
        tree = dom(loaded.text)
        unchanged(tree)
        text = field_text(tree, "draft")
        assert text.startswith("\n")  # HTML drops the line feed right after <textarea>
        typed = text[1:]
        assert "\x1b" in typed and "\x07" in typed and "\u202e" in typed  # the characters, editable
        assert "\\x1b" not in typed and "\\u202e" not in typed  # not their escapes
        assert "caf\ufffd" in typed and "nul\ufffdx" in typed  # what no page can carry, as U+FFFD ...
        (kept,) = [i.attrs["value"] for i in tree.all("input") if i.attrs.get("name") == "kept"]
        assert "%E9" in kept and "%00" in kept  # ... and the bytes themselves beside it
        sent = {"draft": typed.replace("\n", "\r\n"), "kept": kept, "live": live, "do": "answer"}
        answered = post(page, **sent)
        assert answered.status_code == 200, answered.text[:2000]
        unchanged(dom(answered.text))
        assert "\x1b" not in answered.text.replace(f">\n{typed}</textarea>", "")  # raw only in the textarea

        # an edited draft is taken as typed: the kept bytes no longer stand for it
        edited = post(page, **{**sent, "draft": sent["draft"] + "Disallow: /new\r\n"})
        changed = dom(edited.text).one("section", "diff").one("ul", "groups").text
        assert "+ draft line 10: Disallow: /new" in changed
        assert "- live line 5: Disallow: /caf\\xe9" in changed  # the byte, lost by the edit: said
        assert "+ draft line 5: Disallow: /caf\ufffd" in changed


def test_a_browser_loads_the_live_file_and_answers_it_unchanged(page: Served, tmp_path: Path) -> None:
    """The same in real Chromium (JavaScript off): type the live URL, click "Load the live file
    into the draft", then Answer: no change, no flip."""
    assert CHROMIUM is not None, "chromium is not installed (apt-get install chromium)"
    browser = Browser(CHROMIUM, tmp_path / "chromium")
    try:
        with hostile_live(tmp_path) as live:
            browser.go(page.url)
            browser.type_into("#live", live)
            browser.events.clear()
            browser.click('button[value="load"]')
            browser.wait_for("Page.loadEventFired")
            unchanged(dom(browser.html()))
            browser.events.clear()
            browser.log.clear()
            browser.click('button[value="answer"]')
            browser.wait_for("Page.loadEventFired")
            sent = [e["params"]["request"] for e in browser.log if e["method"] == "Network.requestWillBeSent"]
            assert [(r["method"], r["url"]) for r in sent if r["url"] == page.url] == [("POST", page.url)]
            unchanged(dom(browser.html()))
    finally:
        browser.close()


# -- another site's page cannot make the page fetch -----------------------------------------


def test_another_sites_page_cannot_make_it_fetch(page: Served, tmp_path: Path) -> None:
    """Real Chromium (JavaScript off) visits a page on another origin holding an ``<img>`` whose
    address asks the page to fetch and audit a live server, and a form that posts to it: the
    target nginx logs nothing (the page refused both with a 403, before any fetch).  From
    ``localhost`` the page is cross-site, from another port of 127.0.0.1 same-site: both are
    refused.  Typing the address into the browser (direct navigation) fetches, and so does
    curl's way (no Sec-Fetch-Site)."""
    assert CHROMIUM is not None, "chromium is not installed (apt-get install chromium)"
    root = tmp_path / "www"
    root.mkdir()
    (root / "robots.txt").write_text(LIVE)
    (root / "index.html").write_text(HOME)
    target_log = tmp_path / "target.log"
    blocks = [
        f"access_log {target_log}; location = /robots.txt {{ default_type text/plain; }}",
        f"access_log {tmp_path / 'elsewhere.log'};",
    ]
    with nginx(blocks, root) as (port, elsewhere):
        live = f"http://127.0.0.1:{port}/"
        asked = f"{page.url}?{urlencode({'live': live, 'audit': 'on'})}"
        (root / "evil.html").write_text(
            f'<!doctype html><html><body><img src="{html.escape(asked)}" alt="">'
            f'<form method="post" action="{page.url}"><input type="hidden" name="live" value="{live}">'
            '<input type="hidden" name="audit" value="on">'
            '<button id="go" type="submit" name="do" value="load">go</button></form></body></html>\n'
        )

        def requests() -> list[str]:
            return target_log.read_text().splitlines() if target_log.exists() else []

        browser = Browser(CHROMIUM, tmp_path / "chromium")
        try:
            for origin, site in ((f"http://localhost:{elsewhere}", "cross-site"),
                                 (f"http://127.0.0.1:{elsewhere}", "same-site")):  # fmt: skip
                browser.log.clear()
                browser.go(f"{origin}/evil.html")
                sent = [
                    e["params"] for e in browser.log if e["method"] == "Network.requestWillBeSent"
                    and e["params"]["request"]["url"] == asked
                ]  # fmt: skip
                assert len(sent) == 1, [e["method"] for e in browser.log]  # the image was asked for
                about = browser.request_events(
                    sent[0]["requestId"],
                    "Network.requestWillBeSentExtraInfo",
                    "Network.responseReceivedExtraInfo",
                )
                headers = {
                    k.lower(): v for k, v in about["Network.requestWillBeSentExtraInfo"]["headers"].items()
                }
                assert headers["sec-fetch-site"] == site  # as Chromium tells where the request came from
                assert about["Network.responseReceivedExtraInfo"]["statusCode"] == 403  # refused by the page
                browser.events.clear()
                browser.click("#go")  # the cross-site form
                browser.wait_for("Page.loadEventFired")
                refused = dom(browser.html()).one("section", "error")
                assert refused.one("h2").text == "403 Forbidden"
                assert f"(Sec-Fetch-Site: {site}) is refused" in refused.one("p").text
                assert requests() == [], requests()  # nothing reached the target server

            browser.go(asked)  # typed into the address bar: Sec-Fetch-Site: none
            tree = dom(browser.html())
            assert tree.one("section", "file").one("h2").text == f"{live}robots.txt"
            assert tree.one("section", "site").all("h2")[0].text == "How the server speaks to robots"
            fetched = requests()
            assert any('"GET /robots.txt ' in line for line in fetched), fetched
        finally:
            browser.close()

        before = len(requests())
        direct = httpx.get(asked, timeout=60)  # as curl asks: no Sec-Fetch-Site at all
        assert direct.status_code == 200 and len(requests()) > before
        # the same address asked with another site's header is refused, and fetches nothing
        n = len(requests())
        across = httpx.get(asked, headers={"sec-fetch-site": "cross-site"}, timeout=60)
        assert "(Sec-Fetch-Site: cross-site) is refused" in error_of(across, 403)
        assert "live" in {i.attrs.get("name") for i in dom(across.text).all("input")}  # the form, to ask it
        answered_draft = httpx.get(
            f"{page.url}?{urlencode({'draft': DRAFT})}", headers={"sec-fetch-site": "cross-site"}, timeout=30
        )
        assert answered_draft.status_code == 200  # a draft alone fetches nothing: answered
        assert len(requests()) == n
