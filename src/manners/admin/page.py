"""The HTML of ``manners serve``: one page, a form and its answer, written by hand.

No template engine: every value that came from a file, a form or a server goes through
:func:`h` (the terminal's :func:`manners.terminal.safe`, so control and bidi characters and
undecodable bytes show as escapes, then :func:`html.escape`), and the rest is this
module's own markup.  The one exception is what the admin edits: a textarea holds its
text as it is, HTML-escaped only (:func:`textarea`), so that it is posted back unchanged.
The page reads without JavaScript: each cell of the matrix links to its deciding line
(``#L12``) and CSS ``:target`` highlights it; the few lines of :data:`JS` only add a hover
that lights the cells a line decides.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import quote_from_bytes

from ..preferences import usage_words
from ..profiles import PROFILES
from ..readers import READERS, table_cell
from ..robots import Decision, Diagnostic, Usage
from ..terminal import safe

if TYPE_CHECKING:
    from .answer import Answer, Ask, Reading, Shown
    from .diff import GroupChange
    from .site import Column, Row, SiteReport

MAX_SAMPLE = 50  # pages of the live server a sample crawl may fetch (manners site's default)
MAX_LINES = 50_000  # lines of a file shown; the findings are all listed whatever the length
MAX_LINK = 8000  # characters of a GET address offered as the answer's link (servers refuse longer)
SEVERITIES = ("error", "warning", "info")


def h(value: object) -> str:
    """``value`` as HTML text: unsafe characters as escapes (``\\x1b``), then ``<&>"'`` escaped."""
    return html.escape(safe(str(value)), quote=True)


def document(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{h(title)}</title><link rel="stylesheet" href="/page.css">'
        '<script src="/page.js" defer></script></head>\n<body>\n'
        '<header><h1><a href="/">manners</a></h1><p>what every robot reads in a robots.txt: paste a draft'
        " or fetch the live file</p></header>\n"
        f"{body}\n</body></html>\n"
    )


# -- the form ----------------------------------------------------------------------------


def form_page(ask: Ask) -> str:
    return document("manners", form(ask))


def error_page(status: int, sentence: str, ask: Ask | None) -> str:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    alert = (
        f'<section id="error" class="error" role="alert"><h2>{status} {h(phrase)}</h2>'
        f"<p>{h(sentence)}</p></section>\n"
    )
    return document(f"manners: {phrase}", alert + (form(ask) if ask is not None else ""))


def form(ask: Ask) -> str:
    """The one form, filled in with what was asked: a draft, a live URL, the robots, the URLs."""
    options = "".join(
        f'<option value="{h(name)}"{" selected" if ask.profile == name else ""}>{h(name)}</option>'
        for name in PROFILES
    )
    agents, urls = "\n".join(ask.agents), "\n".join(ask.urls)
    return f"""<form id="ask" method="post" action="/">
<div class="field wide"><label for="draft">Draft robots.txt</label>
<textarea id="draft" name="draft" rows="14" spellcheck="false">{textarea(ask.draft)}</textarea>
{kept_field(ask.draft)}</div>
<div class="field"><label for="live">Live URL (any URL on the server: http, https, gemini, gopher)</label>
<input id="live" name="live" inputmode="url" value="{h(ask.live)}" placeholder="https://example.org/"></div>
<div class="field"><label for="agent">Robots (a product token a line, such as mybot)</label>
<textarea id="agent" name="agent" rows="2" spellcheck="false">{textarea(agents)}</textarea></div>
<div class="field"><label for="role">Roles (indexer, archiver, researcher, webproxy, ...)</label>
<input id="role" name="role" value="{h(", ".join(ask.roles))}"></div>
<div class="field"><label for="urls">URLs or paths, one a line (none: each rule's own path)</label>
<textarea id="urls" name="urls" rows="5" spellcheck="false">{textarea(urls)}</textarea></div>
<div class="field"><label for="profile">Profile for the findings and groups</label>
<select id="profile" name="profile"><option value="">by the live URL's scheme</option>{options}</select></div>
<div class="field"><label for="sample">Pages of the live server to sample for the URLs (a polite crawl;
0: none)</label><input id="sample" name="sample" type="number" min="0" max="{MAX_SAMPLE}"
value="{ask.sample or ""}" placeholder="0">
<label class="check"><input type="checkbox" name="audit"{" checked" if ask.audit else ""}>
audit the live server too, as manners site does (a few polite requests)</label></div>
<div class="buttons"><button type="submit" name="do" value="answer">Answer</button>
<button type="submit" name="do" value="load">Load the live file into the draft</button></div>
</form>"""


