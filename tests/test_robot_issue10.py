"""Robot, cache and fetch fixes of issue 10, each against real servers (nginx, jetforce)."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

import manners
from manners.cache.entry import Entry
from manners.fetch.outcome import ok
from manners.robot import _key
from servers import jetforce, nginx
from sites import Site, sites

CAP = 512_000
HALF = "Allow: /private/s"  # what the cap leaves of the last line


def cut_file() -> bytes:
    """A file whose byte 512,000 falls inside ``Allow: /private/secret-but-public.html``."""
    head = "User-agent: *\nDisallow: /private/\n"
    filler = "# " + "x" * 61 + "\n"  # 64 bytes
    lines = (CAP - len(head) - len(HALF)) // len(filler)
    text = head + filler * lines
    text += "#" * (CAP - len(text) - len(HALF) - 1) + "\n"
    assert len(text) + len(HALF) == CAP
    return (text + "Allow: /private/secret-but-public.html\n" + "# after the cap\n" * 10).encode()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("big")
    (root / "robots.txt").write_bytes(cut_file())
    with nginx(["location = /robots.txt { default_type text/plain; }"], root) as (port,):
        yield f"http://127.0.0.1:{port}"


# -- item 5: one cut, wherever a body is parsed -------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_robot_drops_the_half_line_the_size_cap_cut(big: str, kind: str, tmp_path: Path) -> None:
    cache = "memory" if kind == "memory" else f"sqlite://{tmp_path / 'c.db'}"

    async def go() -> tuple[manners.RobotDecision, manners.Policy, manners.FetchResult]:
        async with manners.Robot("mybot", cache=cache, min_delay=0) as robot:
            d = await robot.decide(big + "/private/secret.html")
            policy = await robot.policy(big)
        async with manners.Robot("mybot", cache=cache, min_delay=0) as again:  # from the store
            if kind == "sqlite":
                assert (await again.decide(big + "/private/secret.html")) == d
        return d, policy, await manners.fetch_robots(big + "/", timeout=10)

    d, policy, fetched = asyncio.run(go())
    assert (d.allowed, d.line, d.rule) == (False, 2, "Disallow: /private/")
    assert policy.entry.truncated and len(policy.entry.body) == CAP
    assert "truncated" in [x.code for x in policy.robots.diagnostics]
    assert fetched.robots.decide(big + "/private/secret.html")[:3] == (False, 2, "Disallow: /private/")


def test_a_cut_file_with_a_byte_order_mark_drops_its_half_line_too() -> None:
    body = b"\xef\xbb\xbf" + cut_file()  # the read stops at the cap, mark included
    r = ok("http://h/robots.txt", "http://h/robots.txt", body[: CAP + 1], 200, CAP)
    assert r.truncated and not r.robots.allowed("http://h/private/secret.html")
    assert {"truncated", "bom"} <= {x.code for x in r.robots.diagnostics}


def test_cache_entries_written_before_the_new_fields_still_load() -> None:
    old = '{"url":"http://h/robots.txt","outcome":"ok","status":"200","source":"http://h/robots.txt",'
    old += '"fetched_at":1.0,"expires_at":2.0,"good":"ok","good_at":1.0,"good_status":"200",'
    old += '"body":"VXNlci1hZ2VudDogKgpEaXNhbGxvdzogL3gK","failures":0,"retry_after":null,"meaning":""}'
    e = Entry.loads(old)
    assert (e.truncated, e.fingerprint, e.fingerprint_changed, e.known_hosts) == (False, None, False, ())
    assert e.body == b"User-agent: *\nDisallow: /x\n" and Entry.loads(e.dumps()) == e


# -- bounded memory ------------------------------------------------------------------


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Site]]:
    bodies = [f"User-agent: *\nDisallow: /{n}\n" for n in range(3)]
    with sites(bodies, tmp_path_factory.mktemp("three")) as s:
        yield s


def test_robot_keeps_at_most_max_policies(three: list[Site]) -> None:
    async def go() -> tuple[list[bool], list[int], int]:
        async with manners.Robot("mybot", cache="memory", min_delay=0, max_policies=2) as robot:
            answers, held = [], []
            for _ in range(2):
                for n, site in enumerate(three):  # and the same servers under another name
                    for base in (site.url, site.url.replace("127.0.0.1", "localhost")):
                        answers.append(await robot.allowed(f"{base}/{n}/x"))
                        held.append(len(robot._known))
            return answers, held, len(robot._pending)

    answers, held, pending = asyncio.run(go())
    assert answers == [False] * 12 and max(held) == 2 and pending == 0
    robot = manners.Robot(cache="memory")
    assert robot.max_policies == 10_000
    with pytest.raises(ValueError, match="max_policies"):
        manners.Robot(cache="memory", max_policies=0)


# -- SyncRobot: nothing left pending; a clear error inside a running loop -------------


class Interrupted(Exception):
    """What a signal raises in the middle of a blocking call, like Ctrl-C's KeyboardInterrupt."""


