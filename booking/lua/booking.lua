#!lua name=booking

-- The treasure inventory. Every function receives all its keys in KEYS[] (one room's hash tag),
-- checks everything before its first write, and recognises its own earlier success by the
-- client-made id, because redis-py may send a call twice.
--
-- Slots live in one bitmap per (room, class, season), read and written as BITFIELD fields:
--   class A: field u1  at bit day                          (mask 1)
--   class B: field u24 at bit day*24                       (hour h is bit day*24 + h)
--   class C: field u24 at bit (day*100 + box - 1)*24       (hour h is that + h)
-- A u24 field is big-endian, so hour h is value bit 2^(23-h).
--
-- A request travels as: cls, days "3,4", hour start, hour end, boxes "1,2" (empty for A/B).

local FULL = 16777215 -- 2^24 - 1

-- Call specs: the names of each function's KEYS and ARGV, in order (a function reads its call
-- through `named`). booking/calls.py declares the very same lists for the Python side, and
-- tests/test_booking_calls.py checks that the two agree.
local CLAIM_KEYS = {'inventory', 'registry', 'record', 'ledger', 'codes', 'holds', 'audit',
  'stats'}
local CLAIM_ARGS = {'owner', 'cls', 'season', 'days', 'hstart', 'hend', 'boxes', 'booking_id',
  'now_ms', 'code_mac', 'code_sealed', 'dates', 'hold_id', 'audit_maxlen', 'room',
  'season_bytes', 'season_days', 'made'}
local HOLD_KEYS = {'inventory', 'holds', 'audit'}
local HOLD_ARGS = {'owner', 'cls', 'days', 'hstart', 'hend', 'boxes', 'hold_id', 'now_ms',
  'ttl_ms', 'audit_maxlen', 'room', 'season_days'}
local HOLD_RELEASE_KEYS = {'holds'}
local HOLD_RELEASE_ARGS = {'hold_id', 'owner'}
local CANCEL_KEYS = {'record', 'inventory', 'registry', 'audit', 'stats'}
local CANCEL_ARGS = {'actor', 'is_staff', 'today', 'reason', 'now_ms', 'audit_maxlen',
  'request_id'}
local PICKUP_KEYS = {'lock', 'failures', 'codes', 'record', 'audit', 'stats'}
local PICKUP_ARGS = {'code_mac', 'booking_id', 'now_ms', 'today', 'minute', 'grace_minutes',
  'max_failures', 'window_ms', 'lock_ms', 'attempt_id', 'audit_maxlen', 'room', 'yesterday'}
-- The first KEYS and ARGV of the two room-wide calls (what follows is listed in their comments).
local FLUSH_ROOM_KEYS = {'registry', 'ledger', 'holds', 'audit'}
local FLUSH_ROOM_ARGS = {'actor', 'reason', 'now_ms', 'audit_maxlen', 'n_inv', 'n_rec', 'room'}
local STATS_REBUILD_KEYS = {'stats', 'registry', 'ledger'}
local STATS_REBUILD_ARGS = {'n_inv', 'n_rec'}
-- A hold's value in the room's holds hash: these fields joined by '|'.
local HOLD_FIELDS = {'expiry', 'owner', 'cls', 'days', 'hstart', 'hend', 'boxes'}

-- A list's items by the names of `names` (same order): named({'a', 'b'}, {'x', 'y'}).x == 'a'.
local function named(values, names)
  local out = {}
  for i, name in ipairs(names) do
    out[name] = values[i]
  end
  return out
end

