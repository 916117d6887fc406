"""The Redis clients of a fleet's frontier: made from a URL and probed, their failures as one sentence.

Kept apart from ``redis_frontier`` because two callers need them: the frontier itself, and
``redis_durability``, which reads what a Redis keeps before a crawl starts on it.  Neither then
imports the other.  redis-py is imported only when a client is made: only a fleet needs it.
"""

from __future__ import annotations

import re
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from ..cache.redis import pooled_client
from ..terminal import safe
from .frontier_errors import FrontierError


def connect(url: str, timeout: float) -> tuple[str, bool, Any, Any]:
    """(where, for messages; a cluster?; an asyncio client; a blocking client) for ``url``, after
    a PING and a script run (a user refused scripts is told now, not on the first lease).

    Socket deadlines on every call and no retries: a script whose reply was lost may have been
    applied, so whether to call again is the caller's choice.  ``where`` has no password."""
    try:
        import redis
        import redis.asyncio
        import redis.asyncio.cluster
        import redis.asyncio.retry
        import redis.backoff
        import redis.cluster
        import redis.retry
    except ImportError:
        raise FrontierError("a Redis frontier needs redis-py: pip install 'manners[redis]'.") from None

    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss", "redis-cluster", "rediss-cluster") or not parts.hostname:
        raise FrontierError(
            "bad Redis frontier URL: use redis://host:port/db, rediss://... or redis-cluster://host:port."
        )
    try:
        port = parts.port or 6379
    except ValueError:
        raise FrontierError(f"bad Redis frontier URL for {parts.hostname}: its port is no number.") from None
    where = f"{parts.scheme}://{parts.hostname}:{port}"  # the password left out
    cluster = parts.scheme.endswith("-cluster")
    if cluster and parts.path.strip("/") not in ("", "0"):
        raise FrontierError(f"bad Redis frontier URL {where}: a Redis Cluster has database 0 only.")
    plain = parts._replace(scheme=parts.scheme.removesuffix("-cluster")).geturl()
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "decode_responses": True,
        "encoding_errors": "surrogateescape",  # URLs that were not UTF-8 keep their bytes
    }
    aio_client: Any = redis.asyncio.cluster.RedisCluster if cluster else redis.asyncio.Redis
    sync_client: Any = redis.cluster.RedisCluster if cluster else redis.Redis
    # A cluster client that met a few MOVED replies (even a fresh one, before it knows the slots)
    # closes every connection, the ones other calls are using included: it follows each one instead.
    moved: dict[str, Any] = {"reinitialize_steps": 0} if cluster else {}
    never = redis.backoff.NoBackoff()
    try:
        with failures(where):
            sync = sync_client.from_url(plain, retry=redis.retry.Retry(never, 0), **options)
            sync.ping()  # a cluster client has found the cluster's nodes by now
            sha = sync.script_load(_PROBE)
            sync.evalsha(sha, 1, f"manners-probe:{secrets.token_hex(4)}")
    except ValueError as exc:
        raise FrontierError(f"bad Redis frontier URL {where}: {exc}.") from None
    except FrontierError as exc:
        if (
            parts.scheme.startswith("rediss")
            and not exc.lasting
            and _speaks_plain(parts.hostname, port, timeout)
        ):
            plainly = parts.scheme.replace("rediss", "redis", 1)
            raise FrontierError(
                f"Redis at {where} does not speak TLS (it answers plain Redis there): use {plainly}://"
                " or the server's TLS port"
            ) from None
        raise
    retry = redis.asyncio.retry.Retry(never, 0)
    try:
        if cluster:  # its pools cannot wait for a connection: one per node above a worker's calls at once
            aio = aio_client.from_url(plain, retry=retry, max_connections=CLUSTER_POOL, **moved, **options)
        else:  # a call finding every connection in use waits for one, within its deadline
            aio = pooled_client(plain, timeout, retry=retry, **options)
    except ValueError as exc:
        raise FrontierError(f"bad Redis frontier URL {where}: {exc}.") from None
    return where, cluster, aio, sync


# Connections a cluster client keeps to each node at most (redis-py's default, 100, refuses the
# call past it at once, and a cluster's pools cannot be made to wait).
CLUSTER_POOL = 1024

# Run once at the start: a user refused EVALSHA or SCRIPT is told before the crawl begins.  It
# names a key (hashed to some slot), so a cluster runs it on one node; it changes nothing.
_PROBE = "return redis.call('EXISTS', KEYS[1])"


def _speaks_plain(host: str, port: int, timeout: float) -> bool:
    """Whether ``host:port`` answers a plain-text PING as Redis does (``+PONG``, or an error such as
    ``-NOAUTH``): a TLS client there waits for a handshake that never comes."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(b"PING\r\n")
            return conn.recv(1)[:1] in (b"+", b"-")
    except OSError:
        return False


@contextmanager
def failures(where: str) -> Iterator[None]:
    """Redis failures as ``FrontierError``, in one sentence.  A refusal (a password, a command this
    user may not run) is ``lasting``: no wait mends it.  A down server, a failed script are not."""
    import redis.exceptions

    try:
        yield
    except redis.exceptions.AuthenticationError as exc:
        raise FrontierError(_password_refused(where, exc), lasting=True) from None
    except redis.exceptions.NoPermissionError as exc:
        raise FrontierError(_command_refused(where, str(exc)), lasting=True) from None
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise FrontierError(f"the Redis frontier at {where} is unreachable: {safe(str(exc))}") from None
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
        raise FrontierError(f"the Redis frontier at {where} failed: {safe(str(exc))}") from None


def _password_refused(where: str, exc: Exception) -> str:
    """NOAUTH (no password given, one is needed) or WRONGPASS, as a sentence."""
    said = safe(str(exc).rstrip("."))
    if getattr(exc, "status_code", None) == "NOAUTH" or "authentication required" in said.lower():
        return f"Redis at {where} asks for a password: give it in the URL, redis://:PASSWORD@HOST:PORT/DB"
    return f"Redis refused the password for {where} ({said})"


def _command_refused(where: str, reply: str) -> str:
    """NOPERM, naming the command refused when the reply does (an ACL without EVALSHA, SCRIPT...)."""
    said = safe(reply.rstrip("."))
    named = re.search(r"run the '([^']+)' command", reply)
    if named:
        command = named.group(1).replace("|", " ").upper()
        return (f"Redis at {where} refuses this user the command {command} ({said}); the crawl needs"
                " EVALSHA and SCRIPT (LOAD, EXISTS) besides reads and writes on its keys")  # fmt: skip
    return f"Redis at {where} refuses this user ({said})"
