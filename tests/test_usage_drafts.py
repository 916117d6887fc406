"""The AI-preference drafts' own examples and rules, as tests of RobotsTxt.usage() (issue 35).

Each test names the draft and section it comes from: ``attach`` is draft-ietf-aipref-attach-05
(the Content-Usage rule in robots.txt), ``vocab`` the vocabulary draft (-08's flat categories
``train-ai``, ``ai-use``, ``search``), ``contentsignals`` draft-romm-aipref-contentsignals-00.
Section numbers are those of the rendered drafts (the sources, in
``../shared/reference/aipref/``, give headings only); each docstring quotes the heading.
Tests that follow a reading of the drafts rather than an example say so.  ``usage()`` here
gives ``manners.parse(text).usage(target, agent=agent)`` with its categories and signals as
mappings by label.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import manners
from test_usage import ATTACH_3_4  # attach §3.4 "Example", as the draft's figure has it

pytestmark = pytest.mark.quick

CATEGORIES = ("train-ai", "ai-use", "search")  # vocab -08: flat, no defaults
SIGNALS = ("search", "ai-input", "ai-train")  # contentsignals §4


def usage(text: str, target: str, agent: str = "*") -> Any:
    """The Usage of ``target``, its categories and signals as mappings by label."""
    got = manners.parse(text).usage(target, agent=agent)
    return SimpleNamespace(
        allowed=got.allowed,
        categories={p.category: p for p in got.categories},
        signals={p.category: p for p in got.signals},
    )


def said(text: str, target: str, agent: str = "*") -> dict[str, tuple[str, int | None]]:
    """Every category's (value, line) for one target."""
    got = usage(text, target, agent).categories
    return {c: (got[c].value, got[c].line) for c in CATEGORIES}


def signal(text: str, target: str, key: str, agent: str = "*") -> tuple[str, int | None]:
    """One Content-Signal key's (value, line); a key the file does not give is unstated."""
    got = usage(text, target, agent).signals
    return (got[key].value, got[key].line) if key in got else ("unstated", None)


NOTHING = {c: ("unstated", None) for c in CATEGORIES}


def only(line: int, **values: str) -> dict[str, tuple[str, int | None]]:
    """NOTHING, except the categories given (train_ai= for train-ai), all said on one line."""
    out = dict(NOTHING)
    for name, value in values.items():
        out[name.replace("_", "-")] = (value, line)
    return out


def preference(value: str) -> dict[str, tuple[str, int | None]]:
    """What a file whose only rule is ``Content-Usage: VALUE`` says for /page."""
    return said(f"User-agent: *\nContent-Usage: {value}\n", "/page")


# --- vocab: the categories ---------------------------------------------------------------


def test_vocab_08_the_categories_are_train_ai_ai_use_search() -> None:
    """vocab -08: three flat categories; the next draft may change them (one table)."""
    got = usage("User-agent: *\nContent-Usage: train-ai=n\n", "/").categories
    assert set(got) == set(CATEGORIES)


def test_vocab_3_no_statement_means_every_category_unknown() -> None:
    """vocab §3 "Statements of Preference": "In the absence of a statement of preference, all
    usage categories are assigned a preference value of "unknown"."; §5: no default."""
    for text in ("", "User-agent: *\nDisallow: /private\n", "User-agent: *\nAllow: /\n"):
        assert said(text, "/page") == NOTHING
        assert all(signal(text, "/page", key) == ("unstated", None) for key in SIGNALS)


# --- attach §1.2 and §3.4: the examples ---------------------------------------------------


def test_attach_1_2_example_robots_txt_train_ai_n_for_every_path_and_crawler() -> None:
    """attach §1.2 "Examples": ``User-Agent: *`` / ``Allow: /`` / ``Content-Usage: train-ai=n``."""
    text = "User-Agent: *\nAllow: /\nContent-Usage: train-ai=n\n"
    for agent in ("*", "SomeBot", "GPTBot/1.2"):
        for target in ("/", "/test", "/deep/er/page.html?q=1", "https://example.com/x"):
            assert said(text, target, agent) == only(3, train_ai="no")


