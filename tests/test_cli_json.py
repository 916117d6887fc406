"""Every command's --json and pages.jsonl against the shapes the documentation gives.

The docs' JSON vocabulary (docs/json.md) holds one fenced block per output, a key a line
(path, type, meaning); this file reads those blocks from every page under docs/, so the
documentation and the outputs cannot drift apart: a key the docs do not name, a documented key
missing, or a value of another type (a status as "200", a timestamp as "2026-11-24 07:40:53
UTC") fails here.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corpus import WEB
from servers import gophernicus, jetforce, nginx
from test_cli import ENTRY, manners

DOCS = Path(__file__).resolve().parents[1] / "docs"
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ROBOTS = "User-agent: *\nDisallow: /private\nCrawl-delay: 2\nSitemap: https://example.org/map.xml\n"

Shape = dict[str, tuple[set[str], bool]]  # path -> (types, optional)


def documented() -> dict[str, Shape]:
    """Each ```text block of the docs that starts "json: NAME": its lines as path, type;
    ``{name}`` lines pull in block ``name`` under their path. A name given twice is an error."""
    raw: dict[str, list[tuple[str, str]]] = {}
    pages = "\n".join(page.read_text() for page in sorted(DOCS.glob("*.md")))
    for block in re.findall(r"```text\njson: (.+?)\n(.*?)```", pages, re.DOTALL):
        name, body = block
        assert name not in raw, f"the docs give json: {name} twice"
        rows = [re.split(r"\s{2,}", line.strip()) for line in body.splitlines() if line.strip()]
        raw[name] = [(row[0], row[1]) for row in rows]

    def expand(name: str, prefix: str) -> Shape:
        out: Shape = {}
        for path, kind in raw[name]:
            optional = path.endswith("?")
            path = path.rstrip("?")
            full = joined(prefix, path)
            if kind.startswith("{"):
                if full:
                    out[full] = ({"object"}, optional)
                out |= expand(kind.strip("{}"), full)
            else:
                out[full] = (set(kind.split("|")), optional)
        return out

    shapes = {name: expand(name, "") for name in raw}
    for shape in shapes.values():  # "a[].b" says that the items of a are objects
        for path in list(shape):
            for m in re.finditer(r"\[\]\.", path):
                shape.setdefault(path[: m.start() + 2], ({"object"}, False))
    return shapes


def joined(prefix: str, path: str) -> str:
    """``path`` under ``prefix``: "." is the prefix itself, "[]" items join without a dot."""
    if path == ".":
        return prefix
    return f"{prefix}.{path}" if prefix and not path.startswith("[") else prefix + path


TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "list": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "timestamp": lambda v: isinstance(v, str) and RFC3339.match(v) is not None,
}


def conforms(value: Any, shape: Shape, path: str = "") -> list[str]:
    """What in ``value`` (at ``path``) the shape does not say: each problem a line."""
    problems = []
    if isinstance(value, dict):
        if f"{path}.*" in shape:  # an object keyed by names: every value alike
            for v in value.values():
                problems += check(v, shape, f"{path}.*")
            return problems
        prefix = f"{path}." if path else ""
        children = {
            p
            for p in shape
            if p.startswith(prefix) and "." not in p[len(prefix) :] and "[" not in p[len(prefix) :]
        }
        for key in value:
            if prefix + key not in shape:
                problems.append(f"{prefix + key}: not documented")
        for child in children:
            key = child[len(prefix) :]
            if key in value:
                problems += check(value[key], shape, child)
            elif not shape[child][1]:
                problems.append(f"{child}: documented, missing")
    elif isinstance(value, list):
        for item in value:
            if f"{path}[]" not in shape:
                return [f"{path}[]: items not documented"]
            problems += check(item, shape, f"{path}[]")
    return problems


def check(value: Any, shape: Shape, path: str) -> list[str]:
    types, _ = shape[path]
    if not any(TYPES[t](value) for t in types):
        return [f"{path}: {value!r} is not {'|'.join(sorted(types))}"]
    return conforms(value, shape, path)


SHAPES = documented()


def agrees(name: str, value: Any) -> None:
    problems = conforms(value, SHAPES[name])
    assert not problems, (name, problems)


def run_json(*args: str, env: dict[str, str], code: int | None = None) -> Any:
    p = manners(*args, "--json", env=env)
    if code is not None:
        assert p.returncode == code, (args, p.stdout, p.stderr)
    return json.loads(p.stdout)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    import os

    clean = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "MANNERS_CACHE")}
    return {**clean, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200"}


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "robots.txt").write_text(ROBOTS)
    with nginx(["location = /robots.txt { default_type text/plain; }"], tmp_path) as (port,):
        yield f"http://127.0.0.1:{port}"


def down_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/page"


def test_the_docs_document_every_output() -> None:
    assert {"manners check", "manners explain", "manners lint", "manners fetch", "pages.jsonl",
            "manners crawl", "manners crawl status", "manners crawl audit", "manners site",
            "manners diff", "manners serve", "manners watch", "watch change"} <= set(SHAPES)  # fmt: skip
    assert SHAPES["manners check"]["robots[].status"] == ({"integer", "null"}, False)
    assert SHAPES["pages.jsonl"]["fetched_at"] == ({"timestamp"}, False)
    vocabulary = set(re.findall(r"```text\njson: (.+?)\n", (DOCS / "json.md").read_text()))
    assert vocabulary == set(SHAPES)  # one vocabulary, on one page


