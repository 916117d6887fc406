"""``manners serve``: the admin's page, as an ASGI app (Starlette), over the commands' own functions.

An admin pastes a draft or fetches the live file, and the page answers with what ``lint``,
``explain``, ``diff`` and ``site`` would say: the file with its findings on their lines, who
may fetch which URL and what every reader decides (each cell a link to its deciding line),
the draft's verdicts against the live file's, every profile side by side, and (when asked)
the live server's audit with a sample of its URLs.  Nothing here decides or reads a
robots.txt itself: :func:`answer` calls what the commands share (``policies``,
``matrix_of``, ``results_of``, ``pace``), :func:`manners.diagnostics.lint`, :mod:`manners.admin.diff` and
:mod:`manners.admin.site` (``audit_site``, and its matrix); :mod:`manners.admin.page` writes
the HTML from the data in :mod:`manners.admin.answer`.

The page works with JavaScript off: a form posts, the page answers, and the answer is also
reachable by GET (``/?draft=...&urls=...``) so that it can be linked to.  It is safe by
default: the command binds 127.0.0.1, requests must name a loopback host (no DNS
rebinding), a request another site's page made is refused before it fetches anything (a
form posted from another origin, a link or an image asking for a live URL), bodies are
capped, only ``http(s)``, ``gemini`` and ``gopher`` URLs are fetched and with deadlines,
every value shown is escaped (the draft's textarea keeps its characters, to be posted back
unchanged), nothing redirects, and the Content-Security-Policy forbids any outside content.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from urllib.parse import parse_qs, unquote, urlsplit

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..diagnostics import lint, said
from ..output import UsageError
from ..pace import pace, pace_lines
from ..profiles import PROFILES
from ..readers import matrix_of, results_of, sample_paths
from ..robots import Diagnostic, RobotsTxt, Usage, parse
from ..source import Source, blocked, capped, fetched, policies, unread_note
from ..targets import check_agent, check_target, check_url, scheme_profile
from . import page
from .answer import Answer, Ask, ProfileColumn, Reading, Shown
from .diff import Diff, diff
from .site import SiteReport, audit_site
from .site.matrix import columns_for, decide

log = logging.getLogger("manners.serve")

MAX_BODY = 4 << 20  # bytes of a posted form: a robots.txt at the 512,000-byte cap, percent-encoded, fits
DRAIN, DRAIN_SECONDS = 64 << 20, 5.0  # of a body too large, read and dropped before the 413
MAX_FIELDS = 200  # form fields (parse_qs refuses more)
MAX_AGENTS = 10
MAX_TARGETS = 1000  # URLs given; sampled ones are cut to SAMPLED
SAMPLED = 500  # rule paths shown when no URLs are given
MAX_SAMPLE = page.MAX_SAMPLE
FORM = "application/x-www-form-urlencoded"
FIELDS = ("draft", "live", "agent", "role", "urls", "profile", "audit", "sample", "do", "kept")
ELSEWHERE = frozenset({"cross-site", "same-site"})  # Sec-Fetch-Site of a request another origin made
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

#: Every response: no outside content, no framing, no sniffing, no referrer to another site.
#: (Not "no-referrer": a browser then sends ``Origin: null`` with the page's own form, which
#: the origin check would refuse.)
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self';"
    " form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


class BadRequest(Exception):
    """Input the page cannot answer: an HTTP status and one sentence saying what to do instead
    (and what was asked, when it could be read, to fill the form again)."""

    def __init__(self, status: int, sentence: str, ask: Ask | None = None) -> None:
        super().__init__(sentence)
        self.status = status
        self.sentence = sentence
        self.ask = ask


# -- what the form asks ------------------------------------------------------------------


def read_ask(fields: Mapping[str, list[str]], defaults: argparse.Namespace) -> Ask:
    """The form's fields, checked as the commands check their arguments, before anything is
    fetched; BadRequest (400) with the commands' own sentence for anything they would refuse."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise BadRequest(400, f"unknown field {unknown[0]!r}: the form's fields are {', '.join(FIELDS)}")

    def one(name: str) -> str:
        return "\n".join(fields.get(name, []))

    agents = tuple(a.strip() for a in one("agent").splitlines() if a.strip()) or (defaults.agent,)
    if len(agents) > MAX_AGENTS:
        raise BadRequest(400, f"{len(agents)} robots: give at most {MAX_AGENTS}, one a line")
    roles = (
        tuple(r for r in re.split(r"[\s,]+", one("role")) if r) if "role" in fields else tuple(defaults.role)
    )
    profile = one("profile").strip().lower()
    if profile and profile not in PROFILES:
        raise BadRequest(400, f"unknown profile {profile!r}: choose one of {', '.join(PROFILES)}")
    sample = one("sample").strip() or "0"
    if not sample.isdigit() or int(sample) > MAX_SAMPLE:
        raise BadRequest(400, f"sample {sample!r}: give a number of pages from 0 to {MAX_SAMPLE}")
    action = one("do") or "answer"
    if action not in ("answer", "load"):
        raise BadRequest(400, f"unknown action {action!r}: the form's buttons are answer and load")
    ask = Ask(
        draft=draft_of(one("draft"), fields.get("kept")),
        live=one("live").strip(),
        agents=agents,
        roles=roles,
        urls=tuple(one("urls").split()),
        profile=profile,
        audit=bool(one("audit")),
        sample=int(sample),
        load=action == "load",
    )
    try:
        check_ask(ask)
    except UsageError as exc:
        raise BadRequest(400, str(exc).removeprefix("--"), ask) from None
    return ask


