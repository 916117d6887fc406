"""How a Gopher server speaks to robots: pure checks over the bytes of its replies.

The audit sends each selector below once (``SELECTORS``) and hands the replies here.  A
selector is *answered* when the reply is not empty, is no error (a type-3 item first, or
gophernicus' plain ``Error:`` page, as the robots.txt fetcher reads them) and is not the very
reply a selector that cannot exist got (``missing``, compared with each reply's own selector
taken out: a server that answers every selector alike answers none).  The page a ``URL:``
selector gets is checked in :mod:`manners.admin.site.gopher_url`.

The words are the contemporary Gopher draft's and the 2019 robots proposal's (docs/site.md);
the severity is theirs: MUST, SHALL and PROHIBITED an error, SHOULD and RECOMMENDED a
warning, the rest information.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...fetch.outcome import GOPHER_SELECTORS
from ...gopher_reply import gopher_error, gopher_text, gopher_text_body
from .gopher_url import (
    URL_IMG_OR_SCRIPT,
    URL_NO_REDIRECT,
    URL_OUTSIDE_REF,
    URL_REFRESH,
    check_url_page,
)
from .report import (
    DRAFT,
    PROPOSAL,
    RFC9309,
    UNREACHABLE_WORDS,
    Finding,
    Reply,
    Rule,
    bare_line_ends,
    excerpt,
    line_at,
    plural,
    repr_text,
    unanswered,
)

MISSING_PREFIX = (
    "/manners-site-probe-"  # and 16 hex digits; never ending in '/' (gophernicus answers those well)
)
CAPS_LINE_MAX = 70

_LINE_ENDS = (
    "All programmes using Gopher MUST always use the Microsoft standard of CR/LF, irrespective of the"
    " operating system they run on. Both internal Gopher commands and policy files MUST comply with this"
    " standard."
)
_CAPS = "It is RECOMMENDED, when hosting a public-access Gopher server, to include a capability policy."
_TITLE_SHAPE = (
    "* The type code MUST be `i` (information) * The selector string MUST be `TITLE` * There is no server to"
    " connect to; the dummy text used in place of the server SHOULD be `example.com` * There is no port to"
    " connect to; the placeholder number SHOULD therefore be `0` (zero)."
)

ROBOTS_ABSENT = Rule(
    "gopher-robots-absent",
    "info",
    f"{DRAFT}, Robot Access Restrictions Policy",
    "The policy file, if it exists, MUST be accessible via Gopher on the local address /robots.txt",
)
ROBOTS_SLASH_MISSING = Rule(
    "gopher-robots-slash-missing",
    "error",
    f"{DRAFT}, Robot Access Restrictions Policy",
    "The policy file, if it exists, MUST be accessible via Gopher on the local address /robots.txt",
)
ROBOTS_BARE_MISSING = Rule(
    "gopher-robots-bare-missing",
    "warning",
    PROPOSAL,
    "A robot MUST check robots.txt. [...] How to test? The following should return the"
    " contents of the site's robots.txt. echo robots.txt | nc alexschroeder.ch 70",
)
ROBOTS_DIFFER = Rule(
    "gopher-robots-differ",
    "warning",
    PROPOSAL,
    "The following should return the contents of the site's robots.txt. echo robots.txt | nc"
    " alexschroeder.ch 70",
)
ROBOTS_TYPED = Rule(
    "gopher-robots-typed-selector",
    "info",
    PROPOSAL,
    "A robot MAY check 0/robots.txt if robots.txt is not found.",
)
ROBOTS_CRLF = Rule("gopher-robots-crlf", "error", f"{DRAFT}, Line Terminators", _LINE_ENDS)
PROPOSAL_LF = (
    f"; the draft's MUST, though {PROPOSAL} allows a bare LF: \"A robots.txt file consists of lines"
    ' separated by a newline (\\n) or a carriage return and a newline (\\r\\n).", and robots read'
    " either"
)
ROBOTS_EVERYWHERE = Rule(
    "gopher-robots-everywhere",
    "warning",
    PROPOSAL,
    "The following should return the contents of the site's robots.txt. echo robots.txt | nc"
    " alexschroeder.ch 70",
)
# an answer that keeps every robot off the whole server is a warning at least (report.KEPT_OFF)
ROBOTS_UNREACHABLE = Rule("gopher-robots-unreachable", "warning", f"{RFC9309} §2.3.1.4", UNREACHABLE_WORDS)
ERROR_NOT_MENU = Rule(
    "gopher-error-not-menu",
    "error",
    f"{DRAFT}, Errors",
    "When an error is encountered, the server MUST return a menu whose first item bears itemtype"
    " `3`. All other ways of signalling an error, such as redirecting to a Gopher error menu, an"
    " image, or (worst of all) an HTML page, are PROHIBITED.",
)
ROOT_NOT_MENU = Rule(
    "gopher-root-not-menu",
    "error",
    f"{DRAFT}, Basic Gopher Transactions",
    "The client MAY then send the selector string followed by CR/LF (or nothing to retrieve the"
    " root menu from the server, which MUST always be type 1).",
)
MENU_CRLF = Rule("gopher-menu-crlf", "error", f"{DRAFT}, Line Terminators", _LINE_ENDS)
MENU_NO_FULL_STOP = Rule(
    "gopher-menu-no-full-stop",
    "warning",
    f"{DRAFT}, Gopher Menus",
    "Servers MAY send the full stop; clients MUST accept it * Servers SHOULD send the full"
    " stop after menus and may OPTIONALLY send it after other files",
)
ABOUT_MISSING = Rule(
    "gopher-about-missing",
    "error",
    f"{DRAFT}, Administrator Contact File",
    "each Gopher server MUST have a file in its top-level directory with the name *about.txt*",
)
ABOUT_NOT_FILE = Rule(
    "gopher-about-not-file",
    "error",
    f"{DRAFT}, Administrator Contact File",
    "each Gopher server MUST have a file in its top-level directory with the name *about.txt*",
)
CAPS_MISSING = Rule("gopher-caps-missing", "warning", f"{DRAFT}, Capability Policy", _CAPS)
CAPS_SLASH_DIFFERS = Rule(
    "gopher-caps-slash-differs",
    "warning",
    f"{DRAFT}, Capability Policy",
    "The server should accept both `caps.txt` and `/caps.txt` as selectors, and return the"
    " same content for both.",
)
CAPS_NOT_CAPS = Rule(
    "gopher-caps-not-caps",
    "warning",
    f"{DRAFT}, Capability Policy",
    f"{_CAPS} [...] it is a plain text file [...] with the name caps.txt and beginning with the six"
    " characters"
    " CAPS[CR][LF]",
)
CAPS_CRLF = Rule("gopher-caps-crlf", "error", f"{DRAFT}, Line Terminators", _LINE_ENDS)
CAPS_VERSION = Rule(
    "gopher-caps-version-not-first",
    "warning",
    f"{DRAFT}, Capability Policy (its example)",
    "# Spec version of this caps file. This should be the first key specified # so that an"
    " incompatible later format might be detected by the client. CapsVersion=1",
)
CAPS_LONG_LINE = Rule(
    "gopher-caps-long-line",
    "warning",
    f"{DRAFT}, Capability Policy",
    f"{_CAPS} [...] it is a plain text file with no more than seventy characters per line",
)
CAPS_KEY = Rule(
    "gopher-caps-key-not-alnum",
    "warning",
    f"{DRAFT}, Capability Policy",
    f"{_CAPS} [...] Keys in capability policies are always alphanumeric (i.e., composed of letters and"
    " numbers"
    " only)",
)
TITLE_MISSING = Rule(
    "gopher-title-missing",
    "info",
    f"{DRAFT}, Titles in Gopher",
    "It is identical to a standard informational resource (itemtype `i`); the selector string,"
    " however, is set to the specific value, `TITLE`.",
)
TITLE_NOT_FIRST = Rule(
    "gopher-title-not-first",
    "info",
    f"{DRAFT}, Titles in Gopher",
    "If the `TITLE` is the *first* resource in the document, it SHALL be considered its principal `TITLE`",
)
TITLE_TYPE = Rule("gopher-title-type", "error", f"{DRAFT}, Titles in Gopher", _TITLE_SHAPE)
TITLE_SELECTOR = Rule("gopher-title-selector", "error", f"{DRAFT}, Titles in Gopher", _TITLE_SHAPE)
TITLE_PLACEHOLDER = Rule("gopher-title-placeholder", "warning", f"{DRAFT}, Titles in Gopher", _TITLE_SHAPE)
URL_FORBIDDEN_SCHEME = Rule(
    "gopher-url-forbidden-scheme",
    "error",
    f"{DRAFT}, Linking to Web Addresses",
    "In particular, the following protocols SHALL NOT be used with the URL: selector."
    " * gopher * telnet (VT100-compatible) * tn3270",
)

RULES = (
    ROBOTS_ABSENT,
    ROBOTS_SLASH_MISSING,
    ROBOTS_BARE_MISSING,
    ROBOTS_DIFFER,
    ROBOTS_TYPED,
    ROBOTS_CRLF,
    ROBOTS_EVERYWHERE,
    ROBOTS_UNREACHABLE,
    ERROR_NOT_MENU,
    ROOT_NOT_MENU,
    MENU_CRLF,
    MENU_NO_FULL_STOP,
    ABOUT_MISSING,
    ABOUT_NOT_FILE,
    CAPS_MISSING,
    CAPS_SLASH_DIFFERS,
    CAPS_NOT_CAPS,
    CAPS_CRLF,
    CAPS_VERSION,
    CAPS_LONG_LINE,
    CAPS_KEY,
    TITLE_MISSING,
    TITLE_NOT_FIRST,
    TITLE_TYPE,
    TITLE_SELECTOR,
    TITLE_PLACEHOLDER,
    URL_NO_REDIRECT,
    URL_REFRESH,
    URL_IMG_OR_SCRIPT,
    URL_OUTSIDE_REF,
    URL_FORBIDDEN_SCHEME,
)


def missing_selector(token: str) -> str:
    """A selector no server holds: the prefix and ``token`` (16 hex digits, new for each audit)."""
    return MISSING_PREFIX + token


@dataclass(frozen=True)
class GopherReplies:
    """The replies one audit collects, each to the selector it names."""

    robots: tuple[Reply, ...]  # robots.txt, /robots.txt, 0/robots.txt (GOPHER_SELECTORS)
    missing: Reply  # a selector that cannot exist
    root: Reply  # the empty selector
    about: tuple[Reply, ...]  # about.txt, and /about.txt when that is not answered
    caps: tuple[Reply, ...]  # caps.txt, /caps.txt
    url: Reply  # URL:http://example.com/
    read: str | None = None  # the selector a robot read robots.txt from (None: none)

    def every(self) -> list[Reply]:
        return [*self.robots, self.missing, self.root, *self.about, *self.caps, self.url]


def check(replies: GopherReplies) -> list[Finding]:
    """Every finding the replies give, in the order of the draft's sections."""
    robots = check_robots(replies.robots, replies.missing, replies.read)
    kept_off = {f.asked for f in robots if f.code == ROBOTS_UNREACHABLE.code}  # says it once
    out = unanswered([r for r in replies.every() if r.asked not in kept_off])
    out += robots
    out += check_missing(replies.missing)
    out += check_root(replies.root)
    out += check_about(replies.about, replies.missing)
    out += check_caps(replies.caps, replies.missing)
    out += check_url_page(replies.url)
    return out


