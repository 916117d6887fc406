"""Gemini, Gopher and 1994 behaviour, with the seed documents' own examples and the
real small-net files in data/corpus/smallnet."""

from __future__ import annotations

import pytest

import manners
from data_paths import SEEDS, SMALLNET

pytestmark = pytest.mark.quick


def smallnet(name: str, profile: str | None = None) -> manners.RobotsTxt:
    return manners.parse((SMALLNET / name).read_bytes(), profile=profile)


# -- Gemini -------------------------------------------------------------------------


def test_gemini_is_the_default_for_gemini_urls() -> None:
    robots = manners.parse("Disallow: /search\n")  # a capsule file with no User-agent line
    assert not robots.allowed("gemini://example.org/search?q=x")
    assert robots.decide("gemini://example.org/search").profile == "gemini"
    assert robots.allowed("https://example.org/search")  # rfc9309 ignores rules outside groups


def test_gemini_file_without_user_agent_applies_to_everyone() -> None:
    robots = smallnet("gemini_02_gemplex_capsule_no_useragent.txt")
    assert not robots.allowed("gemini://gemplex.space/search", "gemplex")
    assert not robots.allowed("gemini://gemplex.space/v/x", roles=["indexer"])
    assert robots.allowed("gemini://gemplex.space/about")
    d = robots.decide("gemini://gemplex.space/v")
    assert (d.allowed, d.line, d.rule) == (False, 2, "Disallow: /v")


def test_gemini_allow_star_without_user_agent() -> None:
    robots = smallnet("gemini_09_diesenbacher_allow_star_no_useragent.txt")
    assert robots.allowed("gemini://diesenbacher.net/anything", roles=["archiver"])


def test_gemini_webproxy_only() -> None:
    robots = smallnet("gemini_03_warpengineer_space_webproxy.txt")
    assert not robots.allowed("gemini://warpengineer.space/", roles=["webproxy"])
    assert not robots.allowed("gemini://warpengineer.space/", roles="webproxy")  # one role, not letters
    assert robots.allowed("gemini://warpengineer.space/", roles=["indexer"])
    assert robots.allowed("gemini://warpengineer.space/")


def test_gemini_lowercase_agent_without_space() -> None:
    robots = smallnet("gemini_10_station_advice_nospace_useragent.txt")
    assert not robots.allowed("gemini://station.martinrue.com/drafts/1")
    assert robots.allowed("gemini://station.martinrue.com/public")


def test_gemini_roles_do_not_escape_the_star_group() -> None:
    """Issue 10 item 4: the companion spec says bots "should still respect robots.txt
    directives aimed at a User-agent of *": an indexer may not hit /add-seed on gemini_11."""
    robots = smallnet("gemini_11_cl_robots_txt_readme_tlgs_style.txt")
    for path in ("/search", "/add-seed", "/v/search", "/backlinks"):
        assert not robots.allowed(f"gemini://tlgs.one{path}", roles=["indexer"])
    assert robots.allowed("gemini://tlgs.one/v/x", roles=["indexer"])
    d = robots.decide("gemini://tlgs.one/add-seed", roles=["indexer"])
    assert (d.line, d.rule) == (9, "Disallow: /add-seed") and "user-agent *" in d.reason
    assert robots.allowed("gemini://tlgs.one/backlinks")  # only the roles' groups say no
    assert not robots.allowed("gemini://tlgs.one/add-seed")
    targeted = smallnet("gemini_11_cl_robots_txt_readme_tlgs_style.txt", "gemini-targeted")
    assert targeted.allowed("gemini://tlgs.one/add-seed", roles=["indexer"])  # the list proposal's reading
    assert not targeted.allowed("gemini://tlgs.one/backlinks", roles=["indexer"])


