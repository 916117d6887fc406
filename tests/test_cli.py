"""The command line, run as a real subprocess: every command and flag, and bad input."""

from __future__ import annotations

import json
import os
import re
import runpy
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from data_paths import SMALLNET
from servers import HOST, _executable, _serve, free_port, gophernicus, jetforce, nginx
from sites import Site, sites

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
    assert [r["allowed"] for r in json.loads(p.stdout)["results"]] == [False, False]  # '*' counts too
    p = manners(  # the old most-targeted-group-wins reading, named case-insensitively
        "check", "gemini://x.example/a", "--robots", str(gem), "--role", "archiver",
        "--profile", "Gemini-Targeted", "--json", env=env,
    )  # fmt: skip
    assert [r["allowed"] for r in json.loads(p.stdout)["results"]] == [True]
    p = manners("check", "/a/index.html", "--robots", str(gem), "--profile", "1994", "--json", env=env)
    assert json.loads(p.stdout)["results"][0]["profile"] == "1994"


def test_check_reads_standard_input(env: dict[str, str]) -> None:
    p = manners("check", "/private", "--robots", "-", env=env, stdin=ROBOTS.encode())
    assert p.returncode == 1 and p.stdout.startswith("disallowed")


def test_check_fetches_through_the_cache(web: list[Site], env: dict[str, str]) -> None:
    before = web[0].robots_fetches()
    p = manners("check", web[0].url + "/private", web[0].url + "/ok", env=env)
    assert p.returncode == 1 and p.stdout.splitlines()[0].startswith("disallowed")
    p = manners("check", web[0].url + "/ok", "--agent", "mybot", "--cached", env=env)
    assert p.returncode == 0 and "the cached copy read " in p.stderr
    assert web[0].robots_fetches() == before + 1  # the second run read the SQLite cache
    assert (Path(env["XDG_CACHE_HOME"]) / "manners" / "robots.sqlite3").exists()


def test_check_exit_codes_when_robots_txt_could_not_be_read(env: dict[str, str], tmp_path: Path) -> None:
    p = manners("check", down_url(), "--timeout", "5", env=env)
    assert p.returncode == 1 and "could not be fetched: the connection was refused" in p.stderr  # and why
    assert p.stdout.startswith("disallowed") and "unreachable" in p.stdout
    with nginx(["location = /robots.txt { return 404; }"], tmp_path) as (port,):
        p = manners("check", f"http://127.0.0.1:{port}/private", "--cache", "memory", env=env)
    assert p.returncode == 0 and "is unavailable: HTTP 404" in p.stderr  # missing: everything is allowed
    assert p.stdout.startswith("allowed")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "ftp://example.org/x"], "unknown scheme 'ftp'"),
        (["check", "/relative/path"], "is no URL"),
        (["check", "/x", "--robots", "/no/such/file"], "no such file"),
        (["check", "/x", "--robots", "/tmp"], "is a directory"),
        (["check", "/x", "--profile", "yahoo"], "invalid choice"),
        (["check"], "no URLs to check"),
        (["check", "-", "--robots", "-"], "standard input cannot hold both"),
        (["check", "--urls", "/no/such/list"], "cannot read --urls"),
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
    said = [ln for ln in p.stderr.splitlines() if not ln.startswith(("usage:", " "))]  # argparse's usage
    assert len(said) == 1


def test_a_binary_file(tmp_path: Path, env: dict[str, str]) -> None:
    blob = tmp_path / "robots.bin"
    blob.write_bytes(bytes(range(256)) * 20)
    p = manners("check", "/x", "--robots", str(blob), env=env)
    assert p.returncode == 0 and p.stdout.startswith("allowed")
    p = manners("lint", str(blob), env=env)
    assert p.returncode == 1 and "error: binary:" in p.stdout


