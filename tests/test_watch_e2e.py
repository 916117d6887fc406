"""``manners watch`` on the logs real servers wrote: jetforce, molly-brown, agate, gophernicus,
pygopherd and nginx on loopback, visited by a polite robot (``manners crawl --role indexer``; on
the Web, which manners does not crawl, a hand-written client that reads robots.txt first and
keeps Crawl-delay) and by purpose-written rude clients, each from its own loopback address (all
of 127/8 is loopback; every one of these servers logs the address a client came from):

- 127.0.0.2 never reads robots.txt: it runs through pages faster than a person and asks for two
  that ``Disallow: /private`` (line 2) forbids;
- 127.0.0.3 reads robots.txt and ignores its ``Crawl-delay: 3``;
- 127.0.0.4 reads robots.txt, which is then edited (``Disallow: /late`` added as line 3), and asks
  for a /late page: it never fetched the edit, so it must not be charged;
- 127.0.0.5 reads the edited robots.txt and asks for a /late page all the same.

Then ``manners watch LOG --robots old --robots new@EDIT`` on the log the server wrote: exactly
the rude ones are named, each with the right rule, line and count, and no polite client is charged.
pygopherd logs no times: there exactly what docs/watch.md says a log without times can judge.

On Gemini, the faults only Gemini has: a robot that keeps ``*`` but not ``archiver`` (evidence,
not a charge), three polite robots of one /24 (one client, judged on their pace together, with
``--group 24,64``), and ``44 SLOW DOWN`` from jetforce's rate limit, waited for or not.

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
from proxy import self_signed
from servers import HOST, agate, gophernicus, jetforce, nginx, pygopherd

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


def gemini(port: int, source: str, path: str) -> bytes:
    """One Gemini request from ``source``, its answer read through; the answer's header line."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with connect(source, port) as sock, context.wrap_socket(sock, server_hostname="localhost") as tls:
        tls.sendall(f"gemini://localhost:{port}{path}\r\n".encode())
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


def gemini_asker(port: int) -> Ask:
    def ask(source: str, path: str) -> None:
        gemini(port, source, path)

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


