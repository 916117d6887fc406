"""How fast a robot may go, as every command says it after may-I: Crawl-delay, Request-rate,
Check, the spacing a default Robot keeps, and the sitemaps."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from .robots import RobotsTxt, asked_spacing

MIN_DELAY, MAX_DELAY = 1.0, 300.0  # a Robot's defaults, for the spacing shown


def pace(robots: RobotsTxt, agent: str, roles: Sequence[str], profile: str) -> dict[str, Any]:
    """How fast this robot may go, and the sitemaps: what a crawler asks after may I."""
    delay = robots.crawl_delay(agent, roles, profile=profile)
    now = datetime.now(UTC)
    rate = robots.request_rate(agent, roles, profile=profile)  # the slowest, in its window or not
    # as a default Robot spaces requests now: a Request-rate counts inside its window only
    spacing = min(max(MIN_DELAY, asked_spacing(robots, agent, roles, profile=profile, at=now)), MAX_DELAY)
    window = {
        "start_time": rate.start_time.strftime("%H:%M") if rate and rate.start_time else None,
        "end_time": rate.end_time.strftime("%H:%M") if rate and rate.end_time else None,
    }
    return {
        "crawl_delay": delay,
        "request_rate": {"requests": rate[0], "seconds": rate[1]} | window if rate else None,
        "check_interval": robots.check_interval(agent, roles, profile=profile),
        "spacing": spacing,
        "sitemaps": robots.sitemaps,
    }


def pace_lines(p: dict[str, Any]) -> list[str]:
    rate = p["request_rate"]
    asked = [
        f"Crawl-delay {p['crawl_delay']:g} s" if p["crawl_delay"] is not None else "no Crawl-delay",
        f"Request-rate {rate['requests']}/{rate['seconds']:g} s{window_words(rate)}"
        if rate
        else "no Request-rate",
        f"Check every {p['check_interval']:g} s" if p["check_interval"] is not None else "no Check",
    ]
    lines = [f"pace: {'; '.join(asked)}: a Robot keeps {p['spacing']:g} s between requests"]
    lines += [f"sitemap: {s}" for s in p["sitemaps"]] or ["no Sitemap lines"]
    return lines


def window_words(rate: dict[str, Any]) -> str:
    """When a Request-rate applies, in words: nothing for one that always does."""
    if rate["start_time"] is None:
        return ""
    return f" from {rate['start_time']} to {rate['end_time']} UTC"
