"""What a server's X.509 certificate says, read from its DER bytes with the standard library only.

Gemini servers present self-signed certificates (trust on first use), so the TLS context does not
verify them and ``getpeercert()`` returns ``{}``: only ``getpeercert(binary_form=True)`` is left.
:func:`read_certificate` reads the few fields a crawl records from those bytes: the validity
period, the subject's CN(s), the subjectAltName dNSName and iPAddress entries, and the issuer's
CN(s) with whether the certificate is self-signed (``manners site`` reports it).

The DER reader is small and iterative (no recursion), checks every length against the bytes it
was given and raises nothing but ValueError on garbage; :func:`read_certificate` turns that into
a :class:`Certificate` that has its fingerprint and PEM but no times or names, and says why in
``problem``.  Signatures are not checked: nothing here is trusted, it is only recorded.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import ssl
import string
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

from ..vocabulary import timestamp

__all__ = ["Certificate", "read_certificate"]

_SEQUENCE, _SET, _OID, _OCTETS = 0x30, 0x31, 0x06, 0x04
_UTC_TIME, _GENERALIZED_TIME = 0x17, 0x18
_CN = bytes.fromhex("550403")  # 2.5.4.3
_SAN = bytes.fromhex("551d11")  # 2.5.29.17
_SKI = bytes.fromhex("551d0e")  # 2.5.29.14 subjectKeyIdentifier
_AKI = bytes.fromhex("551d23")  # 2.5.29.35 authorityKeyIdentifier
_DNS_NAME, _IP_ADDRESS = 0x82, 0x87  # GeneralName [2] IA5String, [7] OCTET STRING (implicit)
_STRINGS = {  # DirectoryString and friends: tag -> codec
    0x0C: "utf-8", 0x12: "ascii", 0x13: "ascii", 0x14: "latin-1", 0x16: "ascii",
    0x1A: "ascii", 0x1C: "utf-32-be", 0x1E: "utf-16-be",
}  # fmt: skip
_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


@dataclass(frozen=True)
class Certificate:
    """A certificate as read by :func:`read_certificate`."""

    sha256: str  # hex of SHA-256 over the DER (the TOFU fingerprint)
    not_before: float | None  # epoch seconds
    not_after: float | None  # epoch seconds
    names: tuple[str, ...]  # subjectAltName dNSName and iPAddress entries (IPs as text), else the CN(s)
    pem: str  # ssl.DER_cert_to_PEM_cert(der)
    addresses: tuple[str, ...] = ()  # the iPAddress entries among ``names``
    alt_names: bool = False  # ``names`` come from a subjectAltName with entries (the CN is not used)
    problem: str | None = None  # why the DER could not be read (then no times and no names)
    issuer: tuple[str, ...] = ()  # the issuer's CN(s)
    # Issued by its own subject: the issuer name is the subject name, byte for byte, and the
    # authority key identifier, when both it and the subject key identifier are there, is the
    # subject's.  The signature is not checked (nothing here is trusted), so a CA that issued a
    # certificate under its own name and key would pass for it: no CA does.
    self_signed: bool = False

    def names_host(self, host: str) -> bool:
        """Does the certificate name ``host`` (RFC 6125)?

        Case-insensitive for ASCII; A-labels compared as given (no IDNA conversion); ``*`` only as
        the whole leftmost label of a name with at least two more labels, matching exactly one
        label.  An IP literal (IPv6 with or without ``[]``) is compared as an address with the
        iPAddress entries, or with the CN(s) when there is no subjectAltName at all.
        """
        address = _address(host)
        if address is not None:
            pool = self.addresses if self.alt_names else self.names
            return any(_address(name) == address for name in pool)
        host = host.translate(_LOWER).removesuffix(".")
        dns = self.names[: len(self.names) - len(self.addresses)]  # the addresses come last
        return bool(host) and any(_dns_match(name, host) for name in dns)

    def expired(self, now: float) -> bool:
        """Past its notAfter at ``now`` (unknown notAfter: not expired)."""
        return self.not_after is not None and now > self.not_after

    def record(self, host: str, now: float, tofu: str) -> dict[str, object]:
        """What a page record says about the certificate ``host`` presented at ``now``; ``tofu`` is
        the caller's word on trust on first use.  ``problem`` is there only when there is one."""
        out: dict[str, object] = {
            "sha256": self.sha256,
            "not_after": _iso(self.not_after),
            "expired": self.expired(now),
            "names_host": self.names_host(host),
            "tofu": tofu,
        }
        if self.problem is not None:
            out["problem"] = self.problem
        return out


