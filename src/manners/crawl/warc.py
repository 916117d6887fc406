"""WARC 1.1 files of what the crawl fetched, written through warcio.

Each fetched URL gives a ``request`` and a ``response`` record pointing at each other with
``WARC-Concurrent-To``.  Gemini follows the convention of mozz-archiver and Kennedy: Content-Type
``application/gemini; msgtype=request|response``, the request block is the URL + CRLF and the
response block the header line + body.  Gopher is ours, in the same shape: ``application/gopher;
msgtype=request|response``, the request block is the selector (TAB search) + CRLF and the
response block the raw bytes the server sent.  A ``metadata`` record (``write_metadata``) says
more about a capture, for example the certificate a Gemini server presented (PEM), and refers
to the response record that ``write`` returned.  A revisiting crawl that finds a page unchanged
writes a ``revisit`` record (``write_revisit``, WARC 1.1 identical-payload-digest) in place of a
second response.

Every record is its own gzip member, and each pair is flushed before ``write`` returns (and
fsynced too with ``fsync=True``): a process killed mid-write leaves every earlier record
readable (only the torn last member is lost).  A file is always fsynced when it is closed, on
``close()`` or when it reaches ``max_size``, so a crawl that ends survives a power cut too.
A writer always starts a new file, ``<prefix>-<UTC timestamp>-<serial>.warc.gz``, so a resumed
crawl never appends to a file that may end in a torn record; it moves to the next serial once a
file reaches ``max_size`` (``manners crawl --warc-size``), or when told to (``rotate``, on SIGHUP).
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

from ..version import __version__

WARC_VERSION = "WARC/1.1"
REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
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
        self.rolled = 0  # files closed because they reached max_size (the crawler rolls its logs with them)
        directory.mkdir(parents=True, exist_ok=True)

    def write(
        self,
        url: str,
        request: bytes,
        response: bytes,
        scheme: Literal["gemini", "gopher"],
        fetched_at: float,
        ip: str | None = None,
        record_id: str | None = None,
    ) -> str:
        """Write the request and response records of ``url`` and make them durable.

        Returns the response record's WARC-Record-ID, for records that refer to it
        (:meth:`write_metadata`, :meth:`write_revisit`): ``record_id`` when given (a
        revisiting crawl's :func:`capture_id`), else a new random one."""
        return self._pair(
            url, request, scheme, fetched_at, ip, "response", CONTENT_TYPES[scheme][1], response, [],
            answer_id=record_id,
        )  # fmt: skip

    def write_revisit(
        self,
        url: str,
        request: bytes,
        response: bytes,
        scheme: Literal["gemini", "gopher"],
        fetched_at: float,
        refers_to_url: str,
        refers_to_at: float,
        ip: str | None = None,
        refers_to: str | None = None,
    ) -> str:
        """Write the request and a ``revisit`` record of ``url`` fetched again with the same payload.

        A revisiting crawl asks for a page again and again; most answers are what it already
        holds, and a second full copy of each would fill the archive with duplicates.  The record
        says, in WARC 1.1's identical-payload-digest profile (:data:`REVISIT_PROFILE`, not the 1.0
        URI warcio's helper writes), that ``response`` has the payload of the capture of
        ``refers_to_url`` at ``refers_to_at`` (WARC-Refers-To-Target-URI and -Date; ``refers_to``,
        its WARC-Record-ID where known, as WARC-Refers-To).  Its block is empty: in these records
        the whole response is the payload (see the module's docstring), and its WARC-Payload-Digest
        is the one that capture's response record carries.  The request record is written as for
        :meth:`write`.  Returns the revisit record's WARC-Record-ID.
        """
        links = [("WARC-Profile", REVISIT_PROFILE), ("WARC-Refers-To-Target-URI", refers_to_url),
                 ("WARC-Refers-To-Date", _iso_date(refers_to_at))]  # fmt: skip
        if refers_to is not None:
            links.append(("WARC-Refers-To", refers_to))
        return self._pair(url, request, scheme, fetched_at, ip, "revisit", None, b"", links,
                          digest(response))  # fmt: skip

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

    def rotate(self) -> None:
        """Close the current file (fsynced), if any: the next record starts a new one (SIGHUP)."""
        self._finish()

    def _pair(
        self,
        url: str,
        request: bytes,
        scheme: Literal["gemini", "gopher"],
        fetched_at: float,
        ip: str | None,
        kind: Literal["response", "revisit"],
        content_type: str | None,
        block: bytes,
        links: list[tuple[str, str]],
        payload: str | None = None,
        answer_id: str | None = None,
    ) -> str:
        """A request record and the ``kind`` record of its answer, each WARC-Concurrent-To the
        other, made durable; returns the answer's WARC-Record-ID (``answer_id``, else a new one)."""
        out, writer = self._open()
        request_id, answer_id = _record_id(), answer_id or _record_id()
        _write_record(writer, "request", request_id, url, fetched_at, ip, [("WARC-Concurrent-To", answer_id)],
                      CONTENT_TYPES[scheme][0], request)  # fmt: skip
        links = [("WARC-Concurrent-To", request_id), *links]
        _write_record(writer, kind, answer_id, url, fetched_at, ip, links, content_type, block, payload)
        self._done(out)
        return answer_id

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
            self.rolled += 1

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


def digest(data: bytes) -> str:
    """The digest of ``data`` as these records carry it (WARC-Block-Digest, WARC-Payload-Digest).

    A response's is what a revisiting crawl compares to tell an unchanged page (the same
    digest, so a revisit record can stand for it) from a changed one."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def capture_id(url: str, fetched_at: float, payload: str) -> str:
    """The WARC-Record-ID of the response record of ``url`` fetched at ``fetched_at`` with the
    payload digest ``payload`` (:func:`digest`), derived from the three (a name-based UUID).

    A revisiting crawl keeps a capture's URL, time and digest in its frontier, not the id of the
    record that holds it: so the id is made from them, and any later run, or another worker of a
    fleet, finds it again for the WARC-Refers-To of a revisit record without reading the WARCs.
    No two captures share all three, so the id is as unique as a random one."""
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{url} {fetched_at!r} {payload}')}>"


def _iso_date(at: float) -> str:
    return str(
        datetime_to_iso_date(datetime.fromtimestamp(at, timezone.utc).replace(tzinfo=None), use_micros=True)
    )


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
    content_type: str | None,
    block: bytes,
    payload: str | None = None,
) -> None:
    """One record, every header written here, digests included, so warcio has nothing left to
    compute or find.  The payload digest is the block's unless ``payload`` gives it (a revisit
    record's payload is not in its block); no Content-Type without ``content_type``."""
    block_digest = digest(block)
    headers = [("WARC-Type", kind), ("WARC-Record-ID", record_id), ("WARC-Date", _iso_date(fetched_at)),
               ("WARC-Target-URI", url), *links]  # fmt: skip
    if ip:
        headers.append(("WARC-IP-Address", ip))
    headers += [("WARC-Block-Digest", block_digest), ("WARC-Payload-Digest", payload or block_digest)]
    if content_type is not None:
        headers.append(("Content-Type", content_type))
    headers.append(("Content-Length", str(len(block))))
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
