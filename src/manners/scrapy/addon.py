"""``ADDONS = {"manners.scrapy.Addon": 0}``: the one switch that turns manners on in a Scrapy project."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.utils.misc import load_object

from ..version import __version__

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

SCRAPY_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
MIDDLEWARE = "manners.scrapy.RobotsTxtMiddleware"
PARSER = "manners.scrapy.RobotParser"
PRIORITY = 100  # where Scrapy's own robots.txt middleware sits in DOWNLOADER_MIDDLEWARES_BASE


class Addon:
    """Obey robots.txt (unless the project says ``ROBOTSTXT_OBEY = False``), read it with manners,
    and put manners' middleware where Scrapy's was."""

    def __repr__(self) -> str:
        """How Scrapy's start-up log names it ("Enabled addons: [...]" prints each add-on's repr)."""
        return f"<manners.scrapy.Addon (manners {__version__})>"

    def update_settings(self, settings: BaseSettings) -> None:
        settings.set("ROBOTSTXT_OBEY", True, priority="addon")
        settings.set("ROBOTSTXT_PARSER", PARSER, priority="addon")
        middlewares: dict[Any, Any] = dict(settings.getdict("DOWNLOADER_MIDDLEWARES"))
        scrapy_own, ours = load_object(SCRAPY_MIDDLEWARE), load_object(MIDDLEWARE)
        enabled = {key: _component(key) for key, order in middlewares.items() if order is not None}
        for key, component in enabled.items():
            if component is scrapy_own:
                del middlewares[key]
        middlewares[SCRAPY_MIDDLEWARE] = None  # off, though DOWNLOADER_MIDDLEWARES_BASE lists it
        if ours not in enabled.values():
            middlewares[MIDDLEWARE] = PRIORITY
        priority = settings.getpriority("DOWNLOADER_MIDDLEWARES") or 0
        settings.set("DOWNLOADER_MIDDLEWARES", middlewares, priority=priority)


def _component(key: object) -> object:
    return load_object(key) if isinstance(key, str) else key
