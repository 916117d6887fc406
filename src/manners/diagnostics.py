"""What a file says that a reader may not mean: the findings behind `robots.diagnostics`.

Each finding has a stable code, so scripts and `manners lint` can rely on it.  The
:class:`Diagnostic` is defined here, and :mod:`manners.robots` names it for the engine: this
module reads the engine's line table and imports nothing of ``robots``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from ._core import FIELD_SPELLINGS, MAX_LINE_BYTES, rate, usage_malformed
from .gopher_reply import gopher_error, gopher_text
from .profiles import Profile
from .terminal import safe

if TYPE_CHECKING:
    from ._core import RobotsTxt


class Diagnostic(NamedTuple):
    """A finding: the line it is on (None for the whole file), how grave it is, its stable code
    and what it says."""

    line: int | None
    severity: str  # "error", "warning" or "info"
    code: str
    message: str


_CANONICAL = {
    "user-agent": "User-agent",
    "virtual-agent": "Virtual-agent",
    "allow": "Allow",
    "disallow": "Disallow",
    "sitemap": "Sitemap",
    "crawl-delay": "Crawl-delay",
    "request-rate": "Request-rate",
    "check": "Check",
    "content-usage": "Content-Usage",
    "content-signal": "Content-Signal",
}
_KNOWN_ELSEWHERE = {"host", "clean-param", "noindex", "visit-time", "comment"}
_NUMBER = re.compile(r"\d+(\.\d+)?$")
_ABSOLUTE_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#\s]")  # a scheme, then an authority


# The words the errors rest on (a file that is no robots.txt at all): code -> (document, words).
ACCESS_WORDS = (  # RFC 9309 §2.3, shared with manners site's rules
    'The rules MUST be accessible in a file named "/robots.txt" (all lowercase) in the top-level path of'
    " the service. The file MUST be UTF-8 encoded (as defined in [RFC3629]) and Internet Media Type"
    ' "text/plain" (as defined in [RFC2046]).'
)
_POLICY_FILE = "The policy file, if it exists, MUST be accessible via Gopher on the local address /robots.txt"
ERROR_WORDS = {
    "html": ("RFC 9309 §2.3", ACCESS_WORDS),
    "binary": ("RFC 9309 §2.3", ACCESS_WORDS),
    "utf-16": ("RFC 9309 §2.3", ACCESS_WORDS),
    "gopher-error": ("the Gopher draft, Robot Access Restrictions Policy", _POLICY_FILE),
    "gopher-menu": ("the Gopher draft, Robot Access Restrictions Policy", _POLICY_FILE),
}


def rests_on(d: Diagnostic) -> tuple[str, str] | None:
    """The document and the very words an error rests on (None for a warning or information),
    so that every error names them, as ``manners site``'s findings do."""
    return ERROR_WORDS.get(d.code) if d.severity == "error" else None


def quoted(text: str) -> str:
    """``text`` from the file, quoted for a message: every control character and every byte
    that is not UTF-8 escaped as the terminal shows it (``\\xff``), so that a message is safe
    to print and reads the same on a terminal and in JSON (``repr`` would say ``\\udcff``)."""
    return "'" + safe(text) + "'"


def said(where: str, d: Diagnostic) -> str:
    """A finding in the words of ``manners lint`` (``robots.txt:12: warning: code: message``),
    which every command uses when it tells of a finding before its verdicts."""
    place = f"{where}:{d.line}" if d.line is not None else where
    return f"{place}: {d.severity}: {d.code}: {d.message}"


def whole_file(robots: RobotsTxt, body: bytes | None = None) -> list[Diagnostic]:
    """The findings about the file as a whole, which every verdict depends on: it was cut at
    the size cap, or it is no robots.txt at all (an HTML page, a binary file, a Gopher
    server's error reply or menu).  ``check``, ``explain`` and ``fetch`` say these first, so
    that "everything is allowed" is never said of a file nobody read."""
    _, truncated, _, _, _, _, binary, html, _ = robots._table()
    cut, not_robots = _whole_file(truncated, binary, html)
    if body is not None and (wide := utf16(body)) is not None:
        return [wide]
    if not_robots is None and body is not None:
        not_robots = gopher_reply(body)
    return [not_robots] if not_robots is not None else cut


