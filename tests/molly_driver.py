"""molly-brown and a crawl of it, run inside a private network namespace by test_crawl_molly.py.

Debian's molly-brown binds every interface whatever its configuration says, so the test runs this
script under ``unshare -n`` (a network namespace of its own, with only ``lo`` up): there, binding
everything binds loopback only. This script starts molly-brown with the given configuration,
waits until it accepts on 127.0.0.1:PORT, runs ``python -m manners crawl ARGS`` (its output goes
to this script's), stops molly-brown and exits with the crawl's status (3: molly-brown did not
start; its output is in molly.out beside the configuration).  With MANNERS_STOP_AFTER=S in the
environment the crawl is sent SIGTERM after S seconds (a revisiting crawl never ends by itself).

usage: python molly_driver.py CONFIG PORT CRAWL-ARG...
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

START_TIMEOUT = 10.0
CRAWL_TIMEOUT = 120.0


def main() -> int:
    config, port, *crawl = sys.argv[1:]
    work = Path(config).parent
    with open(work / "molly.out", "wb") as out:
        server = subprocess.Popen(
            ["molly-brown", "-c", config], stdout=out, stderr=subprocess.STDOUT, cwd=work
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if server.poll() is not None:
                print(f"molly-brown exited with status {server.returncode}", file=sys.stderr)
                return 3
            try:
                socket.create_connection(("127.0.0.1", int(port)), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    print(f"molly-brown did not listen on port {port}", file=sys.stderr)
                    return 3
                time.sleep(0.05)
        crawler = subprocess.Popen([sys.executable, "-m", "manners", "crawl", *crawl])
        stop_after = os.environ.get("MANNERS_STOP_AFTER")  # a crawl that never ends (--revisit): SIGTERM then
        try:
            return crawler.wait(float(stop_after) if stop_after else CRAWL_TIMEOUT)
        except subprocess.TimeoutExpired:
            crawler.send_signal(signal.SIGTERM if stop_after else signal.SIGKILL)
            return crawler.wait(30)
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    sys.exit(main())
