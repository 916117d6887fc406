"""Issue 22, the command line: what a command did not read is said before its verdicts, a
target that is no URL nor path is one sentence, every reader of explain's matrix reads a
target as it would, the table fits a terminal, and lint and every command speak alike."""

from __future__ import annotations

import json
import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus import SMALLNET, WEB
from servers import nginx
from test_cli import manners

ORACLE = WEB / "docs.oracle.com"  # 852,930 bytes: cut at 512,000, after line 19,133
HERMES = WEB / "www.hermes.com"  # an HTML page served as robots.txt
GEMINI_02 = SMALLNET / "gemini_02_gemplex_capsule_no_useragent.txt"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    import os

    clean = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "MANNERS_CACHE")}
    return {**clean, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200"}


def lint_line(path: Path | str, code: str, env: dict[str, str], *more: str) -> str:
    """The line lint prints for finding ``code``: the words every other command must use."""
    (line,) = [
        ln for ln in manners("lint", str(path), *more, env=env).stdout.splitlines() if f": {code}: " in ln
    ]
    return line


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """nginx serving docs.oracle.com's real robots.txt (too big for a robot's cap)."""
    root = tmp_path / "www"
    root.mkdir()
    shutil.copy(ORACLE, root / "robots.txt")
    with nginx(["location = /robots.txt { default_type text/plain; }"], root) as (port,):
        yield f"http://127.0.0.1:{port}"


# -- 1: what was not read is said first ----------------------------------------------------


def test_explain_and_check_say_first_that_the_file_was_cut(env: dict[str, str]) -> None:
    said = lint_line(ORACLE, "truncated", env)
    assert said.startswith(f"{ORACLE}:19134: warning: truncated: only the first 512,000 bytes")
    p = manners("explain", str(ORACLE), env={**env, "COLUMNS": "400"})
    assert p.returncode == 0 and p.stdout.splitlines()[0] == said  # before the groups and verdicts
    p = manners("check", "/x", "--robots", str(ORACLE), env=env)
    assert p.stderr.splitlines() == [f"manners: {said}"] and p.stdout.startswith("allowed")
    for command in (
        ["explain", str(ORACLE)],
        ["check", "/x", "--robots", str(ORACLE)],
        ["lint", str(ORACLE)],
    ):
        p = manners(*command, "--max-bytes", "900000", env=env)  # room for the whole file: nothing cut
        assert "truncated" not in p.stdout + p.stderr, command


def test_fetch_says_the_file_was_cut_before_its_status(served: str, env: dict[str, str]) -> None:
    p = manners("fetch", served + "/", "--cache", "memory", env=env)
    comments = [ln for ln in p.stdout.splitlines() if ln.startswith(f"# {served}")]  # after the body
    assert comments[0].startswith(f"# {served}/robots.txt:19134: warning: truncated: only the first 512,000")
    assert comments[1] == f"# {served}/robots.txt: ok (status 200)"
    data = json.loads(manners("fetch", served + "/", "--cache", "memory", "--json", env=env).stdout)
    assert [d["code"] for d in data["findings"]] == ["truncated"] and data["truncated"]
    whole = manners("fetch", served + "/", "--cache", "memory", "--max-bytes", "900000", "--json", env=env)
    data = json.loads(whole.stdout)
    assert data["findings"] == [] and not data["truncated"] and len(data["body"]) == ORACLE.stat().st_size
    p = manners("explain", served + "/", "--cache", "memory", "--max-bytes", "1000", env=env)
    assert (
        p.stdout.startswith(f"{served}/robots.txt:")
        and ": warning: truncated: only the first 1,000" in p.stdout
    )


def test_an_html_page_is_said_first_and_explain_exits_1(env: dict[str, str]) -> None:
    said = lint_line(HERMES, "html", env)
    assert said == f"{HERMES}:1: error: html: an HTML page, not a robots.txt (a soft 404?)"
    p = manners("explain", str(HERMES), env=env)
    assert p.returncode == 1 and p.stdout.splitlines()[0] == said
    assert manners("explain", str(HERMES), "--json", env=env).returncode == 1
    p = manners("check", "/x", "--robots", str(HERMES), env=env)  # robots read it as no rules: allowed
    assert p.returncode == 0 and p.stderr.splitlines() == [f"manners: {said}"]


# -- 2: a target that is neither a URL nor a path --------------------------------------------


@pytest.mark.parametrize(
    "route",
    ["argument", "--urls", "stdin", "no --robots", "explain", "fetch", "lint", "check URL --robots"],
)
def test_a_target_that_is_no_url_nor_path_is_one_sentence(
    route: str, env: dict[str, str], tmp_path: Path
) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /x\n")
    listed = tmp_path / "urls.txt"
    listed.write_text("/fine\nexample.org/x\n")
    stdin = None
    args = {
        "argument": ["check", "example.org/x", "--robots", str(robots)],
        "--urls": ["check", "--urls", str(listed), "--robots", str(robots)],
        "stdin": ["check", "-", "--robots", str(robots)],
        "no --robots": ["check", "example.org/x"],
        "explain": ["explain", str(robots), "/fine", "example.org/x"],
        "fetch": ["fetch", "example.org/x"],
        "lint": ["lint", "example.org/x"],
        "check URL --robots": [
            "check",
            "example.org/x",
            "--robots",
            "http://127.0.0.1:9/",
        ],  # before any fetch
    }[route]
    if route == "stdin":
        stdin = b"/fine\nexample.org/x\n"
    p = manners(*args, env=env, stdin=stdin)
    assert p.returncode == 2 and p.stdout == "", (p.stdout, p.stderr)
    (line,) = p.stderr.splitlines()
    assert line.startswith("manners: ") and "example.org/x" in line, line


def test_gopher_selectors_stay_targets_under_the_gopher_profile(env: dict[str, str], tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: 1/secret\n")
    p = manners("check", "1/secret", "--robots", str(robots), "--profile", "gopher", env=env)
    assert p.returncode == 1 and p.stdout.startswith("disallowed  1/secret  (line 2")
    assert manners("check", "1/secret", "--robots", str(robots), env=env).returncode == 2  # not a Web path


# -- 3: every reader reads a target as it would -------------------------------------------


def test_a_gemini_target_reads_the_same_in_every_gopher_column_as_its_rule_row(
    env: dict[str, str], tmp_path: Path
) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /1/secret\n")
    data = json.loads(
        manners("explain", str(robots), "gemini://h/1/secret", "/1/secret", "--json", env=env).stdout
    )
    url_row, rule_row = (m["readers"] for m in data["matrix"])
    assert url_row == rule_row  # the same path, the same answer in every column
    assert url_row["Gopher"] == {"allowed": False, "line": 2}
    assert not any(m["disagree"] for m in data["matrix"])
    gopher = json.loads(manners("explain", str(robots), "gopher://h/1/secret", "--json", env=env).stdout)
    (row,) = gopher["matrix"]  # a gopher:// URL: the Gopher robot asks for selector /secret
    assert row["readers"]["Gopher"]["allowed"] and not row["readers"]["RFC 9309"]["allowed"]


# -- 4: the table fits ----------------------------------------------------------------------


def plain(text: str) -> list[str]:
    return re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()


@pytest.mark.parametrize("columns", [250, 120])
def test_the_table_fits_a_terminal_of_120_columns_and_more(columns: int, env: dict[str, str]) -> None:
    for extra in ({"FORCE_COLOR": "1"}, {}):  # a terminal; a pipe told its width
        p = manners("explain", str(GEMINI_02), env={**env, "COLUMNS": str(columns), **extra})
        lines = plain(p.stdout)
        assert p.returncode == 0 and max(map(len, lines)) <= columns
        assert "May * fetch it?" in p.stdout, extra  # the table, not the list
        (row,) = [ln for ln in lines if "/search" in ln and "NO 1" in ln]
        assert row.split()[-13:] == ["yes", "yes", *["NO", "1"] * 10, "yes"][-13:]
        assert not any(ln.lstrip().startswith("DISALLOW") for ln in lines)
        assert row.startswith("! ") == (extra == {})  # '!' marks only when piped


def test_a_narrow_terminal_and_a_pipe_get_the_list(env: dict[str, str]) -> None:
    for extra in ({"FORCE_COLOR": "1", "COLUMNS": "100"}, {"COLUMNS": "100"}):
        p = manners("explain", str(GEMINI_02), env={**env, **extra})
        lines = plain(p.stdout)
        assert max(map(len, lines)) <= 100 and "May * fetch it?" not in p.stdout
        assert "      DISALLOW 1: Gemini indexer, Gemini-targeted indexer, Gemini archiver," in p.stdout


# -- 5, 6, 7: lint ----------------------------------------------------------------------------


def test_lint_flags_a_sitemap_that_is_no_full_url(env: dict[str, str], tmp_path: Path) -> None:
    f = tmp_path / "robots.txt"
    f.write_text("User-agent: *\nDisallow:\nSitemap: /sitemap.xml\nSitemap: https://example.org/s.xml\n")
    p = manners("lint", str(f), env=env)
    assert p.stdout.splitlines()[0] == (
        f"{f}:3: warning: sitemap-url: Sitemap '/sitemap.xml' is not a full URL, as RFC 9309 asks:"
        " robots cannot use it"
    )
    assert p.stdout.count("sitemap-url") == 1


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (
            "gopher_30_gophernicus_missing_selector_plaintext_error.bin",
            "'Error: File or directory not found! (null)'",
        ),
        ("gopher_31_gophernicus_missing_dir_type3_menu.bin", "'Error: File or directory not found! (null)'"),
        ("gopher_32_pygopherd_missing_selector_type3_line.bin", "''/nonexistent.txt' does not exist"),
    ],
)
def test_lint_a_gopher_error_reply_is_an_error_as_the_fetcher_reads_it(
    name: str, shown: str, env: dict[str, str]
) -> None:
    p = manners("lint", str(SMALLNET / name), env=env)
    assert p.returncode == 1
    first = p.stdout.splitlines()[0]
    assert first.startswith(
        f"{SMALLNET / name}:1: error: gopher-error: a Gopher server's error reply, not a robots.txt"
    )
    assert shown in first and p.stdout.splitlines()[2] == "1 error, 0 warnings, 0 infos"
    assert p.stdout.splitlines()[1].startswith(
        '    rests on the Gopher draft, Robot Access Restrictions Policy: "'
    )
    p = manners("explain", str(SMALLNET / name), env={**env, "COLUMNS": "400"})  # said first; exit 1
    assert p.returncode == 1 and p.stdout.splitlines()[0] == first