def textarea(text: str) -> str:
    """Text for an editable textarea: every character kept as it is (a control, a bidi
    control: the browser posts them back unchanged), only ``<&>`` HTML-escaped, so that a
    draft loaded from the live file comes back byte for byte.  Escaping them here (as the
    read-only views do) would post the escapes back as the draft's own text.  What no HTML
    page can carry (a byte that is not UTF-8, a NUL) is shown as U+FFFD; the draft's exact
    bytes then ride in the ``kept`` field (:func:`kept_field`).  A line feed leads, because
    HTML drops one right after ``<textarea>``: a first blank line stays."""
    return "\n" + html.escape(carried(text), quote=False)


UNCARRIED = re.compile("[\x00\udc80-\udcff]")  # NUL, and the bytes surrogateescape kept
LINE_ENDS = re.compile("\r\n?")


def carried(text: str) -> str:
    """``text`` as a textarea carries it: what it cannot hold as U+FFFD."""
    return UNCARRIED.sub("\ufffd", text)


def posted_back(text: str) -> str:
    """``text`` as a browser posts a textarea holding it back (line ends compared as LF: it
    sends CR LF, which every reader reads as the same line end)."""
    return LINE_ENDS.sub("\n", carried(text))


def kept_field(draft: str) -> str:
    """A hidden field with the draft's exact bytes (percent-encoded) when the textarea cannot
    carry them all; the app takes them instead of the textarea's text while that is unchanged."""
    if not UNCARRIED.search(draft):
        return ""
    value = quote_from_bytes(draft.encode("utf-8", "surrogateescape"), safe="")
    return (
        f'<input type="hidden" name="kept" value="{value}"><p class="kept">the draft holds bytes a'
        " browser cannot edit (not UTF-8, or NUL), shown as \ufffd: they are kept as they are while"
        " the draft is not edited</p>"
    )


# -- the answer --------------------------------------------------------------------------


def answer_page(a: Answer) -> str:
    parts = [form(a.ask), '<main id="answer">']
    query = a.ask.query() if len(a.ask.draft) + sum(map(len, a.ask.urls)) < MAX_LINK else ""
    if query and len(query) < MAX_LINK:
        parts.append(f'<p class="link"><a href="/?{h(query)}">this answer\'s own address</a></p>')
    for shown in a.files:
        parts.append(file_section(shown, a.profile))
    if a.unread:
        parts.append(unread_section(a))
    if a.columns:
        parts.append(who_section(a))
    usage = a.usage if a.states_usage else [[] for _ in a.matrices]  # no column when none is stated
    parts += [matrix_section(a, agent, rows, u) for (agent, rows), u in zip(a.matrices, usage, strict=True)]
    if a.diff is not None or a.diff_note:
        parts.append(diff_section(a))
    if a.profiles:
        parts.append(profiles_section(a))
    if a.site is not None:
        parts.append(site_section(a.site, a.live_anchor))
    parts.append("</main>")
    return document("manners: " + (a.files[0].label if a.files else "answer"), "\n".join(parts))


def counts(found: Iterable[Diagnostic]) -> str:
    n = {s: 0 for s in SEVERITIES}
    for d in found:
        n[d.severity] += 1
    return ", ".join(f"{c} {s}{'s' if c != 1 else ''}" for s, c in n.items())


def finding_text(d: Diagnostic) -> str:
    return f"{d.severity}: {d.code}: {d.message}"


