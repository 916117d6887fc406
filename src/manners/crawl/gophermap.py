"""Gopher menus and item types (RFC 1436 and the contemporary draft), pure.

A menu line is ``T<display>TAB<selector>TAB<host>TAB<port>`` with optional Gopher+
fields after the port.  Real menus bend this, and nothing here raises on them:

- blank lines and a lone "." line are skipped (the terminator is optional);
- a line with fewer than four fields is kept as text: an ``i`` or ``3`` line keeps
  its type, any other becomes an ``i`` item (its display the first field, or the
  whole line when it has no TAB at all);
- a line whose port is not a number in 1-65535, or whose host cannot be a host name,
  keeps its type but gets no URL: it is unlinkable, never fetched;
- a port written ``70+`` (Gopher+ on, with no TAB before the "+", as some servers
  write it) is port 70 with Gopher+ field "+".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..gopher_reply import gopher_error, gopher_text_body
from ..terminal import printable
from .urls import gopher_url, selector_text

TEXT_TYPES = frozenset("0146hpx")  # fetched: "1" a menu, "0" text, the draft's text types 4 6 h p x
BINARY_TYPES = frozenset("59gIds;cm")  # fetched only for the archiver role
NEVER_TYPES = frozenset("728Ti3")  # search, CCSO, telnet, tn3270, text lines, errors
_PORT = re.compile(r"([0-9]{1,5})\+?")


@dataclass(frozen=True)
class MenuItem:
    line: int  # 1-based line number in the menu
    item_type: str  # one character; a "+" item gets the type of the item before it
    display: str
    selector: str  # undecodable bytes as lone surrogates: urls.selector_bytes gives them back
    host: str  # as written
    port: int  # 0 when the line's port is no port
    plus: str | None  # trailing Gopher+ field(s), as written
    url: str | None  # gopher:// URL, or a "URL:" selector's target as written; None for i/3/unlinkable
    external: bool  # a "URL:" selector (never sent to a Gopher server)
    mirror: bool  # a "+" line: an alternative of the previous item, not crawled twice


@dataclass(frozen=True)
class Menu:
    items: tuple[MenuItem, ...]
    title: str | None  # the display of the first ``i`` line whose selector is TITLE
    error: str | None  # the message when the first item is type 3: an error answer, not a menu

    def links(self) -> tuple[str, ...]:
        """The menu's links, once each, in menu order: mirrors and unlinkable lines left out,
        ``URL:`` targets in (scope and ``fetchable`` are the crawler's to apply)."""
        seen: dict[str, None] = {}
        for item in self.items:
            if item.url is not None and not item.mirror:
                seen.setdefault(item.url)
        return tuple(seen)


def parse_menu(data: bytes) -> Menu:
    """Read a type-1 reply; LF or CRLF, with or without a final "."."""
    items: list[MenuItem] = []
    title: str | None = None
    for number, raw in enumerate(data.split(b"\n"), 1):
        raw = raw.removesuffix(b"\r")
        if not raw.strip() or raw.strip() == b".":
            continue
        item = _item(number, raw, items[-1].item_type if items else None)
        items.append(item)
        if title is None and item.item_type == "i" and item.selector == "TITLE" and item.display.strip():
            title = item.display.strip()
    error = None
    if items and items[0].item_type == "3":
        error = printable(items[0].display.strip() or items[0].selector.strip() or "error")
    return Menu(tuple(items), title, error)


def _item(number: int, raw: bytes, previous: str | None) -> MenuItem:
    item_type = raw[:1].decode("utf-8", "replace")
    fields = raw[1:].split(b"\t")
    display = fields[0].decode("utf-8", "replace")
    selector = selector_text(fields[1]) if len(fields) > 1 else ""
    mirror = item_type == "+"
    if mirror and previous is not None:
        item_type = previous
    if len(fields) < 4:
        if item_type not in ("i", "3"):
            item_type = "i"
            display = display if b"\t" in raw else raw.decode("utf-8", "replace")
        return MenuItem(number, item_type, display, selector, "", 0, None, None, False, mirror)
    host = fields[2].decode("utf-8", "replace").strip()
    port_text = fields[3].decode("utf-8", "replace").strip()
    port = port_number(port_text)
    plus = b"\t".join(fields[4:]).decode("utf-8", "replace") if len(fields) > 4 else None
    if plus is None and port and port_text.endswith("+"):
        plus = "+"  # "70+": the Gopher+ mark glued to the port
    url: str | None = None
    external = selector.startswith("URL:") and item_type not in ("i", "3")
    if external:
        url = selector[4:].strip() or None
    elif item_type not in ("i", "3", "+") and port:
        try:
            url = gopher_url(host, port, item_type, selector)
        except ValueError:  # a host that cannot be one: unlinkable
            url = None
    return MenuItem(number, item_type, display, selector, host, port, plus, url, external, mirror)


def port_number(text: str) -> int:
    """The port of a menu line's (decoded, stripped) port field; 0 when it is no port.

    Its leading digits when a "+" follows them with no TAB between (``70+``: Gopher+ on),
    because some servers write it so and the item is as reachable as any other."""
    m = _PORT.fullmatch(text)
    port = int(m[1]) if m else 0
    return port if port < 65536 else 0


def text_body(data: bytes) -> bytes:
    """A text file without its final lone "." line."""
    return gopher_text_body(data)


def error_reply(data: bytes) -> str | None:
    """The message when a reply says "error" (a type-3 line or menu, gophernicus' plain
    "Error:" page), else None.  Shared with the robots.txt fetcher (fetch.outcome)."""
    return gopher_error(data)


def fetchable(item_type: str, roles: Iterable[str]) -> bool:
    """Whether the crawler requests an item of this type: text types always, binary types
    for an archiver only, and never the rest (search, telnet, CCSO, info, errors, and
    types nobody defined: we do not know what they would do)."""
    if item_type in TEXT_TYPES:
        return True
    names = (roles,) if isinstance(roles, str) else roles
    return item_type in BINARY_TYPES and "archiver" in {role.lower() for role in names}
