-- The waiting list: joining it (booking_wait), the sweep (booking_waits_check), and telling
-- waiters when slots free.

local WAIT_KEYS = {'waits', 'holds', 'hold_days', 'gone', 'closures', 'edition'}
local WAIT_ARGS = {'person', 'cls', 'day', 'hstart', 'hend', 'box', 'now_ms', 'limit',
  'months', 'first_day'}
local WAIT_REPLIES = {'ok', 'free', 'limit', 'gone', 'closed reason', 'invalid what'}
local WAIT_RESERVE_KEYS = {'index'}
local WAIT_RESERVE_ARGS = {'entry', 'score', 'trim_before', 'limit'}
local WAIT_RESERVE_REPLIES = {'reserved', 'already', 'limit', 'invalid what'}
local PRIORITY_KEEP_KEYS = {'priority'}
local PRIORITY_KEEP_ARGS = {'hold_id', 'expires_ms', 'now_ms', 'limit'}
local PRIORITY_KEEP_REPLIES = {'kept', 'over', 'invalid what'}
local PRIORITY_SETTLE_KEYS = {'holds', 'hold_days', 'wait_notices', 'edition'}
local PRIORITY_SETTLE_ARGS = {'hold_id', 'person', 'kept', 'now_ms'}
local PRIORITY_SETTLE_REPLIES = {'granted expiry', 'released', 'gone', 'invalid what'}
-- A grant ends this long after its hold by the clock of the call that trims it: app servers'
-- clocks may differ a little, and a grant must outlive its hold by every one of them.
local PRIORITY_CLOCK_MARGIN_MS = 5000
local WAITS_CHECK_KEYS = {'waits', 'wait_notices', 'holds', 'outbox', 'hold_days', 'edition',
  'closures'}
local WAITS_CHECK_ARGS = {'now_ms', 'first_day', 'priority_hold_id', 'priority_hold_ms', 'room',
  'months', 'day_starts'}
local WAITS_CHECK_REPLY = {'told', 'left'}