# -- answered or not -------------------------------------------------------------------------


def answered(reply: Reply, missing: Reply | None) -> bool:
    """The selector was answered: something came, no error, and not what a missing selector gets."""
    if reply.error is not None or not reply.data.strip() or gopher_error(reply.data) is not None:
        return False
    if missing is None or missing.error is not None or missing is reply:
        return True
    return _without(reply) != _without(missing)


def _without(reply: Reply) -> bytes:
    """The reply with the selector it answers taken out (an error page may name it)."""
    asked = reply.asked.encode("utf-8", "surrogateescape")
    return reply.data.replace(asked, b"") if asked else reply.data


def policy_file(reply: Reply, missing: Reply | None) -> bytes | None:
    """The policy file a reply holds, as the robots.txt fetcher reads it (no menu, no error), or None."""
    return gopher_text(reply.data) if answered(reply, missing) else None


def _lf(text: bytes) -> bytes:
    return text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


# -- robots.txt ------------------------------------------------------------------------------


def check_robots(robots: tuple[Reply, ...], missing: Reply, read: str | None = None) -> list[Finding]:
    """The three places a robot looks (robots.txt, /robots.txt, 0/robots.txt): answered, alike, CR/LF.

    What each selector holds is what a robot reads there (``gopher_text``, as the fetcher reads
    it: no menu, no error), and ``read`` is the selector the robot took its file from (None: it
    read none), so that the audit says of robots.txt what the matrix beside it obeys.  A reply
    that a selector which cannot exist gets too is still read as the file, as a robot reads it,
    and said to be the server's answer to everything."""
    bare, slash, typed = robots
    files = [gopher_text(r.data) if r.error is None else None for r in robots]
    if read is None or any(r.error is not None for r in (bare, slash)):
        if read is None and all(r.error is None for r in robots):
            return [
                ROBOTS_ABSENT.found(
                    "there is no robots.txt: none of the selectors robots.txt, /robots.txt and 0/robots.txt"
                    " is a file, so robots may fetch everything",
                    sent=slash.data or None,
                    asked=slash.asked,
                )
            ]
        if read is None:
            silent = next(r for r in robots if r.error is not None)
            return [
                ROBOTS_UNREACHABLE.found(
                    f"the selector {silent.asked} got no answer ({(silent.error or '').partition(':')[0]})"
                    " before any robots.txt selector was answered with a file: robots must take"
                    " everything on the server as disallowed until one is",
                    asked=silent.asked,
                )
            ]
        return []
    out: list[Finding] = []
    chosen = robots[GOPHER_SELECTORS.index(read)]
    if missing.error is None and missing.data.strip() and _without(chosen) == _without(missing):
        out.append(
            ROBOTS_EVERYWHERE.found(
                f"the selector {chosen.asked} is answered with what a selector that cannot exist gets too:"
                " the server answers every selector alike, and robots read that answer as robots.txt"
                f" ({plural(len(chosen.data), 'byte')})",
                sent=chosen.data,
                asked=chosen.asked,
            )
        )
    b, s, t = files
    if s is None:
        out.append(
            ROBOTS_SLASH_MISSING.found(
                f"{'robots.txt' if b is not None else '0/robots.txt'} is answered, but /robots.txt is not:"
                " the draft puts the policy file there",
                sent=slash.data,
                asked=slash.asked,
            )
        )
    if b is None:
        out.append(
            ROBOTS_BARE_MISSING.found(
                "the selector robots.txt (no leading slash, as the 2019 proposal's robots send it first) is"
                " not answered with the policy file",
                sent=bare.data,
                asked=bare.asked,
            )
        )
    if b is not None and s is not None and _lf(b) != _lf(s):
        line = _first_difference(_lf(b), _lf(s))
        out.append(
            ROBOTS_DIFFER.found(
                f"robots.txt and /robots.txt are different files (from line {line}): robots that ask for one"
                " follow other rules than robots that ask for the other",
                sent=line_at(slash.data, line),
                line=line,
                asked=slash.asked,
            )
        )
    policy = s if s is not None else b if b is not None else t
    assert policy is not None
    if typed.error is not None:
        said = "got no answer"
    elif t is None:
        said = "is not answered with it (UMN-style robots that ask for it find nothing)"
    elif _lf(t) == _lf(policy):
        said = "is answered with the same file"
    else:
        said = "is answered with a different file"
    out.append(
        ROBOTS_TYPED.found(
            f"0/robots.txt, the selector with the item type that UMN-style servers use, {said}",
            sent=typed.data if t is None else None,
            asked=typed.asked,
        )
    )
    shown = slash if s is not None else bare if b is not None else typed
    return out + crlf(ROBOTS_CRLF, shown, shown.asked, PROPOSAL_LF)