def test_sync_robot_cut_short_leaves_no_pending_task(caplog: pytest.LogCaptureFixture) -> None:
    silent = socket.create_server(("127.0.0.1", 0))  # accepts connections, never answers
    port = silent.getsockname()[1]

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            robot = manners.SyncRobot("mybot", cache="memory", timeout=20)
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            start = time.monotonic()
            with pytest.raises(Interrupted):
                robot.allowed(f"http://127.0.0.1:{port}/page")
            assert time.monotonic() - start < 5
            loop = robot._loop
            left = asyncio.all_tasks(loop)  # the call and the fetch it shields, cancelled
            robot.close()
            assert loop.is_closed() and all(t.done() for t in left) and not asyncio.all_tasks(loop)
            del robot, left, loop
            gc.collect()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        silent.close()
    assert "destroyed but it is pending" not in caplog.text, caplog.text


def test_sync_robot_inside_a_running_loop_says_to_use_robot(three: list[Site]) -> None:
    async def construct() -> None:
        manners.SyncRobot("mybot", cache="memory")

    with pytest.raises(RuntimeError, match=r"running event loop.*manners\.Robot"):
        asyncio.run(construct())

    robot = manners.SyncRobot("mybot", cache="memory", min_delay=0)

    async def call() -> None:
        robot.allowed(three[0].url + "/0")

    with pytest.raises(RuntimeError, match=r"running event loop.*manners\.Robot"):
        asyncio.run(call())
    assert not robot.allowed(three[0].url + "/0/x")  # still works outside
    robot.close()


# -- IPv6 ----------------------------------------------------------------------------


def test_ipv6_authorities_keep_their_brackets() -> None:
    assert _key("http://[::1]/robots.txt") == "http://[::1]:80"
    assert _key("https://[2001:DB8::1]:8443/x?y") == "https://[2001:db8::1]:8443"
    assert _key("gemini://[::1]") == "gemini://[::1]:1965"


def test_robot_on_an_ipv6_loopback_server(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET6) as s:  # this machine has ::1 (a failure here says it has not)
        s.bind(("::1", 0))
        v6 = s.getsockname()[1]
    block = (
        f"listen [::1]:{v6}; location = /robots.txt"
        " { default_type text/plain; return 200 'User-agent: *\\nDisallow: /private\\n'; }"
    )
    cache = f"sqlite://{tmp_path / 'c.db'}"
    with nginx([block], tmp_path):
        base = f"http://[::1]:{v6}"

        async def go() -> tuple[manners.RobotDecision, manners.Policy, float]:
            async with manners.Robot("mybot", cache=cache, min_delay=0.2) as robot:
                d = await robot.decide(base + "/private/x")
                await robot.wait(base + "/a")
                return d, await robot.policy(base), await robot.wait(base + "/b")

        d, policy, waited = asyncio.run(go())
    assert (d.allowed, d.rule, d.outcome, d.robots_url) == (
        False,
        "Disallow: /private",
        "ok",
        base + "/robots.txt",
    )
    assert policy.key == base and waited > 0.1
    with sqlite3.connect(tmp_path / "c.db") as db:
        assert [k for (k,) in db.execute("SELECT key FROM entries")] == [base]
        assert [k for (k,) in db.execute("SELECT key FROM slots")] == [base]


# -- names and sizes -----------------------------------------------------------------