def settle(log: Path, last: str, client: str = AFTER_EDIT) -> None:
    """Wait until the server has written the last request (servers write after answering)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if log.exists() and any(client in line and last in line for line in log.read_text().splitlines()):
            return
        time.sleep(0.05)
    raise AssertionError(f"{log} never logged {last} for {client}")


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


def test_agate(tmp_path: Path) -> None:
    root = site(tmp_path / "root", gemini=True)
    log = tmp_path / "agate.log"  # agate logs with --log-ip (servers.agate), times from env_logger
    with agate(root, log) as port:
        since = start_line()
        ask = gemini_asker(port)
        edit = visit(root, ask, lambda: crawl(f"gemini://localhost:{port}/", tmp_path / "crawl"), "gemini")
        settle(log, "/late/x.txt")
    data = judged(log, root, edit, since)
    check(data, log, edit)
    assert data["logs"][0]["format"] == "agate"
    crawler = {r["client"]: r for r in data["robots"]}[CRAWLER]
    assert crawler["robots_first"] and crawler["requests"] >= 3


MOLLY_PORT = 1965  # molly-brown runs in a network namespace of its own: the default port is free there


def test_molly_brown(tmp_path: Path) -> None:
    """molly-brown binds every interface whatever it is told, so it runs, with everyone who visits
    it (the crawl and the rude clients, each still from its own loopback address), in a network
    namespace of its own (``unshare -n``, only ``lo`` up), as tests/test_crawl_molly.py runs it:
    this file run as a script there (:func:`in_namespace`).  The log is judged outside."""
    root = site(tmp_path / "root", gemini=True)
    log, said = tmp_path / "access.log", tmp_path / "visits.json"
    self_signed(tmp_path)  # cert.pem and key.pem for CN=localhost
    config = tmp_path / "molly.conf"
    config.write_text(
        f'Port = {MOLLY_PORT}\nHostname = "localhost"\nCertPath = "{tmp_path / "cert.pem"}"\n'
        f'KeyPath = "{tmp_path / "key.pem"}"\nDocBase = "{root}"\nAccessLog = "{log}"\n'
        f'ErrorLog = "{tmp_path / "error.log"}"\n'
    )
    cmd = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", sys.executable, __file__,
           str(config), str(root), str(log), str(tmp_path / "crawl"), str(said)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    molly = (tmp_path / "molly.out").read_text(errors="replace") if (tmp_path / "molly.out").exists() else ""
    assert done.returncode == 0, done.stdout + done.stderr + molly
    moments = json.loads(said.read_text())
    data = judged(log, root, moments["edit"], moments["since"])
    check(data, log, moments["edit"])
    assert data["logs"][0]["format"] == "molly-brown"
    crawler = {r["client"]: r for r in data["robots"]}[CRAWLER]
    assert crawler["robots_first"] and crawler["requests"] >= 3


def in_namespace(config: str, root: str, log: str, crawl_out: str, said: str) -> None:
    """test_molly_brown's part inside the namespace: molly-brown started, everyone's visits, the
    moments (--since, the edit) written to ``said``; molly-brown stopped."""
    work = Path(config).parent
    with open(work / "molly.out", "wb") as out:
        server = subprocess.Popen(
            ["molly-brown", "-c", config], stdout=out, stderr=subprocess.STDOUT, cwd=work
        )
    try:
        deadline = time.monotonic() + 10
        while True:
            assert server.poll() is None, f"molly-brown exited with status {server.returncode}"
            try:
                socket.create_connection((HOST, MOLLY_PORT), timeout=0.5).close()  # logged "40 -": noise
                break
            except OSError:
                assert time.monotonic() < deadline, f"molly-brown did not listen on port {MOLLY_PORT}"
                time.sleep(0.05)
        since = start_line()
        seed = f"gemini://localhost:{MOLLY_PORT}/"
        edit = visit(Path(root), gemini_asker(MOLLY_PORT), lambda: crawl(seed, Path(crawl_out)), "gemini")
        settle(Path(log), "/late/x.txt")
        Path(said).write_text(json.dumps({"since": since, "edit": edit}))
    finally:
        server.terminate()
        server.wait(10)


READER = "127.0.0.6"  # reads robots.txt, then asks for what it forbids


def test_pygopherd(tmp_path: Path) -> None:
    """pygopherd logs to a file no time, no status, no host: what that leaves to judge is what
    docs/watch.md says.  The client that never read robots.txt cannot be shown to outpace a
    person, so it is not judged; no pacing is judged; every version must forbid a request, so the
    /late one (allowed by the old file) is charged to no one.  A client that read robots.txt and
    asked for /private all the same is charged, by line 2."""
    root = site(tmp_path / "root", gemini=False)
    log = tmp_path / "pygopherd.log"
    with pygopherd(root, log=log) as port:
        ask = gopher_asker(port)
        edit = visit(root, ask, lambda: crawl(f"gopher://{HOST}:{port}/", tmp_path / "crawl"), "gopher")
        ask(READER, "/robots.txt")
        ask(READER, "/private/x.txt")
        ask(READER, "/private/x.txt")
        settle(log, "/private/x.txt", READER)
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text(OLD)
    new.write_text(NEW)
    args = [str(log), "--robots", str(old), "--robots", f"{new}@{rfc3339(edit)}"]
    table = watch(*args)
    assert table.returncode == 1, table.stdout + table.stderr
    rude = [line for line in table.stdout.splitlines() if line.startswith("! ")]
    assert [line.split()[1] for line in rude] == [READER], table.stdout
    done = watch(*args, "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["logs"][0]["format"] == "pygopherd" and data["logs"][0]["unparsed"] == 0
    by = {r["client"]: r for r in data["robots"]}
    assert sorted(by) == [CRAWLER, NO_DELAY, BEFORE_EDIT, AFTER_EDIT, READER]
    assert data["impolite"] == 1 and by[READER]["verdict"] == "impolite" and by[READER]["charged"] == 2
    [breach] = by[READER]["breaches"]
    assert (breach["rule"], breach["agent"], breach["line"], breach["requests"]) == ("disallowed", "*", 2, 2)
    assert [e["line"] for e in breach["examples"]] == lines_of(log, READER, "/private/x.txt")
    no_times = "no times: pacing cannot be judged, nor which dated robots.txt was in force at a request"
    for polite in (CRAWLER, NO_DELAY, BEFORE_EDIT, AFTER_EDIT):
        r = by[polite]
        assert (r["verdict"], r["charged"], r["breaches"], r["pacing"]) == ("polite", 0, [], []), r
        assert r["notes"] == [no_times], r
    assert by[NO_DELAY]["requests"] == 1 + len(PAGES)
    # the client that never read robots.txt: not a robot to a log without times
    requests = PERSON_REQUESTS["gopher"] + 1 + 2
    assert data["others"] == {"clients": 1, "requests": requests, "unattributed": 0}
    assert f"pygopherd: {no_times}" in data["notes"]


# A robots.txt with rules for two of the Gemini companion spec's virtual agents as well as for *.
ROLE_RULES = (
    "User-agent: *\nDisallow: /private\nCrawl-delay: 4\n\n"
    "User-agent: indexer\nDisallow: /drafts\n\n"
    "User-agent: archiver\nDisallow: /archive\n"  # line 9
)
ROLE_RUDE = "127.0.2.1"  # keeps * and its Crawl-delay, asks for /archive all the same
BLOCK = [f"127.0.1.{n}" for n in (1, 2, 3)]  # three polite robots of one /24


def test_gemini_one_role_broken_and_one_block(tmp_path: Path) -> None:
    """On agate: a robot that keeps every rule for * but not archiver's is shown breaking archiver
    and judged polite (judge.py: what only a role's rules forbid is evidence, not a charge; a Gemini
    robot's activity is not logged); three polite robots of 127.0.1.0/24, each keeping Crawl-delay
    4 s, are each polite, and one client with ``--group 24,64``, judged on their pace together:
    impolite.  manners crawl as an indexer, meanwhile, keeps indexer's /drafts."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "robots.txt").write_text(ROLE_RULES)
    for page in [*PAGES, "/archive/a.txt", "/archive/b.txt", "/drafts/x.txt", "/private/x.txt"]:
        (root / page[1:]).parent.mkdir(exist_ok=True)
        (root / page[1:]).write_text("page\n")
    links = "".join(f"=> {p}\n" for p in ["/drafts/x.txt", *PAGES])
    (root / "index.gmi").write_text("# Home\n" + links)
    log = tmp_path / "agate.log"
    with agate(root, log) as port:
        since = start_line()
        ask = gemini_asker(port)
        failed: list[BaseException] = []

        def crawling() -> None:
            try:
                crawl(f"gemini://localhost:{port}/", tmp_path / "crawl")
            except BaseException as exc:  # said in the test's thread
                failed.append(exc)

        robot = threading.Thread(target=crawling)
        robot.start()  # a client of its own: its pace is judged apart from the others'
        for client in [*BLOCK, ROLE_RUDE]:
            ask(client, "/robots.txt")
        # rounds 4.2 s apart (each keeps Crawl-delay 4); in a round the block's three at once,
        # within the 2 s that, given back 1 s of rounding, still make them closer than 4 s together
        for page, archiving in zip(PAGES[:3], [PAGES[0], "/archive/a.txt", "/archive/b.txt"], strict=True):
            time.sleep(4.2)
            for member in BLOCK:
                ask(member, page)
            ask(ROLE_RUDE, archiving)
        robot.join(timeout=120)
        assert not robot.is_alive() and not failed, failed
        settle(log, PAGES[2], BLOCK[-1])
    host = f"localhost:{port}"
    args = [str(log), "--robots", str(root / "robots.txt"), "--since", rfc3339(since)]

    table = watch(*args)
    assert table.returncode == 0, table.stdout + table.stderr  # nobody impolite
    assert not any(line.startswith("! ") for line in table.stdout.splitlines()), table.stdout
    [row] = [line for line in table.stdout.splitlines() if line.split()[:2] == [ROLE_RUDE, "polite"]]
    assert "kept indexer; broke archiver: line 9, 2 requests" in row, table.stdout
    data = json.loads(watch(*args, "--json").stdout)
    by = {r["client"]: r for r in data["robots"]}
    assert sorted(by) == sorted([CRAWLER, ROLE_RUDE, *BLOCK]) and data["impolite"] == 0
    archiving = by[ROLE_RUDE]
    assert (archiving["verdict"], archiving["charged"], archiving["reasons"]) == ("polite", 0, [])
    [breach] = archiving["breaches"]
    assert (breach["rule"], breach["agent"], breach["line"], breach["requests"]) == ("role", "archiver", 9, 2)
    assert [e["line"] for e in breach["examples"]] == lines_of(log, ROLE_RUDE, "/archive/")
    assert (archiving["kept_roles"], archiving["broke_roles"]) == (["indexer"], ["archiver"])
    assert archiving["roles"] == "kept indexer; broke archiver: line 9, 2 requests"
    for member in BLOCK:
        r = by[member]
        assert (r["verdict"], r["charged"], r["requests"]) == ("polite", 0, 4), r
        [pacing] = r["pacing"]
        assert (pacing["asked"], pacing["closer"], pacing["requests"]) == (4.0, 0, 3), r
    crawler = by[CRAWLER]  # the indexer: never asked for /drafts, nor for /archive (not linked)
    assert (crawler["verdict"], crawler["charged"], crawler["breaches"]) == ("polite", 0, [])
    assert crawler["roles"] == "kept archiver and indexer" and crawler["robots_first"]

    grouped = watch(*args, "--group", "24,64", "--json")
    assert grouped.returncode == 1, grouped.stdout + grouped.stderr
    data = json.loads(grouped.stdout)
    assert data["group"] == {"v4": 24, "v6": 64}
    by = {r["client"]: r for r in data["robots"]}
    block, alone = "127.0.1.0/24", "127.0.2.0/24"
    assert sorted(by) == ["127.0.0.0/24", block, alone]
    assert [r["client"] for r in data["robots"] if r["verdict"] == "impolite"] == [block]
    r = by[block]  # one client of 3 x (robots.txt + 3 pages): 9 pages paced together, 8 too close
    assert (r["requests"], r["robots_fetches"], r["charged"]) == (12, 3, 0)
    [pacing] = r["pacing"]
    assert (pacing["asked"], pacing["closer"], pacing["requests"]) == (4.0, 8, 9)
    assert r["reasons"] == [f"closer than the 4 s asked at {host}: 8 requests"]
    assert (by[alone]["verdict"], by[alone]["roles"]) == ("polite", archiving["roles"])
    assert by["127.0.0.0/24"]["verdict"] == "polite"
    table = watch(*args, "--group", "24,64")
    assert [line.split()[1] for line in table.stdout.splitlines() if line.startswith("! ")] == [block]


SLOW_RULES = "User-agent: *\nDisallow: /private\n"  # no Crawl-delay: only the 44s can be held against them
IGNORES_44, WAITS_44 = "127.0.3.1", "127.0.3.2"


def test_gemini_slow_down(tmp_path: Path) -> None:
    """jetforce --rate-limit 3/10m answers each address's 4th request and after with ``44 SLOW
    DOWN``.  One robot goes on at once (twice); another waits 10 s as docs/watch.md assumes, and
    is not charged.  (molly-brown answers 44 only in versions newer than Debian's.)"""
    root = tmp_path / "root"
    root.mkdir()
    (root / "robots.txt").write_text(SLOW_RULES)
    for page in PAGES:
        (root / page[1:]).write_text("page\n")
    log = tmp_path / "access.log"
    with jetforce(root, log=log, rate_limit="3/10m") as port:
        since = start_line()
        for client in (IGNORES_44, WAITS_44):
            answers = [gemini(port, client, path) for path in ["/robots.txt", *PAGES[:3]]]
            assert [a[:2] for a in answers] == [b"20", b"20", b"20", b"44"], answers
        assert [gemini(port, IGNORES_44, path)[:2] for path in PAGES[3:] + PAGES[:1]] == [b"44", b"44"]
        time.sleep(10.2)
        assert gemini(port, WAITS_44, PAGES[2])[:2] == b"44"  # still within the window: told again
        settle(log, PAGES[2], WAITS_44)
    args = [str(log), "--robots", str(root / "robots.txt"), "--since", rfc3339(since)]
    table = watch(*args)
    assert table.returncode == 1, table.stdout + table.stderr
    assert [line.split()[1] for line in table.stdout.splitlines() if line.startswith("! ")] == [IGNORES_44]
    host = f"localhost:{port}"
    assert f"did not wait after being told to slow down at {host}: 2 requests" in table.stdout
    done = watch(*args, "--json")
    assert done.returncode == 1, done.stderr
    by = {r["client"]: r for r in json.loads(done.stdout)["robots"]}
    assert sorted(by) == [IGNORES_44, WAITS_44]
    hasty = by[IGNORES_44]
    assert (hasty["verdict"], hasty["charged"], hasty["breaches"]) == ("impolite", 0, [])
    assert hasty["reasons"] == [f"did not wait after being told to slow down at {host}: 2 requests"]
    [slow] = hasty["slow_downs"]
    assert (slow["host"], slow["wait"]) == (host, 10.0)
    assert (slow["told"], slow["waited"], slow["ignored"]) == (3, 0, 2)
    lines = lines_of(log, IGNORES_44, " 44 ")
    assert [e["line"] for e in slow["examples"]] == lines[1:]  # the two after the first 44
    patient = by[WAITS_44]
    assert (patient["verdict"], patient["charged"], patient["reasons"]) == ("polite", 0, [])
    [slow] = patient["slow_downs"]
    assert (slow["told"], slow["waited"], slow["ignored"], slow["examples"]) == (2, 1, 0, [])


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
    """The clients need addresses of their own: 127.0.0.2 to .6 and the others must be bindable."""
    for address in [*(f"127.0.0.{n}" for n in range(2, 7)), *BLOCK, ROLE_RUDE, IGNORES_44, WAITS_44]:
        with socket.socket() as s:
            s.bind((address, 0))


if __name__ == "__main__":  # test_molly_brown, inside its network namespace
    in_namespace(*sys.argv[1:])