def test_attach_3_4_example_table_test_is_crawled_with_train_ai_n() -> None:
    """attach §3.4 "Example", table t-example: ``/test`` | yes | ``train-ai=n``."""
    assert manners.parse(ATTACH_3_4).allowed("/test")
    assert said(ATTACH_3_4, "/test") == only(4, train_ai="no")


def test_attach_3_4_example_table_never_test_is_not_crawled_and_has_no_preference() -> None:
    """attach §3.4, table: ``/never/test`` | no | N/A; §3.1: "no preferences are implied for
    resources that are disallowed" (N/A read as every category unstated, no line)."""
    assert not manners.parse(ATTACH_3_4).allowed("/never/test")
    assert said(ATTACH_3_4, "/never/test") == NOTHING


def test_attach_3_4_example_table_ai_ok_test_is_crawled_with_train_ai_y() -> None:
    """attach §3.4, table: ``/ai-ok/test`` | yes | ``train-ai=y``."""
    assert manners.parse(ATTACH_3_4).allowed("/ai-ok/test")
    assert said(ATTACH_3_4, "/ai-ok/test") == only(5, train_ai="yes")


def test_attach_3_4_example_examplebot_uses_the_second_group_everywhere() -> None:
    """attach §3.4: "A crawler that identifies as "ExampleBot" uses the second group. That
    crawler would be able to obtain all content and apply usage preferences of" train-ai=y
    (the text says "ai=y", a typo for the figure's ``train-ai=y``)."""
    robots = manners.parse(ATTACH_3_4)
    for agent in ("ExampleBot", "examplebot", "ExampleBot/2.1"):
        for target in ("/test", "/never/test", "/ai-ok/test"):
            assert robots.allowed(target, agent=agent)
            assert said(ATTACH_3_4, target, agent) == only(9, train_ai="yes")


def test_attach_3_4_example_all_other_crawlers_use_the_first_group() -> None:
    """attach §3.4: "All other crawlers use the first group.\""""
    for agent in ("OtherBot", "Example"):
        assert said(ATTACH_3_4, "/test", agent) == only(4, train_ai="no")
        assert said(ATTACH_3_4, "/ai-ok/test", agent) == only(5, train_ai="yes")


def test_attach_3_4_example_verdicts_are_those_of_the_file_without_content_usage() -> None:
    """attach §3.1: "Acquisition relies on Allow/Disallow rules; usage preference relies on
    Content-Usage rules." Adding the lines changes no verdict, under rfc9309 and google."""
    bare = "".join(line + "\n" for line in ATTACH_3_4.splitlines() if not line.startswith("Content-Usage"))
    for profile in ("rfc9309", "google"):
        with_usage, without = manners.parse(ATTACH_3_4, profile=profile), manners.parse(bare, profile=profile)
        for agent in ("*", "ExampleBot", "OtherBot"):
            for target in ("/", "/test", "/never/", "/never/test", "/ai-ok/test"):
                assert (
                    with_usage.decide(target, agent=agent).allowed
                    == without.decide(target, agent=agent).allowed
                )


# --- attach §3 and §3.1: where the rule is, and which one applies -------------------------


def test_attach_3_content_usage_between_user_agent_lines_keeps_the_verdicts() -> None:
    """attach §3: "A Content-Usage rule is added to the set of potential rules that can be
    included in a Group". Files with the field must keep their verdicts (issue 35): today an
    unknown line between two User-agent lines does not split them, so this must not either."""
    text = "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\nDisallow: /\n"
    bare = "User-agent: a\nUser-agent: b\nDisallow: /\n"
    for profile in ("rfc9309", "google"):
        for agent in ("a", "b", "c"):
            got = manners.parse(text, profile=profile).allowed("/x", agent=agent)
            assert got == manners.parse(bare, profile=profile).allowed("/x", agent=agent)


