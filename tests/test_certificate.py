"""Reading X.509 certificates from DER (manners.fetch.certificate).

Real certificates are made with the ``openssl`` command line at test time and what we read is
compared with what ``openssl x509`` prints; one is also taken from a real TLS handshake with
jetforce.  Hand-built DER covers the corners openssl will not make (string types, two-digit
years, malformed elements), and hypothesis feeds random and mutated bytes.
"""

from __future__ import annotations

import calendar
import hashlib
import ipaddress
import socket
import ssl
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from manners.fetch.certificate import Certificate, read_certificate
from manners.fetch.gemini import tls_context
from servers import HOST, jetforce

NOW = time.time()

# ------------------------------------------------------------------------------- real certificates


def openssl(*args: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    return done.stdout + done.stderr  # "No extensions in certificate" goes to stderr


EC_CURVE = "ec_paramgen_curve:prime256v1"


def self_signed(directory: Path, cn: str, san: str | None, key: str = "ec") -> Path:
    """``openssl req -x509``: a certificate valid for two days; returns its PEM file."""
    directory.mkdir()
    keyopt = ["-newkey", "rsa:2048"] if key == "rsa" else ["-newkey", "ec", "-pkeyopt", EC_CURVE]
    extra = ["-addext", f"subjectAltName={san}"] if san else []
    openssl("req", "-x509", *keyopt, "-nodes", "-keyout", directory / "key.pem", "-out",
            directory / "cert.pem", "-days", "2", "-subj", f"/CN={cn}", *extra)  # fmt: skip
    return directory / "cert.pem"


CA_CONFIG = """\
[ca]
default_ca = local
[local]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = anything
copy_extensions = copy
unique_subject = no
[anything]
commonName = supplied
"""


def dated(directory: Path, cn: str, san: str | None, start: str, end: str) -> Path:
    """``openssl ca -selfsign`` with a fixed validity period (``-startdate``/``-enddate``)."""
    directory.mkdir()
    (directory / "ca.cnf").write_text(CA_CONFIG)
    (directory / "index.txt").write_text("")
    extra = ["-addext", f"subjectAltName={san}"] if san else []
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", EC_CURVE, "-nodes",
            "-keyout", "key.pem", "-out", "req.csr", "-subj", f"/CN={cn}", *extra, cwd=directory)  # fmt: skip
    openssl("ca", "-batch", "-config", "ca.cnf", "-selfsign", "-keyfile", "key.pem", "-in", "req.csr",
            "-out", "cert.pem", "-startdate", start, "-enddate", end, "-create_serial", "-notext",
            cwd=directory)  # fmt: skip
    return directory / "cert.pem"


@dataclass(frozen=True)
class Made:
    path: Path
    der: bytes
    openssl: dict[str, object]  # what openssl x509 says


def openssl_says(path: Path) -> dict[str, object]:
    out = openssl("x509", "-in", path, "-noout", "-startdate", "-enddate", "-fingerprint", "-sha256",
                  "-subject", "-nameopt", "RFC2253", "-ext", "subjectAltName")  # fmt: skip
    lines = out.splitlines()
    said: dict[str, object] = {"dns": [], "ips": [], "san": False}

    def when(text: str) -> float:
        return calendar.timegm(time.strptime(" ".join(text.split()), "%b %d %H:%M:%S %Y GMT"))

    for k, line in enumerate(lines):
        name, _, value = line.partition("=")
        if name == "notBefore":
            said["not_before"] = when(value)
        elif name == "notAfter":
            said["not_after"] = when(value)
        elif name == "sha256 Fingerprint":
            said["sha256"] = value.replace(":", "").lower()
        elif name == "subject":
            said["cn"] = [part[3:] for part in value.split(",") if part.startswith("CN=")]
        elif line.startswith("X509v3 Subject Alternative Name"):
            said["san"] = True
            for entry in lines[k + 1].strip().split(", "):
                kind, _, text = entry.partition(":")
                if kind == "DNS":
                    said["dns"].append(text)  # type: ignore[attr-defined]
                else:
                    assert kind == "IP Address", entry
                    said["ips"].append(str(ipaddress.ip_address(text)))  # type: ignore[attr-defined]
    return said


