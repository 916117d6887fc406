"""Which addresses a crawler may connect to (pure), and the policy in force for this task.

A crawler that follows links from anywhere must not become a way into the network it runs
in: a menu linking to ``gopher://127.0.0.1:8080/0/admin`` or ``gemini://10.0.0.5/`` would
otherwise make it send bytes to an internal service and archive the answer (server-side
request forgery).  So by default only public unicast addresses are connected to, plus the
exact authorities (host and port) an operator named as seeds.

The check is made on the address actually connected to: ``net.connect`` resolves a name,
checks every address against the policy in force and connects to the address it checked,
never resolving again in between, so a second DNS answer cannot slip past it.  The policy
travels in a context variable, so the robots.txt fetches a ``Robot`` makes on the crawler's
behalf (tasks inherit the context) are held to it too, without threading it through every
call in between.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Checked in this order, so the sentence names the most specific kind.
_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("unspecified", ("0.0.0.0/32", "::/128")),
    ("loopback", ("127.0.0.0/8", "::1/128")),
    ("private (RFC 1918)", ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")),
    ("unique local (RFC 4193)", ("fc00::/7",)),
    ("link-local", ("169.254.0.0/16", "fe80::/10")),
    ("shared (CGNAT, RFC 6598)", ("100.64.0.0/10",)),
    ("multicast", ("224.0.0.0/4", "ff00::/8")),
    ("broadcast", ("255.255.255.255/32",)),
)
_KIND_NETWORKS = tuple((kind, tuple(ipaddress.ip_network(n) for n in nets)) for kind, nets in _KINDS)


def address_kind(ip: Address) -> str | None:
    """None for a public unicast address; else what it is ("loopback", "private (RFC 1918)"...).

    IPv4 addresses written as IPv6 (mapped, 6to4, Teredo) are judged by the IPv4 address inside.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is not None:
            kind = address_kind(inner)
            return f"{kind} (inside {ip.compressed})" if kind else None
    for kind, networks in _KIND_NETWORKS:
        if any(ip.version == net.version and ip in net for net in networks):
            return kind
    if not ip.is_global:  # documentation, benchmarking, reserved and the other special ranges
        return "reserved (not globally routed)"
    return None


def parse_networks(text: str) -> tuple[Network, ...]:
    """``"10.0.0.0/8,fd00::/8"`` -> networks; ValueError (one sentence) for a bad entry."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{part!r} is no IP address or CIDR network (such as 10.0.0.0/8)") from None
    if not out:
        raise ValueError("--allow-private takes a comma-separated list of CIDR networks, or nothing")
    return tuple(out)


@dataclass(frozen=True)
class AddressPolicy:
    """Public unicast addresses, the exact ``authorities`` (host, port) named, and ``allow``.

    ``allow_all`` turns the check off (a lab, a test bed on loopback).
    """

    authorities: frozenset[tuple[str, int]] = field(default_factory=frozenset)
    allow: tuple[Network, ...] = ()
    allow_all: bool = False

    @classmethod
    def of(
        cls, authorities: Iterable[tuple[str, int]], allow: Collection[Network] | bool = ()
    ) -> AddressPolicy:
        if allow is True:
            return cls(frozenset(authorities), (), True)
        return cls(frozenset((h.strip("[]").lower(), p) for h, p in authorities), tuple(allow or ()))

    def refuse(self, host: str, port: int, address: str) -> str | None:
        """Why connecting to ``address`` for ``host:port`` is refused, or None when it is allowed."""
        if self.allow_all or (host.strip("[]").lower(), port) in self.authorities:
            return None
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return f"{address!r} is no IP address"
        if any(ip.version == net.version and ip in net for net in self.allow):
            return None
        kind = address_kind(ip)
        if kind is None:
            return None
        named = "" if host.strip("[]") == address else f" ({host} resolves to it)"
        return (
            f"{address} is a {kind} address{named}: the crawler connects only to public addresses"
            " and its seeds' own hosts (--allow-private widens this)"
        )


#: The policy for connections made in this context (None: anything goes, as for the library).
POLICY: ContextVar[AddressPolicy | None] = ContextVar("manners_address_policy", default=None)
