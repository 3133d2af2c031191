#!lua name=booking

-- The treasure inventory. Every function receives all its keys in KEYS[] (one room's hash tag),
-- checks everything before its first write, and recognises its own earlier success by the
-- client-made id, because redis-py may send a call twice.
--
-- A day is its calendar day number (days since 1970-01-01) everywhere: in requests, holds,
-- waits and records. Slots live in one bitmap per (room, class, calendar month), read and
-- written as BITFIELD fields, d being the day of the month from 0:
--   class A: field u1  at bit d                            (mask 1)
--   class B: field u24 at bit d*24                         (hour h is bit d*24 + h)
--   class C: field u24 at bit (d*100 + box - 1)*24         (hour h is that + h)
-- A u24 field is big-endian, so hour h is value bit 2^(23-h). No sales window appears here:
-- changing it cannot move a slot, a hold or a wait to another day.
--
-- A request travels as: cls, days "20797,20798", hour start, hour end, boxes "1,2" (empty for
-- A/B), with its months (ARGV 'months': 'YYYY-MM/<day of the 1st>/<days in the month>' per
-- bitmap key, in the order of those keys): a request over a month's end takes both bitmaps
-- in the same call.
--
-- The library is one file per function family, joined in the order of library.txt. Each
-- family file starts with its call specs: the names of each function's KEYS and ARGV, in order
-- (a function reads its call through `named`). The engine module of the family declares the
-- very same lists for Python, and tests/booking/domain/test_booking_calls.py checks that the
-- two agree.

local FULL = 16777215 -- 2^24 - 1

-- The formats Python reads too, declared once here and once in booking/domain/formats.py
-- (tests/booking/domain/test_booking_formats.py checks that the two agree).
-- A hold's value in the room's holds hash: these fields joined by '|'.
local HOLD_FIELDS = {'expiry', 'owner', 'cls', 'days', 'hstart', 'hend', 'boxes'}
-- The owner of a priority hold the waiting list placed but the buyer's own slot has not granted
-- yet: PRIORITY_PENDING .. person. It blocks everyone, that person too ('pending:' is no owner
-- id), until booking_priority_settle makes it theirs or gives it back.
local PRIORITY_PENDING = 'pending:'
-- The fields of a booking record as the claim writes them (cancel and pickup add theirs).
local RECORD_FIELDS = {'id', 'owner', 'cls', 'room', 'months', 'days', 'dates', 'hstart',
  'hend', 'boxes', 'created', 'status', 'code_mac', 'code_n', 'collected', 'inv', 'made', 'ref'}
-- A wait (a member of the room's waits), joined by '|' (A: hours 0 0 and box 0; B: box 0).
local WAIT_FIELDS = {'person', 'cls', 'day', 'hstart', 'hend', 'box'}
-- A told wait's notice (the value of its member in wait-notices), joined by '|'.
local NOTICE_FIELDS = {'told', 'hold_id', 'expiry', 'room'}
-- A slot a claim or a hold found taken, joined by ':' (held: 1 for another buyer's hold).
local TAKEN_FIELDS = {'day', 'box', 'mask', 'held'}
-- A closure of the room (the value of its id in the room's closures), joined by '|': first and
-- last calendar day number, hours [hstart, hend) (0 24: whole days), the reason staff gave.
local CLOSURE_FIELDS = {'first', 'last', 'hstart', 'hend', 'reason'}
-- The room's outbox entries: the kind, then its fields, joined by '|'.
local OUTBOX_CONFIRM = {'confirm', 'booking_id', 'owner'}
local OUTBOX_CANCEL = {'cancel', 'booking_id'}
local OUTBOX_FREED = {'freed', 'room', 'person', 'cls', 'day', 'hstart', 'hend', 'box', 'told'}
local OUTBOX_MOVED = {'moved', 'booking_id', 'sequence'}
-- A booking cancelled by its buyer's account deletion: the mail goes to the address they had
-- (the person is gone by the time it is sent); by: 'staff' when staff deleted the account,
-- else '' (the buyer did).
local OUTBOX_CANCEL_TO = {'cancel_to', 'booking_id', 'lang', 'name', 'address', 'by'}

-- A list's items by the names of `names` (same order): named({'a', 'b'}, {'x', 'y'}).x == 'a'.
local function named(values, names)
  local out = {}
  for i, name in ipairs(names) do
    out[name] = values[i]
  end
  return out
end

-- The values of `values` named by `names` (in that order), joined by `sep`:
-- joined({a = 1, b = 'x'}, {'a', 'b'}, '|') == '1|x'. A missing value is a bug, not ''.
local function joined(values, names, sep)
  local out = {}
  for i, name in ipairs(names) do
    out[i] = values[name]
    if out[i] == nil then
      error('no ' .. name)
    end
  end
  return table.concat(out, sep)
end

-- An outbox entry of `format` (OUTBOX_*: the kind, then the names of its fields).
local function outbox_entry(format, values)
  return format[1] .. '|' .. joined(values, {unpack(format, 2)}, '|')
end

-- A hash's field-value list in the order of `names`, for HSET.
local function field_values(values, names)
  local out = {}
  for _, name in ipairs(names) do
    out[#out + 1] = name
    out[#out + 1] = values[name]
    if values[name] == nil then
      error('no ' .. name)
    end
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

-- Bits one (room, day) holds per class: a month's bitmap is made at its full size at once
-- (an exact allocation, where growing bit by bit would over-allocate).
local SLOTS_PER_DAY = {A = 1, B = 24, C = 2400}

-- The months of a call's bitmaps: `keys` (the bitmap keys) and ARGV months, same order.
-- Returns a list of {key, month 'YYYY-MM', first (day number of the 1st), n (days)}, or nil
-- when they do not pair up or the months are not whole, distinct and in order.
local function calendar_of(keys, months_text)
  local specs, cal = split(months_text), {}
  if #specs == 0 or #specs ~= #keys then
    return nil
  end
  for i, spec in ipairs(specs) do
    local month, first, n = string.match(spec, '^(%d%d%d%d%-%d%d)/(%d+)/(%d+)$')
    first, n = tonumber(first), tonumber(n)
    if not month or type(keys[i]) ~= 'string' or n < 28 or n > 31
        or (i > 1 and first < cal[i - 1].first + cal[i - 1].n) then
      return nil
    end
    cal[i] = {key = keys[i], month = month, first = first, n = n}
  end
  return cal
end

-- The month of `cal` that holds calendar day `day` (nil: none of them).
local function month_at(cal, day)
  for _, m in ipairs(cal) do
    if day >= m.first and day < m.first + m.n then
      return m
    end
  end
  return nil
end

-- The fields a request covers: a list of {offset in its month's bitmap, mask, day, box, month
-- (an entry of `cal`)} and the BITFIELD type.
local function fields_of(cls, days, hstart, hend, boxes, cal)
  local fields = {}
  local mask = cls == 'A' and 1 or hour_mask(hstart, hend)
  for _, day in ipairs(days) do
    local m = month_at(cal, day)
    local d = day - m.first
    if cls == 'A' then
      fields[#fields + 1] = {d, 1, day, 0, m}
    elseif cls == 'B' then
      fields[#fields + 1] = {d * 24, mask, day, 0, m}
    else
      for _, box in ipairs(boxes) do
        fields[#fields + 1] = {(d * 100 + box - 1) * 24, mask, day, box, m}
      end
    end
  end
  return fields, cls == 'A' and 'u1' or 'u24'
end

-- The distinct integers of a csv, each within low..high and at most `limit` of them; nil if
-- any part is not such a number.
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

-- Whether a request reaches before the first bookable day (the day-ahead rule, checked here
-- too, after a call recognises a repeat of its own: Python read the request once, perhaps just
-- before midnight). Days are calendar day numbers, as the first day is.
local function before_first_day(days, first_day_text)
  local first_day = tonumber(first_day_text)
  for _, day in ipairs(days) do
    if not first_day or day < first_day then
      return true
    end
  end
  return false
end

-- The request of a call, checked whole before anything is read or written: a class other than
-- A/B/C, a day in none of the call's months, a duplicate, an hour range outside 0..24, a box outside
-- 1..100 (or any box on A/B, any hour on A) is refused. Python validates first; this guards the
-- bitmap against every other caller, because a stray offset would silently grow or corrupt it.
-- Returns cls, days, hstart, hend, boxes or nil, reason.
local function checked_request(cls, days_text, hstart_text, hend_text, boxes_text, cal)
  if cls ~= 'A' and cls ~= 'B' and cls ~= 'C' then
    return nil, 'class'
  end
  if not cal then
    return nil, 'months'
  end
  local days = integers(days_text, 0, 999999, 366)
  if not days or #days == 0 then
    return nil, 'days'
  end
  for _, day in ipairs(days) do
    if not month_at(cal, day) then
      return nil, 'days'
    end
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

-- A hold ends on a whole minute, the first at or after `ms`: its holder is shown the minute it
-- ends in (never later than it does) and everyone else the minute it is over by (never
-- earlier), and only on a whole minute are those the same minute.
local function minute_end(ms)
  return math.ceil(ms / 60000) * 60000
end

-- When a hold of `ttl` ms from `from` on calendar day `day` (its first) ends: on a whole
-- minute, and never after that day begins, since from its midnight it can no longer be booked
-- (a hold running on past it was shown, "Book" refused). `starts`: ARGV day_starts split, the
-- starts (ms) of the first bookable day (`first_day`) and of the next ones that begin before
-- such a hold could end; a day not among them begins later. A midnight is a whole minute.
local function hold_end(from, ttl, day, first_day, starts)
  local ends = minute_end(from + ttl)
  local start = tonumber(starts[day - first_day + 1] or '')
  if start and start < ends then
    return start
  end
  return ends
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

-- The score of a held day in the hold-days index: class digit * 100000 + calendar day number
-- (day numbers stay below 100000 until the year 2243).
local CLASS_DIGIT = {A = 1, B = 2, C = 3}

local function day_score(cls, day)
  return CLASS_DIGIT[cls] * 100000 + day
end

local function audit(stream, maxlen, kind, actor, booking, room, detail, now)
  redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'kind', kind, 'actor', actor,
    'booking', booking, 'room', room, 'detail', detail, 'at', now)
end

-- Adds `member` at `score` to the sorted set `key`, which keeps at most `limit` members, once
-- those scored up to `stale` (a score bound: '(' before it leaves that score out) are dropped.
-- Returns 'added', 'already' (a member before) or 'full' (nothing added).
local function bounded_add(key, stale, member, score, limit)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', stale)
  if redis.call('ZSCORE', key, member) then
    return 'already'
  end
  if redis.call('ZCARD', key) >= limit then
    return 'full'
  end
  redis.call('ZADD', key, score, member)
  return 'added'
end

local function append(list, more)
  for _, item in ipairs(more) do
    list[#list + 1] = item
  end
  return list
end

-- The buyer's hourly booking allowance (their pace: a sorted set of bookings by time): nil
-- while they may book, else the ms when they may again. No pace key: not checked here.
local function pace_spent_until(pace, limit, window, now)
  if not pace then
    return nil
  end
  local since = '(' .. tostring(now - window)
  if redis.call('ZCOUNT', pace, since, '+inf') < limit then
    return nil
  end
  local oldest = redis.call('ZRANGEBYSCORE', pace, since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  return tostring(tonumber(oldest[2]) + window)
end

-- The reason of a closure of the room that covers a slot of the request ('' when none does): a
-- closed day closes class A whole, and classes B and C for the closure's hours.
local function closed_reason(closures_key, cls, days, hstart, hend)
  local values = redis.call('HVALS', closures_key)
  for _, value in ipairs(values) do
    local c = named(pipe_fields(value), CLOSURE_FIELDS)
    local first, last = tonumber(c.first), tonumber(c.last)
    local from, to = tonumber(c.hstart) or 0, tonumber(c.hend) or 24
    if cls == 'A' or (hstart < to and from < hend) then
      for _, day in ipairs(days) do
        if first and last and day >= first and day <= last then
          return c.reason ~= '' and c.reason or '-'
        end
      end
    end
  end
  return ''
end