def test_attach_3_1_the_group_is_chosen_by_product_token_and_merged() -> None:
    """attach §3.1: "Each group in the file applies to a set of crawlers, identified by product
    token as defined in Section 2.2.1 of ROBOTS" (groups naming one agent are combined)."""
    text = (
        "User-agent: BotA\nContent-Usage: /x search=n\n\n"
        "User-agent: *\nContent-Usage: train-ai=n\n\n"
        "User-agent: bota\nContent-Usage: /y train-ai=n\n"
    )
    assert said(text, "/x/1", "BotA/3.0") == only(2, search="no")
    assert said(text, "/y/1", "BotA") == only(8, train_ai="no")
    assert said(text, "/z", "BotA") == NOTHING
    assert said(text, "/x/1", "Other") == only(5, train_ai="no")


def test_attach_3_content_usage_outside_any_group_applies_to_nobody() -> None:
    """attach §3: Content-Usage is a rule of a Group; a line before the first User-agent is in
    none (a reading: the draft does not say more)."""
    text = "Content-Usage: train-ai=n\nUser-agent: *\nAllow: /\n"
    assert said(text, "/page") == NOTHING


@pytest.mark.parametrize(
    "pattern",
    ["/a", "/a/", "/a/b", "/*.pdf", "/*.pdf$", "/a*b", "/%7Euser", "/~user", "/caf%C3%A9", "/x?q=", "/a$"],
)
def test_attach_3_1_paths_match_as_allow_and_disallow_do(pattern: str) -> None:
    """attach §3.1: "Any Content-Usage rules determine the usage preferences for resources using
    the same path prefix matching rules as defined for Allow and Disallow." and "Paths
    specified for Content-Usage rules use the same percent-encoding rules"."""
    by_disallow = manners.parse(f"User-agent: *\nDisallow: {pattern}\n")
    text = f"User-agent: *\nContent-Usage: {pattern} train-ai=n\n"
    targets = ["/", "/a", "/a/", "/a/b", "/ab", "/axb", "/x.pdf", "/x.pdf?v=1", "/~user/p", "/%7euser/p"]
    targets += ["/café", "/caf%C3%A9/", "/x?q=1", "/b"]
    for target in targets:
        expected = "unstated" if by_disallow.allowed(target) else "no"
        assert said(text, target)["train-ai"][0] == expected, target


def test_attach_3_1_the_longest_matching_path_wins_counted_in_bytes() -> None:
    """attach §3.1: "the path prefix length is determined by counting the number of bytes in the
    encoded path" (as RFC 9309 §2.2.2)."""
    text = "User-agent: *\nContent-Usage: /a train-ai=n\nContent-Usage: /a/b train-ai=y\n"
    assert said(text, "/a/b/c") == only(3, train_ai="yes")
    assert said(text, "/a/c") == only(2, train_ai="no")
    # "/*é" is 3 characters but 8 bytes encoded ("/*%C3%A9"): it beats "/cafe" (5) for "/cafeé",
    # as "Disallow: /*é" beats "Allow: /cafe" under the rfc9309 profile.
    text = "User-agent: *\nContent-Usage: /cafe train-ai=y\nContent-Usage: /*é train-ai=n\n"
    assert said(text, "/cafeé") == only(3, train_ai="no")
    assert said(text, "/caf%C3%A9x") == only(3, train_ai="no")  # any "é" matches "/*é"
    assert said(text, "/tea") == NOTHING
    assert said(text, "/cafe%C3%A9") == only(3, train_ai="no")


def test_attach_3_1_a_longer_path_replaces_a_shorter_one_it_does_not_layer() -> None:
    """attach §3.1, a reading (notes, ambiguity 5): the longest match gives the preference as a
    whole, as Allow/Disallow do; a category it does not state is unknown, not inherited."""
    text = "User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /p search=y\n"
    assert said(text, "/p/1") == only(3, search="yes")
    assert said(text, "/q") == only(2, train_ai="no")


