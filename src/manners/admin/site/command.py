"""``manners site URL``: the command line over :func:`audit_site`.

Rich output on a terminal (plain lines when piped), ``--json`` for scripts.  Exit status: 0
when no finding is an error, 1 when one is (the server breaks a MUST, SHALL or PROHIBITED, or
its robots.txt is no robots.txt at all), 2 for a usage error or a server that does not answer.
"""

from __future__ import annotations

import argparse
import asyncio
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...diagnostics import said
from ...options import count, delay
from ...output import Out, UsageError
from ...readers import label, table_cell, verdict_cell
from ...targets import check_agent, is_url, url_path
from ...terminal import safe
from .probe import audit_site
from .report import SEVERITIES, SiteReport, lint_basis

if TYPE_CHECKING:
    from ...robots import Diagnostic

EXAMPLES = """examples:
  manners site gopher://example.org/
  manners site gemini://example.org/ --agent mybot --role archiver
  manners site https://example.org/ --sample 20 --json
  manners site gemini://example.org/ --urls urls.txt     (the matrix for these URLs, no crawl)
  manners site gopher://localhost:7070/ --delay 0.1      (your own server: less time between requests)

Each finding names the words it rests on: a MUST, SHALL or PROHIBITED broken is an error,
a SHOULD a warning, the rest information; an answer that keeps every robot off the whole
server (HTTP 5xx or 429, Gemini 4x, no answer) is a warning at least.  robots.txt is read
as a robot reads it (redirects followed, off the server too), and lint's findings of one
kind are shown three at a time ("... and 7,209 more"; --json has them all).  The audit
reads robots.txt afresh and keeps nothing (--cache and --cached change nothing here).

exit status: 0 no error-level finding; 1 an error-level finding (lint's included);
2 a usage error, or the server did not answer"""
STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