def _first_difference(a: bytes, b: bytes) -> int:
    for n, (x, y) in enumerate(zip(a.split(b"\n"), b.split(b"\n"), strict=False), 1):
        if x != y:
            return n
    return min(a.count(b"\n"), b.count(b"\n")) + 1


# -- errors and menus --------------------------------------------------------------------------


def _lines(data: bytes) -> list[tuple[int, bytes]]:
    """The non-blank lines of a reply with their numbers, line ends off, a final lone '.' left out."""
    body = gopher_text_body(data)
    found = []
    for n, raw in enumerate(re.split(rb"\r\n|\n|\r", body), 1):
        if raw.strip():
            found.append((n, raw))
    return found


def _menu_line(raw: bytes) -> bool:
    return raw.count(b"\t") >= 3


def check_missing(missing: Reply) -> list[Finding]:
    """A selector that cannot exist must be answered with a menu whose first item is type 3."""
    if missing.error is not None:
        return []
    lines = _lines(missing.data)
    first = lines[0][1] if lines else b""
    out = []
    if not (first[:1] == b"3" and _menu_line(first)):
        if not lines:
            shape = "nothing at all"
        elif first.lstrip()[:1] == b"<":
            shape = "an HTML page"
        elif _menu_line(first):
            shape = f"a menu whose first item is type {repr_text(first[:1].decode('utf-8', 'replace'))}"
        else:
            shape = "plain text"
        out.append(
            ERROR_NOT_MENU.found(
                f"a selector that does not exist is answered with {shape}, not a menu whose first item is"
                " type 3",
                sent=missing.data,
                asked=missing.asked,
            )
        )
    if lines and _menu_line(first):
        out += crlf(MENU_CRLF, missing, "the error menu")
    return out


