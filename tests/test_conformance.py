"""Google's language-neutral conformance suite, under the google and rfc9309 profiles."""

from __future__ import annotations

import pytest

import manners
from conformance import Expectation, expectations

pytestmark = pytest.mark.quick

CASES = expectations()

# The rfc9309 profile deliberately departs from Google on these STANDARD expectations
# (see docs/conformance.md): RFC 9309 §2.2.2 normalisation makes "/foo/bar/ツ" and
# "/foo/bar/%E3%83%84" (and %62%61%7A and "baz") the same path, and §2.2.2 makes
# /robots.txt implicitly allowed.
RFC9309_DEVIATIONS = {
    "correctness/non-ascii-paths:1:1": "normalisation",
    "correctness/non-ascii-paths:2:1": "normalisation",
    "correctness/non-ascii-paths:3:0": "normalisation",
    "stress/327748:0:5": "robots.txt",
    "stress/369883:0:5": "robots.txt",
    "stress/369883:0:9": "robots.txt",
    "stress/860237:0:9": "robots.txt",
}


def test_the_suite_is_all_there() -> None:
    assert len(CASES) == 400
    assert sum(c.google_specific for c in CASES) == 22


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_google_profile(case: Expectation) -> None:
    robots = manners.parse(case.robotstxt, profile="google", max_bytes=None)
    assert robots.allowed(case.url, case.agent) is case.allowed
    assert robots.allowed(case.url, case.agent) is case.allowed  # indexed on the second ask
    assert robots.decide(case.url, case.agent).allowed is case.allowed


STANDARD = [c for c in CASES if not c.google_specific]


@pytest.mark.parametrize("case", STANDARD, ids=[c.id for c in STANDARD])
def test_rfc9309_profile(case: Expectation) -> None:
    robots = manners.parse(case.robotstxt, profile="rfc9309", max_bytes=None)
    expected = case.allowed
    if case.id in RFC9309_DEVIATIONS:
        expected = not expected
        if RFC9309_DEVIATIONS[case.id] == "robots.txt":
            assert case.url.endswith("/robots.txt")
    assert robots.allowed(case.url, case.agent) is expected
    assert robots.decide(case.url, case.agent).allowed is expected
