"""URLs for the crawler: RFC 3986 resolution and one spelling per resource (pure).

The frontier stores each URL once, so two spellings of one resource must become one
string here: ``normalise`` is that function, and it is idempotent.

Gopher URLs (RFC 4266) are ``gopher://host:port/<type><selector>[%09<search>]``.  A
selector is an opaque string that the server gets byte for byte, so a Gopher URL is
normalised by decoding its path completely and encoding it again canonically: the
selector sent is unchanged, and ``%2F`` and ``/`` (or ``%3F`` and ``?``) become one
spelling.  Dot segments are *not* removed from Gopher URLs, neither when normalising
nor when resolving a relative reference against a Gopher base: ``/a/../b`` is a
selector of its own, which a server may answer differently from ``/b`` (or refuse).
Selectors that are not UTF-8 survive as lone surrogates (``errors="surrogateescape"``);
``selector_bytes`` gives back the bytes to send.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

DEFAULT_PORTS = {"gemini": 1965, "gopher": 70, "http": 80, "https": 443}

# RFC 3986 appendix B; None marks a component that is absent (not merely empty).
_URI = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.DOTALL)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
_SUB_DELIMS = "!$&'()*+,;="
_PATH_SAFE = _UNRESERVED + _SUB_DELIMS + ":@/"
_QUERY_SAFE = _PATH_SAFE + "?"
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_REG_NAME = re.compile(r"[a-z0-9._~!$&'()*+,;=-]+")
_STRIP = "".join(chr(c) for c in range(0x21))  # C0 controls and space, as browsers strip them


@dataclass(frozen=True)
class _Parts:
    scheme: str | None
    authority: str | None
    path: str
    query: str | None
    fragment: str | None

    def unsplit(self) -> str:
        out = f"{self.scheme}:" if self.scheme is not None else ""
        if self.authority is not None:
            out += "//" + self.authority
        out += self.path
        if self.query is not None:
            out += "?" + self.query
        if self.fragment is not None:
            out += "#" + self.fragment
        return out


def _split(url: str) -> _Parts:
    m = _URI.match(url)
    assert m is not None  # every string matches appendix B's expression
    scheme, authority, path, query, fragment = m.groups()
    if scheme is not None and not _SCHEME.fullmatch(scheme):
        # "a b:c" is a relative path, not a scheme
        return _Parts(None, None, url.split("?", 1)[0].split("#", 1)[0], *_split_tail(url))
    return _Parts(scheme, authority, path, query, fragment)


def _split_tail(url: str) -> tuple[str | None, str | None]:
    rest, hash_, fragment = url.partition("#")
    _, question, query = rest.partition("?")
    return (query if question else None), (fragment if hash_ else None)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4."""
    out: list[str] = []
    while path:
        if path.startswith("../"):
            path = path[3:]
        elif path.startswith(("./", "/./")):
            path = path[2:]
        elif path == "/.":
            path = "/"
        elif path.startswith("/../"):
            path = path[3:]
            if out:
                out.pop()
        elif path == "/..":
            path = "/"
            if out:
                out.pop()
        elif path in (".", ".."):
            path = ""
        else:
            start = 1 if path.startswith("/") else 0
            end = path.find("/", start)
            end = len(path) if end < 0 else end
            out.append(path[:end])
            path = path[end:]
    return "".join(out)


def resolve(reference: str, base: str) -> str:
    """RFC 3986 §5.2.2 (strict): the target of ``reference`` read in ``base``.

    Written out because urllib's urljoin only resolves schemes it knows (not gemini).
    Dot segments are kept for Gopher targets (see the module docstring).
    """
    r, b = _split(reference), _split(base)
    if b.scheme is None:
        raise ValueError(f"base {base!r} is not an absolute URL")
    scheme = (r.scheme or b.scheme).lower()
    dots = remove_dot_segments if scheme != "gopher" else (lambda p: p)
    if r.scheme is not None:
        return _Parts(r.scheme, r.authority, dots(r.path), r.query, r.fragment).unsplit()
    if r.authority is not None:
        return _Parts(b.scheme, r.authority, dots(r.path), r.query, r.fragment).unsplit()
    if r.path == "":
        query = r.query if r.query is not None else b.query
        return _Parts(b.scheme, b.authority, b.path, query, r.fragment).unsplit()
    if r.path.startswith("/"):
        path = dots(r.path)
    elif b.authority is not None and b.path == "":  # §5.2.3 merge
        path = dots("/" + r.path)
    else:
        path = dots(b.path[: b.path.rfind("/") + 1] + r.path)
    return _Parts(b.scheme, b.authority, path, r.query, r.fragment).unsplit()


