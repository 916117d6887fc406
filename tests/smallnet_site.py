"""A generated small-net site with its ground truth: a Gopher hole and a Gemini capsule.

``generate(root, ...)`` writes

- ``root/gopher-gophernicus`` and ``root/gopher-pygopherd``: the same hole in two variants, because
  the servers read gophermaps differently (gophernicus turns a ``!title`` line into the draft's
  ``i...<TAB>TITLE`` line; pygopherd turns it into plain text and rewrites a ``TITLE`` selector
  into ``/TITLE``).  Both send a file verbatim, so ``/raw.menu`` (a menu written byte for byte,
  CRLF, TITLE, ``+`` mirror, final ``.``) is the same on both;
- ``root/gemini``: a capsule for jetforce, with CGI scripts in ``cgi-bin``;

and returns a :class:`Site` that knows every link it wrote.  :meth:`Site.expect` walks that link
graph as a correct crawler would (scope, item-type policy, robots.txt through manners' own engine,
redirects, 44 then retry) and returns what each server must see.  Nothing is a hand-written list:
the expectations follow from the pages written here.

Menus name no host or port for local items (the server fills in its own), so the ports that
matter are the *public* ones: the port a client connects to (a logging proxy's, when there is
one).  Servers are started with that port advertised (see ``servers.gophernicus(root,
advertised_port=...)``, ``servers.jetforce_hosts``).
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import quote, urljoin, urlsplit

import manners

sys.path.insert(0, str(Path(__file__).parent))  # servers.py and proxy.py, for scripts/demo.py too

import servers
from proxy import LoggingProxy, logging_proxy

__all__ = [
    "ARCHIVER",
    "INDEXER",
    "Capsule",
    "Expectation",
    "Node",
    "Site",
    "generate",
    "generate_capsule",
    "running",
]

HOST = "127.0.0.1"
GEMINI_HOST = "localhost"  # jetforce answers 53 to any other name, 127.0.0.1 included
ARCHIVER = ("archiver",)
INDEXER = ("indexer",)
GOPHER_META = ("robots.txt", "caps.txt")  # selectors a crawler asks for besides pages

GOPHER_TEXT = frozenset("014 6hpx".replace(" ", ""))
GOPHER_BINARY = frozenset("59gIds;cm")
GOPHER_NEVER = frozenset("728Ti3")

Kind = Literal["page", "error", "redirect", "slow", "input", "certificate"]


@dataclass
class Node:
    """One URL of the site as served: what the server answers and which links it holds."""

    url: str
    kind: Kind
    status: int | None = None  # Gemini status of the (final) answer; None for Gopher
    target: str | None = None  # redirect target (absolute)
    links: list[str] = field(default_factory=list)  # absolute, fragment-free, followable
    mirrors: list[str] = field(default_factory=list)  # "+" alternatives: recorded, not fetched
    external: list[str] = field(default_factory=list)  # URL: / other-scheme links never fetched
    title: str | None = None
    body: bytes | None = None  # what the crawler should store (text: final "." removed)


@dataclass(frozen=True)
class Expectation:
    """What a correct crawl of ``seeds`` with ``roles`` does, server by server."""

    fetched: frozenset[str]  # URLs requested and stored (20 / Gopher content)
    requested: frozenset[str]  # every URL requested (fetched + errors + redirects + 10/60 ...)
    disallowed: frozenset[str]  # in scope, discovered, refused by robots.txt: never requested
    skipped: frozenset[str]  # in scope, allowed, but never fetched (item type policy)
    errors: frozenset[str]  # requested, answer is an error (missing selector, 51, ...)
    redirects: dict[str, str]  # URL -> target
    statuses: dict[str, int]  # Gemini URL -> final status
    slow_down: frozenset[str]  # answered 44 once, then 20: requested twice
    mirrors: frozenset[str]  # "+" alternatives seen, never requested
    out_of_scope: frozenset[str]  # gemini:/gopher: links outside the seeds' authorities
    selectors: dict[str, list[str]]  # gopher authority -> request lines (no CRLF), sorted, pages only
    gemini_requests: dict[str, list[str]]  # gemini authority -> request URLs, sorted, with repeats
    decisions: dict[str, manners.Decision]  # disallowed URL -> the deciding line and rule


@dataclass
class Site:
    root: Path
    gophernicus_root: Path
    pygopherd_root: Path
    gemini_root: Path
    gophernicus_port: int
    pygopherd_port: int
    gemini_port: int
    gophernicus_url: str
    pygopherd_url: str
    gemini_url: str
    nodes: dict[str, Node]  # every URL written, all three authorities
    robots: dict[str, str]  # authority ("scheme://host:port") -> robots.txt text
    slow_state: Path  # the file whose existence flips cgi-bin/slow from 44 to 20

    def reset(self) -> None:
        """Make cgi-bin/slow answer ``44 5`` again on its next request."""
        self.slow_state.unlink(missing_ok=True)

    def robots_txt(self, url: str) -> manners.RobotsTxt:
        return manners.parse(self.robots[authority(url)])

    def expect(self, seeds: Sequence[str], roles: Iterable[str], agent: str = "testbot") -> Expectation:
        """Walk the link graph from ``seeds`` as a correct crawler with ``roles`` does."""
        roles = tuple(roles)
        scope = {authority(s) for s in seeds}
        seen: set[str] = set()
        queue: deque[tuple[str, int]] = deque((s, 0) for s in seeds)
        fetched: set[str] = set()
        requested: set[str] = set()
        disallowed: set[str] = set()
        skipped: set[str] = set()
        errors: set[str] = set()
        redirects: dict[str, str] = {}
        statuses: dict[str, int] = {}
        slow: set[str] = set()
        mirrors: set[str] = set()
        out: set[str] = set()
        decisions: dict[str, manners.Decision] = {}
        while queue:
            url, hops = queue.popleft()
            if url in seen:
                continue
            seen.add(url)
            if authority(url) not in scope:
                out.add(url)
                continue
            decision = self.robots_txt(url).decide(url, agent, roles)
            if not decision.allowed:
                disallowed.add(url)
                decisions[url] = decision
                continue
            if url.startswith("gopher://") and not _gopher_fetchable(gopher_type(url), roles):
                skipped.add(url)
                continue
            node = self.nodes.get(url)
            requested.add(url)
            if node is None:  # a link to something that does not exist
                errors.add(url)
                if url.startswith("gemini://"):
                    statuses[url] = 51
                continue
            if node.status is not None:
                statuses[url] = node.status
            if node.kind == "page" or node.kind == "slow":
                fetched.add(url)
                if node.kind == "slow":
                    slow.add(url)
                mirrors.update(node.mirrors)
                for link in node.links:
                    queue.append((link, 0))
            elif node.kind == "redirect":
                assert node.target is not None
                redirects[url] = node.target
                if hops < 5:
                    queue.append((node.target, hops + 1))
            elif node.kind == "error":
                errors.add(url)
        selectors: dict[str, list[str]] = {}
        gemini: dict[str, list[str]] = {}
        for url in sorted(requested):
            auth = authority(url)
            if url.startswith("gopher://"):
                selectors.setdefault(auth, []).append(gopher_selector(url))
            else:
                gemini.setdefault(auth, []).extend([url] * (2 if url in slow else 1))
        for lines in (*selectors.values(), *gemini.values()):
            lines.sort()
        return Expectation(
            fetched=frozenset(fetched),
            requested=frozenset(requested),
            disallowed=frozenset(disallowed),
            skipped=frozenset(skipped),
            errors=frozenset(errors),
            redirects=redirects,
            statuses=statuses,
            slow_down=frozenset(slow),
            mirrors=frozenset(mirrors - requested),
            out_of_scope=frozenset(out),
            selectors=selectors,
            gemini_requests=gemini,
            decisions=decisions,
        )


# --------------------------------------------------------------------------- URL helpers


def authority(url: str) -> str:
    """``scheme://host:port`` with the port explicit."""
    parts = urlsplit(url)
    default = {"gemini": 1965, "gopher": 70}.get(parts.scheme, 0)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{parts.port or default}"