SPECS = {  # name -> (maker, cn, subjectAltName)
    "localhost": ("rsa", "localhost", "DNS:localhost,IP:127.0.0.1,IP:::1"),
    "wrong-name": ("ec", "other.example", "DNS:other.example"),
    "wildcard": ("ec", "*.example.org", "DNS:*.example.org"),
    "cn-only": ("ec", "cn-only.example", None),
    "cn-ip": ("ec", "127.0.0.1", None),
    "san-over-cn": ("ec", "127.0.0.1", "DNS:san.example"),
    "idna": ("ec", "xn--bcher-kva.example", "DNS:xn--bcher-kva.example"),
    # UTCTime 70 -> 1970, notAfter long past
    "expired": ("ca 19700101000000Z 20010203040506Z", "expired.example", "DNS:expired.example"),
    # notAfter past 2049: GeneralizedTime; no extensions at all
    "far": ("ca 20000101000000Z 20600101000000Z", "far.example", None),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Made]:
    root = tmp_path_factory.mktemp("certs")
    out = {}
    for name, (maker, cn, san) in SPECS.items():
        if maker.startswith("ca "):
            _, start, end = maker.split()
            path = dated(root / name, cn, san, start, end)
        else:
            path = self_signed(root / name, cn, san, maker)
        out[name] = Made(path, ssl.PEM_cert_to_DER_cert(path.read_text()), openssl_says(path))
    return out


@pytest.mark.parametrize("name", list(SPECS))
def test_read_as_openssl_reads_it(made: dict[str, Made], name: str) -> None:
    m = made[name]
    cert = read_certificate(m.der)
    said = m.openssl
    assert cert.problem is None
    assert cert.sha256 == said["sha256"] == hashlib.sha256(m.der).hexdigest()
    assert (cert.not_before, cert.not_after) == (said["not_before"], said["not_after"])
    assert cert.alt_names is said["san"]
    if said["san"]:
        assert cert.names == (*said["dns"], *said["ips"])  # type: ignore[misc]
        assert cert.addresses == tuple(said["ips"])  # type: ignore[arg-type]
    else:
        assert cert.names == tuple(said["cn"]) and cert.addresses == ()  # type: ignore[arg-type]
    assert ssl.PEM_cert_to_DER_cert(cert.pem) == m.der
    assert " ".join(cert.pem.split()) == " ".join(m.path.read_text().split())