def file_section(s: Shown, profile: str) -> str:
    """The file with a number on each line, each finding under the line it is about."""
    ident = "file" if s.anchor == "L" else "live-file"
    out = [f'<section id="{ident}" class="file"><h2>{h(s.label)}</h2>']
    if s.notes:
        out.append('<ul class="notes">' + "".join(f"<li>{h(n)}</li>" for n in s.notes) + "</ul>")
    if not s.src.read:
        out.append("<p>there is no file to show</p></section>")
        return "\n".join(out)
    out.append(f"<p>read as {h(profile)}: {counts(s.findings)}</p>")
    by_line: dict[int | None, list[Diagnostic]] = {}
    for d in s.findings:
        by_line.setdefault(d.line, []).append(d)
    if None in by_line:
        out.append('<ul class="findings">' + "".join(finding_item(d) for d in by_line.pop(None)) + "</ul>")
    lines = s.src.body.splitlines()  # CR, LF and CRLF each end a line, as the engine reads them
    if not lines:
        out.append("<p>the file is empty</p>")
    # escaped in one pass (tabs kept, as fetch shows a body): the lines hold no line feed
    joined = b"\n".join(lines[:MAX_LINES]).decode("utf-8", "surrogateescape")
    texts = html.escape(safe(joined, lines=True), quote=False).split("\n") if lines else []
    rows = []
    for n, text in enumerate(texts, 1):
        anchor = f"{s.anchor}{n}"
        rows.append(
            f'<tr id="{anchor}"><th><a href="#{anchor}">{n}</a></th><td><code>{text}</code></td></tr>'
        )
        rows += [finding_row(d) for d in by_line.pop(n, [])]
    if rows:
        out.append('<table class="lines"><tbody>\n' + "\n".join(rows) + "\n</tbody></table>")
    if len(lines) > MAX_LINES:
        out.append(f"<p>the page shows the first {MAX_LINES:,} of {len(lines):,} lines</p>")
    rest = [d for ds in by_line.values() for d in ds]  # past the last line shown (a cut file)
    if rest:
        out.append('<ul class="findings">' + "".join(finding_item(d) for d in rest) + "</ul>")
    out.append("</section>")
    return "\n".join(out)


def finding_row(d: Diagnostic) -> str:
    return f'<tr class="finding {h(d.severity)}"><th></th><td>{h(finding_text(d))}</td></tr>'


def finding_item(d: Diagnostic) -> str:
    where = f"line {d.line}: " if d.line is not None else ""
    return f'<li class="{h(d.severity)}">{where}{h(finding_text(d))}</li>'


def cell(d: Decision, anchor: str) -> str:
    """A verdict as explain's table says it (yes or NO, and the deciding line), the line a link."""
    text = h(table_cell(d))
    if d.line is not None:
        text = f'<a href="#{anchor}{d.line}" data-line="{anchor}{d.line}">{text}</a>'
    return f'<td class="{"yes" if d.allowed else "no"}" title="{h(d.reason)}">{text}</td>'


def who(agent: str, roles: tuple[str, ...]) -> str:
    return agent + (f" with roles {', '.join(roles)}" if roles else "")


def who_section(a: Answer) -> str:
    """Who may fetch what (manners site's matrix): the robots, every one acting in its roles,
    against the targets, under the profile shown; each verdict linking to its line."""
    title = f"Who may fetch what, read as {h(a.profile)}"
    note = [f"<p>{h(a.target_note)}</p>"] if a.target_note else []
    return robots_table("who", title, note, a.columns, a.rows, a.files[0].anchor)


def robots_table(
    kind: str, title: str, notes: list[str], columns: list[Column], rows: list[Row], anchor: str
) -> str:
    out = [f'<section class="{kind}"><h2>{title}</h2>', *notes]
    out.append("<p>cell: yes or NO, and the deciding line (a link to it); highlighted: robots disagree</p>")
    if not rows:
        out.append("<p>no URLs to decide for</p></section>")
        return "\n".join(out)
    head = "".join(f'<th scope="col" title="{h(c.why)}">{h(c.name)}</th>' for c in columns)
    out.append(f'<table class="matrix"><thead><tr><th scope="col">target</th>{head}</tr></thead><tbody>')
    for r in rows:
        mark = ' class="disagree"' if r.disagree else ""
        cells = "".join(cell(d, anchor) for d in r.decisions)
        out.append(f'<tr{mark}><th scope="row"><code>{h(r.url)}</code></th>{cells}</tr>')
    n = sum(r.disagree for r in rows)
    said = (
        f"{n} of {len(rows)} targets decided differently for different robots"
        if n
        else "every robot is decided alike"
    )
    out.append(f"</tbody></table><p>{h(said)}</p></section>")
    return "\n".join(out)