def gopher_url(host: str, port: int, item_type: str, selector: str) -> str:
    hostport = host if port == 70 else f"{host}:{port}"
    if item_type == "1" and selector == "":
        return f"gopher://{hostport}/"
    return f"gopher://{hostport}/{item_type}{quote(selector, safe='/:;=,+~!$&()*@')}"


def gopher_type(url: str) -> str:
    path = urlsplit(url).path
    return path[1] if len(path) > 1 else "1"


def gopher_selector(url: str) -> str:
    from urllib.parse import unquote

    path = urlsplit(url).path
    return unquote(path[2:]) if len(path) > 1 else ""


def _gopher_fetchable(item_type: str, roles: Sequence[str]) -> bool:
    if item_type in GOPHER_TEXT:
        return True
    return item_type in GOPHER_BINARY and "archiver" in roles


def _gemini_url(port: int, path: str) -> str:
    return f"gemini://{GEMINI_HOST}:{port}{path}"


def _resolve(base: str, ref: str) -> str:
    """RFC 3986 resolution (urljoin only resolves schemes it knows: borrow http's), host lower-cased."""
    scheme = base.split(":", 1)[0]
    if ":" in ref.split("/", 1)[0] and not ref.lower().startswith(scheme + ":"):
        return ref.split("#", 1)[0]  # another scheme: as written
    if ref.lower().startswith(scheme + ":"):
        ref = "http:" + ref[len(scheme) + 1 :]
    joined = urljoin("http:" + base[len(scheme) + 1 :], ref).split("#", 1)[0]
    parts = urlsplit(joined)
    return parts._replace(scheme=scheme, netloc=parts.netloc.lower()).geturl()