def test_the_checker_fails_on_what_the_docs_do_not_say() -> None:
    """The checker itself: an undocumented key, a string status, a friendly timestamp all fail."""
    good = {"results": [], "robots": []}
    assert conforms(good, SHAPES["manners check"]) == []
    assert conforms({**good, "extra": 1}, SHAPES["manners check"]) == ["extra: not documented"]
    robots = json.loads(json.dumps(SAMPLE_ROBOTS))
    assert conforms({"results": [], "robots": [robots]}, SHAPES["manners check"]) == []
    robots["status"] = "200"
    robots["fetched_at"] = "2026-11-24 07:40:53 UTC"
    said = conforms({"results": [], "robots": [robots]}, SHAPES["manners check"])
    assert any(p.startswith("robots[].status:") for p in said)
    assert any(p.startswith("robots[].fetched_at:") for p in said)


SAMPLE_ROBOTS = {
    "robots": "http://h/robots.txt", "outcome": "ok", "status": 200, "network_error": None,
    "meaning": "robots.txt was read", "fetched_at": "2026-11-24T07:36:39.444Z", "age": 0.5, "stale": False,
    "note": None, "findings": [], "crawl_delay": None, "request_rate": None, "check_interval": None,
    "spacing": 1.0, "sitemaps": [],
}  # fmt: skip


def test_check_explain_lint_on_files(env: dict[str, str], tmp_path: Path) -> None:
    f = tmp_path / "robots.txt"
    f.write_bytes(ROBOTS.encode() + b"Disallow: /\xff\xfe\nRequest-rate: 1/10\n")
    agrees("manners check", run_json("check", "/a", "/private/x", "--robots", str(f), env=env, code=1))
    explained = run_json("explain", str(f), "/a", "gemini://h/private", env=env, code=0)
    agrees("manners explain", explained)
    assert [r["url"] for r in explained["results"]] == ["/a", "gemini://h/private"]
    linted = run_json("lint", str(f), env=env, code=0)
    agrees("manners lint", linted)
    assert not any("\\udc" in json.dumps(d) for d in linted["diagnostics"])  # \xff, not a surrogate
    for big in ("docs.oracle.com", "www.hermes.com"):  # cut at the cap; no robots.txt at all
        for command in ("explain", "lint"):
            data = run_json(command, str(WEB / big), env=env)
            agrees(f"manners {command}", data)
            assert data["findings"][0]["code"] == ("truncated" if big.startswith("docs") else "html")
        agrees("manners check", run_json("check", "/x", "--robots", str(WEB / big), env=env, code=0))


def test_check_explain_lint_fetch_over_http(env: dict[str, str], site: str) -> None:
    checked = run_json("check", site + "/private/a", site + "/b", env=env, code=1)
    agrees("manners check", checked)
    assert checked["robots"][0]["status"] == 200 and checked["robots"][0]["outcome"] == "ok"
    assert checked["results"][0]["robots"] == checked["robots"][0]["robots"] == site + "/robots.txt"
    agrees("manners explain", run_json("explain", site + "/", env=env, code=0))
    agrees("manners lint", run_json("lint", site + "/", env=env, code=0))
    fetched = run_json("fetch", site + "/", "--cached", env=env, code=0)
    agrees("manners fetch", fetched)
    assert (fetched["status"], fetched["body"]) == (200, ROBOTS)
    down = down_url()
    for command in ("check", "explain", "lint", "fetch"):  # nothing read: the same keys, said so
        data = run_json(command, down, "--timeout", "5", env=env, code=1)
        agrees(f"manners {command}", data)
        about = data["robots"][0] if command == "check" else data
        assert (about["status"], about["network_error"], about["outcome"]) == (
            None,
            "connection-refused",
            "unreachable",
        )
        assert about["note"].startswith(f"robots.txt at {down.removesuffix('page')}robots.txt could not be")


