"""Revisiting crawls: the interval form and the schedule (manners.crawl.revisit).

WARC revisit records are in test_warc.py."""

from __future__ import annotations

import argparse
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from manners.crawl.revisit import (
    DAY,
    GONE_AFTER,
    HOUR,
    REVISIT_MAX,
    REVISIT_MIN,
    after_missing,
    next_interval,
    parse_interval,
)
from manners.options import interval


@pytest.mark.quick
@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("30s", 30), ("5m", 300), ("2h", 7200), ("1d", DAY), ("1.5h", 5400), (" 7d ", 7 * DAY),
     ("0.5", 0.5)],
)  # fmt: skip
def test_intervals_read(text: str, seconds: float) -> None:
    assert parse_interval(text) == seconds
    assert interval(text) == seconds


@pytest.mark.parametrize(
    ("text", "said"),
    [("", "is not an interval"), ("5x", "is not an interval"), ("m", "is not an interval"),
     ("-1", "is not an interval"), ("1e5", "is not an interval"), ("inf", "is not an interval"),
     ("nan", "is not an interval"), ("5 m", "is not an interval"), ("5M", "is not an interval"),
     ("\u0665m", "is not an interval"), ("1ms", "is not an interval"),
     ("0", "longer than 0 seconds"), ("0d", "longer than 0 seconds"), ("0.0s", "longer than 0 seconds"),
     ("9" * 400, "longer than any crawl"), ("99999999999d", "longer than any crawl")],
)  # fmt: skip
def test_bad_intervals_are_refused_in_one_sentence(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said) as refused:
        parse_interval(text)
    message = str(refused.value)
    assert "\n" not in message and ". " not in message  # one sentence, shown after the option's name


def test_the_argparse_type_says_which_option_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="manners crawl")
    parser.add_argument("--revisit-min", type=interval, default=REVISIT_MIN)
    assert parser.parse_args(["--revisit-min", "2h"]).revisit_min == 2 * HOUR
    assert parser.parse_args([]).revisit_min == DAY
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(["--revisit-min", "soon"])
    assert stopped.value.code == 2
    assert "argument --revisit-min: 'soon' is not an interval" in capsys.readouterr().err


def test_a_still_page_is_asked_less_and_less_often_and_a_changed_one_soon() -> None:
    seen, last = [], None
    for changed in [True, False, False, False, False, False, False, True, False]:
        last = next_interval(last, changed, None)
        seen.append(last / DAY)
    assert seen == [1, 2, 4, 8, 16, 30, 30, 1, 2]
    assert REVISIT_MAX == 30 * DAY


def test_check_and_min_delay_are_floors() -> None:
    # Check: 10 days: the schedule's own 1, 2, 4 days are never asked for
    assert next_interval(None, True, 10 * DAY) == 10 * DAY
    assert next_interval(10 * DAY, False, 10 * DAY) == 20 * DAY
    assert next_interval(20 * DAY, False, 10 * DAY) == 30 * DAY
    assert next_interval(30 * DAY, True, 10 * DAY) == 10 * DAY
    # a Check: longer than the maximum wins over the maximum
    assert next_interval(30 * DAY, False, 60 * DAY) == 60 * DAY
    # seconds-long schedules (tests, a fast-moving capsule) still wait --min-delay
    assert next_interval(None, True, None, revisit_min=1, revisit_max=8, min_delay=5) == 5
    assert next_interval(4, False, None, revisit_min=1, revisit_max=8, min_delay=5) == 8


def test_a_resumed_crawl_with_other_bounds_moves_into_them() -> None:
    assert next_interval(30 * DAY, False, None, revisit_min=HOUR, revisit_max=2 * DAY) == 2 * DAY
    assert next_interval(60.0, False, None, revisit_min=HOUR, revisit_max=DAY) == HOUR


@pytest.mark.parametrize(("low", "high"), [(0, 10), (-1, 10), (10, 5)])
def test_bounds_that_cannot_make_a_schedule(low: float, high: float) -> None:
    with pytest.raises(ValueError, match="revisit interval"):
        next_interval(None, True, None, revisit_min=low, revisit_max=high)


def test_a_page_that_has_gone_is_asked_again_after_the_maximum_and_settled_after_three() -> None:
    assert GONE_AFTER == 3
    assert after_missing(1, None) == REVISIT_MAX
    assert after_missing(2, None, revisit_max=DAY) == DAY
    assert after_missing(3, None) is None
    assert after_missing(4, None) is None
    assert after_missing(1, 40 * DAY) == 40 * DAY
    assert after_missing(1, None, revisit_max=10, min_delay=30) == 30
    with pytest.raises(ValueError):
        after_missing(0, None)


seconds = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False, allow_infinity=False)
floors = st.one_of(st.none(), st.floats(min_value=0, max_value=1e9, allow_nan=False))


@st.composite
def schedules(draw: st.DrawFn) -> tuple[float, float]:
    low, high = sorted((draw(seconds), draw(seconds)))
    return low, high


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(st.none(), seconds), st.booleans(), floors, schedules(),
    st.floats(min_value=0, max_value=1e9, allow_nan=False),
)  # fmt: skip
def test_never_below_check_or_min_delay(
    last: float | None, changed: bool, check: float | None, bounds: tuple[float, float], min_delay: float
) -> None:
    low, high = bounds
    got = next_interval(last, changed, check, low, high, min_delay)
    assert got >= (check or 0) and got >= min_delay
    assert got >= low  # never sooner than the minimum either
    if got > high:  # past the maximum only because a floor says so
        assert got == max(check or 0, min_delay)
    gone = after_missing(1, check, high, min_delay)
    assert gone is not None and gone >= max(high, check or 0, min_delay)


@settings(max_examples=500, deadline=None)
@given(schedules(), st.integers(min_value=1, max_value=80))
def test_doubles_while_unchanged_up_to_the_maximum_and_resets_on_change(
    bounds: tuple[float, float], unchanged: int
) -> None:
    low, high = bounds
    got = [next_interval(None, True, None, low, high)]
    for _ in range(unchanged):
        got.append(next_interval(got[-1], False, None, low, high))
    assert got[0] == low
    for before, after in itertools.pairwise(got):
        assert after == min(2 * before, high)
    assert got[-1] == high or got[-1] == low * 2**unchanged
    assert next_interval(got[-1], True, None, low, high) == low
