"""The Lua scripts of the Redis frontier: each change to a crawl, one atomic script on one shard.

Kept apart from ``redis_frontier`` (which calls them, merges their replies and orders the
calls) because they are a program of their own, in another language, whose ARGV layouts are
documented above each one: read together they show that every script that leases, settles,
claims, renews or counts checks the crawl's marker first, and that every act under a lease checks
its token in the same script (fencing).  ``visit_args`` is here for that reason: it lays a visit
out as ``SETTLE`` reads it.  The key layout is described in ``redis_frontier``'s docstring.
"""

from __future__ import annotations

from .leases import Visit

LOST = "manners-crawl-lost"  # the error a script raises when a crawl's marker or a record is gone

# Put before each per-shard script.  ARGV[1] is the shard's key prefix ``N:{N:k}:``; every key a
# script names is built from it, so it hashes to the slot of KEYS[1] (the shard's counts).
LIB = """
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
-- After a change to an authority's queue or park: when it is next ready, its turn, its queue's length.
local function refresh(a)
  local first = redis.call('ZRANGE', key('q', a), 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('ZREM', P .. 'due', a)
    redis.call('ZREM', P .. 'turn', a)
    redis.call('ZREM', P .. 'size', a)
    return
  end
  local info = redis.call('HMGET', key('a', a), 'parked', 'turn')
  redis.call('ZADD', P .. 'due', score(math.max(tonumber(first[2]), tonumber(info[1] or 0))), a)
  redis.call('ZADD', P .. 'turn', info[2] or 0, a)
  redis.call('ZADD', P .. 'size', redis.call('ZCARD', key('q', a)), a)
end
-- An authority's start stamped at ``start`` unless it is later (a start never moves back), and its
-- next slot ``spacing`` after it unless booked later: what ends a hold, and a 44's wait.
local function stamp_start(a, now, spacing, start)
  start = math.max(start, tonumber(redis.call('GET', key('start', a)) or '0'))
  local live = math.ceil(math.max(spacing, start - now + spacing) * 1000) + 60000
  redis.call('SET', key('start', a), string.format('%.6f', start), 'PX', live)
  local next_at = math.max(start + spacing, tonumber(redis.call('GET', key('slot', a)) or '0'))
  local keep = math.ceil((next_at - now) * 1000) + 60000
  redis.call('SET', key('slot', a), string.format('%.6f', next_at), 'PX', keep)
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

ADD = "return add_urls(2)"

# ARGV: prefix, authority, owner, ttl, now (crawler's clock), token.  Returns the lease's fields,
# then how many URLs of the authority are still queued (the lease's rank, ``inflight.Gate``).
LEASE = """
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
return {url, r[2], r[3], r[7], r[4], ARGV[6], r[9], exact(r[10]), r[11], exact(r[12]), r[13],
  redis.call('ZCARD', key('q', a))}
"""

# ARGV: prefix, authority, url, outcome, page (0/1), the JSON of its links for the outbox ('' for
# none), a revisiting crawl's visit (number, 0 for none; due, interval, digest, capture_at, '' for
# none; misses; changed, '' for none, else 0/1), the lease's token ('' for none), a repeat (1: the
# call before lost its reply), then add_urls' arguments for the links of this shard.  Returns
# {queue the outbox's links (1: settled now; 0: settled before, and 1 if its outbox entry waits
# still), the links' codes, 1 settled now, 0 before, -1 refused}.  Given a token, it settles
# only while that lease is held: a stale one (the lease expired and was taken back) changes
# nothing; a repeat finds its own settling done (or the URL queued for its next visit).
SETTLE = """
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
RETRY = """
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
RECLAIM = """
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
RENEW = """
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

# ARGV: prefix, authority, spacing, url, token, ttl, hold token, hold ttl.  ``claim`` under a
# lease (url '' for none): the slot is granted only while ``url`` is in flight under ``token``,
# and the lease is extended to ``ttl`` seconds from now in the same step, so the request leaves
# with its lease held.  With a hold token (else ''), granted only while no other token holds the
# authority (``hold:AUTH``, expiring on its own), and the hold is taken in the same step.
# Returns 0 when claimed, the seconds left (while another holds it: the spacing, or what is left
# of its hold if less, HOLD_POLL = 10 ms at least), or -1 when the lease is not held.
CLAIM_HELD = """
alive()
if ARGV[4] ~= '' and not holds(ARGV[4], ARGV[5]) then return '-1' end
local now = clock()
local k, spacing = key('start', ARGV[2]), tonumber(ARGV[3])
if ARGV[7] ~= '' then
  local other = redis.call('GET', key('hold', ARGV[2]))
  if other and other ~= ARGV[7] then
    local rest = redis.call('PTTL', key('hold', ARGV[2])) / 1000
    return string.format('%.6f', math.max(math.min(spacing, rest), 0.01))
  end
