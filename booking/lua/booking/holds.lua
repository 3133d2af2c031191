-- Holds: a buyer's slots kept for a few minutes (booking_hold, booking_hold_release), and the
-- look-up of other buyers' holds that every taking function checks.

local HOLD_KEYS = {'holds', 'audit', 'hold_days', 'hold_streaks', 'gone', 'closures',
  'edition', 'waits'}
local HOLD_ARGS = {'owner', 'cls', 'days', 'hstart', 'hend', 'boxes', 'hold_id', 'now_ms',
  'ttl_ms', 'audit_maxlen', 'room', 'months', 'pace_limit', 'pace_window_ms', 'first_day',
  'day_starts'}
local HOLD_REPLIES = {'ok expiry', 'taken *slots', 'cooling until', 'paced until', 'id_in_use',
  'gone', 'closed reason', 'waited', 'invalid what'}
-- After the named KEYS: the inventory of each month of the request, then the buyer's pace
-- (with an allowance, one server only).
local HOLD_KEY_TAILS = {'inventories', 'pace'}
local HOLD_RELEASE_KEYS = {'holds', 'hold_days', 'edition', 'wait_notices'}
local HOLD_RELEASE_ARGS = {'hold_id', 'owner'}

-- Whether every slot of `hold` is one of the request's (days, hours, boxes as sets).
local function hold_within(hold, my_days, my_boxes, hstart, hend)
  if hold.cls ~= 'A' and (hold.hstart < hstart or hold.hend > hend) then
    return false
  end
  for _, day in ipairs(hold.days) do
    if not my_days[day] then
      return false
    end
  end
  for _, box in ipairs(hold.boxes) do
    if not my_boxes[box] then
      return false
    end
  end
  return true
end

-- Holds that touch the request's days (found through the hold-days index: one ZRANGEBYSCORE a
-- day, never every hold of the room). Returns the slots of other buyers' unexpired holds that
-- overlap the request ("day:box:mask:1" entries), the holds to drop on a successful write
-- ({id = value}: expired ones, and index entries whose hold is gone, as value false), and the
-- owner's own holds whose every slot the request takes ({id = value}: useless once it is
-- booked; a priority hold among them then stops counting toward the owner's cap).
local function held_conflicts(holds_key, days_key, owner, cls, days, hstart, hend, boxes, now)
  local conflicts, drop, covered = {}, {}, {}
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
    return conflicts, drop, covered
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
      elseif hold.owner == owner and hold.cls == cls then
        if hold_within(hold, my_days, my_boxes, hstart, hend) then
          covered[id] = value
        end
      elseif hold.cls == cls then
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
                    conflicts[#conflicts + 1] = joined({day = day, box = box, mask = mask,
                      held = 1}, TAKEN_FIELDS, ':')
                  end
                end
              else
                conflicts[#conflicts + 1] = joined({day = day, box = 0, mask = mask,
                  held = 1}, TAKEN_FIELDS, ':')
              end
            end
          end
        end
      end
    end
  end
  return conflicts, drop, covered
end