# --------------------------------------------------------------------------- the hole

GOPHER_ROBOTS = """\
# Robots for the manners demo hole: selector rules and a typed rule.
User-agent: *
Disallow: /private
Disallow: 1/secret

User-agent: archiver
Disallow: /private
Disallow: 1/secret
Disallow: /docs/drafts

User-agent: indexer
Disallow: /private
Disallow: 1/secret
Disallow: /web
Crawl-delay: 0
"""

CAPS = """\
CAPS
CapsVersion=1
ExpireCapsAfter=1800
PathDelimeter=/
PathIdentity=.
PathParent=..
ServerSoftware=manners-test-hole
"""

# (type, display, selector, file content or None for "no file", binary?)
_FILES: list[tuple[str, str, str, bytes | None]] = [
    ("0", "About this hole", "/about.txt", b"About the demo hole.\nIt ends with a lone dot line.\n.\n"),
    ("4", "BinHex file", "/files/mac.hqx", b"(This file must be converted with BinHex 4.0)\n:ABC\n"),
    ("5", "Archive", "/files/archive.zip", b"PK\x03\x04zip archive bytes"),
    ("6", "UUEncoded", "/files/file.uue", b"begin 644 x\n#86)C\n`\nend\n"),
    ("9", "Binary blob", "/files/blob.bin", bytes(range(256))),
    ("g", "GIF picture", "/img/pic.gif", b"GIF89a\x01\x00\x01\x00"),
    ("I", "PNG picture", "/img/pic.png", b"\x89PNG\r\n\x1a\nrest"),
    ("d", "PDF document", "/files/doc.pdf", b"%PDF-1.4 demo"),
    ("s", "Sound", "/files/sound.wav", b"RIFF....WAVEfmt "),
    (";", "Video", "/files/video.mp4", b"\x00\x00\x00\x18ftypmp42"),
    ("c", "Calendar", "/files/cal.ics", b"BEGIN:VCALENDAR\nEND:VCALENDAR\n"),
    ("m", "Mailbox", "/files/mail.mbox", b"From a@b Mon Jan  1 00:00:00 2024\nSubject: hi\n\nhi\n"),
    ("h", "HTML page", "/web/page.html", b"<html><title>Demo</title><body>hi</body></html>\n"),
    ("p", "TeX paper", "/files/paper.tex", b"\\documentclass{article}\n"),
    ("x", "XML data", "/files/data.xml", b"<?xml version='1.0'?><data/>\n"),
]