def crlf(rule: Rule, reply: Reply, what: str, note: str = "") -> list[Finding]:
    """``rule``'s finding when a line of ``reply`` ends in a bare LF or CR, not CR/LF (``note``
    added to the message)."""
    count, first = bare_line_ends(reply.data)
    if first is None:
        return []
    return [
        rule.found(
            f"{what} ends {plural(count, 'line')} with a bare LF or CR instead of CR/LF (the first is line"
            f" {first}){note}",
            sent=line_at(reply.data, first),
            line=first,
            asked=reply.asked,
        )
    ]


def check_root(root: Reply) -> list[Finding]:
    """The root menu: a menu, CR/LF, a final full stop (or not), its TITLE, its URL: links."""
    if root.error is not None:
        return []
    lines = _lines(root.data)
    out = []
    text = [(n, raw) for n, raw in lines if b"\t" not in raw]
    if text:
        n, raw = text[0]
        out.append(
            ROOT_NOT_MENU.found(
                f"the root menu holds {plural(len(text), 'line')} with no TAB, which no menu item is"
                f" (the first is line {n})",
                sent=raw,
                line=n,
                asked=root.asked,
            )
        )
    out += crlf(MENU_CRLF, root, "the root menu")
    end = root.data.rstrip(b"\r\n")
    if end != b"." and not end.endswith((b"\n.", b"\r.")):
        out.append(
            MENU_NO_FULL_STOP.found(
                "the root menu does not end with a line holding a full stop: the draft says servers MAY send"
                " one and SHOULD after menus",
                sent=root.data[-80:],
                asked=root.asked,
            )
        )
    out += check_title(root, lines)
    out += check_url_links(root, lines)
    return out


