"""The google profile against Google's C++ parser (fast-robotstxt), on 4,231 real files.

Test URLs come from each file's own rules (see corpus.rule_paths), asked for two
agents: googlebot, which many files name, and one no file names.
"""

from __future__ import annotations

import pytest
import robotstxt  # fast-robotstxt, a test dependency: its absence must fail, not skip

import manners
from corpus import WEB, Comparison, binding_rewrite, compare_with_google


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    return compare_with_google()


def test_agreement_with_googles_parser(comparison: Comparison) -> None:
    assert comparison.answers > 150_000
    # On every URL the binding passes through as given, the answers are the same.
    assert [d for d in comparison.differences if binding_rewrite(d[2]) == d[2]] == []
    # Overall, counting the URLs it rewrites first (docs/conformance.md reports this figure).
    assert 1 - len(comparison.differences) / comparison.answers >= 0.997


def test_every_difference_is_the_bindings_url_rewrite(comparison: Comparison) -> None:
    matcher = robotstxt.RobotsMatcher()
    for host, agent, url, _ours, theirs in comparison.differences:
        body = (WEB / host).read_bytes().decode("utf-8", "replace")
        rewritten = binding_rewrite(url)
        # Asked about the URL it actually matched, we give the binding's answer,
        assert manners.parse(body, profile="google", max_bytes=None).allowed(rewritten, agent) is theirs
        # and the binding gives it too.
        assert matcher.is_allowed(body, agent, rewritten) is theirs
