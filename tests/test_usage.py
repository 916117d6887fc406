"""Usage preferences (issue 35): Content-Usage (draft-ietf-aipref-attach-05 with the vocabulary
draft-ietf-aipref-vocab-08) and Content-Signal (draft-romm-aipref-contentsignals-00), read by
``robots.usage``.  Each draft example is a test named after the draft's section (number and
heading, as the rendered draft numbers them); verdicts never change."""

from __future__ import annotations

import dataclasses

import pytest

import manners
from manners import Preference, Usage
from manners.profiles import PROFILES

pytestmark = pytest.mark.quick

ATTACH_3_4 = """User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: train-ai=y
"""


def stated(prefs: tuple[Preference, ...]) -> dict[str, tuple[str, int | None]]:
    return {p.category: (p.value, p.line) for p in prefs if p.value != "unstated"}


def statement(value: str) -> dict[str, str]:
    """What a Content-Usage line with this statement says, category by category."""
    robots = manners.parse(f"User-agent: *\nContent-Usage: {value}\n")
    return {p.category: p.value for p in robots.usage("/x").categories}


def test_attach_3_4_example_table() -> None:
    """attach 3.4 "Example": the figure, and its table of paths for the first group."""
    robots = manners.parse(ATTACH_3_4)
    test, never, ai_ok = (robots.usage(p, "somebot") for p in ("/test", "/never/test", "/ai-ok/test"))
    assert (test.allowed, stated(test.categories)) == (True, {"train-ai": ("no", 4)})
    assert (never.allowed, stated(never.categories)) == (False, {})  # "N/A": may not be fetched
    assert all(p.line is None for p in never.categories + never.signals)
    assert (ai_ok.allowed, stated(ai_ok.categories)) == (True, {"train-ai": ("yes", 5)})


def test_attach_3_4_example_examplebot_uses_the_second_group() -> None:
    """attach 3.4 "Example": ExampleBot "would be able to obtain all content and apply usage
    preferences of" train-ai=y (the text's "ai=y" is the figure's train-ai=y)."""
    robots = manners.parse(ATTACH_3_4)
    for path in ("/test", "/never/test", "/ai-ok/test"):
        u = robots.usage(path, "ExampleBot/2.0 (+https://example.com)")
        assert (u.allowed, stated(u.categories)) == (True, {"train-ai": ("yes", 9)})


def test_attach_1_2_examples_robots_txt() -> None:
    """attach 1.2 "Examples": the same directive in robots.txt as in the HTTP header."""
    robots = manners.parse("User-Agent: *\nAllow: /\nContent-Usage: train-ai=n\n")
    u = robots.usage("https://example.com/any/page", "anybot")
    assert stated(u.categories) == {"train-ai": ("no", 3)}
    assert u.category("train-ai") == Preference("train-ai", "no", 3)
    assert u.category("search") == Preference("search", "unstated", None)


def test_attach_3_1_identical_paths_combine_the_most_restrictive() -> None:
    """attach 3.1 "Content-Usage Rule Semantics": identical paths' conflicting preferences apply
    "according to" vocab 5.1 "Combining Preferences" (not the more permissive, as for Allow)."""
    robots = manners.parse(
        "User-agent: *\nContent-Usage: /a train-ai=y, search=y\nContent-Usage: /a train-ai=n\n"
        "Content-Usage: /a/b ai-use=y\nContent-Usage: search=n\n"
    )
    assert stated(robots.usage("/a/x").categories) == {"train-ai": ("no", 3), "search": ("yes", 2)}
    # the longest path decides, whole: what it leaves unstated is not taken from a shorter one
    assert stated(robots.usage("/a/b/c").categories) == {"ai-use": ("yes", 4)}
    assert stated(robots.usage("/z").categories) == {"search": ("no", 5)}


def test_attach_3_1_paths_match_as_allow_and_disallow_do() -> None:
    """attach 3.1: "the same path prefix matching rules as defined for Allow and Disallow", the
    same percent-encoding; RFC 9309's '*' and '$'."""
    robots = manners.parse(
        "User-agent: *\nContent-Usage: /*.pdf$ train-ai=n\nContent-Usage: /caf%C3%A9/ search=n\n"
    )
    assert stated(robots.usage("/docs/a.pdf").categories) == {"train-ai": ("no", 2)}
    assert stated(robots.usage("/docs/a.pdf?x=1").categories) == {}
    assert stated(robots.usage("https://example.com/café/menu").categories) == {"search": ("no", 3)}


def test_attach_3_2_processing_path_and_statement() -> None:
    """attach 3.2 "Processing Content-Usage Rules": the label in any case with SP/HTAB around
    it and the colon; a value starting with '/' has a path up to SP or HTAB; anything else is
    all statement; '#' ends the value."""
    robots = manners.parse(
        "User-agent: *\n \tcontent-USAGE \t: \t/p\t train-ai=n  # a comment\nContent-Usage: *x train-ai=n\n"
    )
    assert stated(robots.usage("/p/1").categories) == {"train-ai": ("no", 2)}
    # '*x train-ai=n' has no path: it is one statement, and no dictionary (no ',' between members)
    assert stated(robots.usage("/q").categories) == {}
    kinds = [(line.number, line.kind) for line in robots.lines()]
    assert kinds == [(1, "user-agent"), (2, "content-usage"), (3, "content-usage")]