def check_title(root: Reply, lines: list[tuple[int, bytes]]) -> list[Finding]:
    """The root menu's TITLE line, in the draft's shape: ``i<title>TAB TITLE TAB example.com TAB 0``."""
    items = [(n, raw, raw[1:].split(b"\t")) for n, raw in lines]
    exact = [item for item in items if len(item[2]) > 1 and item[2][1] == b"TITLE"]
    if not exact:
        near = [
            (n, raw, fields[1])
            for n, raw, fields in items
            if raw[:1] == b"i" and len(fields) > 1 and _nearly_title(fields[1])
        ]
        if near:
            n, raw, selector = near[0]
            return [
                TITLE_SELECTOR.found(
                    f"the root menu's title line has the selector {repr_text(_text(selector))}, not TITLE",
                    sent=raw,
                    line=n,
                    asked=root.asked,
                )
            ]
        return [
            TITLE_MISSING.found(
                "the root menu has no TITLE line (an i item with the selector TITLE), which clients show as"
                " its title",
                asked=root.asked,
            )
        ]
    n, raw, fields = exact[0]
    out = []
    if n != items[0][0]:
        out.append(
            TITLE_NOT_FIRST.found(
                f"the root menu's TITLE is on line {n}, not the first: clients take only a first TITLE for"
                " the menu's own",
                sent=raw,
                line=n,
                asked=root.asked,
            )
        )
    if raw[:1] != b"i":
        out.append(
            TITLE_TYPE.found(
                f"the TITLE line is of type {repr_text(_text(raw[:1]))}, not i",
                sent=raw,
                line=n,
                asked=root.asked,
            )
        )
    if len(fields) < 4:
        out.append(
            TITLE_PLACEHOLDER.found(
                "the TITLE line has no host and port fields, where the placeholders example.com and 0 belong",
                sent=raw,
                line=n,
                asked=root.asked,
            )
        )
    elif fields[2].strip() != b"example.com" or fields[3].strip() != b"0":
        host, port = repr_text(_text(fields[2].strip())), repr_text(_text(fields[3].strip()))
        out.append(
            TITLE_PLACEHOLDER.found(
                f"the TITLE line names host {host} and port {port}, not the placeholders example.com and 0",
                sent=raw,
                line=n,
                asked=root.asked,
            )
        )
    return out