def draft_of(typed: str, kept: list[str] | None) -> str:
    """The draft: the textarea's text, or the exact bytes the page kept beside it (a byte that
    is not UTF-8, a NUL: no textarea carries them) while the text is the one the page gave."""
    if kept:
        exact = unquote(kept[0], encoding="utf-8", errors="surrogateescape")
        if page.posted_back(exact) == page.posted_back(typed):
            return exact
    return typed


def check_ask(ask: Ask) -> None:
    """UsageError, in the commands' words, for what they would refuse."""
    if ask.load and not ask.live:
        raise UsageError("nothing to load: give the live URL whose robots.txt goes into the draft")
    if (ask.audit or ask.sample) and not ask.live:
        raise UsageError("auditing or sampling a server needs its URL: give the live URL")
    if ask.empty and ask.urls:
        raise UsageError("no robots.txt to ask about: paste a draft, or give the live URL")
    if len(ask.urls) > MAX_TARGETS:
        raise UsageError(f"{len(ask.urls):,} URLs: give at most {MAX_TARGETS:,}")
    for agent in ask.agents:
        check_agent(agent)
    if ask.live:
        check_url(ask.live)
    for target in ask.urls:
        check_target(target, chosen_profile(ask))


def chosen_profile(ask: Ask) -> str:
    """The reading whose findings and groups are shown: as ``explain`` chooses it."""
    return ask.profile or scheme_profile(ask.live or "-", "gemini" if ask.roles else "rfc9309")


def fields_of(text: str) -> dict[str, list[str]]:
    """A query string or an ``application/x-www-form-urlencoded`` body, as parse_qs reads it,
    bytes that are not UTF-8 kept (surrogateescape) so that a draft round-trips exactly."""
    try:
        return parse_qs(
            text, keep_blank_values=True, strict_parsing=False, encoding="utf-8",
            errors="surrogateescape", max_num_fields=MAX_FIELDS,
        )  # fmt: skip
    except ValueError:
        raise BadRequest(400, f"too many form fields: the form has at most {MAX_FIELDS}") from None


# -- the answer --------------------------------------------------------------------------


def fetch_live(url: str, agent: str, settings: argparse.Namespace) -> Source:
    """The live robots.txt, fetched as ``manners fetch`` fetches it (through the cache,
    afresh unless ``--cached``, with ``--timeout`` as its deadline)."""
    asked = argparse.Namespace(**{**vars(settings), "agent": agent})
    (policy,) = policies(asked, [url], None).values()
    return fetched(policy)


def notes_of(src: Source) -> list[str]:
    """What is said before anything else about a file, in the commands' words."""
    notes = [note] if src.policy is not None and (note := unread_note(src.policy)) else []
    return notes + [said(src.name, d) for d in src.findings]


