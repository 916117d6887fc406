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
"""

from __future__ import annotations

import ipaddress
from collections import deque
from dataclasses import dataclass

from manners.agents import product_token

__all__ = [
    "DEFAULT_GROUPING",
    "KINDS",
    "PERSON_REQUESTS",
    "PERSON_SECONDS",
    "PROFILES",
    "Grouping",
    "Pace",
    "client_of",
    "kind_of",
    "parse_group",
    "person_limit",
    "token_of",
]

#: A person reads: more than this many requests within PERSON_SECONDS is a robot's pace.  The
#: Web's figure allows a browser's page with its images, scripts and styles, several pages a minute.
PERSON_REQUESTS = {"gemini": 20, "gopher": 20, "web": 120}
PERSON_SECONDS = 60.0

#: The kind of site a scheme belongs to, and the profile its robots.txt is read under.
KINDS = {"gemini": "gemini", "gopher": "gopher", "http": "web", "https": "web", "web": "web"}
PROFILES = {"gemini": "gemini", "gopher": "gopher", "web": "rfc9309"}


def kind_of(scheme: str) -> str:
    """``gemini``, ``gopher`` or ``web`` for a Hit's scheme (anything else is read as the Web)."""
    return KINDS.get(scheme, "web")


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


_CLIENTS: dict[tuple[str, Grouping], str] = {}  # a log repeats its clients: each address read once


def client_of(address: str, grouping: Grouping = DEFAULT_GROUPING) -> str:
    """The client an address belongs to: the address itself (IPv4-mapped IPv6 as IPv4), or its
    block (``192.0.2.0/24``, ``2001:db8::/64``) when grouped.  What is no IP address (a host
    name some servers log) is its own client, as logged."""
    key = (address, grouping)
    found = _CLIENTS.get(key)
    if found is not None:
        return found
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        found = address
    else:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if isinstance(ip, ipaddress.IPv6Address):
            ip = ipaddress.IPv6Address(int(ip))  # without a zone (fe80::1%eth0)
        bits = grouping.v4 if ip.version == 4 else grouping.v6
        if bits == ip.max_prefixlen:
            found = str(ip)
        else:
            found = str(ipaddress.ip_network(f"{ip}/{bits}", strict=False))
    if len(_CLIENTS) > 100_000:
        _CLIENTS.clear()
    _CLIENTS[key] = found
    return found


def token_of(agent: str | None) -> str | None:
    """A Web User-Agent's product token, lower-cased; None without one (no header, or a name
    that leads with no token: such a client is read as ``*``)."""
    if not agent:
        return None
    token = product_token(agent)
    return token.lower() if token else None


class Pace:
    """Whether a client's requests outpaced a person: the last few times, no more."""

    __slots__ = ("limit", "outpaced", "times")

    def __init__(self, kind: str) -> None:
        self.limit = PERSON_REQUESTS[kind]
        self.times: deque[float] | None = deque(maxlen=self.limit + 1)
        self.outpaced = False

    def add(self, when: float | None) -> bool:
        """Count a request; True once the client has outpaced a person (then nothing is kept)."""
        if self.times is None or when is None:
            return self.outpaced
        times = self.times
        times.append(when)
        if len(times) > self.limit and abs(when - times[0]) <= PERSON_SECONDS:
            self.outpaced = True
            self.times = None
        return self.outpaced