def _nearly_title(selector: bytes) -> bool:
    """pygopherd's '/TITLE' (and '/dir/TITLE'), or TITLE in another case or with spaces."""
    return selector.rsplit(b"/", 1)[-1] == b"TITLE" or selector.strip().upper() == b"TITLE"


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", "surrogateescape")


_FORBIDDEN = (b"url:gopher:", b"url:telnet:", b"url:tn3270:")


def check_url_links(root: Reply, lines: list[tuple[int, bytes]]) -> list[Finding]:
    """``URL:`` links in the root menu to the protocols the draft forbids there."""
    bad = []
    for n, raw in lines:
        fields = raw[1:].split(b"\t")
        if (
            raw[:1] not in (b"i", b"3")
            and len(fields) > 1
            and fields[1].strip().lower().startswith(_FORBIDDEN)
        ):
            bad.append((n, raw))
    if not bad:
        return []
    n, raw = bad[0]
    return [
        URL_FORBIDDEN_SCHEME.found(
            f"the root menu links {plural(len(bad), 'time')} with URL: to gopher, telnet or tn3270 (the"
            f" first on line {n}), which links of their own item types should reach",
            sent=raw,
            line=n,
            asked=root.asked,
        )
    ]


# -- about.txt and caps.txt --------------------------------------------------------------------


def is_file(reply: Reply, missing: Reply | None) -> bool:
    """The selector was answered with a file: answered, and no menu (a directory) either."""
    return answered(reply, missing) and gopher_text(reply.data) is not None


