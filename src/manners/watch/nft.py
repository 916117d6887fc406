"""``--nft FILE``: the impolite robots' addresses as an nftables script that ``nft -f FILE`` loads.

robots.txt cannot be enforced; an admin who learns who breaks it "must be prepared to use e.g.
firewall rules" (the Gemini companion spec).  The script holds, in a table ``inet manners``, two
named interval sets, ``impolite4`` and ``impolite6``, each element an impolite client's address
or block (``--group`` makes /24 and /64 clients) with its reasons as the element's comment.

Loading it drops nothing by itself.  It declares the table, its two sets and an empty chain
``input`` hooked on input (policy accept), flushes the two sets and adds the elements, all in
one transaction, so loading it again, or a later version with other clients, replaces the
sets' contents at once and keeps whatever rules the admin put in the chain.  The sets are the
table's (nftables' sets are scoped to their table), so the admin's two drop lines
(:data:`DROP_LINES`) go into that chain, once::

    nft add rule inet manners input ip saddr @impolite4 drop
    nft add rule inet manners input ip6 saddr @impolite6 drop

Nothing from a log can break the script: a comment is the reasons escaped for a terminal
(:func:`manners.terminal.safe`), its double quotes made single (nft's quoted strings have no
escape), cut to nft's 128 bytes; a client that is no IP address (a host name a server logged)
is left out and counted in the header.  The text is a pure function of the report, without a
date, so ``--follow`` rewrites the file (:func:`write_set`, atomically) only when it changes.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from manners.terminal import safe
from manners.watch.verdicts import Report

__all__ = ["COMMENT_BYTES", "DROP_LINES", "NftError", "comment", "nft_text", "write_set"]

COMMENT_BYTES = 128  # nft refuses a longer element comment ("128 characters maximum allowed")
TABLE = "inet manners"

#: What drops the sets' traffic, run once by the admin: the chain is the script's own.
DROP_LINES = (
    "nft add rule inet manners input ip saddr @impolite4 drop",
    "nft add rule inet manners input ip6 saddr @impolite6 drop",
)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class NftError(Exception):
    """The set file cannot be written; the message is one sentence."""


def comment(text: str) -> str:
    """``text`` as the inside of an nft quoted string: no control byte, no double quote, at most
    COMMENT_BYTES bytes of UTF-8 (cut at a character, ``...`` marking the cut)."""
    text = safe(text).replace('"', "'")
    data = text.encode()
    if len(data) <= COMMENT_BYTES:
        return text
    return data[: COMMENT_BYTES - 3].decode("utf-8", "ignore") + "..."


def _network(client: str) -> Network | None:
    try:
        return ipaddress.ip_network(client, strict=False)
    except ValueError:
        return None


def _elements(report: Report) -> tuple[dict[Network, list[str]], int]:
    """Each impolite client's network with the reasons charged to it (a client that carries
    several robots, or a block holding another impolite client, gathers theirs), and how many
    impolite clients are no address."""
    found: dict[Network, list[str]] = {}
    unaddressed = 0
    for robot in report.impolite:
        net = _network(robot.client)
        if net is None:
            unaddressed += 1
            continue
        said = "; ".join(robot.reasons) or "impolite"
        found.setdefault(net, []).append(f"{robot.token}: {said}" if robot.token else said)
    # nft refuses overlapping intervals in one set: a network inside another is the outer's
    merged: dict[Network, list[str]] = {}
    for net in sorted(found, key=lambda n: (n.version, n.prefixlen, n.network_address)):
        outer = next((o for o in _supernets(net) if o in merged), None)
        if outer is None:
            merged[net] = list(found[net])
        else:
            merged[outer].extend(found[net])
    return merged, unaddressed


def _supernets(net: Network) -> list[Network]:
    return [net.supernet(new_prefix=bits) for bits in range(net.prefixlen)]


def _set_lines(name: str, elements: Sequence[tuple[Network, list[str]]]) -> list[str]:
    if not elements:
        return []
    lines = [f"add element {TABLE} {name} {{"]
    for i, (net, reasons) in enumerate(elements):
        element = str(net.network_address) if net.prefixlen == net.max_prefixlen else str(net)
        sep = "," if i < len(elements) - 1 else ""
        lines.append(f'\t{element} comment "{comment(" | ".join(reasons))}"{sep}')
    lines.append("}")
    return lines


def nft_text(report: Report) -> str:
    """The nftables script of the report's impolite clients (see the module's docstring)."""
    merged, unaddressed = _elements(report)
    ordered = sorted(
        merged.items(), key=lambda item: (item[0].version, item[0].network_address, item[0].prefixlen)
    )
    v4 = [(n, r) for n, r in ordered if n.version == 4]
    v6 = [(n, r) for n, r in ordered if n.version == 6]
    header = [
        "#!/usr/sbin/nft -f",
        "# manners watch --nft: the clients that broke robots.txt, by address or block.",
        "# Loading it again (or a newer one) replaces the sets' contents; it drops nothing itself.",
        "# To drop their traffic, add these two rules once (the sets and the chain are this table's):",
        *(f"#   {line}" for line in DROP_LINES),
        f"# impolite clients: {len(v4)} IPv4, {len(v6)} IPv6",
    ]
    if unaddressed:
        header.append(f"# left out: {unaddressed} impolite clients logged by a name, not an address")
    body = [
        f"table {TABLE} {{",
        "\tset impolite4 {",
        "\t\ttype ipv4_addr",
        "\t\tflags interval",
        "\t}",
        "\tset impolite6 {",
        "\t\ttype ipv6_addr",
        "\t\tflags interval",
        "\t}",
        "\tchain input {",
        "\t\ttype filter hook input priority filter - 1; policy accept;",
        "\t}",
        "}",
        f"flush set {TABLE} impolite4",
        f"flush set {TABLE} impolite6",
        *_set_lines("impolite4", v4),
        *_set_lines("impolite6", v6),
    ]
    return "\n".join([*header, *body]) + "\n"


def write_set(path: str | Path, report: Report) -> bool:
    """Write :func:`nft_text` of ``report`` to ``path`` atomically (a temporary file in the same
    directory, flushed to disk, renamed over it); False, writing nothing, when ``path`` already
    holds that text.  NftError (one sentence) when it cannot be written."""
    path = Path(path)
    data = nft_text(report).encode()
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass  # absent or unreadable: write it
    directory = path.parent
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise NftError(f"{safe(str(path))} cannot be written: {safe(exc.strerror or str(exc))}.") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise NftError(f"{safe(str(path))} cannot be written: {safe(exc.strerror or str(exc))}.") from None
    with contextlib.suppress(OSError):  # the rename itself to disk
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return True