-- What a booking of the request (a claim, a move) meets of holds: other buyers' unexpired holds
-- of its slots go on `taken`; returns the holds to drop once it is made (held_conflicts' drop,
-- with the owner's own holds that it covers).
local function holds_met(taken, holds_key, days_key, owner, cls, days, hstart, hend, boxes, now)
  local held, drop, covered = held_conflicts(holds_key, days_key, owner, cls, days, hstart,
    hend, boxes, now)
  for id, value in pairs(covered) do
    drop[id] = value
  end
  append(taken, held)
  return drop
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

-- Whether another buyer waits for a slot of the request whose whole slot is free now (days:
-- calendar day numbers; boxes: class C's; k: the hold's keys; cal: its months). Such a wait's
-- slot was freed by a hold that ran out (a cancel tells its waiters in the same call): the
-- sweep, which offers a slot once the whole of it is free, gives it to them within seconds,
-- and until then it is not the first asker's, or two accounts could pass a room between them,
-- one hold after the other, and keep it from everyone who asked for it. A wait whose slot is
-- still partly booked or held keeps nothing from anyone.
local function waited_by_others(k, owner, cls, days, hstart, hend, boxes, cal, now)
  if redis.call('EXISTS', k.waits) == 0 then
    return false  -- nobody waits in this room: the common case costs one call
  end
  local on_day, in_boxes = {}, {}
  for _, day in ipairs(days) do on_day[day] = true end
  for _, box in ipairs(boxes) do in_boxes[box] = true end
  for _, member in ipairs(redis.call('ZRANGE', k.waits, 0, -1)) do
    local w = named(pipe_fields(member), WAIT_FIELDS)
    local day = tonumber(w.day)
    if w.person ~= owner and w.cls == cls and on_day[day] then
      local from, to = tonumber(w.hstart) or 0, tonumber(w.hend) or 0
      if cls == 'A' or (from < hend and hstart < to
          and (cls == 'B' or in_boxes[tonumber(w.box)])) then
        local w_boxes = cls == 'C' and {tonumber(w.box)} or {}
        local fields, kind = fields_of(cls, {day}, from, to, w_boxes, cal)
        local held = held_conflicts(k.holds, k.hold_days, w.person, cls, {day}, from, to,
          w_boxes, now)
        if #booked_conflicts(fields, kind) == 0 and #held == 0
            and closed_reason(k.closures, cls, {day}, from, to) == '' then
          return true
        end
      end
    end
  end
  return false
end

-- Hold: keep the request's slots for one buyer until expiry (other buyers see them taken).
-- KEYS: holds, audit, hold days, hold streaks, gone (people being deleted), closures, edition,
--       waits, then the inventory of each month of the request
-- ARGV: owner, cls, days, hstart, hend, boxes, hold id, now ms, ttl ms, audit maxlen, room,
--       months (of the inventory keys, same order), the buyer's hourly booking allowance and
--       its window (0 and 0: not checked here); with an allowance, the KEYS end with the
--       buyer's pace (one server only: on a cluster the caller reads it first, in the buyer's
--       own slot), first bookable day, the starts of the days a hold may reach (hold_end)
-- Returns {'ok', expiry ms} | {'taken', ...} | {'cooling', until ms} | {'id_in_use'} |
--   {'paced', ms when the buyer may book again} | {'gone'} | {'waited'} (another buyer waits
--   for a slot of it: theirs first) | {'invalid', what}
local function hold(keys, args)
  local k, a = named(keys, HOLD_KEYS), named(args, HOLD_ARGS)
  local holds, stream, hold_days = k.holds, k.audit, k.hold_days
  local owner, id, now, ttl = a.owner, a.hold_id, tonumber(a.now_ms), tonumber(a.ttl_ms)
  local maxlen, room = a.audit_maxlen, a.room
  local n_months = #split(a.months)
  local cal = calendar_of({unpack(keys, #HOLD_KEYS + 1, #HOLD_KEYS + n_months)}, a.months)
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.days, a.hstart, a.hend,
    a.boxes, cal)
  if not cls then
    return {'invalid', days}
  end
  local tail = named({unpack(keys, #HOLD_KEYS + n_months + 1)}, {unpack(HOLD_KEY_TAILS, 2)})
  local pace, pace_limit, pace_window = tail.pace, tonumber(a.pace_limit),
    tonumber(a.pace_window_ms)
  if owner == '' or id == '' or not now or not ttl or ttl < 1 or not hold_days
      or not k.hold_streaks or not k.gone or not k.waits or not pace_limit or not pace_window
      or (pace ~= nil) ~= (pace_limit > 0) then
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
  if before_first_day(days, a.first_day) then  -- after the repeat, as a claim's
    return {'invalid', 'first_day'}
  end
  if redis.call('ZSCORE', k.gone, owner) then
    return {'gone'}
  end
  local closed = closed_reason(k.closures, cls, days, hstart, hend)
  if closed ~= '' then
    return {'closed', closed}
  end
  -- A buyer who may not book for a while may not block slots meanwhile either.
  local paced_until = pace_spent_until(pace, pace_limit, pace_window, now)
  if paced_until then
    return {'paced', paced_until}
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
  local fields, kind = fields_of(cls, days, hstart, hend, boxes, cal)
  local taken = booked_conflicts(fields, kind)
  local held, drop = held_conflicts(holds, hold_days, owner, cls, days, hstart, hend, boxes,
    now)
  append(taken, held)
  if #taken > 0 then
    return {'taken', unpack(taken)}
  end
  if waited_by_others(k, owner, cls, days, hstart, hend, boxes, cal, now) then
    return {'waited'}
  end

  edition_bump(k.edition)
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
  local expiry = hold_end(began, ttl, math.min(unpack(days)), tonumber(a.first_day),
    split(a.day_starts))
  local stored = {expiry = expiry, owner = owner, cls = cls, days = a.days, hstart = hstart,
    hend = hend, boxes = a.boxes}
  local value = joined(stored, HOLD_FIELDS, '|')
  redis.call('HSET', holds, id, value)
  local members = {}
  for _, day in ipairs(days) do
    members[#members + 1] = day_score(cls, day)
    members[#members + 1] = id .. '/' .. day
  end
  redis.call('ZADD', hold_days, unpack(members))
  -- Both keys live as long as their longest hold (they are always written together).
  local keep = math.max(ttl, expiry - now)
  if redis.call('PTTL', holds) < keep then
    redis.call('PEXPIRE', holds, keep)
    redis.call('PEXPIRE', hold_days, keep)
  end
  audit(stream, maxlen, 'hold', owner, id, room, cls, now)
  return {'ok', tostring(expiry)}
end

-- A hold given back that the waiting list had placed (a priority hold) is everyone's now: the
-- notices that offered it, and those that told the other waiters until when it was someone's
-- (written with its end by the same call), no longer say otherwise.
local function notices_opened(notices, hold_id, ends)
  local flat = redis.call('HGETALL', notices)
  for i = 1, #flat, 2 do
    local told = named(pipe_fields(flat[i + 1]), NOTICE_FIELDS)
    if told.hold_id == hold_id or (told.hold_id == '' and told.expiry == ends) then
      told.hold_id, told.expiry = '', ''
      redis.call('HSET', notices, flat[i], joined(told, NOTICE_FIELDS, '|'))
    end
  end
end

-- Release a hold of its owner, or a priority hold still pending for them (idempotent).
-- KEYS: holds, hold days, edition, wait notices. ARGV: hold id, owner. Returns 1 | 0.
local function hold_release(keys, args)
  local k, a = named(keys, HOLD_RELEASE_KEYS), named(args, HOLD_RELEASE_ARGS)
  local value = redis.call('HGET', k.holds, a.hold_id)
  local hold = value and parse_hold(value)
  if hold and (hold.owner == a.owner or hold.owner == PRIORITY_PENDING .. a.owner) then
    edition_bump(k.edition)
    drop_holds(k.holds, k.hold_days, {[a.hold_id] = value})
    if k.wait_notices then  -- (a caller of the release before it named the notices)
      notices_opened(k.wait_notices, a.hold_id, tostring(hold.expiry))
    end
    return 1
  end
  return 0
end

redis.register_function{function_name = 'booking_hold', callback = hold}
redis.register_function{function_name = 'booking_hold_release', callback = hold_release}
