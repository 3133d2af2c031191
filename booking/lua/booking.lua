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
-- tests/booking/domain/test_booking_calls.py checks that the two agree.
local CLAIM_KEYS = {'inventory', 'registry', 'record', 'ledger', 'codes', 'holds', 'audit',
  'stats', 'hold_days', 'unindexed', 'refs', 'outbox', 'hold_streaks', 'waits', 'wait_notices'}
local CLAIM_ARGS = {'owner', 'cls', 'season', 'days', 'hstart', 'hend', 'boxes', 'booking_id',
  'now_ms', 'code_mac', 'code_n', 'dates', 'hold_id', 'audit_maxlen', 'room',
  'season_bytes', 'season_days', 'made', 'person_score', 'date_scores', 'reference',
  'pace_limit', 'pace_window_ms'}
local HOLD_KEYS = {'inventory', 'holds', 'audit', 'hold_days', 'hold_streaks'}
local HOLD_ARGS = {'owner', 'cls', 'days', 'hstart', 'hend', 'boxes', 'hold_id', 'now_ms',
  'ttl_ms', 'audit_maxlen', 'room', 'season_days'}
local HOLD_RELEASE_KEYS = {'holds', 'hold_days'}
local HOLD_RELEASE_ARGS = {'hold_id', 'owner'}
local CANCEL_KEYS = {'record', 'inventory', 'registry', 'audit', 'stats', 'outbox', 'waits',
  'wait_notices', 'holds', 'hold_days'}
local CANCEL_ARGS = {'actor', 'is_staff', 'today', 'reason', 'now_ms', 'audit_maxlen',
  'request_id', 'first_day', 'priority_hold_id', 'priority_hold_ms'}
local PICKUP_KEYS = {'lock', 'failures', 'codes', 'record', 'audit', 'stats'}
local PICKUP_ARGS = {'code_mac', 'booking_id', 'now_ms', 'today', 'minute', 'grace_minutes',
  'max_failures', 'window_ms', 'lock_ms', 'attempt_id', 'audit_maxlen', 'room', 'yesterday'}
-- The first KEYS and ARGV of the two room-wide calls (what follows is listed in their comments).
local FLUSH_ROOM_KEYS = {'registry', 'ledger', 'holds', 'audit', 'hold_days'}
local FLUSH_ROOM_ARGS = {'actor', 'reason', 'now_ms', 'audit_maxlen', 'n_inv', 'n_rec', 'room'}
local STATS_REBUILD_KEYS = {'stats', 'registry', 'ledger'}
local STATS_REBUILD_ARGS = {'n_inv', 'n_rec'}
local PICKUP_MISS_KEYS = {'failures', 'lock'}
local PICKUP_MISS_ARGS = {'failure', 'now_ms', 'max_failures', 'window_ms', 'lock_ms'}
-- The waiting list (see "The waiting list" below).
local WAIT_KEYS = {'waits', 'inventory', 'holds', 'hold_days'}
local WAIT_ARGS = {'person', 'cls', 'day', 'hstart', 'hend', 'box', 'now_ms', 'limit',
  'season_days', 'first_day'}
local WAITS_CHECK_KEYS = {'waits', 'wait_notices', 'holds', 'outbox', 'inventory_a',
  'inventory_b', 'inventory_c', 'hold_days'}
local WAITS_CHECK_ARGS = {'now_ms', 'first_day', 'priority_hold_id', 'priority_hold_ms', 'room'}
-- Followed by n record keys, then the n inventory keys those records name (same order).
local OWNER_FORGET_KEYS = {'registry', 'audit', 'stats', 'waits', 'wait_notices', 'holds',
  'outbox', 'hold_days'}
local OWNER_FORGET_ARGS = {'owner', 'now_ms', 'audit_maxlen', 'n', 'room', 'first_day',
  'priority_hold_id', 'priority_hold_ms'}
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

-- "a||c" -> {'a', '', 'c'}: the '|'-joined values of a hold or a wait, empty ones kept.
local function pipe_fields(text)
  local out = {}
  for part in string.gmatch(text .. '|', '([^|]*)|') do
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
  local p = named(pipe_fields(value), HOLD_FIELDS)
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

-- The score of a held day in the hold-days index: class digit * 1000 + season day.
local CLASS_DIGIT = {A = 1, B = 2, C = 3}

local function day_score(cls, day)
  return CLASS_DIGIT[cls] * 1000 + day
end