-- --- The waiting list --------------------------------------------------------------------------
-- A wait is one sold-out slot a buyer asked about (a WAIT_FIELDS member; its day is the
-- calendar day number), scored by when they asked. When a slot frees (a cancel, or an expired
-- hold found by the sweep), the waiters whose whole slot is free are told in that order: a
-- notice (NOTICE_FIELDS, in wait-notices) and a mail (OUTBOX_FREED in the room's outbox). The
-- first of them gets a priority hold on their slot for a few minutes; the others are told that
-- it opens to everyone after. The priority hold is placed pending (PRIORITY_PENDING): nobody may
-- use it until the buyer's own slot grants it (booking_priority_keep, at most a few per buyer)
-- and booking_priority_settle makes it theirs, or gives it back to everyone.

local function parse_wait(member)
  local p = named(pipe_fields(member), WAIT_FIELDS)
  return {person = p.person, cls = p.cls, day = tonumber(p.day),
    hstart = tonumber(p.hstart) or 0, hend = tonumber(p.hend) or 0, box = tonumber(p.box) or 0}
end

local function wait_boxes(w)
  if w.cls == 'C' then
    return {w.box}
  end
  return {}
end

-- Whether a wait's slot is free now: no booked bit, no unexpired hold of someone else. `cal`:
-- the months of the class's bitmaps at hand (a wait on a day outside them is left waiting).
local function wait_free(w, cal, holds, hold_days, now)
  if not month_at(cal, w.day) then
    return false
  end
  local boxes = wait_boxes(w)
  local fields, kind = fields_of(w.cls, {w.day}, w.hstart, w.hend, boxes, cal)
  if #booked_conflicts(fields, kind) > 0 then
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
  return #gone + #old
end

-- Whether two waits name a slot in common.
local function waits_overlap(a, b)
  if a.cls ~= b.cls or a.day ~= b.day then
    return false
  end
  if a.cls == 'A' then
    return true
  end
  if a.hstart >= b.hend or b.hstart >= a.hend then
    return false
  end
  return a.cls ~= 'C' or a.box == b.box
end

-- Tell the waiters whose slot is free now (see above). cal_of: class -> the months of its
-- bitmaps at hand (calendar_of; waits of other classes and other months are left alone).
-- hold_id: a client-made hold id of this room for the first waiter ('' for none); closures:
-- the room's closures key (a closed slot is not offered); first_day, day_starts: the first
-- bookable day and the starts of the days a priority hold may reach (hold_end, its cap).
-- Returns the number told.
local function waits_release(waits, notices, holds, hold_days, outbox, cal_of, now, hold_id,
    hold_ttl, room, closures, first_day, day_starts)
  -- Which slots are free is decided before the priority hold is placed: the waiters after the
  -- first are told too (without the hold), not kept waiting by it.
  local free = {}
  for _, member in ipairs(redis.call('ZRANGE', waits, 0, -1)) do
    local w = parse_wait(member)
    local cal = cal_of[w.cls]
    -- A slot staff closed is not free, however it was freed (closing with "cancel them").
    if cal and w.day and wait_free(w, cal, holds, hold_days, now)
        and closed_reason(closures, w.cls, {w.day}, w.hstart, w.hend) == '' then
      free[#free + 1] = {member, w}
    end
  end
  local priority_expiry, first = '', nil
  for i, item in ipairs(free) do
    local member, w = item[1], item[2]
    -- Later waiters of a slot the first one's priority hold covers learn until when it does;
    -- the others' slots (another day, other hours or boxes freed by the same call) are open.
    local hold_value, expiry = '', ''
    if first and waits_overlap(first, w) then
      expiry = priority_expiry
    end
    if i == 1 and hold_id ~= '' then
      expiry = hold_end(now, hold_ttl, w.day, first_day, day_starts)
      priority_expiry, first = expiry, w
      hold_value = hold_id
      redis.call('HSET', holds, hold_id, joined({expiry = expiry,
        owner = PRIORITY_PENDING .. w.person,
        cls = w.cls, days = w.day, hstart = w.hstart, hend = w.hend,
        boxes = table.concat(wait_boxes(w), ',')}, HOLD_FIELDS, '|'))
      redis.call('ZADD', hold_days, day_score(w.cls, w.day), hold_id .. '/' .. w.day)
      if redis.call('PTTL', holds) < expiry - now then
        redis.call('PEXPIRE', holds, expiry - now)
        redis.call('PEXPIRE', hold_days, expiry - now)
      end
    end
    redis.call('HSET', notices, member, joined({told = now, hold_id = hold_value,
      expiry = expiry, room = room}, NOTICE_FIELDS, '|'))
    redis.call('ZREM', waits, member)
    local freed = named(pipe_fields(member), WAIT_FIELDS)
    freed.room, freed.told = room, now
    redis.call('XADD', outbox, '*', 'm', outbox_entry(OUTBOX_FREED, freed))
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
        members[#members + 1] = joined({person = owner, cls = cls, day = day,
          hstart = hstart, hend = hend, box = box}, WAIT_FIELDS, '|')
      end
    else
      members[#members + 1] = joined({person = owner, cls = cls, day = day, hstart = hstart,
        hend = hend, box = 0}, WAIT_FIELDS, '|')
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

