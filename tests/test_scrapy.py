"""manners.scrapy in real Scrapy crawls of sites served by nginx on loopback.

Each crawl is a ``CrawlerProcess`` in a subprocess (``scrapy_crawl.py``: a fresh reactor each
time, and every ScrapyDeprecationWarning an error); what was requested is read from nginx's own
access log (format ``timed``: when each request started, and its User-Agent), never from what
the crawl says it did.  The crawls run on the venv's Scrapy (the newest); one runs on the oldest
supported too, which scripts/setup installs beside the venv's.
"""

from __future__ import annotations

import inspect
import itertools
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
import scrapy
from scrapy import signals
from scrapy.core.downloader import Slot
from scrapy.crawler import Crawler
from scrapy.settings import Settings, default_settings
from scrapy.spiders import Spider

import manners
from manners.robot import _key
from manners.scrapy import Addon, RobotParser, RobotsTxtMiddleware
from manners.scrapy.slots import keep_delay
from proxy import self_signed
from servers import Hit, Listen, free_port, nginx, redis_server, timed_log

# in this process too, a deprecation is a failure: the add-on must run warning-free
pytestmark = pytest.mark.filterwarnings("error::scrapy.exceptions.ScrapyDeprecationWarning")

CRAWL = Path(__file__).with_name("scrapy_crawl.py")
CRAWL_TIMEOUT = 60.0  # seconds for one crawl subprocess
OLDEST_SCRAPY = "2.13"  # pyproject.toml's lower bound (scrapy>=2.13)
# scripts/setup installs it here, beside the venv's own (the newest): its compiled parts must
# match the interpreter running the tests, whose venv this is.
OLDEST_SCRAPY_PATH = Path(sys.prefix) / f"scrapy-{OLDEST_SCRAPY}"
MYBOT = "mybot/1.0 (+http://example.org/bot)"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
BASE: dict[str, Any] = {
    "ADDONS": {"manners.scrapy.Addon": 0},
    "LOG_LEVEL": "DEBUG",
    "TELNETCONSOLE_ENABLED": False,
    "USER_AGENT": MYBOT,
}


# -- running crawls ---------------------------------------------------------------------


@dataclass
class Crawl:
    """What one crawl subprocess wrote: its spider's events, stats and log."""

    events: list[dict[str, Any]] = field(default_factory=list)
    log: str = ""
    output: str = ""  # the subprocess's stdout and stderr

    @property
    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self._last("stats")
        return stats

    @property
    def scrapy_version(self) -> str:
        """The version of the Scrapy that ran the crawl."""
        return str(self._last("scrapy"))

    def _last(self, key: str) -> Any:
        found = [e[key] for e in self.events if key in e]
        assert found, f"the crawl wrote no {key}; its log ends:\n{self.log[-3000:]}"
        return found[-1]

    def seen(self) -> set[str]:
        return {e["seen"] for e in self.events if "seen" in e}

    def failed(self) -> list[tuple[str, str]]:
        """(url, error) for each request that failed or was ignored."""
        return [(e["failed"], e["error"]) for e in self.events if "failed" in e]

    def robots_parsed(self) -> list[str]:
        return [e["robots_parsed"] for e in self.events if "robots_parsed" in e]