def test_a_utf16_file_is_called_utf16_not_binary(tmp_path: Path, env: dict[str, str]) -> None:
    """A robots.txt saved as UTF-16 (with a byte order mark, or big-endian without one) is named
    for what it is, with the words it breaks (RFC 9309: UTF-8), not "a binary file"."""
    text = "User-agent: *\nDisallow: /private\n"
    for name, data, order in [
        ("le.txt", b"\xff\xfe" + text.encode("utf-16-le"), "little-endian"),
        ("be.txt", text.encode("utf-16-be"), "big-endian"),
    ]:
        (tmp_path / name).write_bytes(data)
        p = manners("lint", str(tmp_path / name), env=env)
        assert p.returncode == 1, p.stdout
        assert f"error: utf-16: the file is UTF-16 ({order})" in p.stdout and "binary" not in p.stdout
        assert "MUST be UTF-8 encoded" in p.stdout
        p = manners("check", "/private", "--robots", str(tmp_path / name), env=env)
        assert "utf-16" in p.stderr and "binary" not in p.stderr


@pytest.mark.parametrize(
    "command", [["check", "gopher://[::1/x"], ["fetch", "gopher://[::1"], ["site", "gopher://[::1"]]
)
def test_a_broken_ipv6_url_is_named(command: list[str], env: dict[str, str]) -> None:
    """urllib's "Invalid IPv6 URL" alone does not say which argument is wrong: the sentence names it."""
    p = manners(*command, env=env)
    assert p.returncode == 2 and p.stdout == ""
    assert (
        p.stderr.startswith("manners: 'gopher://[::1") and "is not a valid URL: Invalid IPv6 URL" in p.stderr
    )
    assert "Traceback" not in p.stderr


# -- explain -----------------------------------------------------------------------------


def explain_json(path: Path | str, env: dict[str, str], *more: str) -> dict:  # type: ignore[type-arg]
    p = manners("explain", str(path), "--json", *more, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)  # type: ignore[no-any-return]


def row(data: dict, target: str) -> dict[str, bool]:  # type: ignore[type-arg]
    found = next(r for r in data["matrix"] if r["url"] == target)
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
    typed = next(m for m in data["matrix"] if m["url"].startswith("1/"))
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
    """Every real small-net file, with both Gemini readings as columns of the matrix."""
    for path in sorted(SMALLNET.glob("*.txt")):
        p = manners("explain", str(path), env=env)
        assert p.returncode == 0 and "What each reader decides" in p.stdout, path.name
        data = explain_json(path, env)
        for row in data["matrix"]:
            readers = row["readers"]
            for role in ("indexer", "archiver", "researcher", "webproxy"):
                assert f"Gemini {role}" in readers and f"Gemini-targeted {role}" in readers, path.name
    p = manners(
        "explain",
        str(SMALLNET / "gemini_11_cl_robots_txt_readme_tlgs_style.txt"),
        "/add-seed",
        "--json",
        env=env,
    )
    (row,) = json.loads(p.stdout)["matrix"]
    assert row["readers"]["Gemini indexer"]["allowed"] is False  # '*' binds an indexer too
    assert row["readers"]["Gemini-targeted indexer"]["allowed"] is True


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
    web = explain_json(f, env, "--agent", "CyberMapper/2.1")  # the product token: cybermapper
    old = explain_json(f, env, "--agent", "CyberMapper/2.1", "--profile", "1994")  # a substring match
    assert web["chosen"][0]["who"] == "user-agent cybermapper" and web["profile"] == "rfc9309"
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
    # every error names the words it rests on; warnings do not
    lines = p.stdout.splitlines()
    assert lines[1] == (
        '    rests on RFC 9309 §2.3: "The rules MUST be accessible in a file named "/robots.txt" (all'
        " lowercase) in the top-level path of the service. The file MUST be UTF-8 encoded (as defined in"
        ' [RFC3629]) and Internet Media Type "text/plain" (as defined in [RFC2046])."'
    )
    assert "rests on" not in manners("lint", str(messy), env=env).stdout


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
    assert (data["outcome"], data["status"], data["body"]) == ("ok", 200, ROBOTS)
    assert data["cache_key"] == web[0].url and data["fetched_at"].endswith("Z")


