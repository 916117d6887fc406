"""How a Gemini server speaks to robots: pure checks over the answers to ``/robots.txt``.

The audit asks for ``/robots.txt`` and follows redirects as a robot does (to any gemini://
URL, off the server too, at most five, as RFC 9309 §2.3.1.2 lets a crawler stop), and hands
every answer here with the server's certificate.  RFC 9309 applies to any URI scheme ("This
document applies to services that provide resources that clients can access through URIs"), so
its MUSTs bind a Gemini server as they bind a Web server; the Gemini companion's "should" words are warnings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...fetch.certificate import Certificate
from ...fetch.locations import split_authority
from ...fetch.outcome import MAX_REDIRECTS, gemini_redirect
from ...vocabulary import timestamp
from .report import (
    ACCESS_WORDS,
    AUDIT,
    COMPANION,
    REDIRECT_WORDS,
    RFC9309,
    UNAVAILABLE_WORDS,
    UNREACHABLE_WORDS,
    Finding,
    Rule,
    excerpt,
    repr_text,
)

_WHERE = (
    "Gemini server admins may serve a robot policy for their server at the URL with path /robots.txt, i.e."
    " the server example.net should serve its policy at gemini://example.net/robots.txt."
)
_CERTIFICATE = "The certificate a Gemini server presents, reported as information: robots trust on first use."

ROBOTS_ABSENT = Rule("gemini-robots-absent", "info", f"{RFC9309} §2.3.1.3", UNAVAILABLE_WORDS)
ROBOTS_TYPE = Rule("gemini-robots-type", "error", f"{RFC9309} §2.3", ACCESS_WORDS)
ROBOTS_CHARSET = Rule("gemini-robots-charset", "error", f"{RFC9309} §2.3", ACCESS_WORDS)
ROBOTS_REDIRECT = Rule("gemini-robots-redirect", "info", f"{RFC9309} §2.3.1.2", REDIRECT_WORDS)
ROBOTS_REDIRECT_OFFHOST = Rule("gemini-robots-redirect-offhost", "warning", f"{COMPANION}, Basics", _WHERE)
ROBOTS_REDIRECTS_TOO_MANY = Rule(
    "gemini-robots-redirects-too-many", "warning", f"{RFC9309} §2.3.1.2", REDIRECT_WORDS
)
# an answer that keeps every robot off the whole server is a warning at least (report.KEPT_OFF)
ROBOTS_TEMPORARY = Rule("gemini-robots-temporary", "warning", f"{RFC9309} §2.3.1.4", UNREACHABLE_WORDS)
ROBOTS_UNREACHABLE = Rule("gemini-robots-unreachable", "warning", f"{RFC9309} §2.3.1.4", UNREACHABLE_WORDS)
ROBOTS_UNSERVABLE = Rule("gemini-robots-unservable", "warning", f"{COMPANION}, Basics", _WHERE)
CERT = Rule("gemini-cert", "info", AUDIT, _CERTIFICATE)
CERT_EXPIRED = Rule("gemini-cert-expired", "info", AUDIT, _CERTIFICATE)
CERT_NAME_MISMATCH = Rule("gemini-cert-name-mismatch", "info", AUDIT, _CERTIFICATE)
CERT_SELF_SIGNED = Rule("gemini-cert-self-signed", "info", AUDIT, _CERTIFICATE)

RULES = (
    ROBOTS_ABSENT,
    ROBOTS_TYPE,
    ROBOTS_CHARSET,
    ROBOTS_REDIRECT,
    ROBOTS_REDIRECT_OFFHOST,
    ROBOTS_REDIRECTS_TOO_MANY,
    ROBOTS_TEMPORARY,
    ROBOTS_UNREACHABLE,
    ROBOTS_UNSERVABLE,
    CERT,
    CERT_EXPIRED,
    CERT_NAME_MISMATCH,
    CERT_SELF_SIGNED,
)
MALFORMED = "malformed-header"  # the start of a hop's error when the server answered with no valid header


@dataclass(frozen=True)
class Hop:
    """One request for robots.txt and its answer (a redirect's target is the next hop's URL)."""

    url: str
    status: int | None  # None when no valid header came
    meta: str = ""
    body: bytes = b""  # a 2x's body, at most the audit's cap
    truncated: bool = False
    error: str | None = None  # "name: why" when nothing usable came back


def target(hop: Hop) -> str | None:
    """Where a 3x answer sends a robot: an absolute URL (of any scheme), or None."""
    if hop.status is None or hop.status // 10 != 3 or not hop.meta:
        return None
    return gemini_redirect(hop.status, hop.meta, hop.url) or (hop.meta if "://" in hop.meta else None)


def followed(hop: Hop) -> str | None:
    """Where a robot goes after this answer: the gemini:// URL a 3x names, on this server or off
    it (RFC 9309 §2.3.1.2: "even across authorities"), as ``manners.fetch.gemini`` follows; None
    when the answer is no redirect a robot can follow."""
    if hop.status is None:
        return None
    return gemini_redirect(hop.status, hop.meta, hop.url)


def same_server(url: str, other: str) -> bool:
    """The same scheme, host and port."""
    try:
        return url.split(":", 1)[0].lower() == other.split(":", 1)[0].lower() and split_authority(
            url
        ) == split_authority(other)
    except ValueError:
        return False


def check(hops: list[Hop]) -> list[Finding]:
    """The findings one chain of answers for /robots.txt gives, first request first: every hop
    but the last is a redirect the audit followed, as a robot follows it (off the server too)."""
    first, final = hops[0], hops[-1]
    out: list[Finding] = []
    chain = hops[:-1]
    if chain:
        targets = [followed(h) or "" for h in chain]
        out.append(
            ROBOTS_REDIRECT.found(
                f"/robots.txt is redirected {len(chain)} time{'s' if len(chain) != 1 else ''}:"
                f" {' -> '.join([first.url, *targets])}; robots follow at most five",
                sent=f"{chain[0].status} {chain[0].meta}",
                asked=chain[0].url,
            )
        )
    for hop in chain:
        going = followed(hop) or ""
        if not same_server(going, first.url):
            out.append(
                ROBOTS_REDIRECT_OFFHOST.found(
                    f"/robots.txt is redirected off the server, to {repr_text(going)}: robots follow it"
                    " there (RFC 9309 lets them) and obey what that server answers, but a server's policy"
                    " belongs on the server itself",
                    sent=f"{hop.status} {hop.meta}",
                    asked=hop.url,
                )
            )
            break
    if final.error is not None:
        if final.error.startswith(MALFORMED):
            out.append(
                ROBOTS_UNSERVABLE.found(
                    f"/robots.txt is answered with no valid Gemini header ({final.error}): robots take"
                    " everything as disallowed",
                    asked=final.url,
                )
            )
        else:
            out.append(  # said once: the error's words are robots.txt's meaning, shown above it
                ROBOTS_UNREACHABLE.found(
                    f"robots.txt got no answer ({final.error.partition(':')[0]}): robots must take"
                    " everything on the server as disallowed until it can be read",
                    asked=final.url,
                )
            )
        return out
    status = final.status
    assert status is not None
    head = f"{status} {final.meta}".rstrip()
    family = status // 10
    if family == 3:
        where = target(final)
        if where is None:
            out.append(
                ROBOTS_UNSERVABLE.found(
                    f"/robots.txt is answered with a redirect a robot cannot follow ({repr_text(head)})",
                    sent=head,
                    asked=final.url,
                )
            )
        elif followed(final) is None:
            out.append(
                ROBOTS_REDIRECT_OFFHOST.found(
                    f"/robots.txt is redirected to {repr_text(where)}, not a gemini:// URL: robots cannot"
                    " follow it and take the file as unavailable (allowing everything)",
                    sent=head,
                    asked=final.url,
                )
            )
        else:
            out.append(
                ROBOTS_REDIRECTS_TOO_MANY.found(
                    f"more than {MAX_REDIRECTS} redirects in a row for /robots.txt: robots may stop there"
                    " and take the file as unavailable (allowing everything)",
                    sent=head,
                    asked=final.url,
                )
            )
    elif family == 2:
        out += _file(final, head)
    elif family in (1, 6):
        kind = "input" if family == 1 else "a client certificate"
        out.append(
            ROBOTS_UNSERVABLE.found(
                f"/robots.txt asks for {kind} ({repr_text(head)}): no robot can read it",
                sent=head,
                asked=final.url,
            )
        )
    elif family == 4:
        out.append(
            ROBOTS_TEMPORARY.found(
                f"/robots.txt is answered {repr_text(head)}, a temporary failure: meanwhile robots must take"
                " everything on the server as disallowed",
                sent=head,
                asked=final.url,
            )
        )
    elif family == 5:
        if status == 53:
            said = (
                "the server refused the request's host or port (53, no proxying): ask with the host name and"
                " port it serves, as robots will"
            )
        else:
            said = f"there is no robots.txt ({head}): robots may fetch everything"
        out.append(ROBOTS_ABSENT.found(said, sent=head, asked=final.url))
    return out


_CHARSET = re.compile(r";\s*charset\s*=\s*\"?([^;\"\s]+)", re.IGNORECASE)


def _file(final: Hop, head: str) -> list[Finding]:
    out = []
    media = final.meta.split(";", 1)[0].strip().lower() or "text/gemini"
    if media != "text/plain":
        if not final.meta.split(";", 1)[0].strip():
            said = (
                "/robots.txt is served with no media type, which Gemini reads as text/gemini, not text/plain"
            )
        elif media == "text/gemini":
            said = (
                "/robots.txt is served as text/gemini, not text/plain: RFC 9309 §2.3 asks for text/plain,"
                ' and the Gemini companion says it "should be served with a MIME media type of text/plain";'
                " crawlers such as TLGS read a text/gemini robots.txt only by a special case"
            )
        elif media.startswith("text/"):
            said = f"/robots.txt is served as {media}, not text/plain"
        else:
            said = f"/robots.txt is served as {media}, not text/plain: robots read no file there"
        out.append(ROBOTS_TYPE.found(said, sent=head, asked=final.url))
    out += charset_findings(ROBOTS_CHARSET, final.meta, final.body, final.truncated, final.url, head)
    return out


def charset_findings(
    rule: Rule, content_type: str, body: bytes, truncated: bool, asked: str, head: str | None = None
) -> list[Finding]:
    """``rule``'s finding when the file is declared in a charset other than UTF-8 (or US-ASCII,
    its subset), or when its bytes are not UTF-8.  Shared with the HTTP checks."""
    m = _CHARSET.search(content_type)
    if m is not None and m[1].lower() not in ("utf-8", "utf8", "us-ascii"):
        return [
            rule.found(f"robots.txt is declared {m[1]}, not UTF-8", sent=head or content_type, asked=asked)
        ]
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as e:
        if not (truncated and e.start >= len(body) - 3):  # a character cut at the cap is no fault
            line = body.count(b"\n", 0, e.start) + 1
            return [
                rule.found(
                    f"robots.txt holds bytes that are not UTF-8 (line {line})",
                    sent=excerpt(body[max(0, e.start - 40) : e.start + 40]),
                    line=line,
                    asked=asked,
                )
            ]
    return []


def check_certificate(cert: Certificate, host: str, now: float, asked: str) -> list[Finding]:
    """What the server's certificate is, as information: expiry, the names, who signed it."""
    if cert.problem is not None:
        return [
            CERT.found(
                f"the certificate (sha256 {cert.sha256}) could not be read: {cert.problem}", asked=asked
            )
        ]
    names = ", ".join(cert.names) or "no name"
    until = timestamp(cert.not_after) if cert.not_after is not None else "?"
    signer = (
        "self-signed" if cert.self_signed else f"issued by {', '.join(cert.issuer) or 'an unnamed issuer'}"
    )
    out = [
        CERT.found(
            f"the certificate: sha256 {cert.sha256}, for {names}, valid until {until}, {signer}", asked=asked
        )
    ]
    if cert.not_after is not None and now > cert.not_after:
        out.append(CERT_EXPIRED.found(f"the certificate expired at {until}", asked=asked))
    elif cert.not_before is not None and now < cert.not_before:
        out.append(
            CERT_EXPIRED.found(
                f"the certificate is valid only from {timestamp(cert.not_before)}", asked=asked
            )
        )
    if not cert.names_host(host):
        out.append(CERT_NAME_MISMATCH.found(f"the certificate names {names}, not {host}", asked=asked))
    if cert.self_signed:
        out.append(
            CERT_SELF_SIGNED.found(
                "the certificate is self-signed (robots can only trust it on first use)", asked=asked
            )
        )
    return out