def test_attach_3_1_identical_paths_combine_the_most_restrictive_wins() -> None:
    """attach §3.1: "If there are Content-Usage rules that have identical paths and conflicting
    usage preferences, these preferences apply separately according to the process defined in
    Section 7.1 of VOCAB" = vocab §5.1 "Combining Preferences": any n gives n, else any y gives
    y, else unknown. "this differs from the Allow/Disallow rules"."""
    text = (
        "User-agent: *\n"
        "Content-Usage: /p train-ai=y, search=y\n"
        "Content-Usage: /p train-ai=n\n"
        "Content-Usage: /p ai-use=y\n"
    )
    got = said(text, "/p/1")
    assert got["train-ai"] == ("no", 3)
    assert got["search"] == ("yes", 2)
    assert got["ai-use"] == ("yes", 4)
    unscoped = "User-agent: *\nContent-Usage: train-ai=y\nContent-Usage: train-ai=n\n"
    assert said(unscoped, "/")["train-ai"] == ("no", 3)


def test_attach_3_1_the_order_of_rules_carries_no_semantics() -> None:
    """attach §3.1: "The ordering of rules in a group carries no semantics. Thus, Content-Usage
    rules can be interleaved with Allow and Disallow rules.\""""
    lines = [
        "Content-Usage: /ai-ok/ train-ai=y",
        "Disallow: /never/",
        "Content-Usage: train-ai=n",
        "Allow: /",
    ]
    forward = "User-Agent: *\n" + "\n".join(lines) + "\n"
    backward = "User-Agent: *\n" + "\n".join(reversed(lines)) + "\n"
    for target in ("/test", "/never/test", "/ai-ok/test"):
        assert {c: v for c, (v, _) in said(forward, target).items()} == {
            c: v for c, (v, _) in said(backward, target).items()
        }
    assert said(forward, "/ai-ok/x") == only(2, train_ai="yes")
    assert said(backward, "/ai-ok/x") == only(5, train_ai="yes")


# --- attach §3.2: reading a line ---------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Content-Usage: train-ai=n",
        "content-usage: train-ai=n",
        "CONTENT-USAGE:train-ai=n",
        "  Content-Usage \t :  \ttrain-ai=n",
        "Content-Usage: train-ai=n # no training, please",
        "Content-Usage: train-ai=n#",
        "Content-Usage: train-ai=n  \t",
    ],
)
def test_attach_3_2_the_label_case_spaces_and_the_comment(line: str) -> None:
    """attach §3.2: "SP and HTAB characters are ignored, before and after the label, in addition
    to before and after the COLON"; the value runs "up to either the first CR (U+0D), LF
    (U+0A), or octothorpe"; the label is case-insensitive (RFC 5234 quoted strings)."""
    for end in ("\n", "\r\n", "\r"):
        assert said(f"User-agent: *{end}{line}{end}", "/page") == only(2, train_ai="no")


def test_attach_3_2_a_value_not_starting_with_slash_has_no_path() -> None:
    """attach §3.2: "a rule value that starts with any other character indicates that the path
    is absent ... the entire rule value is the statement of preference": ``*.pdf train-ai=n``
    is then a Dictionary that does not parse, so nothing is stated (vocab §6.5.1)."""
    assert preference("*.pdf train-ai=n") == NOTHING
    assert said("User-agent: *\nContent-Usage: *.pdf train-ai=n\n", "/a.pdf") == NOTHING


def test_attach_3_2_the_path_ends_at_the_first_space_or_tab() -> None:
    """attach §3.2: "the path ends immediately before the first SP (U+20) or HTAB character. The
    remainder of the rule value is the statement of preference.\""""
    for sep in (" ", "\t"):
        text = f"User-agent: *\nContent-Usage: /a{sep}train-ai=n, search=y\n"
        assert said(text, "/a/x") == {**only(2, train_ai="no"), "search": ("yes", 2)}
        assert said(text, "/b") == NOTHING


def test_attach_3_2_a_path_with_no_preference_states_nothing() -> None:
    """attach §3 ABNF: ``[ path-pattern 1*WS ] usage-pref``: a path alone is no preference."""
    text = "User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /p\n"
    assert said(text, "/q") == only(2, train_ai="no")
    assert said(text, "/p")["search"] == ("unstated", None)


# --- vocab §6: the examples and the processing algorithm ---------------------------------


