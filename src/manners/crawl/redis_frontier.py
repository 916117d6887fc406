"""The crawl frontier on Redis: one crawl shared by a fleet of workers on many machines.

``RedisFrontier`` speaks the same ``Frontier`` protocol as ``SQLiteFrontier``, with the same
meaning, so the crawler runs unchanged on either.  What a fleet adds: leases expire on the
Redis server's clock and any live worker returns a dead one's to the queue (``reclaim``), request
slots are booked fleet-wide per authority (``book``/``claim``), and workers leave a heartbeat.

Layout (``N`` is the crawl's name; every key starts with it).  An authority belongs to one of
``SHARDS`` shards (CRC-32 of its name), and all keys of a shard carry the hash tag ``{N:k}``:

- ``N:{N:k}:u:AUTH``  hash, URL -> its record, packed with cmsgpack: state, depth, attempts,
  redirects, not_before, id, parent, outcome, and a revisiting crawl's visits, interval, digest,
  capture_at, misses (records written before those five existed read them as absent).  The
  seen-set: every URL of AUTH, in any state.
- ``N:{N:k}:q:AUTH``  sorted set of AUTH's queued URLs, scored by not_before; each member is the
  URL behind its id in ten digits, so ties go in the order the URLs were added (as in SQLite).
- ``N:{N:k}:a:AUTH``  hash: ``seq`` (last id), ``done``, ``kept`` (URLs settled and queued again
  for a revisit), ``turn`` (last leased, server time), ``parked`` (until, the crawler's clock) and
  ``reason``.
- ``N:{N:k}:due``     sorted set, AUTH -> when its next URL is ready (its earliest not_before or
  its park's end); only authorities with something queued.
- ``N:{N:k}:turn``    sorted set, the same authorities -> when they were last leased.
- ``N:{N:k}:parked``  sorted set, AUTH -> end of its park.
- ``N:{N:k}:revisit`` sorted set, URL -> due, of the queued URLs visited before (for status).
- ``N:{N:k}:leases``  sorted set, URL in flight -> lease expiry (server time);
  ``N:{N:k}:held`` hash, URL in flight -> (token, owner, AUTH).
- ``N:{N:k}:outbox``  hash, page URL -> JSON of its links bound for other shards, until queued.
- ``N:{N:k}:counts``  hash: ``queued``, ``in_flight``, ``done`` and ``o:OUTCOME`` (``o:pages``).
- ``N:{N:k}:auths``   set of the shard's authorities (walked by ``requeue`` only).
- ``N:{N:k}:slot:AUTH`` and ``N:{N:k}:start:AUTH``: the request slots of ``book`` and ``claim``.
- ``N:{N:k}:crawl``   the shard's marker: when the crawl was made (see "A Redis that forgets").
- ``N:meta``, ``N:hosts`` (certificate fingerprints), ``N:workers`` (heartbeats),
  ``N:layout`` (the shard count the crawl was made with) and ``N:lost`` (why the crawl was
  found lost, if it was): single keys.

Why an authority lives in its shard's slot rather than in a slot of its own: every change is one
Lua script on one node, and that script updates the shard's indexes (``due``, ``turn``,
``leases``) and counters in the same atomic step as the URL records.  The fleet-wide indexes
are then exact, never a hint that a worker dying between two calls could leave stale (an
authority never leased again, a dead worker's lease never reclaimed), and a fleet-wide question
(which authorities are ready, which leases expired, the counts) asks ``SHARDS`` keys, with
neither cross-slot scripts nor KEYS/SCAN.  The price: a crawl's data lives in ``SHARDS`` slots,
so at most that many cluster nodes share its load (16 is plenty for the 3 to 6 masters a fleet
uses; ``N:layout`` refuses a crawl made with another count).

A page settles with its links in one step: the settling script marks the URL done and queues
the links of its own shard (a page's own site, above all) atomically; the links of other shards
go to the shard's outbox in that same script.  The worker then queues them, one script per
shard (deduplicated against the seen-sets, so repeating it is harmless), and deletes the entry.
A worker dying in between leaves the entry, which the next ``reclaim`` of any worker replays; a
worker that lost the settling's reply and settles again finds the page settled and the entry
there, and queues the links itself.

Clocks: lease expiries and turns are the server's (``TIME`` inside the scripts), so the workers'
clocks need not agree for leases; not_before, parks and the ``now`` of ``ready_authorities`` are
epochs on the crawler's clock, as given (they come from its own time.time()).

Fencing: each lease has a token (in ``held``).  A request slot under a lease is claimed by a
script that checks the token and extends the lease in the same step (``claim`` with ``held``), so
a request leaves only while its lease is held; a settling, a retry or a renewal naming a token no
longer held changes nothing (``LeaseLost``, or the URL among those renewal reports lost).

A Redis that forgets: making a crawl writes a marker in each shard (``N:{N:k}:crawl``, read with
EXISTS, which leaves its LRU clock alone, so an eviction takes it among the first), and every
script that leases, settles, claims, renews or counts checks it before writing anything, as a
lease checks its URL's record: a crawl whose keys are gone is ``CrawlLost``, never an empty
crawl, and ``N:lost`` says so to the next worker and to ``status``.

Faults: every call has socket deadlines and none is retried (a script whose reply was lost may
have been applied): a Redis that is down makes calls raise ``FrontierError``, and the crawler
decides whether to wait.  Each script is safe to repeat: settling a settled URL changes nothing,
queueing a known URL does nothing, a retry of a URL not in flight does nothing.  A refusal (a
password, a command an ACL denies) is a ``lasting`` FrontierError, not waited out.  Run Redis with
``appendonly yes`` (and ``appendfsync always`` to survive a power cut, not just a restart):
``durability`` reads what a Redis keeps, and ``manners crawl`` refuses one that would forget.

Memory: one hash field per URL (its record, a dozen bytes plus its parent), its queue entry while
queued, its lease while in flight; the worker keeps nothing of the URL set in Python.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import socket
import time
import zlib
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from ..cache import Held, LeaseLost
from ..cache.redis import BOOK, CLAIM
from ..terminal import safe
from .frontier import (
    DONE,
    IN_FLIGHT,
    QUEUED,
    WORKERS_KEPT,
    CrawlLost,
    FrontierError,
    Lease,
    Revisits,
    Visit,
    _retrieved,
)
from .redis_settings import NAMES, Finding, findings, from_info
from .urls import authority

if TYPE_CHECKING:
    from .frontier import Frontier

T = TypeVar("T")

SHARDS = 16  # shards of a crawl: part of its layout, kept in N:layout
_CHUNK = 1000  # URLs queued per script call: a big add_many must not hold Redis for long
_ALL = "\0all"  # the ordering key of the changes that touch every authority
_LOST = "manners-crawl-lost"  # the error a script raises when a crawl's marker or a record is gone

# Put before each per-shard script.  ARGV[1] is the shard's key prefix ``N:{N:k}:``; every key a
# script names is built from it, so it hashes to the slot of KEYS[1] (the shard's counts).
_LIB = """
local P = ARGV[1]
local QUEUED, IN_FLIGHT, DONE = 0, 1, 2
local function key(kind, a) return P .. kind .. ':' .. a end
-- Scores written exactly: Lua would print a number with 14 digits only.
local function score(x) return string.format('%.17g', x) end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function count(field, n)
  if n ~= 0 then redis.call('HINCRBY', P .. 'counts', field, n) end
