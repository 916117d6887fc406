"""``manners serve``: the admin's page on a local port, run by uvicorn.

The command binds the socket itself, so that a port in use or a host that does not resolve
is one sentence and exit status 2, and so that ``--port 0`` (any free port) can say which
port it got, on its first line (``--json``: one JSON object), before it serves.  It binds
127.0.0.1 unless ``--host`` says otherwise.  Ctrl-C stops it (exit status 130).  Starlette and uvicorn are
the ``serve`` extra (``pip install 'manners[serve]'``): the rest of manners runs without.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from ..options import delay
from ..output import Out, UsageError
from ..targets import check_agent
from ..vocabulary import timestamp

EXAMPLES = """examples:
  manners serve                          (the page at http://127.0.0.1:8000/)
  manners serve --port 8080 --agent mybot --role indexer
  manners serve --port 0 --json          (any free port; the first line says which)
  manners serve --host 0.0.0.0           (every interface: anyone who reaches it may use it)

exit status: 130 when stopped with Ctrl-C, as any command interrupted; 2 a usage error
(the port is in use, the host is no address of this machine, the extra is not installed)"""


BACKLOG = 128


def add_parser(sub: Any, common: Callable[..., None]) -> argparse.ArgumentParser:
    """Register ``serve`` on the ``manners`` command's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "serve",
        help="a local web page: a draft or the live file, its findings, every robot's verdicts",
        description="A local web page for the admin of a robots.txt: paste a draft or fetch the live"
        " file, and see its findings on their lines, what every reader decides for each URL, the"
        " draft's verdicts against the live file's, and every profile side by side.  --agent and"
        " --role fill in the form; --cache, --timeout, --max-bytes and --cached govern the live"
        " fetch, as for 'manners fetch'.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--port", type=port_number, default=8000, help="the port to listen on (default: 8000; 0: any)"
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0: every interface)",
    )
    p.add_argument(
        "--delay",
        type=delay,
        default=1.0,
        metavar="S",
        help="seconds between two requests when the page audits or samples a server, as manners site"
        " --delay (default: 1; more when its robots.txt asks for more)",
    )
    common(p)
    p.set_defaults(func=cmd_serve)
    return p


def port_number(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port number (0 to 65535; 0: any free port)")
    return n


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port``; UsageError in one sentence when it cannot be."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UsageError(f"--host {host}: {exc.strerror}; give an address of this machine") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)  # connections wait from the moment the address is announced
    except OSError as exc:
        sock.close()
        hint = "choose another --port" if exc.errno == errno.EADDRINUSE else "give an address of this machine"
        raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror}; {hint}") from None
    return sock


def page_url(sock: socket.socket) -> tuple[str, int, str]:
    """The address bound, its port, and the page's URL (the loopback address for a wildcard)."""
    host, port = sock.getsockname()[:2]
    shown = host
    if ipaddress.ip_address(host).is_unspecified:
        shown = "127.0.0.1" if sock.family == socket.AF_INET else "::1"
    shown = f"[{shown}]" if ":" in shown else shown
    return host, port, f"http://{shown}:{port}/"


def cmd_serve(args: argparse.Namespace, out: Out) -> int:
    check_agent(args.agent)
    try:
        import uvicorn

        from .serve import make_app
    except ImportError as exc:
        raise UsageError(
            f"manners serve needs {exc.name}: install the serve extra (pip install 'manners[serve]')"
        ) from None
    sock = listen(args.host, args.port)
    host, port, url = page_url(sock)
    if out.json:
        out.data({"page": url, "host": host, "port": port, "started_at": timestamp(time.time())})
    else:
        out.line(f"the page is at {url} (Ctrl-C stops it)")
    if not ipaddress.ip_address(host).is_loopback:
        out.note(
            f"listening on {host}: whoever reaches this port can use the page, and make this machine"
            " fetch robots.txt files"
        )
    sys.stdout.flush()
    config = uvicorn.Config(
        make_app(args, args.host),
        log_config=None,  # uvicorn's warnings and errors on stderr; stdout stays the one line above
        log_level="warning",
        access_log=False,
        lifespan="off",
        proxy_headers=False,
        server_header=False,
        limit_concurrency=64,
        timeout_graceful_shutdown=5,
    )
    with sock:
        uvicorn.Server(config).run(sockets=[sock])
    return 0