def shown(src: Source, label: str, anchor: str, profile: str) -> Shown:
    findings = lint(src.robots.reread(profile), src.body) if src.read else []
    return Shown(src, label, anchor, findings, notes_of(src))


def answer(ask: Ask, settings: argparse.Namespace) -> tuple[Ask, Answer]:
    """Everything the page shows for ``ask``, by the commands' own functions.  Blocking (it
    fetches and parses): the app runs it in a worker thread."""
    profile = chosen_profile(ask)
    live = fetch_live(ask.live, ask.agents[0], settings) if ask.live else None
    if ask.load and live is not None:
        ask = replace(
            ask, draft=live.body.decode("utf-8", "surrogateescape") if live.read else "", load=False
        )
    files: list[Shown] = []
    if ask.draft:
        body = ask.draft.encode("utf-8", "surrogateescape")
        draft = Source(parse(body, None, **capped(settings)), body, "draft")
        files.append(shown(draft, "the draft", "L", profile))
    if live is not None:
        files.append(shown(live, live.name, "live-L" if files else "L", profile))
    main = files[0].src
    report = audit(ask, settings) if ask.audit or ask.sample else None
    targets, target_note = targets_for(ask, main, report)
    result = Answer(ask, profile, files, targets, target_note, site=report)
    if not main.read:  # nothing to explain: what a robot does instead, as explain says it
        for agent in ask.agents:
            who = argparse.Namespace(agent=agent, role=list(ask.roles))
            result.unread += [{"agent": agent, **r} for r in results_of(main.robots, targets, who, profile)]
        return ask, result
    reading = main.robots.reread(profile)
    result.columns = columns_for(reading, profile, ask.agents, ask.roles)
    found = "given" if ask.urls else "sample" if report is not None and report.matrix else "rule"
    result.rows = decide(reading, profile, [(t, found) for t in targets], result.columns)
    for agent in ask.agents:
        result.matrices.append((agent, matrix_of(main, targets, agent, list(ask.roles))))
        result.usage.append(usage_of(reading, targets, agent, ask.roles))
    result.profiles = side_by_side(main, ask.agents, ask.roles, {profile: files[0].findings})
    if ask.draft and live is not None:
        result.diff, result.diff_note = verdict_diff(live, files[0].src, ask)
    return ask, result


def usage_of(reading: RobotsTxt, targets: list[str], agent: str, roles: tuple[str, ...]) -> list[Usage]:
    """The usage preferences (Content-Usage, Content-Signal) for each target, for one robot,
    as ``check --agent ROBOT --role ...`` gives them, the file read as the page reads it (the
    profile its findings and "who may fetch what" are read as: rfc9309 and google read them,
    the Gemini and Gopher profiles do not).  One for each row of the robot's matrix, not one
    for each reader: the preferences follow the group the robot reaches, so they belong to
    the robot the form names, and a cell for each reader would repeat them, or show readers
    that do not read them as stating nothing."""
    return [reading.usage(t, agent, roles) for t in targets]


def audit(ask: Ask, settings: argparse.Namespace) -> SiteReport:
    """The live server audited as ``manners site LIVE --sample N [--urls ...] --delay S`` audits
    it: its answers checked against the documents' words, and a polite sample of its URLs."""
    return asyncio.run(
        audit_site(
            ask.live,
            agents=[a for a in ask.agents if a != "*"],
            roles=ask.roles,
            sample=ask.sample,
            urls=list(ask.urls) or None,
            timeout=settings.timeout,
            delay=settings.delay,
            max_bytes=settings.max_bytes or 512_000,
        )
    )


def targets_for(ask: Ask, main: Source, report: SiteReport | None) -> tuple[list[str], str | None]:
    """The URLs given; else the server's own, sampled by the audit; else, as ``explain`` takes
    them, each rule's own path (and the live URL first), at most SAMPLED of them."""
    if ask.urls:
        return list(ask.urls), None
    if report is not None and report.matrix:
        return [
            row.url for row in report.matrix
        ], f"no URLs given: {len(report.matrix)} sampled from the server"
    targets = sample_paths(main.robots) if main.read else []
    if ask.live and ask.live not in targets:
        targets.insert(0, ask.live)
    if not targets:
        return [], None
    whole = len(targets)
    note = f"no URLs given: each rule's own path{', and the live URL' if ask.live else ''}"
    if whole > SAMPLED:
        return targets[:SAMPLED], f"{note} (the first {SAMPLED:,} of {whole:,})"
    return targets, note