def test_gemini_several_roles_take_the_most_restrictive_combination() -> None:
    robots = smallnet("gemini_12_tutorial_all_virtual_agents.txt")
    both = ["archiver", "indexer"]
    assert not robots.allowed("gemini://x/private/a", roles=both)  # archiver says no
    assert not robots.allowed("gemini://x/drafts/a", roles=both)  # indexer says no
    assert not robots.allowed("gemini://x/cgi-bin/a", roles=both)  # the * group says no, too
    d = robots.decide("gemini://x/drafts/a", roles=both)
    assert (d.line, d.rule) == (5, "Disallow: /drafts/")
    assert "indexer" in d.reason
    assert robots.allowed("gemini://x/private/a", roles=["researcher"])  # empty Disallow
    assert not robots.allowed("gemini://x/cgi-bin/a", roles=["researcher"])  # but * still counts
    assert not robots.allowed("gemini://x/", roles=["webproxy"])
    assert not robots.allowed("gemini://x/cgi-bin/a")
    assert robots.allowed("gemini://x/private/a")
    targeted = smallnet("gemini_12_tutorial_all_virtual_agents.txt", "gemini-targeted")
    assert targeted.allowed("gemini://x/cgi-bin/a", roles=both)  # only the role groups decide
    assert not targeted.allowed("gemini://x/drafts/a", roles=both)


def test_gemini_own_group_decides_alone() -> None:
    """(a) of the new default: a group naming the robot's product token is the universal way
    to let one robot in, roles and the star notwithstanding."""
    text = (
        "User-agent: *\nDisallow: /\n\nVirtual-agent: indexer\nDisallow: /\n\nUser-agent: friend\nDisallow:\n"
    )
    for profile in ("gemini", "gemini-targeted"):
        robots = manners.parse(text, profile)
        assert robots.allowed("gemini://x/a", "friend/2.0", ["indexer"])
        assert not robots.allowed("gemini://x/a", "stranger", ["indexer"])


def test_gemini_wildcards_per_role() -> None:
    robots = smallnet("gemini_07_ponixserver_gig_wildcards.txt")
    assert not robots.allowed("gemini://x/github/repo/manners/files", roles=["indexer"])
    assert robots.allowed("gemini://x/github/repo/manners/issues", roles=["indexer"])
    assert robots.allowed("gemini://x/github/repo/manners/files", roles=["webproxy"])


def test_gemini_crawl_delay_from_star_group() -> None:
    robots = smallnet("gemini_04_phoebe_default_crawl_delay.txt")
    assert robots.crawl_delay() == 10
    assert robots.crawl_delay(roles=["indexer"]) == 10
    assert not robots.allowed("gemini://x/do/rss")
    assert robots.allowed("gemini://x/do/index")


def test_gemini_webproxy_plus_web_boilerplate() -> None:
    robots = smallnet("gemini_13_webproxy_plus_web_boilerplate_excerpt.txt")
    assert not robots.allowed("gemini://x/page", roles=["webproxy"])
    assert not robots.allowed("gemini://x/page", "Adsbot")
    assert robots.allowed("gemini://x/ads.txt", "Adsbot")
    assert not robots.allowed("gemini://x/noindex/a")


SPC = (SEEDS / "002_ebe358e7a30aaf66.txt").read_text()
PROPOSAL = SPC[SPC.index("User-agent: GUS") : SPC.index("-spc")]


def test_gemini_list_proposal_example() -> None:
    robots = manners.parse(PROPOSAL, profile="gemini-targeted")  # the proposal's own reading
    for who in ({"agent": "GUS"}, {"agent": "other", "roles": ["indexer"]}):
        assert robots.allowed("gemini://x/private/butpublic", **who)  # type: ignore[arg-type]
        assert not robots.allowed("gemini://x/private/other", **who)  # type: ignore[arg-type]
        assert robots.crawl_delay(**who) == 10  # type: ignore[arg-type]
    assert robots.check_interval(roles=["feed"]) == 21600
    assert not robots.allowed("gemini://x/private/a", roles=["feed"])
    assert robots.crawl_delay() == 20
    assert robots.check_interval() is None
    assert robots.check_interval("gus") is None  # the feed group's Check is not GUS's

    cautious = manners.parse(PROPOSAL, profile="gemini")  # the indexer also obeys '*' now
    assert not cautious.allowed("gemini://x/private/butpublic", "other", ["indexer"])
    assert cautious.allowed("gemini://x/private/butpublic", "GUS")  # its own group, alone
    assert cautious.crawl_delay("other", ["indexer"]) == 20  # the largest of '*' and indexer