MATCHES = [
    ("localhost", ["localhost", "LocalHost", "localhost.", "127.0.0.1", "::1", "[::1]", "0:0::1"],
     ["127.0.0.2", "[127.0.0.1]x", "local", "example.org", "", "[::2]", "localhost.localdomain"]),
    ("wrong-name", ["other.example", "OTHER.example"], ["localhost", "127.0.0.1"]),
    ("wildcard", ["a.example.org", "A.Example.ORG", "xn--bcher-kva.example.org"],
     ["example.org", "a.b.example.org", ".example.org", "*.example.org.com", "aexample.org"]),
    ("cn-only", ["cn-only.example", "CN-ONLY.EXAMPLE."], ["localhost"]),
    ("cn-ip", ["127.0.0.1"], ["127.0.0.2", "localhost"]),
    ("san-over-cn", ["san.example"], ["127.0.0.1"]),  # the CN is not used when there is a SAN
    ("idna", ["xn--bcher-kva.example", "XN--BCHER-KVA.example"], ["bücher.example", "BÜCHER.example"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "yes", "no"), MATCHES)
def test_names_host(made: dict[str, Made], name: str, yes: list[str], no: list[str]) -> None:
    cert = read_certificate(made[name].der)
    assert [h for h in yes if not cert.names_host(h)] == []
    assert [h for h in no if cert.names_host(h)] == []


def test_expired_and_far_and_the_record(made: dict[str, Made]) -> None:
    expired = read_certificate(made["expired"].der)
    assert expired.not_before == 0.0  # UTCTime "70..." is 1970
    assert expired.not_after == calendar.timegm((2001, 2, 3, 4, 5, 6))
    assert expired.expired(NOW) and not expired.expired(expired.not_after)
    assert expired.record("expired.example", NOW, "first") == {
        "sha256": hashlib.sha256(made["expired"].der).hexdigest(),
        "not_after": "2001-02-03T04:05:06.000Z",
        "expired": True,
        "names_host": True,
        "tofu": "first",
    }
    far = read_certificate(made["far"].der)
    assert b"\x18\x0f20600101000000Z" in made["far"].der  # it is a GeneralizedTime
    assert far.not_before == calendar.timegm((2000, 1, 1, 0, 0, 0))
    assert far.not_after == calendar.timegm((2060, 1, 1, 0, 0, 0))
    assert far.record("localhost", NOW, "match") == {
        "sha256": far.sha256,
        "not_after": "2060-01-01T00:00:00.000Z",
        "expired": False,
        "names_host": False,
        "tofu": "match",
    }


def test_from_a_real_handshake_with_jetforce(made: dict[str, Made], tmp_path: Path) -> None:
    m = made["localhost"]
    (tmp_path / "index.gmi").write_text("# hello\n")
    with jetforce(tmp_path, tls=(m.path, m.path.parent / "key.pem")) as port:
        raw = socket.create_connection((HOST, port), timeout=10)
        with tls_context().wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.getpeercert() == {}  # CERT_NONE: nothing but the bytes
            der = tls.getpeercert(binary_form=True)
            tls.sendall(b"gemini://localhost/\r\n")
            answer = b""
            while chunk := tls.recv(4096):
                answer += chunk
    assert answer.startswith(b"20 text/gemini") and b"# hello" in answer
    assert der == m.der
    cert = read_certificate(der)
    assert cert.sha256 == m.openssl["sha256"] and cert.not_after == m.openssl["not_after"]
    assert cert.names_host("localhost") and cert.names_host("127.0.0.1") and not cert.expired(NOW)


# ---------------------------------------------------------------------------------- hand-built DER


def der(tag: int, *parts: bytes) -> bytes:
    body = b"".join(parts)
    n = len(body)
    size = (n.bit_length() + 7) // 8
    return bytes([tag]) + (bytes([n]) if n < 128 else bytes([0x80 | size]) + n.to_bytes(size, "big")) + body


ECDSA_SHA256 = der(0x30, der(0x06, bytes.fromhex("2a8648ce3d040302")))


def cn(tag: int, raw: bytes) -> bytes:
    return der(0x30, der(0x31, der(0x30, der(0x06, b"\x55\x04\x03"), der(tag, raw))))


def san(*names: bytes, critical: bool = False) -> bytes:
    flag = der(0x01, b"\xff") if critical else b""
    return der(0x30, der(0x06, b"\x55\x1d\x11"), flag, der(0x04, der(0x30, *names)))


def synthetic(
    times: Sequence[bytes] = (der(0x17, b"250101000000Z"), der(0x17, b"260101000000Z")),
    subject: bytes = cn(0x0C, b"synthetic.example"),
    extensions: Sequence[bytes] = (),
    version: bool = True,
    more: bytes = b"",
) -> bytes:
    """An (unsigned) certificate: its fields as given, the rest plausible."""
    spki = der(0x30, der(0x30, der(0x06, bytes.fromhex("2a8648ce3d0201"))), der(0x03, b"\x00\x04"))
    tbs = der(0x30, der(0xA0, der(0x02, b"\x02")) if version else b"", der(0x02, b"\x01"), ECDSA_SHA256,
              cn(0x0C, b"issuer"), der(0x30, *times), subject, spki, more,
              der(0xA3, der(0x30, *extensions)) if extensions else b"")  # fmt: skip
    return der(0x30, tbs, ECDSA_SHA256, der(0x03, b"\x00"))


def utc(text: str) -> bytes:
    return der(0x17, text.encode())


def generalized(text: str) -> bytes:
    return der(0x18, text.encode())


@pytest.mark.parametrize(
    ("element", "expected"),
    [
        (utc("491231235959Z"), calendar.timegm((2049, 12, 31, 23, 59, 59))),  # YY < 50: 20YY
        (utc("500101000000Z"), calendar.timegm((1950, 1, 1, 0, 0, 0))),  # YY >= 50: 19YY
        (utc("2501020304Z"), calendar.timegm((2025, 1, 2, 3, 4, 0))),  # no seconds (BER)
        (generalized("20500101000000Z"), calendar.timegm((2050, 1, 1, 0, 0, 0))),
        (generalized("99991231235959Z"), calendar.timegm((9999, 12, 31, 23, 59, 59))),  # RFC 5280 "no end"
        (generalized("20500101000000.25Z"), calendar.timegm((2050, 1, 1, 0, 0, 0)) + 0.25),
    ],
)
def test_times(element: bytes, expected: float) -> None:
    cert = read_certificate(synthetic((element, element)))
    assert cert.problem is None and cert.not_before == cert.not_after == expected


@pytest.mark.parametrize(
    "element",
    [utc("251301000000Z"), utc("250101000000"), utc("250101000000+0100"), utc("25010100000Z"),
     utc("2501010000 0Z"), utc("250230000000Z"), utc("250101000060Z"), generalized("00000101000000Z"),
     generalized("2050010100000.Z"), generalized("20500101000000.xZ"), utc("250101000000ZZ"),
     utc("\uff1250101000000Z"), der(0x13, b"250101000000Z"), der(0x17, b"\xff\xfe")],
)  # fmt: skip
def test_bad_times(element: bytes) -> None:
    cert = read_certificate(synthetic((utc("250101000000Z"), element)))
    assert cert.problem and cert.not_after is None and cert.names == ()


@pytest.mark.parametrize(
    ("subject", "names"),
    [
        (cn(0x13, b"printable.example"), ("printable.example",)),
        (cn(0x16, b"ia5.example"), ("ia5.example",)),
        (cn(0x14, b"t61-\xe9"), ("t61-é",)),
        (cn(0x1E, "bmp-é".encode("utf-16-be")), ("bmp-é",)),
        (cn(0x1C, "univ-€".encode("utf-32-be")), ("univ-€",)),
        (cn(0x0C, b"bad-\xff"), ("bad-\ufffd",)),
        (der(0x30), ()),  # an empty subject
        (der(0x30, der(0x31, der(0x30, der(0x06, b"\x55\x04\x0a"), der(0x0C, b"Org")))), ()),  # O= only
        (der(0x30, cn(0x0C, b"a")[2:], cn(0x0C, b"b")[2:]), ("a", "b")),  # two RDNs with a CN each
    ],
)
def test_common_names(subject: bytes, names: tuple[str, ...]) -> None:
    cert = read_certificate(synthetic(subject=subject))
    assert cert.problem is None and cert.names == names and not cert.alt_names


def test_an_address_of_five_bytes() -> None:
    cert = read_certificate(synthetic(extensions=[san(der(0x87, b"\x01\x02\x03\x04\x05"))]))
    assert cert.problem == "iPAddress of 5 bytes"


def test_subject_alt_names() -> None:
    dns, ip4, ip6 = der(0x82, b"a.example"), der(0x87, bytes([192, 0, 2, 1])), der(0x87, bytes(15) + b"\x01")
    uri = der(0x86, b"gemini://u.example/")
    unique_id = der(0x81, b"\x00")  # issuerUniqueID
    cert = read_certificate(synthetic(extensions=[san(ip6, dns, uri, ip4, critical=True)], more=unique_id))
    assert cert.problem is None and cert.alt_names
    assert cert.names == ("a.example", "::1", "192.0.2.1") and cert.addresses == ("::1", "192.0.2.1")
    assert cert.names_host("a.example") and cert.names_host("[::1]") and cert.names_host("192.0.2.1")
    assert not cert.names_host("synthetic.example")  # the CN
    # only a URI: there are SANs, so no names and the CN is not used
    only_uri = read_certificate(synthetic(extensions=[san(uri)], version=False))
    assert only_uri.problem is None and only_uri.alt_names and only_uri.names == ()
    assert not only_uri.names_host("synthetic.example")
    # a dNSName that reads like an address is not an address
    fake = read_certificate(synthetic(extensions=[san(der(0x82, b"127.0.0.1"))]))
    assert fake.names == ("127.0.0.1",) and not fake.names_host("127.0.0.1")
    other = der(0x30, der(0x06, b"\x55\x1d\x13"), der(0x04, der(0x30)))  # basicConstraints
    assert read_certificate(synthetic(extensions=[other])).names == ("synthetic.example",)


def test_names_host_rules() -> None:
    def cert(*names: str) -> Certificate:
        return Certificate("", None, None, names, "", alt_names=True)

    assert cert("*.example.org").names_host("x.example.org")
    for pattern in ("*.org", "a*.example.org", "*a.example.org", "*.*.example.org", "x.*.example.org", "*"):
        assert not cert(pattern).names_host("x.example.org"), pattern
        assert not cert(pattern).names_host("x.org"), pattern
    assert not cert("").names_host("") and not cert("a.example").names_host(".")
    assert cert("A.EXAMPLE.").names_host("a.example")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x30",
        b"\x30\x80" + synthetic()[2:],  # indefinite length
        synthetic() + b"\x00",  # trailing bytes
        b"\x30\x85\x00\x00\x00\x00\x01\x00",  # a 5-byte length
        b"\x30\x84\xff\xff\xff\xff",  # a length far past the end
        b"\x1f\x81\x00\x00",  # a multi-byte tag
        b"\x30\x84\x00\x00\xff\xfa" + b"\x30\x84\x00\x00\xff\xf4" * 10922,  # deep, and every length lies
        der(0x30, *[der(0x30)] * 5000),  # wide
        synthetic(subject=cn(0x02, b"\x01")),  # a CN that is an INTEGER
        synthetic(more=der(0x04, b"?")),  # a field the TBSCertificate has not
        synthetic(extensions=[der(0x30, der(0x06, b"\x55\x1d\x11"))]),  # an extension without a value
        synthetic(extensions=[san(der(0x82, b"a"))[:-3] + b"\x30\x05\x82"]),  # a SAN cut short
        b"-----BEGIN CERTIFICATE-----\n",
    ],
)
def test_garbage_is_a_problem_not_an_exception(data: bytes) -> None:
    cert = read_certificate(data)
    assert cert.problem and cert.names == () and cert.not_before is cert.not_after is None
    assert cert.sha256 == hashlib.sha256(data).hexdigest() and ssl.PEM_cert_to_DER_cert(cert.pem) == data
    assert not cert.names_host("localhost") and not cert.expired(NOW)
    assert cert.record("localhost", NOW, "first")["problem"] == cert.problem