def site_section(report: SiteReport, anchor: str) -> str:
    """The live server's audit, as manners site reports it: each finding with the words it
    rests on and what the server sent, and who may fetch its sampled URLs."""
    n = report.requests
    out = [
        '<section id="site" class="site"><h2>How the server speaks to robots</h2>',
        f"<p>{h(report.url)}: {n} request{'s' if n != 1 else ''}, {report.spacing:g} s apart,"
        f" in {report.took:.1f} s</p>",
    ]
    if not report.reachable:
        out.append(f'<p class="problem">{h(report.problem or "")}: nothing was audited</p></section>')
        return "\n".join(out)
    items = []
    for f in report.findings:
        asked = (
            f"<div>asked: <code>{h(repr(f.asked) if f.asked == '' else f.asked)}</code></div>"
            if f.asked is not None
            else ""
        )
        sent = f"<div>sent: <code>{h(f.sent)}</code></div>" if f.sent is not None else ""
        items.append(
            f'<li class="{h(f.severity)}"><strong>{h(f.severity)}: {h(f.code)}</strong>: {h(f.message)}'
            f"{asked}{sent}"
            f"<div>rests on {h(f.basis)}: <q>{h(f.words)}</q></div></li>"
        )
    if items:
        out.append('<ul class="audit">' + "".join(items) + "</ul>")
    else:
        out.append("<p>the server's answers break no rule the audit checks</p>")
    if report.sample.how != "none":
        notes = [f"<p>{h(report.sample.note)}</p>"] if report.sample.note else []
        title = f"Who may fetch what on the server: {len(report.matrix)} URLs ({h(report.sample.how)})"
        out.append(robots_table("served", title, notes, report.columns, report.matrix, anchor))
    out.append("</section>")
    return "\n".join(out)


def matrix_section(a: Answer, agent: str, rows: list[list[Decision]], usage: list[Usage]) -> str:
    """explain's matrix: a row per target, a column per reader, each verdict linking to its line;
    then, when ``usage`` is given (the file states some), the robot's usage preferences for
    the target (:func:`manners.admin.serve.usage_of`), each with a link to its line."""
    anchor = a.files[0].anchor
    out = [
        f'<section class="readers"><h2>What each reader decides for {h(who(agent, a.ask.roles))}</h2>',
        *([f"<p>{h(a.target_note)}</p>"] if a.target_note else []),
        "<p>cell: yes or NO, and the deciding line (a link to it); highlighted: readers disagree</p>",
    ]
    if not rows:
        out.append("<p>no rules, and no URLs given: nothing for the readers to decide</p></section>")
        return "\n".join(out)
    head = "".join(f'<th scope="col">{h(r.name)}</th>' for r in READERS)
    if usage:
        why = f"Content-Usage and Content-Signal, as {a.profile} reads them, for {who(agent, a.ask.roles)}"
        head += f'<th scope="col" class="usage" title="{h(why)}">usage preferences</th>'
    out.append(f'<table class="matrix"><thead><tr><th scope="col">target</th>{head}</tr></thead><tbody>')
    for n, (target, row) in enumerate(zip(a.targets, rows, strict=True)):
        mark = ' class="disagree"' if len({d.allowed for d in row}) > 1 else ""
        cells = "".join(cell(d, anchor) for d in row) + (usage_cell(usage[n], anchor) if usage else "")
        out.append(f'<tr{mark}><th scope="row"><code>{h(target)}</code></th>{cells}</tr>')
    disagree = sum(len({d.allowed for d in row}) > 1 for row in rows)
    said = (
        f"{disagree} of {len(rows)} targets read differently by different robots"
        if disagree
        else "every reader agrees on every target"
    )
    out.append(f"</tbody></table><p>{h(said)}</p></section>")
    return "\n".join(out)


LINE_SAID = re.compile(r"\(line (\d+)\)")  # in usage_words: "train-ai=no (line 4)"


