"""Archiving and records: a worker's WARC files, its pages file and its ledger, written in order.

The crawl's files are the one thing a kill must not tear, so their writing is in one place: the
WARC records of a response (written before its page is settled), the page's line, and the
rolling of the three together (``--warc-size``, SIGHUP).  The worker decides what to record;
this module decides how, and keeps records whole and in order under one lock.
"""

from __future__ import annotations

import asyncio
import time
from typing import Literal

from ..fetch.certificate import Certificate
from ..vocabulary import timestamp
from .client import Response
from .frontier import Lease
from .page import Page
from .records import Ledger, PageLog
from .visits import Visiting
from .warc import WarcWriter, capture_id, digest

WARC_INLINE = 256 << 10  # bytes: a larger reply is compressed for the WARC in a thread


class Archive:
    """The files of the worker ``owner``: ``pages`` and ``ledger`` always, ``warc`` unless None.

    Without WARC files the logs roll when the pages file reaches ``size`` bytes."""

    def __init__(
        self, pages: PageLog, ledger: Ledger, warc: WarcWriter | None, owner: str, size: int
    ) -> None:
        self.pages = pages
        self.ledger = ledger
        self.warc = warc
        self.owner = owner
        self.size = size
        self.lock = asyncio.Lock()
        self.ids_since: float | None = None  # a revisiting crawl: captures since then have derived ids
        self._rolled = 0  # the WARC files closed at --warc-size so far, to roll the logs with them
        self._certificates: set[tuple[str, str]] = set()  # (authority, fingerprint) with a metadata record

    async def write(self, r: Response, scheme: Literal["gemini", "gopher"], when: float, lease: Lease,
                    visiting: Visiting | None, auth: str = "",
                    cert: Certificate | None = None) -> None:  # fmt: skip
        """The request and response records, written before the page is settled (and a Gemini
        server's certificate, as PEM in a metadata record, once per host and certificate).  A large
        reply is compressed in a thread (zlib lets the GIL go), so a 5 MiB page stalls no other
        host; the lock keeps records whole and in order.

        A revisiting crawl compares the response's payload digest with the last visit's: the same,
        and a revisit record naming the capture that holds that payload stands for it, by its URL
        and date and, for a capture this version wrote (``ids_since``), by its WARC-Record-ID,
        derived from the three (``capture_id``).

        The certificate's record is about the server, not about the page that happened to be
        fetched first: its WARC-Target-URI is ``urn:certificate:`` and the authority, so that an
        index of the archive (cdxj-indexer, pywb) never takes the PEM for that page's capture; it
        refers to the response it came with (WARC-Refers-To, WARC-Concurrent-To)."""
        same = False
        record_id = None
        if visiting is not None:
            payload = digest(r.raw)
            same = payload == lease.digest and lease.capture_at is not None
            visiting.capture = (payload, lease.capture_at if same and lease.capture_at is not None else when,
                                not same)  # fmt: skip
            record_id = capture_id(lease.url, when, payload)
        if self.warc is None:
            return
        async with self.lock:
            if same and lease.capture_at is not None and lease.digest is not None:
                known = self.ids_since is not None and lease.capture_at >= self.ids_since
                refers = capture_id(lease.url, lease.capture_at, lease.digest) if known else None
                written = self.warc.write_revisit(r.url, r.request, r.raw, scheme, when, lease.url,
                                                  lease.capture_at, r.peer, refers)  # fmt: skip
            elif len(r.raw) < WARC_INLINE:
                written = self.warc.write(r.url, r.request, r.raw, scheme, when, r.peer, record_id)
            else:
                written = await asyncio.to_thread(
                    self.warc.write, r.url, r.request, r.raw, scheme, when, r.peer, record_id
                )
            if cert is not None and (auth, cert.sha256) not in self._certificates:
                self._certificates.add((auth, cert.sha256))
                about, pem = f"urn:certificate:{auth}", cert.pem.encode("ascii")
                self.warc.write_metadata(about, pem, "application/x-pem-file", when, r.peer, written)
            if self.warc.rolled != self._rolled:  # that file reached --warc-size: the logs roll with it
                self._rolled = self.warc.rolled
                self.roll()

    def record(self, page: Page) -> None:
        """The page's line in this worker's pages file, naming the worker (its ledger, its WARCs).
        Without WARC files, the logs roll when the pages file reaches --warc-size."""
        self.pages.write({**page.record(), "worker": self.owner})
        if self.warc is None and self.pages.size >= self.size:
            self.roll()

    def roll(self) -> None:
        """The pages file and the ledger go on in new numbered files (``records.PageLog.rotate``)."""
        self.pages.rotate()
        self.ledger.rotate()

    def unsettled(self, page: Page, reason: str) -> None:
        """The second line of a page recorded whose settling the frontier did not commit."""
        self.pages.write({"url": page.url, "outcome": "unsettled", "was": page.outcome, "reason": reason,
                          "at": timestamp(time.time()), "worker": self.owner})  # fmt: skip

    def rotate(self) -> None:
        """New files now: the WARC file, the pages file and the ledger (call it under ``lock``)."""
        if self.warc is not None:
            self.warc.rotate()
        self.roll()
