"""``manners crawl`` against molly-brown, a Gemini server that says ``text/gemini; lang=en``.

Debian's molly-brown (package ``molly-brown``, installed by scripts/setup) ignores the address
it is told to listen on and binds every interface, so it runs in a network namespace of its own
(``unshare -n``, only ``lo`` up) together with the crawl: tests/molly_driver.py starts both there.
What molly-brown received is read from its access log; what the crawler kept from pages.jsonl
and the WARC.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from proxy import self_signed

HERE = Path(__file__).parent
ENV = {**os.environ, "PYTHONPATH": str(HERE.parent / "src"), "PYTHONUNBUFFERED": "1"}
PORT = 1965  # the namespace is private: the default port is free there
LIMIT = 150.0  # seconds for molly-brown and the crawl together


def molly_crawl(work: Path, docs: dict[str, str], out: Path, *crawl: str, config_more: str = "",
                stop_after: float | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Serve ``docs`` with molly-brown (DefaultLang "en", and ``config_more``) and crawl
    gemini://localhost/ with ``crawl`` options, both in a private network namespace; the crawl is
    sent SIGTERM after ``stop_after`` seconds if given."""
    if shutil.which("molly-brown") is None:
        raise AssertionError("molly-brown is missing: it is the Debian package molly-brown (scripts/setup)")
    root = work / "docs"
    for name, text in docs.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    self_signed(work)  # cert.pem and key.pem for CN=localhost
    config = work / "molly.conf"
    config.write_text(
        f"Port = {PORT}\n"
        'Hostname = "localhost"\n'
        f'CertPath = "{work / "cert.pem"}"\n'
        f'KeyPath = "{work / "key.pem"}"\n'
        f'DocBase = "{root}"\n'
        f'AccessLog = "{work / "access.log"}"\n'
        f'ErrorLog = "{work / "error.log"}"\n'
        'DefaultLang = "en"\n' + config_more
    )
    cmd = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
           sys.executable, str(HERE / "molly_driver.py"), str(config), str(PORT),
           "gemini://localhost/", "--out", str(out), *crawl]  # fmt: skip
    env = {**ENV, "MANNERS_STOP_AFTER": str(stop_after)} if stop_after is not None else ENV
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"molly-brown and the crawl took more than {LIMIT:g} s") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def test_a_capsule_served_with_lang_is_crawled_past_its_first_page(tmp_path: Path) -> None:
    out = tmp_path / "out"
    docs = {
        "index.gmi": "# Home\n=> a.gmi Page A\n=> sub/ A directory\n",
        "a.gmi": "# A\n=> c.gmi Page C\n",
        "sub/index.gmi": "# Sub\n=> ../d.gmi Page D\n",
        "c.gmi": "# C\n",
        "d.gmi": "# D\n",
    }
    result = molly_crawl(tmp_path, docs, out, "--agent", "testbot", "--cache", "memory", "--timeout", "5",
                         "--min-delay", "0.05")  # fmt: skip
    molly = (tmp_path / "molly.out").read_text(errors="replace") if (tmp_path / "molly.out").exists() else ""
    assert result.returncode == 0, result.stdout + result.stderr + molly
    assert "Traceback" not in result.stderr, result.stderr

    # what molly-brown answered: time, client, status, URL (tab-separated)
    served = {}
    for line in (tmp_path / "access.log").read_text().splitlines():
        fields = line.split("\t")
        served[fields[3]] = int(fields[2])
    for path in ("", "a.gmi", "sub/", "c.gmi", "d.gmi"):
        assert served.get(f"gemini://localhost/{path}") == 20, (path, served)

    # the header really carried lang=en (molly-brown's DefaultLang), as stored in the WARC
    headers = {}
    for warc in sorted((out / "warc").glob("*.warc.gz")):
        with warc.open("rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "response":
                    block = record.content_stream().read()
                    headers[record.rec_headers.get_header("WARC-Target-URI")] = block.split(b"\r\n", 1)[0]
    assert headers["gemini://localhost/"] == b"20 text/gemini; lang=en"

    pages = {r["url"]: r for r in map(json.loads, (out / "pages.jsonl").read_text().splitlines())}
    home = pages["gemini://localhost/"]
    assert home["outcome"] == "fetched" and home["title"] == "Home"
    assert {"gemini://localhost/a.gmi", "gemini://localhost/sub/"} <= set(home["links"])


def test_a_revisiting_crawl_asks_a_31s_target_again_and_not_the_old_url(tmp_path: Path) -> None:
    """31 (issue 25): the old URL is not revisited, the target is (molly-brown's PermRedirects)."""
    out = tmp_path / "out"
    docs = {"index.gmi": "# Home\n=> old.gmi Moved\n", "new.gmi": "# New\n"}
    moved = '\n[PermRedirects]\n"^/old.gmi$" = "/new.gmi"\n'
    result = molly_crawl(tmp_path, docs, out, "--agent", "testbot", "--cache", "memory", "--timeout", "5",
                         "--min-delay", "0", "--revisit", "--revisit-min", "1", "--revisit-max", "2",
                         config_more=moved, stop_after=7)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    asked: dict[str, list[int]] = {}
    for line in (tmp_path / "access.log").read_text().splitlines():
        fields = line.split("\t")
        asked.setdefault(fields[3], []).append(int(fields[2]))
    assert asked["gemini://localhost/old.gmi"] == [31], asked
    assert asked["gemini://localhost/new.gmi"][:3] == [20, 20, 20], asked  # at 0, 1 and 3 s
    pages = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    old = [r for r in pages if r["url"] == "gemini://localhost/old.gmi"]
    assert len(old) == 1 and old[0]["permanent"] and old[0]["visit"] == 1
