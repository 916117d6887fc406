"""Where robots.txt lives for a URL, and the host and port to ask."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from .outcome import GOPHER_SELECTORS

DEFAULT_PORTS = {"http": 80, "https": 443, "gemini": 1965, "gopher": 70}


def split_authority(url: str) -> tuple[str, int]:
    """Host (IDNA-encoded, IP literals as given) and port of a URL; ValueError if it has none."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        known = ", ".join(f"{s}://" for s in DEFAULT_PORTS)
        raise ValueError(f"{url!r}: robots.txt can be fetched for {known} URLs, not {scheme or 'bare'} ones")
    host = parts.hostname
    if not host:
        raise ValueError(f"{url!r} names no host")
    return _ascii_host(host), port if port is not None else DEFAULT_PORTS[scheme]


def _ascii_host(host: str) -> str:
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        return host.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise ValueError(f"host name {host!r} cannot be encoded for DNS: {exc}") from None


def robots_locations(url: str) -> list[str]:
    """Where a robot looks for the robots.txt that governs ``url``, in the order to try.

    Gopher has no one place: the 2019 proposal's selector ``robots.txt``, then
    ``/robots.txt`` (the contemporary draft), then ``0/robots.txt`` (UMN-style
    servers), each written as an RFC 4266 URL of item type 0.
    """
    host, port = split_authority(url)  # first: it names ``url`` in its ValueError ("Invalid IPv6 URL")
    scheme = urlsplit(url.strip()).scheme.lower()
    shown = f"[{host}]" if ":" in host else host
    authority = shown if port == DEFAULT_PORTS[scheme] else f"{shown}:{port}"
    if scheme == "gopher":
        return [f"gopher://{authority}/0{selector}" for selector in GOPHER_SELECTORS]
    return [f"{scheme}://{authority}/robots.txt"]
