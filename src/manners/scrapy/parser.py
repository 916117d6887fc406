"""``ROBOTSTXT_PARSER = "manners.scrapy.RobotParser"``: RFC 9309 answers behind Scrapy's parser interface.

Scrapy hands a parser a whole User-Agent header (``mybot/1.0 (+http://example.org/bot)``)
as str or bytes; RFC 9309 §2.2.1 names a robot by its product token, so that is what
the file is asked about.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.robotstxt import RobotParser as ScrapyRobotParser

from ..agents import product_token
from ..robots import Decision, RequestRate, RobotsTxt, parse

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class RobotParser(ScrapyRobotParser):
    """A robots.txt read by manners (``MANNERS_PROFILE``, default: by the URL's scheme)."""

    def __init__(self, robots: RobotsTxt, profile: str | None = None) -> None:
        self.robots = robots
        self.profile = profile

    @classmethod
    def from_crawler(cls, crawler: Crawler | None, robotstxt_body: bytes) -> RobotParser:
        profile = crawler.settings.get("MANNERS_PROFILE") if crawler is not None else None
        return cls(parse(robotstxt_body, profile), profile)

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        return self.robots.allowed(_text(url, "url"), agent(user_agent))

    def decide(self, url: str | bytes, user_agent: str | bytes) -> Decision:
        """Like allowed(), with the deciding line and the reason."""
        return self.robots.decide(_text(url, "url"), agent(user_agent))

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        return self.robots.crawl_delay(agent(user_agent), profile=self.profile)

    def request_rate(self, user_agent: str | bytes) -> RequestRate | None:
        """(requests, seconds) from Request-rate, for the same robot, with its window if it has one."""
        return self.robots.request_rate(agent(user_agent), profile=self.profile)

    @property
    def sitemaps(self) -> list[str]:
        return self.robots.sitemaps

    def __repr__(self) -> str:
        return f"<manners.scrapy.RobotParser {self.robots!r}>"


def agent(user_agent: str | bytes | Any) -> str:
    """The product token a User-Agent header leads with; the header itself when it has none."""
    text = _text(user_agent, "user_agent")
    return product_token(text) or text


def _text(value: str | bytes | Any, what: str) -> str:
    if isinstance(value, bytes):  # a header is Latin-1 on the wire; a URL's raw octets are UTF-8
        return value.decode("latin-1") if what == "user_agent" else value.decode("utf-8", "surrogateescape")
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} must be str or bytes, not {type(value).__name__}")
