-- The rooms' stats counters, kept exact by every function that changes a booking or a slot.

-- The room's stats hash (same tag as its slots, so counted in the same atomic call):
--   v                          STATS_VERSION once the hash is exact (a claim into an empty
--                              room, or booking_stats_rebuild)
--   slots:<month>:<cls>        booked bits per day of a calendar month (7 digits a day, the
--                              1st first)
--   active:<month>:<cls>       confirmed + collected bookings per day of the month, same shape
--   status:<month>:<cls>:<st>  bookings of status st (confirmed, collected, cancelled) whose
--                              first day is in the month
--   made:<month>:<cls>:<date>  of those, the confirmed + collected ones created on that date
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

-- A per-day field is one 7-digit decimal number per day of its month, the 1st first ("0000003" +
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
-- claim touches one day or a few of a whole month's text). Canonical: no trailing zero days,
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

-- Per-day deltas ({month name -> {day of the month from 0 -> n}}) added to the per-day
-- fields `kind`:<month>:`cls`, months in order.
local function bump_months(change, kind, cls, by_month)
  local names = {}
  for name in pairs(by_month) do
    names[#names + 1] = name
  end
  table.sort(names)
  for _, name in ipairs(names) do
    bump_days(change, kind .. ':' .. name .. ':' .. cls, by_month[name])
  end
end

-- A record's months for counting only (its bitmaps are not touched): from its 'inv' and
-- 'months' fields.
local function record_months(inv_text, months_text)
  return calendar_of(split(inv_text), months_text)
end

-- What one booking adds (sign 1) or takes away (sign -1): its status (counted in the month of
-- its first day), and while it is active (not cancelled) one per booked day and one on its
-- creation date. `cal`: the booking's months (calendar_of).
local function stats_booking(change, cal, cls, days, status, made, sign)
  local first = days[1]
  for _, day in ipairs(days) do
    first = math.min(first, day)
  end
  local first_month = month_at(cal, first).month
  bump(change, 'status:' .. first_month .. ':' .. cls .. ':' .. status, sign)
  if status == 'cancelled' then
    return
  end
  local deltas = {}
  for _, day in ipairs(days) do
    local m = month_at(cal, day)
    deltas[m.month] = deltas[m.month] or {}
    deltas[m.month][day - m.first] = sign
  end
  bump_months(change, 'active', cls, deltas)
  if made and made ~= '' then
    bump(change, 'made:' .. first_month .. ':' .. cls .. ':' .. made, sign)
  end
end

-- The bits a write changed, per day: after - before, summed over the fields of each day.
local function stats_slots(change, cls, fields, before, after)
  local deltas = {}
  for i, field in ipairs(fields) do
    local m = field[5]
    local into = deltas[m.month] or {}
    deltas[m.month] = into
    local d = field[3] - m.first
    into[d] = (into[d] or 0) + popcount(after[i]) - popcount(before[i])
  end
  bump_months(change, 'slots', cls, deltas)
end
