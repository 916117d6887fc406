"""The command line, run as a real subprocess: every command and flag, and bad input."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from servers import gophernicus, jetforce, nginx
from sites import Site, sites

SMALLNET = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "smallnet"
ENTRY = Path(sys.executable).with_name("manners")
ROBOTS = "User-agent: *\nDisallow: /private\n\nUser-agent: mybot\nDisallow: /mine\nAllow: /\n"


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Site]]:
    with sites([ROBOTS, "User-agent: *\nCrawl-delay: 5\n"], tmp_path_factory.mktemp("www")) as s:
        yield s


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "MANNERS_CACHE")}
    return {**clean, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200"}


def manners(*args: str, env: dict[str, str], stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(ENTRY), *args],
        input=stdin.decode() if stdin else None,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p


@pytest.fixture
def robots_file(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_text(ROBOTS)
    return path


def down_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/page"


# -- check -------------------------------------------------------------------------------


def test_check_against_a_file(robots_file: Path, env: dict[str, str]) -> None:
    p = manners("check", "/public", "/private/x", "--robots", str(robots_file), env=env)
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["allowed", "/public", "(no", "rule", "for", "user-agent", "*", "matches)"]
    assert lines[1].startswith("disallowed  /private/x  (line 2: Disallow: /private)")
    p = manners("check", "/public", "--robots", str(robots_file), env=env)
    assert (p.returncode, p.stdout.split()[0]) == (0, "allowed")


def test_check_agent_role_profile_and_json(robots_file: Path, env: dict[str, str], tmp_path: Path) -> None:
    p = manners(
        "check", "/mine", "/private", "--robots", str(robots_file), "--agent", "mybot", "--json", env=env
    )
    data = json.loads(p.stdout)
    assert p.returncode == 1
    assert [(r["allowed"], r["line"], r["rule"]) for r in data["results"]] == [
        (False, 5, "Disallow: /mine"),
        (True, 6, "Allow: /"),
    ]
    gem = tmp_path / "gem.txt"
    gem.write_text("User-agent: *\nDisallow: /\n\nUser-agent: archiver\nDisallow: /log/\n")
    p = manners(
        "check",
        "gemini://x.example/log/a",
        "gemini://x.example/a",
        "--robots",
        str(gem),
        "--role",
        "archiver",
        "--json",
        env=env,
    )
    assert [r["allowed"] for r in json.loads(p.stdout)["results"]] == [False, True]
    p = manners("check", "/a/index.html", "--robots", str(gem), "--profile", "1994", "--json", env=env)
    assert json.loads(p.stdout)["results"][0]["profile"] == "1994"


def test_check_reads_standard_input(env: dict[str, str]) -> None:
    p = manners("check", "/private", "--robots", "-", env=env, stdin=ROBOTS.encode())
    assert p.returncode == 1 and p.stdout.startswith("disallowed")


def test_check_fetches_through_the_cache(web: list[Site], env: dict[str, str]) -> None:
    before = web[0].robots_fetches()
    p = manners("check", web[0].url + "/private", web[0].url + "/ok", env=env)
    assert p.returncode == 1 and p.stdout.splitlines()[0].startswith("disallowed")
    p = manners("check", web[0].url + "/ok", "--agent", "mybot", env=env)
    assert p.returncode == 0
    assert web[0].robots_fetches() == before + 1  # the second run read the SQLite cache
    assert (Path(env["XDG_CACHE_HOME"]) / "manners" / "robots.sqlite3").exists()


def test_check_says_when_robots_txt_could_not_be_read(env: dict[str, str], tmp_path: Path) -> None:
    p = manners("check", down_url(), "--timeout", "5", env=env)
    assert p.returncode == 2 and "unreachable (connection-refused)" in p.stderr
    assert p.stdout.startswith("disallowed")
    with nginx(["location = /robots.txt { return 404; }"], tmp_path) as (port,):
        p = manners("check", f"http://127.0.0.1:{port}/private", "--cache", "memory", env=env)
    assert p.returncode == 2 and "unavailable (404)" in p.stderr
    assert p.stdout.startswith("allowed")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "ftp://example.org/x"], "unknown scheme 'ftp'"),
        (["check", "/relative/path"], "is no URL"),
        (["check", "/x", "--robots", "/no/such/file"], "no such file"),
        (["check", "/x", "--robots", "/tmp"], "is a directory"),
        (["check", "/x", "--profile", "yahoo"], "invalid choice"),
        (["check"], "the following arguments are required"),
        (["explain", "/no/such/file"], "no such file"),
        (["lint", "/tmp"], "is a directory"),
        (["fetch", "ftp://example.org/"], "unknown scheme"),
        (["check", "http://127.0.0.1/", "--cache", "postgres://x"], "unknown cache"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_usage_errors_are_one_sentence_and_exit_2(args: list[str], message: str, env: dict[str, str]) -> None:
    p = manners(*args, env=env)
    assert p.returncode == 2 and message in p.stderr
    assert len(p.stderr.strip().splitlines()) <= 3  # argparse adds its usage line


def test_a_binary_file(tmp_path: Path, env: dict[str, str]) -> None:
    blob = tmp_path / "robots.bin"
    blob.write_bytes(bytes(range(256)) * 20)
    p = manners("check", "/x", "--robots", str(blob), env=env)
    assert p.returncode == 0 and p.stdout.startswith("allowed")
    p = manners("lint", str(blob), env=env)
    assert p.returncode == 1 and "error: binary:" in p.stdout


# -- explain -----------------------------------------------------------------------------


def explain_json(path: Path | str, env: dict[str, str], *more: str) -> dict:  # type: ignore[type-arg]
    p = manners("explain", str(path), "--json", *more, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)  # type: ignore[no-any-return]


def row(data: dict, target: str) -> dict[str, bool]:  # type: ignore[type-arg]
    found = next(r for r in data["matrix"] if r["target"] == target)
    return {name: cell["allowed"] for name, cell in found["readers"].items()}


def test_explain_smallnet_file_without_user_agent(env: dict[str, str]) -> None:
    data = explain_json(SMALLNET / "gemini_02_gemplex_capsule_no_useragent.txt", env)
    r = row(data, "/search")
    assert r["RFC 9309"] and r["Google"] and r["1994"]  # rules before any agent line: ignored
    assert not r["Gemini indexer"] and not r["Gopher"]  # ... read as '*' / for everyone
    assert all(m["disagree"] for m in data["matrix"])


@pytest.mark.parametrize(
    "name", ["gopher_21_v2_2003_internal_itemtype_example.txt", "gopher_24_veronica_ctl_1994_tokens.txt"]
)
def test_explain_typed_gopher_paths(name: str, env: dict[str, str]) -> None:
    data = explain_json(SMALLNET / name, env, "--agent", "veronica")
    typed = next(m for m in data["matrix"] if m["target"].startswith("1/"))
    assert (
        typed["disagree"]
        and not typed["readers"]["Gopher"]["allowed"]
        and typed["readers"]["RFC 9309"]["allowed"]
    )


def test_explain_dollar_and_a_star_record_first(tmp_path: Path, env: dict[str, str]) -> None:
    dollar = tmp_path / "dollar.txt"
    dollar.write_text("User-agent: *\nDisallow: /cgi-bin$\n")
    r = row(explain_json(dollar, env), "/cgi-bin")
    assert not r["RFC 9309"] and r["Gopher"]  # '$' anchors for the Web, is a character to Gopher
    star = tmp_path / "star.txt"
    star.write_text("User-agent: *\nDisallow: /\n\nUser-agent: veronica\nDisallow: /private\n")
    r = row(explain_json(star, env, "--agent", "veronica"), "/")
    assert r["RFC 9309"] and r["Gopher"] and not r["Gopher draft"]  # the draft stops at '*'


def test_explain_every_smallnet_file(env: dict[str, str]) -> None:
    for path in sorted(SMALLNET.glob("*.txt")):
        p = manners("explain", str(path), env=env)
        assert p.returncode == 0 and "What each reader decides" in p.stdout, path.name


def test_explain_text_groups_rules_and_targets(robots_file: Path, env: dict[str, str]) -> None:
    p = manners("explain", str(robots_file), "/mine/x", "/elsewhere", "--agent", "mybot", env=env)
    out = p.stdout
    assert "user-agent mybot: lines 4-6" in out
    assert "lines 1-3  User-agent: *  (does not apply)" in out
    assert "lines 4-6  User-agent: mybot  (applies)" in out
    assert "       5  Disallow: /mine" in out
    assert "/mine/x" in out and "/elsewhere" in out


def test_explain_profile_chooses_whose_groups_are_shown(tmp_path: Path, env: dict[str, str]) -> None:
    f = tmp_path / "r.txt"
    f.write_text("User-agent: CyberMapper\nDisallow: /maps\n\nUser-agent: *\nDisallow: /\n")
    web = explain_json(f, env, "--agent", "CyberMapper/2.1")  # no product token: '*' decides
    old = explain_json(f, env, "--agent", "CyberMapper/2.1", "--profile", "1994")  # a substring match
    assert web["chosen"][0]["who"] == "user-agent *" and web["profile"] == "rfc9309"
    assert old["chosen"][0]["who"] == "the record for cybermapper" and old["profile"] == "1994"


def test_explain_a_url(web: list[Site], env: dict[str, str]) -> None:
    data = explain_json(web[0].url + "/", env, "--agent", "mybot")
    assert data["chosen"] == [{"who": "user-agent mybot", "lines": [[4, 6]]}]
    assert [g["applies"] for g in data["groups"]] == [False, True]


# -- lint --------------------------------------------------------------------------------


def test_lint(tmp_path: Path, env: dict[str, str]) -> None:
    messy = tmp_path / "messy.txt"
    messy.write_text(
        "Disallow: /before\nUser-agent: *\nDissalow: /typo\nDisallow: /a\nAllow: /a\n"
        "Crawl-delay: soon\nFoo: bar\n"
    )
    p = manners("lint", str(messy), env=env)
    assert p.returncode == 0  # warnings only
    for code in ("rule-outside-group", "typo", "shadowed", "bad-crawl-delay", "unknown-field"):
        assert f": {code}: " in p.stdout
    assert f"{messy}:5: warning: shadowed:" not in p.stdout and f"{messy}:4: warning: shadowed:" in p.stdout
    data = json.loads(manners("lint", str(messy), "--json", env=env).stdout)
    assert {d["code"] for d in data["diagnostics"]} >= {"typo", "shadowed"}
    html = tmp_path / "index.html"
    html.write_text("<!DOCTYPE html><html><head><title>Home</title></head><body>hi</body></html>\n")
    p = manners("lint", str(html), env=env)
    assert p.returncode == 1 and "error: html:" in p.stdout


def test_lint_profile(tmp_path: Path, env: dict[str, str]) -> None:
    f = tmp_path / "r.txt"
    f.write_text("User-agent: *\nDisallow: /a\n\nUser-agent: veronica\nDisallow: /b$\nAllow: /c\n")
    web = manners("lint", str(f), env=env).stdout
    gopher = manners("lint", str(f), "--profile", "gopher", env=env).stdout
    old = manners("lint", str(f), "--profile", "1994", env=env).stdout
    assert "after-star" not in web and "after-star" in gopher and "allow-unsupported" in old
    clean = tmp_path / "clean.txt"
    clean.write_text("User-agent: *\nDisallow: /private")  # no final newline: fine
    p = manners("lint", str(clean), env=env)
    assert p.returncode == 0 and "no findings" in p.stdout


# -- fetch -------------------------------------------------------------------------------


def test_fetch_over_http(web: list[Site], env: dict[str, str]) -> None:
    p = manners("fetch", web[0].url + "/anything", env=env)
    assert p.returncode == 0
    assert p.stdout.startswith(ROBOTS)
    assert f"# {web[0].url}/robots.txt: ok (status 200)" in p.stdout
    assert "fetched again after" in p.stdout
    data = json.loads(manners("fetch", web[0].url, "--json", env=env).stdout)
    assert (data["outcome"], data["status"], data["body"]) == ("ok", "200", ROBOTS)
    assert data["cache_key"] == web[0].url and data["fetched_at"].endswith("UTC")


def test_fetch_failures(env: dict[str, str], tmp_path: Path) -> None:
    p = manners("fetch", down_url(), "--timeout", "5", env=env)
    assert p.returncode == 2 and "unreachable (status connection-refused)" in p.stdout
    assert "everything is disallowed" in p.stdout
    with nginx(["location = /robots.txt { return 410; }"], tmp_path) as (port,):
        p = manners("fetch", f"http://127.0.0.1:{port}/", "--cache", "memory", env=env)
    assert (
        p.returncode == 2 and "unavailable (status 410)" in p.stdout and "everything is allowed" in p.stdout
    )


def test_fetch_gopher_and_gemini(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "robots.txt").write_text("User-agent: *\nDisallow: /private\n")
    with gophernicus(tmp_path) as port:
        data = json.loads(
            manners("fetch", f"gopher://127.0.0.1:{port}/", "--json", "--cache", "memory", env=env).stdout
        )
        assert (data["outcome"], data["status"]) == ("ok", "gopher-ok")
        assert data["source"] == f"gopher://127.0.0.1:{port}/0robots.txt"
    with jetforce(tmp_path) as port:
        p = manners("fetch", f"gemini://localhost:{port}/", "--cache", "memory", env=env)
        assert p.returncode == 0 and "ok (status 20)" in p.stdout
        p = manners("check", f"gemini://localhost:{port}/private/x", "--cache", "memory", env=env)
        assert p.returncode == 1


# -- the program itself --------------------------------------------------------------------


def test_colour_and_tables_on_a_terminal_plain_text_when_piped(
    robots_file: Path, env: dict[str, str]
) -> None:
    tty = manners("explain", str(robots_file), env={**env, "FORCE_COLOR": "1"})  # rich: as on a terminal
    assert "\x1b[" in tty.stdout and "┃" in tty.stdout
    piped = manners("explain", str(robots_file), env=env)
    assert "\x1b[" not in piped.stdout and "┃" not in piped.stdout and "  /mine  " in piped.stdout


@pytest.mark.parametrize("command", ["check", "explain", "lint", "fetch"])
def test_help_has_examples(command: str, env: dict[str, str]) -> None:
    p = manners(command, "--help", env=env)
    assert p.returncode == 0 and "examples:" in p.stdout and "--json" in p.stdout


def test_python_dash_m_and_version(env: dict[str, str], robots_file: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "manners", "--version"], capture_output=True, text=True, env=env, timeout=60
    )
    assert p.returncode == 0 and p.stdout.startswith("manners ")
    p = subprocess.run(
        [sys.executable, "-m", "manners", "check", "/private", "--robots", str(robots_file)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 1
