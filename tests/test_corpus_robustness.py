"""Every real file parses and answers without an exception, under every profile."""

from __future__ import annotations

import pytest

import manners
from corpus import BENCH, SMALLNET, rule_paths, web_files

FILES = web_files()


def test_corpus_is_there() -> None:
    assert len(FILES) == 4231


@pytest.mark.parametrize("profile", sorted(manners.PROFILES))
def test_web_corpus_under_every_profile(profile: str) -> None:
    answered = 0
    for path in FILES:
        robots = manners.parse(path.read_bytes(), profile=profile)
        for p in rule_paths(robots, limit=6):
            d = robots.decide(f"https://{path.name}{p}", "googlebot", ("indexer",))
            assert d.allowed is robots.allowed(f"https://{path.name}{p}", "googlebot", ("indexer",))
            answered += 1
        robots.crawl_delay("googlebot")
        assert all(d.code for d in robots.diagnostics)
    assert answered > 20_000


def test_server_captures_and_bench_files_parse() -> None:
    for path in [*SMALLNET.glob("server_transcripts/*"), *sorted((BENCH / "robotfiles").iterdir())[:300]]:
        robots = manners.parse(path.read_bytes())
        assert isinstance(robots.allowed("/x"), bool)
        assert all(d.code for d in robots.diagnostics)


def test_decisions_name_real_lines() -> None:
    """The line a decision names holds the rule it quotes."""
    checked = 0
    for path in FILES[::20]:
        body = path.read_bytes()
        robots = manners.parse(body, profile="google")
        lines = body.decode("utf-8", "surrogateescape").replace("\r\n", "\n").replace("\r", "\n").split("\n")
        for p in rule_paths(robots, limit=10):
            d = robots.decide(f"https://{path.name}{p}", "googlebot")
            if d.line is not None:
                assert d.rule is not None
                value = d.rule.split(": ", 1)[1]
                assert value in lines[d.line - 1]
                checked += 1
    assert checked > 500