def lint(robots: RobotsTxt, body: bytes) -> list[Diagnostic]:
    """Every finding ``manners lint`` reports: a Gopher reply that says "no such file" is one
    error, as the fetcher reads it (no robots.txt), not a warning per line of it."""
    reply = utf16(body) or gopher_reply(body)
    return [reply] if reply is not None else robots.diagnostics


def utf16(body: bytes) -> Diagnostic | None:
    """An error when ``body`` is UTF-16 (a byte order mark FF FE or FE FF, or every other byte
    NUL in its first line's worth): RFC 9309 §2.3 says "The file MUST be UTF-8 encoded", and a
    UTF-16 file is not a binary file, which is what the engine alone would call it."""
    head = body[:200]
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        order = "little-endian" if head[:2] == b"\xff\xfe" else "big-endian"
    elif len(head) >= 8 and head[1::2].count(0) == len(head[1::2]) and 0 not in head[0::2]:
        order = "little-endian"
    elif len(head) >= 8 and head[0::2].count(0) == len(head[0::2]) and 0 not in head[1::2]:
        order = "big-endian"
    else:
        return None
    what = (
        f"the file is UTF-16 ({order}), which a robots.txt must not be: RFC 9309 says 'The file MUST be"
        " UTF-8 encoded'; robots read no rules in it (save it as UTF-8)"
    )
    return Diagnostic(1, "error", "utf-16", what)


def gopher_reply(body: bytes) -> Diagnostic | None:
    """An error when ``body`` is what a Gopher server sends for a missing file (a type-3 error
    line or menu, gophernicus' plain ``Error:`` page, or a menu where a file was asked for):
    the fetcher reads each as no robots.txt (:func:`manners.gopher_reply.gopher_text`)."""

    if not body.strip() or gopher_text(body) is not None:
        return None
    error = gopher_error(body)
    if error is not None:
        what = f"a Gopher server's error reply, not a robots.txt (robots read it as none): {quoted(error)}"
        return Diagnostic(1, "error", "gopher-error", what)
    return Diagnostic(1, "error", "gopher-menu", "a Gopher menu, not a robots.txt (robots read it as none)")


def _whole_file(
    truncated: tuple[int, int] | None, binary: bool, html: bool
) -> tuple[list[Diagnostic], Diagnostic | None]:
    """From the engine's table: the cut at the size cap, and a file that is not a robots.txt."""
    cut = []
    if truncated is not None:
        at, line = truncated
        read = f" (up to line {line - 1:,})" if line > 1 else ""
        cut.append(
            Diagnostic(
                line,
                "warning",
                "truncated",
                f"only the first {at:,} bytes are read{read}; the rest is ignored",
            )
        )
    if binary:
        return cut, Diagnostic(1, "error", "binary", "this looks like a binary file, not a robots.txt")
    if html:
        return cut, Diagnostic(1, "error", "html", "an HTML page, not a robots.txt (a soft 404?)")
    return cut, None