def _normalise_escapes(text: str, safe: str) -> str:
    """Decode escapes of unreserved characters, upper-case the others' hex, and escape
    what may not appear raw (non-ASCII as UTF-8, a "%" that starts no escape)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "%":
            m = _ESCAPE.match(text, i)
            if m:
                ch = chr(int(m[1], 16))
                out.append(ch if ch in _UNRESERVED else "%" + m[1].upper())
                i += 3
                continue
            out.append("%25")
        elif c in safe:
            out.append(c)
        else:
            out.append(quote(c, safe="", errors="surrogateescape"))
        i += 1
    return "".join(out)


def _host(raw: str) -> str:
    """Lower-cased, IDNA-encoded host; IP literals in canonical form (IPv6 in brackets)."""
    host = unquote(raw, errors="strict")
    if host.startswith("[") and host.endswith("]"):
        literal = host[1:-1]
        try:
            return f"[{ipaddress.IPv6Address(literal).compressed}]"
        except ValueError:
            if re.fullmatch(r"v[0-9A-Fa-f]+\.[A-Za-z0-9._~!$&'()*+,;=:-]+", literal):
                return f"[{literal.lower()}]"  # IPvFuture: nothing more to do
            raise ValueError(f"bad IP literal {host!r}") from None
    if not host:
        raise ValueError("the URL names no host")
    try:
        host = host.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise ValueError(f"host name {host!r} cannot be encoded for DNS: {exc}") from None
    if not _REG_NAME.fullmatch(host):
        raise ValueError(f"host name {host!r} holds characters a host name cannot")
    return host


@dataclass(frozen=True)
class _Authority:
    scheme: str
    host: str
    port: int | None  # None: the scheme's default, or no port for an unknown scheme


def _authority(parts: _Parts) -> _Authority:
    if parts.scheme is None or parts.authority is None:
        raise ValueError("not an absolute URL with a host")
    scheme = parts.scheme.lower()
    hostport = parts.authority
    if "@" in hostport:
        if scheme in ("gemini", "gopher"):
            raise ValueError(f"{scheme}:// URLs carry no user information")
        hostport = hostport.rpartition("@")[2]
    m = re.fullmatch(r"(\[[^\]]*\]|[^:]*)(?::([0-9]*))?", hostport)
    if m is None:
        raise ValueError(f"bad host and port {hostport!r}")
    host = _host(m[1])
    port = int(m[2]) if m[2] else None
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"port {port} out of range")
    if port == DEFAULT_PORTS.get(scheme):
        port = None
    return _Authority(scheme, host, port)


def _authority_text(parts: _Parts, a: _Authority) -> str:
    userinfo = ""
    if parts.authority is not None and "@" in parts.authority:
        userinfo = (
            _normalise_escapes(parts.authority.rpartition("@")[0], _UNRESERVED + _SUB_DELIMS + ":") + "@"
        )
    return userinfo + a.host + (f":{a.port}" if a.port is not None else "")


def normalise(url: str, base: str | None = None) -> str:
    """Resolve ``url`` against ``base`` (RFC 3986 §5.2), then give its one spelling.

    Scheme and host lower-cased, host IDNA-encoded, default port dropped, empty path
    "/", dot segments removed, fragment dropped, escapes of unreserved characters
    decoded and other escapes' hex upper-cased, characters a URL cannot hold raw
    escaped (UTF-8).  Gopher URLs: see the module docstring; ``gopher://h`` and
    ``gopher://h/1`` are ``gopher://h/``.  ValueError when the result is no absolute
    URL with a host (``mailto:``, a relative reference without base, a bad port).
    """
    url = url.strip(_STRIP)
    if base is not None:
        url = resolve(url, base.strip(_STRIP))
    parts = _split(url)
    a = _authority(parts)
    if a.scheme == "gopher":
        ref = _gopher_ref(parts, a)
        return gopher_url(ref.host, ref.port, ref.item_type, ref.selector, ref.search)
    path = remove_dot_segments(_normalise_escapes(parts.path, _PATH_SAFE)) or "/"
    query = None if parts.query is None else _normalise_escapes(parts.query, _QUERY_SAFE)
    return _Parts(a.scheme, _authority_text(parts, a), path, query, None).unsplit()


def authority(url: str) -> str:
    """``scheme://host:port`` with the port always written: the unit of politeness.

    Asked for every link a page holds, so the answer is kept per origin (the part before the
    path): a page's thousands of links name a handful of them."""
    url = url.strip(_STRIP)
    m = _ORIGIN.match(url)
    return _origin_authority(m[0] if m else url)


