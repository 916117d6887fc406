"""WARC metadata records (WarcWriter.write_metadata), read back with warcio."""

from __future__ import annotations

import base64
import hashlib
import ssl
import zlib
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from manners.crawl.warc import WarcWriter

# Some bytes standing in for a certificate: the writer does not read them.
DER = bytes(range(256)) * 3
PEM = ssl.DER_cert_to_PEM_cert(DER).encode("ascii")


def records(path: Path) -> list[tuple[str, Any, bytes]]:
    with open(path, "rb") as stream:
        return [(r.rec_type, r.rec_headers, r.content_stream().read())
                for r in ArchiveIterator(stream, check_digests="raise")]  # fmt: skip


def gzip_members(path: Path) -> int:
    data, count = path.read_bytes(), 0
    while data:
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        member.decompress(data)
        assert member.eof
        data, count = member.unused_data, count + 1
    return count


def test_metadata_records_refer_to_the_response(tmp_path: Path) -> None:
    at = 1_700_000_000.5
    url = "gemini://localhost/"
    with WarcWriter(tmp_path) as writer:
        response_id = writer.write(
            url, url.encode() + b"\r\n", b"20 text/gemini\r\n# Hi\n", "gemini", at, "::1"
        )
        pem_id = writer.write_metadata(url, PEM, "application/x-pem-file", at, "::1", refers_to=response_id)
        fields = {"certificate-sha256": hashlib.sha256(DER).hexdigest(), "tofu": "first"}
        fields_id = writer.write_metadata(url, fields, "application/warc-fields", at + 1)
    (path,) = writer.paths
    read = records(path)
    assert [kind for kind, _, _ in read] == ["warcinfo", "request", "response", "metadata", "metadata"]
    assert gzip_members(path) == len(read)  # one gzip member per record
    response, pem, info = read[2][1], read[3], read[4]
    assert response.get_header("WARC-Record-ID") == response_id
    assert len({response_id, pem_id, fields_id}) == 3

    headers, block = pem[1], pem[2]
    assert block == PEM and ssl.PEM_cert_to_DER_cert(block.decode()) == DER
    assert headers.protocol == "WARC/1.1"
    assert headers.get_header("WARC-Record-ID") == pem_id
    assert headers.get_header("WARC-Target-URI") == url
    assert headers.get_header("WARC-Date") == "2023-11-14T22:13:20.500000Z"
    assert headers.get_header("WARC-IP-Address") == "::1"
    assert headers.get_header("Content-Type") == "application/x-pem-file"
    assert headers.get_header("Content-Length") == str(len(PEM))
    assert headers.get_header("WARC-Refers-To") == response_id
    assert headers.get_header("WARC-Concurrent-To") == response_id
    digest = "sha1:" + base64.b32encode(hashlib.sha1(PEM).digest()).decode()
    assert headers.get_header("WARC-Block-Digest") == digest

    headers, block = info[1], info[2]
    assert block == f"certificate-sha256: {fields['certificate-sha256']}\r\ntofu: first\r\n".encode()
    assert headers.get_header("Content-Type") == "application/warc-fields"
    assert headers.get_header("WARC-Date") == "2023-11-14T22:13:21.500000Z"
    for absent in ("WARC-IP-Address", "WARC-Refers-To", "WARC-Concurrent-To"):
        assert headers.get_header(absent) is None


@pytest.mark.parametrize("fields", [{"a": "b\r\nWARC-Type: x"}, {"a\n": "b"}, {"a:b": "c"}])
def test_fields_that_would_break_the_block(tmp_path: Path, fields: dict[str, str]) -> None:
    with WarcWriter(tmp_path) as writer, pytest.raises(ValueError):
        writer.write_metadata("gemini://localhost/", fields, "application/warc-fields", 0.0)


def test_metadata_records_rotate_files_too(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, max_size=1000, fsync=False) as writer:
        for n in range(3):
            writer.write_metadata(f"gemini://localhost/{n}", PEM, "application/x-pem-file", 0.0)
    assert len(writer.paths) == 3
    for path in writer.paths:
        assert [kind for kind, _, _ in records(path)] == ["warcinfo", "metadata"]