def add_parser(sub: Any, common: Any) -> argparse.ArgumentParser:
    """Register ``site`` on the ``manners`` command's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "site",
        help="how a server speaks to robots: an audit against the specifications' own words",
        description="Audit how one Gemini, Gopher or Web server speaks to robots: its robots.txt and"
        " the answers around it, each finding with the words it rests on and what the server sent,"
        " and who may fetch which of its URLs.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL", help="the server: a gemini://, gopher://, http:// or https:// URL")
    p.add_argument(
        "--sample",
        type=count,
        default=50,
        metavar="N",
        help="pages a polite crawl may fetch for the matrix of who may fetch what (default: 50; 0: none)",
    )
    p.add_argument(
        "--urls",
        dest="url_file",
        metavar="FILE",
        help="the matrix's URLs (or paths), one a line, instead of a crawl",
    )
    p.add_argument(
        "--delay",
        type=delay,
        default=1.0,
        metavar="S",
        help="seconds between two requests at least; more when robots.txt asks for more (default: 1)",
    )
    common(p)
    p.set_defaults(func=cmd_site)
    return p


def cmd_site(args: argparse.Namespace, out: Out) -> int:
    check_agent(args.agent)
    urls = None
    if args.url_file:
        try:
            urls = Path(args.url_file).read_text(errors="surrogateescape").split()
        except OSError as exc:
            raise UsageError(f"cannot read --urls {args.url_file}: {exc.strerror}") from None
    agents = [args.agent] if args.agent != "*" else []
    report = asyncio.run(  # a request it cannot make: probe.UsageError, which main() prints
        audit_site(
            args.url,
            agents=agents,
            roles=args.role,
            sample=args.sample,
            urls=urls,
            timeout=args.timeout,
            delay=args.delay,
            max_bytes=args.max_bytes or 512_000,
        )
    )
    if out.json:
        out.data(report.as_json())
    else:
        show(report, out)
    if not report.reachable:
        out.note(f"{report.url}: {report.problem}; nothing was audited")
        return 2
    return 1 if report.failed else 0


# -- the report on a terminal ---------------------------------------------------------------------


def show(report: SiteReport, out: Out) -> None:
    """The report for people: robots.txt (and its Content-Usage header); the findings, errors
    first, each with its words and what was sent; lint's findings; the matrix; the usage
    preferences robots.txt states; the counts."""
    result = report.robots
    out.line(
        f"{report.url}: {report.requests} request{'s' if report.requests != 1 else ''},"
        f" {report.spacing:g} s apart, in {report.took:.1f} s",
        "bold",
    )
    if not report.reachable:
        return
    if result.outcome == "ok":
        cut = ", cut at --max-bytes" if result.truncated else ""
        out.line(f"robots.txt: {result.source}, {len(result.body):,} bytes{cut}")
    else:
        out.line(f"robots.txt: {result.meaning}", "yellow")
    if report.content_usage is not None:  # about robots.txt itself (attach, HTTP Content-Usage Header Field)
        out.line(report.content_usage.words())
        out.line(f"    sent: {report.content_usage.sent()}", "dim")
    out.line("")
    for f in report.findings:
        out.line(f"{f.severity}: {f.code}: {f.message}", STYLE[f.severity])
        if f.asked is not None:
            out.line(f"    asked: {f.asked!r}" if f.asked == "" else f"    asked: {f.asked}", "dim")
        if f.sent is not None:
            out.line(f"    sent: {f.sent}", "dim")
        out.line(f'    rests on {f.basis}: "{f.words}"', "dim")
    if not report.findings:
        out.line("the server's answers break no rule the audit checks", "green")
    out.line("")
    if result.outcome == "ok":
        if report.diagnostics:
            out.line(f"lint of robots.txt ({report.profile}):")
            for text, severity in lint_lines(report.diagnostics):
                out.line("  " + text, STYLE[severity])
        else:
            out.line(f"lint of robots.txt ({report.profile}): no findings", "green")
        out.line("")
    show_matrix(report, out)
    if report.usage is not None:  # only what robots.txt states: nothing for a file without such lines
        lines = report.usage.lines([_path(url, report.url) for url, _ in report.usage.urls])
        for line in lines:
            out.line(line)
        if lines:
            out.line("")
    counts = report.counts()
    out.line(", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items()), STYLE[_worst(counts)])


SHOWN_PER_CODE = 3  # lint findings of one code shown one by one; the rest are counted in one line


def lint_lines(diagnostics: Sequence[Diagnostic]) -> list[tuple[str, str]]:
    """Lint's findings as lines (and their severity): the first SHOWN_PER_CODE of each code and
    severity, then one line that counts the rest ("… and 7,209 more"), so that a file of 14,000
    bad lines is a few lines of report, not 14,000 (``--json`` keeps every one)."""
    by: dict[tuple[str, str], list[Diagnostic]] = {}
    for d in diagnostics:
        by.setdefault((d.severity, d.code), []).append(d)
    lines = []
    for (severity, code), found in by.items():
        for d in found[:SHOWN_PER_CODE]:
            lines.append((said("robots.txt", d), severity))
            basis = lint_basis(d)
            if basis is not None:
                lines.append((f'    rests on {basis[0]}: "{basis[1]}"', "info"))
        rest = found[SHOWN_PER_CODE:]
        if rest:
            numbers = [d.line for d in rest if d.line is not None]
            where = f" (lines {numbers[0]:,} to {numbers[-1]:,})" if len(numbers) > 1 else ""
            lines.append((f"robots.txt: {severity}: {code}: … and {len(rest):,} more{where}", severity))
    return lines


def _worst(counts: dict[str, int]) -> str:
    return next((s for s in SEVERITIES if counts[s]), "info")


def show_matrix(report: SiteReport, out: Out) -> None:
    """Who may fetch what: a table when it fits, else a line per verdict for each URL."""
    rows = report.matrix
    how = {
        "crawl": f"from a crawl of at most {report.sample.limit} pages",
        "home page and sitemaps": "from the home page and the sitemaps",
        "given": "given",
    }.get(report.sample.how, "")
    if report.sample.note:
        out.line(report.sample.note, "yellow")
    if not rows:
        out.line("no URLs to decide for" + (" (--sample 0)" if report.sample.how == "none" else ""))
        out.line("")
        return
    shown = [_path(r.url, report.url) for r in rows]
    header = [["URL"], *(label(c.name) for c in report.columns)]
    cells = [[s, *map(table_cell, r.decisions)] for s, r in zip(shown, rows, strict=True)]
    marks = [r.disagree for r in rows]
    gap = out.gap(header, cells)
    title = (
        f"Who may fetch what: {len(rows)} URL{'s' if len(rows) != 1 else ''} {how}"
        " (cell: yes or NO and the deciding line; highlighted: robots disagree)"
    )
    if gap is not None:
        out.table(title, header, cells, marks, gap)
    else:
        width = max(40, out.width)
        lines = [*textwrap.wrap(title, width), ""]
        for path, row in zip(shown, rows, strict=True):
            lines.append(("! " if row.disagree else "  ") + path)
            by: dict[str, list[str]] = {}
            for column, d in zip(report.columns, row.decisions, strict=True):
                by.setdefault(verdict_cell(d), []).append(column.name)
            for cell, names in by.items():
                lead = f"      {cell}: "
                lines += textwrap.wrap(
                    ", ".join(names), width, initial_indent=lead, subsequent_indent=" " * 8
                )
        for line in lines:
            out.line(line, "bold yellow" if line.startswith("! ") else "")
        out.line("")
    n = sum(marks)
    out.line(
        f"{n} of {len(rows)} URLs decided differently for different robots"
        if n
        else "every robot is decided alike",
    )
    out.line("")


def _path(url: str, site: str) -> str:
    """A URL of the audited server as the matrix shows it: its path (and query); a path as given."""
    if is_url(url) and url.split("/", 3)[:3] == site.split("/", 3)[:3]:
        return url_path(url)
    return safe(url)