_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


@functools.lru_cache(maxsize=4096)
def _origin_authority(origin: str) -> str:
    a = _authority(_split(origin))  # lower-cases, IDNA-encodes, drops the default port
    port = a.port if a.port is not None else DEFAULT_PORTS.get(a.scheme)
    return f"{a.scheme}://{a.host}" + (f":{port}" if port is not None else "")


def scheme(url: str) -> str | None:
    """The lower-cased scheme of a URL, or None for a relative reference."""
    s = _split(url.strip(_STRIP)).scheme
    return s.lower() if s is not None else None


# -- Gopher (RFC 4266) -------------------------------------------------------------------


@dataclass(frozen=True)
class GopherRef:
    """What a gopher:// URL asks for: send ``selector`` (TAB ``search``) to host:port."""

    host: str  # normalised (IDNA, lower case; IPv6 in brackets)
    port: int
    item_type: str  # one character; "1" when the URL names none
    selector: str  # %-decoded; undecodable bytes as lone surrogates
    search: str | None  # after %09: a type-7 query (and any Gopher+ part after a second TAB)

    def request(self) -> bytes:
        """The request line the server gets: selector [TAB search] CRLF."""
        line = self.selector if self.search is None else f"{self.selector}\t{self.search}"
        return selector_bytes(line) + b"\r\n"


def selector_bytes(selector: str) -> bytes:
    """The bytes of a selector as the server wrote them (see the module docstring)."""
    return selector.encode("utf-8", "surrogateescape")


def selector_text(data: bytes) -> str:
    """A selector read from the network, reversible with ``selector_bytes``."""
    return data.decode("utf-8", "surrogateescape")


def gopher_ref(url: str) -> GopherRef:
    """RFC 4266: host, port, item type, %-decoded selector and search part of a gopher:// URL.

    Everything between the authority and a ``#`` belongs to the path: ``?`` is part
    of the selector (servers pass it to scripts), not a query.
    """
    parts = _split(url.strip(_STRIP))
    a = _authority(parts)
    if a.scheme != "gopher":
        raise ValueError(f"{url!r} is not a gopher:// URL")
    return _gopher_ref(parts, a)


def _gopher_ref(parts: _Parts, a: _Authority) -> GopherRef:
    path = parts.path + ("?" + parts.query if parts.query is not None else "")
    path = unquote(path.removeprefix("/"), errors="surrogateescape")  # the "/" separates, it is not sent
    item_type, rest = (path[:1], path[1:]) if path else ("1", "")
    selector, tab, search = rest.partition("\t")
    return GopherRef(a.host, a.port or DEFAULT_PORTS["gopher"], item_type, selector, search if tab else None)


def gopher_url(host: str, port: int, item_type: str, selector: str, search: str | None = None) -> str:
    """The normalised gopher:// URL of an item; escapes what a URL cannot hold raw.

    A TAB in ``selector`` (which no server can serve) would read back as a search part.
    """
    if len(item_type) != 1:
        raise ValueError(f"item type {item_type!r} is not one character")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address as a menu writes it
    a = _authority(_Parts("gopher", f"{host}:{port}", "", None, None))
    path = item_type + selector + ("\t" + search if search is not None else "")
    encoded = quote(path, safe=_QUERY_SAFE, errors="surrogateescape")
    if path == "1":
        encoded = ""  # gopher://h/ and gopher://h/1 are the root menu
    return f"gopher://{a.host}" + (f":{a.port}" if a.port is not None else "") + "/" + encoded
