"""The one place that touches Scrapy's download slots.

Scrapy's slots are internal and have changed shape before (``randomize_delay`` became
``jitter`` in 2.19) and may again (scrapy#6931), so every read and write of a slot is
in :func:`keep_delay`.
"""

from __future__ import annotations

from typing import Any

DOWNLOAD_SLOT = "download_slot"  # the request meta key Scrapy's downloader files a request under
FALLBACK_JITTER = 0.5  # a slot whose jitter could reach 0 s is given Scrapy's default instead


def keep_delay(downloader: Any, request: Any, delay: float) -> float | None:
    """Make the delay of ``request``'s download slot at least ``delay`` seconds, every draw included.

    Scrapy waits ``slot.delay`` between two requests of a slot, randomised by ``±jitter``
    (``DOWNLOAD_DELAY_JITTER``; before 2.19, ``RANDOMIZE_DOWNLOAD_DELAY``'s ±50 %), so the
    delay is raised to ``delay / (1 - jitter)``: the shortest draw is then ``delay``.
    The delay is only ever raised: a larger one (``DOWNLOAD_DELAY``, AutoThrottle's, or
    another authority's on the same host) stays.  Returns the slot's delay, or None when
    the request has no slot (yet).
    """
    key = request.meta.get(DOWNLOAD_SLOT)
    slots = getattr(downloader, "slots", None)
    if key is None or not isinstance(slots, dict):
        return None
    slot = slots.get(key)
    if slot is None:
        return None
    jitter = _jitter(slot)
    if jitter >= 1.0:  # ±100 % or more draws 0 s sometimes: no delay can be kept that way
        _set_jitter(slot, FALLBACK_JITTER)
        jitter = FALLBACK_JITTER
    needed = delay / (1.0 - jitter)
    current = float(slot.delay)
    if current < needed:
        slot.delay = needed
        return needed
    return current


def _jitter(slot: Any) -> float:
    """The slot's random spread as a fraction of its delay."""
    if _has_field(slot, "jitter"):  # Scrapy >= 2.19
        return float(slot.jitter)
    return 0.5 if getattr(slot, "randomize_delay", False) else 0.0  # uniform(0.5, 1.5) x delay


def _set_jitter(slot: Any, jitter: float) -> None:
    if _has_field(slot, "jitter"):
        slot.jitter = jitter


def _has_field(slot: Any, name: str) -> bool:
    return name in getattr(type(slot), "__dataclass_fields__", {}) or name in getattr(slot, "__dict__", {})
