"""Real servers on loopback for the test-suite: nginx, gophernicus, pygopherd, jetforce, agate and Redis.

Each context manager starts one server as a subprocess in its own process group, with its
configuration, logs and output in a private temporary directory, waits until its port(s)
accept TCP connections and yields the port(s). On exit the whole process group is stopped
(SIGTERM, then SIGKILL after 5 s) and the temporary directory removed.

A server that cannot start raises :class:`ServerFailed` with the command and the tail of what
it printed: tests that need a server fail loudly, they never skip.

Where the executables come from:

- ``nginx``: Debian package nginx-light (or any nginx >= 1.19),
- ``gophernicus`` and ``socat``: Debian packages of the same names,
- ``jetforce`` and ``pygopherd``: PyPI packages ``jetforce==1.0.0`` and ``pygopherd==3.1.0``
  (test-only; looked up next to the running Python first, i.e. in the virtualenv),
- ``agate``: the crate ``agate`` 3.3.25, which scripts/setup builds into the virtualenv.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "HOST",
    "Hit",
    "JetforceHosts",
    "Listen",
    "ServerFailed",
    "agate",
    "free_port",
    "gophernicus",
    "group_members",
    "jetforce",
    "jetforce_hosts",
    "nginx",
    "pygopherd",
    "redis_cluster",
    "redis_durable",
    "redis_server",
    "timed_log",
]

HOST = "127.0.0.1"
START_TIMEOUT = 20.0  # seconds for a server to accept connections
STOP_TIMEOUT = 5.0  # seconds between SIGTERM and SIGKILL
_POLL = 0.05
_TAIL = 4000  # characters of each output file quoted in ServerFailed

# Directories searched for executables before $PATH: the virtualenv's bin first.
SEARCH_DIRS: list[Path] = [
    Path(sys.executable).parent,
    Path("/usr/sbin"),
    Path("/usr/bin"),
    Path("/usr/local/sbin"),
    Path("/usr/local/bin"),
]

_PROVIDERS: dict[str, str] = {
    "nginx": "the Debian package nginx-light (apt-get install nginx-light)",
    "socat": "the Debian package socat (apt-get install socat)",
    "gophernicus": "the Debian package gophernicus (apt-get install gophernicus)",
    "jetforce": "the PyPI package jetforce (pip install jetforce==1.0.0)",
    "pygopherd": "the PyPI package pygopherd (pip install pygopherd==3.1.0)",
    "agate": "the crate agate (scripts/setup: cargo install agate --version 3.3.25 --root .venv)",
    "redis-server": "the Debian package redis-server (apt-get install redis-server)",
    "redis-cli": "the Debian package redis-tools (apt-get install redis-tools)",
}


class ServerFailed(RuntimeError):
    """A server did not start (missing executable, early exit, or no listening port in time)."""


def _port_range() -> range:
    """Where this process looks for ports: below the kernel's ephemeral range (so no outgoing
    connection takes a port between our asking and a server's binding it), a slice of its own
    for each pytest-xdist worker (so parallel workers never hand out the same port)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    slot = int(worker) % 8 if worker.isdigit() else 0
    width = max((low - 10000) // 8, 100)
    start = 10000 + slot * width
    return range(start, start + width)


_PORTS = _port_range()
_next_port = [random.randrange(len(_PORTS))]


def free_port() -> int:
    """An unused TCP port on 127.0.0.1, from this process's own range (``_port_range``), taken in
    turn so a port just given up is not handed out again at once."""
    for _ in range(len(_PORTS)):
        port = _PORTS[_next_port[0] % len(_PORTS)]
        _next_port[0] += 1
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((HOST, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free TCP port in {_PORTS}")


def group_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes in process group ``pgid``."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: ask the kernel whether the group still exists
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited meanwhile
            continue
        # pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


# --------------------------------------------------------------------------- helpers


def _executable(name: str) -> str:
    for directory in SEARCH_DIRS:
        candidate = directory / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    searched = ", ".join(str(d) for d in SEARCH_DIRS)
    raise ServerFailed(
        f"executable {name!r} not found (searched {searched} and $PATH); "
        f"it is provided by {_PROVIDERS.get(name, 'an unknown package')}"
    )


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"(unreadable: {exc})"
    text = data[-_TAIL:].decode("utf-8", errors="replace").rstrip()
    if len(data) > _TAIL:
        text = "[...]" + text
    return text or "(empty)"


def _check_path(path: Path, forbidden: str, what: str) -> str:
    text = str(path)
    bad = sorted({c for c in text if c in forbidden or c.isspace() or not c.isprintable()})
    if bad:
        raise ValueError(f"{what} {text!r} contains characters that cannot be passed on: {bad!r}")
    return text


def _accepts(port: int, host: str = HOST) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _listeners(port: int) -> set[int] | None:
    """Inodes of the TCP sockets listening on ``port``; None where /proc/net is not available."""
    found: set[int] = set()
    tables = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        tables += 1
        for line in lines:
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[9]))
    return found if tables else None


def _group_sockets(pgid: int) -> set[int]:
    """Inodes of the sockets open in the processes of group ``pgid``."""
    inodes: set[int] = set()
    for pid in group_members(pgid):
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def _ready(port: int, pgid: int, host: str = HOST) -> bool:
    """The server of group ``pgid`` listens on ``port`` and the port accepts a connection.

    On Linux the listening socket must belong to the server: free_port() cannot reserve a port,
    and a port taken meanwhile by another program must not pass for a started server.
    """
    listeners = _listeners(port)
    if listeners is not None and not listeners & _group_sockets(pgid):
        return False
    return _accepts(port, host)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the process group led by ``proc``: SIGTERM, wait up to STOP_TIMEOUT, then SIGKILL."""
    pgid = proc.pid  # start_new_session=True: the child leads its own session and group
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + STOP_TIMEOUT
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_TIMEOUT)
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(_POLL)
        if proc.poll() is not None and not group_members(pgid):
            return
    raise ServerFailed(f"process group {pgid} still has {group_members(pgid)} after SIGKILL")


@contextmanager
def _serve(
    name: str,
    cmd: Sequence[str],
    ports: Sequence[int],
    workdir: Path,
    *,
    env: dict[str, str] | None = None,
    logs: Sequence[Path] = (),
    hosts: Sequence[str] | None = None,
    stdout: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``cmd`` in its own process group until the ``ports`` accept (on ``hosts[i]``, default
    127.0.0.1); stop the group on exit.  Its standard output goes to ``stdout`` if given (a
    server that writes its access log there)."""
    stdout_path = stdout or workdir / f"{name}.stdout"
    stderr_path = workdir / f"{name}.stderr"
    command = shlex.join(cmd)

    def failure(reason: str) -> ServerFailed:
        parts = [f"{name} did not start: {reason}", f"command: {command}"]
        for path in (stderr_path, stdout_path, *logs):
            parts.append(f"--- tail of {path.name} ---\n{_tail(path)}")
        return ServerFailed("\n".join(parts))

    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=workdir,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ServerFailed(f"{name} could not be run: {exc}\ncommand: {command}") from exc
    try:
        host_of = dict(zip(ports, hosts or [HOST] * len(ports), strict=True))
        pending = list(ports)
        deadline = time.monotonic() + START_TIMEOUT
        while pending:
            if proc.poll() is not None:
                raise failure(f"it exited with status {proc.returncode}")
            if time.monotonic() > deadline:
                taken = [port for port in pending if _listeners(port)]
                hint = f" (another program listens on {taken})" if taken else ""
                raise failure(f"port(s) {pending} on {HOST} not served after {START_TIMEOUT:g} s{hint}")
            pending = [port for port in pending if not _ready(port, proc.pid, host_of[port])]
            if pending:
                time.sleep(_POLL)
        if proc.poll() is not None:
            raise failure(f"it exited with status {proc.returncode}")
        yield proc
    finally:
        _stop(proc)


# --------------------------------------------------------------------------- servers


def _nginx_quote(value: str) -> str:
    return '"' + value + '"'


class Listen(NamedTuple):
    """Where one nginx server block listens, when not on a free port of 127.0.0.1."""

    host: str  # an IPv4 address of the loopback range, e.g. 127.0.0.1 or 127.3.4.5
    port: int
    ssl: bool = False  # TLS: the block's body names ssl_certificate and ssl_certificate_key


# An access log format every nginx() defines, for ``access_log PATH timed;`` in a server block:
# when each request started (epoch seconds, ms resolution), the scheme, host, port, request line,
# status and User-Agent. Read it with :func:`timed_log`.
TIMED_FORMAT = (
    '\'$msec $request_time $scheme $server_addr $server_port "$request" $status "$http_user_agent"\''
)


@dataclass(frozen=True)
class Hit:
    """One request in an access log of format ``timed``."""

    start: float  # epoch seconds when nginx began reading the request
    scheme: str
    address: str  # the address and port the request came in on
    port: int
    method: str
    path: str
    status: int
    user_agent: str


_TIMED = re.compile(
    r"^(?P<end>[0-9.]+) (?P<took>[0-9.]+) (?P<scheme>\S+) (?P<addr>\S+) (?P<port>\d+) "
    r'"(?P<method>\S+) (?P<path>\S+)[^"]*" (?P<status>\d+) "(?P<ua>.*)"$'
)


def timed_log(path: Path) -> list[Hit]:
    """The requests of an access log written in the ``timed`` format, in the order they started."""
    if not path.exists():
        return []
    hits = []
    for line in path.read_text(errors="replace").splitlines():
        m = _TIMED.match(line)
        if m is None:
            raise ValueError(f"not a line of the timed format in {path}: {line!r}")
        start = float(m["end"]) - float(m["took"])
        hits.append(Hit(start, m["scheme"], m["addr"], int(m["port"]), m["method"], m["path"],
                        int(m["status"]), m["ua"]))  # fmt: skip
    return sorted(hits, key=lambda h: h.start)


@contextmanager
def nginx(
    servers: list[str], root: Path, *, listen: Sequence[Listen | None] | None = None
) -> Iterator[list[int]]:
    """One nginx master with a ``server`` block per entry of ``servers`` (its body text), all with
    ``root`` as document root, each on its own port of 127.0.0.1 (or where ``listen[i]`` says).
    Yields the ports, in order.

    gzip is on for text/plain (and, as always in nginx, text/html) for HTTP/1.1 clients that send
    ``Accept-Encoding: gzip``. The access log format ``timed`` is defined (see :func:`timed_log`).
    """
    if not servers:
        raise ValueError("nginx() needs at least one server block")
    asked: list[Listen | None] = list(listen) if listen is not None else [None] * len(servers)
    if len(asked) != len(servers):
        raise ValueError("nginx(): listen needs one entry (or None) per server block")
    exe = _executable("nginx")
    root_text = _check_path(root.resolve(), '"$\\;{}', "nginx root")
    with tempfile.TemporaryDirectory(prefix="manners-nginx-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        work_text = _check_path(work, '"$\\;{}', "temporary directory")
        ports = [free_port() for _ in servers]
        while len(set(ports)) < len(ports):  # the kernel may repeat a port just released
            ports = [free_port() for _ in servers]
        places = [place or Listen(HOST, port) for place, port in zip(asked, ports, strict=True)]
        ports = [place.port for place in places]

        def path(name: str) -> str:
            return _nginx_quote(f"{work_text}/{name}")

        blocks = "\n".join(
            f"""
    server {{
        listen {place.host}:{place.port}{" ssl" if place.ssl else ""};
        server_name localhost;
        root {_nginx_quote(root_text)};
        {body}
    }}"""
            for place, body in zip(places, servers, strict=True)
        )
        # Workers of a master started as root would run as "nobody", who cannot read
        # pytest's tmp_path (/tmp/pytest-of-root is mode 0700): keep them root.
        user = "user root root;\n" if os.geteuid() == 0 else ""
        conf = f"""{user}daemon off;
master_process on;
worker_processes 1;
pid {path("nginx.pid")};
error_log {path("error.log")} info;
events {{
    worker_connections 1024;
}}
http {{
    access_log {path("access.log")};
    log_format timed {TIMED_FORMAT};
    client_body_temp_path {path("client_body")};
    proxy_temp_path {path("proxy")};
    fastcgi_temp_path {path("fastcgi")};
    uwsgi_temp_path {path("uwsgi")};
    scgi_temp_path {path("scgi")};
    types {{
        text/plain txt;
        text/html html htm;
        text/gemini gmi;
    }}
    default_type application/octet-stream;
    gzip on;
    gzip_types text/plain;
    gzip_min_length 1;
{blocks}
}}
"""
        conf_path = work / "nginx.conf"
        conf_path.write_text(conf)
        cmd = [exe, "-p", f"{work_text}/", "-c", str(conf_path), "-e", "stderr"]
        hosts = [place.host for place in places]
        with _serve("nginx", cmd, ports, work, logs=[work / "error.log"], hosts=hosts):
            yield ports


@contextmanager
def gophernicus(root: Path, advertised_port: int | None = None, options: Sequence[str] = ()) -> Iterator[int]:
    """gophernicus (inetd-style) behind ``socat ... fork``, serving ``root``. Yields the port.

    It converts LF to CRLF in text files and adds no final ``.`` line. Its menus name
    ``advertised_port`` (default: the port it listens on), e.g. a logging proxy's.
    ``options``: more of its command-line flags, such as ``-nh`` (no menu header), ``-na`` (no
    generated caps.txt) or ``-D TEXT`` (ServerDescription); socat splits on spaces, so none may
    hold one.
    """
    socat = _executable("socat")
    exe = _executable("gophernicus")
    # socat splits its EXEC address on spaces and ends it at ',', ':' or '!!'.
    root_text = _check_path(root.resolve(), ",:!'\"\\", "gophernicus root")
    with tempfile.TemporaryDirectory(prefix="manners-gophernicus-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        port = free_port()
        # -nm: no machine-wide shared memory, so no hit throttling carried between runs
        inner = f"{exe} -h {HOST} -p {advertised_port or port} -r {root_text} -nr -ns -nm"
        for option in options:
            if not option or any(c in ",:!'\"\\" or c.isspace() or not c.isprintable() for c in option):
                raise ValueError(f"gophernicus option {option!r} cannot be passed on through socat")
            inner += " " + option
        # nofork: each connection's child becomes gophernicus on the socket itself.  Relayed through
        # a pipe instead, socat drops the reply of a gophernicus that exits with an error status
        # (a missing selector) about one time in fifteen.
        cmd = [socat, f"TCP-LISTEN:{port},bind={HOST},reuseaddr,fork", f"EXEC:{inner},nofork"]
        with _serve("gophernicus", cmd, [port], work):
            yield port


def _ini_value(value: str) -> str:
    return value.replace("%", "%%")  # ConfigParser interpolation


_MIME_TYPES = """\
text/plain\t\t\t\ttxt text conf
text/html\t\t\t\thtml htm
text/gemini\t\t\t\tgmi
application/gopher-menu\t\t\tgophermap
image/gif\t\t\t\tgif
image/png\t\t\t\tpng
application/zip\t\t\t\tzip
"""


@contextmanager
def pygopherd(root: Path, advertised_port: int | None = None, log: Path | None = None) -> Iterator[int]:
    """pygopherd with a generated INI configuration, serving ``root``. Yields the port.

    Its menus name ``advertised_port`` (default: the port it listens on), e.g. a logging proxy's.
    ``log``: where its log goes (``logmethod = file``: its standard output); default none.

    Files are sent as they are (LF kept), without a final ``.`` line; menu lines carry Gopher+'s
    fifth field ``+``; ``robots.txt`` is hidden from menus (but served).
    """
    exe = _executable("pygopherd")
    root_text = _check_path(root.resolve(), "", "pygopherd root")
    with tempfile.TemporaryDirectory(prefix="manners-pygopherd-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        port = free_port()
        mime_path = work / "mime.types"
        mime_path.write_text(_MIME_TYPES)
        # pygopherd 3.1.0 ships no configuration and has no defaults: every option that the code
        # reads must be present. Note that logmethod lives in [logger], and that "encoding" is
        # eval()ed before mimetypes.encodings_map is cleared, so it must be a literal list. The
        # directory cache file is put in a directory that does not exist, so that listing a menu
        # writes nothing into the served root (pygopherd ignores the failure).
        conf = f"""\
[pygopherd]
servername = {HOST}
interface = {HOST}
port = {port}
advertisedport = {advertised_port or port}
servertype = ForkingTCPServer
tracebacks = yes
detach = no
usechroot = no
pidfile = {_ini_value(str(work / "pygopherd.pid"))}
root = {_ini_value(root_text)}
mimetypes = {_ini_value(str(mime_path))}
encoding = [('.gz', 'gzip'), ('.Z', 'compress'), ('.bz2', 'bzip2')]
abstract_headers = yes
abstract_entries = always

[logger]
logmethod = {"file" if log else "none"}

[GopherEntry]
defaultmimetype = text/plain
mapping = [['text/html', 'h'],
        ['text/.+', '0'],
        ['application/mac-binhex40', '4'],
        ['audio/.+', 's'],
        ['image/gif', 'g'],
        ['image/.+', 'I'],
        ['application/gopher-menu', '1'],
        ['application/gopher[+]-menu', '1'],
        ['multipart/mixed', 'M'],
        ['application/.+', '9'],
        ['.*', '0']]
eaexts = {{}}

[handlers.HandlerMultiplexer]
handlers = [url.HTMLURLHandler, gophermap.BuckGophermapHandler,
        mbox.MaildirFolderHandler, mbox.MaildirMessageHandler,
        UMN.UMNDirHandler, html.HTMLFileTitleHandler,
        mbox.MBoxMessageHandler, mbox.MBoxFolderHandler,
        file.FileHandler]

[handlers.file.CompressedFileHandler]
decompressors = {{}}
decompresspatt = .*

[handlers.dir.DirHandler]
ignorepatt = /\\.|/robots\\.txt$|/gophermap$|/lost\\+found$|~$
cachetime = 0
cachefile = .pygopherd-no-cache/cache

[handlers.UMN.UMNDirHandler]
extstrip = nonencoded

[handlers.ZIP.ZIPHandler]
enabled = false
pattern = \\.zip$

[protocols.ProtocolMultiplexer]
protocols = [http.HTTPProtocol, gopherp.GopherPlusProtocol, rfc1436.GopherProtocol]

[protocols.gopherp.GopherPlusProtocol]
admin = manners test-suite <nobody@localhost>

[protocols.http.HTTPProtocol]
iconmapping = {{'h': 'text.gif', '0': 'text.gif', '1': 'folder.gif', 'i': 'blank.gif'}}
"""
        conf_path = work / "pygopherd.conf"
        conf_path.write_text(conf)
        with _serve("pygopherd", [exe, str(conf_path)], [port], work, stdout=log):
            yield port


@contextmanager
def jetforce(
    root: Path,
    port: int | None = None,
    tls: tuple[Path, Path] | None = None,
    *,
    log: Path | None = None,
    host: str = HOST,
    rate_limit: str | None = None,
) -> Iterator[int]:
    """jetforce (Gemini over TLS) serving ``root`` for the hostname ``localhost`` on ``port``
    (default: a free one). Yields the port; start it again on that port to play a new certificate.
    ``log``: where its access log goes (its standard output). ``host``: where it listens
    (``"::"``: IPv6 and IPv4 loopback alike, IPv4 clients logged as ``::ffff:127.0.0.1``).
    ``rate_limit``: its ``--rate-limit`` (``"3/10m"``: a client address's 4th request within the
    window, counted from the start, and every one after, is answered ``44``).

    Request URLs must name ``localhost`` (no port, or this port): any other host, including
    127.0.0.1, gets ``53``. The certificate is ``tls`` (certificate file, key file) or else a
    throw-away self-signed one for CN=localhost, written into the server's temporary directory
    (jetforce puts it in $TMPDIR).
    """
    exe = _executable("jetforce")
    with tempfile.TemporaryDirectory(prefix="manners-jetforce-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        port = port or free_port()
        cmd = [exe, "--host", host, "--port", str(port), "--hostname", "localhost", "--dir", str(root)]
        if tls is not None:
            cmd += ["--tls-certfile", str(tls[0]), "--tls-keyfile", str(tls[1])]
        if rate_limit is not None:
            cmd += ["--rate-limit", rate_limit]
        env = {**os.environ, "TMPDIR": str(work), "PYTHONUNBUFFERED": "1"}
        ready = HOST if host in ("::", "0.0.0.0") else host
        with _serve("jetforce", cmd, [port], work, env=env, stdout=log, hosts=[ready]):
            yield port


@contextmanager
def agate(root: Path, log: Path, *, ipv6: bool = False) -> Iterator[int]:
    """agate (Gemini over TLS) serving ``root`` for the hostname ``localhost`` on a free port of
    127.0.0.1 (and of ::1 with ``ipv6``), logging each request with the client's address
    (``--log-ip``) to ``log`` (env_logger on its standard error, with times). Yields the port.

    The port in a request URL is not checked (``--skip-port-check``); the certificate is one it
    makes itself, in its temporary directory.
    """
    exe = _executable("agate")
    with tempfile.TemporaryDirectory(prefix="manners-agate-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        port = free_port()
        cmd = [exe, "--content", str(root), "--certs", str(work / "certs"), "--addr", f"{HOST}:{port}",
               "--hostname", "localhost", "--skip-port-check", "--log-ip"]  # fmt: skip
        if ipv6:
            cmd += ["--addr", f"[::1]:{port}"]
        env = {**os.environ, "RUST_LOG": "agate=info"}
        # its log is its standard error: run it through sh to send that to the log file
        shell = ["sh", "-c", 'exec "$@" 2>>"$LOG"', "sh", *cmd]
        with _serve("agate", shell, [port], work, env={**env, "LOG": str(log)}, logs=[log]):
            yield port


# One Python process, one reactor, one GeminiServer per (root, listen port, public port). Each
# server believes it runs on its public port (jetforce answers 53 to a URL naming any other port),
# and logs each request as "<unix time> <jetforce's access line>" to the access log file.
_JETFORCE_HOSTS = """\
import json, sys, time
from twisted.internet import reactor
from jetforce import GeminiServer, StaticDirectoryApplication
from jetforce.tls import generate_ad_hoc_certificate

config = json.load(open(sys.argv[1]))
log = open(config["log"], "a", buffering=1)
if config.get("certfile"):
    certfile, keyfile = config["certfile"], config["keyfile"]
else:
    certfile, keyfile = generate_ad_hoc_certificate(config["hostname"])


class Server(GeminiServer):
    def log_access(self, message):
        log.write("%.6f %s\\n" % (time.time(), message))


for site in config["sites"]:
    app = StaticDirectoryApplication(root_directory=site["root"], default_lang=config.get("default_lang"))
    server = Server(app=app, reactor=reactor, host=config["host"], port=site["public_port"],
                    hostname=config["hostname"], certfile=certfile, keyfile=keyfile)
    server.port = site["listen_port"]  # bind here ...
    server.initialize()
    server.port = site["public_port"]  # ... but answer as the public port
reactor.run()
"""

_ACCESS = re.compile(
    r'^(?P<t>[0-9.]+) (?P<client>\S+) \[[^]]*\] "(?P<url>.*)" (?P<status>\d+) "(?P<meta>.*)" (?P<size>\d+)$'
)


@dataclass(frozen=True)
class Access:
    """One request in jetforce's access log."""

    time: float  # time.time() when jetforce logged it (the answer was complete)
    url: str
    status: int
    meta: str
    size: int


@dataclass
class JetforceHosts:
    """What :func:`jetforce_hosts` yields."""

    listen_ports: list[int]  # where jetforce listens
    public_ports: list[int]  # the ports URLs name (a proxy's, or the listen port)
    log: Path  # the access log

    def accesses(self) -> list[Access]:
        """Every request logged so far, in order."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            m = _ACCESS.match(line)
            if m:
                found.append(Access(float(m["t"]), m["url"], int(m["status"]), m["meta"], int(m["size"])))
        return found

    def urls(self) -> list[str]:
        return [a.url for a in self.accesses()]


@contextmanager
def jetforce_hosts(
    roots: Sequence[Path],
    public_ports: Sequence[int | None] | None = None,
    hostname: str = "localhost",
    *,
    listen_ports: Sequence[int] | None = None,
    cert: tuple[Path, Path] | None = None,
    default_lang: str | None = None,
) -> Iterator[JetforceHosts]:
    """jetforce serving each of ``roots`` on its own port of 127.0.0.1, all in one process.

    Distinct ports are distinct authorities (``gemini://localhost:PORT``), so one process plays
    many hosts, which a 2-core machine can afford. ``public_ports[i]`` (default: the listen port)
    is the port URLs must name: the port of a logging proxy in front (jetforce answers 53 to any
    other). CGI scripts are run from each root's ``cgi-bin``. Requests are logged with the time
    to :attr:`JetforceHosts.log`.

    ``listen_ports``: where to listen (default: free ports; give the same again to play a
    restart). ``cert``: the (certificate, key) PEM files to present (default: a throw-away
    self-signed one for ``hostname``). ``default_lang``: served as ``lang=`` on text/gemini.
    """
    exe_dir = Path(sys.executable).parent
    if not (exe_dir / "jetforce").exists() and not shutil.which("jetforce"):
        raise ServerFailed(f"jetforce not found; it is provided by {_PROVIDERS['jetforce']}")
    with tempfile.TemporaryDirectory(prefix="manners-jetforce-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        listen = list(listen_ports) if listen_ports is not None else [free_port() for _ in roots]
        while len(set(listen)) < len(listen):
            listen = [free_port() for _ in roots]
        public = [p or q for p, q in zip(public_ports or [None] * len(roots), listen, strict=True)]
        log = work / "access.log"
        log.touch()
        config = {
            "host": HOST,
            "hostname": hostname,
            "log": str(log),
            "certfile": str(cert[0].resolve()) if cert else None,
            "keyfile": str(cert[1].resolve()) if cert else None,
            "default_lang": default_lang,
            "sites": [
                {"root": str(r.resolve()), "listen_port": q, "public_port": p}
                for r, q, p in zip(roots, listen, public, strict=True)
            ],
        }
        (work / "config.json").write_text(json.dumps(config))
        (work / "jetforce_hosts.py").write_text(_JETFORCE_HOSTS)
        cmd = [sys.executable, str(work / "jetforce_hosts.py"), str(work / "config.json")]
        env = {**os.environ, "TMPDIR": str(work), "PYTHONUNBUFFERED": "1"}
        with _serve("jetforce", cmd, listen, work, env=env, logs=[log]):
            yield JetforceHosts(listen, public, log)


@contextmanager
def redis_server(port: int | None = None, extra: Sequence[str] = ()) -> Iterator[int]:
    """redis-server on 127.0.0.1, on ``port`` (default: a free one), with ``extra`` arguments
    after ours (``--appendonly no`` overrides ours). Yields it.

    It keeps an append-only file, as a fleet's Redis must (``manners crawl`` refuses one that
    would lose the crawl), but in a directory of its own that goes with it: start it again
    with the same port to play a Redis restarted empty (``redis_durable`` keeps its data).
    """
    exe = _executable("redis-server")
    with tempfile.TemporaryDirectory(prefix="manners-redis-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        port = port or free_port()
        cmd = [exe, "--bind", HOST, "--port", str(port), "--save", "", "--appendonly", "yes",
               "--dir", str(work), "--protected-mode", "yes", *extra]  # fmt: skip
        with _serve("redis-server", cmd, [port], work):
            yield port


@contextmanager
def redis_durable(work: Path, port: int | None = None) -> Iterator[int]:
    """redis-server keeping its data in ``work`` in an append-only file, on ``port`` (default: a
    free one). Yields it.

    Stopping it (SIGTERM) writes the file out; start it again with the same ``work`` and port
    to play a Redis restarted with its data.
    """
    exe = _executable("redis-server")
    port = port or free_port()
    cmd = [exe, "--bind", HOST, "--port", str(port), "--save", "", "--appendonly", "yes",
           "--dir", str(work), "--protected-mode", "yes"]  # fmt: skip
    with _serve("redis-server", cmd, [port], work):
        yield port


def _cluster_ok(cli: str, port: int) -> bool:
    """The node on ``port`` says ``cluster_state:ok``: every slot is served by a node it reaches."""
    info = subprocess.run([cli, "-h", HOST, "-p", str(port), "cluster", "info"], capture_output=True,
                          text=True, timeout=START_TIMEOUT, stdin=subprocess.DEVNULL).stdout  # fmt: skip
    return "cluster_state:ok" in info


@contextmanager
def redis_cluster(masters: int = 3) -> Iterator[list[int]]:
    """A Redis Cluster of ``masters`` redis-servers on 127.0.0.1, no replicas, each with an
    append-only file (in a directory that goes with it), as a fleet's Redis must.

    Each node has a free port for clients and another for the cluster bus (``cluster-port``, so
    no port need be under 55536); ``redis-cli --cluster create`` assigns the slots, and the
    client ports are yielded once every node says ``cluster_state:ok``.
    """
    exe, cli = _executable("redis-server"), _executable("redis-cli")
    with tempfile.TemporaryDirectory(prefix="manners-redis-cluster-", ignore_cleanup_errors=True) as tmp, \
            contextlib.ExitStack() as nodes:  # fmt: skip
        ports = [free_port() for _ in range(2 * masters)]
        while len(set(ports)) < len(ports):
            ports = [free_port() for _ in range(2 * masters)]
        clients = ports[:masters]
        for port, bus in zip(clients, ports[masters:], strict=True):
            work = Path(tmp) / str(port)
            work.mkdir()
            cmd = [exe, "--bind", HOST, "--port", str(port), "--save", "", "--appendonly", "yes",
                   "--dir", str(work), "--protected-mode", "yes", "--cluster-enabled", "yes",
                   "--cluster-port", str(bus), "--cluster-config-file", str(work / "nodes.conf")]  # fmt: skip
            nodes.enter_context(_serve("redis-server", cmd, [port], work))
        create = [cli, "--cluster", "create", *(f"{HOST}:{port}" for port in clients),
                  "--cluster-replicas", "0", "--cluster-yes"]  # fmt: skip
        made = subprocess.run(create, capture_output=True, text=True, timeout=START_TIMEOUT,
                              stdin=subprocess.DEVNULL)  # fmt: skip
        if made.returncode != 0:
            output = made.stdout + made.stderr
            raise ServerFailed(f"redis-cli could not make the cluster: {shlex.join(create)}\n{output}")
        deadline = time.monotonic() + START_TIMEOUT
        while not all(_cluster_ok(cli, port) for port in clients):
            if time.monotonic() > deadline:
                raise ServerFailed(f"the Redis Cluster on {clients} is not ok after {START_TIMEOUT:g} s")
            time.sleep(_POLL)
        yield clients