def test_fetch_failures(env: dict[str, str], tmp_path: Path) -> None:
    p = manners("fetch", down_url(), "--timeout", "5", env=env)
    assert p.returncode == 1 and "unreachable (status connection-refused)" in p.stdout
    assert "everything is disallowed" in p.stdout
    with nginx(["location = /robots.txt { return 410; }"], tmp_path) as (port,):
        p = manners("fetch", f"http://127.0.0.1:{port}/", "--cache", "memory", env=env)
    assert (
        p.returncode == 0 and "unavailable (status 410)" in p.stdout and "everything is allowed" in p.stdout
    )


def test_fetch_gopher_and_gemini(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "robots.txt").write_text("User-agent: *\nDisallow: /private\n")
    with gophernicus(tmp_path) as port:
        data = json.loads(
            manners("fetch", f"gopher://127.0.0.1:{port}/", "--json", "--cache", "memory", env=env).stdout
        )
        assert (data["outcome"], data["status"]) == ("ok", None)  # Gopher has no status
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
    wide = {**env, "COLUMNS": "250"}  # room for the table
    tty = manners("explain", str(robots_file), env={**wide, "FORCE_COLOR": "1"})  # rich: as on a terminal
    assert "\x1b[" in tty.stdout and "May * fetch it?" in tty.stdout and "! " not in tty.stdout
    piped = manners("explain", str(robots_file), env=wide)
    assert "\x1b[" not in piped.stdout and "May * fetch it?" in piped.stdout and "  /mine  " in piped.stdout


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


