"""``manners watch`` on the logs real servers wrote: jetforce, gophernicus and nginx on loopback,
visited by a polite robot (``manners crawl --role indexer``; on the Web, which manners does not
crawl, a hand-written client that reads robots.txt first and keeps Crawl-delay) and by
purpose-written rude clients, each from its own loopback address (all of 127/8 is loopback):

- 127.0.0.2 never reads robots.txt: it runs through pages faster than a person and asks for two
  that ``Disallow: /private`` (line 2) forbids;
- 127.0.0.3 reads robots.txt and ignores its ``Crawl-delay: 3``;
- 127.0.0.4 reads robots.txt, which is then edited (``Disallow: /late`` added as line 3), and asks
  for a /late page: it never fetched the edit, so it must not be charged;
- 127.0.0.5 reads the edited robots.txt and asks for a /late page all the same.

Then ``manners watch LOG --robots old --robots new@EDIT`` on the log the server wrote: exactly
the rude ones are named, each with the right rule, line and count, and no polite client is charged.

And ``manners watch LOG --follow --json`` as the admin runs it, a process of its own, on a log
the test writes as a server does: appended, rotated by rename under it (written to a moment
longer, as a server does before it reopens its log), a new log begun; each verdict that changes
said as a JSON line as it happens, and at SIGTERM the whole report with every request counted
exactly once, exit status 1, no traceback.
"""

from __future__ import annotations

import json
import math
import os
import queue
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from manners.watch.clients import PERSON_REQUESTS
from servers import HOST, gophernicus, jetforce, nginx

OLD = "User-agent: *\nDisallow: /private\nCrawl-delay: 3\n"
NEW = "User-agent: *\nDisallow: /private\nDisallow: /late\nCrawl-delay: 3\n"
CRAWLER, NO_ROBOTS, NO_DELAY, BEFORE_EDIT, AFTER_EDIT = (f"127.0.0.{n}" for n in range(1, 6))
PAGES = [f"/p{n}.txt" for n in range(4)]
SRC = Path(__file__).resolve().parents[1] / "src"

Ask = Callable[[str, str], None]  # (source address, path): one request, its answer read through


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def site(root: Path, gemini: bool) -> Path:
    root.mkdir()
    (root / "robots.txt").write_text(OLD)
    for sub in ("private", "late"):
        (root / sub).mkdir()
        (root / sub / "x.txt").write_text("x\n")
    for page in PAGES:
        (root / page[1:]).write_text("page\n")
    if gemini:
        links = "".join(f"=> {p}\n" for p in [*PAGES, "/private/x.txt", "/late/x.txt"])
        (root / "index.gmi").write_text("# Home\n" + links)
    return root


def connect(source: str, port: int) -> socket.socket:
    return socket.create_connection((HOST, port), timeout=10, source_address=(source, 0))


def drain(sock: socket.socket | ssl.SSLSocket) -> None:
    while sock.recv(65536):
        pass


def gemini_asker(port: int) -> Ask:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def ask(source: str, path: str) -> None:
        with connect(source, port) as sock, context.wrap_socket(sock, server_hostname="localhost") as tls:
            tls.sendall(f"gemini://localhost:{port}{path}\r\n".encode())
            drain(tls)

    return ask


def gopher_asker(port: int) -> Ask:
    def ask(source: str, path: str) -> None:
        with connect(source, port) as sock:
            sock.sendall(path.encode() + b"\r\n")
            drain(sock)

    return ask


def web_asker(port: int) -> Ask:
    def ask(source: str, path: str) -> None:
        agent = "Politebot/1.0" if source == CRAWLER else "Rudebot/1.0"
        with connect(source, port) as sock:
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: localhost\r\nUser-Agent: {agent}\r\n\r\n".encode())
            drain(sock)

    return ask