def side_by_side(
    main: Source, agents: tuple[str, ...], roles: tuple[str, ...], linted: dict[str, list[Diagnostic]]
) -> list[ProfileColumn]:
    """The main file read under every profile: lint's findings, and for each robot the groups
    that apply and its pace, as ``lint`` and ``explain`` give them (the verdicts under each
    profile are explain's matrix).  ``linted``: findings already found, by profile."""
    columns = []
    for name in PROFILES:
        reading = main.robots.reread(name)
        readings = []
        for agent in agents:
            chosen, reason = reading.applies(agent, roles, name)
            speed = pace_lines(pace(reading, agent, roles, name))[0].removeprefix("pace: ")
            readings.append(Reading(chosen, reason, speed))
        found = linted[name] if name in linted else lint(reading, main.body)
        columns.append(ProfileColumn(name, found, readings))
    return columns


def verdict_diff(live: Source, draft: Source, ask: Ask) -> tuple[Diff | None, str | None]:
    """What deploying the draft in place of the live file changes, asked as ``manners diff
    LIVE DRAFT [URL...] --agent ... --role ... [--profile P]`` asks it: '*', every agent either
    file names and the robots given, and each rule's own path when no URLs are given.  A live
    file that could not be fetched leaves nothing to compare, as the command says."""
    if blocked(live.policy):
        note = unread_note(live.policy) if live.policy is not None else None
        return (
            None,
            f"{(note or '').removesuffix('; everything is disallowed until it can be')}: nothing to compare",
        )
    roles: list[str | tuple[str, ...]] = list(ask.roles)
    if len(set(ask.roles)) > 1:  # as diff --role a --role b: each alone, and all of them at once
        roles.append(tuple(dict.fromkeys(ask.roles)))
    found = diff(
        live.robots,
        draft.robots,
        list(ask.urls) or None,
        agents=ask.agents,
        roles=roles,
        profiles=[ask.profile] if ask.profile else [],
        default_profile=scheme_profile(ask.live, "rfc9309"),
    )
    return found, None


# -- HTTP --------------------------------------------------------------------------------


def allowed_hosts(host: str) -> frozenset[str] | None:
    """The Host header values a request may name: the loopback names and the address bound,
    or None (any) when bound to every interface (``--host 0.0.0.0`` says so)."""
    try:
        if ipaddress.ip_address(host).is_unspecified:
            return None
    except ValueError:
        pass
    return LOOPBACK_NAMES | {host.lower()}


def host_of(value: str) -> str:
    """The host of a Host header (``[::1]:8000`` → ``::1``), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """Around the whole app: a request must name a host the server stands for (no DNS
    rebinding from a page elsewhere), and every response gets SECURITY_HEADERS."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in SECURITY_HEADERS.items():
                    headers[key] = value
            await send(message)

        host = Headers(scope=scope).get("host", "")
        if self.hosts is not None and host_of(host) not in self.hosts:
            sentence = f"this server answers for {', '.join(sorted(self.hosts))}, not {host!r}"
            await error_response(400, sentence)(scope, receive, send_secured)
            return
        await self.app(scope, receive, send_secured)


def error_response(status: int, sentence: str, ask: Ask | None = None) -> HTMLResponse:
    return HTMLResponse(page.error_page(status, sentence, ask), status_code=status)