def diagnose(robots: RobotsTxt, profile: Profile) -> list[Diagnostic]:
    """Every finding, read off the engine's line table (the only line grammar)."""
    rows, truncated, invalid_utf8, bom, long_lines, control_lines, binary, html, n_lines = robots._table()
    out: list[Diagnostic] = []

    def add(line: int | None, severity: str, code: str, message: str) -> None:
        out.append(Diagnostic(line, severity, code, message))

    cut, not_robots = _whole_file(truncated, binary, html)
    if not_robots is not None:  # a file that is not a robots.txt at all is one finding, not one per line
        return [not_robots]
    out += cut
    if invalid_utf8:
        add(
            None,
            "warning",
            "non-utf8",
            "the file is not valid UTF-8; undecodable bytes are matched as %-escapes",
        )
    if bom:
        add(1, "info", "bom", "a UTF-8 byte order mark starts the file; it is skipped")
    for n in long_lines:
        add(
            n,
            "warning",
            "long-line",
            f"line is longer than {MAX_LINE_BYTES:,} bytes; the rest of it is ignored",
        )

    control = set(control_lines)
    # control characters on lines the table does not keep (comments, blank-looking lines)
    elsewhere = sorted(control - {row[0] for row in rows}, reverse=True)

    def control_before(number: int) -> None:
        while elsewhere and elsewhere[-1] < number:
            add(
                elsewhere.pop(),
                "warning",
                "control-character",
                "control characters or undecodable bytes in the line",
            )

    seen_agent = False
    seen_rule_after_agent = False
    group_rules: dict[str, tuple[str, int]] = {}  # value -> (allow/disallow, line), this group's
    group_prefs: _Stated = {}  # the preferences this group states, by field, path and category
    usage_after: int | None = (
        None  # a usage line since the last User-agent line (for preferences, a group ends)
    )
    star_record_at: int | None = None
    for number, kind, key, value, missing_colon in rows:
        control_before(number)
        if number in control:
            add(number, "warning", "control-character", "control characters or undecodable bytes in the line")
        if kind == "unparsable":
            add(number, "warning", "unparsable", f"not a 'field: value' line: {quoted(value[:60])}")
            continue
        low = key.lower()
        if missing_colon:
            add(
                number, "warning", "missing-colon", f"'{key} {value}' lacks a colon; read as '{key}: {value}'"
            )
        if kind in _CANONICAL and low != _CANONICAL[kind].lower() and low not in FIELD_SPELLINGS:
            add(number, "warning", "typo", f"{quoted(key)} is read as {_CANONICAL[kind]}")
        elif kind in FIELD_SPELLINGS and low != kind:
            add(number, "info", "typo", f"{quoted(key)} is read as {_CANONICAL[kind]}")

        if kind == "virtual-agent" and not profile.virtual_agents:
            add(
                number,
                "info",
                "virtual-agent",
                f"Virtual-agent lines mean nothing to a {profile.name} reader",
            )
        elif kind in ("user-agent", "virtual-agent"):
            if usage_after is not None:  # the attachment draft's grammar: a usage line ends a group
                if not seen_rule_after_agent and profile.usage_preferences:
                    add(number, "warning", "usage-splits-group", _split_group(usage_after, value))
                group_prefs = {}
                usage_after = None
            if seen_rule_after_agent or not seen_agent:
                group_rules = {}
                group_prefs = {}
                if star_record_at is not None and profile.name == "gopher":
                    add(
                        number,
                        "warning",
                        "after-star",
                        f"this record follows 'User-agent: *' (line {star_record_at}): Gopher robots"
                        " read it (the 2019 proposal and RFC 9309 read every record, and so does"
                        " manners), though the Gopher draft says anything below 'User-agent: *' will be"
                        " ignored; list 'User-agent: *' last so that every robot reads the file alike",
                    )
                seen_rule_after_agent = False
            seen_agent = True
            if not value:
                add(number, "warning", "empty-agent", f"{_CANONICAL[kind]} has no value")
            elif value.strip() == "*":
                if kind == "user-agent" and star_record_at is None:
                    star_record_at = number
            else:
                token = re.match(r"[A-Za-z_-]*", value)
                if token is None or token[0] != value:
                    shown = quoted(token[0]) if token and token[0] else "nothing"
                    add(
                        number,
                        "info",
                        "agent-token",
                        f"{quoted(value)} is matched as the product token {shown}",
                    )
        elif kind in ("allow", "disallow"):
            if not seen_agent:
                meaning = {
                    "ignored": "ignored",
                    "star": "read as a 'User-agent: *' group",
                    "everyone": "applied to every robot",
                }[profile.preamble]
                add(number, "warning", "rule-outside-group", f"rule before any User-agent line: {meaning}")
            seen_rule_after_agent = seen_agent
            if value and (kind == "disallow" or profile.allow):
                for d in _shadowing(kind, value, number, group_rules, profile):
                    add(*d)
            if kind == "allow" and not profile.allow:
                add(
                    number,
                    "warning",
                    "allow-unsupported",
                    f"Allow is not part of the {profile.name} standard",
                )
            if value and profile.target == "rfc3986" and value[0] not in "/*":
                add(
                    number,
                    "warning",
                    "pattern-start",
                    f"pattern {quoted(value)} does not start with '/' or '*'",
                )
            if "$" in value[:-1] or (value.endswith("$") and not profile.anchor):
                where = "a literal character" if profile.anchor else f"literal to a {profile.name} reader"
                if profile.anchor:
                    where += " unless it ends the pattern"
                add(number, "info", "dollar", f"'$' in {quoted(value)} is {where}")
            if "*" in value and not profile.wildcards:
                add(
                    number,
                    "info",
                    "star-literal",
                    f"'*' in {quoted(value)} is literal to a {profile.name} reader",
                )
        elif kind == "sitemap":
            if not _ABSOLUTE_URL.match(value):
                add(
                    number,
                    "warning",
                    "sitemap-url",
                    f"Sitemap {quoted(value)} is not a full URL, as RFC 9309 asks: robots cannot use it",
                )
        elif kind == "crawl-delay":
            if not _NUMBER.match(value):
                add(
                    number,
                    "warning",
                    "bad-crawl-delay",
                    f"Crawl-delay {quoted(value)} is not a number of seconds",
                )
        elif kind == "request-rate":
            if rate(value) is None:
                add(
                    number,
                    "warning",
                    "bad-request-rate",
                    f"Request-rate {quoted(value)} is not 'requests/seconds'",
                )
        elif kind == "check":
            if not _NUMBER.match(value):
                add(number, "warning", "bad-check", f"Check {quoted(value)} is not a number of seconds")
        elif kind in ("content-usage", "content-signal"):
            for d in _usage_line(kind, value, number, profile, seen_agent):
                add(*d)
            if profile.usage_preferences and seen_agent:
                for d in _usage_repeats(kind, value, number, group_prefs):
                    add(*d)
            usage_after = number if seen_agent else None
        elif kind == "unknown":
            severity = "info" if low in _KNOWN_ELSEWHERE else "warning"
            add(number, severity, "unknown-field", f"unknown field {quoted(key)} is ignored")
    control_before(n_lines + 1)
    if profile.virtual_agents and profile.target != "selector":
        out += _gemini_readings(robots)
    return out