def test_lint_a_gopher_menu_and_a_real_robots_txt(env: dict[str, str], tmp_path: Path) -> None:
    menu = tmp_path / "menu"
    menu.write_bytes(b"1Docs\t/docs\texample.org\t70\r\n0About\t/about.txt\texample.org\t70\r\n.\r\n")
    p = manners("lint", str(menu), env=env)
    assert p.returncode == 1 and ": error: gopher-menu: a Gopher menu, not a robots.txt" in p.stdout
    crlf = SMALLNET / "gopher_33_gophernicus_robots_crlf_converted.bin"  # served by gophernicus: fine
    assert manners("lint", str(crlf), env=env).returncode == 0


BYTES = b"User-agent: *\nDisallow: /\xff\xfe\nFoo\xff: bar\n"


def test_bytes_that_are_not_utf8_read_backslash_x_everywhere(env: dict[str, str], tmp_path: Path) -> None:
    f = tmp_path / "robots.txt"
    f.write_bytes(BYTES)
    p = manners("lint", str(f), env=env)
    assert f"{f}:3: warning: unknown-field: unknown field 'Foo\\xff' is ignored" in p.stdout.splitlines()
    p = manners("explain", str(f), env=env)
    assert "       2  Disallow: /\\xff\\xfe" in p.stdout.splitlines()
    for args in (["lint", str(f)], ["explain", str(f)], ["check", "/%FF%FE", "--robots", str(f)]):
        out = manners(*args, "--json", env=env).stdout
        assert "\\udc" not in out and "\\\\xff" in out, args  # JSON text \xff, no lone surrogate
        json.loads(out)
    data = json.loads(manners("explain", str(f), "--json", env=env).stdout)
    assert data["groups"][0]["rules"] == [{"line": 2, "rule": "Disallow: /\\xff\\xfe"}]
    assert "\x1b" not in manners("lint", str(f), env=env).stdout


