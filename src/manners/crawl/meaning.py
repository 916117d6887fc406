"""What an answer means to the crawler: store, follow, retry, slow down, or record (pure).

Gemini statuses follow spec v0.16.1; a code the table does not name is read by its
first digit, as the spec tells clients to, and one outside 10-69 is an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..terminal import printable
from .gophermap import error_reply
from .urls import normalise

Kind = Literal["store", "redirect", "retry", "slow-down", "error", "input", "certificate"]

_CLASS: dict[int, tuple[Kind, str]] = {
    1: ("input", "input requested"),
    2: ("store", "success"),
    3: ("redirect", "redirect"),
    4: ("retry", "temporary failure"),
    5: ("error", "permanent failure"),
    6: ("certificate", "client certificate required"),
}
_NAMES = {
    10: "input",
    11: "sensitive input",
    20: "success",
    30: "temporary redirect",
    31: "permanent redirect",
    40: "temporary failure",
    41: "server unavailable",
    42: "CGI error",
    43: "proxy error",
    44: "slow down",
    50: "permanent failure",
    51: "not found",
    52: "gone",
    53: "proxy request refused",
    59: "bad request",
    60: "client certificate required",
    61: "certificate not authorised",
    62: "certificate not valid",
}


@dataclass(frozen=True)
class Action:
    kind: Kind
    reason: str  # for people and pages.jsonl: "51 not found: Not Found"
    target: str | None = None  # redirect: absolute, normalised URL
    permanent: bool = False  # 31
    wait: float | None = None  # 44: seconds from meta, None when meta is not a number
    mime: str | None = None  # store: the media type with its parameters, default text/gemini


def gemini_action(status: int, meta: str, url: str) -> Action:
    """What to do with a Gemini answer ``status meta`` to a request for ``url``."""
    kind, name = _CLASS.get(status // 10 if 10 <= status <= 69 else 0, ("error", "unknown status"))
    name = _NAMES.get(status, name)
    shown = printable(meta.strip())
    reason = f"{status} {name}" + (f": {shown}" if shown else "")
    if kind == "store":
        return Action(kind, reason, mime=meta.strip() or "text/gemini")
    if kind == "redirect":
        try:
            target = normalise(meta, url) if meta.strip() else None
        except ValueError:
            target = None
        if target is None:
            return Action("error", f"{reason} (no usable target)")
        return Action(kind, reason, target=target, permanent=status == 31)
    if status == 44:
        return Action("slow-down", reason, wait=seconds(meta))
    return Action(kind, reason)


def seconds(meta: str) -> float | None:
    """A 44's meta as seconds (the spec says an integer; a decimal is taken too)."""
    try:
        value = float(meta.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def media_type(mime: str) -> str:
    """``text/gemini; charset=utf-8`` -> ``text/gemini``."""
    return mime.split(";", 1)[0].strip().lower()


def charset(mime: str) -> str:
    """The charset parameter of a text type, default UTF-8 (the Gemini spec's default)."""
    for param in mime.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip('"'):
            return value.strip().strip('"').lower()
    return "utf-8"


def gopher_action(item_type: str, data: bytes) -> Action:
    """A Gopher reply: an error when it says so (type-3 line or menu, gophernicus'
    "Error:" page), else stored.  There is no status, so no redirect or slow-down."""
    message = error_reply(data)
    if message is not None:
        return Action("error", f"gopher error: {message}")
    return Action("store", f"gopher item type {printable(item_type)}")