async def read_form(request: Request) -> dict[str, list[str]]:
    """A posted form's fields: only ``application/x-www-form-urlencoded``, at most MAX_BODY bytes."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != FORM:
        shown = kind or "no content type"
        raise BadRequest(415, f"the page takes its form as {FORM}, not {shown}")
    refuse_elsewhere(request, "a form posted")
    origin = request.headers.get("origin")
    if origin is not None and not same_origin(origin, request.headers.get("host", "")):
        raise BadRequest(
            403, f"a form posted from another site ({origin}) is refused: use this page's own form"
        )
    too_large = BadRequest(413, f"the form is larger than {MAX_BODY:,} bytes: paste a smaller draft")
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
        await drain(request)
        raise too_large
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                await drain(request)
                raise too_large
    except ClientDisconnect:
        raise BadRequest(400, "the form was cut off: the browser went away before it was sent") from None
    try:
        text = bytes(body).decode("ascii")
    except UnicodeDecodeError:
        raise BadRequest(400, "the form is not URL-encoded: its body holds bytes beyond ASCII") from None
    return fields_of(text)


async def drain(request: Request) -> None:
    """Read and drop what is left of a body too large (up to DRAIN bytes, for DRAIN_SECONDS at
    most), so that the client, still sending, reads the error page rather than a reset."""
    dropped = 0
    with anyio.move_on_after(DRAIN_SECONDS), contextlib.suppress(ClientDisconnect, RuntimeError):
        async for chunk in request.stream():  # RuntimeError: there was nothing left
            dropped += len(chunk)
            if dropped > DRAIN:
                return


def refuse_elsewhere(request: Request, what: str, ask: Ask | None = None) -> None:
    """BadRequest (403) for a request another site's page made (``Sec-Fetch-Site: cross-site``,
    or ``same-site``: another port or subdomain), before anything is fetched: any page the admin
    visits could otherwise make this machine fetch and audit servers (an ``<img>`` is enough).
    Direct navigation (``none``), the page's own form (``same-origin``) and clients that send no
    such header (curl) are answered."""
    site = request.headers.get("sec-fetch-site", "").strip().lower()
    if site in ELSEWHERE:
        raise BadRequest(
            403,
            f"{what} from another site (Sec-Fetch-Site: {site}) is refused, so that no page elsewhere"
            " can make this machine fetch a server: open this page yourself and use its form",
            ask,
        )


def same_origin(origin: str, host: str) -> bool:
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.strip().lower()


def make_app(settings: argparse.Namespace, host: str = "127.0.0.1") -> ASGIApp:
    """The page's app: GET / (the form, or the answer when the query asks something), POST /
    (the answer), and the page's stylesheet and script.  ``settings`` are the command's
    options: --agent and --role fill the form, --cache, --timeout, --max-bytes and --cached
    govern the live fetch, as for ``manners fetch``."""

    async def respond(ask: Ask) -> Response:
        if ask.empty:
            return HTMLResponse(page.form_page(ask))
        try:
            ask, result = await run_in_threadpool(answer, ask, settings)
        except UsageError as exc:  # what the commands would refuse: the cache, a URL
            raise BadRequest(400, str(exc), ask) from None
        return HTMLResponse(page.answer_page(result))

    async def home(request: Request) -> Response:
        defaults = Ask(agents=(settings.agent,), roles=tuple(settings.role))
        try:
            if request.method == "POST":
                ask = read_ask(await read_form(request), settings)
            else:
                query = request.scope.get("query_string", b"").decode("latin-1")
                ask = read_ask(fields_of(query), settings) if query else defaults
                if ask.live:  # it would fetch (and perhaps audit) a server
                    refuse_elsewhere(request, "a link or an image that fetches a server", ask)
            return await respond(ask)
        except BadRequest as exc:
            return error_response(exc.status, exc.sentence, exc.ask or defaults)

    async def css(request: Request) -> Response:
        return Response(page.CSS, media_type="text/css")

    async def js(request: Request) -> Response:
        return Response(page.JS, media_type="text/javascript")

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        sentence = {404: f"there is no page at {request.url.path!r}: the page is at /",
                    405: f"{request.method} is not how this page is asked: GET or POST /"}.get(
            exc.status_code, str(exc.detail))  # fmt: skip
        return error_response(exc.status_code, sentence)

    async def server_error(request: Request, exc: Exception) -> Response:
        log.error("manners serve could not answer %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "the page could not answer this (the server's log says why)")

    app = Starlette(
        routes=[
            Route("/", home, methods=["GET", "POST"]),
            Route("/page.css", css, methods=["GET"]),
            Route("/page.js", js, methods=["GET"]),
        ],
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
    return Guard(app, allowed_hosts(host))


__all__ = ["MAX_BODY", "Answer", "Ask", "BadRequest", "answer", "make_app", "read_ask"]
