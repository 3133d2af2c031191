-- Staff maintenance of a room: booking_flush_room and booking_stats_rebuild.

-- The first KEYS and ARGV of the two room-wide calls (what follows is listed in their comments).
local FLUSH_ROOM_KEYS = {'registry', 'ledger', 'holds', 'audit', 'hold_days', 'edition'}
local FLUSH_ROOM_ARGS = {'actor', 'reason', 'now_ms', 'audit_maxlen', 'n_inv', 'n_rec', 'room'}
local FLUSH_ROOM_REPLIES = {'ok removed cancelled', 'retry', 'invalid what'}
local FLUSH_ROOM_KEY_TAILS = {'inventories', 'records', 'stats'}
local STATS_REBUILD_KEYS = {'stats', 'registry', 'ledger', 'edition'}
local STATS_REBUILD_ARGS = {'n_inv', 'n_rec'}
local STATS_REBUILD_REPLIES = {'ok counted', 'retry', 'invalid what'}
local STATS_REBUILD_KEY_TAILS = {'inventories', 'records'}

-- Flush one room: delete exactly its registered inventory keys and cancel its confirmed
-- bookings. The caller passes what it read; if the room changed meanwhile, nothing happens.
-- KEYS: registry, ledger, holds, audit, hold days, edition, inventory keys (ARGV n_inv), record keys
--       (ARGV n_rec), stats
-- ARGV: actor, reason, now ms, audit maxlen, n_inv, n_rec, room
-- Returns {'ok', keys removed, bookings cancelled} | {'retry'}
local function flush_room(keys, args)
  local k, a = named(keys, FLUSH_ROOM_KEYS), named(args, FLUSH_ROOM_ARGS)
  local registry, ledger, holds, stream = k.registry, k.ledger, k.holds, k.audit
  local hold_days = k.hold_days
  local actor, reason, now, maxlen = a.actor, a.reason, tonumber(a.now_ms), a.audit_maxlen
  local n_inv, n_rec, room = tonumber(a.n_inv), tonumber(a.n_rec), a.room
  if redis.call('SCARD', registry) ~= n_inv or redis.call('SCARD', ledger) ~= n_rec then
    return {'retry'}
  end
  local first = #FLUSH_ROOM_KEYS + 1
  for i = first, first - 1 + n_inv do
    if redis.call('SISMEMBER', registry, keys[i]) == 0 then
      return {'retry'}
    end
  end
  local records = {}
  for i = first + n_inv, first - 1 + n_inv + n_rec do
    local id = redis.call('HGET', keys[i], 'id')
    if not id or redis.call('SISMEMBER', ledger, id) == 0 then
      return {'retry'}
    end
    records[#records + 1] = keys[i]
  end
  local stats = keys[first + n_inv + n_rec]
  if not stats or #keys ~= first + n_inv + n_rec then
    return {'invalid', 'call'}
  end

  edition_bump(k.edition)
  local cancelled, change = 0, stats_change()
  for _, record in ipairs(records) do
    local r = redis.call('HMGET', record, 'status', 'months', 'cls', 'days', 'made', 'inv')
    if r[1] == 'confirmed' then
      redis.call('HSET', record, 'status', 'cancelled', 'cancelled_at', now, 'cancelled_by',
        actor, 'cancel_reason', reason)
      local cal = record_months(r[6], r[2])
      stats_booking(change, cal, r[3], split_numbers(r[4]), 'confirmed', r[5], -1)
      stats_booking(change, cal, r[3], split_numbers(r[4]), 'cancelled', r[5], 1)
      cancelled = cancelled + 1
    end
  end
  stats_write(stats, change)
  for i = first, first - 1 + n_inv do
    redis.call('DEL', keys[i])
  end
  -- Every bitmap of the room is gone: so are its booked-slot counters.
  for _, field in ipairs(redis.call('HKEYS', stats)) do
    if string.sub(field, 1, 6) == 'slots:' then
      redis.call('HDEL', stats, field)
    end
  end
  redis.call('DEL', registry, holds, hold_days)
  if n_inv > 0 or cancelled > 0 then
    audit(stream, maxlen, 'flush', actor, '', room,
      reason .. ' (' .. n_inv .. ' keys, ' .. cancelled .. ' bookings)', now)
  end
  return {'ok', n_inv, cancelled}
end

-- Rebuild one room's stats from its records and bitmaps (existing data, a changed format).
-- The caller passes what it read; if the room changed meanwhile, nothing happens.
-- KEYS: stats, registry, ledger, edition, inventory keys (ARGV n_inv), record keys (ARGV n_rec)
-- ARGV: n_inv, n_rec, per inventory key: month, cls, bits per day; per record: the local
--       date of its creation (kept in the record as 'made' where it is missing)
-- Returns {'ok', records counted} | {'retry'} | {'invalid', 'call'}
local function stats_rebuild(keys, args)
  local k, a = named(keys, STATS_REBUILD_KEYS), named(args, STATS_REBUILD_ARGS)
  local stats, registry, ledger = k.stats, k.registry, k.ledger
  local n_inv, n_rec = tonumber(a.n_inv), tonumber(a.n_rec)
  local first = #STATS_REBUILD_KEYS -- the inventory keys follow the named ones
  if not n_inv or not n_rec or #keys ~= first + n_inv + n_rec
      or #args ~= 2 + 3 * n_inv + n_rec then
    return {'invalid', 'call'}
  end
  if redis.call('SCARD', registry) ~= n_inv or redis.call('SCARD', ledger) ~= n_rec then
    return {'retry'}
  end
  for i = first + 1, first + n_inv do
    if redis.call('SISMEMBER', registry, keys[i]) == 0 then
      return {'retry'}
    end
  end
  for i = first + 1 + n_inv, first + n_inv + n_rec do
    local id = redis.call('HGET', keys[i], 'id')
    if not id or redis.call('SISMEMBER', ledger, id) == 0 then
      return {'retry'}
    end
  end

  edition_bump(k.edition)
  redis.call('DEL', stats)
  local change = stats_change()
  for j = 1, n_rec do
    local record = keys[first + n_inv + j]
    redis.call('HSETNX', record, 'made', args[2 + 3 * n_inv + j])
    local r = redis.call('HMGET', record, 'months', 'cls', 'days', 'status', 'made', 'inv')
    stats_booking(change, record_months(r[6], r[1]), r[2], split_numbers(r[3]), r[4], r[5], 1)
  end
  for i = 1, n_inv do
    local inv, month, cls = keys[first + i], args[3 * i], args[3 * i + 1]
    local width = tonumber(args[3 * i + 2])
    local deltas = {}
    for day = 0, math.floor(redis.call('STRLEN', inv) * 8 / width) - 1 do
      local n = redis.call('BITCOUNT', inv, day * width, (day + 1) * width - 1, 'BIT')
      if n > 0 then
        deltas[day] = n
      end
    end
    bump_days(change, 'slots:' .. month .. ':' .. cls, deltas)
  end
  stats_write(stats, change)
  redis.call('HSET', stats, 'v', STATS_VERSION)
  return {'ok', n_rec}
end

redis.register_function{function_name = 'booking_flush_room', callback = flush_room}
redis.register_function{function_name = 'booking_stats_rebuild', callback = stats_rebuild}