@pytest.mark.quick
def test_python_dash_m_in_process(
    robots_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """manners/__main__.py, run in this process (so the quick tier sees it run): the command's
    status is the process's."""
    monkeypatch.setattr(sys, "argv", ["manners", "check", "/private", "--robots", str(robots_file)])
    with pytest.raises(SystemExit) as stopped:
        runpy.run_module("manners", run_name="__main__", alter_sys=True)
    assert stopped.value.code == 1 and "/private" in capsys.readouterr().out


# -- issue 10 ------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["42", "/x", "", "AB42bot"])
def test_agent_without_a_product_token_is_refused(agent: str, robots_file: Path, env: dict[str, str]) -> None:
    for command in (["check", "/x", "--robots", str(robots_file)], ["explain", str(robots_file)]):
        p = manners(*command, "--agent", agent, env=env)
        assert p.returncode == 2 and "product token" in p.stderr and len(p.stderr.splitlines()) == 1


def test_agent_with_a_version_is_its_product_token(robots_file: Path, env: dict[str, str]) -> None:
    p = manners("check", "/mine", "--robots", str(robots_file), "--agent", "mybot/1.0", env=env)
    assert p.returncode == 1 and p.stdout.startswith("disallowed  /mine  (line 5: Disallow: /mine)")


def test_explain_and_lint_say_first_when_robots_txt_was_not_read(env: dict[str, str], tmp_path: Path) -> None:
    down = down_url()
    for command in ("explain", "lint"):
        p = manners(command, down, "--timeout", "5", env=env)
        assert p.returncode == 1, command  # a robot may fetch nothing there
        assert p.stdout.splitlines()[0] == (
            f"robots.txt at {down.removesuffix('page')}robots.txt could not be fetched:"
            " the connection was refused; everything is disallowed until it can be"
        )
        assert "everything is allowed" not in p.stdout
    data = json.loads(manners("explain", down, "--json", "--timeout", "5", env=env).stdout)
    assert (data["outcome"], data["results"][0]["allowed"]) == ("unreachable", False)
    with nginx(["location = /robots.txt { return 404; }"], tmp_path) as (port,):
        for command in ("explain", "lint"):
            p = manners(command, f"http://127.0.0.1:{port}/", "--cache", "memory", env=env)
            assert p.returncode == 0 and p.stdout.startswith(
                f"robots.txt at http://127.0.0.1:{port}/robots.txt"
            )
            assert "is unavailable: HTTP 404; everything is allowed" in p.stdout.splitlines()[0]


def test_check_sees_an_edited_robots_txt(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "robots.txt").write_text("User-agent: *\nDisallow: /old\n")
    with nginx(["location = /robots.txt { default_type text/plain; }"], tmp_path) as (port,):
        url = f"http://127.0.0.1:{port}"
        assert manners("check", url + "/new", env=env).returncode == 0
        (tmp_path / "robots.txt").write_text("User-agent: *\nDisallow: /new\n")
        p = manners("check", url + "/new", env=env)
        assert p.returncode == 1 and "line 2: Disallow: /new" in p.stdout  # fetched afresh
        (tmp_path / "robots.txt").write_text("User-agent: *\nDisallow: /\n")
        p = manners("check", url + "/new", "--cached", env=env)  # the copy of the run before
        assert p.returncode == 1 and "Disallow: /new" in p.stdout and "the cached copy read " in p.stderr
        data = json.loads(manners("check", url + "/new", "--cached", "--json", env=env).stdout)
        assert 0 <= data["robots"][0]["age"] < 60


def test_check_many_urls_one_fetch_per_server(web: list[Site], env: dict[str, str], tmp_path: Path) -> None:
    urls = [
        web[0].url + "/private/a",
        web[1].url + "/a",
        web[0].url + "/b",
        web[1].url + "/c",
        web[0].url + "/d",
    ]
    before = [s.robots_fetches() for s in web]
    p = manners("check", "-", env=env, stdin="\n".join(urls).encode())
    assert p.returncode == 1 and [ln.split()[1] for ln in p.stdout.splitlines()] == urls
    assert [s.robots_fetches() for s in web] == [n + 1 for n in before]
    listed = tmp_path / "urls.txt"
    listed.write_text("\n".join(urls[1:]) + "\n")
    p = manners("check", "--urls", str(listed), "--json", env=env)
    assert p.returncode == 0 and len(json.loads(p.stdout)["results"]) == 4
    assert [s.robots_fetches() for s in web] == [n + 2 for n in before]


PACED = "User-agent: *\nCrawl-delay: 5\nRequest-rate: 1/10\nCheck: 3600\nDisallow: /x\nSitemap: http://h/map.xml\n"


def test_check_json_and_explain_show_the_pace(tmp_path: Path, web: list[Site], env: dict[str, str]) -> None:
    f = tmp_path / "paced.txt"
    f.write_text(PACED)
    data = json.loads(manners("check", "/a", "--robots", str(f), "--json", env=env).stdout)
    pace = {
        k: data["robots"][0][k]
        for k in ("crawl_delay", "request_rate", "check_interval", "spacing", "sitemaps")
    }
    assert pace == {
        "crawl_delay": 5,
        "request_rate": {"requests": 1, "seconds": 10, "start_time": None, "end_time": None},
        "check_interval": 3600,
        "spacing": 10,  # the slower of 5 s and 1 request in 10 s
        "sitemaps": ["http://h/map.xml"],
    }
    out = manners("explain", str(f), env=env).stdout
    assert "Crawl-delay 5 s; Request-rate 1/10 s; Check every 3600 s: a Robot keeps 10 s" in out
    assert "sitemap: http://h/map.xml" in out
    data = json.loads(manners("check", web[1].url + "/a", "--json", env=env).stdout)
    assert (data["robots"][0]["crawl_delay"], data["robots"][0]["spacing"]) == (5, 5)
    assert explain_json(web[1].url + "/", env)["spacing"] == 5


def test_explain_and_check_give_a_request_rate_s_window(tmp_path: Path, env: dict[str, str]) -> None:
    """Request-rate: 1/10s 1820-1940 is a rate for a window of the day (UTC): both say when."""
    f = tmp_path / "windowed.txt"
    f.write_text("User-agent: *\nRequest-rate: 1/10s 1820-1940\nDisallow: /x\n")
    data = json.loads(manners("check", "/a", "--robots", str(f), "--json", env=env).stdout)
    rate = data["robots"][0]["request_rate"]
    assert rate == {"requests": 1, "seconds": 10, "start_time": "18:20", "end_time": "19:40"}
    out = manners("explain", str(f), env=env).stdout
    assert "Request-rate 1/10 s from 18:20 to 19:40 UTC" in " ".join(out.split())
    assert explain_json(str(f), env)["request_rate"] == rate


HOSTILE = (
    b"User-agent: *\nDisallow: /\x1b]0;TITLE\x07\nDisallow: /\x9b\xff\xc2\x9b\r\nSitemap: http://h/\x7f\n"
)
RAW = ("\x1b", "\x07", "\x9b", "\x7f", "\r")


def test_nothing_from_a_robots_txt_reaches_the_terminal_raw(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "robots.txt").write_bytes(HOSTILE)
    with nginx(["location = /robots.txt { default_type text/plain; }"], tmp_path) as (port,):
        url = f"http://127.0.0.1:{port}"
        runs = [
            ["check", url + "/\x1b]0;TITLE\x07", url + "/\x9b"],
            ["explain", url + "/"],
            ["explain", url + "/", "--agent", "mybot"],
            ["lint", url + "/"],
            ["fetch", url + "/"],
            ["check", "/\x1b]0;TITLE\x07", "--robots", str(tmp_path / "robots.txt")],
            ["explain", str(tmp_path / "robots.txt")],
        ]
        for args in runs:
            for more in ([], ["--json"], ["--cached"]):
                p = manners(*args, *more, env=env)
                said = p.stdout + p.stderr
                assert not any(c in said for c in RAW), (args, more, said)
                assert not any("\udc80" <= c <= "\udcff" for c in said)
                if "--json" in more:
                    json.loads(p.stdout)
                elif args[0] in ("explain", "fetch"):
                    assert "\\x1b]0;TITLE\\x07" in said, (args, said)
        p = manners("fetch", url + "/", "--json", env=env)  # controls round-trip; bytes not UTF-8 read \xff
        assert json.loads(p.stdout)["body"] == HOSTILE.decode(errors="backslashreplace")


def test_explain_a_url_includes_its_own_path(web: list[Site], env: dict[str, str]) -> None:
    data = explain_json(web[0].url + "/private/page", env)
    own = next(m for m in data["matrix"] if m["url"] == web[0].url + "/private/page")
    assert not own["readers"]["RFC 9309"]["allowed"]


def test_explain_fits_80_columns(env: dict[str, str]) -> None:
    path = SMALLNET / "gemini_02_gemplex_capsule_no_useragent.txt"
    for extra in ({}, {"FORCE_COLOR": "1"}):
        p = manners("explain", str(path), "--agent", "mybot", env={**env, "COLUMNS": "80", **extra})
        lines = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout).splitlines()
        assert p.returncode == 0 and max(map(len, lines)) <= 80
        assert "Gemini-targeted indexer" in p.stdout and "/search" in p.stdout