class Running:
    """One crawl subprocess; ``pythonpath`` goes first on its sys.path (another Scrapy, say)."""

    def __init__(
        self,
        tmp: Path,
        name: str,
        settings: dict[str, Any],
        requests: Sequence[str | tuple[str, float] | dict[str, Any]],
        pythonpath: Path | None = None,
    ):
        self.out, self.log = tmp / f"{name}.crawl.jsonl", tmp / f"{name}.crawl.log"
        config = {
            "settings": {**BASE, "LOG_FILE": str(self.log), **settings},
            "requests": [
                r
                if isinstance(r, dict)
                else {"url": r, "at": 0.0}
                if isinstance(r, str)
                else {"url": r[0], "at": r[1]}
                for r in requests
            ],
            "out": str(self.out),
        }
        path = tmp / f"{name}.crawl.json"
        path.write_text(json.dumps(config))
        env = dict(os.environ)
        if pythonpath is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [sys.executable, str(CRAWL), str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
        )

    def wait(self) -> Crawl:
        try:
            output, _ = self.proc.communicate(timeout=CRAWL_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError(f"the crawl took more than {CRAWL_TIMEOUT:g} s") from None
        log = self.log.read_text(errors="replace") if self.log.exists() else ""
        text = output.decode(errors="replace")
        assert self.proc.returncode == 0, f"the crawl failed:\n{text[-3000:]}\n{log[-3000:]}"
        events = [json.loads(line) for line in self.out.read_text().splitlines()] if self.out.exists() else []
        return Crawl(events, log, text)


def crawl(
    tmp: Path,
    name: str,
    settings: dict[str, Any],
    requests: Sequence[str | tuple[str, float] | dict[str, Any]],
    pythonpath: Path | None = None,
) -> Crawl:
    return Running(tmp, name, settings, requests, pythonpath).wait()


def paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


def write_site(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def robots_block(log: Path, robots: str) -> str:
    """A server block body: access log ``timed``, robots.txt given inline, pages from the root."""
    quoted = robots.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    robots_txt = f"location = /robots.txt {{ default_type text/plain; return 200 '{quoted}'; }}"
    return f"access_log {log} timed; {robots_txt}"


PAGES = {f"/{name}": f"<html><body>{name}</body></html>" for name in ("index.html", "about.html")} | {
    "/private/secret.html": "<html>secret</html>",
    "/private/open.html": "<html>open</html>",
}


# -- the product token --------------------------------------------------------------------

TOKEN_ROBOTS = """\
User-agent: mybot
Disallow: /private/
Allow: /private/open.html

User-agent: *
Disallow: /
"""


def test_disallowed_pages_are_never_requested_by_product_token(tmp_path: Path) -> None:
    """Both ways a spider names itself: the token leading USER_AGENT, or ROBOTSTXT_USER_AGENT
    beside a browser-like USER_AGENT.  Under ``*`` nothing would be fetched at all."""
    root = tmp_path / "www"
    write_site(root, PAGES)
    logs = [tmp_path / "token.log", tmp_path / "browser.log"]
    with nginx([robots_block(log, TOKEN_ROBOTS) for log in logs], root) as ports:
        urls = [[f"http://127.0.0.1:{port}{page}" for page in PAGES] for port in ports]
        token = Running(tmp_path, "token", {}, urls[0])
        browser = Running(
            tmp_path, "browser", {"USER_AGENT": BROWSER, "ROBOTSTXT_USER_AGENT": "mybot"}, urls[1]
        )
        crawls = [token.wait(), browser.wait()]
    for log, urls_, result, user_agent in zip(logs, urls, crawls, (MYBOT, BROWSER), strict=True):
        hits = timed_log(log)
        assert paths(hits)[0] == "/robots.txt"
        assert sorted(paths(hits)[1:]) == ["/about.html", "/index.html", "/private/open.html"]
        assert {h.user_agent for h in hits} == {user_agent}  # robots.txt too went through Scrapy
        secret = urls_[2]
        assert result.failed() == [(secret, "Forbidden by robots.txt (line 2: Disallow: /private/)")]
        assert f"Forbidden by robots.txt: <GET {secret}> (line 2: Disallow: /private/)" in result.log
        stats = result.stats
        assert stats["robotstxt/request_count"] == 1
        assert stats["robotstxt/response_count"] == 1
        assert stats["robotstxt/response_status_count/200"] == 1
        assert stats["robotstxt/forbidden"] == 1
        assert len(result.robots_parsed()) == (
            1 if hasattr(signals, "robots_parsed") else 0
        )  # Scrapy >= 2.18


# -- the Scrapy versions supported --------------------------------------------------------


@pytest.mark.parametrize("oldest", [True, False], ids=[f"scrapy-{OLDEST_SCRAPY}", "scrapy-venv"])
def test_addon_runs_without_warnings_and_names_itself_on_oldest_and_newest_scrapy(
    tmp_path: Path, oldest: bool, cache_url: Callable[[str], str]
) -> None:
    """On the oldest Scrapy supported and on the venv's (the newest): no ScrapyDeprecationWarning
    (scrapy_crawl.py makes each an error; in a signal handler Scrapy logs it as an ERROR),
    nothing logged at WARNING or above, and the start-up log names the add-on.  The cache is a
    SQLite file, so the engine_stopped handler that closes it has real work to do."""
    if oldest:
        assert (OLDEST_SCRAPY_PATH / "scrapy").is_dir(), (
            f"no Scrapy {OLDEST_SCRAPY} in {OLDEST_SCRAPY_PATH}: run scripts/setup"
        )
    root = tmp_path / "www"
    write_site(root, PAGES)
    log = tmp_path / "access.log"
    with nginx([robots_block(log, "User-agent: *\nDisallow: /private/\n")], root) as (port,):
        urls = [f"http://127.0.0.1:{port}{page}" for page in ("/index.html", "/private/secret.html")]
        settings = {"MANNERS_CACHE": cache_url("sqlite")}
        result = crawl(tmp_path, "versions", settings, urls, OLDEST_SCRAPY_PATH if oldest else None)
    if oldest:  # PYTHONPATH really chose the old one
        assert result.scrapy_version.startswith(f"{OLDEST_SCRAPY}."), result.scrapy_version
    else:
        assert result.scrapy_version == scrapy.__version__
    assert paths(timed_log(log)) == ["/robots.txt", "/index.html"]
    assert result.seen() == {urls[0]}
    assert f"Enabled addons:\n[<manners.scrapy.Addon (manners {manners.__version__})>]\n" in result.log
    assert re.findall(r"^.*\] (?:WARNING|ERROR|CRITICAL): .*$", result.log, re.MULTILINE) == []
    assert "Warning" not in result.output


# -- Crawl-delay ------------------------------------------------------------------------


def test_crawl_delay_keeps_requests_apart_with_autothrottle_and_jitter(tmp_path: Path) -> None:
    """Crawl-delay 1 with AutoThrottle on (starting at 0 s), DOWNLOAD_DELAY 0 and Scrapy's
    default ±50 % jitter: every request, robots.txt included, starts at least 1 s after the last."""
    root = tmp_path / "www"
    pages = [f"/p{n}.html" for n in range(4)]
    write_site(root, dict.fromkeys(pages, "<html>page</html>"))
    log = tmp_path / "access.log"
    with nginx([robots_block(log, "User-agent: *\nCrawl-delay: 1\n")], root) as (port,):
        settings = {
            "AUTOTHROTTLE_ENABLED": True,
            "AUTOTHROTTLE_START_DELAY": 0,
            "AUTOTHROTTLE_DEBUG": True,
            "DOWNLOAD_DELAY": 0,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        }
        result = crawl(tmp_path, "delay", settings, [f"http://127.0.0.1:{port}{p}" for p in pages])
    hits = timed_log(log)
    assert sorted(paths(hits)) == sorted(["/robots.txt", *pages])
    gaps = [b.start - a.start for a, b in itertools.pairwise(hits)]
    assert min(gaps) >= 0.995, gaps  # nginx logs times to the millisecond
    assert "[scrapy.extensions.throttle] INFO: slot: 127.0.0.1" in result.log  # AutoThrottle was at work


# -- Crawl-delay kept by a fleet of processes (MANNERS_PACING) ---------------------------

FLEET, PER_WORKER = 3, 3  # Scrapy processes, and the pages each crawls
JITTER = 0.020  # see JITTER in test_load.py: nginx's clock, the event loop and the scheduler


def fleet_crawl(tmp_path: Path, name: str, settings: dict[str, Any]) -> tuple[str, list[Hit], list[Crawl]]:
    """FLEET Scrapy processes started at once on one site (Crawl-delay 1), each crawling its own
    PER_WORKER pages under its own User-Agent (``mybot/1.0 (worker N)``: one robot, told apart in
    nginx's log).  Returns the site, the page requests nginx received, and what each crawl wrote."""
    root = tmp_path / name
    pages = [[f"/w{n}/p{i}.html" for i in range(PER_WORKER)] for n in range(FLEET)]
    write_site(root, {page: "<html>page</html>" for mine in pages for page in mine})
    log = tmp_path / f"{name}.log"
    with nginx([robots_block(log, "User-agent: *\nCrawl-delay: 1\n")], root) as (port,):
        site = f"http://127.0.0.1:{port}"
        workers = [
            Running(
                tmp_path,
                f"{name}{n}",
                {**settings, "USER_AGENT": f"mybot/1.0 (worker {n})"},
                [site + page for page in mine],
            )
            for n, mine in enumerate(pages)
        ]
        crawls = [worker.wait() for worker in workers]
    hits = [h for h in timed_log(log) if h.path != "/robots.txt"]
    assert sorted(paths(hits)) == sorted(page for mine in pages for page in mine)
    for n, (result, mine) in enumerate(zip(crawls, pages, strict=True)):
        assert result.seen() == {site + page for page in mine}
        assert {h.user_agent for h in hits if h.path in mine} == {f"mybot/1.0 (worker {n})"}
    return site, hits, crawls


def gaps(hits: list[Hit]) -> list[float]:
    return [b.start - a.start for a, b in itertools.pairwise(hits)]


@pytest.mark.serial  # nginx's clock against the crawl's, and its length bounded: not beside other tests
def test_three_processes_with_manners_pacing_keep_one_crawl_delay_together(
    tmp_path: Path, cache_url: Callable[[str], str]
) -> None:
    """Three Scrapy processes, each with its own memory cache, share only MANNERS_PACING (a real
    redis-server): every page request to the host, whichever process sent it, starts at least
    the Crawl-delay (1 s) after the last, by nginx's clock.  Scrapy's default ±50 % jitter stays
    on: the slot delay is left alone, so a process does not hold a request again after its fleet
    slot (that would double the wait, and leave requests later than booked): the 9 requests are
    booked back to back, and the whole crawl of the host takes 8 s, not more.  The control, the
    same three processes without MANNERS_PACING: each keeps the Crawl-delay on its own, and the
    host gets requests closer than 1 s."""
    pacing = cache_url("redis")
    site, hits, crawls = fleet_crawl(tmp_path, "paced", {"MANNERS_PACING": pacing})
    spaced = gaps(hits)
    assert min(spaced) >= 1.0 - JITTER, spaced
    assert max(spaced) < 1.5, spaced  # booked back to back: no process waits again on its own
    assert [c.stats["robotstxt/paced"] for c in crawls] == [PER_WORKER] * FLEET
    # the slots were Robot.wait()'s, under the key a Robot gives the authority
    assert set(redis.Redis.from_url(pacing, decode_responses=True).keys("manners:*")) == {
        f"manners:slot:{_key(site)}",
        f"manners:start:{_key(site)}",
    }

    _, alone, _ = fleet_crawl(tmp_path, "control", {})
    for n in range(FLEET):  # each process keeps the Crawl-delay by itself...
        assert min(gaps([h for h in alone if h.user_agent.endswith(f"(worker {n})")])) >= 1.0 - JITTER
    assert min(gaps(alone)) < 1.0 - 0.1, gaps(alone)  # ...and not with the others


def test_pacing_without_redis_drops_requests_rather_than_send_them_unpaced(tmp_path: Path) -> None:
    """MANNERS_PACING naming a Redis that does not answer: after MANNERS_PACING_TIMEOUT (1 s
    here) of retries, each page is dropped with IgnoreRequest, and the reason is logged; nginx
    sees robots.txt and no page."""
    root = tmp_path / "www"
    write_site(root, PAGES)
    log = tmp_path / "access.log"
    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    with nginx([robots_block(log, "User-agent: *\nCrawl-delay: 1\n")], root) as (port,):
        urls = [f"http://127.0.0.1:{port}{page}" for page in PAGES]
        settings = {"MANNERS_PACING": down, "MANNERS_PACING_TIMEOUT": 1}
        result = crawl(tmp_path, "down", settings, urls)
    assert paths(timed_log(log)) == ["/robots.txt"]
    failed = result.failed()
    assert sorted(url for url, _ in failed) == sorted(urls)
    unreachable = f"not sent unpaced: no fleet-wide request slot: the Redis cache at {down} is unreachable"
    assert all(error.startswith(unreachable) for _, error in failed), failed
    assert result.stats["robotstxt/pacing_error"] == len(urls)
    assert f"manners pacing: requests wait up to 1 s for Redis: the Redis cache at {down}" in result.log
    assert re.search(r"ERROR: manners pacing: <GET http://127\.0\.0\.1:\d+/\S+> dropped: ", result.log)


def test_pacing_waits_for_a_redis_that_comes_back(tmp_path: Path) -> None:
    """Redis starts a second after the crawl has found it down (its log says so), well within
    MANNERS_PACING_TIMEOUT: the requests wait for it, then go out paced, none dropped."""
    root = tmp_path / "www"
    write_site(root, PAGES)
    log = tmp_path / "access.log"
    port = free_port()
    with nginx([robots_block(log, "User-agent: *\nCrawl-delay: 1\n")], root) as (site,):
        urls = [f"http://127.0.0.1:{site}{page}" for page in PAGES]
        settings = {"MANNERS_PACING": f"redis://127.0.0.1:{port}/0", "MANNERS_PACING_TIMEOUT": 30}
        running = Running(tmp_path, "late", settings, urls)
        waiting = "manners pacing: requests wait up to 30 s for Redis: the Redis cache at"
        deadline = time.monotonic() + CRAWL_TIMEOUT / 2
        while waiting not in (running.log.read_text() if running.log.exists() else ""):
            assert time.monotonic() < deadline and running.proc.poll() is None, "the crawl never asked Redis"
            time.sleep(0.1)
        time.sleep(1.0)  # the requests keep trying meanwhile
        started = time.time()
        with redis_server(port):
            result = running.wait()
    hits = timed_log(log)
    pages = [h for h in hits if h.path != "/robots.txt"]
    assert sorted(paths(pages)) == sorted(PAGES)
    assert pages[0].start >= started  # no page before Redis was up
    assert min(gaps(pages)) >= 1.0 - JITTER, gaps(pages)
    assert result.failed() == []
    assert result.stats["robotstxt/paced"] == len(PAGES)
    assert "robotstxt/pacing_error" not in result.stats
    assert f"manners pacing: the Redis at redis://127.0.0.1:{port}/0 answers again" in result.log


# -- robots.txt that cannot be read -----------------------------------------------------


def test_robots_503_disallows_everything_and_is_asked_again_after_retry_after(tmp_path: Path) -> None:
    """503 with Retry-After 2: nothing is crawled, and robots.txt is asked again, not before 2 s.
    A 500 (no Retry-After) is not asked again within the crawl: the backoff starts at a minute."""
    root = tmp_path / "www"
    write_site(root, {"/page.html": "<html>page</html>"})
    logs = [tmp_path / "busy.log", tmp_path / "broken.log"]
    blocks = [
        f"access_log {logs[0]} timed;"
        " location = /robots.txt { add_header Retry-After 2 always; return 503; }",
        f"access_log {logs[1]} timed; location = /robots.txt {{ return 500; }}",
    ]
    with nginx(blocks, root) as ports:
        requests = [(f"http://127.0.0.1:{port}/page.html", at / 2) for at in range(8) for port in ports]
        result = crawl(tmp_path, "unreachable", {}, requests)
    busy, broken = timed_log(logs[0]), timed_log(logs[1])
    assert set(paths(busy)) == {"/robots.txt"} and set(paths(broken)) == {"/robots.txt"}  # no page
    assert len(broken) == 1
    assert len(busy) >= 2
    assert busy[1].start - busy[0].start >= 1.99
    errors = [error for _, error in result.failed()]
    assert len(errors) == len(requests)
    assert all(e.startswith("Forbidden by robots.txt (") for e in errors)
    assert any("the server asked us to wait" in e for e in errors)
    assert any("robots.txt is unreachable (500)" in e for e in errors)
    assert result.stats["robotstxt/response_status_count/503"] == len(busy)
    assert result.stats["robotstxt/forbidden"] == len(requests)


NOT_FOUND_PAGE = """\
<html><body><p>Not found. While you are here, our rules:</p>
User-agent: *
Disallow: /
</body></html>
"""


def test_robots_404_html_page_allows_everything(tmp_path: Path) -> None:
    """An HTML 404 page with rule-like lines: manners reads the status (everything allowed);
    Scrapy's own middleware, run beside it as a control, parses the page and fetches nothing
    (its other requests wait half a second: requests that wait for robots.txt together can
    get through Scrapy's middleware unchecked, a race of its own)."""
    root = tmp_path / "www"
    write_site(root, {**PAGES, "/404.html": NOT_FOUND_PAGE})
    logs = [tmp_path / "manners.log", tmp_path / "scrapy.log"]
    blocks = [f"access_log {log} timed; error_page 404 /404.html;" for log in logs]
    with nginx(blocks, root) as ports:
        urls = [[f"http://127.0.0.1:{port}{page}" for page in PAGES] for port in ports]
        ours = Running(tmp_path, "manners", {}, urls[0])
        staggered = [(urls[1][0], 0.0), *[(url, 0.5) for url in urls[1][1:]]]
        control = Running(tmp_path, "scrapy", {"ADDONS": {}, "ROBOTSTXT_OBEY": True}, staggered)
        result, _ = ours.wait(), control.wait()
    assert sorted(paths(timed_log(logs[0]))) == sorted(["/robots.txt", *PAGES])
    assert {h.status for h in timed_log(logs[0]) if h.path == "/robots.txt"} == {404}
    assert result.seen() == set(urls[0])
    assert result.stats["robotstxt/response_status_count/404"] == 1
    assert paths(timed_log(logs[1])) == ["/robots.txt"]  # Scrapy's reading: the page's rules


# -- usage preferences (Content-Usage, Content-Signal) ------------------------------------

USAGE_ROBOTS = """\
User-agent: *
Disallow: /
Content-Usage: train-ai=y

User-agent: mybot
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y
Content-Signal: search=yes, ai-train=no
Disallow: /private/
"""
UNSTATED = {key: ["unstated", None] for key in ("train-ai", "ai-use", "search")}
NO_SIGNALS = {key: ["unstated", None] for key in ("search", "ai-input", "ai-train")}


def usage_seen(categories: dict[str, list[Any]], signals: dict[str, list[Any]]) -> dict[str, Any]:
    """What scrapy_crawl.py records of a response's ``meta["manners_usage"]`` (``usage_record``)."""
    return {
        "type": "manners.robots.Usage",
        "allowed": True,
        "categories": categories,
        "signals": signals,
        "train-ai": categories["train-ai"][0],
        "pickles": True,
    }


def test_each_response_carries_the_usage_preferences_of_its_url_for_this_robot(tmp_path: Path) -> None:
    """``response.meta["manners_usage"]``: the ``manners.Usage`` of the response's URL for the
    crawl's robot (mybot's group, not ``*``'s), each preference with its line, the path-scoped
    ``Content-Usage`` winning under /ai-ok/; it pickles back equal.  Read from the robots.txt
    fetched for the verdicts: nginx sees it once per site.  A redirect from /moved.html into
    /ai-ok/ is checked again, and carries the preferences of where it landed.  A file without
    such lines and a 404 give every category unstated; a request sent with
    ``dont_obey_robotstxt`` has no key."""
    root = tmp_path / "www"
    write_site(
        root, {**PAGES, "/ai-ok/page.html": "<html>ok</html>", "/ai-ok/landing.html": "<html>ok</html>"}
    )
    logs = [tmp_path / "usage.log", tmp_path / "plain.log", tmp_path / "none.log"]
    blocks = [
        robots_block(logs[0], USAGE_ROBOTS) + " location = /moved.html { return 301 /ai-ok/landing.html; }",
        robots_block(logs[1], "User-agent: *\nDisallow: /private/\n"),
        f"access_log {logs[2]} timed;",  # no robots.txt: 404
    ]
    with nginx(blocks, root) as ports:
        usage, plain, none = (f"http://127.0.0.1:{port}" for port in ports)
        pages = [f"{usage}{page}" for page in ("/index.html", "/ai-ok/page.html", "/private/secret.html")]
        unchecked = {"url": f"{usage}/about.html", "at": 0.0, "meta": {"dont_obey_robotstxt": True}}
        requests = [*pages, f"{usage}/moved.html", f"{plain}/index.html", f"{none}/index.html", unchecked]
        result = crawl(tmp_path, "usage", {}, requests)
    crawled = ["/about.html", "/ai-ok/landing.html", "/ai-ok/page.html", "/index.html", "/moved.html"]
    assert sorted(paths(timed_log(logs[0]))) == sorted(["/robots.txt", *crawled])
    assert [paths(timed_log(log)) for log in logs[1:]] == [["/robots.txt", "/index.html"]] * 2
    assert result.stats["robotstxt/request_count"] == 3  # one robots.txt per site: none for preferences
    signals = {"search": ["yes", 8], "ai-input": ["unstated", None], "ai-train": ["no", 8]}
    assert {e["seen"]: e["usage"] for e in result.events if "seen" in e} == {
        pages[0]: usage_seen({**UNSTATED, "train-ai": ["no", 6]}, signals),
        pages[1]: usage_seen({**UNSTATED, "train-ai": ["yes", 7]}, signals),
        f"{usage}/ai-ok/landing.html": usage_seen(
            {**UNSTATED, "train-ai": ["yes", 7]}, signals
        ),  # redirected
        f"{plain}/index.html": usage_seen(UNSTATED, NO_SIGNALS),
        f"{none}/index.html": usage_seen(UNSTATED, NO_SIGNALS),
        f"{usage}/about.html": None,
    }
    assert [url for url, _ in result.failed()] == [pages[2]]  # forbidden: no response, no preferences


# -- one robots.txt per scheme, host and port ------------------------------------------


def loopback_address() -> str:
    """A loopback address other than 127.0.0.1 whose ports 80 and 443 are free (to bind them, be root)."""
    for _ in range(20):
        address = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(1, 254)}"
        try:
            for port in (80, 443):
                with socket.socket() as sock:
                    sock.bind((address, port))
        except PermissionError:
            raise AssertionError(
                "binding ports 80 and 443 needs root (CI and developers run as root)"
            ) from None
        except OSError:
            continue
        return address
    raise AssertionError("no loopback address with ports 80 and 443 free")


def tls_1_2_only() -> dict[str, str]:
    """Scrapy settings for TLS 1.2 only: DOWNLOAD_TLS_MIN/MAX_VERSION where Scrapy has them (it
    deprecates DOWNLOADER_CLIENT_TLS_METHOD then), else DOWNLOADER_CLIENT_TLS_METHOD."""
    if hasattr(default_settings, "DOWNLOAD_TLS_MIN_VERSION"):
        return {"DOWNLOAD_TLS_MIN_VERSION": "TLSv1.2", "DOWNLOAD_TLS_MAX_VERSION": "TLSv1.2"}
    return {"DOWNLOADER_CLIENT_TLS_METHOD": "TLSv1.2"}


def test_http_and_https_of_one_host_read_their_own_robots_txt(tmp_path: Path) -> None:
    """http://H/ and https://H/ on their default ports (one "netloc" for Scrapy's own cache)
    are two authorities: each is governed by its own robots.txt.  nginx has a self-signed
    certificate; robots.txt is fetched by Scrapy with its TLS settings (TLS 1.2 only here)."""
    root = tmp_path / "www"
    write_site(root, {"/a.html": "a", "/b.html": "b"})
    tls = tmp_path / "tls"
    tls.mkdir()
    self_signed(tls)
    address = loopback_address()
    logs = [tmp_path / "http.log", tmp_path / "https.log"]
    blocks = [
        robots_block(logs[0], "User-agent: *\nDisallow: /a.html\n"),
        robots_block(logs[1], "User-agent: *\nDisallow: /b.html\n")
        + f" ssl_certificate {tls / 'cert.pem'}; ssl_certificate_key {tls / 'key.pem'};"
        " ssl_protocols TLSv1.2;",
    ]
    listen = [Listen(address, 80), Listen(address, 443, ssl=True)]
    with nginx(blocks, root, listen=listen):
        urls = [
            f"{scheme}://{address}/{page}" for scheme in ("http", "https") for page in ("a.html", "b.html")
        ]
        result = crawl(tmp_path, "schemes", tls_1_2_only(), urls)
    http, https = timed_log(logs[0]), timed_log(logs[1])
    assert sorted(paths(http)) == ["/b.html", "/robots.txt"]
    assert sorted(paths(https)) == ["/a.html", "/robots.txt"]
    assert {h.scheme for h in https} == {"https"}
    assert result.seen() == {f"http://{address}/b.html", f"https://{address}/a.html"}
    assert result.stats["robotstxt/request_count"] == 2


# -- one fetch for many processes -------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_two_processes_sharing_a_cache_fetch_robots_txt_once(
    tmp_path: Path, kind: str, cache_url: Callable[[str], str]
) -> None:
    root = tmp_path / "www"
    write_site(root, PAGES)
    log = tmp_path / "access.log"
    with nginx([robots_block(log, "User-agent: *\nDisallow: /private/\n")], root) as (port,):
        urls = [f"http://127.0.0.1:{port}{page}" for page in PAGES]
        settings = {"MANNERS_CACHE": cache_url(kind)}
        both = [Running(tmp_path, f"worker{n}", settings, urls) for n in range(2)]
        crawls = [running.wait() for running in both]
    hits = timed_log(log)
    assert paths(hits).count("/robots.txt") == 1
    assert sorted(p for p in paths(hits) if p != "/robots.txt") == sorted(["/about.html", "/index.html"] * 2)
    assert sum(c.stats.get("robotstxt/request_count", 0) for c in crawls) == 1
    for result in crawls:
        assert result.seen() == {urls[0], urls[1]}
        assert result.stats["robotstxt/forbidden"] == 2