local function split(text)
  local out = {}
  if text == nil or text == '' then
    return out
  end
  for part in string.gmatch(text, '[^,]+') do
    out[#out + 1] = part
  end
  return out
end

local function split_numbers(text)
  local out = {}
  for i, part in ipairs(split(text)) do
    out[i] = tonumber(part)
  end
  return out
end

local function hour_mask(first, last)
  local mask = 0
  for hour = first, last - 1 do
    mask = mask + 2 ^ (23 - hour)
  end
  return mask
end

-- The fields a request covers: a list of {offset, mask, day, box} and the BITFIELD type.
local function fields_of(cls, days, hstart, hend, boxes)
  local fields = {}
  if cls == 'A' then
    for _, day in ipairs(days) do
      fields[#fields + 1] = {day, 1, day, 0}
    end
    return fields, 'u1'
  end
  local mask = hour_mask(hstart, hend)
  if cls == 'B' then
    for _, day in ipairs(days) do
      fields[#fields + 1] = {day * 24, mask, day, 0}
    end
  else
    for _, day in ipairs(days) do
      for _, box in ipairs(boxes) do
        fields[#fields + 1] = {(day * 100 + box - 1) * 24, mask, day, box}
      end
    end
  end
  return fields, 'u24'
end

-- Current values of the fields, one BITFIELD_RO call per 1000 fields.
local function read_fields(key, fields, kind)
  local values = {}
  local batch = 1000
  for first = 1, #fields, batch do
    local args = {}
    for i = first, math.min(first + batch - 1, #fields) do
      args[#args + 1] = 'GET'
      args[#args + 1] = kind
      args[#args + 1] = fields[i][1]
    end
    local got = redis.call('BITFIELD_RO', key, unpack(args))
    for i, value in ipairs(got) do
      values[first + i - 1] = value
    end
  end
  return values
end

local function write_fields(key, fields, kind, values)
  local batch = 1000
  for first = 1, #fields, batch do
    local args = {}
    for i = first, math.min(first + batch - 1, #fields) do
      args[#args + 1] = 'SET'
      args[#args + 1] = kind
      args[#args + 1] = fields[i][1]
      args[#args + 1] = values[i]
    end
    redis.call('BITFIELD', key, unpack(args))
  end
end

-- The request of a call, checked whole before anything is read or written: a class other than
-- A/B/C, a day outside the season, a duplicate, an hour range outside 0..24, a box outside
-- 1..100 (or any box on A/B, any hour on A) is refused. Python validates first; this guards the
-- bitmap against every other caller, because a stray offset would silently grow or corrupt it.
-- Returns cls, days, hstart, hend, boxes or nil, reason.
local function integers(text, low, high, limit)
  local out, seen = {}, {}
  for _, part in ipairs(split(text)) do
    local n = tonumber(part)
    if not n or n ~= math.floor(n) or n < low or n > high or seen[n] or #out >= limit then
      return nil
    end
    seen[n] = true
    out[#out + 1] = n
  end
  return out
end

local function checked_request(cls, days_text, hstart_text, hend_text, boxes_text, season_days)
  local n_days = tonumber(season_days)
  if cls ~= 'A' and cls ~= 'B' and cls ~= 'C' then
    return nil, 'class'
  end
  if not n_days or n_days < 1 then
    return nil, 'season'
  end
  local days = integers(days_text, 0, n_days - 1, n_days)
  if not days or #days == 0 then
    return nil, 'days'
  end
  local hstart, hend = tonumber(hstart_text), tonumber(hend_text)
  if cls == 'A' then
    if hstart ~= 0 or hend ~= 0 then
      return nil, 'hours'
    end
  elseif not hstart or not hend or hstart ~= math.floor(hstart) or hend ~= math.floor(hend)
      or hstart < 0 or hstart >= hend or hend > 24 then
    return nil, 'hours'
  end
  local boxes = integers(boxes_text, 1, 100, 100)
  if not boxes or (cls == 'C') ~= (#boxes > 0) then
    return nil, 'boxes'
  end
  return cls, days, hstart, hend, boxes
end

-- A hold's value: "expiry ms|owner|cls|days|hstart|hend|boxes".
local function parse_hold(value)
  local parts = {}
  for part in string.gmatch(value .. '|', '([^|]*)|') do
    parts[#parts + 1] = part
  end
  local p = named(parts, HOLD_FIELDS)
  return {
    expiry = tonumber(p.expiry), owner = p.owner, cls = p.cls, days = split_numbers(p.days),
    hstart = tonumber(p.hstart) or 0, hend = tonumber(p.hend) or 0,
    boxes = split_numbers(p.boxes),
  }
end

local function as_set(list)
  local set = {}
  for _, item in ipairs(list) do
    set[item] = true
  end
  return set
end

-- Slots of other buyers' unexpired holds that overlap the request: "day:box:mask:1" entries.
-- Also returns the ids of expired holds (to drop on a successful write).
local function held_conflicts(holds_key, owner, cls, days, hstart, hend, boxes, now)
  local conflicts, expired = {}, {}
  local flat = redis.call('HGETALL', holds_key)
  local my_days, my_boxes = as_set(days), as_set(boxes)
  for i = 1, #flat, 2 do
    local id, hold = flat[i], parse_hold(flat[i + 1])
    if hold.expiry <= now then
      expired[#expired + 1] = id
    elseif hold.owner ~= owner and hold.cls == cls then
      local mask = 1
      if cls ~= 'A' then
        local first, last = math.max(hstart, hold.hstart), math.min(hend, hold.hend)
        mask = first < last and hour_mask(first, last) or 0
      end
      if mask ~= 0 then
        for _, day in ipairs(hold.days) do
          if my_days[day] then
            if cls == 'C' then
              for _, box in ipairs(hold.boxes) do
                if my_boxes[box] then
                  conflicts[#conflicts + 1] = day .. ':' .. box .. ':' .. mask .. ':1'
                end
              end
            else
              conflicts[#conflicts + 1] = day .. ':0:' .. mask .. ':1'
            end
          end
        end
      end
    end
  end
  return conflicts, expired
end

-- Booked slots that overlap the request: "day:box:mask:0" entries, plus the current values.
local function booked_conflicts(inv_key, fields, kind)
  local values = read_fields(inv_key, fields, kind)
  local conflicts = {}
  for i, field in ipairs(fields) do
    local overlap = bit.band(values[i], field[2])
    if overlap ~= 0 then
      conflicts[#conflicts + 1] = field[3] .. ':' .. field[4] .. ':' .. overlap .. ':0'
    end
  end
  return conflicts, values
end

local function audit(stream, maxlen, kind, actor, booking, room, detail, now)
  redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'kind', kind, 'actor', actor,
    'booking', booking, 'room', room, 'detail', detail, 'at', now)
end

local function append(list, more)
  for _, item in ipairs(more) do
    list[#list + 1] = item
  end
  return list
end

-- The room's stats hash (same tag as its slots, so counted in the same atomic call):
--   v                          STATS_VERSION once the hash is exact (a claim into an empty
--                              room, or booking_stats_rebuild)
--   slots:<season>:<cls>       booked bits per season day (7 digits a day, day 0 first)
--   active:<season>:<cls>      confirmed + collected bookings per season day, same shape
--   status:<season>:<cls>:<st> bookings of status st (confirmed, collected, cancelled)
--   made:<season>:<cls>:<date> confirmed + collected bookings created on that local date
-- A zero counter is removed, so the hash holds only what exists.
local STATS_VERSION = '1'

local function popcount(value)
  local n = 0
  while value ~= 0 do
    n = n + bit.band(value, 1)
    value = bit.rshift(value, 1)
  end
  return n
end

local function bump(stats, field, n)
  if n ~= 0 and redis.call('HINCRBY', stats, field, n) == 0 then
    redis.call('HDEL', stats, field)
  end
end

-- A per-day field is one 7-digit decimal number per season day, day 0 first ("0000003" +
-- "0000012" + ...): a reader adds the fields of 300 rooms as 300 big integers (no carry
-- crosses a day while a day's sum stays below 10^7) and cuts the sum into days.
local DAY_WIDTH = 7

-- Add deltas ({day -> n}, days listed in `order`) to a per-day field.
local function bump_days(stats, field, order, deltas)
  local text = redis.call('HGET', stats, field) or ''
  local values = {}
  for d = 1, math.floor(#text / DAY_WIDTH) do
    values[d] = tonumber(string.sub(text, (d - 1) * DAY_WIDTH + 1, d * DAY_WIDTH))
  end
  for _, day in ipairs(order) do
    for d = #values + 1, day + 1 do
      values[d] = 0
    end
    values[day + 1] = values[day + 1] + deltas[day]
  end
  -- Canonical: no trailing zero days (a rebuild writes the same text as the live counting).
  while #values > 0 and values[#values] == 0 do
    values[#values] = nil
  end
  for d, n in ipairs(values) do
    values[d] = string.format('%07d', n)
  end
  if #values > 0 then
    redis.call('HSET', stats, field, table.concat(values))
  else
    redis.call('HDEL', stats, field)
  end
end

-- What one booking adds (sign 1) or takes away (sign -1): its status, and while it is active
-- (not cancelled) one per booked day and one on its creation date.
local function stats_booking(stats, season, cls, days, status, made, sign)
  bump(stats, 'status:' .. season .. ':' .. cls .. ':' .. status, sign)
  if status == 'cancelled' then
    return
  end
  local deltas = {}
  for _, day in ipairs(days) do
    deltas[day] = sign
  end
  bump_days(stats, 'active:' .. season .. ':' .. cls, days, deltas)
  if made and made ~= '' then
    bump(stats, 'made:' .. season .. ':' .. cls .. ':' .. made, sign)
  end
end

-- The bits a write changed, per day: after - before, summed over the fields of each day.
local function stats_slots(stats, season, cls, fields, before, after)
  local order, deltas = {}, {}
  for i, field in ipairs(fields) do
    local day = field[3]
    if deltas[day] == nil then
      order[#order + 1] = day
      deltas[day] = 0
    end
    deltas[day] = deltas[day] + popcount(after[i]) - popcount(before[i])
  end
  bump_days(stats, 'slots:' .. season .. ':' .. cls, order, deltas)
end

-- Claim: take every slot of the request, or nothing.
-- KEYS: inventory, registry, record, ledger, codes, holds, audit, stats
-- ARGV: owner, cls, season, days, hstart, hend, boxes, booking id, now ms, code mac,
--       sealed code, dates (ISO csv), hold id ('' for none), audit maxlen, room,
--       bitmap bytes of a whole season (a new bitmap is made at its full size at once: an exact
--       allocation, where growing bit by bit would over-allocate), days in the season,
--       the local date of now (the stats' creation date)
-- Returns {'ok', <record as flat hash>} | {'taken', 'day:box:mask:held', ...}
--       | {'id_in_use'} | {'code_clash'} | {'invalid', what}
local function claim(keys, args)
  local k, a = named(keys, CLAIM_KEYS), named(args, CLAIM_ARGS)
  local inv, registry, record, ledger, codes, holds, stream, stats =
    k.inventory, k.registry, k.record, k.ledger, k.codes, k.holds, k.audit, k.stats
  local owner, season, id, now = a.owner, a.season, a.booking_id, tonumber(a.now_ms)
  local mac, sealed, dates, hold_id, maxlen, room =
    a.code_mac, a.code_sealed, a.dates, a.hold_id, a.audit_maxlen, a.room
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.days, a.hstart, a.hend,
    a.boxes, a.season_days)
  if not cls then
    return {'invalid', days}
  end
  local made = a.made
  if owner == '' or id == '' or not now or not tonumber(a.season_bytes) or not stats
      or not made or made == '' or #split(dates) ~= #days then
    return {'invalid', 'call'}
  end

  if redis.call('EXISTS', record) == 1 then
    if redis.call('HGET', record, 'owner') == owner then
      return {'ok', redis.call('HGETALL', record)}
    end
    return {'id_in_use'}
  end
  if redis.call('HEXISTS', codes, mac) == 1 then
    return {'code_clash'}
  end
  local fields, kind = fields_of(cls, days, hstart, hend, boxes)
  local taken, values = booked_conflicts(inv, fields, kind)
  local held, expired = held_conflicts(holds, owner, cls, days, hstart, hend, boxes, now)
  append(taken, held)
  if #taken > 0 then
    return {'taken', unpack(taken)}
  end

  local updated = {}
  for i, field in ipairs(fields) do
    updated[i] = bit.bor(values[i], field[2])
  end
  if redis.call('EXISTS', inv) == 0 then
    -- SETRANGE on a missing key allocates exactly, and the AOF gets a short command.
    redis.call('SETRANGE', inv, tonumber(a.season_bytes) - 1, '\0')
  end
  write_fields(inv, fields, kind, updated)
  redis.call('SADD', registry, inv)
  redis.call('HSET', record, 'id', id, 'owner', owner, 'cls', cls, 'room', room,
    'season', season, 'days', a.days, 'dates', dates, 'hstart', hstart, 'hend', hend,
    'boxes', a.boxes, 'created', now, 'status', 'confirmed', 'code_mac', mac,
    'code_sealed', sealed, 'collected', '', 'inv', inv, 'made', made)
  if redis.call('SCARD', ledger) == 0 and redis.call('HEXISTS', stats, 'v') == 0 then
    -- The room's first booking: its stats start exact from here.
    redis.call('DEL', stats)
    redis.call('HSET', stats, 'v', STATS_VERSION)
  end
  stats_slots(stats, season, cls, fields, values, updated)
  stats_booking(stats, season, cls, days, 'confirmed', made, 1)
  redis.call('SADD', ledger, id)
  redis.call('HSET', codes, mac, id)
  if hold_id ~= '' then
    local value = redis.call('HGET', holds, hold_id)
    if value and parse_hold(value).owner == owner then
      expired[#expired + 1] = hold_id
    end
  end
  if #expired > 0 then
    redis.call('HDEL', holds, unpack(expired))
  end
  audit(stream, maxlen, 'claim', owner, id, room, cls .. ' ' .. dates, now)
  return {'ok', redis.call('HGETALL', record)}
end

-- Hold: keep the request's slots for one buyer until expiry (other buyers see them taken).
-- KEYS: inventory, holds, audit
-- ARGV: owner, cls, days, hstart, hend, boxes, hold id, now ms, ttl ms, audit maxlen, room,
--       days in the season
-- Returns {'ok', expiry ms} | {'taken', ...} | {'id_in_use'} | {'invalid', what}
local function hold(keys, args)
  local k, a = named(keys, HOLD_KEYS), named(args, HOLD_ARGS)
  local inv, holds, stream = k.inventory, k.holds, k.audit
  local owner, id, now, ttl = a.owner, a.hold_id, tonumber(a.now_ms), tonumber(a.ttl_ms)
  local maxlen, room = a.audit_maxlen, a.room
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.days, a.hstart, a.hend,
    a.boxes, a.season_days)
  if not cls then
    return {'invalid', days}
  end
  if owner == '' or id == '' or not now or not ttl or ttl < 1 then
    return {'invalid', 'call'}
  end

  local existing = redis.call('HGET', holds, id)
  if existing then
    local old = parse_hold(existing)
    if old.owner ~= owner then
      return {'id_in_use'}
    end
    if old.expiry > now then
      return {'ok', tostring(old.expiry)}
    end
  end
  local fields, kind = fields_of(cls, days, hstart, hend, boxes)
  local taken = booked_conflicts(inv, fields, kind)
  local held, expired = held_conflicts(holds, owner, cls, days, hstart, hend, boxes, now)
  append(taken, held)
  if #taken > 0 then
    return {'taken', unpack(taken)}
  end

  if #expired > 0 then
    redis.call('HDEL', holds, unpack(expired))
  end
  local expiry = now + ttl
  local stored = {expiry = expiry, owner = owner, cls = cls, days = a.days, hstart = hstart,
    hend = hend, boxes = a.boxes}
  local parts = {}
  for i, name in ipairs(HOLD_FIELDS) do
    parts[i] = stored[name]
  end
  local value = table.concat(parts, '|')
  redis.call('HSET', holds, id, value)
  if redis.call('PTTL', holds) < ttl then
    redis.call('PEXPIRE', holds, ttl)
  end
  audit(stream, maxlen, 'hold', owner, id, room, cls, now)
  return {'ok', tostring(expiry)}
end

-- Release a hold of its owner. KEYS: holds. ARGV: hold id, owner. Returns 1 | 0.
local function hold_release(keys, args)
  local k, a = named(keys, HOLD_RELEASE_KEYS), named(args, HOLD_RELEASE_ARGS)
  local value = redis.call('HGET', k.holds, a.hold_id)
  if value and parse_hold(value).owner == a.owner then
    redis.call('HDEL', k.holds, a.hold_id)
    return 1
  end
  return 0
end

-- Cancel: free exactly the booking's own slots.
-- KEYS: record, inventory, registry, audit, stats
-- ARGV: actor, is staff (1|0), today ISO, reason, now ms, audit maxlen, request id
-- Returns {'cancelled', <record>} | {outcome} with outcome not_found, forbidden,
--   already_cancelled, collected, started, stale
-- The request id (made by the caller) is kept in the record: a retry of the very call that
-- cancelled answers 'cancelled' again, any other call 'already_cancelled'.
local function cancel(keys, args)
  local k, a = named(keys, CANCEL_KEYS), named(args, CANCEL_ARGS)
  local record, inv, registry, stream, stats = k.record, k.inventory, k.registry, k.audit, k.stats
  local actor, is_staff, today, reason, now, maxlen, request =
    a.actor, a.is_staff == '1', a.today, a.reason, tonumber(a.now_ms), a.audit_maxlen,
    a.request_id or ''
  if redis.call('EXISTS', record) == 0 then
    return {'not_found'}
  end
  local r = redis.call('HMGET', record, 'owner', 'status', 'collected', 'dates', 'inv', 'cls',
    'days', 'hstart', 'hend', 'boxes', 'id', 'room', 'cancel_request', 'season', 'made')
  local owner, status, collected, dates = r[1], r[2], r[3], r[4]
  if actor ~= owner and not is_staff then
    return {'forbidden'}
  end
  if status == 'cancelled' then
    if request ~= '' and r[13] == request then
      return {'cancelled', redis.call('HGETALL', record)}
    end
    return {'already_cancelled'}
  end
  if status == 'collected' or (collected and collected ~= '') then
    return {'collected'}
  end
  if not is_staff and today >= split(dates)[1] then
    return {'started'}
  end
  if r[5] ~= inv then
    return {'stale'}
  end
  if not stats then
    return {'invalid', 'call'}
  end

  local days = split_numbers(r[7])
  local fields, kind = fields_of(r[6], days, tonumber(r[8]), tonumber(r[9]),
    split_numbers(r[10]))
  local values = read_fields(inv, fields, kind)
  local updated = {}
  for i, field in ipairs(fields) do
    updated[i] = bit.band(values[i], bit.bnot(field[2]))
  end
  write_fields(inv, fields, kind, updated)
  stats_slots(stats, r[14], r[6], fields, values, updated)
  stats_booking(stats, r[14], r[6], days, 'confirmed', r[15], -1)
  stats_booking(stats, r[14], r[6], days, 'cancelled', r[15], 1)
  if redis.call('BITCOUNT', inv) == 0 then
    redis.call('DEL', inv)
    redis.call('SREM', registry, inv)
  end
  redis.call('HSET', record, 'status', 'cancelled', 'cancelled_at', now, 'cancelled_by', actor,
    'cancel_reason', reason, 'cancel_request', request)
  audit(stream, maxlen, 'cancel', actor, r[11], r[12], reason, now)
  return {'cancelled', redis.call('HGETALL', record)}
end

-- Pickup: open the safe with room + code, once per booked day, within the booked hours.
-- KEYS: lock, failures, codes, record (of ARGV booking id; any key of the room if none), audit,
--       stats
-- ARGV: code mac, booking id (''), now ms, today ISO, minute of day, grace minutes,
--       max failures, window ms, lock ms, attempt id, audit maxlen, room, yesterday ISO
-- Returns {'collected', <record>} | {'locked', until ms} | {'wrong_code', failures left}
--       | {'retry', booking id} | {outcome, <record>} for cancelled, already_collected,
--         wrong_day, wrong_hour
-- The attempt id (made by the caller) makes a retry harmless: a wrong code is counted once per
-- attempt and code (so one id cannot hide many guesses), and the attempt that collected is kept
-- in the record, so its retry answers 'collected' instead of 'already_collected'.
local function pickup(keys, args)
  local k, a = named(keys, PICKUP_KEYS), named(args, PICKUP_ARGS)
  local lock, failures, codes, record, stream, stats =
    k.lock, k.failures, k.codes, k.record, k.audit, k.stats
  local mac, expected, now, today = a.code_mac, a.booking_id, tonumber(a.now_ms), a.today
  local minute, grace = tonumber(a.minute), tonumber(a.grace_minutes)
  local max_failures, window, lock_ms =
    tonumber(a.max_failures), tonumber(a.window_ms), tonumber(a.lock_ms)
  local attempt, maxlen, room, yesterday = a.attempt_id, a.audit_maxlen, a.room, a.yesterday

  local locked_until = redis.call('GET', lock)
  if locked_until then
    return {'locked', locked_until}
  end
  local id = redis.call('HGET', codes, mac)
  if not id then
    local failure = attempt .. '|' .. mac
    if redis.call('ZSCORE', failures, failure) then
      return {'wrong_code', tostring(max_failures - redis.call('ZCARD', failures))}
    end
    redis.call('ZADD', failures, now, failure)
    redis.call('ZREMRANGEBYSCORE', failures, '-inf', '(' .. tostring(now - window))
    redis.call('PEXPIRE', failures, window)
    local count = redis.call('ZCARD', failures)
    audit(stream, maxlen, 'pickup_failed', '', '', room, 'wrong code', now)
    if count >= max_failures then
      local until_ms = tostring(now + lock_ms)
      redis.call('SET', lock, until_ms, 'PX', lock_ms)
      redis.call('DEL', failures)
      return {'locked', until_ms}
    end
    return {'wrong_code', tostring(max_failures - count)}
  end
  if id ~= expected then
    return {'retry', id}
  end

  local r = redis.call('HMGET', record, 'status', 'dates', 'collected', 'cls', 'hstart', 'hend',
    'pickup_attempt', 'season')
  local status, dates, collected = r[1], split(r[2]), split(r[3])
  if r[7] == attempt .. '|' .. today then
    return {'collected', redis.call('HGETALL', record)}
  end
  if status == 'cancelled' then
    return {'cancelled', redis.call('HGETALL', record)}
  end
  if status == 'collected' then
    return {'already_collected', redis.call('HGETALL', record)}
  end
  -- The booked day this pickup is for: today within its hours (+ grace), or yesterday while the
  -- grace after hours that end at midnight runs on into today.
  local booked, done = as_set(dates), as_set(collected)
  local first, last = (tonumber(r[5]) or 0) * 60, (tonumber(r[6]) or 0) * 60 + grace
  local day
  if booked[today] and (r[4] == 'A' or (minute >= first and minute < last)) then
    day = today
  elseif r[4] ~= 'A' and booked[yesterday] and minute < last - 1440 then
    day = yesterday
  elseif booked[today] then
    day = done[today] and today or nil
    if not day then
      return {'wrong_hour', redis.call('HGETALL', record)}
    end
  else
    return {'wrong_day', redis.call('HGETALL', record)}
  end
  if done[day] then
    return {'already_collected', redis.call('HGETALL', record)}
  end
  if not stats then
    return {'invalid', 'call'}
  end

  collected[#collected + 1] = day
  table.sort(collected)
  local fields = {'collected', table.concat(collected, ','), 'collected_at', now,
    'pickup_attempt', attempt .. '|' .. today}
  if #collected == #dates then
    fields[#fields + 1] = 'status'
    fields[#fields + 1] = 'collected'
    bump(stats, 'status:' .. r[8] .. ':' .. r[4] .. ':confirmed', -1)
    bump(stats, 'status:' .. r[8] .. ':' .. r[4] .. ':collected', 1)
  end
  redis.call('HSET', record, unpack(fields))
  audit(stream, maxlen, 'pickup', redis.call('HGET', record, 'owner'), id, room, day, now)
  return {'collected', redis.call('HGETALL', record)}
end

-- Flush one room: delete exactly its registered inventory keys and cancel its confirmed
-- bookings. The caller passes what it read; if the room changed meanwhile, nothing happens.
-- KEYS: registry, ledger, holds, audit, inventory keys (ARGV n_inv), record keys (ARGV n_rec),
--       stats
-- ARGV: actor, reason, now ms, audit maxlen, n_inv, n_rec, room
-- Returns {'ok', keys removed, bookings cancelled} | {'retry'}
local function flush_room(keys, args)
  local k, a = named(keys, FLUSH_ROOM_KEYS), named(args, FLUSH_ROOM_ARGS)
  local registry, ledger, holds, stream = k.registry, k.ledger, k.holds, k.audit
  local actor, reason, now, maxlen = a.actor, a.reason, tonumber(a.now_ms), a.audit_maxlen
  local n_inv, n_rec, room = tonumber(a.n_inv), tonumber(a.n_rec), a.room
  if redis.call('SCARD', registry) ~= n_inv or redis.call('SCARD', ledger) ~= n_rec then
    return {'retry'}
  end
  for i = 5, 4 + n_inv do
    if redis.call('SISMEMBER', registry, keys[i]) == 0 then
      return {'retry'}
    end
  end
  local records = {}
  for i = 5 + n_inv, 4 + n_inv + n_rec do
    local id = redis.call('HGET', keys[i], 'id')
    if not id or redis.call('SISMEMBER', ledger, id) == 0 then
      return {'retry'}
    end
    records[#records + 1] = keys[i]
  end
  local stats = keys[5 + n_inv + n_rec]
  if not stats or #keys ~= 5 + n_inv + n_rec then
    return {'invalid', 'call'}
  end

  local cancelled = 0
  for _, record in ipairs(records) do
    local r = redis.call('HMGET', record, 'status', 'season', 'cls', 'days', 'made')
    if r[1] == 'confirmed' then
      redis.call('HSET', record, 'status', 'cancelled', 'cancelled_at', now, 'cancelled_by',
        actor, 'cancel_reason', reason)
      stats_booking(stats, r[2], r[3], split_numbers(r[4]), 'confirmed', r[5], -1)
      stats_booking(stats, r[2], r[3], split_numbers(r[4]), 'cancelled', r[5], 1)
      cancelled = cancelled + 1
    end
  end
  for i = 5, 4 + n_inv do
    redis.call('DEL', keys[i])
  end
  -- Every bitmap of the room is gone: so are its booked-slot counters.
  for _, field in ipairs(redis.call('HKEYS', stats)) do
    if string.sub(field, 1, 6) == 'slots:' then
      redis.call('HDEL', stats, field)
    end
  end
  redis.call('DEL', registry, holds)
  if n_inv > 0 or cancelled > 0 then
    audit(stream, maxlen, 'flush', actor, '', room,
      reason .. ' (' .. n_inv .. ' keys, ' .. cancelled .. ' bookings)', now)
  end
  return {'ok', n_inv, cancelled}
end

-- Rebuild one room's stats from its records and bitmaps (existing data, a changed format).
-- The caller passes what it read; if the room changed meanwhile, nothing happens.
-- KEYS: stats, registry, ledger, inventory keys (ARGV n_inv), record keys (ARGV n_rec)
-- ARGV: n_inv, n_rec, per inventory key: season, cls, bits per day; per record: the local
--       date of its creation (kept in the record as 'made' where it is missing)
-- Returns {'ok', records counted} | {'retry'} | {'invalid', 'call'}
local function stats_rebuild(keys, args)
  local k, a = named(keys, STATS_REBUILD_KEYS), named(args, STATS_REBUILD_ARGS)
  local stats, registry, ledger = k.stats, k.registry, k.ledger
  local n_inv, n_rec = tonumber(a.n_inv), tonumber(a.n_rec)
  if not n_inv or not n_rec or #keys ~= 3 + n_inv + n_rec or #args ~= 2 + 3 * n_inv + n_rec then
    return {'invalid', 'call'}
  end
  if redis.call('SCARD', registry) ~= n_inv or redis.call('SCARD', ledger) ~= n_rec then
    return {'retry'}
  end
  for i = 4, 3 + n_inv do
    if redis.call('SISMEMBER', registry, keys[i]) == 0 then
      return {'retry'}
    end
  end
  for i = 4 + n_inv, 3 + n_inv + n_rec do
    local id = redis.call('HGET', keys[i], 'id')
    if not id or redis.call('SISMEMBER', ledger, id) == 0 then
      return {'retry'}
    end
  end

  redis.call('DEL', stats)
  for j = 1, n_rec do
    local record = keys[3 + n_inv + j]
    redis.call('HSETNX', record, 'made', args[2 + 3 * n_inv + j])
    local r = redis.call('HMGET', record, 'season', 'cls', 'days', 'status', 'made')
    stats_booking(stats, r[1], r[2], split_numbers(r[3]), r[4], r[5], 1)
  end
  for i = 1, n_inv do
    local inv, season, cls = keys[3 + i], args[3 * i], args[3 * i + 1]
    local width = tonumber(args[3 * i + 2])
    local order, deltas = {}, {}
    for day = 0, math.floor(redis.call('STRLEN', inv) * 8 / width) - 1 do
      local n = redis.call('BITCOUNT', inv, day * width, (day + 1) * width - 1, 'BIT')
      if n > 0 then
        order[#order + 1] = day
        deltas[day] = n
      end
    end
    bump_days(stats, 'slots:' .. season .. ':' .. cls, order, deltas)
  end
  redis.call('HSET', stats, 'v', STATS_VERSION)
  return {'ok', n_rec}
end

redis.register_function{function_name = 'booking_claim', callback = claim}
redis.register_function{function_name = 'booking_hold', callback = hold}
redis.register_function{function_name = 'booking_hold_release', callback = hold_release}
redis.register_function{function_name = 'booking_cancel', callback = cancel}
redis.register_function{function_name = 'booking_pickup', callback = pickup}
redis.register_function{function_name = 'booking_flush_room', callback = flush_room}
redis.register_function{function_name = 'booking_stats_rebuild', callback = stats_rebuild}
