"""WARC 1.1 files of what the crawl fetched, written through warcio.

Each fetched URL gives a ``request`` and a ``response`` record pointing at each other with
``WARC-Concurrent-To``.  Gemini follows the convention of mozz-archiver and Kennedy: Content-Type
``application/gemini; msgtype=request|response``, the request block is the URL + CRLF and the
response block the header line + body.  Gopher is ours, in the same shape: ``application/gopher;
msgtype=request|response``, the request block is the selector (TAB search) + CRLF and the
response block the raw bytes the server sent.  A ``metadata`` record (``write_metadata``) says
more about a capture, for example the certificate a Gemini server presented (PEM), and refers
to the response record that ``write`` returned.

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

_BREAKS = frozenset("\r\n")


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
    ) -> str:
        """Write the request and response records of ``url`` and make them durable.

        Returns the response record's WARC-Record-ID, for records that refer to it
        (:meth:`write_metadata`)."""
        out, writer = self._open()
        ids = (_record_id(), _record_id())
        for k, (kind, content_type, block) in enumerate(
            zip(("request", "response"), CONTENT_TYPES[scheme], (request, response), strict=True)
        ):
            _write_record(writer, kind, ids[k], url, fetched_at, ip, [("WARC-Concurrent-To", ids[1 - k])],
                          content_type, block)  # fmt: skip
        self._done(out)
        return ids[1]

    def write_metadata(
        self,
        url: str,
        fields_or_block: Mapping[str, str] | bytes,
        content_type: str,
        fetched_at: float,
        ip: str | None = None,
        refers_to: str | None = None,
    ) -> str:
        """Write a ``metadata`` record about ``url`` and make it durable; returns its WARC-Record-ID.

        The block is ``fields_or_block`` as is, or fields written as ``application/warc-fields``
        (``name: value`` lines; ValueError if one would span lines).  For example a server's
        certificate: the PEM with Content-Type ``application/x-pem-file``.  ``refers_to``: the
        WARC-Record-ID of the record it describes (what :meth:`write` returned), written as
        WARC-Refers-To and, since both come from one capture, WARC-Concurrent-To.
        """
        if isinstance(fields_or_block, Mapping):
            if any(_BREAKS & set(f"{name}{value}") or ":" in name for name, value in fields_or_block.items()):
                raise ValueError("a WARC field name or value with a line break, or a name with a colon")
            block = "".join(f"{name}: {value}\r\n" for name, value in fields_or_block.items()).encode("utf-8")
        else:
            block = bytes(fields_or_block)
        out, writer = self._open()
        record_id = _record_id()
        links = []
        if refers_to is not None:
            links = [("WARC-Refers-To", refers_to), ("WARC-Concurrent-To", refers_to)]
        _write_record(writer, "metadata", record_id, url, fetched_at, ip, links, content_type, block)
        self._done(out)
        return record_id

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

    def _done(self, out: BinaryIO) -> None:
        self._sync(out)
        if out.tell() >= self.max_size:
            self._finish()

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


def _record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


def _write_record(
    writer: WARCWriter,
    kind: str,
    record_id: str,
    url: str,
    fetched_at: float,
    ip: str | None,
    links: list[tuple[str, str]],
    content_type: str,
    block: bytes,
) -> None:
    """One record, every header written here, digests included, so warcio has nothing left to
    compute or find."""
    date = datetime_to_iso_date(
        datetime.fromtimestamp(fetched_at, timezone.utc).replace(tzinfo=None), use_micros=True
    )
    digest = "sha1:" + base64.b32encode(hashlib.sha1(block).digest()).decode("ascii")
    headers = [("WARC-Type", kind), ("WARC-Record-ID", record_id), ("WARC-Date", date),
               ("WARC-Target-URI", url), *links]  # fmt: skip
    if ip:
        headers.append(("WARC-IP-Address", ip))
    headers += [("WARC-Block-Digest", digest), ("WARC-Payload-Digest", digest),
                ("Content-Type", content_type), ("Content-Length", str(len(block)))]  # fmt: skip
    record = ArcWarcRecord("warc", kind, StatusAndHeaders(WARC_VERSION, headers), BytesIO(block),
                           None, content_type, len(block))  # fmt: skip
    record.payload_length = len(block)
    writer.write_record(record)


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
