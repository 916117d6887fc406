"""The audit's requests: a few questions to one server, asked politely, each with a deadline.

:func:`audit_site` asks what the checks need (Gopher: the robots.txt selectors, a selector
that cannot exist, the root, about.txt, caps.txt, a ``URL:`` selector; Gemini and HTTP(S):
``/robots.txt`` and its redirects), one request at a time, ``spacing`` seconds after the end
of the one before (``delay``, or what robots.txt asks of the robot, whichever is longer, as a
Robot spaces requests).  Then it takes the sample of the server's URLs for the matrix
(:mod:`.sample`).  Every request has its deadline (connecting, each read, the whole
exchange); after two requests in a row get no answer the rest are not sent, so a server that
stalls costs two timeouts, not one per question.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ...agents import require_token
from ...crawl.client import gemini_get
from ...diagnostics import lint
from ...fetch import FetchResult, robots_locations
from ...fetch import gopher as gopher_fetch
from ...fetch import http as http_fetch
from ...fetch.certificate import Certificate, read_certificate
from ...fetch.locations import split_authority
from ...fetch.net import Deadlines, NetworkError
from ...fetch.outcome import (
    GOPHER_SELECTORS,
    MAX_REDIRECTS,
    gemini_result,
    http_redirect,
    http_result,
    too_many_redirects,
    unreachable,
)
from ...output import UsageError as CliUsage
from ...pace import MAX_DELAY
from ...robots import RobotsTxt, asked_spacing
from ...targets import check_url, is_url, scheme_profile
from . import gemini, gopher, gopher_url, http, matrix, sample
from . import usage as usage_of
from .report import SEVERITIES, Finding, Reply, Sample, SiteReport

if TYPE_CHECKING:
    import httpx

READ_MAX = 1 << 20  # bytes of a Gopher reply read (robots.txt: as much as --max-bytes asks)
GIVE_UP = 2  # requests in a row with no answer, after which the rest are not sent


class UsageError(CliUsage, ValueError):
    """A mistake in what the audit was asked: one sentence, raised before anything is sent; a
    ValueError to Python callers, and a mistake of the user's that the commands print as theirs."""


class Pacer:
    """One request at a time, each ``spacing`` seconds after the end of the one before; after
    GIVE_UP requests in a row with no answer, none at all."""

    def __init__(self, spacing: float) -> None:
        self.spacing = spacing
        self.sent = 0
        self.failed = 0  # requests in a row with no answer
        self._end: float | None = None

    @property
    def gone(self) -> bool:
        return self.failed >= GIVE_UP

    async def wait(self) -> None:
        """Return when the next request to the server is polite."""
        if self._end is not None:
            left = self._end + self.spacing - time.monotonic()
            if left > 0:
                await asyncio.sleep(left)

    async def turn(self) -> None:
        """Wait for the next request's turn, and count it."""
        await self.wait()
        self.sent += 1

    def respect(
        self, robots: RobotsTxt, agent: str, roles: tuple[str, ...], profile: str, delay: float
    ) -> None:
        """Space the requests as a Robot does once it has read robots.txt: the longest of ``delay``,
        the Crawl-delay and the Request-rate for this robot, up to 300 s."""
        self.spacing = min(max(delay, asked_spacing(robots, agent, roles, profile=profile)), MAX_DELAY)

    def done(self, answered: bool) -> None:
        self._end = time.monotonic()
        self.failed = 0 if answered else self.failed + 1


def check_request(
    url: str,
    agents: Sequence[str],
    sample_size: int,
    urls: Iterable[str] | None,
    timeout: float,
    delay: float,
) -> list[str] | None:
    """What is wrong with the request, as one sentence (UsageError), before anything is sent;
    the ``urls`` given, checked (None when none were)."""
    try:
        check_url(url)
        for agent in agents:
            require_token(agent)
    except CliUsage as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(f"--agent: {exc}") from None
    if sample_size < 0:  # the words of manners.options, whose checks the command line makes
        raise UsageError(f"--sample: give 0 or more, not {sample_size}")
    if not math.isfinite(timeout):
        raise UsageError(f"--timeout: '{timeout}' is not a number of seconds")
    if timeout <= 0:
        raise UsageError(f"--timeout: give more than 0 seconds, not {timeout:g}")
    if not 0 <= delay <= MAX_DELAY:
        raise UsageError(f"--delay: give seconds from 0 to {MAX_DELAY:g}, not {delay:g}")
    if urls is None:
        return None
    mine = robots_locations(url)[0]
    given = []
    for target in urls:
        if is_url(target):
            try:
                same = robots_locations(target)[0] == mine
            except ValueError:
                same = False
            if not same:
                raise UsageError(f"{target} is not on the server audited ({url}): give its URLs, or paths")
        elif not target.startswith("/"):
            raise UsageError(
                f"{target!r} is neither a URL nor a path: give a full URL or a path starting with '/'"
            )
        given.append(target)
    return given