def test_vocab_6_example_train_ai_y_search_n_others_unknown() -> None:
    """vocab §6 "Exemplary Serialization Format": ``train-ai=y, search=n`` states "a preference
    to allow model training, disallow search, with the preference for other categories being
    unknown"."""
    assert preference("train-ai=y, search=n") == {**only(2, train_ai="yes"), "search": ("no", 2)}


def test_vocab_6_5_1_example_duplicated_keys_the_last_wins_all_unknown() -> None:
    """vocab §6.5.1 "Multiple Preferences": ``train-ai=y, train-ai, search=n, search="n"``
    "results in all preferences being unknown" (the last values are a Boolean and a String)."""
    assert preference('train-ai=y, train-ai, search=n, search="n"') == NOTHING


def test_vocab_6_5_2_example_only_the_selected_members_parameters_apply() -> None:
    """vocab §6.5.2 "Preference Parameters": ``train-ai;allow=n, train-ai=y`` "carries no
    parameters, and a preference to allow the usage"."""
    assert preference("train-ai;allow=n, train-ai=y") == only(2, train_ai="yes")


def test_vocab_6_5_2_example_parameters_on_an_unknown_preference() -> None:
    """vocab §6.5.2: ``train-ai;has;parameters="?";`` "has parameters even though the preference
    is unknown" (strict RFC 9651 parsing fails on the trailing ';': unknown either way)."""
    assert preference('train-ai;has;parameters="?";') == NOTHING
    assert preference('train-ai;has;parameters="?"') == NOTHING


@pytest.mark.parametrize(
    "value", ["yes", "no", "Y", "N", '"n"', "1", "0", "?0", "?1", "(n)", ":bg==:", "n;", ""]
)
def test_vocab_6_5_values_other_than_the_tokens_y_and_n_are_unknown(value: str) -> None:
    """vocab §6.5 "Processing Algorithm": "Otherwise, the preference for that category is unknown.
    ... values that are not Tokens, and Token values that are other than `y` or `n`. All of
    these are not errors" (a value that breaks the Dictionary makes every category unknown)."""
    got = preference(f"train-ai={value}, search=n")
    assert got["train-ai"] == ("unstated", None)
    assert got["search"] in (("no", 2), ("unstated", None))  # ("unstated" where the line fails)


def test_vocab_6_5_1_uppercase_keys_fail_the_whole_dictionary() -> None:
    """vocab §6.5.1: "If the parsing of the Dictionary fails, preferences are unknown. This
    includes where keys include uppercase characters"; §6.1: "These tokens are case sensitive"."""
    assert preference("Train-AI=n") == NOTHING
    assert preference("train-ai=n, Search=y") == NOTHING
    assert preference("TRAIN-AI=n") == NOTHING


def test_vocab_6_4_unknown_labels_and_parameters_are_ignored() -> None:
    """vocab §6.4 "Syntax Extensions": "any unknown labels MUST be ignored" and "any unknown
    parameters MUST be ignored"."""
    got = preference('foo=n, train-ai=y;why="open data", search=n;q=1, x.y*=?1')
    assert got == {**only(2, train_ai="yes"), "search": ("no", 2)}
    # an RFC 9651 Date parameter (the FIELDS the vocab cites is RFC 9651, not RFC 8941)
    assert preference("train-ai=y;until=@1790000000") == only(2, train_ai="yes")
    assert preference("ai-train=n, ai-input=n") == NOTHING  # Content Signals' labels are unknown here


def test_vocab_6_3_the_preference_is_bytes_non_ascii_fails() -> None:
    """vocab §6.3 "Text Encoding" and attach §3.2: "a statement of preference is processed as a
    sequence of bytes"; a non-ASCII byte is no Dictionary, so nothing is stated."""
    assert preference("train-ai=n, search=ÿ") == NOTHING
    assert preference("train-ai=n, sëarch=y") == NOTHING


@pytest.mark.parametrize(
    "value",
    ["", "=", ",", "train-ai=", "train-ai=n,", ", train-ai=n", '"', '"unterminated', "train-ai=n,,search=y",
     "\x00", "\ufeff train-ai=n", "(" * 1000, "train-ai=" + "9" * 100, "a" * 100_000 + "=n"],
)  # fmt: skip
def test_vocab_6_5_1_malformed_values_are_unknown_never_an_exception(value: str) -> None:
    """vocab §6.5.1: "If the parsing of the Dictionary fails, preferences are unknown." (issue
    35: "never an exception")."""
    assert preference(value) == NOTHING