end
local left = tonumber(redis.call('GET', k) or '0') + spacing - now
if left > 0 then return string.format('%.6f', left) end
redis.call('SET', k, string.format('%.6f', now), 'PX', math.ceil(spacing * 1000) + 60000)
if ARGV[4] ~= '' then redis.call('ZADD', P .. 'leases', 'XX', score(now + tonumber(ARGV[6])), ARGV[4]) end
if ARGV[7] ~= '' then
  redis.call('SET', key('hold', ARGV[2]), ARGV[7], 'PX', math.max(1, math.ceil(tonumber(ARGV[8]) * 1000)))
end
return '0'
"""

# ARGV: prefix, authority, token, ttl, stamp.  Extends the hold ``token`` has on the authority to
# ``ttl`` seconds from now, and with a stamp ('1', else '') stamps its start now as ``CLAIM`` with a
# spacing of 0 does: 1, or 0 when it does not hold it (nothing changed).
RENEW_HOLD = """
alive()
if redis.call('GET', key('hold', ARGV[2])) ~= ARGV[3] then return 0 end
redis.call('PEXPIRE', key('hold', ARGV[2]), math.max(1, math.ceil(tonumber(ARGV[4]) * 1000)))
if ARGV[5] == '1' then
  redis.call('SET', key('start', ARGV[2]), string.format('%.6f', clock()), 'PX', 60000)
