"""WARC metadata and revisit records (WarcWriter.write_metadata, .write_revisit), read back with warcio."""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from manners.crawl.warc import REVISIT_PROFILE, WarcWriter, digest

pytestmark = pytest.mark.quick

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


WARCIO = [sys.executable, "-m", "warcio.cli"]
FIELDS = ("warc-type,warc-record-id,warc-target-uri,warc-date,warc-concurrent-to,warc-profile,"
          "warc-refers-to,warc-refers-to-target-uri,warc-refers-to-date,warc-payload-digest,"
          "warc-block-digest,content-type,content-length")  # fmt: skip


def index(paths: list[Path]) -> list[dict[str, str]]:
    """The records of ``paths`` as ``warcio index`` reads them, after ``warcio check`` passes them."""
    checked = subprocess.run([*WARCIO, "check", "-v", *map(str, paths)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "digest pass" in checked.stdout and "fail" not in checked.stdout.lower()
    listed = subprocess.run([*WARCIO, "index", "-f", FIELDS, *map(str, paths)],
                            capture_output=True, text=True, check=True)  # fmt: skip
    return [json.loads(line) for line in listed.stdout.splitlines()]


def test_an_unchanged_page_is_a_revisit_of_its_first_capture(tmp_path: Path) -> None:
    gemini, gopher = "gemini://localhost/log.gmi", "gopher://localhost/0/about.txt"
    page = b"20 text/gemini\r\n# Log\n=> 1.gmi One\n"
    text = b"About this hole.\r\n.\r\n"
    day, at, at_gopher = 86400.0, 1_700_000_000.25, 1_700_000_001.0
    with WarcWriter(tmp_path, max_size=1500, fsync=False) as writer:
        first = writer.write(gemini, gemini.encode() + b"\r\n", page, "gemini", at, "::1")
        first_gopher = writer.write(gopher, b"/about.txt\r\n", text, "gopher", at_gopher, "127.0.0.1")
        revisits = [
            writer.write_revisit(gemini, gemini.encode() + b"\r\n", page, "gemini", at + day,
                                 gemini, at, "::1", refers_to=first),
            writer.write_revisit(gemini, gemini.encode() + b"\r\n", page, "gemini", at + 3 * day,
                                 gemini, at),  # no record id known: URI and date only
            writer.write_revisit(gopher, b"/about.txt\r\n", text, "gopher", at_gopher + day,
                                 gopher, at_gopher, "127.0.0.1", refers_to=first_gopher),
        ]  # fmt: skip
    assert len(writer.paths) > 1  # revisits in later files than their captures, as in a resumed crawl
    read = index(writer.paths)
    by_id = {r["warc-record-id"]: r for r in read}
    kinds = [r["warc-type"] for r in read if r["warc-type"] != "warcinfo"]
    assert kinds == ["request", "response"] * 2 + ["request", "revisit"] * 3
    for revisit_id, response_id, payload in zip(
        revisits, [first, first, first_gopher], [page, page, text], strict=True
    ):
        revisit = by_id[revisit_id]
        assert revisit["warc-type"] == "revisit"
        assert revisit["warc-profile"] == REVISIT_PROFILE
        assert REVISIT_PROFILE == "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
        # it names a response record that exists: the same URI, date and payload digest
        (response,) = [r for r in read if r["warc-type"] == "response"
                       and r["warc-target-uri"] == revisit["warc-refers-to-target-uri"]
                       and r["warc-date"] == revisit["warc-refers-to-date"]]  # fmt: skip
        assert response["warc-record-id"] == response_id
        assert revisit.get("warc-refers-to", response_id) == response_id
        assert revisit["warc-payload-digest"] == response["warc-payload-digest"] == digest(payload)
        assert response["warc-block-digest"] == digest(payload)
        assert revisit["warc-date"] > response["warc-date"]
        # no second copy: the block is empty, and a request record goes with it as with a response
        assert revisit["content-length"] == "0" and "content-type" not in revisit
        assert revisit["warc-block-digest"] == digest(b"")
        request = by_id[revisit["warc-concurrent-to"]]
        assert request["warc-type"] == "request" and request["warc-concurrent-to"] == revisit_id
        assert (
            request["warc-target-uri"] == revisit["warc-target-uri"]
            and request["warc-date"] == revisit["warc-date"]
        )
    assert "warc-refers-to" not in by_id[revisits[1]]
    assert by_id[revisits[0]]["warc-refers-to"] == first


def test_revisit_records_read_back_with_warcio(tmp_path: Path) -> None:
    url = "gemini://localhost/"
    with WarcWriter(tmp_path) as writer:
        writer.write(url, url.encode() + b"\r\n", b"20 text/gemini\r\n# Hi\n", "gemini", 1.5, "::1")
        writer.write_revisit(
            url, url.encode() + b"\r\n", b"20 text/gemini\r\n# Hi\n", "gemini", 2.5, url, 1.5
        )
    (path,) = writer.paths
    read = records(path)
    assert [kind for kind, _, _ in read] == ["warcinfo", "request", "response", "request", "revisit"]
    assert gzip_members(path) == len(read)
    headers, block = read[4][1], read[4][2]
    assert block == b"" and headers.protocol == "WARC/1.1"
    assert headers.get_header("WARC-Refers-To-Date") == read[2][1].get_header("WARC-Date")