def test_fields_without_target_take_the_profile_or_a_urls_scheme() -> None:
    """Issue 10 item 3: crawl_delay, request_rate and check_interval read the file under the
    profile asked for, or the one a URL's scheme picks, not rfc9309 whatever the server."""
    auto = manners.parse(PROPOSAL)
    assert auto.check_interval("gus", profile="gemini") is None
    assert auto.check_interval("gus", profile="gemini://x/") is None
    assert auto.check_interval("gus") == 21600  # rfc9309 ignores Virtual-agent lines: one group
    assert auto.check_interval("x", ["feed"], profile="gemini://x/") == 21600
    assert auto.crawl_delay("gus", profile="GEMINI") == 10  # names are case-insensitive
    capsule = manners.parse("Disallow: /private\nCrawl-delay: 4\n")  # no User-agent line
    assert capsule.crawl_delay("mybot", profile="gemini://x/") == 4
    assert capsule.crawl_delay("mybot", profile="gopher://x/") == 4
    assert capsule.crawl_delay("mybot", profile="https://x/") is None
    only = manners.parse("Crawl-delay: 4\n")  # a field alone still makes the implicit '*' group
    assert only.crawl_delay("mybot", profile="gemini") == 4


def test_gemini_virtual_agent_star_and_order_of_choice() -> None:
    text = (
        "User-agent: *\nDisallow: /star\n\n"
        "Virtual-agent: *\nDisallow: /virtual\nCrawl-delay: 3\n\n"
        "Virtual-agent: archiver\nDisallow: /archiver\nCrawl-delay: 7\n\n"
        "User-agent: mybot\nDisallow: /mine\n"
    )
    robots = manners.parse(text, profile="gemini")
    assert not robots.allowed("/mine", "mybot", ["archiver"])  # (a) the robot's own group, alone
    assert robots.allowed("/archiver", "mybot", ["archiver"])
    assert robots.allowed("/star", "mybot", ["archiver"])
    for path in ("/archiver", "/virtual", "/star"):  # (b) all of them together
        assert not robots.allowed(path, "other", ["archiver"])
    assert not robots.allowed("/virtual", "other", ["indexer"])
    assert robots.allowed("/archiver", "other", ["indexer"])
    assert not robots.allowed("/star", "other")
    assert robots.allowed("/virtual", "other")  # Virtual-agent: * is for robots with a role
    assert robots.crawl_delay("other", ["archiver", "indexer"]) == 7
    assert robots.crawl_delay("other", ["indexer"]) == 3

    targeted = manners.parse(text, profile="gemini-targeted")  # the most targeted block wins
    assert not targeted.allowed("/archiver", "other", ["archiver"])  # its role's group
    assert targeted.allowed("/virtual", "other", ["archiver"])
    assert not targeted.allowed("/virtual", "other", ["indexer"])  # then Virtual-agent: *
    assert targeted.allowed("/star", "other", ["indexer"])
    assert not targeted.allowed("/star", "other")  # then User-agent: *
    assert targeted.crawl_delay("other", ["archiver", "indexer"]) == 7


def test_gemini_combination_crawl_delay_is_the_largest() -> None:
    robots = manners.parse(
        "User-agent: archiver\nCrawl-delay: 5\nDisallow:\n\nUser-agent: indexer\nCrawl-delay: 9\nDisallow:\n",
        profile="gemini",
    )
    assert robots.crawl_delay(roles=["archiver", "indexer"]) == 9


# -- Gopher -------------------------------------------------------------------------


def test_gopher_selector_and_typed_form() -> None:
    robots = smallnet("gopher_20_quux_org_both_spellings_partial.txt", "gopher")
    assert not robots.allowed("gopher://quux.org/1/Archives/mirrors/foo")
    assert not robots.allowed("/Archives/mirrors/x")
    assert robots.allowed("gopher://quux.org/1/Archives/other")
    typed_only = manners.parse("User-agent: veronica\nDisallow: 1/something\n", profile="gopher")
    d = typed_only.decide("gopher://x/1/something/else", "veronica")
    assert (d.allowed, d.line) == (False, 2)
    assert "'1/something/else'" in d.reason
    assert typed_only.allowed("gopher://x/0/something/else", "veronica")
    assert typed_only.allowed("gopher://x/1/something", "other")