-- Holds that touch the request's days (found through the hold-days index: one ZRANGEBYSCORE a
-- day, never every hold of the room). Returns the slots of other buyers' unexpired holds that
-- overlap the request ("day:box:mask:1" entries), and the holds to drop on a successful write
-- ({id = value}: expired ones, and index entries whose hold is gone, as value false).
local function held_conflicts(holds_key, days_key, owner, cls, days, hstart, hend, boxes, now)
  local conflicts, drop = {}, {}
  local ids, seen = {}, {}
  for _, day in ipairs(days) do
    local score = day_score(cls, day)
    for _, member in ipairs(redis.call('ZRANGEBYSCORE', days_key, score, score)) do
      local id = string.match(member, '^(.*)/')
      if id and not seen[id] then
        seen[id] = true
        ids[#ids + 1] = id
      end
    end
  end
  if #ids == 0 then
    return conflicts, drop
  end
  local values = redis.call('HMGET', holds_key, unpack(ids))
  local my_days, my_boxes = as_set(days), as_set(boxes)
  for i, id in ipairs(ids) do
    local value = values[i]
    if not value then
      drop[id] = false
    else
      local hold = parse_hold(value)
      if hold.expiry <= now then
        drop[id] = value
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
  end
  return conflicts, drop
end

-- Remove holds ({id = value or false}) from the holds hash and their days from the index (an
-- id without a value: its index entries for the request's `days` of class `cls`).
local function drop_holds(holds_key, days_key, drop, cls, days)
  local ids, members = {}, {}
  for id, value in pairs(drop) do
    ids[#ids + 1] = id
    local hold = value and parse_hold(value) or {days = days}
    for _, day in ipairs(hold.days) do
      members[#members + 1] = id .. '/' .. day
    end
  end
  if #ids > 0 then
    redis.call('HDEL', holds_key, unpack(ids))
    redis.call('ZREM', days_key, unpack(members))
  end
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

-- A change to the room's stats: the functions below gather it field by field, then
-- stats_write reads every field it touches in one HMGET and writes them in one HSET (and one
-- HDEL for counters that come back to nothing), however many bookings and fields it spans.
local function stats_change()
  return {fields = {}, ints = {}, days = {}}
end

local function bump(change, field, n)
  if n == 0 then
    return
  end
  if change.ints[field] == nil then
    change.fields[#change.fields + 1] = field
    change.ints[field] = 0
  end
  change.ints[field] = change.ints[field] + n
end

-- A per-day field is one 7-digit decimal number per season day, day 0 first ("0000003" +
-- "0000012" + ...): a reader adds the fields of 300 rooms as 300 big integers (no carry
-- crosses a day while a day's sum stays below 10^7) and cuts the sum into days.
local DAY_WIDTH = 7
local ZERO_DAY = '0000000'  -- one day of nothing (DAY_WIDTH digits)

-- Add deltas ({day -> n}) to a per-day field.
local function bump_days(change, field, deltas)
  local into = change.days[field]
  if into == nil then
    change.fields[#change.fields + 1] = field
    into = {}
    change.days[field] = into
  end
  for day, n in pairs(deltas) do
    into[day] = (into[day] or 0) + n
  end
end

-- A per-day field's text with deltas added: only the named days are cut out and rewritten (a
-- claim touches one day or a few of a whole season's text). Canonical: no trailing zero days,
-- so a rebuild writes the same text as the live counting ('' for nothing at all).
local function days_added(text, deltas)
  text = string.sub(text, 1, #text - #text % DAY_WIDTH)
  local order = {}
  for day in pairs(deltas) do
    order[#order + 1] = day
  end
  table.sort(order)
  for _, day in ipairs(order) do
    local at = day * DAY_WIDTH
    if #text < at + DAY_WIDTH then
      text = text .. string.rep(ZERO_DAY, day + 1 - #text / DAY_WIDTH)
    end
    local n = (tonumber(string.sub(text, at + 1, at + DAY_WIDTH)) or 0) + deltas[day]
    text = string.sub(text, 1, at) .. string.format('%07d', n)
      .. string.sub(text, at + DAY_WIDTH + 1)
  end
  while string.sub(text, -DAY_WIDTH) == ZERO_DAY do
    text = string.sub(text, 1, -DAY_WIDTH - 1)
  end
  return text
end

-- Apply a gathered change to the stats hash: a counter that reaches zero and a per-day field
-- with no day left are removed, so the hash holds only what exists.
local function stats_write(stats, change)
  if #change.fields == 0 then
    return
  end
  local current = redis.call('HMGET', stats, unpack(change.fields))
  local set, gone = {}, {}
  for i, field in ipairs(change.fields) do
    local value
    if change.days[field] then
      value = days_added(current[i] or '', change.days[field])
    else
      local n = (tonumber(current[i]) or 0) + change.ints[field]
      value = n ~= 0 and string.format('%d', n) or ''
    end
    if value ~= '' then
      set[#set + 1] = field
      set[#set + 1] = value
    elseif current[i] then
      gone[#gone + 1] = field
    end
  end
  if #set > 0 then
    redis.call('HSET', stats, unpack(set))
  end
  if #gone > 0 then
    redis.call('HDEL', stats, unpack(gone))
  end
end

-- What one booking adds (sign 1) or takes away (sign -1): its status, and while it is active
-- (not cancelled) one per booked day and one on its creation date.
local function stats_booking(change, season, cls, days, status, made, sign)
  bump(change, 'status:' .. season .. ':' .. cls .. ':' .. status, sign)
  if status == 'cancelled' then
    return
  end
  local deltas = {}
  for _, day in ipairs(days) do
    deltas[day] = sign
  end
  bump_days(change, 'active:' .. season .. ':' .. cls, deltas)
  if made and made ~= '' then
    bump(change, 'made:' .. season .. ':' .. cls .. ':' .. made, sign)
  end
end

-- The bits a write changed, per day: after - before, summed over the fields of each day.
local function stats_slots(change, season, cls, fields, before, after)
  local deltas = {}
  for i, field in ipairs(fields) do
    local day = field[3]
    deltas[day] = (deltas[day] or 0) + popcount(after[i]) - popcount(before[i])
  end
  bump_days(change, 'slots:' .. season .. ':' .. cls, deltas)
end

-- --- The waiting list --------------------------------------------------------------------------
-- A wait is one sold-out slot a buyer asked about: "person|cls|day|hstart|hend|box" (A: hours
-- 0 0 and box 0; B: box 0), scored by when they asked. When a slot frees (a cancel, or an
-- expired hold found by the sweep), the waiters whose whole slot is free are told in that
-- order: a notice (wait-notices: "told ms|priority hold id|hold expiry ms|cause") and a mail
-- ('freed|<room>|<wait>|<told ms>' in the room's outbox). The first of them gets a priority
-- hold on their slot for a few minutes; the others are told that it opens to everyone after.

local function parse_wait(member)
  local p = pipe_fields(member)
  return {person = p[1], cls = p[2], day = tonumber(p[3]), hstart = tonumber(p[4]) or 0,
    hend = tonumber(p[5]) or 0, box = tonumber(p[6]) or 0}
end

local function wait_boxes(w)
  if w.cls == 'C' then
    return {w.box}
  end
  return {}
end

-- Whether a wait's slot is free now: no booked bit, no unexpired hold of someone else.
local function wait_free(w, inv, holds, hold_days, now)
  local boxes = wait_boxes(w)
  local fields, kind = fields_of(w.cls, {w.day}, w.hstart, w.hend, boxes)
  if #booked_conflicts(inv, fields, kind) > 0 then
    return false
  end
  local held = held_conflicts(holds, hold_days, w.person, w.cls, {w.day}, w.hstart, w.hend,
    boxes, now)
  return #held == 0
end

-- Drop waits (and notices) of days that can no longer be booked.
local function waits_clear_stale(waits, notices, first_day)
  local gone = {}
  for _, member in ipairs(redis.call('ZRANGE', waits, 0, -1)) do
    local day = parse_wait(member).day
    if not day or day < first_day then
      gone[#gone + 1] = member
    end
  end
  if #gone > 0 then
    redis.call('ZREM', waits, unpack(gone))
  end
  local old = {}
  for _, member in ipairs(redis.call('HKEYS', notices)) do
    local day = parse_wait(member).day
    if not day or day < first_day then
      old[#old + 1] = member
    end
  end
  if #old > 0 then
    redis.call('HDEL', notices, unpack(old))
  end
end

-- Tell the waiters whose slot is free now (see above). inv_of: class -> inventory key (waits
-- of other classes are left alone). hold_id: a client-made hold id of this room for the first
-- waiter ('' for none). Returns the number told.
local function waits_release(waits, notices, holds, hold_days, outbox, inv_of, now, hold_id,
    hold_ttl, room)
  -- Which slots are free is decided before the priority hold is placed: the waiters after the
  -- first are told too (without the hold), not kept waiting by it.
  local free = {}
  for _, member in ipairs(redis.call('ZRANGE', waits, 0, -1)) do
    local w = parse_wait(member)
    local inv = inv_of[w.cls]
    if inv and w.day and wait_free(w, inv, holds, hold_days, now) then
      free[#free + 1] = {member, w}
    end
  end
  local priority_expiry = ''
  for i, item in ipairs(free) do
    local member, w = item[1], item[2]
    -- Later waiters learn until when the first one has priority.
    local hold_value, expiry = '', priority_expiry
    if i == 1 and hold_id ~= '' then
      expiry = now + hold_ttl
      priority_expiry = expiry
      hold_value = hold_id
      redis.call('HSET', holds, hold_id, table.concat({expiry, w.person, w.cls, w.day,
        w.hstart, w.hend, table.concat(wait_boxes(w), ',')}, '|'))
      redis.call('ZADD', hold_days, day_score(w.cls, w.day), hold_id .. '/' .. w.day)
      if redis.call('PTTL', holds) < hold_ttl then
        redis.call('PEXPIRE', holds, hold_ttl)
        redis.call('PEXPIRE', hold_days, hold_ttl)
      end
    end
    redis.call('HSET', notices, member, table.concat({now, hold_value, expiry, room}, '|'))
    redis.call('ZREM', waits, member)
    redis.call('ZADD', outbox, 'NX', now, 'freed|' .. room .. '|' .. member .. '|' .. now)
  end
  return #free
end

-- The owner's waits (and notices) for exactly the slots a booking took: fulfilled, they go.
-- Returns their members (the caller takes them out of the owner's own index of waits).
local function waits_fulfilled(waits, notices, owner, cls, days, hstart, hend, boxes)
  if redis.call('EXISTS', waits, notices) == 0 then
    return {}  -- nobody waits in this room: the common case costs one call
  end
  local members = {}
  for _, day in ipairs(days) do
    if cls == 'C' then
      for _, box in ipairs(boxes) do
        members[#members + 1] = table.concat({owner, cls, day, hstart, hend, box}, '|')
      end
    else
      members[#members + 1] = table.concat({owner, cls, day, hstart, hend, 0}, '|')
    end
  end
  local waiting = redis.call('ZMSCORE', waits, unpack(members))
  local told = redis.call('HMGET', notices, unpack(members))
  local gone = {}
  for i, member in ipairs(members) do
    if waiting[i] or told[i] then
      gone[#gone + 1] = member
    end
  end
  if #gone > 0 then
    redis.call('ZREM', waits, unpack(gone))
    redis.call('HDEL', notices, unpack(gone))
  end
  return gone
end

-- Claim: take every slot of the request, or nothing.
-- KEYS: inventory, registry, record, ledger, codes, holds, audit, stats, hold days, unindexed,
--       refs, outbox, hold streaks, waits, wait notices,
--       then either the person index and the date index (one server: written here) or nothing
--       (a cluster: the id goes to `unindexed`, and the readers write the entries)
-- ARGV: owner, cls, season, days, hstart, hend, boxes, booking id, now ms, code mac,
--       code number (the code derives from the id and it), dates (ISO csv), hold id ('' for
--       none), audit maxlen, room, bitmap bytes of a whole season (a new bitmap is made at its
--       full size at once: an exact allocation, where growing bit by bit would over-allocate),
--       days in the season, the local date of now (the stats' creation date), the person
--       index's score, the date index's score of each date (csv, in the order of the dates),
--       short reference, the buyer's hourly allowance and its window (0 and 0: not counted
--       here); with an allowance, the KEYS end with the buyer's pace (one server only: on a
--       cluster the caller counts it first, in the buyer's own slot)
-- Returns {'ok', <record as flat hash>, <the owner's waits it fulfilled>}
--       | {'taken', 'day:box:mask:held', ...} | {'paced', ms when the buyer may book again}
--       | {'id_in_use'} | {'code_clash'} | {'ref_clash'} | {'invalid', what}
-- (a retry of a claim that succeeded returns {'ok', <record>}).
-- The receipt ('confirm|<id>|<owner>') goes into the room's outbox in the same call: as durable
-- as the booking, and no extra round trip (the owner named, the sender need not read the
-- booking of a buyer without a verified address).
local function claim(keys, args)
  local k, a = named(keys, CLAIM_KEYS), named(args, CLAIM_ARGS)
  local inv, registry, record, ledger, codes, holds, stream, stats, hold_days, unindexed =
    k.inventory, k.registry, k.record, k.ledger, k.codes, k.holds, k.audit, k.stats,
    k.hold_days, k.unindexed
  local owner, season, id, now = a.owner, a.season, a.booking_id, tonumber(a.now_ms)
  local mac, code_n, dates, hold_id, maxlen, room =
    a.code_mac, a.code_n, a.dates, a.hold_id, a.audit_maxlen, a.room
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.days, a.hstart, a.hend,
    a.boxes, a.season_days)
  if not cls then
    return {'invalid', days}
  end
  local made, ref, refs, outbox = a.made, a.reference, k.refs, k.outbox
  local date_scores = split(a.date_scores)
  -- KEYS after the named ones: the person index and the date index (when the store lets one
  -- call write them: not on a cluster, where the booking waits in `unindexed` instead).
  local person_index, date_index = keys[#CLAIM_KEYS + 1], keys[#CLAIM_KEYS + 2]
  local pace, pace_limit, pace_window = keys[#CLAIM_KEYS + 3], tonumber(a.pace_limit),
    tonumber(a.pace_window_ms)
  if owner == '' or id == '' or not now or not tonumber(a.season_bytes) or not unindexed
      or not made or made == '' or #split(dates) ~= #days or #date_scores ~= #days
      or not tonumber(a.person_score) or (person_index ~= nil) ~= (date_index ~= nil)
      or not ref or ref == '' or not outbox or not k.hold_streaks or not k.wait_notices
      or not pace_limit or not pace_window or (pace ~= nil) ~= (pace_limit > 0) then
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
  if redis.call('HEXISTS', refs, ref) == 1 then
    return {'ref_clash'}
  end
  local pace_since = '(' .. tostring(now - pace_window)
  if pace and redis.call('ZCOUNT', pace, pace_since, '+inf') >= pace_limit then
    local oldest = redis.call('ZRANGEBYSCORE', pace, pace_since, '+inf', 'WITHSCORES',
      'LIMIT', 0, 1)
    return {'paced', tostring(tonumber(oldest[2]) + pace_window)}
  end
  local fields, kind = fields_of(cls, days, hstart, hend, boxes)
  local taken, values = booked_conflicts(inv, fields, kind)
  local held, drop = held_conflicts(holds, hold_days, owner, cls, days, hstart, hend, boxes,
    now)
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
  -- The record as written is the record returned (no read back).
  local written = {'id', id, 'owner', owner, 'cls', cls, 'room', room,
    'season', season, 'days', a.days, 'dates', dates, 'hstart', tostring(hstart),
    'hend', tostring(hend), 'boxes', a.boxes, 'created', a.now_ms, 'status', 'confirmed',
    'code_mac', mac, 'code_n', code_n, 'collected', '', 'inv', inv, 'made', made, 'ref', ref}
  redis.call('HSET', record, unpack(written))
  redis.call('HSET', refs, ref, id)
  redis.call('ZADD', outbox, 'NX', now, 'confirm|' .. id .. '|' .. owner)
  if redis.call('SCARD', ledger) == 0 and redis.call('HEXISTS', stats, 'v') == 0 then
    -- The room's first booking: its stats start exact from here.
    redis.call('DEL', stats)
    redis.call('HSET', stats, 'v', STATS_VERSION)
  end
  local change = stats_change()
  stats_slots(change, season, cls, fields, values, updated)
  stats_booking(change, season, cls, days, 'confirmed', made, 1)
  stats_write(stats, change)
  redis.call('SADD', ledger, id)
  redis.call('HSET', codes, mac, id)
  if person_index then
    -- The indexes in the same atomic call: the booking is listed the moment it exists.
    redis.call('ZADD', person_index, a.person_score, id)
    local scored = {}
    for i, date in ipairs(split(dates)) do
      scored[#scored + 1] = date_scores[i]
      scored[#scored + 1] = id .. '/' .. date
    end
    redis.call('ZADD', date_index, unpack(scored))
  else
    redis.call('ZADD', unindexed, now, id)
  end
  if hold_id ~= '' then
    local value = redis.call('HGET', holds, hold_id)
    if value and parse_hold(value).owner == owner then
      drop[hold_id] = value
    end
  end
  drop_holds(holds, hold_days, drop, cls, days)
  redis.call('ZREM', k.hold_streaks, owner)  -- booked: the next hold here starts afresh
  if pace then
    -- Only a booking made counts against the allowance: a refusal above wrote nothing.
    redis.call('ZADD', pace, now, id)
    redis.call('ZREMRANGEBYSCORE', pace, '-inf', pace_since)
    redis.call('PEXPIRE', pace, pace_window)
  end
  audit(stream, maxlen, 'claim', owner, id, room, cls .. ' ' .. dates, now)
  return {'ok', written,
    waits_fulfilled(k.waits, k.wait_notices, owner, cls, days, hstart, hend, boxes)}
end

-- Hold: keep the request's slots for one buyer until expiry (other buyers see them taken).
-- KEYS: inventory, holds, audit, hold days, hold streaks
-- ARGV: owner, cls, days, hstart, hend, boxes, hold id, now ms, ttl ms, audit maxlen, room,
--       days in the season
-- Returns {'ok', expiry ms} | {'taken', ...} | {'cooling', until ms} | {'id_in_use'} |
--   {'invalid', what}
local function hold(keys, args)
  local k, a = named(keys, HOLD_KEYS), named(args, HOLD_ARGS)
  local inv, holds, stream, hold_days = k.inventory, k.holds, k.audit, k.hold_days
  local owner, id, now, ttl = a.owner, a.hold_id, tonumber(a.now_ms), tonumber(a.ttl_ms)
  local maxlen, room = a.audit_maxlen, a.room
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.days, a.hstart, a.hend,
    a.boxes, a.season_days)
  if not cls then
    return {'invalid', days}
  end
  if owner == '' or id == '' or not now or not ttl or ttl < 1 or not hold_days
      or not k.hold_streaks then
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
  -- One hold time out of two: holds placed within `ttl` of the person's first one here end
  -- when it would have; for the next `ttl` after that the room is everyone else's.
  local streaks = k.hold_streaks
  local began = tonumber(redis.call('ZSCORE', streaks, owner))
  if began and now >= began + 2 * ttl then
    began = nil
  end
  if began and now >= began + ttl then
    return {'cooling', tostring(began + 2 * ttl)}
  end
  local fields, kind = fields_of(cls, days, hstart, hend, boxes)
  local taken = booked_conflicts(inv, fields, kind)
  local held, drop = held_conflicts(holds, hold_days, owner, cls, days, hstart, hend, boxes,
    now)
  append(taken, held)
  if #taken > 0 then
    return {'taken', unpack(taken)}
  end

  if existing then
    drop[id] = existing
  end
  drop_holds(holds, hold_days, drop, cls, days)
  if not began then
    began = now
    redis.call('ZREMRANGEBYSCORE', streaks, '-inf', '(' .. tostring(now - 2 * ttl))
    redis.call('ZADD', streaks, began, owner)
    redis.call('PEXPIRE', streaks, 2 * ttl)
  end
  local expiry = began + ttl
  local stored = {expiry = expiry, owner = owner, cls = cls, days = a.days, hstart = hstart,
    hend = hend, boxes = a.boxes}
  local parts = {}
  for i, name in ipairs(HOLD_FIELDS) do
    parts[i] = stored[name]
  end
  local value = table.concat(parts, '|')
  redis.call('HSET', holds, id, value)
  local members = {}
  for _, day in ipairs(days) do
    members[#members + 1] = day_score(cls, day)
    members[#members + 1] = id .. '/' .. day
  end
  redis.call('ZADD', hold_days, unpack(members))
  -- Both keys live as long as their longest hold (they are always written together).
  if redis.call('PTTL', holds) < ttl then
    redis.call('PEXPIRE', holds, ttl)
    redis.call('PEXPIRE', hold_days, ttl)
  end
  audit(stream, maxlen, 'hold', owner, id, room, cls, now)
  return {'ok', tostring(expiry)}
end

-- Release a hold of its owner (idempotent). KEYS: holds, hold days. ARGV: hold id, owner. Returns 1 | 0.
local function hold_release(keys, args)
  local k, a = named(keys, HOLD_RELEASE_KEYS), named(args, HOLD_RELEASE_ARGS)
  local value = redis.call('HGET', k.holds, a.hold_id)
  if value and parse_hold(value).owner == a.owner then
    drop_holds(k.holds, k.hold_days, {[a.hold_id] = value})
    return 1
  end
  return 0
end

-- Give a confirmed booking's slots back: clear its bits in `inv` (the inventory goes, with its
-- registry entry, once nothing in it is booked) and count the booking cancelled in the stats.
-- days_text and boxes_text are the record's comma lists.
local function slots_release(inv, registry, stats, cls, days_text, hstart, hend, boxes_text,
    season, made)
  local days = split_numbers(days_text)
  local fields, kind = fields_of(cls, days, tonumber(hstart), tonumber(hend),
    split_numbers(boxes_text))
  local values = read_fields(inv, fields, kind)
  local updated = {}
  for i, field in ipairs(fields) do
    updated[i] = bit.band(values[i], bit.bnot(field[2]))
  end
  write_fields(inv, fields, kind, updated)
  local change = stats_change()
  stats_slots(change, season, cls, fields, values, updated)
  stats_booking(change, season, cls, days, 'confirmed', made, -1)
  stats_booking(change, season, cls, days, 'cancelled', made, 1)
  stats_write(stats, change)
  if redis.call('BITCOUNT', inv) == 0 then
    redis.call('DEL', inv)
    redis.call('SREM', registry, inv)
  end
end

-- Cancel: free exactly the booking's own slots, queue the buyer's mail and tell the waiters.
-- KEYS: record, inventory, registry, audit, stats, outbox, waits, wait-notices, holds
-- ARGV: actor, is staff (1|0), today ISO, reason, now ms, audit maxlen, request id,
--       first bookable season day, priority hold id (of this room), priority hold ms
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
  local outbox, waits, notices, holds = k.outbox, k.waits, k.wait_notices, k.holds
  local first_day, hold_id, hold_ttl =
    tonumber(a.first_day), a.priority_hold_id or '', tonumber(a.priority_hold_ms)
  if not stats or not holds or not first_day or not hold_ttl then
    return {'invalid', 'call'}
  end

  slots_release(inv, registry, stats, r[6], r[7], r[8], r[9], r[10], r[14], r[15])
  redis.call('HSET', record, 'status', 'cancelled', 'cancelled_at', now, 'cancelled_by', actor,
    'cancel_reason', reason, 'cancel_request', request)
  audit(stream, maxlen, 'cancel', actor, r[11], r[12], reason, now)
  redis.call('ZADD', outbox, 'NX', now, 'cancel|' .. r[11])
  waits_clear_stale(waits, notices, first_day)
  waits_release(waits, notices, holds, k.hold_days, outbox, {[r[6]] = inv}, now, hold_id,
    hold_ttl, r[12])
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
    local change = stats_change()
    bump(change, 'status:' .. r[8] .. ':' .. r[4] .. ':confirmed', -1)
    bump(change, 'status:' .. r[8] .. ':' .. r[4] .. ':collected', 1)
    stats_write(stats, change)
  end
  redis.call('HSET', record, unpack(fields))
  audit(stream, maxlen, 'pickup', redis.call('HGET', record, 'owner'), id, room, day, now)
  return {'collected', redis.call('HGETALL', record)}
end

-- A wrong code counted against the client in every room (its own hash tag, so a call of its
-- own). KEYS: failures, lock (the client's). ARGV: failure (attempt|room|mac: a retry is counted
-- once), now ms, max failures, window ms, lock ms.
-- Returns {'locked', until ms} | {'counted', failures left}
local function pickup_miss(keys, args)
  local k, a = named(keys, PICKUP_MISS_KEYS), named(args, PICKUP_MISS_ARGS)
  local now, max_failures = tonumber(a.now_ms), tonumber(a.max_failures)
  local window, lock_ms = tonumber(a.window_ms), tonumber(a.lock_ms)
  local locked_until = redis.call('GET', k.lock)
  if locked_until then
    return {'locked', locked_until}
  end
  if not redis.call('ZSCORE', k.failures, a.failure) then
    redis.call('ZADD', k.failures, now, a.failure)
    redis.call('ZREMRANGEBYSCORE', k.failures, '-inf', '(' .. tostring(now - window))
    redis.call('PEXPIRE', k.failures, window)
  end
  local count = redis.call('ZCARD', k.failures)
  if count >= max_failures then
    local until_ms = tostring(now + lock_ms)
    redis.call('SET', k.lock, until_ms, 'PX', lock_ms)
    redis.call('DEL', k.failures)
    return {'locked', until_ms}
  end
  return {'counted', tostring(max_failures - count)}
end

-- Flush one room: delete exactly its registered inventory keys and cancel its confirmed
-- bookings. The caller passes what it read; if the room changed meanwhile, nothing happens.
-- KEYS: registry, ledger, holds, audit, hold days, inventory keys (ARGV n_inv), record keys
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

  local cancelled, change = 0, stats_change()
  for _, record in ipairs(records) do
    local r = redis.call('HMGET', record, 'status', 'season', 'cls', 'days', 'made')
    if r[1] == 'confirmed' then
      redis.call('HSET', record, 'status', 'cancelled', 'cancelled_at', now, 'cancelled_by',
        actor, 'cancel_reason', reason)
      stats_booking(change, r[2], r[3], split_numbers(r[4]), 'confirmed', r[5], -1)
      stats_booking(change, r[2], r[3], split_numbers(r[4]), 'cancelled', r[5], 1)
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
  local change = stats_change()
  for j = 1, n_rec do
    local record = keys[3 + n_inv + j]
    redis.call('HSETNX', record, 'made', args[2 + 3 * n_inv + j])
    local r = redis.call('HMGET', record, 'season', 'cls', 'days', 'status', 'made')
    stats_booking(change, r[1], r[2], split_numbers(r[3]), r[4], r[5], 1)
  end
  for i = 1, n_inv do
    local inv, season, cls = keys[3 + i], args[3 * i], args[3 * i + 1]
    local width = tonumber(args[3 * i + 2])
    local deltas = {}
    for day = 0, math.floor(redis.call('STRLEN', inv) * 8 / width) - 1 do
      local n = redis.call('BITCOUNT', inv, day * width, (day + 1) * width - 1, 'BIT')
      if n > 0 then
        deltas[day] = n
      end
    end
    bump_days(change, 'slots:' .. season .. ':' .. cls, deltas)
  end
  stats_write(stats, change)
  redis.call('HSET', stats, 'v', STATS_VERSION)
  return {'ok', n_rec}
end

-- Wait for a sold-out slot (see the waiting list above).
-- KEYS: waits, inventory (of the class), holds
-- ARGV: person, cls, day, hstart, hend, box (0 for A/B), now ms, waits per buyer in the room,
--       days in the season, first bookable season day
-- Returns {'ok'} (also when already waiting) | {'free'} | {'limit'} | {'invalid', what}
local function wait(keys, args)
  local k, a = named(keys, WAIT_KEYS), named(args, WAIT_ARGS)
  local waits, inv, holds = k.waits, k.inventory, k.holds
  local person, now, limit = a.person, tonumber(a.now_ms), tonumber(a.limit)
  local box_text = a.box
  if box_text == '0' then
    box_text = ''
  end
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.day, a.hstart, a.hend,
    box_text, a.season_days)
  if not cls then
    return {'invalid', days}
  end
  if person == '' or string.find(person, '|', 1, true) or not now or not limit or #days ~= 1
      or #boxes > 1 or days[1] < (tonumber(a.first_day) or 0) then
    return {'invalid', 'call'}
  end
  local member = table.concat({person, cls, days[1], hstart, hend, boxes[1] or 0}, '|')
  if redis.call('ZSCORE', waits, member) then
    return {'ok'}
  end
  local w = parse_wait(member)
  if wait_free(w, inv, holds, k.hold_days, now) then
    return {'free'}
  end
  local mine = 0
  for _, other in ipairs(redis.call('ZRANGE', waits, 0, -1)) do
    if parse_wait(other).person == person then
      mine = mine + 1
    end
  end
  if mine >= limit then
    return {'limit'}
  end
  redis.call('ZADD', waits, now, member)
  return {'ok'}
end

-- The sweep: tell the waiters of slots that freed without a cancel (an expired hold), and clear
-- what the day's end made useless.
-- KEYS: waits, wait-notices, holds, outbox, inventory A, inventory B, inventory C
-- ARGV: now ms, first bookable season day, priority hold id, priority hold ms, room
-- Returns {told, waits and notices left}
local function waits_check(keys, args)
  local k, a = named(keys, WAITS_CHECK_KEYS), named(args, WAITS_CHECK_ARGS)
  local waits, notices, holds, outbox = k.waits, k.wait_notices, k.holds, k.outbox
  local now, first_day, hold_ttl =
    tonumber(a.now_ms), tonumber(a.first_day), tonumber(a.priority_hold_ms)
  if not now or not first_day or not hold_ttl or not k.inventory_c then
    return {'invalid', 'call'}
  end
  waits_clear_stale(waits, notices, first_day)
  local told = waits_release(waits, notices, holds, k.hold_days, outbox,
    {A = k.inventory_a, B = k.inventory_b, C = k.inventory_c}, now, a.priority_hold_id,
    hold_ttl, a.room)
  return {told, redis.call('ZCARD', waits) + redis.call('HLEN', notices)}
end

-- Forget an owner in one room (account deletion): their bookings not collected at all are
-- cancelled and their slots freed; every one of their records stays for staff with owner '0';
-- their waits go; waiters of the freed slots are told.
-- KEYS: registry, audit, stats, waits, wait-notices, holds, outbox, n records, n inventories
--       (the inventory each record names, same order)
-- ARGV: owner, now ms, audit maxlen, n, room, first bookable season day, priority hold id,
--       priority hold ms
-- Returns {'ok', cancelled, kept} | {'stale'}
local function owner_forget(keys, args)
  local k, a = named(keys, OWNER_FORGET_KEYS), named(args, OWNER_FORGET_ARGS)
  local registry, stream, stats, waits, notices, holds, outbox =
    k.registry, k.audit, k.stats, k.waits, k.wait_notices, k.holds, k.outbox
  local owner, now, maxlen, n, room = a.owner, tonumber(a.now_ms), a.audit_maxlen, tonumber(a.n),
    a.room
  local first_day, hold_ttl = tonumber(a.first_day), tonumber(a.priority_hold_ms)
  if owner == '' or not now or not n or #keys ~= 8 + 2 * n or not first_day or not hold_ttl then
    return {'invalid', 'call'}
  end
  local rows = {}
  for i = 1, n do
    local record, inv = keys[8 + i], keys[8 + n + i]
    local r = redis.call('HMGET', record, 'owner', 'status', 'collected', 'inv', 'cls', 'days',
      'hstart', 'hend', 'boxes', 'id', 'season', 'made')
    if r[1] == owner then
      if r[4] ~= inv then
        return {'stale'}
      end
      rows[#rows + 1] = {record, inv, r}
    end
  end

  local cancelled, inv_of = 0, {}
  for _, row in ipairs(rows) do
    local record, inv, r = row[1], row[2], row[3]
    if r[2] == 'confirmed' and (r[3] == nil or r[3] == '') then
      slots_release(inv, registry, stats, r[5], r[6], r[7], r[8], r[9], r[11], r[12])
      redis.call('HSET', record, 'status', 'cancelled', 'cancelled_at', now, 'cancelled_by',
        owner, 'cancel_reason', 'account deleted')
      audit(stream, maxlen, 'cancel', owner, r[10], room, 'account deleted', now)
      cancelled = cancelled + 1
      inv_of[r[5]] = inv
    end
    redis.call('HSET', record, 'owner', '0')
  end
  local mine = {}
  for _, member in ipairs(redis.call('ZRANGE', waits, 0, -1)) do
    if parse_wait(member).person == owner then
      mine[#mine + 1] = member
    end
  end
  if #mine > 0 then
    redis.call('ZREM', waits, unpack(mine))
  end
  for _, member in ipairs(redis.call('HKEYS', notices)) do
    if parse_wait(member).person == owner then
      redis.call('HDEL', notices, member)
    end
  end
  waits_release(waits, notices, holds, k.hold_days, outbox, inv_of, now, a.priority_hold_id,
    hold_ttl, room)
  return {'ok', cancelled, #rows - cancelled}
end

redis.register_function{function_name = 'booking_claim', callback = claim}
redis.register_function{function_name = 'booking_hold', callback = hold}
redis.register_function{function_name = 'booking_hold_release', callback = hold_release}
redis.register_function{function_name = 'booking_cancel', callback = cancel}
redis.register_function{function_name = 'booking_pickup', callback = pickup}
redis.register_function{function_name = 'booking_pickup_miss', callback = pickup_miss}
redis.register_function{function_name = 'booking_flush_room', callback = flush_room}
redis.register_function{function_name = 'booking_stats_rebuild', callback = stats_rebuild}
redis.register_function{function_name = 'booking_wait', callback = wait}
redis.register_function{function_name = 'booking_waits_check', callback = waits_check}
redis.register_function{function_name = 'booking_owner_forget', callback = owner_forget}