def usage_cell(u: Usage, anchor: str) -> str:
    """The preferences the file states for a target, in ``check``'s words, each line a link."""
    words = usage_words(u)
    if not words:
        return f'<td class="usage none">{"none stated" if u.allowed else "none: disallowed"}</td>'
    linked = LINE_SAID.sub(
        lambda m: f'(<a href="#{anchor}{m[1]}" data-line="{anchor}{m[1]}">line {m[1]}</a>)', h(words)
    )
    return f'<td class="usage">{linked}</td>'


def unread_section(a: Answer) -> str:
    """Nothing was read: what a robot does instead, for each target, as explain says it."""
    out = ['<section class="unread"><h2>What a robot does instead</h2><table class="results"><thead><tr>'
           '<th scope="col">robot</th><th scope="col">target</th><th scope="col">verdict</th>'
           '<th scope="col">why</th></tr></thead><tbody>']  # fmt: skip
    for r in a.unread:
        verdict = "allowed" if r["allowed"] else "disallowed"
        out.append(
            f"<tr><td>{h(r['agent'])}</td><td><code>{h(r['url'])}</code></td>"
            f'<td class="{"yes" if r["allowed"] else "no"}">{verdict}</td><td>{h(r["reason"])}</td></tr>'
        )
    out.append("</tbody></table></section>")
    return "\n".join(out)


def diff_section(a: Answer) -> str:
    """The draft against the live file, as ``manners diff LIVE DRAFT`` tells it: the groups and
    rules changed, each verdict that flips with its deciding line on both sides (links to the
    lines of each file), and how many URLs flip for each robot."""
    out = ['<section id="diff" class="diff"><h2>The draft against the live file</h2>']
    d = a.diff
    if d is None:
        out.append(f"<p>{h(a.diff_note or '')}</p></section>")
        return "\n".join(out)
    draft, live = a.files[0].anchor, a.files[1].anchor
    given = "" if a.ask.urls else " (each rule's own path in either file)"
    read = ", ".join(d.profiles) or d.profile
    out.append(f"<p>{n_of(len(d.urls), 'URL')}{given}, {n_of(len(d.agents), 'robot')}, read as {h(read)}</p>")
    if d.groups:
        out.append(
            f'<h3>Groups and rules changed (as {h(d.profile)} delimits groups)</h3><ul class="groups">'
        )
        out += [group_change(g, live, draft) for g in d.groups]
        out.append("</ul>")
    else:
        out.append(f"<p>no group or rule changed (as {h(d.profile)} delimits groups)</p>")
    flipped = len({f.url for f in d.flips})
    if not d.flips:
        out.append(
            f'<p class="same">no verdict flips: {n_of(len(d.urls), "URL")},'
            f" {n_of(len(d.agents), 'robot')}</p>"
        )
        out.append("</section>")
        return "\n".join(out)
    several = len(d.profiles) > 1
    out.append(
        '<table class="flips"><thead><tr><th scope="col">verdict</th><th scope="col">target</th>'
        + ('<th scope="col">profile</th>' if several else "")
        + '<th scope="col">for</th><th scope="col">live</th><th scope="col">draft</th></tr></thead><tbody>'
    )
    for f in d.flips:
        robots = ", ".join(w.agent + (f" as {'+'.join(w.roles)}" if w.roles else "") for w in f.agents)
        out.append(
            f'<tr><td class="{"yes" if f.new.allowed else "no"}">'
            f"{'now allowed' if f.new.allowed else 'now disallowed'}</td><td><code>{h(f.url)}</code></td>"
            + (f"<td>{h(f.profile)}</td>" if several else "")
            + f"<td>{h(robots)}</td>{side(f.old, live)}{side(f.new, draft)}</tr>"
        )
    out.append("</tbody></table>")
    counts_rows = "".join(
        f"<tr><td>{h(c.agent)}</td><td>{c.urls:,}</td><td>{c.allowed:,}</td><td>{c.disallowed:,}</td></tr>"
        for c in d.counts
        if c.urls
    )
    out.append(
        '<table class="results"><thead><tr><th scope="col">robot</th><th scope="col">URLs that flip</th>'
        '<th scope="col">now allowed</th><th scope="col">now disallowed</th></tr></thead>'
        f"<tbody>{counts_rows}</tbody></table>"
    )
    flipping = sum(1 for c in d.counts if c.urls)
    out.append(
        f'<p class="flipped">{flipped:,} of {n_of(len(d.urls), "URL")} flip, for {flipping} of'
        f" {n_of(len(d.agents), 'robot')}</p></section>"
    )
    return "\n".join(out)