def test_gopher_no_leading_slash_is_implied() -> None:
    robots = smallnet("gopher_22_proposal_2019_examples.txt", "gopher")
    # "Disallow: /" blocks selectors starting with a slash, "Disallow: */" any with one.
    assert robots.allowed("about.txt")
    assert robots.allowed("gopher://x/0about.txt")
    assert not robots.allowed("dir/file")
    assert not robots.allowed("gopher://x/1/")
    assert robots.allowed("robots.txt") and robots.allowed("gopher://x/0/robots.txt")
    only_slash = manners.parse("Disallow: /\n", profile="gopher")
    assert only_slash.allowed("about.txt")
    assert not only_slash.allowed("/about.txt")


def test_gopher_dollar_is_an_ordinary_character() -> None:
    robots = manners.parse("User-agent: *\nDisallow: /price$\n", profile="gopher")
    assert not robots.allowed("/price$list")
    assert robots.allowed("/price")
    web = manners.parse("User-agent: *\nDisallow: /price$\n", profile="rfc9309")
    assert not web.allowed("/price") and web.allowed("/price$list")


def test_gopher_no_percent_normalisation() -> None:
    robots = manners.parse("Disallow: /a%20b\nDisallow: /caf\u00e9\n", profile="gopher")
    assert not robots.allowed("/a%20b")
    assert robots.allowed("/a b")
    assert not robots.allowed("gopher://x/0/caf%C3%A9")  # the URL is %-decoded to the selector
    assert not robots.allowed("/caf\u00e9")


def test_gopher_rules_before_any_agent_apply_to_everyone() -> None:
    robots = manners.parse("Disallow: /secret\nUser-agent: veronica\nDisallow: /other\n", profile="gopher")
    assert not robots.allowed("/secret", "veronica")
    assert not robots.allowed("/other", "veronica")
    assert not robots.allowed("/secret", "other")
    assert robots.allowed("/other", "other")


def test_gopher_typo_and_other_fields() -> None:
    robots = smallnet("gopher_23_bitreich_2019_mail_sketch_with_typo.txt", "gopher")
    assert robots.allowed("/some/selector")  # "Diallow" is no known typo: ignored
    assert robots.crawl_delay() == 10
    assert robots.sitemaps == ["gopher://bitreich.org/0/example/sitemaps.xml"]
    codes = {d.code for d in robots.diagnostics}
    assert "unknown-field" in codes


def test_gopher_veronica_files() -> None:
    robots = smallnet("gopher_24_veronica_ctl_1994_tokens.txt")
    assert not robots.allowed("gopher://x/1/private/a", "veronica")
    assert robots.allowed("gopher://x/1/private/a", "other")
    robots = smallnet("gopher_21_v2_2003_internal_itemtype_example.txt")
    assert not robots.allowed("gopher://x/1/something", "veronica")


def test_gopher_captured_server_file() -> None:
    robots = manners.parse((SMALLNET / "gopher_33_gophernicus_robots_crlf_converted.bin").read_bytes())
    assert robots.decide("gopher://127.0.0.1/0/private/x").profile == "gopher"
    assert not robots.allowed("gopher://127.0.0.1/0/private/x")
    assert not robots.allowed("gopher://127.0.0.1/1/cgi-bin")
    assert robots.allowed("gopher://127.0.0.1/0/public")


@pytest.mark.parametrize("selector", ["robots.txt", "/robots.txt", "0/robots.txt", "gopher://h/0robots.txt"])
def test_gopher_robots_txt_always_allowed(selector: str) -> None:
    robots = manners.parse("User-agent: *\nDisallow: *\n", profile="gopher")
    assert robots.allowed(selector)
    assert not robots.allowed("anything")


# -- 1994 ---------------------------------------------------------------------------

SEED_1994 = (SEEDS / "004_02397d09a23fa61d.txt").read_text()


def _example(n: int) -> str:
    blocks = SEED_1994.split("_________________________________________________________________")
    examples = [b for b in blocks if b.strip().startswith("# ")]
    return examples[n]


