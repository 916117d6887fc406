"""What a user names on the command line, checked before anything is fetched.

A target is a URL manners reads robots.txt for, or a path; an agent is a name with a product
token.  Each check turns a mistake into one sentence (:class:`manners.output.UsageError`),
the same for every command; :func:`as_read_by` is a target as a robot reading the file
under a profile asks about it.
"""

from __future__ import annotations

import functools
import re

from .agents import require_token
from .diagnostics import quoted
from .fetch import robots_locations
from .fetch.locations import DEFAULT_PORTS
from .output import UsageError
from .profiles import RFC9309, profile_for
from .robots import RobotsTxt, parse


def is_url(text: str) -> bool:
    """Whether ``text`` is an absolute URL (a scheme, then "://"), not a file or a path."""
    return _URL_START.match(text) is not None


_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


def scheme_profile(source: str, default: str) -> str:
    """The profile a gemini:// or gopher:// source calls for, else ``default``."""
    name = profile_for(source).name if is_url(source) else RFC9309.name
    return default if name == RFC9309.name else name


def check_url(url: str) -> None:
    """A URL manners can find a robots.txt for: a scheme it reads, and a host."""
    if not is_url(url):
        raise UsageError(f"{quoted(url)} is no URL: give a full URL, such as https://example.org/")
    scheme = url.split("://", 1)[0].lower()
    if scheme not in DEFAULT_PORTS:
        known = ", ".join(f"{s}://" for s in DEFAULT_PORTS)
        raise UsageError(f"{url}: unknown scheme {quoted(scheme)}; manners reads robots.txt for {known} URLs")
    try:
        robots_locations(url)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_target(target: str, profile: str | None) -> None:
    """A target is a URL manners reads, or a path as the reading takes one (a path starting
    with '/'; a bare selector too under the gopher profile), exactly as the API accepts it.
    Anything else, such as ``example.org/x``, is one sentence before anything is fetched."""
    if is_url(target):
        check_url(target)
        return
    try:
        _blank(profile).decide(target)
    except ValueError:
        raise UsageError(
            f"{quoted(target)} is neither a URL nor a path: give a full URL (scheme://host/path)"
            " or a path starting with '/'"
        ) from None


@functools.cache
def _blank(profile: str | None) -> RobotsTxt:
    return parse(b"", profile)


def check_agent(agent: str) -> None:
    """A name with no product token would match no group and run under '*' unnoticed."""
    try:
        require_token(agent)
    except ValueError as exc:
        raise UsageError(f"--agent: {exc}") from None


def as_read_by(target: str, profile: str) -> str:
    """``target`` as a robot reading the file under ``profile`` asks about it.

    A Gopher robot matches selectors: a gopher:// URL gives its own (the engine takes the
    item type off), and any other URL its path, as the rule rows spell paths, never a
    Gemini or Web path read as if its first character were a Gopher item type.  Every
    other robot matches URL paths, so a bare selector is a path from the root."""
    if profile == "gopher":
        if is_url(target) and target[:9].lower() != "gopher://":
            return url_path(target)
        return target
    return target if is_url(target) or target.startswith("/") else "/" + target


def url_path(url: str) -> str:
    """What follows the authority in ``url`` (its path and query), '/' when nothing does."""
    rest = url.split("://", 1)[1]
    at = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    return rest[at:].split("#", 1)[0] or "/"