# -- 8, 9: one sentence when nothing was read; the cached copy's age ---------------------


def test_unreachable_is_one_sentence_in_every_command(env: dict[str, str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}"
    sentence = (
        f"robots.txt at {down}/robots.txt could not be fetched: the connection was refused;"
        " everything is disallowed until it can be"
    )
    runs = {
        "check": manners("check", down + "/x", "--timeout", "5", env=env).stderr.splitlines(),
        "explain": manners("explain", down + "/x", "--timeout", "5", env=env).stdout.splitlines(),
        "lint": manners("lint", down + "/", "--timeout", "5", env=env).stdout.splitlines(),
        "fetch": manners("fetch", down + "/", "--timeout", "5", env=env).stdout.splitlines(),
    }
    assert runs["check"][0] == f"manners: {sentence}"
    assert runs["explain"][0] == sentence and runs["lint"][0] == sentence
    assert f"# {sentence}" in runs["fetch"]
    for command in ("check", "explain", "lint", "fetch"):
        data = json.loads(manners(command, down + "/x", "--timeout", "5", "--json", env=env).stdout)
        note = data["robots"][0]["note"] if command == "check" else data["note"]
        assert note == sentence, command


def test_fetch_cached_says_the_copy_s_age_as_check_does(served: str, env: dict[str, str]) -> None:
    manners("check", served + "/x", env=env)  # fills the cache
    check = manners("check", served + "/x", "--cached", env=env).stderr
    fetch = manners("fetch", served + "/x", "--cached", env=env).stderr
    said = f"manners: {served}/robots.txt: the cached copy read "
    assert said in check and said in fetch
    assert re.search(r"the cached copy read \d+ s ago \(--cached\)", fetch)