def n_of(n: int, what: str) -> str:
    return f"{n:,} {h(what)}{'' if n == 1 else 's'}"


def side(d: Decision, anchor: str) -> str:
    """One side of a flip: the verdict and its deciding rule, linked to its line in that file."""
    verdict = "allowed" if d.allowed else "disallowed"
    if d.line is None:
        return f'<td class="{"yes" if d.allowed else "no"}">{verdict} ({h(d.reason)})</td>'
    rule = f'<a href="#{anchor}{d.line}" data-line="{anchor}{d.line}">line {d.line}: {h(d.rule or "")}</a>'
    return f'<td class="{"yes" if d.allowed else "no"}">{verdict} ({rule})</td>'


def group_change(g: GroupChange, live: str, draft: str) -> str:
    """A group added, removed or changed, and its rules: - removed, + added, ~ changed."""
    sides = [(s, anchor, name) for s, anchor, name in ((g.old, live, "live"), (g.new, draft, "draft")) if s]
    names = list(dict.fromkeys(s.named() for s, _, _ in sides))  # as manners diff names them
    lines = ", ".join(
        f'{name} <a href="#{anchor}{s.lines[0]}">lines {s.lines[0]}-{s.lines[1]}</a>'
        for s, anchor, name in sides
    )
    rules = []
    for r in g.rules:
        if r.old is not None:
            old = f'<a href="#{live}{r.old.line}">live line {r.old.line}</a>: <code>{h(r.old.rule)}</code>'
        if r.new is not None:
            new = f'<a href="#{draft}{r.new.line}">draft line {r.new.line}</a>: <code>{h(r.new.rule)}</code>'
        if r.old is not None and r.new is not None:
            rules.append(f'<li class="changed">~ {old} → {new}</li>')
        elif r.old is not None:
            rules.append(f'<li class="removed">- {old}</li>')
        elif r.new is not None:
            rules.append(f'<li class="added">+ {new}</li>')
    listed = f"<ul>{''.join(rules)}</ul>" if rules else ""
    return f'<li class="{h(g.change)}">{h(g.change)} {h(" → ".join(names))} ({lines}){listed}</li>'


def profiles_section(a: Answer) -> str:
    """Every profile's reading of the file side by side: findings, then for each robot the
    groups that apply and its pace (the verdicts under each profile are in the readers' matrix)."""
    anchor = a.files[0].anchor
    columns = a.profiles
    head = "".join(f'<th scope="col">{h(c.profile)}</th>' for c in columns)
    out = [
        '<section id="profiles" class="profiles"><h2>Every profile side by side</h2>',
        f'<table class="profiles"><thead><tr><th></th>{head}</tr></thead><tbody>',
    ]

    def row(name: str, cells: Iterable[str], kind: str = "") -> None:
        out.append(f'<tr{kind}><th scope="row">{name}</th>{"".join(cells)}</tr>')

    row("findings", (f"<td>{counts(c.findings)}{finding_links(c.findings, anchor)}</td>" for c in columns))
    for n, agent in enumerate(a.ask.agents):
        span = len(columns) + 1
        out.append(f'<tr class="robot"><th colspan="{span}">for {h(who(agent, a.ask.roles))}</th></tr>')
        readings = [c.readings[n] for c in columns]
        row("groups that apply", (f"<td>{groups(r, anchor)}</td>" for r in readings))
        row("pace", (f"<td>{h(r.pace)}</td>" for r in readings))
    out.append("</tbody></table></section>")
    return "\n".join(out)


def finding_links(found: list[Diagnostic], anchor: str) -> str:
    if not found:
        return ""
    items = "".join(
        f'<li><a href="#{anchor}{d.line}">{d.line}</a> {h(d.code)}</li>'
        if d.line is not None
        else f"<li>{h(d.code)}</li>"
        for d in found[:20]
    )
    more = f"<li>and {len(found) - 20:,} more</li>" if len(found) > 20 else ""
    return f'<ul class="codes">{items}{more}</ul>'


