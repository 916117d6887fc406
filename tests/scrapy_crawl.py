"""One real Scrapy crawl, run as ``python scrapy_crawl.py CONFIG.json`` (a fresh process, so a fresh reactor).

CONFIG holds ``settings`` (Scrapy settings), ``requests`` (``{"url": ..., "at": seconds after
the start, "meta": {...}}``, each yielded at that time, with that meta) and ``out`` (a file).
The spider writes one JSON line per thing it saw to ``out``: first ``{"scrapy": version}``
(the Scrapy that ran: PYTHONPATH may choose another than the venv's), then ``{"seen": url,
"status": n, "usage": ...}`` for a response (``usage``: its ``meta["manners_usage"]``, as
:func:`usage_record` writes it), ``{"failed": url, "error": text}`` for a request that failed
or was ignored, ``{"robots_parsed": url}`` for each ``robots_parsed`` signal, and at the end
``{"stats": {...}}``.

Every ScrapyDeprecationWarning is an error here, so a deprecated use of Scrapy fails where it
happens (in a signal handler, Scrapy logs it as "Error caught on signal handler").  The filter
is set in main(), not by ``python -W error::scrapy.exceptions.ScrapyDeprecationWarning``:
Python reads -W before site-packages is on sys.path, cannot import scrapy.exceptions then, and
ignores the option ("Invalid -W option ignored").
"""

from __future__ import annotations

import asyncio
import json
import pickle
import sys
import time
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler, CrawlerProcess
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.http import Request, Response
from twisted.python.failure import Failure


class Probe(scrapy.Spider):
    name = "probe"

    def __init__(self, requests: list[dict[str, Any]], out: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.planned = requests
        self.out = open(out, "a", buffering=1)  # noqa: SIM115 - closed in closed()

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Probe:
        spider: Probe = super().from_crawler(crawler, *args, **kwargs)
        if hasattr(signals, "robots_parsed"):
            crawler.signals.connect(spider.robots_parsed, signal=signals.robots_parsed)
        return spider

    def write(self, **event: Any) -> None:
        self.out.write(json.dumps(event) + "\n")

    async def start(self) -> AsyncIterator[Request]:
        self.write(scrapy=scrapy.__version__)
        began = time.monotonic()
        for planned in self.planned:
            wait = began + planned.get("at", 0.0) - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            yield Request(
                planned["url"],
                callback=self.seen,
                errback=self.failed,
                dont_filter=True,
                meta=planned.get("meta", {}),
            )

    def seen(self, response: Response) -> None:
        self.write(seen=response.url, status=response.status, usage=usage_record(response.meta))

    def failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        self.write(failed=request.url if request is not None else None, error=str(failure.value))

    def robots_parsed(self, robotparser: Any, request: Request) -> None:
        self.write(robots_parsed=request.url, parser=type(robotparser).__name__)

    def closed(self, reason: str) -> None:
        assert self.crawler.stats is not None
        stats = {k: v for k, v in self.crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}
        self.write(stats=stats, reason=reason)
        self.out.close()


def usage_record(meta: Any) -> dict[str, Any] | None:
    """``meta["manners_usage"]`` as a spider reads it: its type, ``allowed``, each category's and
    signal's (value, line), the train-ai preference by label, and whether it comes back from a
    pickle equal (Scrapy's JOBDIR queues pickle a request's meta); None when the key is absent."""
    if "manners_usage" not in meta:
        return None
    usage = meta["manners_usage"]
    return {
        "type": f"{type(usage).__module__}.{type(usage).__qualname__}",
        "allowed": usage.allowed,
        "categories": {p.category: [p.value, p.line] for p in usage.categories},
        "signals": {p.category: [p.value, p.line] for p in usage.signals},
        "train-ai": usage.category("train-ai").value,
        "pickles": pickle.loads(pickle.dumps(usage)) == usage,
    }


def main(config_path: str) -> None:
    warnings.simplefilter("error", ScrapyDeprecationWarning)
    config = json.loads(Path(config_path).read_text())
    process = CrawlerProcess(settings=config["settings"])
    process.crawl(Probe, requests=config["requests"], out=config["out"])
    process.start()


if __name__ == "__main__":
    main(sys.argv[1])