def test_fetch_gemini_and_gopher(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "robots.txt").write_text(ROBOTS)
    with jetforce(tmp_path) as port:
        data = run_json("fetch", f"gemini://localhost:{port}/", "--cache", "memory", env=env, code=0)
    agrees("manners fetch", data)
    assert data["status"] == 20 and data["certificate"]["sha256"]
    with gophernicus(tmp_path) as port:
        data = run_json("fetch", f"gopher://127.0.0.1:{port}/", "--cache", "memory", env=env, code=0)
    agrees("manners fetch", data)
    assert (data["status"], data["network_error"], data["outcome"]) == (None, None, "ok")


def test_a_crawl_writes_pages_jsonl_in_the_same_vocabulary(tmp_path: Path, env: dict[str, str]) -> None:
    import subprocess

    capsule = tmp_path / "capsule"
    capsule.mkdir()
    (capsule / "robots.txt").write_text("User-agent: *\nDisallow: /private\n")
    (capsule / "index.gmi").write_text(
        "# Home\n=> /a.gmi A\n=> /private/x.gmi Private\n=> /missing.gmi Gone\n"
    )
    (capsule / "a.gmi").write_text("# A\n")
    out = tmp_path / "crawl"
    with jetforce(capsule) as port:
        p = subprocess.run(
            [str(ENTRY), "crawl", f"gemini://localhost:{port}/", "--agent", "testbot", "--out", str(out),
             "--cache", "memory", "--min-delay", "0", "--timeout", "5", "--no-warc", "--json"],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
    assert p.returncode == 0, p.stderr
    agrees("manners crawl", json.loads(p.stdout))
    records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    for record in records:
        agrees("pages.jsonl", record)
    outcomes = {r["outcome"] for r in records}
    assert {"fetched", "disallowed", "error"} <= outcomes, records
    fetched = next(r for r in records if r["outcome"] == "fetched")
    assert fetched["status"] == 20 and RFC3339.match(fetched["certificate"]["not_after"])


def test_watch_and_its_follow_lines(env: dict[str, str], tmp_path: Path) -> None:
    """A Web log with a rude robot (a disallowed page, closer than Crawl-delay, no wait after a
    429) and an unparseable line, and a Gemini one that breaks a role's rules: every key filled."""
    import signal
    import subprocess
    import time

    def clf(t: float) -> str:
        return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(t))

    t = 1795950837.0
    polite, rude = ("192.0.2.1", "PoliteBot/1.0"), ("192.0.2.2", "RudeBot/2")
    web = [(*polite, 0, "/robots.txt", 200), (*polite, 5, "/a", 200), (*rude, 0, "/robots.txt", 200),
           (*rude, 1, "/private/x", 200), (*rude, 1, "/c", 429), (*rude, 2, "/d", 200)]  # fmt: skip
    log = tmp_path / "access.log"
    log.write_text(
        "".join(f'{c} - - [{clf(t + d)}] "GET {p} HTTP/1.1" {s} 10 "-" "{ua}"\n' for c, ua, d, p, s in web)
        + "not a log line at all\n"
    )
    robots = tmp_path / "robots.txt"
    robots.write_text(ROBOTS + "\nUser-agent: archiver\nDisallow: /old\n")
    gemini = tmp_path / "gemini.log"
    gemini.write_text(
        "".join(f'192.0.2.3 [{clf(t + d)}] "gemini://localhost{p}" 20 "text/gemini" 10\n'
                for d, p in ((0, "/robots.txt"), (5, "/old/x"), (10, "/private/y")))
    )  # fmt: skip
    data = run_json("watch", str(log), str(gemini), "--robots", str(robots), env=env, code=1)
    agrees("manners watch", data)
    by = {r["client"]: r for r in data["robots"]}
    rude, roles = by["192.0.2.2"], by["192.0.2.3"]
    assert rude["pacing"][0]["examples"] and rude["slow_downs"][0]["examples"] and data["unparsed"]
    assert rude["token"] == "rudebot" and roles["broke_roles"] == ["archiver"]

    proc = subprocess.Popen([str(ENTRY), "watch", str(log), "--robots", str(robots), "--follow", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert proc.stdout is not None
    change = json.loads(proc.stdout.readline())  # the first pass: the rude robot newly impolite
    agrees("watch change", change)
    assert (change["change"], change["robot"]["client"]) == ("impolite", "192.0.2.2")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and err == "", err
    [last] = out.splitlines()
    agrees("manners watch", json.loads(last))