async def audit_site(
    url: str,
    *,
    agents: Sequence[str] = (),
    roles: Sequence[str] = (),
    sample: int = 50,
    urls: Iterable[str] | None = None,
    timeout: float = 10.0,
    delay: float = 1.0,
    max_bytes: int = 512_000,
) -> SiteReport:
    """Audit how the server of ``url`` speaks to robots (gemini://, gopher://, http(s)://).

    ``agents``: robots to add to the matrix (the first is also the robot the sample crawl acts as;
    default ``*``), acting in ``roles``.  ``sample``: pages the sample crawl may fetch (0: none);
    ``urls``: the matrix's URLs instead (URLs of this server, or paths).  ``timeout``: seconds
    each request may take; ``delay``: seconds between two requests at least (more when
    robots.txt asks for more, up to 300).  ``max_bytes``: of robots.txt read, as a robot reads it.

    Never raises for what a server or the network does: a server that does not answer the first
    request is ``reachable=False`` with the reason in ``problem``.  UsageError (a ValueError),
    one sentence, for a request that cannot be made, before anything is sent.
    """
    given = check_request(url, agents, sample, urls, timeout, delay)
    if max_bytes < 1:
        raise UsageError(f"--max-bytes: give 1 or more, not {max_bytes}")
    robot = agents[0] if agents else "*"
    acting = tuple(roles)
    scheme = url.split("://", 1)[0].lower()
    profile = scheme_profile(url, "rfc9309")
    started, clock = time.time(), time.monotonic()
    pacer = Pacer(delay)
    deadlines = Deadlines.of(timeout)

    def respect(result: FetchResult) -> None:
        pacer.respect(_reading(result, profile), robot, acting, profile, delay)

    header = None
    if scheme == "gopher":
        result, findings, problem = await _gopher(url, pacer, deadlines, max_bytes, respect)
    elif scheme == "gemini":
        result, findings, problem = await _gemini(url, pacer, timeout, max_bytes)
    else:
        result, findings, problem, header = await _http(url, pacer, deadlines, max_bytes)
    report = SiteReport(
        url,
        scheme,
        profile,
        result,
        reachable=problem is None,
        problem=problem,
        findings=sorted(findings, key=lambda f: SEVERITIES.index(f.severity)),
        started_at=started,
        spacing=pacer.spacing,
    )
    if problem is None:
        reading = _reading(result, profile)
        if result.outcome == "ok":
            report.diagnostics = lint(reading, result.body)
        respect(result)
        report.spacing = pacer.spacing
        report.columns = matrix.columns_for(reading, profile, agents, acting)
        if given is not None:
            targets = [(t, "given") for t in given]
            report.sample = Sample("given", len(targets))
        elif sample == 0:
            targets = []
        elif pacer.gone:
            targets = []
            report.sample = Sample("none", sample, "no sample was taken: the server stopped answering")
        elif scheme in ("gemini", "gopher"):
            targets, sent, note = await _crawled(url, robot, acting, sample, delay, pacer, timeout)
            report.sample = Sample("crawl", sample, note)
            report.requests += sent
        else:
            targets = await _web_sample(url, reading, robot, acting, sample, pacer, deadlines)
            report.sample = Sample("home page and sitemaps", sample)
        report.matrix = matrix.decide(reading, profile, targets, report.columns)
        if scheme in ("http", "https"):  # the small net's profiles do not read usage lines
            root = robots_locations(url)[0].removesuffix("robots.txt")
            shown = [r.url for r in report.matrix]
            report.usage = usage_of.site_usage(reading, profile, root, shown, robot, acting)
            report.content_usage = header
    report.requests += pacer.sent
    report.took = time.monotonic() - clock
    return report


def _reading(result: FetchResult, profile: str) -> RobotsTxt:
    """The file as a robot of the server's scheme reads it (a file not read: the fetch's verdict)."""
    return result.robots.reread(profile) if result.outcome == "ok" else result.robots


def _reason(error: str) -> tuple[str, str]:
    """The name and the why of a request's error, ``name: why``, as a fetch's outcome takes them."""
    name, _, why = error.partition(": ")
    return name, why