# --- contentsignals: labels; the issue's contradiction ------------------------------------

CLOUDFLARE = "User-Agent: *\nContent-Signal: ai-train=no, search=yes, ai-input=yes\nAllow: /\n"


def test_contentsignals_4_labels_search_ai_input_ai_train_with_their_line() -> None:
    """contentsignals §4 "Usage Category Labels": ``search``, ``ai-input``, ``ai-train``; values
    yes/no as Cloudflare's files write them (the draft gives no syntax)."""
    assert signal(CLOUDFLARE, "/page", "ai-train") == ("no", 2)
    assert signal(CLOUDFLARE, "/page", "search") == ("yes", 2)
    assert signal(CLOUDFLARE, "/page", "ai-input") == ("yes", 2)


def test_contentsignals_4_a_signal_left_out_is_unstated() -> None:
    """contentsignals §4, with Cloudflare's policy: an absent signal neither grants nor restricts."""
    text = "User-Agent: *\nContent-Signal: search=yes, ai-train=no\n"
    assert signal(text, "/", "ai-input") == ("unstated", None)
    assert signal(text, "/", "search") == ("yes", 2)


def test_contentsignals_4_signals_apply_per_group() -> None:
    """Content-Signal lines sit in groups like Content-Usage (attach §3.1's group choice)."""
    text = "User-agent: GPTBot\nContent-Signal: ai-train=no\n\nUser-agent: *\nContent-Signal: ai-train=yes\n"
    assert signal(text, "/", "ai-train", agent="GPTBot") == ("no", 2)
    assert signal(text, "/", "ai-train", agent="Other") == ("yes", 5)


def test_contentsignals_and_vocab_6_6_are_reported_apart() -> None:
    """vocab §6.6 "Alternative Formats": an alternative format must define its mapping; Content
    Signals defines none, so a Content-Signal line states no vocabulary category (the issue's
    API gives the signals beside the categories)."""
    assert said(CLOUDFLARE, "/page") == NOTHING
    text = "User-agent: *\nContent-Usage: train-ai=n, search=y\n"
    assert all(signal(text, "/", key) == ("unstated", None) for key in SIGNALS)


def test_issue_35_contradiction_both_lines_are_reported_with_their_values() -> None:
    """Issue 35's contradiction: ``Content-Usage: train-ai=y`` and ``Content-Signal:
    ai-train=no`` for the same path. The drafts do not define it (notes); usage() shows both,
    each with its line, and lint is to flag the pair."""
    text = "User-agent: *\nContent-Usage: train-ai=y\nContent-Signal: ai-train=no\n"
    assert said(text, "/any") == only(2, train_ai="yes")
    assert signal(text, "/any", "ai-train") == ("no", 3)


def test_content_usage_and_content_signal_never_change_a_verdict_or_raise() -> None:
    """attach §3.1 ("Acquisition relies on Allow/Disallow rules") and issue 35: every odd line
    leaves the verdicts alone and usage() answers."""
    odd = [
        "Content-Usage:",
        "Content-Usage: /",
        "Content-Usage: /\t",
        "Content-Signal:",
        "Content-Signal: ai-train",
        "Content-Signal: /p ai-train=no",
        "Content-Signal: AI-TRAIN=NO",
        "Content-Usage: train-ai=n, train-ai=y",
        "content_usage: train-ai=n",
    ]
    for line in odd:
        text = f"User-agent: *\nDisallow: /private\n{line}\n"
        robots = manners.parse(text)
        assert not robots.allowed("/private/x") and robots.allowed("/public")
        got = usage(text, "/public")
        assert set(got.categories) == set(CATEGORIES)
        assert all(v.value in ("yes", "no", "unstated") for v in got.categories.values())
        assert all(v.value in ("yes", "no", "unstated") for v in got.signals.values())
