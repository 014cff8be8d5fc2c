package redislease

import "github.com/redis/go-redis/v9"

// The scripts declare every key they touch in KEYS, as Redis Cluster
// requires, and read the time with TIME: since Redis 5 a script's writes
// are replicated as effects, so replicas store the primary's values rather
// than reading their own clocks.
//
// Each returns a table of strings whose first element is the outcome. Every
// number leaves as a string: a Lua number is a double, exact only below
// 2^53, and last_timestamp_ms is any int64 the holder reports. For the same
// reason last_timestamp_ms is never converted to a number in Lua at all;
// greater compares the decimal strings.

// luaPrelude is shared by the lease scripts.
const luaPrelude = `
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- greater reports a > b for canonical decimal integers, byte by byte (string
-- comparison in Lua follows the server's locale).
local function greater(a, b)
  local na, nb = string.byte(a, 1) == 45, string.byte(b, 1) == 45
  if na ~= nb then return nb end
  if #a ~= #b then return (#a > #b) ~= na end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return (x > y) ~= na end
  end
  return false
end

local function fmt(n) return string.format('%d', n) end
`

// acquireScript grants the preferred free worker ID of the cluster.
// KEYS: lease hash. ARGV: max worker ID, token, holder, TTL ms, the caller's
// now in ms. Returns {"ok", id, expiry ms, last_timestamp_ms, no history
// "1" or "0"} or {"none"}. No history: the hash had no last timestamp of
// that ID (never leased, or Redis forgot it, or that field alone).
//
// It reads the whole hash rather than probing each ID up to the maximum:
// the hash holds only IDs ever leased, so a cluster with a large worker ID
// space and few holders costs little.
var acquireScript = redis.NewScript(luaPrelude + `
local key, maxid, token, holder, ttl, callerNow =
  KEYS[1], tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local now = clock()

local rows = {}
local flat = redis.call('HGETALL', key)
for i = 1, #flat, 2 do
  local id, f = string.match(flat[i], '^(%d+):(%a)$')
  id = tonumber(id)
  if id and id <= maxid then
    rows[id] = rows[id] or {}
    rows[id][f] = flat[i + 1]
  end
end

-- Free: never leased, released, or expired. Preferred among the free: no
-- holder reserved timestamps beyond the caller's clock, so it can start at
-- once; then the lowest ID.
local best, fallback
for id, r in pairs(rows) do
  if not r.t or r.t == '' or tonumber(r.e or '0') <= now then
    if not greater(r.l or '0', callerNow) then
      if not best or id < best then best = id end
    elseif not fallback or id < fallback then
      fallback = id
    end
  end
end
local unused = 0
while rows[unused] do unused = unused + 1 end
if unused <= maxid and (not best or unused < best) then best = unused end
best = best or fallback
if not best then return {'none'} end

local id, exp = fmt(best), fmt(now + ttl)
local last = (rows[best] and rows[best].l) or '0'
local fresh = (rows[best] and rows[best].l) and '0' or '1'
redis.call('HSET', key, id .. ':t', token, id .. ':h', holder, id .. ':e', exp, id .. ':l', last)
return {'ok', id, exp, last, fresh}
`)

// holdScript renews or releases a lease by compare-and-set on its token.
// KEYS: lease hash. ARGV: worker ID, token, reported last_timestamp_ms, TTL
// ms ("" to release). Returns {"ok", expiry ms, last_timestamp_ms, holder},
// {"not_assigned"}, {"token_mismatch"} or {"expired"}.
//
// A refusal because this token's own lease expired still raises
// last_timestamp_ms: the late holder may have issued IDs up to it, and the
// next holder must start after them.
var holdScript = redis.NewScript(luaPrelude + `
local key, id, token, reported, ttl = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local r = redis.call('HMGET', key, id .. ':t', id .. ':h', id .. ':e', id .. ':l')
if not r[1] or r[1] == '' then return {'not_assigned'} end
if r[1] ~= token then return {'token_mismatch'} end

local now, last = clock(), r[4] or '0'
if greater(reported, last) then last = reported end
if tonumber(r[3] or '0') <= now then
  redis.call('HSET', key, id .. ':l', last)
  return {'expired'}
end
if ttl == '' then
  redis.call('HSET', key, id .. ':t', '', id .. ':e', fmt(now), id .. ':l', last)
  return {'ok'}
end
local exp = fmt(now + tonumber(ttl))
redis.call('HSET', key, id .. ':e', exp, id .. ':l', last)
return {'ok', exp, last, r[2] or ''}
`)

// layoutScript records the cluster's layout unless one is recorded, and
// returns the recorded one. KEYS: layout hash. ARGV: epoch ms, worker bits.
// Returns {epoch ms, worker bits}.
var layoutScript = redis.NewScript(`
local have = redis.call('HMGET', KEYS[1], 'epoch_ms', 'worker_bits')
if have[1] and have[2] then return have end
redis.call('HSET', KEYS[1], 'epoch_ms', ARGV[1], 'worker_bits', ARGV[2])
return {ARGV[1], ARGV[2]}
`)