def _text_body(data: bytes) -> bytes:
    """What the crawler stores for a text item: the file without a final lone "." line."""
    if data.endswith(b"\r\n.\r\n"):
        return data[:-3]
    if data.endswith(b"\n.\n"):
        return data[:-2]
    return data


def _write(path: Path, data: bytes | str, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        path.chmod(mode)


def _hole(
    root: Path,
    variant: Literal["gophernicus", "pygopherd"],
    port: int,
    others: dict[str, str],
    rng: random.Random,
) -> dict[str, Node]:
    """Write one variant of the hole; ``others``: the in-scope-able URLs of the other servers."""
    nodes: dict[str, Node] = {}

    def url(t: str, sel: str) -> str:
        return gopher_url(HOST, port, t, sel)

    def menu_node(sel: str, title: str | None = None) -> Node:
        node = Node(url("1", sel), "page", title=title)
        nodes[node.url] = node
        return node

    _write(root / "robots.txt", GOPHER_ROBOTS)
    _write(root / "caps.txt", CAPS)

    lines: list[str] = []
    title = "The manners demo hole"
    top = menu_node("", title if variant == "gophernicus" else None)
    if variant == "gophernicus":
        lines.append(f"!{title}")
    lines.append("Welcome to a generated hole: every item type, robots rules, mirrors.")

    def link(node: Node, t: str, display: str, sel: str, host: str = "", port_: int | None = None) -> None:
        fields = [t + display, sel]
        if host:
            fields += [host, str(port_ or 70)]
        lines.append("\t".join(fields))
        if t in "3i" or host:  # 3 and i are no links; telnet & co. elsewhere are out of reach
            if host:
                node.external.append(f"{t}:{sel}@{host}:{port_}")
            return
        node.links.append(gopher_url(host or HOST, port_ or port, t, sel))

    for t, display, sel, data in _FILES:
        link(top, t, display, sel)
        if data is not None:
            _write(root / sel.lstrip("/"), data)
            body = _text_body(data) if t in GOPHER_TEXT else data
            nodes[url(t, sel)] = Node(url(t, sel), "page", body=body)
        if t == "5":  # an in-scope mirror on this server: recorded, never fetched
            lines.append(f"+Mirror of the archive\t/mirror/archive.zip\t{HOST}\t{port}")
            top.mirrors.append(url("5", "/mirror/archive.zip"))
            _write(root / "mirror" / "archive.zip", data or b"")
            lines.append("+Mirror elsewhere\t/archive.zip\tmirror.example.org\t70")
            top.mirrors.append(gopher_url("mirror.example.org", 70, "5", "/archive.zip"))
    link(top, "7", "Search this hole", "/search")
    link(top, "2", "CCSO phone book", "/ccso")
    link(top, "8", "Telnet BBS", "", "bbs.example.org", 23)
    link(top, "T", "TN3270 mainframe", "", "ibm.example.org", 23)
    link(top, "3", "An error item in the middle of a menu", "/error-item")
    lines.append("Plain info line (type i), not a link.")
    lines.append("iInfo line with fields\t\texample.com\t0")
    # Directories
    link(top, "1", "Documents", "/docs")
    link(top, "1", "Private (disallowed: /private)", "/private")
    link(top, "1", "Secret menu (disallowed: 1/secret)", "/secret")
    link(top, "0", "Secret note, linked as text (the typed rule does not match it)", "/secret/note.txt")
    link(top, "1", "A raw menu file sent verbatim (TITLE, + mirror, final .)", "/raw.menu")
    link(top, "0", "A missing file", "/missing.txt")
    link(top, "1", "A missing menu", "/missing/")
    link(top, "0", "About again (a duplicate link)", "/about.txt")
    # URL: links: http never, gopher/gemini followed when in scope
    lines.append("hThe Web (never followed)\tURL:http://example.com/")
    top.external.append("http://example.com/")
    lines.append(f"0This hole through URL:\tURL:{url('0', '/via-url.txt')}")
    top.links.append(url("0", "/via-url.txt"))
    _write(root / "via-url.txt", b"Reached through a URL: selector.\n")
    nodes[url("0", "/via-url.txt")] = Node(
        url("0", "/via-url.txt"), "page", body=b"Reached through a URL: selector.\n"
    )
    lines.append("1Another hole (out of scope)\tURL:gopher://gopher.invalid/1/")
    top.links.append("gopher://gopher.invalid/1/")
    lines.append(f"hThe demo capsule\tURL:{others['gemini']}")
    top.links.append(others["gemini"])
    lines.append("hAnother capsule (out of scope)\tURL:gemini://gemini.invalid/")
    top.links.append("gemini://gemini.invalid/")
    _write(root / "gophermap", "\n".join(lines) + "\n")

    # /docs and /docs/drafts
    docs = menu_node("/docs")
    lines = ["Documents."]
    for n in range(1, 3 + rng.randint(0, 2)):
        sel = f"/docs/doc{n}.txt"
        link(docs, "0", f"Document {n}", sel)
        text = f"Document {n}: {rng.random():.6f}\n".encode()
        _write(root / sel.lstrip("/"), text)
        nodes[url("0", sel)] = Node(url("0", sel), "page", body=text)
    link(docs, "1", "Drafts (disallowed for archivers)", "/docs/drafts")
    link(docs, "0", "Back to about (duplicate)", "/about.txt")
    _write(root / "docs" / "gophermap", "\n".join(lines) + "\n")
    drafts = menu_node("/docs/drafts")
    lines = []
    link(drafts, "0", "A draft", "/docs/drafts/draft.txt")
    _write(root / "docs" / "drafts" / "gophermap", "\n".join(lines) + "\n")
    _write(root / "docs" / "drafts" / "draft.txt", b"A draft.\n")
    nodes[url("0", "/docs/drafts/draft.txt")] = Node(
        url("0", "/docs/drafts/draft.txt"), "page", body=b"A draft.\n"
    )

    for name, sel in (("private", "/private"), ("secret", "/secret")):
        node = menu_node(sel)
        lines = []
        link(node, "0", f"{name} note", f"{sel}/note.txt")
        _write(root / name / "gophermap", "\n".join(lines) + "\n")
        _write(root / name / "note.txt", f"A {name} note.\n".encode())
        nodes[url("0", f"{sel}/note.txt")] = Node(
            url("0", f"{sel}/note.txt"), "page", body=f"A {name} note.\n".encode()
        )

    # A raw menu, sent verbatim by both servers: the draft's TITLE, CRLF, + mirror, final "."
    raw = menu_node("/raw.menu", "A raw menu")
    raw_lines = [
        "iA raw menu\tTITLE\texample.com\t0",
        f"0Raw: a text\t/raw/text.txt\t{HOST}\t{port}",
        f"+Raw: its mirror\t/raw/mirror.txt\t{HOST}\t{port}",
        f"1Raw: back to the top\t\t{HOST}\t{port}\t+",
        "iThe end.\t\texample.com\t0",
        ".",
    ]
    _write(root / "raw.menu", "\r\n".join(raw_lines) + "\r\n")
    raw.links += [url("0", "/raw/text.txt"), url("1", "")]
    raw.mirrors.append(url("0", "/raw/mirror.txt"))
    for name in ("text", "mirror"):
        _write(root / "raw" / f"{name}.txt", f"Raw {name}.\r\n".encode())
    nodes[url("0", "/raw/text.txt")] = Node(url("0", "/raw/text.txt"), "page", body=b"Raw text.\r\n")
    _write(root / "raw" / "gophermap", "Nothing here.\n")
    # missing selectors: errors (gophernicus "Error:" page / type-3 menu, pygopherd type-3 line)
    for t, sel in (("0", "/missing.txt"), ("1", "/missing/")):
        nodes[url(t, sel)] = Node(url(t, sel), "error")
    return nodes


# --------------------------------------------------------------------------- the capsule

GEMINI_ROBOTS = """\
# Robots for the manners demo capsule.
User-agent: *
Disallow: /private/
Disallow: /cgi-bin/hidden

User-agent: archiver
Disallow: /private/
Disallow: /drafts/

User-agent: indexer
Disallow: /private/
Disallow: /raw/
"""


def _cgi(path: Path, body: str) -> None:
    _write(path, "#!/bin/sh\n" + body, mode=0o755)


def _capsule(root: Path, port: int, others: dict[str, str]) -> tuple[dict[str, Node], Path]:
    nodes: dict[str, Node] = {}

    def u(path: str) -> str:
        return _gemini_url(port, path)

    def page(path: str, file: str, title: str, lines: list[str]) -> Node:
        text = f"# {title}\n" + "\n".join(lines) + "\n"
        _write(root / file, text)
        node = Node(u(path), "page", status=20, title=title, body=text.encode())
        in_pre = False
        for line in lines:
            if line.startswith("```"):
                in_pre = not in_pre
                continue
            if in_pre or not line.startswith("=>"):
                continue
            target = line[2:].strip().split(maxsplit=1)[0]
            absolute = _resolve(node.url, target)
            if absolute.startswith(("gemini://", "gopher://")):
                node.links.append(absolute)
            else:
                node.external.append(absolute)
        nodes[node.url] = node
        return node

    _write(root / "robots.txt", GEMINI_ROBOTS)
    page("/", "index.gmi", "The manners demo capsule", [
        "Links below are relative, absolute, duplicated, with fragments, and one is fake.",
        "=> docs/ Documents (relative)",
        "=>docs/a.gmi No space after the arrow",
        "=> docs/a.gmi#part Same page with a fragment (a duplicate)",
        "=>\tdocs/b.gmi\tTabs as white space",
        "=> /docs Directory without its slash (31 from jetforce)",
        "=> ./drafts/draft.gmi A draft (disallowed for archivers)",
        "=> raw/data.txt Raw text (disallowed for indexers)",
        "=> /private/secret.gmi Private (disallowed for everyone)",
        "=> missing.gmi A page that is not there (51)",
        "```",
        "=> fake.gmi This is inside a preformatted block: not a link",
        "```",
        "=> cgi-bin/redirect Temporary redirect (30)",
        "=> cgi-bin/moved Permanent redirect (31)",
        "=> cgi-bin/slow Slow down once (44 5), then 20",
        "=> cgi-bin/input Asks for input (10)",
        "=> cgi-bin/gone Not found from a script (51)",
        "=> cgi-bin/cert Wants a client certificate (60)",
        "=> cgi-bin/hidden A script robots.txt disallows",
        "=> gemini://gemini.invalid/ Another capsule (out of scope)",
        f"=> gemini://LOCALHOST:{port}/docs/a.gmi Upper-case host, same page",
        "=> https://example.com/ The Web (another scheme)",
        f"=> {others['gopher']} The demo hole (in scope when it is a seed)",
        "=> mailto:someone@example.com Mail (another scheme)",
    ])  # fmt: skip
    page("/docs/", "docs/index.gmi", "Documents", [
        "=> a.gmi Page A",
        "=> ./b.gmi Page B",
        "=> ../ Up (the home page again)",
        "=> ../index.gmi The home page by its file name",
        "=> sub/../a.gmi Page A through a dot segment",
    ])  # fmt: skip
    page("/docs/a.gmi", "docs/a.gmi", "Page A", ["=> b.gmi#top Page B", "=> ../docs/c.gmi Page C"])
    page("/docs/b.gmi", "docs/b.gmi", "Page B", ["=> /docs/a.gmi Page A"])
    page("/docs/c.gmi", "docs/c.gmi", "Page C", ["Where the permanent redirect leads."])
    page("/index.gmi", "index.gmi", "The manners demo capsule", [])  # same file as "/"
    nodes[u("/index.gmi")].links = nodes[u("/")].links
    nodes[u("/index.gmi")].body = nodes[u("/")].body
    (root / "index.gmi").write_bytes(nodes[u("/")].body or b"")
    page("/drafts/draft.gmi", "drafts/draft.gmi", "A draft", ["=> ../docs/a.gmi Page A"])
    page("/private/secret.gmi", "private/secret.gmi", "Secret", ["=> ../docs/c.gmi C"])
    _write(root / "raw" / "data.txt", "raw data\n")
    nodes[u("/raw/data.txt")] = Node(u("/raw/data.txt"), "page", status=20, body=b"raw data\n")
    nodes[u("/docs")] = Node(u("/docs"), "redirect", status=31, target=u("/docs/"))

    state = root.parent / "gemini-state" / "slow.once"
    state.parent.mkdir(parents=True, exist_ok=True)
    cgi = root / "cgi-bin"
    _cgi(cgi / "redirect", "printf '30 /docs/b.gmi\\r\\n'\n")
    nodes[u("/cgi-bin/redirect")] = Node(
        u("/cgi-bin/redirect"), "redirect", status=30, target=u("/docs/b.gmi")
    )
    _cgi(cgi / "moved", f"printf '31 {u('/docs/c.gmi')}\\r\\n'\n")
    nodes[u("/cgi-bin/moved")] = Node(u("/cgi-bin/moved"), "redirect", status=31, target=u("/docs/c.gmi"))
    slow_body = "# Slow\nAnswered after a 44.\n=> /docs/c.gmi Page C\n"
    _cgi(cgi / "slow", (
        f"if [ -e '{state}' ]; then\n"
        f"  printf '20 text/gemini\\r\\n{slow_body.replace(chr(10), chr(92) + 'n')}'\n"
        "else\n"
        f"  : > '{state}'\n"
        "  printf '44 5\\r\\n'\n"
        "fi\n"
    ))  # fmt: skip
    nodes[u("/cgi-bin/slow")] = Node(
        u("/cgi-bin/slow"), "slow", status=20, title="Slow", links=[u("/docs/c.gmi")], body=slow_body.encode()
    )
    for name, header, kind in (
        ("input", "10 Your name?", "input"),
        ("gone", "51 Gone from here", "error"),
        ("cert", "60 A client certificate is needed", "certificate"),
        ("hidden", "20 text/gemini", "page"),
    ):
        _cgi(cgi / name, f"printf '{header}\\r\\n'\n")
        nodes[u(f"/cgi-bin/{name}")] = Node(u(f"/cgi-bin/{name}"), kind, status=int(header[:2]))  # type: ignore[arg-type]
    return nodes, state


# --------------------------------------------------------------------------- entry points


def generate(
    root: Path,
    seed: int = 0,
    *,
    gophernicus_port: int,
    pygopherd_port: int,
    gemini_port: int,
) -> Site:
    """Write the hole (two variants) and the capsule under ``root``; ports are the public ones."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    gemini_seed = _gemini_url(gemini_port, "/")
    gn_seed = gopher_url(HOST, gophernicus_port, "1", "")
    pg_seed = gopher_url(HOST, pygopherd_port, "1", "")
    nodes: dict[str, Node] = {}
    nodes.update(
        _hole(root / "gopher-gophernicus", "gophernicus", gophernicus_port, {"gemini": gemini_seed}, rng)
    )
    nodes.update(_hole(root / "gopher-pygopherd", "pygopherd", pygopherd_port, {"gemini": gemini_seed}, rng))
    capsule, state = _capsule(root / "gemini", gemini_port, {"gopher": gn_seed})
    nodes.update(capsule)
    return Site(
        root=root,
        gophernicus_root=root / "gopher-gophernicus",
        pygopherd_root=root / "gopher-pygopherd",
        gemini_root=root / "gemini",
        gophernicus_port=gophernicus_port,
        pygopherd_port=pygopherd_port,
        gemini_port=gemini_port,
        gophernicus_url=gn_seed,
        pygopherd_url=pg_seed,
        gemini_url=gemini_seed,
        nodes=nodes,
        robots={
            authority(gn_seed): GOPHER_ROBOTS,
            authority(pg_seed): GOPHER_ROBOTS,
            authority(gemini_seed): GEMINI_ROBOTS,
        },
        slow_state=state,
    )


@dataclass
class Capsule:
    """The benchmark capsule: ``hosts`` authorities (one port each on 127.0.0.1), ``pages`` pages."""

    root: Path
    roots: list[Path]  # one directory per host, in port order
    ports: list[int]
    seeds: list[str]  # each host's home page
    urls: list[str]  # every page, home pages included, in a fixed order
    sha256: dict[str, str] = field(default_factory=dict)


def generate_capsule(
    root: Path, pages: int = 5000, hosts: int = 20, *, ports: Sequence[int], seed: int = 0
) -> Capsule:
    """A capsule of ``pages`` gemtext pages over ``hosts`` authorities for the benchmark.

    Host ``h`` is ``gemini://localhost:ports[h]/``: distinct ports on loopback are distinct
    authorities, so one jetforce process (``servers.jetforce_hosts``) serves them all, which two
    cores can afford, where twenty jetforce processes could not; ``*.localhost`` names do not
    resolve here (no nss-myhostname), so host names are not an option without /etc/hosts.
    Each host's pages form a tree reached from its home page (page i links 2i+1 and 2i+2), and
    every page links one page of the next host, so a crawl seeded with host 0 alone reaches all.
    robots.txt allows everything (``Disallow:`` empty) so all pages count.
    """
    if len(ports) != hosts:
        raise ValueError("one port per host")
    rng = random.Random(seed)
    per_host = [pages // hosts + (1 if h < pages % hosts else 0) for h in range(hosts)]
    capsule = Capsule(root=root, roots=[], ports=list(ports), seeds=[], urls=[])
    for h, port in enumerate(ports):
        host_root = root / f"host{h:02d}"
        capsule.roots.append(host_root)
        _write(host_root / "robots.txt", "User-agent: *\nDisallow:\n")
        capsule.seeds.append(_gemini_url(port, "/"))
        nxt = ports[(h + 1) % hosts]
        for i in range(per_host[h]):
            path = "/" if i == 0 else f"/p/{i}.gmi"
            file = "index.gmi" if i == 0 else f"p/{i}.gmi"
            children = [c for c in (2 * i + 1, 2 * i + 2) if c < per_host[h]]
            lines = [f"# Host {h} page {i}", "".join(rng.choice("abcdefgh ") for _ in range(200))]
            lines += [f"=> /p/{c}.gmi Page {c}" for c in children]
            j = min(i, per_host[(h + 1) % hosts] - 1)
            lines.append(f"=> gemini://localhost:{nxt}{'/' if j == 0 else f'/p/{j}.gmi'} Next host")
            data = ("\n".join(lines) + "\n").encode()
            _write(host_root / file, data)
            url = _gemini_url(port, path)
            capsule.urls.append(url)
            capsule.sha256[url] = hashlib.sha256(data).hexdigest()
    return capsule


@dataclass
class Running:
    """The site served: the three servers, each behind its logging proxy (whose ports URLs name)."""

    site: Site
    gophernicus: LoggingProxy
    pygopherd: LoggingProxy
    gemini: LoggingProxy
    jetforce: servers.JetforceHosts


@contextmanager
def running(root: Path, seed: int = 0) -> Iterator[Running]:
    """Generate the site under ``root`` and serve it: gophernicus, pygopherd and jetforce, on
    loopback, each behind a :func:`proxy.logging_proxy`. Everything stops on exit."""
    with (
        logging_proxy(0, gopher=True) as gn_proxy,
        logging_proxy(0, gopher=True) as pg_proxy,
        logging_proxy(0, gopher=False) as gem_proxy,
    ):
        site = generate(
            root,
            seed,
            gophernicus_port=gn_proxy.port,
            pygopherd_port=pg_proxy.port,
            gemini_port=gem_proxy.port,
        )
        with (
            servers.gophernicus(site.gophernicus_root, advertised_port=gn_proxy.port) as gn_port,
            servers.pygopherd(site.pygopherd_root, advertised_port=pg_proxy.port) as pg_port,
            servers.jetforce_hosts([site.gemini_root], [gem_proxy.port]) as jet,
        ):
            gn_proxy.upstream = (HOST, gn_port)
            pg_proxy.upstream = (HOST, pg_port)
            gem_proxy.upstream = (HOST, jet.listen_ports[0])
            yield Running(site, gn_proxy, pg_proxy, gem_proxy, jet)