-- Wait for a sold-out slot (see the waiting list above).
-- KEYS: waits, holds, hold days, gone (people being deleted), closures, edition, then the
--       inventory of the class for the day's month
-- ARGV: person, cls, day, hstart, hend, box (0 for A/B), now ms, waits per buyer in the room,
--       month (of the inventory key), first bookable day
-- Returns {'ok'} (also when already waiting) | {'free'} | {'limit'} | {'gone'} |
--   {'closed', reason} | {'invalid', what}
local function wait(keys, args)
  local k, a = named(keys, WAIT_KEYS), named(args, WAIT_ARGS)
  local waits, holds = k.waits, k.holds
  local cal = calendar_of({unpack(keys, #WAIT_KEYS + 1)}, a.months)
  local person, now, limit = a.person, tonumber(a.now_ms), tonumber(a.limit)
  local box_text = a.box
  if box_text == '0' then
    box_text = ''
  end
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.day, a.hstart, a.hend,
    box_text, cal)
  if not cls then
    return {'invalid', days}
  end
  if person == '' or string.find(person, '|', 1, true) or not now or not limit or #days ~= 1
      or #boxes > 1 or days[1] < (tonumber(a.first_day) or 0) or not k.gone then
    return {'invalid', 'call'}
  end
  if redis.call('ZSCORE', k.gone, person) then
    return {'gone'}
  end
  local member = joined({person = person, cls = cls, day = days[1], hstart = hstart,
    hend = hend, box = boxes[1] or 0}, WAIT_FIELDS, '|')
  if redis.call('ZSCORE', waits, member) then
    return {'ok'}
  end
  local closed = closed_reason(k.closures, cls, days, hstart, hend)
  if closed ~= '' then
    return {'closed', closed}
  end
  local w = parse_wait(member)
  if wait_free(w, cal, holds, k.hold_days, now) then
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
  edition_bump(k.edition)
  redis.call('ZADD', waits, now, member)
  return {'ok'}
end

-- A place on the buyer's own list of waits (in the buyer's slot), taken before the room's wait
-- is asked for and given back by the caller if that is refused: the buyer's bound holds however
-- many waits they ask for at once, in whichever rooms (a cluster keeps the rooms and the buyer
-- apart, so one call cannot see both).
-- KEYS: the buyer's index of waits
-- ARGV: entry ('<room>|<wait>'), score (the start of its day, ms), the start of the first day
--       still bookable (ms: entries before it are dropped first), waits per buyer
-- Returns {'reserved'} | {'already'} (the entry is on the list) | {'limit'} | {'invalid', what}
local function wait_reserve(keys, args)
  local k, a = named(keys, WAIT_RESERVE_KEYS), named(args, WAIT_RESERVE_ARGS)
  local score, before, limit = tonumber(a.score), tonumber(a.trim_before), tonumber(a.limit)
  if not k.index or not a.entry or a.entry == '' or not score or not before or not limit then
    return {'invalid', 'call'}
  end
  local outcome = bounded_add(k.index, '(' .. tostring(before), a.entry, score, limit)
  if outcome == 'full' then
    return {'limit'}
  elseif outcome == 'already' then
    return {'already'}
  end
  return {'reserved'}
end

-- The grant of a priority hold the waiting list placed pending for a buyer: at most `limit`
-- live at once (in the buyer's own slot, one call decides, so two rooms freeing at once cannot
-- both pass). Only a granted hold is made usable (booking_priority_settle, next); one over the
-- limit is given back by it, the slot open to everyone.
-- KEYS: the buyer's priority holds (hold id scored by its end)
-- ARGV: hold id, its end (ms), now (ms), priority holds per buyer
-- Returns {'kept'} (also when kept before) | {'over'} | {'invalid', what}
local function priority_keep(keys, args)
  local k, a = named(keys, PRIORITY_KEEP_KEYS), named(args, PRIORITY_KEEP_ARGS)
  local ends, now, limit = tonumber(a.expires_ms), tonumber(a.now_ms), tonumber(a.limit)
  if not k.priority or not a.hold_id or a.hold_id == '' or not ends or not now or not limit then
    return {'invalid', 'call'}
  end
  local outcome = bounded_add(k.priority, now - PRIORITY_CLOCK_MARGIN_MS, a.hold_id, ends, limit)
  if outcome == 'full' then
    return {'over'}
  end
  if outcome == 'added' then
    -- Priority holds all last as long: the newest ends last (a minute's margin for the clocks).
    redis.call('PEXPIRE', k.priority, math.max(ends - now, 0) + 60000)
  end
  return {'kept'}
end

-- Settle a priority hold placed pending for `person` once their own slot answered
-- (booking_priority_keep): granted (kept 1), it becomes theirs and usable from now on; not
-- (kept 0), it goes, the slot is everyone's, and the notices no longer say otherwise. A hold
-- already theirs answers 'granted' again (a retry); one that ended, was given back or is not
-- theirs answers 'gone'.
-- KEYS: holds, hold days, wait notices, edition. ARGV: hold id, person, kept (1|0), now (ms)
-- Returns {'granted', expiry ms} | {'released'} | {'gone'} | {'invalid', what}
local function priority_settle(keys, args)
  local k, a = named(keys, PRIORITY_SETTLE_KEYS), named(args, PRIORITY_SETTLE_ARGS)
  local now, person = tonumber(a.now_ms), a.person
  if not k.wait_notices or not k.edition or not a.hold_id or a.hold_id == '' or not person
      or person == '' or not now or (a.kept ~= '1' and a.kept ~= '0') then
    return {'invalid', 'call'}
  end
  local value = redis.call('HGET', k.holds, a.hold_id)
  local hold = value and parse_hold(value)
  if not hold or hold.expiry <= now
      or (hold.owner ~= person and hold.owner ~= PRIORITY_PENDING .. person) then
    return {'gone'}
  end
  if a.kept == '1' then
    if hold.owner ~= person then
      edition_bump(k.edition)
      local stored = named(pipe_fields(value), HOLD_FIELDS)
      stored.owner = person
      redis.call('HSET', k.holds, a.hold_id, joined(stored, HOLD_FIELDS, '|'))
    end
    return {'granted', tostring(hold.expiry)}
  end
  edition_bump(k.edition)
  drop_holds(k.holds, k.hold_days, {[a.hold_id] = value})
  notices_opened(k.wait_notices, a.hold_id, tostring(hold.expiry))
  return {'released'}
end

-- The sweep: tell the waiters of slots that freed without a cancel (an expired hold), and clear
-- what the day's end made useless.
-- KEYS: waits, wait-notices, holds, outbox, hold days, edition, then the inventories of the
--       months ARGV months names: class A's, then B's, then C's
-- ARGV: now ms, first bookable day, priority hold id, priority hold ms, room, months, the
--       starts of the days a priority hold may reach (hold_end)
-- Returns {told, waits and notices left}
local function waits_check(keys, args)
  local k, a = named(keys, WAITS_CHECK_KEYS), named(args, WAITS_CHECK_ARGS)
  local waits, notices, holds, outbox = k.waits, k.wait_notices, k.holds, k.outbox
  local now, first_day, hold_ttl =
    tonumber(a.now_ms), tonumber(a.first_day), tonumber(a.priority_hold_ms)
  local n = #split(a.months)
  if not now or not first_day or not hold_ttl or #keys ~= #WAITS_CHECK_KEYS + 3 * n
      or not k.edition or not k.closures then
    return {'invalid', 'call'}
  end
  local cal_of = {}
  if n > 0 then
    for i, cls in ipairs({'A', 'B', 'C'}) do
      local first = #WAITS_CHECK_KEYS + (i - 1) * n + 1
      cal_of[cls] = calendar_of({unpack(keys, first, first + n - 1)}, a.months)
      if not cal_of[cls] then
        return {'invalid', 'months'}
      end
    end
  end
  local cleared = waits_clear_stale(waits, notices, first_day)
  local told = waits_release(waits, notices, holds, k.hold_days, outbox, cal_of, now,
    a.priority_hold_id, hold_ttl, a.room, k.closures, first_day, split(a.day_starts))
  if cleared + told > 0 then
    edition_bump(k.edition)  -- after the writes: only a sweep that changed the room bumps
  end
  return {told, redis.call('ZCARD', waits) + redis.call('HLEN', notices)}
end

redis.register_function{function_name = 'booking_wait', callback = wait}
redis.register_function{function_name = 'booking_wait_reserve', callback = wait_reserve}
redis.register_function{function_name = 'booking_priority_keep', callback = priority_keep}
redis.register_function{function_name = 'booking_priority_settle', callback = priority_settle}
redis.register_function{function_name = 'booking_waits_check', callback = waits_check}