end
-- The shard's marker, written when the crawl was made: without it the crawl is gone (a Redis
-- restarted without its data) or has lost keys (evicted): nothing may go on as if it were whole.
-- Checked before a script writes anything (a script's error does not undo its writes).
local function alive()
  if redis.call('EXISTS', P .. 'crawl') == 0 then error('manners-crawl-lost ' .. P .. 'crawl') end
end
-- Whether ``url`` is in flight under the lease ``token`` (its ``held`` entry names it).
local function holds(url, token)
  local held = redis.call('HGET', P .. 'held', url)
  return held ~= false and held ~= nil and cmsgpack.unpack(held) == token
end
-- A record that should be there and is not: a key evicted.
local function lost(what) error('manners-crawl-lost ' .. what) end
-- A URL's record: {state, depth, attempts, redirects, not_before, id, parent, outcome, visits,
-- interval, digest, capture_at, misses}; absent values are false (a record of 8 fields, written
-- before a crawl could revisit, reads the last five as absent).
local function load(a, url)
  local packed = redis.call('HGET', key('u', a), url)
  if not packed then return nil end
  local r = {cmsgpack.unpack(packed)}
  for i = 9, 13 do if r[i] == nil then r[i] = false end end
  r[9], r[13] = r[9] or 0, r[13] or 0
  return r
end
-- A URL never revisited is stored in the 8 fields it had before revisits existed (12 bytes less).
local function store(a, url, r)
  local packed
  if r[9] == 0 and not r[10] and not r[11] and not r[12] and r[13] == 0 then
    packed = cmsgpack.pack(r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8])
  else
    packed = cmsgpack.pack(r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13])
  end
  redis.call('HSET', key('u', a), url, packed)
end
local function enqueue(a, url, r)
  r[1] = QUEUED
  store(a, url, r)
  redis.call('ZADD', key('q', a), score(r[5]), string.format('%010d', r[6]) .. url)
  if r[9] > 0 then redis.call('ZADD', P .. 'revisit', score(r[5]), url) end
end
-- A number as a reply carries it (Lua numbers become integers), or false.
local function exact(x) if x then return score(x) end return false end
local function unlease(url)
  redis.call('ZREM', P .. 'leases', url)
  redis.call('HDEL', P .. 'held', url)