# ----------------------------------------------------------------------------------------- fuzzing


def check(data: bytes) -> None:
    cert = read_certificate(data)  # never raises
    assert cert.sha256 == hashlib.sha256(data).hexdigest()
    assert (cert.problem is None) == (cert.not_before is not None) == (cert.not_after is not None)
    cert.names_host("localhost")
    cert.record("127.0.0.1", NOW, "first")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_random_bytes(data: bytes) -> None:
    check(data)
    check(b"\x30\x82" + len(data).to_bytes(2, "big") + data)  # past the first check


BYTES = [0x00, 0x01, 0x7F, 0x80, 0x81, 0x82, 0x84, 0x85, 0xFF, 0x30, 0x17]  # lengths and tags


@st.composite
def mutations(draw: st.DrawFn, original: bytes) -> bytes:
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        kind = draw(st.sampled_from(["set", "flip", "insert", "delete", "cut"]))
        if kind == "set" and data:
            data[at] = draw(st.sampled_from(BYTES))
        elif kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        else:
            del data[at:]
    return bytes(data)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_mutated_certificates(made: dict[str, Made], data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(made)))
    check(data.draw(mutations(made[name].der)))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_synthetic(data: st.DataObject) -> None:
    names = san(der(0x82, b"a.example"), der(0x87, b"\x7f\x00\x00\x01"), critical=True)
    original = synthetic(extensions=[names], more=der(0x82, b"\x00"))
    check(data.draw(mutations(original)))
