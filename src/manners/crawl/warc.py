"""WARC 1.1 files of what the crawl fetched, written through warcio.

Each fetched URL gives a ``request`` and a ``response`` record pointing at each other with
``WARC-Concurrent-To``.  Gemini follows the convention of mozz-archiver and Kennedy: Content-Type
``application/gemini; msgtype=request|response``, the request block is the URL + CRLF and the
response block the header line + body.  Gopher is ours, in the same shape: ``application/gopher;
msgtype=request|response``, the request block is the selector (TAB search) + CRLF and the
response block the raw bytes the server sent.

Every record is its own gzip member, and each pair is flushed before ``write`` returns (and
fsynced too with ``fsync=True``): a process killed mid-write leaves every earlier record
readable (only the torn last member is lost).  A file is always fsynced when it is closed, on
``close()`` or when it reaches ``max_size``, so a crawl that ends survives a power cut too.
A writer always starts a new file, ``<prefix>-<UTC timestamp>-<serial>.warc.gz``, so a resumed
crawl never appends to a file that may end in a torn record; it moves to the next serial once a
file reaches ``max_size``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import uuid
import zlib
from collections.abc import Mapping
from datetime import datetime, timezone
from io import BytesIO
from pathlib import Path
from typing import BinaryIO, Literal

from warcio.recordloader import ArcWarcRecord  # type: ignore[import-untyped]
from warcio.statusandheaders import StatusAndHeaders  # type: ignore[import-untyped]
from warcio.timeutils import datetime_to_iso_date  # type: ignore[import-untyped]
from warcio.warcwriter import WARCWriter  # type: ignore[import-untyped]

from .. import __version__

WARC_VERSION = "WARC/1.1"
CONTENT_TYPES = {
    "gemini": ("application/gemini; msgtype=request", "application/gemini; msgtype=response"),
    "gopher": ("application/gopher; msgtype=request", "application/gopher; msgtype=response"),
}


class WarcWriter:
    """Writes request/response pairs into ``directory``, a new file per run and per ``max_size`` bytes.

    ``info`` adds fields to each file's warcinfo record (for example the crawl's agent and roles).
    ``fsync`` makes each pair durable as it is written; without it pairs are flushed (a killed
    process loses nothing) and the file is fsynced when closed.
    """

    def __init__(
        self,
        directory: Path,
        prefix: str = "manners",
        max_size: int = 1 << 30,
        info: Mapping[str, str] | None = None,
        fsync: bool = True,
    ) -> None:
        self.directory = directory
        self.prefix = prefix
        self.max_size = max_size
        self.fsync = fsync
        self._info = dict(info or {})
        self._started = datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S%f")
        self._serial = 0
        self._file: BinaryIO | None = None
        self._writer: WARCWriter | None = None
        self.paths: list[Path] = []
        directory.mkdir(parents=True, exist_ok=True)

    def write(
        self,
        url: str,
        request: bytes,
        response: bytes,
        scheme: Literal["gemini", "gopher"],
        fetched_at: float,
        ip: str | None = None,
    ) -> None:
        """Write the request and response records of ``url`` and make them durable."""
        out, writer = self._open()
        date = datetime_to_iso_date(
            datetime.fromtimestamp(fetched_at, timezone.utc).replace(tzinfo=None), use_micros=True
        )
        ids = (f"<urn:uuid:{uuid.uuid4()}>", f"<urn:uuid:{uuid.uuid4()}>")
        for k, (kind, content_type, block) in enumerate(
            zip(("request", "response"), CONTENT_TYPES[scheme], (request, response), strict=True)
        ):
            # Every header written here, digests included, so warcio has nothing left to compute or find.
            digest = "sha1:" + base64.b32encode(hashlib.sha1(block).digest()).decode("ascii")
            headers = [("WARC-Type", kind), ("WARC-Record-ID", ids[k]), ("WARC-Date", date),
                       ("WARC-Target-URI", url), ("WARC-Concurrent-To", ids[1 - k])]  # fmt: skip
            if ip:
                headers.append(("WARC-IP-Address", ip))
            headers += [("WARC-Block-Digest", digest), ("WARC-Payload-Digest", digest),
                        ("Content-Type", content_type), ("Content-Length", str(len(block)))]  # fmt: skip
            record = ArcWarcRecord("warc", kind, StatusAndHeaders(WARC_VERSION, headers), BytesIO(block),
                                   None, content_type, len(block))  # fmt: skip
            record.payload_length = len(block)
            writer.write_record(record)
        self._sync(out)
        if out.tell() >= self.max_size:
            self._finish()

    def close(self) -> None:
        self._finish()

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _open(self) -> tuple[BinaryIO, WARCWriter]:
        if self._file is not None and self._writer is not None:
            return self._file, self._writer
        while True:
            path = self.directory / f"{self.prefix}-{self._started}-{self._serial:05d}.warc.gz"
            self._serial += 1
            try:
                out: BinaryIO = open(path, "xb")  # noqa: SIM115 (kept open across writes; closed in _finish)
                break
            except FileExistsError:
                continue
        writer = WARCWriter(_GzipMembers(out), gzip=False, warc_version=WARC_VERSION)
        fields = {
            "software": f"manners/{__version__}",
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            **self._info,
        }
        writer.write_record(writer.create_warcinfo_record(path.name, fields))
        self._sync(out)
        self._file, self._writer = out, writer
        self.paths.append(path)
        return out, writer

    def _sync(self, out: BinaryIO) -> None:
        out.flush()
        if self.fsync:
            os.fsync(out.fileno())

    def _finish(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())  # whatever ``fsync`` says per record: durable once closed
            self._file.close()
        self._file = self._writer = None


class _GzipMembers:
    """What warcio writes between two of its flushes (one record) as one gzip member, as readers
    expect.  warcio's own wrapper gives each record zlib's default state, 256 KiB set up and
    cleared per member, which costs more than compressing a small page; here the window and the
    hash table are sized to the record, so a small record is cheap and a large one compresses as
    well as before."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        data = b"".join(self._parts)
        self._parts = []
        bits = min(max(len(data).bit_length(), 10), 15)  # window: 1 KiB up to zlib's 32 KiB
        member = zlib.compressobj(6, zlib.DEFLATED, 16 + bits, max(bits - 7, 1))  # 16+: gzip framing
        self.raw.write(member.compress(data) + member.flush())
