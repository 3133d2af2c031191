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
-- The fields of a booking record as the claim writes them (cancel and pickup add theirs).
local RECORD_FIELDS = {'id', 'owner', 'cls', 'room', 'season', 'days', 'dates', 'hstart',
  'hend', 'boxes', 'created', 'status', 'code_mac', 'code_n', 'collected', 'inv', 'made', 'ref'}
-- A wait (a member of the room's waits), joined by '|' (A: hours 0 0 and box 0; B: box 0).
local WAIT_FIELDS = {'person', 'cls', 'day', 'hstart', 'hend', 'box'}
-- A told wait's notice (the value of its member in wait-notices), joined by '|'.
local NOTICE_FIELDS = {'told', 'hold_id', 'expiry', 'room'}
-- A slot a claim or a hold found taken, joined by ':' (held: 1 for another buyer's hold).
local TAKEN_FIELDS = {'day', 'box', 'mask', 'held'}
-- The room's outbox entries: the kind, then its fields, joined by '|'.
local OUTBOX_CONFIRM = {'confirm', 'booking_id', 'owner'}
local OUTBOX_CANCEL = {'cancel', 'booking_id'}
local OUTBOX_FREED = {'freed', 'room', 'person', 'cls', 'day', 'hstart', 'hend', 'box', 'told'}
local OUTBOX_MOVED = {'moved', 'booking_id', 'sequence'}

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

-- Whether a request reaches before the first bookable season day (the day-ahead rule, checked
-- here last: Python read the request once, perhaps just before midnight).
local function before_first_day(days, first_day_text)
  local first_day = tonumber(first_day_text)
  for _, day in ipairs(days) do
    if not first_day or day < first_day then
      return true
    end
  end
  return false
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

-- Booked slots that overlap the request: "day:box:mask:0" entries, plus the current values.
local function booked_conflicts(inv_key, fields, kind)
  local values = read_fields(inv_key, fields, kind)
  local conflicts = {}
  for i, field in ipairs(fields) do
    local overlap = bit.band(values[i], field[2])
    if overlap ~= 0 then
      conflicts[#conflicts + 1] = joined({day = field[3], box = field[4], mask = overlap,
        held = 0}, TAKEN_FIELDS, ':')
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