def test_robot_rejects_a_name_with_no_product_token() -> None:
    with pytest.raises(ValueError, match="does not start with a product token"):
        manners.Robot("AB42bot", cache="memory")
    with pytest.raises(ValueError, match="product token"):
        manners.Robot("", cache="memory")
    for fine in ("*", "mybot", "mybot/1.0 (+http://x)", " mybot "):
        assert manners.Robot(fine, cache="memory").agent == fine


def test_robot_inputs_of_the_wrong_kind() -> None:
    for bad in (None, b"mybot"):
        with pytest.raises(TypeError, match=r"agent must be a str \(a robot's name such as 'mybot'\)"):
            manners.Robot(bad, cache="memory")  # type: ignore[arg-type]
    for size in (0, -1):
        with pytest.raises(ValueError, match="max_bytes must be a positive number of bytes"):
            manners.Robot(cache="memory", max_bytes=size)
    with pytest.raises(TypeError, match="agent must be a str"):
        manners.SyncRobot(None, cache="memory")  # type: ignore[arg-type]


# -- item 3: the spacing is read under the authority's scheme -------------------------


def test_capsule_crawl_delay_with_no_user_agent_line(tmp_path: Path) -> None:
    (tmp_path / "robots.txt").write_text("Crawl-delay: 4\nDisallow: /private\n")
    with jetforce(tmp_path) as port:
        url = f"gemini://localhost:{port}/page"

        async def go() -> tuple[float, bool, str]:
            async with manners.Robot("mybot", cache="memory", min_delay=1) as robot:
                policy = await robot.policy(url)
                return robot.delay(url), await robot.allowed(url), policy.entry.outcome

        assert asyncio.run(go()) == (4.0, True, "ok")


# -- refresh ---------------------------------------------------------------------------


def test_refresh_reads_an_edited_robots_txt_once_per_authority(tmp_path: Path) -> None:
    root, log = tmp_path / "www", tmp_path / "access.log"
    root.mkdir()
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /old\n")
    cache = f"sqlite://{tmp_path / 'c.db'}"
    block = f"access_log {log}; location = /robots.txt {{ default_type text/plain; }}"
    with nginx([block], root) as (port,):
        site = Site(f"http://127.0.0.1:{port}", log)

        async def go() -> tuple[list[bool], int, list[bool], int]:
            async with manners.Robot("mybot", cache=cache, min_delay=0) as robot:
                before = [await robot.allowed(site.url + "/old"), await robot.allowed(site.url + "/new")]
            fetched = site.robots_fetches()
            (root / "robots.txt").write_text("User-agent: *\nDisallow: /new\n")
            robots = [manners.Robot("mybot", cache=cache, min_delay=0) for _ in range(3)]
            try:
                assert await robots[0].allowed(site.url + "/new")  # the cached copy is still fresh
                policies = await asyncio.gather(
                    *(r.policy(site.url + "/x", refresh=True) for r in robots for _ in range(3))
                )
                after = [
                    await robots[0].allowed(site.url + "/old"),
                    await robots[0].allowed(site.url + "/new"),
                ]
                assert all(p.entry.fetched_at == policies[0].entry.fetched_at for p in policies)
            finally:
                for r in robots:
                    await r.close()
            return before, fetched, after, site.robots_fetches()

        before, fetched, after, fetched_after = asyncio.run(go())
    assert before == [False, True] and after == [True, False]
    assert (fetched, fetched_after) == (1, 2)


# -- Gemini certificates remembered between runs -----------------------------------------


def test_a_new_gemini_certificate_is_noticed_by_the_next_run(tmp_path: Path) -> None:
    root = tmp_path / "capsule"
    root.mkdir()
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private\n")
    cache = f"sqlite://{tmp_path / 'c.db'}"

    async def run(url: str) -> Entry:
        async with manners.Robot("mybot", cache=cache, min_delay=0) as robot:
            return (await robot.policy(url, refresh=True)).entry

    with jetforce(root) as port:
        url = f"gemini://localhost:{port}/page"
        first = asyncio.run(run(url))
    with jetforce(root, port=port):  # a new throw-away certificate on the same host:port
        second = asyncio.run(run(url))
        third = asyncio.run(run(url))
    assert first.outcome == second.outcome == "ok" and len(first.fingerprint or "") == 64
    assert not first.fingerprint_changed
    assert second.fingerprint != first.fingerprint and second.fingerprint_changed
    assert third.fingerprint == second.fingerprint and not third.fingerprint_changed