# -- Gopher --------------------------------------------------------------------------------


async def _gopher(
    url: str, pacer: Pacer, deadlines: Deadlines, max_bytes: int, respect: Callable[[FetchResult], None]
) -> tuple[FetchResult, list[Finding], str | None]:
    host, port = split_authority(url)
    limit = max(max_bytes + 1, READ_MAX)

    async def ask(selector: str) -> Reply:
        if pacer.gone:
            return Reply(selector, error=f"not sent: {GIVE_UP} requests in a row got no answer")
        await pacer.turn()
        try:
            data = await asyncio.wait_for(
                gopher_fetch.request(host, port, selector, deadlines, limit), deadlines.total
            )
        except NetworkError as exc:
            pacer.done(False)
            return Reply(selector, error=f"{exc.name}: {exc.why}")
        except (TimeoutError, asyncio.TimeoutError):
            pacer.done(False)
            return Reply(selector, error=f"timeout: no whole answer in {deadlines.total:g} s")
        pacer.done(True)
        return Reply(selector, data)

    robots = [await ask(GOPHER_SELECTORS[0])]
    if robots[0].error is not None:  # the first question: a server that does not answer it is not audited
        return _gopher_result(url, robots, max_bytes), [], f"the server did not answer: {robots[0].error}"
    robots += [await ask(selector) for selector in GOPHER_SELECTORS[1:]]
    result = _gopher_result(url, robots, max_bytes)
    respect(result)  # the questions that follow are spaced as the file asks
    missing = await ask(gopher.missing_selector(secrets.token_hex(8)))
    root = await ask("")
    about = [await ask("about.txt")]
    if not gopher.is_file(about[0], missing) and about[0].error is None:
        about.append(await ask("/about.txt"))
    caps = (await ask("caps.txt"), await ask("/caps.txt"))
    page = await ask(gopher_url.URL_SELECTOR)
    read = result.extra.get("selector") if result.outcome == "ok" else None
    replies = gopher.GopherReplies(tuple(robots), missing, root, tuple(about), caps, page, read)
    return result, gopher.check(replies), None


def _gopher_result(url: str, robots: list[Reply], max_bytes: int) -> FetchResult:
    """What a robot reads from these replies (to GOPHER_SELECTORS, in order), as a robot's fetch
    reads them: every selector was asked, or the first got no answer, so they decide."""
    replies = [r.data if r.error is None else NetworkError(*_reason(r.error)) for r in robots]
    result = gopher_fetch.first_answered(robots_locations(url)[0], replies, max_bytes)
    assert result is not None
    return result


# -- Gemini --------------------------------------------------------------------------------


async def _gemini(
    url: str, pacer: Pacer, timeout: float, max_bytes: int
) -> tuple[FetchResult, list[Finding], str | None]:
    location = robots_locations(url)[0]
    host = split_authority(url)[0]
    known: dict[str, str] = {}
    hops: list[gemini.Hop] = []
    cert: Certificate | None = None
    current = location
    while True:
        await pacer.turn()
        r = await gemini_get(current, timeout=timeout, max_bytes=max_bytes + 1, known_hosts=known)
        pacer.done(r.error is None or r.error.startswith(gemini.MALFORMED))
        if cert is None and r.certificate:
            cert = read_certificate(r.certificate)
        if r.error is not None:
            hop = gemini.Hop(current, None, error=r.error)
        else:
            hop = gemini.Hop(current, r.status, r.meta, r.body, r.truncated)
        hops.append(hop)
        if r.error is not None and not hops[:-1] and not r.error.startswith(gemini.MALFORMED):
            return unreachable(location, *_reason(r.error)), [], f"the server did not answer: {r.error}"
        # a robot follows a redirect to any gemini:// URL, off the server too (RFC 9309 §2.3.1.2,
        # as manners.fetch.gemini does): the audit reads the chain as that robot reads it
        where = gemini.followed(hop)
        redirects = tuple(h.url for h in hops[1:])
        if where is None:
            break
        if len(hops) > MAX_REDIRECTS:
            return (
                too_many_redirects(location, hop.status or 0, (*redirects, where)),
                _gemini_findings(hops, cert, host, location),
                None,
            )
        current = where
    final = hops[-1]
    redirects = tuple(h.url for h in hops[1:])
    if final.error is not None:
        result = unreachable(location, *_reason(final.error), final.url, redirects=redirects)
    else:
        assert final.status is not None
        result = gemini_result(
            location,
            final.url,
            final.status,
            final.meta,
            final.body,
            max_bytes=max_bytes,
            redirects=redirects,
        )
    return result, _gemini_findings(hops, cert, host, location), None