end
-- After a change to an authority's queue or park: when it is next ready, and its turn.
local function refresh(a)
  local first = redis.call('ZRANGE', key('q', a), 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('ZREM', P .. 'due', a)
    redis.call('ZREM', P .. 'turn', a)
    return
  end
  local info = redis.call('HMGET', key('a', a), 'parked', 'turn')
  redis.call('ZADD', P .. 'due', score(math.max(tonumber(first[2]), tonumber(info[1] or 0))), a)
  redis.call('ZADD', P .. 'turn', info[2] or 0, a)
end
-- Back to the queue from flight, with ``tried`` attempts more (the caller refreshes).
local function back(a, url, tried)
  unlease(url)
  local r = load(a, url)
  r[3] = r[3] + tried
  enqueue(a, url, r)
end
-- One HSCAN batch of a's URLs from ``cursor``: each done record that ``wanted`` takes is changed
-- by ``change`` and queued again (the caller refreshes a).  Returns the next cursor, how many.
local function requeue_batch(a, cursor, wanted, change)
  local scan = redis.call('HSCAN', key('u', a), cursor, 'COUNT', 500)
  local n = 0
  for i = 1, #scan[2], 2 do
    local r = load(a, scan[2][i])
    if r[1] == DONE and wanted(r) then
      change(r)
      enqueue(a, scan[2][i], r)
      n = n + 1
    end
  end
  if n > 0 then
    redis.call('HINCRBY', key('a', a), 'done', -n)
    count('done', -n)
    count('queued', n)
  end
  return scan[1], n
end
-- ARGV[i..]: max_queued (-1: none), depth, redirects, has_parent, parent, then authority, url
-- pairs.  Queues the unknown URLs; one code per URL: 1 new, 0 known, -1 dropped (queue full).
local function add_urls(i)
  local cap, depth, redirects = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local parent = ARGV[i + 3] == '1' and ARGV[i + 4]
  local codes, touched, added = {}, {}, 0
  alive()
  for j = i + 5, #ARGV, 2 do
    local a, url = ARGV[j], ARGV[j + 1]
    local code = 0
    if redis.call('HEXISTS', key('u', a), url) == 0 then
      if cap >= 0 and redis.call('ZCARD', key('q', a)) >= cap then
        code = -1
      else
        local id = redis.call('HINCRBY', key('a', a), 'seq', 1)
        enqueue(a, url, {QUEUED, depth, 0, redirects, 0, id, parent, false, 0, false, false, false, 0})
        touched[a] = true
        code = 1
        added = added + 1
      end
    end
    codes[#codes + 1] = code
  end
  for a in pairs(touched) do
    redis.call('SADD', P .. 'auths', a)
    refresh(a)
  end
  count('queued', added)
  return codes
end
"""

_ADD = "return add_urls(2)"

# ARGV: prefix, authority, owner, ttl, now (crawler's clock), token.
_LEASE = """
local a, now = ARGV[2], tonumber(ARGV[5])
alive()
local due = redis.call('ZSCORE', P .. 'due', a)
if not due or tonumber(due) > now then return false end
local first = redis.call('ZRANGEBYSCORE', key('q', a), '-inf', ARGV[5], 'LIMIT', 0, 1)
if #first == 0 then return false end
local url = string.sub(first[1], 11)
local r = load(a, url)
if not r then lost(key('u', a) .. ' ' .. url) end
redis.call('ZREM', key('q', a), first[1])
redis.call('ZREM', P .. 'revisit', url)
r[1] = IN_FLIGHT
store(a, url, r)
local t = clock()
redis.call('HSET', P .. 'held', url, cmsgpack.pack(ARGV[6], ARGV[3], a))
redis.call('ZADD', P .. 'leases', score(t + tonumber(ARGV[4])), url)
redis.call('HSET', key('a', a), 'turn', score(t))
refresh(a)
count('queued', -1)
count('in_flight', 1)
return {url, r[2], r[3], r[7], r[4], ARGV[6], r[9], exact(r[10]), r[11], exact(r[12]), r[13]}
"""

# ARGV: prefix, authority, url, outcome, page (0/1), the JSON of its links for the outbox ('' for
# none), a revisiting crawl's visit (number, 0 for none; due, interval, digest, capture_at, '' for
# none; misses; changed, '' for none, else 0/1), the lease's token ('' for none), a repeat (1: the
# call before lost its reply), then add_urls' arguments for the links of this shard.  Returns
# {queue the outbox's links (1: settled now; 0: settled before, and 1 if its outbox entry waits
# still), the links' codes, 1 settled now, 0 before, -1 refused}.  Given a token, it settles
# only while that lease is held: a stale one (the lease expired and was taken back) changes
# nothing; a repeat finds its own settling done (or the URL queued for its next visit).
_SETTLE = """
local a, url = ARGV[2], ARGV[3]
alive()
local r = load(a, url)
local number, token = tonumber(ARGV[7]), ARGV[14]
local function opt(x) if x == '' then return false end return x end
local function mine() return r and r[1] == IN_FLIGHT and holds(url, token) end
if token ~= '' and not mine() then
  if not r then lost(key('u', a) .. ' ' .. url) end
  if ARGV[15] == '1' and r[1] ~= IN_FLIGHT then return {redis.call('HEXISTS', P .. 'outbox', url), {}, 0} end
  return {0, {}, -1}
end
if number > 0 then
  if not mine() then return {redis.call('HEXISTS', P .. 'outbox', url), {}, 0} end
  unlease(url)
  count('in_flight', -1)
  local first = r[9] == 0
  r[9], r[10], r[11], r[12], r[13] = number, tonumber(opt(ARGV[9])) or false, opt(ARGV[10]),
    tonumber(opt(ARGV[11])) or false, tonumber(ARGV[12])
  if ARGV[8] ~= '' then
    r[3], r[5], r[8] = 0, tonumber(ARGV[8]), false
    enqueue(a, url, r)
    refresh(a)
    count('queued', 1)
    if first then redis.call('HINCRBY', key('a', a), 'kept', 1) end
  else
    r[1], r[8] = DONE, ARGV[4]
    store(a, url, r)
    redis.call('HINCRBY', key('a', a), 'done', 1)
    if not first then redis.call('HINCRBY', key('a', a), 'kept', -1) end
    count('done', 1)
  end
  count('o:' .. ARGV[4], 1)
  if ARGV[5] == '1' then count('o:pages', 1) end
  if ARGV[13] ~= '' then
    count('o:visit:' .. number, 1)
    if ARGV[13] == '1' then count('o:changed:' .. number, 1) end
  end
  if ARGV[6] ~= '' then redis.call('HSET', P .. 'outbox', url, ARGV[6]) end
  return {1, add_urls(16), 1}
end
if r and r[1] == DONE then return {redis.call('HEXISTS', P .. 'outbox', url), {}, 0} end
if r then
  if r[1] == QUEUED then
    redis.call('ZREM', key('q', a), string.format('%010d', r[6]) .. url)
    redis.call('ZREM', P .. 'revisit', url)
    count('queued', -1)
    refresh(a)
  else
    unlease(url)
    count('in_flight', -1)
  end
  r[1] = DONE
  r[8] = ARGV[4]
  store(a, url, r)
  redis.call('HINCRBY', key('a', a), 'done', 1)
  count('done', 1)
  count('o:' .. ARGV[4], 1)
  if ARGV[5] == '1' then count('o:pages', 1) end
end
if ARGV[6] ~= '' then redis.call('HSET', P .. 'outbox', url, ARGV[6]) end
return {1, add_urls(16), 1}
"""

# ARGV: prefix, authority, url, not_before, attempts to add (0/1), the lease's token ('' for
# none), a repeat (1/0).  1 when queued again, 0 when not in flight, -1 when the lease named is
# not held (nothing changed).
_RETRY = """
local a, url = ARGV[2], ARGV[3]
alive()
local r = load(a, url)
if ARGV[6] ~= '' and not (r and r[1] == IN_FLIGHT and holds(url, ARGV[6])) then
  if not r then lost(key('u', a) .. ' ' .. url) end
  if ARGV[7] == '1' and r[1] == QUEUED then return 0 end
  return -1
end
if not r or r[1] ~= IN_FLIGHT then return 0 end
unlease(url)
r[3] = r[3] + tonumber(ARGV[5])
r[5] = tonumber(ARGV[4])
enqueue(a, url, r)
refresh(a)
count('in_flight', -1)
count('queued', 1)
return 1
"""

# ARGV: prefix, owner ('' for none).  Returns the expired leases to the queue with one attempt
# more, and the owner's others without; how many.
_RECLAIM = """
alive()
local urls = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', score(clock()))
local tried = {}
for _, url in ipairs(urls) do tried[url] = 1 end
if ARGV[2] ~= '' then
  for _, url in ipairs(redis.call('ZRANGE', P .. 'leases', 0, -1)) do
    local _, owner = cmsgpack.unpack(redis.call('HGET', P .. 'held', url))
    if not tried[url] and owner == ARGV[2] then
      urls[#urls + 1] = url
      tried[url] = 0
    end
  end
end
local touched = {}
for _, url in ipairs(urls) do
  local _, _, a = cmsgpack.unpack(redis.call('HGET', P .. 'held', url))
  back(a, url, tried[url])
  touched[a] = true
end
for a in pairs(touched) do refresh(a) end
count('in_flight', -#urls)
count('queued', #urls)
return #urls
"""

# ARGV: prefix, owner, ttl, then url, token pairs ('' for any of owner's).  Extends the leases
# held; returns the URLs whose lease is no longer held (taken back, or leased anew).
_RENEW = """
alive()
local expiry = score(clock() + tonumber(ARGV[3]))
local gone = {}
for i = 4, #ARGV, 2 do
  local url, token = ARGV[i], ARGV[i + 1]
  local held = redis.call('HGET', P .. 'held', url)
  local ok = false
  if held then
    local leased, owner = cmsgpack.unpack(held)
    ok = owner == ARGV[2] and (token == '' or leased == token)
  end
  if ok then redis.call('ZADD', P .. 'leases', 'XX', expiry, url) else gone[#gone + 1] = url end
end
return gone
"""

# ARGV: prefix, authority, spacing, url, token, ttl.  ``claim`` under a lease: the slot is
# granted only while ``url`` is in flight under ``token``, and the lease is extended to ``ttl``
# seconds from now in the same step, so the request leaves with its lease held.  Returns 0
# when claimed, the seconds left, or -1 when the lease is not held.
_CLAIM_HELD = """
alive()
if not holds(ARGV[4], ARGV[5]) then return '-1' end
local now = clock()
local k, spacing = key('start', ARGV[2]), tonumber(ARGV[3])
local left = tonumber(redis.call('GET', k) or '0') + spacing - now
if left > 0 then return string.format('%.6f', left) end
redis.call('SET', k, string.format('%.6f', now), 'PX', math.ceil(spacing * 1000) + 60000)
redis.call('ZADD', P .. 'leases', 'XX', score(now + tonumber(ARGV[6])), ARGV[4])
return '0'
"""

# ARGV: prefix, authority, outcome, HSCAN cursor.  Requeues a batch; returns {cursor, how many}.
_REQUEUE = """
local a, outcome = ARGV[2], ARGV[3]
local cursor, n = requeue_batch(a, ARGV[4], function(r) return r[8] == outcome end,
                                function(r) r[3], r[5], r[8] = 0, 0, false end)
if n > 0 then
  redis.call('HDEL', key('a', a), 'parked', 'reason')
  redis.call('ZREM', P .. 'parked', a)
  refresh(a)
  count('o:' .. outcome, -n)
end
return {cursor, n}
"""

# ARGV: prefix, authority, due, HSCAN cursor.  Queues a batch of the URLs settled ``fetched`` again,
# due then, as visited once (a crawl made without --revisit resumed with it); {cursor, how many}.
_REVISIT_SETTLED = """
local a, due = ARGV[2], tonumber(ARGV[3])
local cursor, n = requeue_batch(a, ARGV[4], function(r) return r[8] == 'fetched' end,
                                function(r) r[3], r[5], r[8], r[9] = 0, due, false, math.max(r[9], 1) end)
if n > 0 then
  redis.call('HINCRBY', key('a', a), 'kept', n)
  refresh(a)
end
return {cursor, n}
"""

# ARGV: prefix, now.  Queued URLs visited before: how many are due at ``now``, and the next due.
_REVISITS = """
alive()
local later = redis.call('ZRANGEBYSCORE', P .. 'revisit', '(' .. ARGV[2], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
return {redis.call('ZCOUNT', P .. 'revisit', '-inf', ARGV[2]), later[2] or false}
"""

# ARGV: prefix, authority, until, reason, now.
_PARK = """
alive()
local a = ARGV[2]
redis.call('HSET', key('a', a), 'parked', ARGV[3], 'reason', ARGV[4])
redis.call('ZADD', P .. 'parked', ARGV[3], a)
redis.call('ZREMRANGEBYSCORE', P .. 'parked', '-inf', ARGV[5])
redis.call('SADD', P .. 'auths', a)
refresh(a)
"""

# ARGV: prefix, now.  Returns authority, until, reason of each park not over.
_PARKED = """
local out = {}
local parked = redis.call('ZRANGEBYSCORE', P .. 'parked', '(' .. ARGV[2], '+inf', 'WITHSCORES')
for i = 1, #parked, 2 do
  out[#out + 1] = parked[i]
  out[#out + 1] = parked[i + 1]
  out[#out + 1] = redis.call('HGET', key('a', parked[i]), 'reason') or ''
end
return out
"""

# ARGV: prefix, now, want.  The first ``want`` authorities ready at ``now`` in turn order, with
# their turns: a walk over ``turn`` that skips those not due yet, as SQLite walks its index.
_READY = """
alive()
local now, want = tonumber(ARGV[2]), tonumber(ARGV[3])
local out, start, step = {}, 0, want
while #out < 2 * want do
  local chunk = redis.call('ZRANGE', P .. 'turn', start, start + step - 1, 'WITHSCORES')
  if #chunk == 0 then break end
  for i = 1, #chunk, 2 do
    local due = redis.call('ZSCORE', P .. 'due', chunk[i])
    if due and tonumber(due) <= now and #out < 2 * want then
      out[#out + 1] = chunk[i]
      out[#out + 1] = chunk[i + 1]
    end
  end
  start, step = start + step, step * 2
end
return out
"""

# ARGV: prefix.  The shard's counters, as HGETALL gives them.
_COUNTS = "alive() return redis.call('HGETALL', P .. 'counts')"
# ARGV: prefix.  The shard's outbox, as HGETALL gives it.
_OUTBOX = "return redis.call('HGETALL', P .. 'outbox')"
# ARGV: prefix, n.  The first n + 1 authorities due, with when.
_DUE = "alive() return redis.call('ZRANGE', P .. 'due', 0, ARGV[2], 'WITHSCORES')"

# ARGV: prefix.  The shard's lease expiring first: url, owner, seconds until it expires.
_OLDEST = """
local first = redis.call('ZRANGE', P .. 'leases', 0, 0, 'WITHSCORES')
if #first == 0 then return false end
local _, owner = cmsgpack.unpack(redis.call('HGET', P .. 'held', first[1]))
return {first[1], owner, score(tonumber(first[2]) - clock())}
"""

# ARGV: prefix, latest, then authority, url pairs (revisits due after ``latest``, as ``revisit``
# listed them).  Each still queued and due later is due at ``latest``; any other leaves ``revisit``
# or is scored anew (an index that drifted), so a caller listing again finds each URL at most once.
# Returns how many moved.
_CAP_DUE = """
local latest, touched, n = tonumber(ARGV[2]), {}, 0
for j = 3, #ARGV, 2 do
  local a, url = ARGV[j], ARGV[j + 1]
  local r = load(a, url)
  if r and r[1] == QUEUED and r[9] > 0 then
    if r[5] > latest then
      redis.call('ZREM', key('q', a), string.format('%010d', r[6]) .. url)
      r[5] = latest
      enqueue(a, url, r)
      touched[a] = true
      n = n + 1
    else
      redis.call('ZADD', P .. 'revisit', score(r[5]), url)
    end
  else
    redis.call('ZREM', P .. 'revisit', url)
  end
end
for a in pairs(touched) do refresh(a) end
return n
"""

# ARGV: prefix.  The shard's leases held, by owner: owner, n, owner, n, ...
_HELD = """
local n = {}
for _, held in ipairs(redis.call('HVALS', P .. 'held')) do
  local _, owner = cmsgpack.unpack(held)
  n[owner] = (n[owner] or 0) + 1
end
local flat = {}
for owner, count in pairs(n) do
  flat[#flat + 1] = owner
  flat[#flat + 1] = count
end
return flat
"""

# KEYS[1] the workers hash; ARGV: worker, info (JSON), seconds a silent worker is kept.
_HEARTBEAT = """
local t = redis.call('TIME')
local stamp = string.format('%d.%06d', t[1], t[2])
redis.call('HSET', KEYS[1], ARGV[1], '{"last_seen": ' .. stamp .. ', "info": ' .. ARGV[2] .. '}')
local oldest = tonumber(t[1]) + tonumber(t[2]) / 1000000 - tonumber(ARGV[3])
local workers = redis.call('HGETALL', KEYS[1])
for i = 1, #workers, 2 do
  if cjson.decode(workers[i + 1]).last_seen < oldest then
    redis.call('HDEL', KEYS[1], workers[i])
  end
end
"""


class RedisFrontier:
    """The ``Frontier`` on Redis or a Redis Cluster (see the module docstring for its layout).

    Changes are asked for when called, as in SQLite: each waits for the changes asked for
    earlier, through this object, on the authorities it touches (its URL's and its links'), so a
    page settled and the next lease asked for before either is awaited are applied in that order;
    changes on other authorities go at once, side by side.
    """

    def __init__(
        self,
        url: str,
        name: str,
        max_queued: int | None = None,
        *,
        timeout: float = 5.0,
        authority_of: Callable[[str], str] = authority,
    ) -> None:
        if not name or "{" in name or "}" in name:
            raise FrontierError(
                f"bad crawl name {name!r} for a Redis frontier: it must be non-empty, without braces."
            )
        self.name = name
        self.max_queued = max_queued  # URLs queued for one authority at most; more are dropped
        self.dropped = 0  # URLs this worker did not queue because their authority's queue was full
        self._authority_of = authority_of
        self._prefixes = [f"{name}:{{{name}:{k}}}:" for k in range(SHARDS)]
        self._last: dict[str, asyncio.Task[Any]] = {}  # per authority: the last change asked for
        self.location, self._cluster, self._redis, self._sync = _connect(url, timeout)
        made = self._check(lambda: self._sync.set(f"{name}:layout", _LAYOUT, nx=True))
        layout = self._check(lambda: self._sync.get(f"{name}:layout"))
        if layout != _LAYOUT:
            raise FrontierError(
                f"the crawl {name!r} at {self.location} was made with {layout}, not {_LAYOUT}."
            )
        self._mark(bool(made))
        script = self._redis.register_script
        self._book, self._claim, self._heartbeat = script(BOOK), script(CLAIM), script(_HEARTBEAT)

        def shard(body: str) -> Any:
            return script(_LIB + body)

        self._add_script, self._lease_script, self._settle = shard(_ADD), shard(_LEASE), shard(_SETTLE)
        self._retry, self._reclaim, self._renew = shard(_RETRY), shard(_RECLAIM), shard(_RENEW)
        self._requeue, self._park, self._parked = shard(_REQUEUE), shard(_PARK), shard(_PARKED)
        self._ready, self._oldest, self._due = shard(_READY), shard(_OLDEST), shard(_DUE)
        self._counts, self._outbox = shard(_COUNTS), shard(_OUTBOX)
        self._held = shard(_HELD)
        self._revisit_settled, self._revisits = shard(_REVISIT_SETTLED), shard(_REVISITS)
        self._claim_held = shard(_CLAIM_HELD)

    def _mark(self, made: bool) -> None:
        """The crawl's markers, one per shard (``N:{N:k}:crawl``), written when the crawl is made and
        checked by the scripts from then on: a Redis that forgot the crawl (restarted without its
        data, keys evicted) is told from an empty crawl.  A crawl made before markers existed gets
        them now; one that has some and lacks others, or was declared lost, is refused."""
        said = self._check(lambda: self._sync.get(f"{self.name}:lost"))
        if said is not None:
            raise CrawlLost(str(said))
        markers = [prefix + "crawl" for prefix in self._prefixes]
        there = [bool(self._check(lambda key=key: self._sync.exists(key))) for key in markers]  # type: ignore[misc]
        if any(there) and (made or not all(there)):
            raise self._lost_error()
        if not any(there):  # a new crawl, or one made by an older manners: from now on it is watched
            stamp = repr(time.time())
            for key in markers:
                self._check(lambda key=key: self._sync.set(key, stamp, nx=True))  # type: ignore[misc]

    def _lost_error(self) -> CrawlLost:
        return CrawlLost(
            f"the crawl {self.name!r} at {self.location} has lost its data in Redis (its marker keys or"
            " records are gone: Redis restarted without them, or evicted keys under maxmemory), so it"
            " cannot go on: start it again under a new --name, on a Redis that keeps its data"
        )

    # -- adding and settling ------------------------------------------------------------------

    def add(self, url: str, depth: int, parent: str | None = None, redirects: int = 0) -> Awaitable[bool]:
        name = self._authority_of(url)
        return self._ordered({name}, lambda: self._add([(name, url)], depth, parent, redirects, bool))

    def add_many(
        self, urls: Iterable[str], depth: int, parent: str | None = None, redirects: int = 0
    ) -> Awaitable[list[str]]:
        pairs = [(self._authority_of(url), url) for url in urls]
        return self._ordered(
            {name for name, _ in pairs}, lambda: self._add(pairs, depth, parent, redirects, list)
        )

    def lease(self, authority: str, owner: str, ttl: float) -> Awaitable[Lease | None]:
        async def take() -> Lease | None:
            args = (authority, owner, ttl, time.time(), secrets.token_hex(8))
            got = await self._run(self._lease_script, self._shard(authority), *args)
            if got is None:
                return None
            url, depth, attempts, parent, redirects, token, visits, interval, digest, capture_at, misses = got
            return Lease(url, int(depth), int(attempts), parent, int(redirects), token, int(visits),
                         _float(interval), digest, _float(capture_at), int(misses))  # fmt: skip

        return self._ordered({authority}, take)

    def done(
        self,
        url: str,
        outcome: str,
        links: Iterable[str] = (),
        *,
        depth: int = 0,
        redirects: int = 0,
        page: bool = False,
        visit: Visit | None = None,
        token: str = "",
        repeat: bool = False,
    ) -> Awaitable[int]:
        """Settle ``url`` and queue its links (see the module docstring: outbox), idempotent.

        Returns how many links were new; 0 when ``url`` was settled already, unless the call
        settling it lost its reply before queueing all its links: then this one queues them.
        ``token`` (or ``visit.token``): the lease settled; LeaseLost, nothing changed, when it is
        no longer held.  ``repeat``: the call before lost its reply (its settling may be done)."""
        token = token or (visit.token if visit is not None else "")
        name = self._authority_of(url)
        pairs = [(self._authority_of(link), link) for link in links]

        async def settle() -> int:
            shard = self._shard(name)
            here = [pair for pair in pairs if self._shard(pair[0]) == shard]
            away = [pair for pair in pairs if self._shard(pair[0]) != shard]
            outbox = {"depth": depth, "redirects": redirects, "parent": url, "links": [u for _, u in away]}
            pending, codes, settled = await self._run(
                self._settle, shard, name, url, outcome, int(page), json.dumps(outbox) if away else "",
                *_visit_args(visit), token, int(repeat), *self._add_args(depth, url, redirects, here),
            )  # fmt: skip
            if int(settled) < 0:
                raise LeaseLost(f"the lease on {url} is no longer held: its settling was refused")
            new = self._tally(codes)
            if pending and away:
                new += await self._distribute(shard, away, depth, url, redirects)
            return new

        return self._ordered({name, *(n for n, _ in pairs)}, settle)

    async def retry(
        self, url: str, not_before: float, attempt: bool = True, *, token: str = "", repeat: bool = False
    ) -> None:
        name = self._authority_of(url)
        args = (name, url, not_before, int(attempt), token, int(repeat))
        got = await self._ordered({name}, lambda: self._run(self._retry, self._shard(name), *args))
        if int(got) < 0:
            raise LeaseLost(f"the lease on {url} is no longer held: its retry was refused")

    async def requeue(self, outcome: str) -> int:
        return await self._walk(self._requeue, outcome)

    async def revisit_settled(self, due: float) -> int:
        return await self._walk(self._revisit_settled, due)

    async def _walk(self, script: Any, arg: object) -> int:
        """``script`` over every authority's URLs in batches (HSCAN), after every change asked for
        before; how many it moved.  Each batch is atomic, the whole is not, and a repeat finds
        what is left: ``requeue`` and ``revisit_settled`` run once, at the start of a resumed crawl."""

        async def shard(k: int) -> int:
            total = 0
            async for name in self._authorities(k):
                cursor = "0"
                while True:
                    cursor, n = await self._run(script, k, name, arg, cursor)
                    total += int(n)
                    if cursor == "0":
                        break
            return total

        async def walk() -> int:
            return sum(await _together(shard(k) for k in range(SHARDS)))

        return await self._ordered({_ALL}, walk)

    async def revisits(self, now: float) -> Revisits:
        found = await self._each_shard(self._revisits, now)
        later = [float(at) for _, at in found if at is not None]
        return Revisits(sum(int(n) for n, _ in found), min(later, default=None))

    # -- leases -------------------------------------------------------------------------------

    async def recover(self, owner: str | None = None) -> int:
        """``owner``'s leases and every expired one back to the queue, as SQLite's; without an
        owner, ``reclaim``: the fleet's other workers may be alive, and their leases stay theirs."""
        return await self._ordered({_ALL}, lambda: self._recover(owner or ""))

    async def reclaim(self) -> int:
        """Every expired lease back to the queue, with one attempt more (its worker died, or hung
        past its lease); and the links of pages settled by a worker that died before queueing
        them.  Any live worker calls it now and then: nothing waits for the dead one."""
        return await self.recover(None)

    async def renew(self, urls: Collection[str], owner: str, ttl: float) -> list[str]:
        """Extend ``owner``'s leases on ``urls`` to ``ttl`` seconds from now (server time); the URLs
        whose lease is no longer held.  ``urls`` may map each URL to its lease's token: then only
        that lease is extended (a URL leased anew to the same owner is not the same lease)."""
        tokens: Mapping[str, str] = urls if isinstance(urls, Mapping) else dict.fromkeys(urls, "")
        by_shard: dict[int, list[str]] = {}
        for url, token in tokens.items():
            by_shard.setdefault(self._shard(self._authority_of(url)), []).extend((url, token))
        found = await _together(self._run(self._renew, k, owner, ttl, *mine) for k, mine in by_shard.items())
        return [str(url) for gone in found for url in gone]

    async def oldest_lease(self) -> dict[str, object] | None:
        """The lease expiring first, fleet-wide: ``url``, ``owner`` and ``expires_in`` (seconds,
        negative when overdue), for a display of stuck workers."""
        found = [got for got in await self._each_shard(self._oldest) if got is not None]
        if not found:
            return None
        url, owner, left = min(found, key=lambda got: float(got[2]))
        return {"url": url, "owner": owner, "expires_in": float(left)}

    async def held(self) -> dict[str, int]:
        """Leases held now, by owner, fleet-wide (the sum of each shard's)."""
        found: dict[str, int] = {}
        for flat in await self._each_shard(self._held):
            for owner, n in _pairs(flat):
                found[str(owner)] = found.get(str(owner), 0) + int(n)
        return found

    # -- authorities --------------------------------------------------------------------------

    async def ready_authorities(self, now: float, exclude: Collection[str], limit: int) -> list[str]:
        """Least recently leased first (on the server's clock: turns of all the fleet's leases);
        each shard gives its first ``limit`` (plus its excluded ones), merged here."""
        if limit <= 0:
            return []
        skip = set(exclude)
        found = await self._each_shard(self._ready, now, last=[limit + n for n in self._per_shard(skip)])
        turns = sorted((float(t), name) for flat in found for name, t in _pairs(flat))
        return [name for _, name in turns if name not in skip][:limit]

    async def next_ready_at(self, exclude: Collection[str] = ()) -> float | None:
        skip = set(exclude)
        firsts = await self._each_shard(self._due, last=self._per_shard(skip))
        due = (float(at) for flat in firsts for name, at in _pairs(flat) if name not in skip)
        return min(due, default=None)

    async def park(self, authority: str, until: float, reason: str) -> None:
        args = (authority, until, reason, time.time())
        await self._ordered({authority}, lambda: self._run(self._park, self._shard(authority), *args))

    async def parked(self) -> dict[str, tuple[float, str]]:
        found = await self._each_shard(self._parked, time.time())
        return {
            name: (float(until), reason)
            for flat in found
            for name, until, reason in zip(flat[::3], flat[1::3], flat[2::3], strict=True)
        }

    async def host_done(self, authority: str) -> int:
        done, kept = await self._call(self._redis.hmget(self._key("a", authority), "done", "kept"))
        return int(done or 0) + int(kept or 0)

    async def book(self, authority: str, spacing: float, wait: float = 0.0) -> float:
        """The next request slot of ``authority``, fleet-wide: the cache Store's ``book``."""
        return float(await self._call(self._book(keys=[self._key("slot", authority)], args=[spacing, wait])))

    async def claim(self, authority: str, spacing: float, held: Held | None = None) -> float:
        """Start a request to ``authority`` now if allowed: the cache Store's ``claim``.  ``held``:
        (URL, token, ttl) of the lease the request is made under: granted only while it is held,
        and extended to ``ttl`` in the same script; -1 when it is not."""
        if held is None:
            return float(await self._call(self._claim(keys=[self._key("start", authority)], args=[spacing])))
        url, token, ttl = held
        args = (authority, spacing, url, token, ttl)
        return float(await self._run(self._claim_held, self._shard(authority), *args))

    # -- figures, workers and memory ----------------------------------------------------------

    async def counts(self) -> dict[str, int]:
        """States under their names; outcomes under theirs (``fetched``, ``disallowed``...).

        Exact, even after crashes: each shard's counters change in the same script as its URLs,
        and the figures are their sum over the shards (each read atomically, the sum not)."""
        figures = {QUEUED: 0, IN_FLIGHT: 0, DONE: 0}
        for flat in await self._each_shard(self._counts):
            for field, n in _pairs(flat):
                name = field[2:] if field.startswith("o:") else field
                figures[name] = figures.get(name, 0) + int(n)
        return figures

    async def heartbeat(self, worker: str, info: dict[str, object]) -> None:
        """Record that ``worker`` is alive now, on the server's clock (the workers' need not
        agree), with ``info`` (JSON-able); forget those silent for ``WORKERS_KEPT`` seconds."""
        args = [worker, json.dumps(info), WORKERS_KEPT]
        await self._call(self._heartbeat(keys=[f"{self.name}:workers"], args=args))

    async def workers(self) -> dict[str, dict[str, object]]:
        beats = await self._call(self._redis.hgetall(f"{self.name}:workers"))
        seen: dict[str, dict[str, object]] = {}
        for worker, record in sorted(beats.items()):
            beat = json.loads(record)
            seen[worker] = {"last_seen": float(beat["last_seen"]), **beat["info"]}
        return seen

    async def get_meta(self, key: str) -> str | None:
        value = await self._call(self._redis.hget(f"{self.name}:meta", key))
        return None if value is None else str(value)

    async def set_meta(self, key: str, value: str) -> None:
        await self._call(self._redis.hset(f"{self.name}:meta", key, value))

    def known_hosts(self) -> MutableMapping[str, str]:
        return KnownHosts(self)

    async def close(self) -> None:
        pending = set(self._last.values())
        if pending:
            await asyncio.wait(pending)  # what callers were promised is applied first
        await self._redis.aclose()
        self._sync.close()

    # -- machinery ----------------------------------------------------------------------------

    def _shard(self, authority: str) -> int:
        return zlib.crc32(authority.encode("utf-8", "surrogateescape")) % SHARDS

    def _key(self, kind: str, authority: str) -> str:
        return f"{self._prefixes[self._shard(authority)]}{kind}:{authority}"

    def _per_shard(self, names: Iterable[str]) -> list[int]:
        """How many of ``names`` each shard holds."""
        counts = [0] * SHARDS
        for name in names:
            counts[self._shard(name)] += 1
        return counts

    async def _authorities(self, shard: int) -> AsyncIterator[str]:
        """The authorities of a shard, a batch at a time."""
        cursor = 0
        while True:
            cursor, names = await self._call(
                self._redis.sscan(self._prefixes[shard] + "auths", cursor, count=500)
            )
            for name in names:
                yield name
            if int(cursor) == 0:
                return

    def _ordered(self, names: Collection[str], work: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
        """Start ``work`` now, once the changes asked for earlier on ``names`` are applied (all
        earlier ones for ``_ALL``; and a later change waits for an ``_ALL`` one)."""
        if _ALL in names:
            before = set(self._last.values())
        else:
            before = {self._last[name] for name in (*names, _ALL) if name in self._last}

        async def run() -> T:
            if before:
                await asyncio.wait(before)  # their failures are their callers'
            return await work()

        task = asyncio.ensure_future(run())
        task.add_done_callback(_retrieved)
        for name in names:
            self._last[name] = task

        def forget(_: asyncio.Task[T]) -> None:
            for name in names:
                if self._last.get(name) is task:
                    del self._last[name]

        task.add_done_callback(forget)
        return task

    async def _add(
        self,
        pairs: Sequence[tuple[str, str]],
        depth: int,
        parent: str | None,
        redirects: int,
        result: Callable[[list[str]], T],
    ) -> T:
        codes = await self._queue(pairs, depth, parent, redirects)
        return result([url for (_, url), code in zip(pairs, codes, strict=True) if code == 1])

    async def _queue(
        self, pairs: Sequence[tuple[str, str]], depth: int, parent: str | None, redirects: int
    ) -> list[int]:
        """Queue the unknown URLs of (authority, url) ``pairs``, one script per shard and chunk
        (shards side by side); the codes of ``add_urls``, in the order of ``pairs``."""
        by_shard: dict[int, list[int]] = {}
        for i, (name, _) in enumerate(pairs):
            by_shard.setdefault(self._shard(name), []).append(i)
        codes = [0] * len(pairs)

        async def shard(k: int, indexes: list[int]) -> None:
            for start in range(0, len(indexes), _CHUNK):
                part = indexes[start : start + _CHUNK]
                args = self._add_args(depth, parent, redirects, [pairs[i] for i in part])
                for i, code in zip(part, await self._run(self._add_script, k, *args), strict=True):
                    codes[i] = int(code)

        await _together(shard(k, indexes) for k, indexes in by_shard.items())
        self._tally(codes)
        return codes

    def _add_args(
        self, depth: int, parent: str | None, redirects: int, pairs: Iterable[tuple[str, str]]
    ) -> list[object]:
        cap = -1 if self.max_queued is None else self.max_queued
        return [
            cap,
            depth,
            redirects,
            int(parent is not None),
            parent or "",
            *(x for pair in pairs for x in pair),
        ]

    def _tally(self, codes: list[int]) -> int:
        """How many of ``add_urls``' codes say new; the dropped ones counted in ``dropped``."""
        self.dropped += codes.count(-1)
        return codes.count(1)

    async def _distribute(
        self, shard: int, pairs: Sequence[tuple[str, str]], depth: int, parent: str, redirects: int
    ) -> int:
        """Queue the links of ``parent``'s outbox entry, then delete it: how many were new."""
        codes = await self._queue(pairs, depth, parent, redirects)
        await self._call(self._redis.hdel(self._prefixes[shard] + "outbox", parent))
        return codes.count(1)

    async def _recover(self, owner: str) -> int:
        moved = await self._each_shard(self._reclaim, owner)
        outboxes = await self._each_shard(self._outbox)
        replays = []
        for shard, entries in enumerate(outboxes):
            for _, body in _pairs(entries):
                page = json.loads(body)
                pairs = [(self._authority_of(link), link) for link in page["links"]]
                replays.append(
                    self._distribute(shard, pairs, page["depth"], page["parent"], page["redirects"])
                )
        await _together(replays)
        return sum(int(n) for n in moved)

    def _run(self, script: Any, shard: int, *args: object) -> Awaitable[Any]:
        """Run a per-shard script on shard ``shard``."""
        prefix = self._prefixes[shard]
        return self._call(script(keys=[prefix + "counts"], args=[prefix, *args]))

    async def _each_shard(self, script: Any, *args: object, last: Sequence[object] = ()) -> list[Any]:
        """Run a per-shard script on every shard (shard k gets ``last[k]`` after ``args``): in one
        pipeline on a single Redis, side by side on a cluster, whose pipelines take no scripts.
        (A call costs the asyncio client some 0.2 ms of CPU: 16 of them would cost 3.)"""
        tails = [[last[k]] if last else [] for k in range(SHARDS)]
        if self._cluster:
            return await _together(self._run(script, k, *args, *tail) for k, tail in enumerate(tails))
        # ``async with``: a pipeline that failed before sending (its scripts reloaded after a restart
        # of Redis, and the connection lost) gives its connection back, or is warned of as unclosed.
        async with self._redis.pipeline(transaction=False) as pipe:
            for prefix, tail in zip(self._prefixes, tails, strict=True):
                await script(keys=[prefix + "counts"], args=[prefix, *args, *tail], client=pipe)  # queued
            return list(await self._call(pipe.execute()))

    async def _call(self, pending: Awaitable[T]) -> T:
        import redis.exceptions

        with _failures(self.location):
            try:
                return await pending
            except redis.exceptions.ResponseError as exc:
                if _LOST not in str(exc):
                    raise
                lost = self._lost_error()
        with contextlib.suppress(Exception):  # said where ``status`` and a joining worker look
            await self._redis.set(f"{self.name}:lost", str(lost))
        raise lost

    def _check(self, call: Callable[[], T]) -> T:
        """A call on the blocking client."""
        with _failures(self.location):
            return call()

    async def cap_due(self, latest: float) -> int:
        """Revisits due after ``latest`` brought forward to it, a batch of each shard's ``revisit``
        index at a time (the script checks each URL again, atomically); how many moved."""
        script = self._redis.register_script(_LIB + _CAP_DUE)

        async def shard(k: int) -> int:
            moved = 0
            while True:
                late = await self._call(
                    self._redis.zrangebyscore(self._prefixes[k] + "revisit", f"({latest!r}", "+inf", 0, 500)
                )
                if not late:
                    return moved
                pairs = [x for url in late for x in (self._authority_of(_text(url)), _text(url))]
                moved += int(await self._run(script, k, repr(latest), *pairs))

        async def walk() -> int:
            return sum(await _together(shard(k) for k in range(SHARDS)))

        return await self._ordered({_ALL}, walk)


async def _together(calls: Iterable[Awaitable[T]]) -> list[T]:
    """The results of ``calls`` run side by side, as ``gather``'s, but no call outlives this one.

    ``gather`` raises the first failure and leaves the other calls running: on a cluster with a
    master gone, they fail in their turn after the crawl has ended, and asyncio prints each
    failure with a traceback as the process exits.  Here, when one fails, the others are awaited
    (each has its socket deadlines) and their failures taken; when this call is cancelled, they
    are cancelled, again while one runs on (redis-py can lose a cancellation), and awaited."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except asyncio.CancelledError:
        await _over(tasks, cancel=True)
        raise
    except BaseException:
        await _over(tasks, cancel=False)
        raise


async def _over(tasks: Sequence[asyncio.Future[Any]], cancel: bool) -> None:
    """``tasks`` ended (cancelled first if ``cancel``), their failures retrieved."""
    pending = {task for task in tasks if not task.done()}
    while pending:
        if cancel:
            for task in pending:
                task.cancel()
        _, pending = await asyncio.wait(pending, timeout=1.0)
    for task in tasks:
        if not task.cancelled():
            task.exception()  # taken: it is the first failure's, raised by the caller, or beside it


def _visit_args(visit: Visit | None) -> list[object]:
    """A visit as ``_SETTLE`` takes it (7 arguments, the lease's token apart; number 0 for none)."""
    if visit is None:
        return [0, "", "", "", "", 0, ""]

    def opt(x: float | None) -> str:
        return "" if x is None else repr(x)

    changed = "" if visit.changed is None else str(int(visit.changed))
    return [visit.number, opt(visit.due), opt(visit.interval), visit.digest or "", opt(visit.capture_at),
            visit.misses, changed]  # fmt: skip


def _text(value: object) -> str:
    """A member as redis-py gives it (bytes, or str with decode_responses)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _float(value: object) -> float | None:
    return None if value is None else float(str(value))


def _pairs(flat: Sequence[T]) -> Iterator[tuple[T, T]]:
    """[a, 1, b, 2] as (a, 1), (b, 2): a flat reply of pairs."""
    return zip(flat[::2], flat[1::2], strict=True)


@contextmanager
def _failures(where: str) -> Iterator[None]:
    """Redis failures as ``FrontierError``, in one sentence.  A refusal (a password, a command this
    user may not run) is ``lasting``: no wait mends it.  A down server, a failed script are not."""
    import redis.exceptions

    try:
        yield
    except redis.exceptions.AuthenticationError as exc:
        raise FrontierError(_password_refused(where, exc), lasting=True) from None
    except redis.exceptions.NoPermissionError as exc:
        raise FrontierError(_command_refused(where, str(exc)), lasting=True) from None
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise FrontierError(f"the Redis frontier at {where} is unreachable: {safe(str(exc))}") from None
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
        raise FrontierError(f"the Redis frontier at {where} failed: {safe(str(exc))}") from None


def _password_refused(where: str, exc: Exception) -> str:
    """NOAUTH (no password given, one is needed) or WRONGPASS, as a sentence."""
    said = safe(str(exc).rstrip("."))
    if getattr(exc, "status_code", None) == "NOAUTH" or "authentication required" in said.lower():
        return f"Redis at {where} asks for a password: give it in the URL, redis://:PASSWORD@HOST:PORT/DB"
    return f"Redis refused the password for {where} ({said})"


def _command_refused(where: str, reply: str) -> str:
    """NOPERM, naming the command refused when the reply does (an ACL without EVALSHA, SCRIPT...)."""
    said = safe(reply.rstrip("."))
    named = re.search(r"run the '([^']+)' command", reply)
    if named:
        command = named.group(1).replace("|", " ").upper()
        return (f"Redis at {where} refuses this user the command {command} ({said}); the crawl needs"
                " EVALSHA and SCRIPT (LOAD, EXISTS) besides reads and writes on its keys")  # fmt: skip
    return f"Redis at {where} refuses this user ({said})"


_LAYOUT = f"shards={SHARDS}"


class KnownHosts(MutableMapping[str, str]):
    """Certificate fingerprints in the crawl's ``N:hosts`` hash, written through at once.

    Synchronous, as the Gemini client consults it mid-handshake: a blocking client does it, one
    round trip per write and per host first asked for (then remembered: it is asked for on every
    request)."""

    def __init__(self, frontier: RedisFrontier) -> None:
        self._frontier = frontier
        self._key = f"{frontier.name}:hosts"
        self._read: dict[str, str] = {}

    def __getitem__(self, host: str) -> str:
        if host not in self._read:
            fingerprint = self._frontier._check(lambda: self._frontier._sync.hget(self._key, host))
            if fingerprint is None:
                raise KeyError(host)
            self._read[host] = str(fingerprint)
        return self._read[host]

    def __setitem__(self, host: str, fingerprint: str) -> None:
        self._frontier._check(lambda: self._frontier._sync.hset(self._key, host, fingerprint))
        self._read[host] = fingerprint

    def __delitem__(self, host: str) -> None:
        if not self._frontier._check(lambda: self._frontier._sync.hdel(self._key, host)):
            raise KeyError(host)
        self._read.pop(host, None)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._frontier._check(lambda: self._frontier._sync.hkeys(self._key))))

    def __len__(self) -> int:
        return int(self._frontier._check(lambda: self._frontier._sync.hlen(self._key)))


def _connect(url: str, timeout: float) -> tuple[str, bool, Any, Any]:
    """(where, for messages; a cluster?; an asyncio client; a blocking client) for ``url``, after
    a PING and a script run (a user refused scripts is told now, not on the first lease).

    Socket deadlines on every call and no retries: a script whose reply was lost may have been
    applied, so whether to call again is the caller's choice.  ``where`` has no password."""
    try:
        import redis
        import redis.asyncio
        import redis.asyncio.cluster
        import redis.asyncio.retry
        import redis.backoff
        import redis.cluster
        import redis.retry
    except ImportError:
        raise FrontierError("a Redis frontier needs redis-py: pip install 'manners[redis]'.") from None

    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss", "redis-cluster", "rediss-cluster") or not parts.hostname:
        raise FrontierError(
            "bad Redis frontier URL: use redis://host:port/db, rediss://... or redis-cluster://host:port."
        )
    try:
        port = parts.port or 6379
    except ValueError:
        raise FrontierError(f"bad Redis frontier URL for {parts.hostname}: its port is no number.") from None
    where = f"{parts.scheme}://{parts.hostname}:{port}"  # the password left out
    cluster = parts.scheme.endswith("-cluster")
    if cluster and parts.path.strip("/") not in ("", "0"):
        raise FrontierError(f"bad Redis frontier URL {where}: a Redis Cluster has database 0 only.")
    plain = parts._replace(scheme=parts.scheme.removesuffix("-cluster")).geturl()
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "decode_responses": True,
        "encoding_errors": "surrogateescape",  # URLs that were not UTF-8 keep their bytes
    }
    aio_client: Any = redis.asyncio.cluster.RedisCluster if cluster else redis.asyncio.Redis
    sync_client: Any = redis.cluster.RedisCluster if cluster else redis.Redis
    # A cluster client that met a few MOVED replies (even a fresh one, before it knows the slots)
    # closes every connection, the ones other calls are using included: it follows each one instead.
    moved: dict[str, Any] = {"reinitialize_steps": 0} if cluster else {}
    never = redis.backoff.NoBackoff()
    try:
        with _failures(where):
            sync = sync_client.from_url(plain, retry=redis.retry.Retry(never, 0), **options)
            sync.ping()  # a cluster client has found the cluster's nodes by now
            sha = sync.script_load(_PROBE)
            sync.evalsha(sha, 1, f"manners-probe:{secrets.token_hex(4)}")
    except ValueError as exc:
        raise FrontierError(f"bad Redis frontier URL {where}: {exc}.") from None
    except FrontierError as exc:
        if (
            parts.scheme.startswith("rediss")
            and not exc.lasting
            and _speaks_plain(parts.hostname, port, timeout)
        ):
            plainly = parts.scheme.replace("rediss", "redis", 1)
            raise FrontierError(
                f"Redis at {where} does not speak TLS (it answers plain Redis there): use {plainly}://"
                " or the server's TLS port"
            ) from None
        raise
    try:
        aio = aio_client.from_url(plain, retry=redis.asyncio.retry.Retry(never, 0), **moved, **options)
    except ValueError as exc:
        raise FrontierError(f"bad Redis frontier URL {where}: {exc}.") from None
    return where, cluster, aio, sync


# Run once at the start: a user refused EVALSHA or SCRIPT is told before the crawl begins.  It
# names a key (hashed to some slot), so a cluster runs it on one node; it changes nothing.
_PROBE = "return redis.call('EXISTS', KEYS[1])"


def _speaks_plain(host: str, port: int, timeout: float) -> bool:
    """Whether ``host:port`` answers a plain-text PING as Redis does (``+PONG``, or an error such as
    ``-NOAUTH``): a TLS client there waits for a handshake that never comes."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(b"PING\r\n")
            return conn.recv(1)[:1] in (b"+", b"-")
    except OSError:
        return False


def durability(url: str, timeout: float = 5.0) -> tuple[str, list[Finding]]:
    """Where (for messages) and what the settings of the Redis at ``url`` (every master of a
    cluster) say of keeping a crawl (``redis_settings.findings``): read by ``CONFIG GET``, or by
    ``INFO persistence`` and ``INFO memory`` where CONFIG is refused (an ACL, a renamed command).
    FrontierError when it cannot be reached."""
    where, cluster, aio, sync = _connect(url, timeout)
    del aio  # never connected: nothing to close
    try:
        if not cluster:
            return where, _judge(where, sync)
        masters = sync.get_primaries()
        found: dict[Finding, list[str]] = {}
        for node in masters:
            for finding in _judge(where, node.redis_connection):
                found.setdefault(finding, []).append(f"{node.host}:{node.port}")
        return where, [_on_nodes(f, names, len(masters)) for f, names in found.items()]
    finally:
        sync.close()


def _judge(where: str, client: Any) -> list[Finding]:
    """The findings of one server."""
    import redis.exceptions

    refused: list[str] = []
    with _failures(where):
        try:
            config = client.config_get(*NAMES)
            return findings({k: str(v) for k, v in config.items() if k in NAMES})
        except redis.exceptions.ResponseError as exc:  # refused (NOPERM), or renamed away
            refused.append(f"CONFIG GET is refused: {safe(str(exc).rstrip('.'))}")
        try:
            info = {**client.info("persistence"), **client.info("memory")}
        except redis.exceptions.ResponseError as exc:
            refused.append(f"INFO is refused: {safe(str(exc).rstrip('.'))}")
            info = {}
    return findings(from_info(info), "; ".join(refused))


def _on_nodes(finding: Finding, names: list[str], nodes: int) -> Finding:
    """A cluster's finding, naming the masters it holds for (all of them: none named)."""
    if len(names) == nodes:
        return finding
    return Finding(finding.setting, f"{finding.problem} (on {', '.join(names)})", finding.fix, finding.refuse)


def open_redis_frontier(url: str, name: str, max_queued: int | None = None) -> RedisFrontier:
    """The frontier of the crawl ``name`` on the Redis at ``url``: ``redis://host:port/db``,
    ``rediss://...`` (TLS) or ``redis-cluster://host:port`` (a Redis Cluster, named by any of its
    nodes; ``rediss-cluster://`` with TLS).  Raises FrontierError when it cannot be used."""
    return RedisFrontier(url, name, max_queued)


if TYPE_CHECKING:
    _conforms: type[Frontier] = RedisFrontier  # mypy checks the protocol is met