def _split_group(usage_line: int, agent: str) -> str:
    """Why a User-agent line right after a usage line reads two ways: RFC 9309 knows no usage
    line, so the run of User-agent lines goes on; the attachment draft (draft-ietf-aipref-attach,
    "Robots Exclusion Protocol Content-Usage Rule") makes it a rule, which ends the group."""
    return (
        f"this User-agent line follows a usage line (line {usage_line}) with no Allow or Disallow"
        f" between: RFC 9309 readers (and manners' verdicts) read one group for the agents above and"
        f" {quoted(agent)}, but readers of the attachment draft end the group at line {usage_line}, so"
        f" they apply the rules below to {quoted(agent)} alone and line {usage_line} to the agents"
        " above alone; put usage lines after a group's Allow and Disallow lines"
    )


def _usage_line(
    kind: str, value: str, line: int, profile: Profile, in_group: bool
) -> list[tuple[int, str, str, str]]:
    """A Content-Usage or Content-Signal line: a rule of a group (draft-ietf-aipref-attach,
    "Robots Exclusion Protocol Content-Usage Rule"), read under rfc9309 and google, and a line
    outside the reading of every other profile (information, as a Virtual-agent line is on the
    Web).  Its statement must be an RFC 9651 dictionary, or every category is unknown
    (draft-ietf-aipref-vocab, "Processing Algorithm")."""
    field = _CANONICAL[kind]
    if not profile.usage_preferences:
        return [(line, "info", kind, f"{field} lines mean nothing to a {profile.name} reader")]
    out = []
    if not in_group:
        ignored = f"{field} line before any User-agent line: ignored"
        out.append((line, "warning", "rule-outside-group", ignored))
    bad = usage_malformed(value)
    if bad is not None:
        at, why = bad
        out.append((
            line,
            "warning",
            f"bad-{kind}",
            f"{field} {quoted(value)}: the preference is no structured-field dictionary ({why}, at"
            f" byte {at}), so every category is unknown",
        ))  # fmt: skip
    return out


