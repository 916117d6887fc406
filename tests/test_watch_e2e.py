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
"""

from __future__ import annotations

import json
import math
import os
import socket
import ssl
import subprocess
import sys
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


@pytest.fixture(autouse=True)
def _loopback_block() -> None:
    """The rude clients need addresses of their own: 127.0.0.2 to .5 must be bindable."""
    for n in range(2, 6):
        with socket.socket() as s:
            s.bind((f"127.0.0.{n}", 0))