def groups(c: Reading, anchor: str) -> str:
    if not c.chosen:
        return h(c.reason)
    return "<br>".join(
        h(label) + ": " + ", ".join(f'<a href="#{anchor}{a}">lines {a}-{b}</a>' for a, b in ranges)
        for label, ranges in c.chosen
    )


CSS = """\
body { font: 15px/1.4 system-ui, sans-serif; margin: 0 auto; max-width: 110rem; padding: 0 1rem 4rem; }
header h1 { margin: .6rem 0 0; font-size: 1.4rem; } header h1 a { color: inherit; text-decoration: none; }
header p { margin: 0 0 1rem; color: #555; }
form { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: .6rem 1rem;
  background: #f6f6f4; padding: .8rem; border-radius: 6px; }
.field.wide { grid-column: 1 / -1; } label { display: block; font-weight: 600; margin-bottom: .2rem; }
label.check { font-weight: normal; margin-top: .4rem; }
textarea, input:not([type=checkbox]), select { width: 100%; box-sizing: border-box;
  font: 13px/1.35 ui-monospace, monospace; }
.buttons { grid-column: 1 / -1; } button { font: inherit; padding: .3rem 1rem; margin-right: .5rem; }
.error { border: 2px solid #b00; background: #fee; padding: .2rem 1rem; margin: 1rem 0; }
section { margin-top: 1.6rem; } h2 { font-size: 1.15rem; margin-bottom: .3rem; }
.notes li { color: #a40; font-weight: 600; }
table { border-collapse: collapse; } th, td { padding: .1rem .5rem; vertical-align: top; text-align: left; }
table.lines { font: 13px/1.35 ui-monospace, monospace; width: 100%; }
table.lines th { text-align: right; color: #888; width: 4rem; user-select: none; }
table.lines th a { color: inherit; text-decoration: none; }
table.lines code { white-space: pre-wrap; word-break: break-all; }
table.lines tr:target { background: #ffe27a; outline: 2px solid #d9a400; }
table.lines tr[id] { scroll-margin-top: 30vh; }
table.lines tr.lit { background: #fff3bf; }
tr.finding td { font: 12px/1.3 system-ui, sans-serif; padding-left: 1.5rem; }
li.error, tr.finding.error td { color: #b00; } tr.finding.warning td, li.warning { color: #8a5a00; }
tr.finding.info td, li.info { color: #666; }
table.matrix, table.profiles, table.results { font-size: 13px; }
table.matrix thead th, table.profiles thead th { position: sticky; top: 0; background: #fff;
  border-bottom: 1px solid #ccc; }
table.matrix td, table.profiles td { border-left: 1px solid #eee; }
tr.disagree { background: #fff6d6; } td.no { color: #b00; font-weight: 600; } td.yes { color: #176b1e; }
td.lit { outline: 2px solid #d9a400; } td a { color: inherit; } td.usage.none { color: #888; }
tr.robot th { background: #eef; padding-top: .4rem; }
ul.audit li { margin-bottom: .5rem; } ul.audit div { font-size: 13px; color: #444; }
p.problem { color: #b00; }
ul.groups li.added, ul.groups li li.added { color: #176b1e; } ul.groups li.removed { color: #b00; }
ul.groups li li.changed { color: #8a5a00; } p.flipped { font-weight: 600; color: #b00; }
p.same { font-weight: 600; color: #176b1e; } table.flips { font-size: 13px; }
ul.codes { margin: .2rem 0 0; padding-left: 1rem; font-size: 12px; }
p.link { font-size: 13px; } p.kept { font-size: 13px; color: #a40; margin: .2rem 0 0; }
"""

JS = """\
// Optional: hovering a line of the file lights the matrix cells it decides, and the reverse.
document.addEventListener("mouseover", (event) => {
  for (const lit of document.querySelectorAll(".lit")) lit.classList.remove("lit");
  const row = event.target.closest("table.lines tr[id]");
  const link = event.target.closest("a[data-line]");
  const id = row ? row.id : link ? link.dataset.line : null;
  if (!id) return;
  for (const a of document.querySelectorAll(`a[data-line="${CSS.escape(id)}"]`)) {
    a.parentElement.classList.add("lit");
  }
  document.getElementById(id)?.classList.add("lit");
});
"""
