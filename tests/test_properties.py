"""Properties over generated files: never an exception, and the fast paths (agent-line
index, one-pass first answer, bucketed index) agree with the naive reference reader."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import manners
import reference
from manners._core import google_escape, google_path

AGENT_VALUES = [
    "*",
    "FooBot",
    "foobot",
    "FooBot/1.0",
    "Foo Bot",
    "* extra",
    "barbot",
    "indexer",
    "archiver",
    "",
]
KEYS = {
    "agent": ["User-agent", "user-agent", "USER-AGENT", "useragent", "User agent"],
    "virtual": ["Virtual-agent"],
    "allow": ["Allow", "allow", "ALLOW"],
    "disallow": ["Disallow", "disallow", "Dissallow", "Disalow", "DISALLOW"],
}
PATH_ALPHABET = st.sampled_from(
    ["/", "a", "b", "c", "*", "$", "?", "=", "%2F", "%2f", "%61", "\u00e9", ".", "_", " "]
)
# A small pool makes the interesting collisions (the same pattern allowed and
# disallowed, a pattern and its index.html form) common; the random tail finds the rest.
POOL = ["/", "/a", "/a/", "/a*", "/a$", "*", "/*b", "/a/index.html", "/ab", "/%61", "/a?b=", "/\u00e9", ""]
patterns = st.one_of(st.sampled_from(POOL), st.lists(PATH_ALPHABET, max_size=6).map("".join))
paths = st.one_of(
    st.sampled_from(["/", "/a", "/a/", "/ab", "/a/b", "/robots.txt", "/a?b=c", "/%C3%A9"]),
    st.lists(PATH_ALPHABET.filter(lambda c: c not in "*$ "), max_size=7).map(lambda cs: "/" + "".join(cs)),
)


@st.composite
def lines(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["agent", "agent", "virtual", "allow", "disallow", "disallow", "other"]))
    if kind == "other":
        return draw(
            st.sampled_from(
                [
                    "",
                    "# comment",
                    "Crawl-delay: 5",
                    "Sitemap: http://x/s.xml",
                    "Foo: bar",
                    "junk",
                    "  ",
                    "Check: 9",
                ]
            )
        )
    key = draw(st.sampled_from(KEYS[kind]))
    value = draw(st.sampled_from(AGENT_VALUES)) if kind in ("agent", "virtual") else draw(patterns)
    if kind in ("allow", "disallow") and value and " " not in value and draw(st.booleans()):
        sep = " "  # a missing colon, which Google forgives
    else:
        sep = draw(st.sampled_from([":", ": ", " : ", ":\t"]))
    comment = draw(st.sampled_from(["", "", " # note"]))
    return f"{draw(st.sampled_from(['', ' ', chr(9)]))}{key}{sep}{value}{comment}"


robots_files = st.tuples(st.lists(lines(), max_size=14), st.sampled_from(["\n", "\r\n", "\r"])).map(
    lambda t: t[1].join(t[0])
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    robots_files,
    paths,
    st.sampled_from(["FooBot", "barbot", "other"]),
    st.sampled_from(["google", "rfc9309"]),
)
def test_web_profiles_agree_with_the_reference(text: str, path: str, agent: str, profile: str) -> None:
    prof = manners.PROFILES[profile]
    url = "http://example.com" + path
    expected = reference.allowed(manners.parse(text, profile=profile), prof, url, agent)
    robots = manners.parse(text, profile=profile)
    assert robots.allowed(url, agent) is expected  # first ask: one pass over the rules as written
    assert robots.allowed(url, agent) is expected  # second ask: the bucketed index
    assert robots.decide(url, agent).allowed is expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    robots_files,
    paths,
    st.sampled_from(["FooBot", "other", "FooBot/1.0 (+http://x)", "AB42bot"]),
    st.sampled_from([(), ("indexer",), ("archiver", "indexer"), ("webproxy",)]),
    st.sampled_from(["gemini", "gemini-targeted", "gopher", "rfc9309"]),
)
def test_smallnet_profiles_agree_with_the_reference(
    text: str, path: str, agent: str, roles, profile: str
) -> None:
    prof = manners.PROFILES[profile]
    scheme = {"gemini": "gemini://example.com", "gopher": "gopher://example.com/1"}
    target = scheme.get(profile.split("-")[0], "https://example.com") + path
    expected = reference.allowed(manners.parse(text, profile=profile), prof, target, agent, roles)
    robots = manners.parse(text, profile=profile)
    assert robots.allowed(target, agent, roles) is expected
    assert robots.allowed(target, agent, roles) is expected
    assert robots.decide(target, agent, roles).allowed is expected


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.text(max_size=40), st.sampled_from(sorted(manners.PROFILES)))
def test_any_bytes_parse_and_answer(data: bytes, target: str, profile: str) -> None:
    robots = manners.parse(data, profile=profile)
    is_url = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", target) is not None  # "a://" is a URL, path "/"
    if profile not in ("google", "gopher") and not target.startswith("/") and not is_url:
        with pytest.raises(ValueError, match="neither a URL"):  # example.org/x names no path
            robots.allowed(target)
        target = "/" + target
    assert isinstance(robots.allowed(target, "FooBot", ["indexer"]), bool)
    d = robots.decide(target, "FooBot", ["indexer"])
    assert isinstance(d.reason, str) and d.reason
    assert robots.crawl_delay("FooBot") is None or robots.crawl_delay("FooBot") >= 0  # type: ignore[operator]
    assert robots.request_rate("FooBot") is None or robots.request_rate("FooBot")[0] > 0  # type: ignore[index]
    robots.check_interval("FooBot", ["indexer"])
    assert all(isinstance(s, str) and s for s in robots.sitemaps)
    for diag in robots.diagnostics:
        assert diag.severity in ("error", "warning", "info")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=600), st.text(max_size=40))
def test_any_text_parses(text: str, target: str) -> None:
    robots = manners.parse(text)
    target = "/" + target
    assert isinstance(robots.allowed(target), bool)
    assert all(d.code for d in robots.diagnostics)
    assert all(g.lines[0] <= g.lines[1] for g in robots.groups())


@settings(max_examples=200, deadline=None)
@given(patterns, paths)
@example("//", "//")  # Google reads "//" as an empty authority: its path is "/"
def test_wildcard_matching_agrees_with_googles_algorithm(pattern: str, path: str) -> None:
    robots = manners.parse(f"User-agent: *\nDisallow: {pattern}\n", "google")
    value = pattern.strip()  # as the line reads it
    # Google reads a target as its GetPathParamsQuery does: "//x" starts an authority
    expected = bool(value) and reference.matches(google_path(path), google_escape(value), True, True)
    assert robots.allowed(path) is not expected