def test_explain_reads_gemini_both_ways(tmp_path: Path, env: dict[str, str]) -> None:
    f = tmp_path / "capsule.txt"
    f.write_text("User-agent: archiver\nDisallow: /private/\n\nUser-agent: *\nDisallow: /cgi-bin/\n")
    r = row(
        json.loads(manners("explain", str(f), "/cgi-bin/search", "--json", env=env).stdout), "/cgi-bin/search"
    )
    assert not r["Gemini archiver"] and r["Gemini-targeted archiver"]  # '*' binds an archiver too
    assert not r["Gemini indexer"] and not r["Gemini-targeted indexer"]


def test_lint_a_soft_404_page_and_random_bytes(tmp_path: Path, env: dict[str, str]) -> None:
    page = "<!DOCTYPE html>\n<html><head><title>Not found</title></head>\n<body>\n" + "<p>Sorry.</p>\n" * 17
    (tmp_path / "robots.txt").write_text(page + "</body></html>\n")
    (tmp_path / "noise.txt").write_bytes(bytes((n * 7919 + 13) % 256 for n in range(4000)))
    blocks = [
        "location = /robots.txt { default_type text/html; }",
        "location = /robots.txt { alias " + str(tmp_path / "noise.txt") + "; }",
    ]
    with nginx(blocks, tmp_path) as (html_port, noise_port):
        data = json.loads(manners("lint", f"http://127.0.0.1:{html_port}/", "--json", env=env).stdout)
        assert [(d["severity"], d["code"]) for d in data["diagnostics"]] == [("error", "html")]
        assert manners("lint", f"http://127.0.0.1:{html_port}/", env=env).returncode == 1
        p = manners("lint", f"http://127.0.0.1:{noise_port}/", env=env)
        assert p.returncode == 1 and "error: binary:" in p.stdout and "html" not in p.stdout