# -- redirects and the size cap ---------------------------------------------------------


def redirect_chain(log: Path, hops: int) -> str:
    """robots.txt answering with ``hops`` redirects (301, 302, 307, 308 in turn), then a file."""
    codes = [301, 302, 307, 308]
    names = ["/robots.txt", *[f"/hop{n}" for n in range(1, hops)], "/rules.txt"]
    steps = " ".join(
        f"location = {here} {{ return {codes[n % 4]} {there}; }}"
        for n, (here, there) in enumerate(itertools.pairwise(names))
    )
    return f"access_log {log} timed; {steps} location = /rules.txt {{ default_type text/plain; }}"


def test_redirects_up_to_five_are_followed_and_the_file_is_cut_after_500_kib(tmp_path: Path) -> None:
    root = tmp_path / "www"
    late = "Disallow: /late\n"
    head = "User-agent: *\nDisallow: /early\n"
    padding = "# " + "x" * 97 + "\n"  # 100 bytes
    big = head + padding * (520_000 // len(padding)) + late  # the last rule lies past 512,000 bytes
    write_site(root, {"/rules.txt": "User-agent: *\nDisallow: /x\n", "/big.txt": big, "/x": "x", "/y": "y"})
    write_site(root, {"/early": "e", "/late": "l"})
    logs = [tmp_path / f"{name}.log" for name in ("five", "six", "big")]
    blocks = [
        redirect_chain(logs[0], 5),
        redirect_chain(logs[1], 6),
        f"access_log {logs[2]} timed;"
        f" location = /robots.txt {{ default_type text/plain; alias {root / 'big.txt'}; }}",
    ]
    with nginx(blocks, root) as ports:
        five, six, large = (f"http://127.0.0.1:{port}" for port in ports)
        urls = [five + "/x", five + "/y", six + "/x", six + "/y", large + "/early", large + "/late"]
        result = crawl(tmp_path, "redirects", {}, urls)
    assert paths(timed_log(logs[0])) == [
        "/robots.txt",
        "/hop1",
        "/hop2",
        "/hop3",
        "/hop4",
        "/rules.txt",
        "/y",
    ]
    six_paths = paths(timed_log(logs[1]))  # the sixth redirect is not followed: no robots.txt, allow all
    assert six_paths[:6] == ["/robots.txt", "/hop1", "/hop2", "/hop3", "/hop4", "/hop5"]
    assert sorted(six_paths[6:]) == ["/x", "/y"]
    assert paths(timed_log(logs[2])) == ["/robots.txt", "/late"]
    assert sorted(result.failed()) == sorted(
        [
            (five + "/x", "Forbidden by robots.txt (line 2: Disallow: /x)"),
            (large + "/early", "Forbidden by robots.txt (line 2: Disallow: /early)"),
        ]
    )
    assert result.stats["robotstxt/request_count"] == 3


# -- the parts, without a crawl ---------------------------------------------------------


@pytest.mark.quick
def test_robot_parser_takes_scrapy_arguments() -> None:
    crawler = Crawler(Spider, {"ROBOTSTXT_PARSER": "manners.scrapy.RobotParser"})
    empty = RobotParser.from_crawler(crawler, b"")  # Scrapy's start-up check
    assert empty.allowed("https://example.org/anything", "mybot")
    assert empty.crawl_delay("mybot") is None
    body = b"User-agent: mybot\nCrawl-delay: 2.5\nDisallow: /private/\nAllow: /private/open\n"
    body += b"\nUser-agent: *\nDisallow: /\n"
    parser = RobotParser.from_crawler(crawler, body)
    assert not parser.allowed(b"https://example.org/private/x", b"mybot/1.0 (+http://example.org/bot)")
    assert parser.allowed("https://example.org/private/open", "MyBot/2.0")  # the longest match decides
    assert parser.allowed("https://example.org/public", MYBOT)
    assert not parser.allowed("https://example.org/public", BROWSER)  # mozilla: the * group
    assert parser.crawl_delay(b"mybot/1.0") == 2.5
    assert parser.crawl_delay("otherbot") is None
    assert parser.decide("https://example.org/private/x", MYBOT).line == 3
    with pytest.raises(TypeError, match="user_agent must be str or bytes"):
        parser.allowed("https://example.org/", 42)  # type: ignore[arg-type]


@pytest.mark.quick
def test_addon_replaces_scrapys_middleware() -> None:
    settings = Settings(
        {"DOWNLOADER_MIDDLEWARES": {"scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 543}}
    )
    Addon().update_settings(settings)
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares == {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "manners.scrapy.RobotsTxtMiddleware": 100,
    }
    assert settings.getbool("ROBOTSTXT_OBEY")
    assert settings["ROBOTSTXT_PARSER"] == "manners.scrapy.RobotParser"
    project = Settings()
    project.set("ROBOTSTXT_OBEY", False, priority="project")
    Addon().update_settings(project)
    assert not project.getbool("ROBOTSTXT_OBEY")  # a project that says no is obeyed


@pytest.mark.quick
@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("MANNERS_MAX_DELAY", "soon", "MANNERS_MAX_DELAY must be a number of seconds, not 'soon'"),
        ("MANNERS_TIMEOUT", 0, "MANNERS_TIMEOUT must be a positive number of seconds"),
        ("MANNERS_CACHE", "postgres://x", "MANNERS_CACHE: unknown cache 'postgres://x'"),
        ("MANNERS_PROFILE", "nonsense", "MANNERS_PROFILE: unknown profile 'nonsense'"),
        ("MANNERS_PACING", "memory", "MANNERS_PACING: a redis:// or rediss:// URL is needed .* not 'memory'"),
        ("MANNERS_PACING", "sqlite:///x", "MANNERS_PACING: a redis:// or rediss:// URL is needed"),
        ("MANNERS_PACING", "redis://127.0.0.1:no", "MANNERS_PACING: bad Redis URL 'redis://127.0.0.1:no'"),
        ("MANNERS_PACING_TIMEOUT", 0, "MANNERS_PACING_TIMEOUT must be a positive number of seconds"),
    ],
)
def test_bad_settings_are_named(setting: str, value: object, message: str) -> None:
    """Each refused at start, before any request (never NotConfigured: that would quietly turn
    robots.txt off)."""
    pacing = {"MANNERS_PACING": "redis://127.0.0.1:6379/0"} if setting == "MANNERS_PACING_TIMEOUT" else {}
    crawler = Crawler(Spider, {"ROBOTSTXT_OBEY": True, **pacing, setting: value})
    with pytest.raises(ValueError, match=message):
        RobotsTxtMiddleware(crawler)


def test_import_manners_does_not_import_scrapy() -> None:
    code = (
        "import sys, manners, manners.robotparser; print('scrapy' in sys.modules, 'twisted' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


class Downloader:
    """The two attributes of Scrapy's Downloader that keep_delay reads."""

    def __init__(self, slots: dict[str, Slot]) -> None:
        self.slots = slots


class Req:
    def __init__(self, slot: str) -> None:
        self.meta = {"download_slot": slot}


@pytest.mark.quick
def test_keep_delay_raises_a_slot_so_its_shortest_draw_is_the_crawl_delay() -> None:
    # Scrapy >= 2.19: Slot(concurrency, delay, jitter); before: Slot(concurrency, delay, randomize_delay)
    jittery, plain, slow = Slot(8, 0.0, 0.5), Slot(8, 0.0, 0), Slot(8, 7.0, 0)
    downloader = Downloader({"jittery": jittery, "plain": plain, "slow": slow})
    assert keep_delay(downloader, Req("jittery"), 1.0) == 2.0  # ±50 %: the shortest draw is 1 s
    assert min(jittery.download_delay() for _ in range(2000)) >= 1.0
    assert keep_delay(downloader, Req("plain"), 1.0) == 1.0 and plain.download_delay() == 1.0
    assert keep_delay(downloader, Req("slow"), 1.0) == 7.0  # a larger delay stays
    assert keep_delay(downloader, Req("absent"), 1.0) is None
    if "jitter" in inspect.signature(Slot).parameters:
        wild = downloader.slots["wild"] = Slot(8, 0.0, 1.5)  # ±150 % would draw 0 s at times
        assert keep_delay(downloader, Req("wild"), 1.0) == 2.0 and wild.jitter == 0.5