# (field, path or None, category) -> (value, line) of the first line of a group stating it
_Stated = dict[tuple[str, str | None, str], tuple[str, int]]

#: Content-Signal's categories read as the Content-Usage vocabulary's, to find the two fields
#: saying opposite things.  Neither draft defines this mapping: it is manners' reading of the
#: categories' definitions (contentsignals "Usage Category Labels", vocab "Vocabulary
#: Definition").
SIGNAL_AS_USAGE = {"ai-train": "train-ai", "search": "search", "ai-input": "ai-use"}
_USAGE_AS_SIGNAL = {usage: signal for signal, usage in SIGNAL_AS_USAGE.items()}
_OTHER = {"content-usage": "content-signal", "content-signal": "content-usage"}
_STATEMENTS: dict[tuple[str, str], list[tuple[str, str]]] = {}


def _stated(kind: str, statement: str) -> list[tuple[str, str]]:
    """The categories a statement says yes or no to, as the engine reads it (the one reader of
    RFC 9651 dictionaries): ``[("train-ai", "no"), ...]``."""
    key = (kind, statement)
    found = _STATEMENTS.get(key)
    if found is None:
        from ._core import parse

        usage = parse(f"User-agent: *\n{_CANONICAL[kind]}: {statement}\n").usage("/")
        prefs = usage.categories if kind == "content-usage" else usage.signals
        found = [(p.category, p.value) for p in prefs if p.value != "unstated"]
        if len(_STATEMENTS) < 4096:
            _STATEMENTS[key] = found
    return found


def usage_statement(kind: str, value: str) -> tuple[str | None, list[tuple[str, str]]] | None:
    """A Content-Usage or Content-Signal line's value as the engine reads it: its path (None:
    every path) and the categories it says yes or no to; None when the statement is no
    dictionary, so that every category is unknown (shared by ``lint`` and ``explain``)."""
    if usage_malformed(value) is not None:
        return None
    path: str | None = None
    statement = value
    if value.startswith("/"):  # the path ends at the first SP or HTAB (attach, "Processing ...")
        cut = re.search(r"[ \t]", value)
        path, statement = (
            (value, "") if cut is None else (value[: cut.start()], value[cut.start() :].lstrip(" \t"))
        )
    return path, _stated(kind, statement)


def _written(kind: str, category: str, value: str) -> str:
    """``train-ai=n``: a preference in its field's words (Content-Usage's y and n)."""
    return f"{category}={value[0] if kind == 'content-usage' else value}"


def _usage_repeats(kind: str, value: str, line: int, seen: _Stated) -> list[tuple[int, str, str, str]]:
    """A category stated again for the same path in one group: ``duplicate`` (information when
    it says the same, a warning when it says otherwise: attach, "Content-Usage Rule Semantics",
    combines them as vocab's "Combining Preferences" does, and any no wins); and a
    Content-Usage category and a Content-Signal one that manners reads as the same saying
    opposite things for the same path: ``contradictory``.  Each on the later line."""
    read = usage_statement(kind, value)
    if read is None:  # every category unknown: bad-content-usage says why
        return []
    path, stated = read
    field, other = _CANONICAL[kind], _CANONICAL[_OTHER[kind]]
    where = f"for {quoted(path)}" if path is not None else "for every path"
    out = []
    for category, said in stated:
        shown = _written(kind, category, said)
        earlier = seen.get((kind, path, category))
        if earlier is None:
            seen[(kind, path, category)] = (said, line)
        elif earlier[0] == said:
            message = f"{field} {shown} {where} repeats line {earlier[1]}"
            out.append((line, "info", "duplicate", message))
        else:
            message = (
                f"{field} {shown} {where} conflicts with {_written(kind, category, earlier[0])} on line"
                f" {earlier[1]} in the same group: the two combine and 'no' wins (draft-ietf-aipref-vocab,"
                " Combining Preferences); say it once"
            )
            out.append((line, "warning", "duplicate", message))
        other_label = (SIGNAL_AS_USAGE if kind == "content-signal" else _USAGE_AS_SIGNAL).get(category)
        opposite = seen.get((_OTHER[kind], path, other_label or ""))
        if opposite is not None and opposite[0] != said:
            theirs = _written(_OTHER[kind], other_label or "", opposite[0])
            message = (
                f"{field} {shown} {where} contradicts {other} {theirs} on line {opposite[1]} in the"
                " same group (manners reads Content-Signal's ai-train as"
                " Content-Usage's train-ai, search as search and ai-input as ai-use; neither draft"
                " defines that mapping)"
            )
            out.append((line, "warning", "contradictory", message))
    return out


