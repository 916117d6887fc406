"""An ``--nft`` file loaded and tried, inside a private network namespace, by test_watch_nft.py.

Run under ``unshare -n`` (a network namespace of its own: nothing here touches the host's
firewall).  It brings ``lo`` up with two IPv6 test addresses beside 127.0.0.0/8, starts a TCP
server on 127.0.0.1 and on ::1, loads FILE with ``nft -f``, runs the admin's two drop lines
(manners.watch.nft.DROP_LINES) and tries a connection from each source address; then, for each
further FILE, loads it over the first (no drop line added again) and tries them again.  It prints
JSON: for each load, the outcome per source ("connected" or "dropped": no answer within
TIMEOUT s) and ``nft list table inet manners`` as it stood.

usage: python nft_driver.py FILE [FILE...]
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import threading

from manners.watch.nft import DROP_LINES

TIMEOUT = 0.5
SOURCES = ("127.0.0.2", "127.0.0.3", "2001:db8:1::2", "2001:db8:2::3")


def run(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: status {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def serve(family: socket.AddressFamily, host: str) -> int:
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, 0))
    server.listen(16)

    def accept() -> None:
        while True:
            conn, _ = server.accept()
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    port: int = server.getsockname()[1]
    return port


def attempt(source: str, ports: dict[int, int]) -> str:
    family = socket.AF_INET6 if ":" in source else socket.AF_INET
    target = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    with socket.socket(family, socket.SOCK_STREAM) as client:
        client.settimeout(TIMEOUT)
        client.bind((source, 0))
        try:
            client.connect((target, ports[family]))
        except (TimeoutError, OSError):
            return "dropped"
    return "connected"


def main() -> int:
    files = sys.argv[1:]
    run("ip", "link", "set", "lo", "up")
    for address in ("2001:db8:1::2/128", "2001:db8:2::3/128"):
        run("ip", "-6", "addr", "add", address, "dev", "lo", "nodad")
    ports = {
        socket.AF_INET: serve(socket.AF_INET, "127.0.0.1"),
        socket.AF_INET6: serve(socket.AF_INET6, "::1"),
    }
    loads = []
    for i, path in enumerate(files):
        run("nft", "-f", path)
        if i == 0:
            for line in DROP_LINES:
                run(*shlex.split(line))
        outcome = {source: attempt(source, ports) for source in SOURCES}
        loads.append(
            {"file": path, "outcome": outcome, "table": run("nft", "list", "table", "inet", "manners")}
        )
    print(json.dumps(loads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
