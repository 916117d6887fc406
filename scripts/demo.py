"""Serve a generated Gopher hole (gophernicus) and Gemini capsule (jetforce) on loopback and
crawl them with ``manners crawl``, then show what was written and what robots.txt refused.

Run through ``scripts/demo`` (which runs ``scripts/setup`` first).  The servers stop on exit,
Ctrl-C included.
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import servers
import smallnet_site
from manners.terminal import safe
from proxy import logging_proxy

CRAWL_TIMEOUT = 300.0  # seconds: the demo site takes about 20 s at the default 1 s delay


def say(text: str) -> None:
    print(f"demo: {text}", flush=True)


def show_results(out: Path) -> None:
    say(f"files written in {out}:")
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        print(f"  {path.relative_to(out)}  ({path.stat().st_size} bytes)")
    pages = out / "pages.jsonl"
    if not pages.exists():
        say("no pages.jsonl was written")
        return
    refused = []
    for line in pages.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("outcome") == "disallowed":
            refused.append(record)
    say(f"{len(refused)} URL(s) disallowed by robots.txt, never requested:")
    for record in refused:
        url, rule = safe(str(record.get("url"))), safe(str(record.get("rule")))
        print(f"  {url}\n      robots.txt line {record.get('line')}: {rule}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", default="indexer", help="crawler role (default: indexer)")
    parser.add_argument("--agent", default="demobot")
    parser.add_argument("--keep", type=Path, help="write the crawl here instead of a temporary directory")
    args = parser.parse_args()
    # Ctrl-C and SIGTERM unwind through the with blocks below, which stop the servers.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with tempfile.TemporaryDirectory(prefix="manners-demo-") as tmp:
        work = Path(tmp)
        out = args.keep or work / "crawl"
        gopher_port, gemini_port = servers.free_port(), servers.free_port()
        site = smallnet_site.generate(
            work / "site",
            gophernicus_port=gopher_port,
            pygopherd_port=servers.free_port(),
            gemini_port=gemini_port,
        )
        say(f"generated a Gopher hole and a Gemini capsule in {site.root}")
        try:
            # each server listens on a port of its own and names the proxy's in its menus/URLs
            with (
                servers.gophernicus(site.gophernicus_root, advertised_port=gopher_port) as listen,
                servers.jetforce_hosts([site.gemini_root], [gemini_port]) as jet,
                logging_proxy(listen, port=gopher_port) as gproxy,
                logging_proxy(jet.listen_ports[0], port=gemini_port, gopher=False) as jproxy,
            ):
                say(f"gophernicus serves {site.gophernicus_url} (via port {gproxy.port})")
                say(f"jetforce serves {site.gemini_url} (via port {jproxy.port})")
                cmd = [sys.executable, "-m", "manners", "crawl", site.gophernicus_url, site.gemini_url,
                       "--agent", args.agent, "--role", args.role, "--out", str(out)]  # fmt: skip
                say(f"running: {shlex.join(cmd)}")
                try:
                    code = subprocess.run(cmd, timeout=CRAWL_TIMEOUT).returncode
                except subprocess.TimeoutExpired:
                    say(f"the crawl did not finish in {CRAWL_TIMEOUT:g} s")
                    code = 1
                say(f"manners crawl exited with status {code}")
                say(f"gophernicus saw {len(gproxy.selectors())} request(s), jetforce {len(jet.urls())}")
        except KeyboardInterrupt:
            say("interrupted: servers stopped")
            return 130
        show_results(out)
        if args.keep is None:
            say("(the crawl directory is temporary: pass --keep DIR to keep it)")
        say("to crawl the real small net: manners crawl gemini://geminiprotocol.net/ "
            "gopher://gopher.floodgap.com/ --agent YOURBOT --role indexer --out DIR")  # fmt: skip
        return code


if __name__ == "__main__":
    sys.exit(main())