def test_1994_seed_examples() -> None:
    first = manners.parse(_example(0), profile="1994")
    for path in ("/cyberworld/map/index.html", "/tmp/x", "/foo.html"):
        assert not first.allowed(f"http://www.example.com{path}", "AnyBot/1.0")
    assert first.allowed("http://www.example.com/bar.html", "AnyBot/1.0")
    second = manners.parse(_example(1), profile="1994")
    assert second.allowed("http://www.example.com/cyberworld/map/x", "CyberMapper/2.1")
    assert not second.allowed("http://www.example.com/cyberworld/map/x", "OtherBot")
    third = manners.parse(_example(2), profile="1994")
    assert not third.allowed("http://www.example.com/", "anybot")


def test_1994_blank_line_ends_a_record() -> None:
    robots = manners.parse("User-agent: *\n\nDisallow: /x\n", profile="1994")
    assert robots.allowed("/x")
    comment = manners.parse(
        "User-agent: *\n# a comment is no record boundary\nDisallow: /x\n", profile="1994"
    )
    assert not comment.allowed("/x")
    assert not manners.parse("User-agent: *\n\nDisallow: /x\n", profile="rfc9309").allowed("/x")


def test_1994_substring_and_first_record_wins() -> None:
    text = (
        "User-agent: mapper\nDisallow: /a\n\n"
        "User-agent: cybermapper\nDisallow: /b\n\n"
        "User-agent: *\nDisallow: /\n"
    )
    robots = manners.parse(text, profile="1994")
    assert not robots.allowed("/a", "CyberMapper/2.1")
    assert robots.allowed("/b", "CyberMapper/2.1")
    assert not robots.allowed("/b", "Other")


def test_1994_plain_prefixes_and_no_allow() -> None:
    robots = manners.parse("User-agent: *\nDisallow: /*.gif\nDisallow: /x$\nAllow: /x$/ok\n", profile="1994")
    assert robots.allowed("/a.gif")
    assert not robots.allowed("/*.gif")
    assert not robots.allowed("/x$/ok")
    assert robots.allowed("/x")
    assert "allow-unsupported" in {d.code for d in robots.diagnostics}


def test_1994_empty_disallow_and_empty_file() -> None:
    assert manners.parse("User-agent: *\nDisallow:\n", profile="1994").allowed("/x")
    assert manners.parse("", profile="1994").allowed("/x")


# -- every small-net file under every profile -------------------------------------


@pytest.mark.parametrize("path", sorted(SMALLNET.glob("*_*.*")), ids=lambda p: p.name)
@pytest.mark.parametrize("profile", sorted(manners.PROFILES))
def test_smallnet_files_parse_under_every_profile(path, profile: str) -> None:
    robots = manners.parse(path.read_bytes(), profile=profile)
    for target in ("/", "/private/x", "gemini://x/search", "gopher://x/1/private"):
        for roles in ((), ("indexer",), ("archiver", "webproxy")):
            d = robots.decide(target, "veronica", roles)
            assert d.allowed is robots.allowed(target, "veronica", roles)
            assert d.profile == profile
            if d.line is not None:
                assert d.rule is not None
                assert d.rule.split(":")[0] in ("Allow", "Disallow")
    assert all(d.code for d in robots.diagnostics)


def test_lint_warns_where_the_two_gemini_readings_differ() -> None:
    """A role group with an empty Disallow under a 'Disallow: /' star group: the archiver may
    fetch everything only if the most targeted group decides alone."""
    text = "User-agent: *\nDisallow: /\n\nUser-agent: archiver\nDisallow:\n"
    found = [d for d in manners.parse(text, "gemini").diagnostics if d.code == "gemini-readings"]
    assert [(d.line, d.severity) for d in found] == [(4, "warning")]
    assert "archiver" in found[0].message and "line 2" in found[0].message
    assert any(d.code == "gemini-readings" for d in manners.parse(text, "gemini-targeted").diagnostics)
    assert not any(d.code == "gemini-readings" for d in manners.parse(text, "rfc9309").diagnostics)
    agree = (
        "User-agent: *\nDisallow: /cgi-bin/\n\nVirtual-agent: archiver\nDisallow: /cgi-bin/\nDisallow: /x\n"
    )
    assert not any(d.code == "gemini-readings" for d in manners.parse(agree, "gemini").diagnostics)
    real = smallnet("gemini_11_cl_robots_txt_readme_tlgs_style.txt", "gemini").diagnostics
    assert {d.line for d in real if d.code == "gemini-readings"} == {1, 2, 3}  # /add-seed
