"""bench/space_schedule.py, the space bench's schedule model: its clock, and the rule it chose
for the crawler's request gate (``inflight.rank``) against first come, first served."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from manners.cache import written_margin  # noqa: E402
from space_checks import Crawl, plan  # noqa: E402
from space_model import build  # noqa: E402
from space_schedule import RULES, makespan, planned_sites, run  # noqa: E402


def test_one_host_takes_its_pages_at_its_spacing() -> None:
    # robots.txt and 50 pages: 50 spacings, then the last request's CPU
    assert abs(makespan([(50, 3)], 0.1, 0.001, RULES["fifo"]) - 5.001) < 1e-9


def test_a_short_cpu_delays_the_big_host_without_a_rank_and_less_with_one() -> None:
    space = build(6, 400, 40, factor=10)
    hosts = [(h.pages, h.fanout) for h in space.hosts if h.fault != "dead"]
    took = {name: makespan(hosts, 0.11, 0.0055, RULES[name]) for name in ("fifo", "ranked", "oracle")}
    bound = (max(hosts)[0] + 1) * 0.11  # the biggest host's requests at its spacing and margin
    assert took["oracle"] < bound * 1.03  # a rule that knew every host's size keeps it busy
    assert took["fifo"] > bound * 1.1  # first come, first served: the opening rush costs it
    assert took["ranked"] < took["fifo"] * 0.93


def test_the_most_queued_per_page_asked_does_not_lock_in_the_hosts_read_first() -> None:
    # seed 1: ranked by URLs queued alone, the hosts whose first pages queued the most keep the
    # lead, and the biggest (five links a page) waits behind them
    space = build(1, 400, 40, factor=10)
    hosts = [(h.pages, h.fanout) for h in space.hosts if h.fault != "dead"]
    took = {name: makespan(hosts, 0.11, 0.0055, RULES[name]) for name in ("first-queued", "ranked")}
    assert took["ranked"] < took["first-queued"] * 0.97


def test_the_planned_model_has_only_the_pages_the_crawl_may_ask_at_each_hosts_spacing() -> None:
    # 40 hosts, factor 10: the model's sites are the plan's hosts with a page to ask, each with
    # the plan's allowed pages (a trap's aside) and the spacing its robots.txt asks, claim margin added
    space = build(3, 36, 4, factor=10)
    crawl = Crawl(min_delay=0.1, backoff=6.0)
    planned = plan(space, crawl)
    sites, bound = planned_sites(space, crawl)
    assert bound == planned.politeness_bound()
    assert any(hp.disallowed for hp in planned.hosts.values())  # a branch the model must leave out
    expected = sorted(
        (
            sum(1 for p in hp.pages if space.page_of(hp.host, p) is not None),
            hp.spacing + written_margin(hp.spacing),
        )
        for hp in planned.hosts.values()
        if hp.pages and hp.host.fault != "dead"
    )
    assert sorted((s.pages, s.spacing) for s in sites) == expected
    assert any(s.spacing > 0.2 for s in sites)  # a Crawl-delay above the floor is kept
    # every page is reached, from the root or as a seed (linked from another host only)
    trace: list[tuple[int, float]] = []
    took = run(sites, 0.0001, RULES["oracle"], trace=trace)
    assert len(trace) == sum(s.pages + 1 for s in sites)
    longest = max((s.pages + 1) * s.spacing for s in sites)
    assert took >= longest - max(s.spacing for s in sites)