def crawl(seed: str, out: Path) -> None:
    """The polite robot: manners' own crawler, as an indexer."""
    cmd = [sys.executable, "-m", "manners", "crawl", seed, "--agent", "politebot", "--role", "indexer",
           "--out", str(out), "--cache", "memory", "--max-pages", "4", "--timeout", "10"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(SRC), "XDG_CACHE_HOME": str(out / "cache")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def polite_by_hand(ask: Ask) -> None:
    """A polite robot where manners does not crawl (the Web): robots.txt first, then 3 s apart."""
    ask(CRAWLER, "/robots.txt")
    for page in PAGES[:2]:
        time.sleep(3.2)
        ask(CRAWLER, page)


def visit(root: Path, ask: Ask, polite: Callable[[], None], kind: str) -> float:
    """Everyone's visits, in order; the moment of the edit."""
    polite()
    for n in range(PERSON_REQUESTS[kind] + 1):  # a robot by its pace, that never read robots.txt
        ask(NO_ROBOTS, PAGES[n % len(PAGES)])
    ask(NO_ROBOTS, "/private/x.txt")
    ask(NO_ROBOTS, "/private/x.txt")
    ask(NO_DELAY, "/robots.txt")
    for page in PAGES:  # all at once: 3 of them closer than the 3 s asked
        ask(NO_DELAY, page)
    ask(BEFORE_EDIT, "/robots.txt")
    time.sleep(1.1)
    edit = time.time()
    (root / "robots.txt").write_text(NEW)
    time.sleep(1.1)
    ask(AFTER_EDIT, "/robots.txt")
    time.sleep(3.2)  # Crawl-delay kept: only the edit can be held against either
    ask(BEFORE_EDIT, "/late/x.txt")
    ask(AFTER_EDIT, "/late/x.txt")
    return edit


def settle(log: Path, last: str) -> None:
    """Wait until the server has written the last request (servers write after answering)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if log.exists() and any(AFTER_EDIT in line and last in line for line in log.read_text().splitlines()):
            return
        time.sleep(0.05)
    raise AssertionError(f"{log} never logged {last} for {AFTER_EDIT}")


def watch(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "250"}
    done = subprocess.run([sys.executable, "-m", "manners", "watch", *args], capture_output=True, text=True,
                          env=env, timeout=120)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done


def lines_of(log: Path, client: str, path: str) -> list[int]:
    """The numbers of the log's lines that hold a request of ``client`` for ``path``."""
    return [n for n, line in enumerate(log.read_text().splitlines(), 1) if client in line and path in line]


def judged(log: Path, root: Path, edit: float, since: float) -> dict[str, Any]:
    old, new = root.parent / "old.txt", root.parent / "new.txt"
    old.write_text(OLD)
    new.write_text(NEW)
    args = [str(log), "--robots", str(old), "--robots", f"{new}@{rfc3339(edit)}", "--since", rfc3339(since)]
    table = watch(*args)
    assert table.returncode == 1, table.stdout + table.stderr
    rude = [line for line in table.stdout.splitlines() if line.startswith("! ")]
    assert sorted(line.split()[1] for line in rude) == [NO_ROBOTS, NO_DELAY, AFTER_EDIT], table.stdout
    [no_robots] = [line for line in rude if line.split()[1] == NO_ROBOTS]
    assert "line 2: 2 requests" in no_robots
    done = watch(*args, "--json")
    assert done.returncode == 1, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def check(data: dict[str, Any], log: Path, edit: float, web: bool = False) -> None:
    by = {r["client"]: r for r in data["robots"]}
    impolite = sorted(c for c, r in by.items() if r["verdict"] == "impolite")
    assert impolite == [NO_ROBOTS, NO_DELAY, AFTER_EDIT], data["robots"]
    assert data["impolite"] == 3
    for polite in (CRAWLER, BEFORE_EDIT):
        assert by[polite]["verdict"] == "polite" and by[polite]["charged"] == 0, by[polite]
        assert all(p["closer"] == 0 for p in by[polite]["pacing"]), by[polite]
    assert by[BEFORE_EDIT]["breaches"] == []  # the edit it never fetched is not held against it

    rude = by[NO_ROBOTS]
    assert rude["robots_fetches"] == 0 and rude["robot_because"].startswith("it made more than")
    [breach] = [b for b in rude["breaches"] if b["rule"] == "disallowed"]
    assert (breach["agent"], breach["line"], breach["requests"], breach["version"]) == ("*", 2, 2, None)
    assert [e["line"] for e in breach["examples"]] == lines_of(log, NO_ROBOTS, "/private/x.txt")
    assert all(e["file"] == str(log) for e in breach["examples"])

    hasty = by[NO_DELAY]
    assert hasty["charged"] == 0 and hasty["robots_first"]
    [pacing] = hasty["pacing"]
    assert (pacing["asked"], pacing["closer"], pacing["requests"]) == (3.0, 3, 4)
    assert hasty["reasons"] == [f"closer than the 3 s asked at {pacing['host'] or 'the site'}: 3 requests"]

    late = by[AFTER_EDIT]
    [breach] = late["breaches"]
    assert (breach["agent"], breach["line"], breach["requests"]) == ("*", 3, 1)
    assert (
        breach["version"] == datetime.fromtimestamp(edit, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"
    )
    assert [e["line"] for e in breach["examples"]] == lines_of(log, AFTER_EDIT, "/late/x.txt")
    if web:
        assert {r["token"] for r in data["robots"]} == {"politebot", "rudebot"}


def start_line() -> float:
    """The next whole second, once it has come: --since from it leaves the servers' readiness
    probes (asked for the root from 127.0.0.1, the crawler's address) out of the judging."""
    since = math.ceil(time.time()) + 1.0
    time.sleep(since - time.time())
    return since


def test_jetforce(tmp_path: Path) -> None:
    root = site(tmp_path / "root", gemini=True)
    log = tmp_path / "access.log"
    with jetforce(root, log=log) as port:
        since = start_line()
        ask = gemini_asker(port)
        edit = visit(root, ask, lambda: crawl(f"gemini://localhost:{port}/", tmp_path / "crawl"), "gemini")
        settle(log, "/late/x.txt")
        url = f"gemini://localhost:{port}/"
        live = watch(str(log), "--site", url, "--cache", "memory", "--timeout", "10",
                     "--since", rfc3339(since), "--json")  # fmt: skip
    data = judged(log, root, edit, since)
    check(data, log, edit)
    assert data["logs"][0]["format"] == "jetforce"
    # --site: the live file (the edited one) is the only version, fetched by manners' own fetcher
    assert live.returncode == 1, live.stderr
    fetched = json.loads(live.stdout)
    assert fetched["versions"] == [{"robots": f"gemini://localhost:{port}/robots.txt", "since": None}]
    by = {r["client"]: r for r in fetched["robots"]}
    [breach] = by[NO_ROBOTS]["breaches"]
    assert (breach["line"], breach["requests"]) == (2, 2)
    crawler = {r["client"]: r for r in data["robots"]}[CRAWLER]
    assert crawler["robots_first"] and crawler["requests"] >= 3  # robots.txt, the index, pages


def test_gophernicus(tmp_path: Path) -> None:
    root = site(tmp_path / "root", gemini=False)
    log = tmp_path / "gophernicus.log"
    with gophernicus(root, options=["-l", str(log)]) as port:
        since = start_line()
        ask = gopher_asker(port)
        edit = visit(root, ask, lambda: crawl(f"gopher://{HOST}:{port}/", tmp_path / "crawl"), "gopher")
        settle(log, "/late/x.txt")
    data = judged(log, root, edit, since)
    check(data, log, edit)
    assert data["logs"][0]["format"] == "gophernicus"


def test_nginx(tmp_path: Path) -> None:
    root = site(tmp_path / "root", gemini=False)
    log = tmp_path / "access.log"
    with nginx([f"access_log {log} combined;"], root) as ports:
        since = start_line()
        ask = web_asker(ports[0])
        edit = visit(root, ask, lambda: polite_by_hand(ask), "web")
        settle(log, "/late/x.txt")
    data = judged(log, root, edit, since)
    check(data, log, edit, web=True)
    assert data["logs"][0]["format"] == "combined"


def jetforce_line(client: str, t: float, path: str) -> str:
    stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(t))
    return f'{client} [{stamp}] "gemini://localhost{path}" 20 "text/gemini" 10\n'


class Followed:
    """``manners watch ... --follow --json`` running, its stdout read line by line by a thread."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "manners", "watch", *args, "--follow", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.put(line)

    def next_change(self, timeout: float = 20.0) -> dict[str, Any]:
        """The next JSON line printed: a change."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(
                f"no change said in {timeout} s; stderr: {self.proc.communicate()[1]}"
            ) from None
        data: dict[str, Any] = json.loads(line)
        assert "change" in data, data
        return data

    def stop(self) -> tuple[int, list[dict[str, Any]], str]:
        """SIGTERM: the exit status, the JSON lines still to come, stderr."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        assert self.proc.stderr is not None
        err = self.proc.stderr.read()
        time.sleep(0.2)  # the reader thread has the last lines
        rest = []
        while not self.lines.empty():
            rest.append(json.loads(self.lines.get()))
        return code, rest, err


def test_follow_through_rotation_says_each_change_and_counts_every_request_once(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /private\n")  # line 2
    log, nft = tmp_path / "access.log", tmp_path / "impolite.nft"
    polite, rude, late = "192.0.2.1", "192.0.2.2", "192.0.2.3"  # late: impolite only after rotation
    t = 1795950837.0
    log.write_text("".join(jetforce_line(c, t, "/robots.txt") for c in (polite, rude, late)))  # lines 1-3
    watching = Followed(str(log), "--robots", str(robots), "--nft", str(nft))

    def append(path: Path, *requests: tuple[str, float, str]) -> None:
        with path.open("a") as f:
            f.write("".join(jetforce_line(*r) for r in requests))

    append(log, (polite, t + 10, "/a"), (rude, t + 11, "/private/1"), (late, t + 12, "/c"))  # lines 4-6
    change = watching.next_change()
    assert (change["change"], change["robot"]["client"], change["robot"]["charged"]) == ("impolite", rude, 1)
    assert change["robot"]["verdict"] == "impolite" and change["robot"]["requests"] == 2
    assert [e["line"] for e in change["robot"]["breaches"][0]["examples"]] == [5]

    append(log, (polite, t + 20, "/b"), (rude, t + 21, "/private/2"))  # lines 7-8
    change = watching.next_change()
    assert (change["change"], change["robot"]["client"], change["robot"]["charged"]) == ("charged", rude, 2)

    # logrotate: renamed, and the server writes once more to the renamed file before it reopens
    log.rename(tmp_path / "access.log.1")
    append(tmp_path / "access.log.1", (polite, t + 30, "/d"))  # line 9 of the log it was
    time.sleep(0.6)  # a poll or two with no access.log at all
    append(log, (late, t + 40, "/private/x"), (polite, t + 41, "/e"), (rude, t + 42, "/f"))  # new: 1-3
    change = watching.next_change()
    assert (change["change"], change["robot"]["client"], change["robot"]["charged"]) == ("impolite", late, 1)
    [breach] = change["robot"]["breaches"]
    assert [(e["file"], e["line"], e["url"]) for e in breach["examples"]] == [
        (str(log), 1, "gemini://localhost/private/x")
    ]
    assert "impolite4" in nft.read_text() and late in nft.read_text()

    code, rest, err = watching.stop()
    assert code == 1, err
    assert "Traceback" not in err and err == "", err
    [report] = rest  # no change more: the whole report
    assert "change" not in report and report["impolite"] == 2
    by = {r["client"]: r for r in report["robots"]}
    counts = {c: (by[c]["requests"], by[c]["charged"], by[c]["verdict"]) for c in by}
    assert counts == {polite: (5, 0, "polite"), rude: (4, 2, "impolite"), late: (3, 1, "impolite")}
    assert report["logs"] == [
        {"path": str(log), "format": "jetforce", "lines": 12, "requests": 12, "noise": 0, "unparsed": 0,
         "overlong": 0}
    ]  # fmt: skip
    text = nft.read_text()
    assert rude in text and late in text and polite not in text


@pytest.fixture(autouse=True)
def _loopback_block() -> None:
    """The rude clients need addresses of their own: 127.0.0.2 to .5 must be bindable."""
    for n in range(2, 6):
        with socket.socket() as s:
            s.bind((f"127.0.0.{n}", 0))