end
return 1
"""

# ARGV: prefix, authority, token, spacing, ago, pause.  Ends the hold ``token`` has on the
# authority, its request over, and stamps the authority's start ``ago`` seconds before now (when
# the request left, as its worker measured), or ``pause`` seconds from now less the spacing if
# later (a 44's wait: no claim before it), and its next slot ``spacing`` after that start (as
# ``BOOK`` writes it), on the server's clock: 1, or 0 when ``token`` does not hold it.
RELEASE_HOLD = """
alive()
local a = ARGV[2]
if redis.call('GET', key('hold', a)) ~= ARGV[3] then return 0 end
redis.call('DEL', key('hold', a))
local now, spacing, pause = clock(), tonumber(ARGV[4]), tonumber(ARGV[6] or '0')
stamp_start(a, now, spacing, math.max(now - tonumber(ARGV[5] or '0'), now + pause - spacing))
return 1
"""

# ARGV: prefix, authority, spacing, pause.  A 44's wait, whoever holds the authority: its start put
# ``pause`` seconds from now less the spacing, and its next slot after it, as ``RELEASE_HOLD`` puts
# them: no claim succeeds, nor is a slot booked, before the wait is over.  Returns 1.
SLOW = """
alive()
local now, spacing, pause = clock(), tonumber(ARGV[3]), tonumber(ARGV[4])
stamp_start(ARGV[2], now, spacing, now + pause - spacing)
return 1
"""

# ARGV: prefix, authority, outcome, HSCAN cursor.  Requeues a batch; returns {cursor, how many}.
REQUEUE = """
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
REVISIT_SETTLED = """
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
REVISITS = """
alive()
local later = redis.call('ZRANGEBYSCORE', P .. 'revisit', '(' .. ARGV[2], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
return {redis.call('ZCOUNT', P .. 'revisit', '-inf', ARGV[2]), later[2] or false}
"""

# ARGV: prefix, authority, until, reason, now.
PARK = """
alive()
local a = ARGV[2]
redis.call('HSET', key('a', a), 'parked', ARGV[3], 'reason', ARGV[4])
redis.call('ZADD', P .. 'parked', ARGV[3], a)
redis.call('ZREMRANGEBYSCORE', P .. 'parked', '-inf', ARGV[5])
redis.call('SADD', P .. 'auths', a)
refresh(a)
"""

# ARGV: prefix, now.  Returns authority, until, reason of each park not over.
PARKED = """
local out = {}
local parked = redis.call('ZRANGEBYSCORE', P .. 'parked', '(' .. ARGV[2], '+inf', 'WITHSCORES')
for i = 1, #parked, 2 do
  out[#out + 1] = parked[i]
  out[#out + 1] = parked[i + 1]
  out[#out + 1] = redis.call('HGET', key('a', parked[i]), 'reason') or ''
end
return out
"""

# ARGV: prefix, now, bottom, top, want.  The first ``want`` authorities ready at ``now`` in turn
# order, with their turns and how many URLs each has queued (the caller starts the biggest
# first): a walk over ``turn`` from ``bottom`` to ``top`` ('-inf' to 0: those none of whose URLs
# was ever leased; '(0' to '+inf': the others; '-inf' to '+inf': all) that skips those not due
# yet, as SQLite walks its index.
READY = """
alive()
local now, bottom, top, want = tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local out, start, step = {}, 0, want
while #out < 3 * want do
  local chunk = redis.call('ZRANGEBYSCORE', P .. 'turn', bottom, top, 'WITHSCORES', 'LIMIT', start, step)
  if #chunk == 0 then break end
  for i = 1, #chunk, 2 do
    local due = redis.call('ZSCORE', P .. 'due', chunk[i])
    if due and tonumber(due) <= now and #out < 3 * want then
      out[#out + 1] = chunk[i]
      out[#out + 1] = chunk[i + 1]
      out[#out + 1] = redis.call('ZCARD', key('q', chunk[i]))
    end
  end
  start, step = start + step, step * 2
end
return out
"""

# ARGV: prefix, n.  The shard's n authorities with the most URLs queued, most first, and how many:
# authority, n, authority, n...  ``size`` has the members of ``turn`` (both kept by ``refresh``);
# a crawl made before ``size`` existed has it built here once, from ``turn``, in one script.
BUSIEST = """
alive()
local size, turn = P .. 'size', P .. 'turn'
if redis.call('ZCARD', size) ~= redis.call('ZCARD', turn) then
  redis.call('DEL', size)
  local start = 0
  while true do
    local chunk = redis.call('ZRANGE', turn, start, start + 999)
    if #chunk == 0 then break end
    for _, a in ipairs(chunk) do redis.call('ZADD', size, redis.call('ZCARD', key('q', a)), a) end
    start = start + 1000
  end
end
return redis.call('ZREVRANGE', size, 0, tonumber(ARGV[2]) - 1, 'WITHSCORES')
"""

# ARGV: prefix.  The shard's counters, as HGETALL gives them.
COUNTS = "alive() return redis.call('HGETALL', P .. 'counts')"
# ARGV: prefix.  The shard's outbox, as HGETALL gives it.
OUTBOX = "return redis.call('HGETALL', P .. 'outbox')"
# ARGV: prefix, n.  The first n + 1 authorities due, with when.
DUE = "alive() return redis.call('ZRANGE', P .. 'due', 0, ARGV[2], 'WITHSCORES')"

# ARGV: prefix.  The shard's lease expiring first: url, owner, seconds until it expires.
OLDEST = """
local first = redis.call('ZRANGE', P .. 'leases', 0, 0, 'WITHSCORES')
if #first == 0 then return false end
local _, owner = cmsgpack.unpack(redis.call('HGET', P .. 'held', first[1]))
return {first[1], owner, score(tonumber(first[2]) - clock())}
"""

# ARGV: prefix, latest, then authority, url pairs (revisits due after ``latest``, as ``revisit``
# listed them).  Each still queued and due later is due at ``latest``; any other leaves ``revisit``
# or is scored anew (an index that drifted), so a caller listing again finds each URL at most once.
# Returns how many moved.
CAP_DUE = """
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
HELD = """
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
HEARTBEAT = """
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


def visit_args(visit: Visit | None) -> list[object]:
    """A visit as ``SETTLE`` takes it (7 arguments, the lease's token apart; number 0 for none)."""
    if visit is None:
        return [0, "", "", "", "", 0, ""]

    def opt(x: float | None) -> str:
        return "" if x is None else repr(x)

    changed = "" if visit.changed is None else str(int(visit.changed))
    return [visit.number, opt(visit.due), opt(visit.interval), visit.digest or "", opt(visit.capture_at),
            visit.misses, changed]  # fmt: skip