def _gemini_findings(
    hops: list[gemini.Hop], cert: Certificate | None, host: str, location: str
) -> list[Finding]:
    found = gemini.check(hops)
    if cert is not None:
        found += gemini.check_certificate(cert, host, time.time(), location)
    return found


# -- HTTP(S) -------------------------------------------------------------------------------


async def _http(
    url: str, pacer: Pacer, deadlines: Deadlines, max_bytes: int
) -> tuple[FetchResult, list[Finding], str | None, usage_of.Header | None]:
    """robots.txt as a robot reads it, the findings, why the server was not audited (None: it
    was), and the Content-Usage header of the answer robots.txt came in (a 2xx), if any."""
    location = robots_locations(url)[0]
    limit = max(max_bytes, http.ROBOTS_LIMIT) + 1
    hops: list[http.Hop] = []
    async with _client(deadlines) as client:
        current = location
        while True:
            status, headers, body, error = await _get(client, current, limit, pacer, deadlines)
            hops.append(http.Hop(current, status, headers, body, len(body) >= limit, error))
            redirects = tuple(h.url for h in hops[1:])
            if error is not None:
                result = unreachable(location, *_reason(error), current, redirects=redirects)
                if len(hops) == 1:
                    return result, [], f"the server did not answer: {error}", None
                break
            assert status is not None
            target = http_redirect(status, headers, current)
            if target is None:
                result = http_result(
                    location,
                    current,
                    status,
                    headers,
                    body[: max_bytes + 1],
                    max_bytes=max_bytes,
                    redirects=redirects,
                )
                break
            if len(hops) > MAX_REDIRECTS:
                result = too_many_redirects(location, status, (*redirects, target))
                break
            current = target
    final = hops[-1]
    read = final.status is not None and 200 <= final.status < 300
    header = usage_of.header(final.url, final.headers) if read else None
    return result, http.check(hops), None, header


def _client(deadlines: Deadlines) -> httpx.AsyncClient:
    from ...version import __version__

    return http_fetch.client(deadlines, f"manners/{__version__} (site audit)")


async def _get(
    client: httpx.AsyncClient, url: str, limit: int, pacer: Pacer, deadlines: Deadlines
) -> tuple[int | None, dict[str, str], bytes, str | None]:
    """One GET, paced, within its deadline: (status, headers with lower-case names, the body
    decoded and cut at ``limit``, None), or (None, {}, b"", "name: why")."""
    import httpx  # only audits of the Web need it

    if pacer.gone:
        return None, {}, b"", f"not sent: {GIVE_UP} requests in a row got no answer"
    await pacer.turn()

    async def exchange() -> tuple[int, dict[str, str], bytes]:
        async with client.stream("GET", url) as response:
            headers = {k.lower(): v for k, v in response.headers.items()}
            return response.status_code, headers, await http_fetch.read_capped(response, limit)

    try:
        status, headers, body = await asyncio.wait_for(exchange(), deadlines.total)
    except httpx.HTTPError as exc:
        pacer.done(False)
        err = http_fetch.network_error(exc, url)
        return None, {}, b"", f"{err.name}: {err.why}"
    except (TimeoutError, asyncio.TimeoutError):
        pacer.done(False)
        return None, {}, b"", f"timeout: no whole answer in {deadlines.total:g} s"
    pacer.done(True)
    return status, headers, body, None


async def _web_sample(
    url: str,
    robots: RobotsTxt,
    agent: str,
    roles: tuple[str, ...],
    size: int,
    pacer: Pacer,
    deadlines: Deadlines,
) -> sample.Targets:
    async with _client(deadlines) as client:

        async def get(target: str, limit: int) -> tuple[int | None, dict[str, str], bytes]:
            status, headers, body, _ = await _get(client, target, limit, pacer, deadlines)
            return status, headers, body

        return await sample.web(url, robots, agent, roles, size, get)


async def _crawled(
    url: str, agent: str, roles: tuple[str, ...], size: int, delay: float, pacer: Pacer, timeout: float
) -> tuple[sample.Targets, int, str | None]:
    await pacer.wait()  # the crawl's first request keeps the spacing from the audit's last; it counts its own
    try:
        return await sample.crawl(url, agent, roles, size, delay, pacer.spacing, timeout)
    finally:
        pacer.done(True)