def test_vocab_6_exemplary_serialization_format() -> None:
    """vocab 6 "Exemplary Serialization Format": allow training, disallow search, the other
    categories unknown."""
    assert statement("train-ai=y, search=n") == {"train-ai": "yes", "ai-use": "unstated", "search": "no"}


def test_vocab_6_5_1_multiple_preferences() -> None:
    """vocab 6.5.1 "Multiple Preferences": the last value of a key applies; a Boolean or a
    String is no Token, so every preference is unknown."""
    assert set(statement('train-ai=y, train-ai, search=n, search="n"').values()) == {"unstated"}


def test_vocab_6_5_1_a_dictionary_that_fails_to_parse_leaves_every_category_unknown() -> None:
    """vocab 6.5.1: "If the parsing of the Dictionary fails, preferences are unknown. This
    includes where keys include uppercase characters"."""
    for bad in ("Train-AI=n", "train-ai=n,", "train-ai=n search=n", 'train-ai="n', "train-ai=(n", "=n"):
        assert set(statement(bad).values()) == {"unstated"}, bad


def test_vocab_6_5_2_preference_parameters() -> None:
    """vocab 6.5.2 "Preference Parameters": only the selected value's parameters go with it, and
    parameters never change a preference."""
    assert statement("train-ai;allow=n, train-ai=y")["train-ai"] == "yes"
    assert statement('train-ai;has;parameters="?";')["train-ai"] == "unstated"
    assert statement('train-ai=n;why="x";n=1.5')["train-ai"] == "no"


def test_vocab_6_5_processing_algorithm_values_other_than_y_or_n() -> None:
    """vocab 6.5 "Processing Algorithm": values that are not Tokens, and Tokens other than y or
    n, are unknown ("not errors"); 6.4 "Syntax Extensions": unknown labels are ignored."""
    for value in ("train-ai=yes", 'train-ai="n"', "train-ai=1", "train-ai", "train-ai=N"):
        assert statement(value)["train-ai"] == "unstated", value
    assert statement("foo=n, bar;baz=1, train-ai=y") == {
        "train-ai": "yes",
        "ai-use": "unstated",
        "search": "unstated",
    }


def test_vocab_08_categories_are_flat_and_unstated_is_no_default() -> None:
    """vocab-08: train-ai, ai-use and search, flat: one left unstated stays unknown."""
    u = manners.parse("User-agent: *\nContent-Usage: ai-use=n\n").usage("/")
    assert [(p.category, p.value) for p in u.categories] == [
        ("train-ai", "unstated"),
        ("ai-use", "no"),
        ("search", "unstated"),
    ]


def test_contentsignals_4_usage_category_labels() -> None:
    """contentsignals 4 "Usage Category Labels": search, ai-input, ai-train, each yes or no, as
    Cloudflare serves them (a line in the group)."""
    robots = manners.parse(
        "User-Agent: *\nContent-Signal: ai-train=no, search=yes, ai-input=yes\nAllow: /\n"
        "Content-Signal: /docs/ ai-input=no\n"
    )
    u = robots.usage("https://example.com/", "anybot")
    assert [(p.category, p.value, p.line) for p in u.signals] == [
        ("search", "yes", 2),
        ("ai-input", "yes", 2),
        ("ai-train", "no", 2),
    ]
    assert stated(u.categories) == {}
    assert u.signal("ai-input") == Preference("ai-input", "yes", 2)
    assert stated(robots.usage("/docs/x").signals) == {"ai-input": ("no", 4)}
    # the other vocabulary's words are unknown in each
    both = manners.parse("User-agent: *\nContent-Signal: search=y\nContent-Usage: search=yes\n").usage("/")
    assert stated(both.signals) == stated(both.categories) == {}


def test_usage_is_typed_and_frozen() -> None:
    u = manners.parse(ATTACH_3_4).usage("/test")
    assert isinstance(u, Usage) and u.profile == "rfc9309"
    assert u._fields == ("allowed", "categories", "signals", "profile")
    assert Preference._fields == ("category", "value", "line")
    with pytest.raises(AttributeError):
        u.allowed = False  # type: ignore[misc]
    with pytest.raises(KeyError, match="no Content-Usage category 'ai-train'"):
        u.category("ai-train")
    with pytest.raises(ValueError, match="neither a URL"):
        u = manners.parse(ATTACH_3_4).usage("no path")