def _gemini_readings(robots: RobotsTxt) -> list[Diagnostic]:
    """Where a robot acting in a role reads the file differently under the two Gemini readings:
    every applicable group together (gemini) or only the most targeted one (gemini-targeted)."""
    from .profiles import GEMINI, GEMINI_TARGETED

    cautious, targeted = robots.reread(GEMINI), robots.reread(GEMINI_TARGETED)
    roles: dict[str, int] = {}  # role -> line of the first group naming it
    for g in cautious.groups():
        for line, value in g.agents + g.virtual:
            name = value.split(None, 1)[0].lower() if value.strip() else ""
            is_role = (line, value) in g.virtual or name in VIRTUAL_AGENTS
            if is_role and name not in roles and name != "*":
                roles[name] = line
    if not roles:
        return []
    targets = dict.fromkeys(["/"])
    for rule in cautious.lines():
        if rule.kind in ("allow", "disallow") and rule.value:
            targets[rule.value.replace("*", "x").removesuffix("$") or "/"] = None
    out = []
    for role, line in roles.items():
        for target in targets:
            url = "gemini://host" + (target if target.startswith("/") else "/" + target)
            a, b = cautious.decide(url, "*", (role,)), targeted.decide(url, "*", (role,))
            if a.allowed != b.allowed:
                why = f"line {a.line}" if a.line else a.reason
                may = ("may" if b.allowed else "may not", "may" if a.allowed else "may not")
                message = (
                    f"a robot acting as {role} {may[0]} fetch {quoted(target)} if only the most targeted"
                    f" group decides (gemini-targeted), but {may[1]} when it also obeys every group that"
                    f" applies (gemini, {why}); say what you mean in the {role} group"
                )
                out.append(Diagnostic(line, "warning", "gemini-readings", message))
                break
    return out


VIRTUAL_AGENTS = ("archiver", "indexer", "researcher", "webproxy")  # the companion spec's


def _shadowing(
    kind: str, value: str, line: int, seen: dict[str, tuple[str, int]], profile: Profile
) -> list[tuple[int, str, str, str]]:
    """Rules in one group that can never decide: a repeat, a tie Allow always wins, or a
    pattern whose spelling with a trailing ``*`` (the same paths, and longer) is there too."""
    out = []
    earlier = seen.get(value)
    if earlier is not None:
        if earlier[0] == kind:
            out.append(
                (line, "info", "duplicate", f"'{kind.capitalize()}: {value}' repeats line {earlier[1]}")
            )
        elif profile.records != "1994":
            loser = earlier[1] if earlier[0] == "disallow" else line
            why = f"'Disallow: {value}' never decides: 'Allow: {value}' matches the same paths and wins ties"
            out.append((loser, "warning", "shadowed", why))
    else:
        seen[value] = (kind, line)
    if profile.wildcards and profile.records != "1994" and not (profile.anchor and value.endswith("$")):
        short, long_ = (value[:-1], value) if value.endswith("*") else (value, value + "*")
        if short in seen and long_ in seen and line in (seen[short][1], seen[long_][1]):
            (short_kind, short_line), (long_kind, long_line) = seen[short], seen[long_]
            out.append((
                short_line,
                "warning" if short_kind != long_kind else "info",
                "shadowed",
                f"'{short_kind.capitalize()}: {short}' never decides: '{long_kind.capitalize()}: {long_}'"
                f" (line {long_line}) matches the same paths and is longer",
            ))  # fmt: skip
    return out