@contextmanager
def jetforce_on(root: Path, port: int) -> Iterator[int]:
    """jetforce on a given port, with a certificate of its own each time it starts."""
    with tempfile.TemporaryDirectory(prefix="manners-jetforce-") as tmp:
        cmd = [
            _executable("jetforce"),
            "--host",
            HOST,
            "--port",
            str(port),
            "--hostname",
            "localhost",
            "--dir",
            str(root),
        ]
        env = {**os.environ, "TMPDIR": tmp, "PYTHONUNBUFFERED": "1"}
        with _serve("jetforce", cmd, [port], Path(tmp), env=env):
            yield port


def test_fetch_remembers_the_gemini_certificate(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "robots.txt").write_text("User-agent: *\nDisallow: /private\n")
    store = f"sqlite:///{tmp_path / 'tofu.db'}"
    port = free_port()
    with jetforce_on(tmp_path, port):
        first = manners("fetch", f"gemini://localhost:{port}/", "--cache", store, env=env)
        again = manners("fetch", f"gemini://localhost:{port}/", "--cache", store, env=env)
    assert first.returncode == 0 and "# certificate fingerprint " in first.stdout
    assert "changed" not in again.stdout + again.stderr
    with jetforce_on(tmp_path, port):  # restarted: a new certificate
        p = manners("fetch", f"gemini://localhost:{port}/", "--cache", store, env=env)
        data = json.loads(
            manners("fetch", f"gemini://localhost:{port}/", "--cache", store, "--json", env=env).stdout
        )
    assert "certificate changed since the last fetch" in p.stdout and "different certificate" in p.stderr
    assert data["certificate"]["sha256"] and not data["certificate_changed"]  # the new one is remembered now


def test_a_broken_header_line_is_quoted_as_text_not_as_python(env: dict[str, str]) -> None:
    """A server whose answer holds a header line that is no header: h11 quotes it as
    ``bytearray(b'...')``; the sentence quotes it as text, escaped (no Python repr, no raw ESC)."""
    from hostile import _tcp_server

    def broken(line: bytes, port: int) -> bytes:
        return b"HTTP/1.1 200 OK\r\nBad header \x1b[31m line\r\nContent-Length: 0\r\n\r\n"

    with _tcp_server(broken) as server:
        p = manners("fetch", f"http://{HOST}:{server.port}/", "--cache", "memory", env=env)
    said = p.stdout + p.stderr
    assert "the server broke HTTP (illegal header line: 'Bad header \\x1b[31m line')" in said, said
    assert "bytearray" not in said and "b'" not in said and "\x1b" not in said
