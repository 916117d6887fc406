"""The cache's rules with no store and no network: expiry, stale copies, backoff."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable

import pytest

from manners.cache.entry import DAY, MIN_TTL, STALE_LIMIT, Entry, entry_after, policy_of
from manners.fetch.outcome import http_result, unreachable

pytestmark = pytest.mark.quick

URL = "https://example.com/robots.txt"
T0 = 1_700_000_000.0


def fetched(
    status: int, headers: dict[str, str] | None = None, body: bytes = b"User-agent: *\nDisallow: /p\n"
):  # type: ignore[no-untyped-def]
    return http_result(URL, URL, status, headers or {}, body, max_bytes=512_000, now=T0)


def test_a_file_is_kept_a_day_or_what_the_server_says() -> None:
    assert entry_after(None, fetched(200), T0).expires_at == T0 + DAY
    assert entry_after(None, fetched(200, {"cache-control": "max-age=3600"}), T0).expires_at == T0 + 3600
    assert entry_after(None, fetched(200, {"cache-control": "max-age=999999"}), T0).expires_at == T0 + DAY
    assert entry_after(None, fetched(200, {"cache-control": "no-store"}), T0).expires_at == T0 + MIN_TTL
    assert entry_after(None, fetched(200), T0, ttl=10).expires_at == T0 + 10


def test_unavailable_is_cached_like_a_file() -> None:
    e = entry_after(None, fetched(404), T0)
    assert (e.good, e.expires_at) == ("unavailable", T0 + DAY)
    robots, stale = policy_of(e, T0 + 5)
    assert robots.allowed("/p") and not stale


def test_unreachable_answers_from_the_last_copy_for_30_days() -> None:
    good = entry_after(None, fetched(200), T0)
    failed = entry_after(good, fetched(503), T0 + DAY + 1)
    assert failed.good == "ok" and failed.outcome == "unreachable" and failed.failures == 1
    robots, stale = policy_of(failed, T0 + DAY + 2)
    assert stale and not robots.allowed("/p") and robots.allowed("/q")
    robots, stale = policy_of(failed, T0 + STALE_LIMIT + 1)
    assert not stale and not robots.allowed("/q")
    assert "no copy of it younger than 30 days" in robots.decide("/q").reason


def test_unreachable_with_no_copy_disallows_and_backs_off() -> None:
    e = None
    waits = []
    for n in range(12):
        e = entry_after(e, unreachable(URL, "timeout", "no answer"), T0 + n)
        waits.append(e.expires_at - (T0 + n))
    assert waits[:4] == [60, 120, 240, 480] and max(waits) == DAY
    assert e is not None and not policy_of(e, T0)[0].allowed("/anything")


def test_a_readable_answer_ends_the_backoff() -> None:
    e = entry_after(None, unreachable(URL, "timeout", "no answer"), T0)
    e = entry_after(e, fetched(200), T0 + 100)
    assert e.failures == 0 and e.outcome == "ok"


def test_retry_after_sets_the_next_fetch() -> None:
    e = entry_after(None, fetched(429, {"retry-after": "30"}), T0)
    assert (e.outcome, e.retry_after, e.expires_at) == ("retry", 30.0, T0 + 30)
    assert not policy_of(e, T0)[0].allowed("/")


@pytest.mark.parametrize("status", [200, 404, 503])
def test_entries_survive_serialisation(status: int) -> None:
    e = entry_after(None, fetched(status, body=b"\xff\x00User-agent: *\n"), T0)
    assert Entry.loads(e.dumps()) == e


def test_an_entry_is_a_line_of_fields_then_the_body_as_read() -> None:
    """The body is stored as it came, so reading an entry back has no base64 to undo."""
    body = b'User-agent: *\r\nDisallow: /p\n\x00\xff{"url": 1}\n'
    e = entry_after(None, fetched(200, body=body), T0)
    fields, sep, stored = e.dumps().partition(b"\n")
    assert (sep, stored) == (b"\n", body)
    assert json.loads(fields)["url"] == URL and "body" not in json.loads(fields)
    assert Entry.loads(e.dumps()) == e


@pytest.mark.parametrize("as_read", [str, str.encode], ids=["sqlite-text", "redis-bytes"])
def test_entries_in_the_older_form_still_load(as_read: Callable[[str], str | bytes]) -> None:
    """Before, an entry was one JSON object with the body in base64: stores keep those a while."""
    e = entry_after(None, fetched(200, body=b"User-agent: *\nDisallow: /old\n"), T0)
    fields = dataclasses.asdict(e) | {"body": base64.b64encode(e.body).decode()}
    assert Entry.loads(as_read(json.dumps(fields, separators=(",", ":")))) == e