def check_about(about: tuple[Reply, ...], missing: Reply) -> list[Finding]:
    """about.txt: the draft asks for a *file* in the top-level directory, not a menu."""
    if any(r.error is not None for r in about) or any(is_file(r, missing) for r in about):
        return []
    menus = [r for r in about if answered(r, missing)]
    if menus:
        return [
            ABOUT_NOT_FILE.found(
                f"{' and '.join(r.asked for r in menus)} {'is' if len(menus) == 1 else 'are'} answered with a"
                " menu (a directory), not a file: the administrator contact file must be a file",
                sent=menus[0].data,
                asked=menus[0].asked,
            )
        ]
    last = about[-1]
    return [
        ABOUT_MISSING.found(
            f"neither {' nor '.join(r.asked for r in about)} is answered: the server has no administrator"
            " contact file",
            sent=last.data,
            asked=last.asked,
        )
    ]


_CAPS_START = re.compile(rb"CAPS(\r\n|\n|\r|$)")
_KEY_LINE = re.compile(r"\s*[^#\s][^=]*=")


def check_caps(caps: tuple[Reply, ...], missing: Reply) -> list[Finding]:
    """caps.txt: at both selectors and the same; CAPS first; CR/LF; CapsVersion first; short lines; keys."""
    if any(r.error is not None for r in caps):
        return []
    bare, slash = caps
    have = [r for r in caps if answered(r, missing)]
    if not have:
        return [
            CAPS_MISSING.found(
                "neither caps.txt nor /caps.txt is answered: the server has no capability policy",
                sent=slash.data,
                asked=slash.asked,
            )
        ]
    out = []
    if len(have) == 1:
        gone = slash if have[0] is bare else bare
        out.append(
            CAPS_SLASH_DIFFERS.found(
                f"{have[0].asked} is answered, {gone.asked} is not", sent=gone.data, asked=gone.asked
            )
        )
    elif bare.data != slash.data:
        line = _first_difference(bare.data.replace(b"\r\n", b"\n"), slash.data.replace(b"\r\n", b"\n"))
        out.append(
            CAPS_SLASH_DIFFERS.found(
                f"caps.txt and /caps.txt are answered with different content (from line {line})",
                sent=line_at(slash.data, line),
                line=line,
                asked=slash.asked,
            )
        )
    reply = have[0]
    out += crlf(CAPS_CRLF, reply, reply.asked)
    body = gopher_text_body(reply.data)
    if not _CAPS_START.match(body):
        out.append(
            CAPS_NOT_CAPS.found(
                f"{reply.asked} does not begin with the line CAPS", sent=body, asked=reply.asked
            )
        )
        return out
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode("latin-1")
    lines = re.split(r"\r\n|\n|\r", text)
    long = [(n, text_line) for n, text_line in enumerate(lines, 1) if len(text_line) > CAPS_LINE_MAX]
    if long:
        n, longest = long[0]
        out.append(
            CAPS_LONG_LINE.found(
                f"{plural(len(long), 'line')} of {reply.asked} longer than 70 characters (line {n}:"
                f" {len(longest)})",
                sent=excerpt(longest.encode()),
                line=n,
                asked=reply.asked,
            )
        )
    keys = [
        (n, text_line.split("=", 1)[0].strip(" \t"))
        for n, text_line in enumerate(lines, 1)
        if _KEY_LINE.match(text_line)
    ]
    if not keys or keys[0][1] != "CapsVersion":
        said = (
            f"the first key is {repr_text(keys[0][1])} (line {keys[0][0]})"
            if keys
            else "it holds no key at all"
        )
        has = any(k == "CapsVersion" for _, k in keys)
        out.append(
            CAPS_VERSION.found(
                f"{said}, not CapsVersion" + ("" if has or not keys else "; there is no CapsVersion key"),
                line=keys[0][0] if keys else None,
                sent=lines[keys[0][0] - 1] if keys else None,
                asked=reply.asked,
            )
        )
    bad = [(n, k) for n, k in keys if not re.fullmatch(r"[A-Za-z0-9]+", k)]
    if bad:
        n, k = bad[0]
        out.append(
            CAPS_KEY.found(
                f"{plural(len(bad), 'key')} of {reply.asked} not letters and digits only, so clients ignore"
                f" the line (line {n}: {repr_text(k)})",
                sent=excerpt(lines[n - 1].encode()),
                line=n,
                asked=reply.asked,
            )
        )
    return out
