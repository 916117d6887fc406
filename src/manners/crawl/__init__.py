"""``manners crawl``: a polite, resumable crawler for Geminispace and Gopherspace."""

from __future__ import annotations

from .crawler import Crawler, Page

__all__ = ["Crawler", "Page"]
