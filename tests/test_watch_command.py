"""``manners watch`` in process, on small logs written by hand in each server's format (the lines
as tests/test_watch_logs.py has them from the servers themselves) and robots.txt versions given
with --robots: exit status, the table and --json naming the impolite client with the rule's line
and count, the polite one uncharged, bad input as one sentence with exit status 2, and what a
client sent escaped on the way out.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from manners.cli import main

pytestmark = pytest.mark.quick

T = 1795950837.0  # 2026-11-29T11:13:57Z
ROBOTS = "User-agent: *\nDisallow: /private\n"  # line 2 disallows /private
POLITE, RUDE = "192.0.2.1", "192.0.2.2"


def clf(t: float) -> str:
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(t))


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


Line = Callable[[str, float, str], str]  # client, time, path -> a log line

FORMATS: dict[str, Line] = {
    "jetforce": lambda c, t, p: f'{c} [{clf(t)}] "gemini://localhost{p}" 20 "text/gemini" 10',
    "molly-brown": lambda c, t, p: f"{iso(t)}\t{c}\t20\tgemini://localhost{p}",
    "agate": lambda c, t, p: f'[{iso(t)} INFO  agate] 127.0.0.1:1965 {c} "gemini://localhost{p}" 20'
    ' "text/gemini"',
    "gophernicus": lambda c, t, p: f'{c} localhost:70 - [{clf(t)}] "GET 0{p} HTTP/1.0" 200 34 ""'
    ' "Unknown gopher client"',
    "pygopherd": lambda c, t, p: f"{c} [GopherProtocol/FileHandler]: {p}",
    "combined": lambda c, t, p: f'{c} - - [{clf(t)}] "GET {p} HTTP/1.1" 200 10 "-" "Bot/1.0"',
}  # fmt: skip


def write_log(path: Path, line: Line, requests: list[tuple[str, float, str]]) -> Path:
    path.write_text("".join(line(c, t, p) + "\n" for c, t, p in requests))
    return path


def visits(rude: bool = True) -> list[tuple[str, float, str]]:
    """The polite client reads robots.txt and keeps it; the rude one reads it and breaks it twice."""
    polite = [(POLITE, T, "/robots.txt"), (POLITE, T + 10, "/a"), (POLITE, T + 20, "/b")]
    other = [(RUDE, T + 1, "/robots.txt"), (RUDE, T + 11, "/private/1"), (RUDE, T + 21, "/private/2")]
    if not rude:
        other = [(c, t, p.replace("/private", "/public")) for c, t, p in other]
    return sorted(polite + other, key=lambda r: r[1])


@pytest.fixture
def robots(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_text(ROBOTS)
    return path


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["watch", *args])
    got = capsys.readouterr()
    assert "Traceback" not in got.err
    return code, got.out, got.err


def as_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(capsys, *args, "--json")
    return code, json.loads(out)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_format_names_the_rude_client_with_the_line_and_count(
    fmt: str, tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path / "access.log", FORMATS[fmt], visits())
    code, out, _ = run(capsys, str(log), "--robots", str(robots))
    assert code == 1
    rows = {line[2:].split()[0]: line for line in out.splitlines() if line[2:].startswith("192.0.2.")}
    assert rows[RUDE].startswith("! ") and "impolite" in rows[RUDE] and "line 2: 2 requests" in rows[RUDE]
    assert rows[POLITE].startswith("  ") and " polite " in rows[POLITE]
    assert f"read {log} ({fmt})" in out
    for n in (4, 6):  # the evidence: where in the log
        assert f"{log}:{n}  " in out

    code, data = as_json(capsys, str(log), "--robots", str(robots))
    assert code == 1 and data["impolite"] == 1
    by = {r["client"]: r for r in data["robots"]}
    assert by[RUDE]["verdict"] == "impolite" and by[POLITE]["verdict"] == "polite"
    assert by[POLITE]["charged"] == 0 and by[POLITE]["breaches"] == []
    [breach] = by[RUDE]["breaches"]
    assert (breach["rule"], breach["agent"], breach["line"], breach["requests"]) == ("disallowed", "*", 2, 2)
    assert [(e["file"], e["line"]) for e in breach["examples"]] == [(str(log), 4), (str(log), 6)]
    assert data["logs"][0]["format"] == fmt and data["logs"][0]["requests"] == 6
    if fmt == "pygopherd":  # no times: said, and pacing not judged
        assert by[RUDE]["first"] is None and any("no times" in n for n in data["notes"])
    else:
        assert by[RUDE]["first"] == "2026-11-29T11:13:58.000Z"


def test_every_robot_polite_is_exit_status_0(
    tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path / "access.log", FORMATS["jetforce"], visits(rude=False))
    code, out, _ = run(capsys, str(log), "--robots", str(robots))
    assert code == 0 and "2 robots, 0 impolite" in out and "impolite" not in out.split("0 impolite")[1]


def test_an_edit_after_a_robots_last_fetch_is_not_charged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text("User-agent: *\nDisallow: /nothing\n")
    new.write_text("User-agent: *\nDisallow: /late\n")
    edit = T + 100
    log = write_log(tmp_path / "access.log", FORMATS["jetforce"], [
        (POLITE, T, "/robots.txt"), (POLITE, T + 200, "/late/1"),  # read the old file: not charged
        (RUDE, T + 150, "/robots.txt"), (RUDE, T + 210, "/late/2"),  # read the new one: charged
    ])  # fmt: skip
    code, data = as_json(capsys, str(log), "--robots", f"{old}", "--robots", f"{new}@{iso(edit)}")
    assert code == 1
    by = {r["client"]: r for r in data["robots"]}
    assert by[POLITE]["verdict"] == "polite" and by[POLITE]["charged"] == 0
    [breach] = by[RUDE]["breaches"]
    assert breach["line"] == 2 and breach["version"] == "2026-11-29T11:15:37.000Z"
    assert data["versions"] == [{"robots": str(old), "since": None},
                                {"robots": str(new), "since": "2026-11-29T11:15:37.000Z"}]  # fmt: skip


def test_since_and_until_skip_what_lies_outside(
    tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path / "access.log", FORMATS["combined"], visits())
    code, data = as_json(capsys, str(log), "--robots", str(robots), "--until", iso(T + 15))
    assert code == 1 and {r["client"]: r["charged"] for r in data["robots"]} == {POLITE: 0, RUDE: 1}
    assert data["until"] == "2026-11-29T11:14:12.000Z"
    code, data = as_json(capsys, str(log), "--robots", str(robots), "--since", iso(T + 15))
    assert code == 0 and data["robots"] == []  # nobody asked for robots.txt then, nor ran
    assert data["others"] == {"clients": 2, "requests": 2, "unattributed": 0}


def test_bounds_on_a_log_without_times_are_said_not_applied(
    tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path / "access.log", FORMATS["pygopherd"], visits())
    code, data = as_json(capsys, str(log), "--robots", str(robots), "--since", "2030-01-01")
    assert code == 1 and data["impolite"] == 1
    assert any(n.startswith("--since and --until cannot be applied to 6 requests") for n in data["notes"])


def test_group_makes_one_client_of_a_block(
    tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path / "access.log", FORMATS["molly-brown"], visits())
    code, data = as_json(capsys, str(log), "--robots", str(robots), "--group", "24,64")
    assert code == 1 and [(r["client"], r["requests"]) for r in data["robots"]] == [("192.0.2.0/24", 6)]
    assert data["group"] == {"v4": 24, "v6": 64}


def test_forced_format_and_unparseable_lines(
    tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "access.log"
    write_log(log, FORMATS["jetforce"], visits())
    log.write_text(log.read_text() + "junk \x1b[2J here\n")
    code, out, _ = run(capsys, str(log), "--robots", str(robots), "--format", "jetforce")
    assert code == 1 and "1 line no format reads" in out and f"{log}:7  junk \\x1b[2J here" in out
    code, out, err = run(capsys, str(log), "--robots", str(robots), "--format", "molly-brown")
    assert code == 2 and out == "" and err.count("\n") == 1 and "is not a molly-brown log" in err


def test_control_bytes_from_a_client_come_out_escaped(
    tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "access.log"
    agent = '"Evil\\x1B]0;owned\\x07bot/1.0"'
    log.write_text(
        f'{RUDE} - - [{clf(T)}] "GET /robots.txt HTTP/1.1" 200 3 "-" {agent}\n'
        f'{RUDE} - - [{clf(T + 5)}] "GET /private/\\x1B[31mred HTTP/1.1" 200 3 "-" {agent}\n'
    )
    code, out, _ = run(capsys, str(log), "--robots", str(robots))
    assert code == 1 and "\x1b" not in out and "\x07" not in out
    assert "/private/\\x1b[31mred" in out
    code, raw, _ = run(capsys, str(log), "--robots", str(robots), "--json")
    assert "\x1b" not in raw
    [robot] = json.loads(raw)["robots"]
    assert robot["breaches"][0]["examples"][0]["url"] == "/private/\x1b[31mred"  # JSON keeps it exactly
    assert robot["token"] is None  # a User-Agent that leads with no product token is read as *


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["LOG"], "give either --site URL"),
        (["LOG", "--robots", "ROBOTS", "--site", "gemini://localhost/"], "not both"),
        (["LOG", "--robots", "ROBOTS@yesterday"], "'yesterday' is not a time"),
        (["LOG", "--robots", "ROBOTS@2026-02-30"], "is not a real date"),
        (["LOG", "--robots", "ROBOTS", "--group", "33,64"], "--group takes V4BITS,V6BITS"),
        (["LOG", "--robots", "ROBOTS", "--since", "soon"], "--since: 'soon' is not a time"),
        (["LOG", "--robots", "ROBOTS", "--since", "2026-12-01", "--until", "2026-11-01"], "comes before"),
        (["LOG", "--robots", "NOPE"], "no such file"),
        (["NOPE", "--robots", "ROBOTS"], "cannot be read"),
        (["BINARY", "--robots", "ROBOTS"], "is a binary file, not an access log"),
        (["TEXT", "--robots", "ROBOTS"], "is not an access log manners reads"),
        (["BINARY", "--robots", "ROBOTS", "--follow"], "is a binary file, not an access log"),
        (["TEXT", "--robots", "ROBOTS", "--follow"], "is not an access log manners reads"),
        (["LOG", "--robots", "ROBOTS", "--nft", "NODIR"], "cannot be written: No such file"),
        (["LOG", "--robots", "ROBOTS", "--follow", "--nft", "NODIR"], "cannot be written: No such file"),
        (
            ["LOG", "--robots", "ROBOTS", "--robots", "ROBOTS"],
            "only one robots.txt may be given without @WHEN",
        ),
        (["LOG", "--site", "notaurl"], "--site takes a server's URL"),
        (["LOG", "--site", "CLOSED", "--cache", "memory", "--timeout", "5"], "could not be fetched"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_status_2(
    args: list[str], said: str, tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path / "access.log", FORMATS["jetforce"], visits())
    binary = tmp_path / "binary.log"
    binary.write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    text = tmp_path / "notes.txt"
    text.write_text("Dear diary,\nnothing happened today.\n")
    closed = socket.socket()  # bound, not listening: a connection to it is refused
    closed.bind(("127.0.0.1", 0))
    names = {"LOG": log, "ROBOTS": robots, "NOPE": tmp_path / "nope", "BINARY": binary, "TEXT": text,
             "NODIR": tmp_path / "nope" / "x.nft",
             "CLOSED": f"gemini://127.0.0.1:{closed.getsockname()[1]}/"}  # fmt: skip
    given = list(args)
    for name, path in names.items():
        given = [a.replace(name, str(path)) if a.split("@")[0] == name else a for a in given]
    with closed:
        code, out, err = run(capsys, *given)
    assert code == 2 and out == ""
    assert err.startswith("manners: ") and err.count("\n") == 1 and said in err, err


def test_an_empty_log_has_no_robot(tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "access.log"
    log.write_text("")
    code, out, _ = run(capsys, str(log), "--robots", str(robots))
    assert code == 0 and "no robot in the log" in out and f"read {log} (empty)" in out


def test_nft_writes_the_impolite_address_with_its_reason_and_rewrites_only_on_change(
    tmp_path: Path, robots: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path / "access.log", FORMATS["jetforce"], visits())
    nft = tmp_path / "impolite.nft"
    code, _, _ = run(capsys, str(log), "--robots", str(robots), "--nft", str(nft))
    assert code == 1
    text = nft.read_text()
    [element] = [line.strip() for line in text.splitlines() if line.startswith("\t192.0.2.")]
    assert element == f'{RUDE} comment "disallowed for * by line 2 of the robots.txt of always: 2 requests"'
    assert POLITE not in text
    inode = nft.stat().st_ino

    code, _, _ = run(capsys, str(log), "--robots", str(robots), "--nft", str(nft))
    assert code == 1 and nft.stat().st_ino == inode and nft.read_text() == text  # the same: not rewritten

    with log.open("a") as f:  # one more forbidden request: the reason changes
        f.write(FORMATS["jetforce"](RUDE, T + 31, "/private/3") + "\n")
    code, _, _ = run(capsys, str(log), "--robots", str(robots), "--nft", str(nft))
    assert code == 1 and nft.stat().st_ino != inode
    assert (
        "line 2 of the robots.txt of always: 3 requests" in nft.read_text() and POLITE not in nft.read_text()
    )


def test_following_says_a_robot_newly_impolite_then_each_time_it_is_charged_more() -> None:
    """What --follow says at each catching up (changes, change_line): nothing for the polite one,
    nothing when no charge grew."""
    from manners.watch.command import changes
    from manners.watch.judge import Judge
    from manners.watch.logs import FORMATS as PARSERS
    from manners.watch.logs import Hit
    from manners.watch.render import change_line
    from manners.watch.versions import Version, Versions

    folding = Judge(Versions([Version(ROBOTS)]))
    said: dict[tuple[str, str | None, str], int] = {}
    requests = iter(enumerate(visits(), 1))

    def feed(n: int) -> list[str]:
        for _ in range(n):
            number, request = next(requests)
            hit = PARSERS["jetforce"].parse(FORMATS["jetforce"](*request), "access.log", number)
            assert isinstance(hit, Hit)
            folding.feed(hit)
        return [change_line(change, r) for change, r in changes(said, folding.report())]

    rule = "disallowed for * by line 2 of the robots.txt of always"
    assert feed(3) == []  # both read robots.txt, the polite one a page
    assert feed(1) == [f"impolite {RUDE} (gemini): {rule}: 1 request"]
    assert feed(1) == []  # the polite one's page
    assert feed(1) == [f"charged more {RUDE} (gemini): {rule}: 2 requests"]
    assert changes(said, folding.report()) == []  # asked again, nothing new


def test_lines_out_of_order_are_judged_by_their_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """jetforce writes a line when a request ends, with the time it began, and a log may be two
    merged: lines come out of time order.  Judged by their times, a robot keeping a Crawl-delay
    of 5 that read robots.txt first is that, whatever the order its lines were written in."""
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /private\nCrawl-delay: 5\n")
    polite = [(POLITE, T + 6 * n, "/robots.txt" if n == 0 else f"/p{n}") for n in range(5)]
    rude = [(RUDE, T + 1, "/robots.txt"), (RUDE, T + 2, "/a"), (RUDE, T + 3, "/b"), (RUDE, T + 4, "/c")]
    requests = sorted(polite + rude, key=lambda r: r[1], reverse=True)  # the last first
    log = write_log(tmp_path / "access.log", FORMATS["jetforce"], requests)
    code, data = as_json(capsys, str(log), "--robots", str(robots))
    assert code == 1
    by = {r["client"]: r for r in data["robots"]}
    assert by[POLITE]["verdict"] == "polite" and by[POLITE]["robots_first"] is True
    [pacing] = by[POLITE]["pacing"]
    assert (pacing["shortest"], pacing["closer"]) == (6, 0)
    assert by[RUDE]["verdict"] == "impolite" and by[RUDE]["robots_first"] is True
    [pacing] = by[RUDE]["pacing"]
    assert (pacing["shortest"], pacing["closer"]) == (1, 2)
    assert (
        by[POLITE]["first"] == "2026-11-29T11:13:57.000Z" and by[RUDE]["last"] == "2026-11-29T11:14:01.000Z"
    )
