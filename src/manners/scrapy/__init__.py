"""manners for Scrapy: robots.txt read as RFC 9309 says, and Crawl-delay honoured.

``ADDONS = {"manners.scrapy.Addon": 0}`` turns it all on; see docs/scrapy.md.
Needs the optional extra: ``pip install 'manners[scrapy]'``.
"""

from __future__ import annotations

try:
    import scrapy  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("manners.scrapy needs Scrapy: pip install 'manners[scrapy]'") from exc

from .addon import Addon
from .middleware import RobotsTxtMiddleware
from .parser import RobotParser

__all__ = ["Addon", "RobotParser", "RobotsTxtMiddleware"]