def test_only_rfc9309_and_google_read_them() -> None:
    text = "User-agent: *\nContent-Usage: train-ai=n\nContent-Signal: search=no\n"
    readers = {p.name for p in PROFILES.values() if p.usage_preferences}
    assert readers == {"rfc9309", "google"}
    for name in PROFILES:
        u = manners.parse(text, name).usage("/x")
        reads = name in readers
        assert (u.profile, bool(stated(u.categories)), bool(stated(u.signals))) == (name, reads, reads)
    # without a profile, a gemini:// or gopher:// target is read under its scheme's
    robots = manners.parse(text)
    assert stated(robots.usage("https://h/x").categories) == {"train-ai": ("no", 2)}
    for url in ("gemini://h/x", "gopher://h/0/x"):
        assert stated(robots.usage(url).categories) == {}
    # a profile of one's own reads them when it says so
    mine = dataclasses.replace(PROFILES["gemini"], name="mine", usage_preferences=True)
    assert stated(manners.parse(text, mine).usage("/x").categories) == {"train-ai": ("no", 2)}


def test_lint_knows_both_fields() -> None:
    good = manners.parse(ATTACH_3_4 + "Content-Signal: search=yes, ai-train=yes\n")
    assert good.diagnostics == []
    # ai-train=no in ExampleBot's group, which says train-ai=y: the two contradict (issue 35)
    said = manners.parse(ATTACH_3_4 + "Content-Signal: search=yes, ai-train=no\n").diagnostics
    assert [(d.line, d.severity, d.code) for d in said] == [(10, "warning", "contradictory")]
    bad = manners.parse(
        "Content-Usage: train-ai=n\nUser-agent: *\nContent-Usage: /x Train-AI=n\n"
        "Content-Signal: search=yes ai-train=no\nFoo: bar\n"
    )
    found = [(d.line, d.severity, d.code) for d in bad.diagnostics]
    assert found == [
        (1, "warning", "rule-outside-group"),
        (3, "warning", "bad-content-usage"),
        (4, "warning", "bad-content-signal"),
        (5, "warning", "unknown-field"),
    ]
    for name in ("gemini", "gemini-targeted", "gopher", "1994"):
        read = manners.parse(ATTACH_3_4 + "Content-Signal: search=yes\n", name)
        usage = [(d.line, d.severity, d.code) for d in read.diagnostics if d.code.startswith("content-")]
        lines = [(4, "content-usage"), (5, "content-usage"), (9, "content-usage"), (10, "content-signal")]
        assert usage == [(line, "info", code) for line, code in lines], name


def test_a_usage_line_between_agent_lines_ends_a_group_for_usage_only() -> None:
    """Verdicts never change: as an unknown line never did, a Content-Usage line between two
    User-agent lines leaves them one group for verdicts (both agents read its rules).  For
    usage preferences it is a rule (attach §3's grammar) and ends the first group: only `a`
    reads its preference."""
    text = "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\nDisallow: /\n"
    for name in ("rfc9309", "google"):
        robots = manners.parse(text, name)
        assert not robots.allowed("/x", "a") and not robots.allowed("/x", "b")
        assert [g.lines for g in robots.groups(name)] == [(1, 4)]
    robots = manners.parse(text.replace("Disallow: /", "Allow: /"))
    assert stated(robots.usage("/x", "a").categories) == {"train-ai": ("no", 2)}
    assert stated(robots.usage("/x", "b").categories) == {}


@pytest.mark.parametrize("name", list(PROFILES))
def test_usage_lines_change_no_verdict(name: str) -> None:
    """A file with both fields decides as the same file with them as unknown fields."""
    text = (
        "User-agent: *\nContent-Usage: train-ai=n\nDisallow: /a\n"
        "User-agent: x\nContent-Signal: /a ai-train=no\n"
        "User-agent: y\nAllow: /a/b\nContent-Usage: /a search=n\nDisallow: /\nCrawl-delay: 3\n"
    )
    plain = text.replace("Content-", "Contenx-")
    with_, without = manners.parse(text, name), manners.parse(plain, name)
    for target in ("/", "/a", "/a/b", "/b"):
        for agent in ("*", "x", "y", "z"):
            assert with_.decide(target, agent) == without.decide(target, agent)
            assert with_.usage(target, agent).allowed == with_.allowed(target, agent)


def test_answers_kept_per_file_stay_right_past_the_number_kept() -> None:
    """The binding keeps the Usage objects it has given (256 a file) and starts again when full:
    300 paths, each with its own line, asked twice in turn, and once more in reverse, each
    answer naming its own path's line; two files never share answers."""
    scoped = [f"Content-Usage: /d{i}/ train-ai={'yn'[i % 2]}" for i in range(300)]
    lines = ["User-agent: *", "Allow: /", *scoped]
    robots = manners.parse("\n".join(lines))
    other = manners.parse("User-agent: *\nContent-Usage: train-ai=y\n")
    for order in (range(300), range(300), reversed(range(300))):
        for i in order:
            got = robots.usage(f"https://example.com/d{i}/page").category("train-ai")
            assert (got.value, got.line) == ("no" if i % 2 else "yes", i + 3)
            assert other.usage(f"https://example.com/d{i}/page").category("train-ai").line == 2
    assert robots.usage("https://example.com/elsewhere").category("train-ai").value == "unstated"
