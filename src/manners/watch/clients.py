"""Who made a request: the client a log line is charged to, and when a client is a robot.

A client is an address, grouped by ``--group V4BITS,V6BITS`` (default 32,128: each address
alone; ``24,64`` makes each IPv4 /24 and each IPv6 /64 one client, as a robot spread over a
block is one robot).  An IPv4 client logged in IPv6's mapped form (``::ffff:192.0.2.1``, as
jetforce bound to ``::`` writes it) is the IPv4 address.  On the Web one address may carry
several robots (a shared host, a proxy), told apart by their User-Agent's product token; Gemini
and Gopher send no name, so there the address alone is the client.

A client is judged as a robot when it asked for robots.txt, or when its requests outpace a
person: more than :data:`PERSON_REQUESTS` within :data:`PERSON_SECONDS` (more on the Web, where
a browser asks for a page's images and styles at once).  The rest are counted, not judged.
Both are reckoned request by request in the engine's fold (:class:`manners._core.WatchFold`);
here are its thresholds, the ``--group`` option, and :func:`client_of` for a single address.
"""

from __future__ import annotations

from dataclasses import dataclass

from manners._core import WatchFold, watch_client

__all__ = [
    "DEFAULT_GROUPING",
    "PERSON_REQUESTS",
    "PERSON_SECONDS",
    "PROFILES",
    "Grouping",
    "client_of",
    "parse_group",
    "person_limit",
]

#: A person reads: more than this many requests within PERSON_SECONDS is a robot's pace.  The
#: Web's figure allows a browser's page with its images, scripts and styles, several pages a minute.
PERSON_REQUESTS: dict[str, int] = WatchFold.PERSON_REQUESTS
PERSON_SECONDS = WatchFold.PERSON_SECONDS

#: The profile each kind of site's robots.txt is read under.
PROFILES = {"gemini": "gemini", "gopher": "gopher", "web": "rfc9309"}


def person_limit(kind: str) -> str:
    """The threshold, in the words a report gives."""
    return f"more than {PERSON_REQUESTS[kind]} requests within {PERSON_SECONDS:g} s"


@dataclass(frozen=True)
class Grouping:
    """Prefix lengths that make one client of an IPv4 and of an IPv6 block."""

    v4: int = 32
    v6: int = 128


DEFAULT_GROUPING = Grouping()


def parse_group(text: str) -> Grouping:
    """``--group V4BITS,V6BITS`` (``24,64``); ValueError, one sentence, for anything else."""
    v4, comma, v6 = text.partition(",")
    if comma and v4.strip().isdigit() and v6.strip().isdigit():
        bits = Grouping(int(v4), int(v6))
        if 0 <= bits.v4 <= 32 and 0 <= bits.v6 <= 128:
            return bits
    raise ValueError(
        f"--group takes V4BITS,V6BITS, the prefix lengths that make one client (IPv4 0 to 32, IPv6 0"
        f" to 128, such as 24,64), not {text[:40]!r}."
    )


def client_of(address: str, grouping: Grouping = DEFAULT_GROUPING) -> str:
    """The client an address belongs to: the address itself (IPv4-mapped IPv6 as IPv4), or its
    block (``192.0.2.0/24``, ``2001:db8::/64``) when grouped.  What is no IP address (a host
    name some servers log) is its own client, as logged.  (The engine's, as the fold groups.)"""
    return watch_client(address, grouping.v4, grouping.v6)