def read_certificate(der: bytes) -> Certificate:
    """Read ``der``; never raises: what cannot be read is said in ``problem``.

    A crawler meets the same certificate on every request to a capsule: the last ``READ_KEPT``
    read are remembered (a Certificate is immutable), so each is read once, not per page."""
    return _read_certificate(bytes(der))


READ_KEPT = 1024  # certificates remembered by read_certificate (a few KiB each)


@functools.lru_cache(maxsize=READ_KEPT)
def _read_certificate(der: bytes) -> Certificate:
    sha256 = hashlib.sha256(der).hexdigest()
    pem = ssl.DER_cert_to_PEM_cert(der)
    try:
        read = _read(der)
    except ValueError as e:
        return Certificate(sha256, None, None, (), pem, problem=str(e) or type(e).__name__)
    return Certificate(sha256, read.not_before, read.not_after, read.names, pem, read.addresses,
                       read.alt_names, issuer=read.issuer, self_signed=read.self_signed)  # fmt: skip


# ------------------------------------------------------------------------------------- DER reader


def _tlv(der: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """The tag of the element at ``pos`` and where its contents start and stop (within ``end``)."""
    if end - pos < 2:
        raise ValueError(f"truncated element at byte {pos}")
    tag, first = der[pos], der[pos + 1]
    if tag & 0x1F == 0x1F:
        raise ValueError(f"multi-byte tag at byte {pos}")
    pos += 2
    length = first
    if first & 0x80:
        size = first & 0x7F
        if not 1 <= size <= 4:  # 0: BER's indefinite length, never in DER
            raise ValueError(f"length of {size} bytes at byte {pos - 1}")
        if end - pos < size:
            raise ValueError(f"truncated length at byte {pos}")
        length = int.from_bytes(der[pos : pos + size], "big")
        pos += size
    if length > end - pos:
        raise ValueError(f"length {length} past the end at byte {pos}")
    return tag, pos, pos + length


def _items(der: bytes, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    while start < end:  # each element takes at least two bytes
        tag, first, start = _tlv(der, start, end)
        yield tag, first, start


def _expect(element: tuple[int, int, int], tag: int, what: str) -> tuple[int, int]:
    if element[0] != tag:
        raise ValueError(f"{what}: tag 0x{element[0]:02x}, not 0x{tag:02x}")
    return element[1], element[2]


@dataclass(frozen=True)
class _Read:
    not_before: float
    not_after: float
    names: tuple[str, ...]
    addresses: tuple[str, ...]
    alt_names: bool
    issuer: tuple[str, ...]
    self_signed: bool


def _read(der: bytes) -> _Read:
    start, end = _expect(_tlv(der, 0, len(der)), _SEQUENCE, "Certificate")
    if end != len(der):
        raise ValueError(f"{len(der) - end} bytes after the certificate")
    tbs = list(_items(der, *_expect(_tlv(der, start, end), _SEQUENCE, "TBSCertificate")))
    if tbs and tbs[0][0] == 0xA0:  # [0] EXPLICIT version
        tbs = tbs[1:]
    if len(tbs) < 6:
        raise ValueError(f"TBSCertificate of {len(tbs)} fields")
    fields = ("serialNumber", "signature", "issuer", "validity", "subject", "subjectPublicKeyInfo")
    for element, tag, what in zip(tbs, (0x02, *[_SEQUENCE] * 5), fields, strict=False):
        _expect(element, tag, what)
    validity = list(_items(der, tbs[3][1], tbs[3][2]))
    if len(validity) != 2:
        raise ValueError(f"validity of {len(validity)} times")
    not_before, not_after = (_time(der, *t) for t in validity)
    common = _common_names(der, tbs[4][1], tbs[4][2])
    try:  # read for the record only: an issuer name not read leaves the rest as it was
        issuer = _common_names(der, tbs[2][1], tbs[2][2])
    except ValueError:
        issuer = ()
    same_name = der[tbs[2][1] : tbs[2][2]] == der[tbs[4][1] : tbs[4][2]]
    dns: list[str] = []
    addresses: list[str] = []
    alt_names = False
    key_ids: dict[bytes, bytes | None] = {}
    for tag, first, stop in tbs[6:]:
        if tag in (0x81, 0x82, 0xA1, 0xA2):  # issuerUniqueID, subjectUniqueID
            continue
        if tag != 0xA3:
            raise ValueError(f"TBSCertificate field of tag 0x{tag:02x}")
        for extension in _items(der, *_expect(_tlv(der, first, stop), _SEQUENCE, "extensions")):
            parts = list(_items(der, *_expect(extension, _SEQUENCE, "extension")))
            if len(parts) not in (2, 3):
                raise ValueError(f"extension of {len(parts)} fields")
            if len(parts) == 3:
                _expect(parts[1], 0x01, "critical")
            oid = der[slice(*_expect(parts[0], _OID, "extnID"))]
            value = _expect(parts[-1], _OCTETS, "extnValue")
            if oid == _SAN:
                san = _expect(_tlv(der, *value), _SEQUENCE, "subjectAltName")
                if san[1] != value[1]:
                    raise ValueError("bytes after subjectAltName")
                for kind, s, e in _items(der, *san):
                    alt_names = True
                    if kind == _DNS_NAME:
                        dns.append(der[s:e].decode("ascii", "replace"))
                    elif kind == _IP_ADDRESS:
                        if e - s not in (4, 16):
                            raise ValueError(f"iPAddress of {e - s} bytes")
                        addresses.append(str(ipaddress.ip_address(der[s:e])))
            elif oid in (_SKI, _AKI):
                key_ids[oid] = _key_id(der, oid, *value)
    ski, aki = key_ids.get(_SKI), key_ids.get(_AKI)
    self_signed = same_name and (ski is None or aki is None or ski == aki)
    if alt_names:
        names, found = (*dns, *addresses), tuple(addresses)
    else:
        names, found = common, ()
    return _Read(not_before, not_after, names, found, alt_names, issuer, self_signed)


def _key_id(der: bytes, oid: bytes, start: int, end: int) -> bytes | None:
    """The key identifier a subjectKeyIdentifier (an OCTET STRING) or an authorityKeyIdentifier
    (a SEQUENCE whose [0] is the keyIdentifier) holds; None when it holds none, or is not read:
    these only refine ``self_signed``, and a certificate is never refused for them."""
    try:
        tag, first, stop = _tlv(der, start, end)
        if oid == _SKI:
            return der[first:stop] if tag == _OCTETS else None
        if tag != _SEQUENCE:
            return None
        for kind, s, e in _items(der, first, stop):
            if kind == 0x80:  # [0] IMPLICIT KeyIdentifier
                return der[s:e]
    except ValueError:
        pass
    return None


def _common_names(der: bytes, start: int, end: int) -> tuple[str, ...]:
    names = []
    for rdn in _items(der, start, end):
        for attribute in _items(der, *_expect(rdn, _SET, "RelativeDistinguishedName")):
            parts = list(_items(der, *_expect(attribute, _SEQUENCE, "AttributeTypeAndValue")))
            if len(parts) != 2:
                raise ValueError(f"attribute of {len(parts)} fields")
            if der[slice(*_expect(parts[0], _OID, "attribute type"))] == _CN:
                tag, s, e = parts[1]
                if tag not in _STRINGS:
                    raise ValueError(f"CN of tag 0x{tag:02x}")
                names.append(der[s:e].decode(_STRINGS[tag], "replace"))
    return tuple(names)


def _time(der: bytes, tag: int, start: int, end: int) -> float:
    """UTCTime (YY >= 50: 19YY, else 20YY; RFC 5280) or GeneralizedTime, in UTC ("Z"), as epoch
    seconds.  Tolerated beyond DER: no seconds, and GeneralizedTime's fraction of a second."""
    text = der[start:end].decode("ascii")  # UnicodeDecodeError is a ValueError
    width = {_UTC_TIME: 2, _GENERALIZED_TIME: 4}.get(tag)
    if width is None:
        raise ValueError(f"time of tag 0x{tag:02x}")
    body, zulu, rest = text.partition("Z")
    digits, _, fraction = body.partition(".") if tag == _GENERALIZED_TIME else (body, "", "")
    if not zulu or rest or not digits.isdigit() or len(digits) not in (width + 8, width + 10):
        raise ValueError(f"time {text!r}")
    if fraction and not fraction.isdigit():
        raise ValueError(f"time {text!r}")
    year = int(digits[:width])
    if tag == _UTC_TIME:
        year += 1900 if year >= 50 else 2000
    month, day, hour, minute, second = (int(digits[k : k + 2] or 0) for k in range(width, width + 10, 2))
    when = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    return when.timestamp() + (float("0." + fraction) if fraction else 0.0)


# ------------------------------------------------------------------------------------------ names


def _iso(when: float | None) -> str | None:
    return timestamp(when) if when is not None else None


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ipaddress.ip_address(text.partition("%")[0])  # a zone is not part of the address
    except ValueError:
        return None


def _dns_match(name: str, host: str) -> bool:
    """``name`` (from the certificate) against ``host`` (folded, without a trailing dot)."""
    name = name.translate(_LOWER).removesuffix(".")
    if "*" not in name:
        return name == host
    star, _, parent = name.partition(".")
    if star != "*" or "*" in parent or "." not in parent:
        return False
    label, _, rest = host.partition(".")
    return bool(label) and rest == parent
