"""Spacing by the server's clock: a host that asks for ``Crawl-delay: D`` never sees two
connections closer than D, measured where the server is (a logging proxy's accept times in
front of gophernicus and jetforce), over many requests: the crawler spaces each request from
when the one before truly left (its connection made), not from when its slot was granted."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proxy import logging_proxy
from servers import gophernicus, jetforce_hosts

pytestmark = pytest.mark.serial  # asserts how long things take: one worker

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
DELAY = 0.25  # robots.txt's Crawl-delay
PAGES = 50


def gaps(times: list[float]) -> list[float]:
    return [round(b - a, 4) for a, b in itertools.pairwise(sorted(times))]


def test_no_two_requests_closer_than_the_crawl_delay_on_the_wire(tmp_path: Path) -> None:
    hole, capsule = tmp_path / "hole", tmp_path / "capsule"
    hole.mkdir()
    capsule.mkdir()
    robots = f"User-agent: *\nCrawl-delay: {DELAY}\n"
    (hole / "robots.txt").write_text(robots)
    (capsule / "robots.txt").write_text(robots)
    for i in range(PAGES):
        (hole / f"page{i:02}.txt").write_text(f"page {i}\n")
        (capsule / f"page{i:02}.gmi").write_text(f"# page {i}\n")
    (capsule / "index.gmi").write_text("".join(f"=> page{i:02}.gmi\n" for i in range(PAGES)))
    with logging_proxy(0, gopher=True) as gopher_proxy, logging_proxy(0, gopher=False) as gemini_proxy:
        servers = (  # the proxies first: the servers' menus and links name them
            gophernicus(hole, advertised_port=gopher_proxy.port, options=["-na"]),
            jetforce_hosts([capsule], [gemini_proxy.port]),
        )
        with servers[0] as gopher_port, servers[1] as jet:
            gopher_proxy.upstream = ("127.0.0.1", gopher_port)
            gemini_proxy.upstream = ("127.0.0.1", jet.listen_ports[0])
            seeds = [f"gopher://127.0.0.1:{gopher_proxy.port}/1/", f"gemini://localhost:{gemini_proxy.port}/"]
            cmd = [sys.executable, "-m", "manners", "crawl", *seeds, "--agent", "testbot", "--out",
                   str(tmp_path / "out"), "--min-delay", "0.05", "--cache", f"sqlite://{tmp_path}/robots.db",
                   "--timeout", "10", "--json", "--no-warc"]  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)
            assert done.returncode == 0, done.stderr
            for proxy in (gopher_proxy, gemini_proxy):
                times = [c.opened_monotonic for c in proxy.snapshot()]
                assert len(times) >= PAGES + 2  # robots.txt, the menu and every page
                shown = sorted(gaps(times))[:5]
                assert min(gaps(times)) >= DELAY, shown
