-- Moving a booking within its room: booking_move takes the new slots and gives the old back in
-- one call, so nobody can take the old slots before the new are secured and the booking never
-- ends with both or neither. (Across rooms, see move_rooms.lua.)

local MOVE_KEYS = {'record', 'registry', 'codes', 'holds', 'hold_days', 'audit',
  'stats', 'outbox', 'waits', 'wait_notices', 'unindexed', 'closures', 'edition'}
local MOVE_ARGS = {'actor', 'is_staff', 'today', 'cls', 'days', 'hstart', 'hend', 'boxes',
  'dates', 'months', 'code_mac', 'code_n', 'move_id', 'now_ms', 'audit_maxlen', 'room',
  'person_score', 'date_scores', 'first_day', 'priority_hold_id', 'priority_hold_ms',
  'day_starts'}
local MOVE_REPLIES = {'moved record', 'taken *slots', 'not_found', 'forbidden', 'cancelled',
  'moved_away', 'collected', 'started', 'unchanged', 'code_clash', 'closed reason',
  'invalid what'}
-- After the named KEYS: the bitmaps of the months of the old and the new days (as many as ARGV
-- months names), then the indexes (one server).
local MOVE_KEY_TAILS = {'inventories', 'person_index', 'date_index'}

-- Whether a confirmed booking (HMGET of owner, status, collected, dates) may be moved or
-- given up by `actor` today: nil if so, else the refusal (a reply). The cancellation cut-off:
-- before its first day, for the owner and for staff acting for them alike.
local function move_refusal(r, actor, is_staff, today)
  if actor ~= r[1] and not is_staff then
    return {'forbidden'}
  end
  if r[2] == 'cancelled' then
    return {'cancelled'}
  end
  if r[2] == 'moved' then
    return {'moved_away'}  -- another move of it won (another tab, or staff)
  end
  if r[2] ~= 'confirmed' and r[2] ~= 'collected' then
    return {'not_found'}  -- a move's new slots not yet its own ('pending'): nobody's to move
  end
  if r[2] == 'collected' then
    return {'collected'}
  end
  -- A day collected is a day come: the booking has started (not "collected": its later days
  -- are not), as a cancel says.
  if (r[3] and r[3] ~= '') or today >= split(r[4])[1] then
    return {'started'}
  end
  return nil
end

-- The fields of two requests, merged by bitmap and offset: {offset, old mask, day, box, month,
-- new mask} (offset, day, box and month where fields_of has them, for read_fields and
-- stats_slots).
local function merged_fields(old_fields, new_fields)
  local by_place, order = {}, {}
  local function add(field, which)
    local place = field[5].key .. '@' .. field[1]
    local entry = by_place[place]
    if not entry then
      entry = {field[1], 0, field[3], field[4], field[5], 0}
      by_place[place] = entry
      order[#order + 1] = entry
    end
    entry[which] = field[2]
  end
  for _, field in ipairs(old_fields) do
    add(field, 2)
  end
  for _, field in ipairs(new_fields) do
    add(field, 6)
  end
  return order
end

-- Move: the booking's slots become the request's (same class, same room, as many days), with
-- a new pickup code; the old slots are free for the waiting list.
-- KEYS: record, registry, codes, holds, hold days, audit, stats, outbox, waits,
--       wait notices, unindexed, closures, edition, then the bitmaps of the months of the old and new days, then
--       the person index and the date index (one server) or nothing (a cluster: the id goes
--       to `unindexed`)
-- ARGV: actor, is staff (1|0), today ISO, cls, days, hstart, hend, boxes, dates ISO csv,
--       months (of the bitmaps), new code mac, new code number, move id (client-made), now ms,
--       audit maxlen, room, person score, date scores csv, first bookable day,
--       priority hold id, priority hold ms, the starts of the days a priority hold may reach
--       (hold_end)
-- Returns {'moved', <record>} | {'taken', 'day:box:mask:held', ...} | {outcome} for
--   not_found, forbidden, cancelled, collected, started, unchanged, code_clash
--   | {'invalid', what}
local function move(keys, args)
  local k, a = named(keys, MOVE_KEYS), named(args, MOVE_ARGS)
  local record, codes, stream, stats = k.record, k.codes, k.audit, k.stats
  local now, move_id = tonumber(a.now_ms), a.move_id
  local n_months = #split(a.months)
  local cal = calendar_of({unpack(keys, #MOVE_KEYS + 1, #MOVE_KEYS + n_months)}, a.months)
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.days, a.hstart, a.hend,
    a.boxes, cal)
  if not cls then
    return {'invalid', days}
  end
  local tail = named({unpack(keys, #MOVE_KEYS + n_months + 1)}, {unpack(MOVE_KEY_TAILS, 2)})
  local person_index, date_index = tail.person_index, tail.date_index
  local date_scores, first_day, hold_ttl =
    split(a.date_scores), tonumber(a.first_day), tonumber(a.priority_hold_ms)
  if not now or not move_id or move_id == '' or #date_scores ~= #days or not first_day
      or not hold_ttl or not k.unindexed or #split(a.dates) ~= #days then
    return {'invalid', 'call'}
  end
  if redis.call('EXISTS', record) == 0 then
    return {'not_found'}
  end
  local r = redis.call('HMGET', record, 'owner', 'status', 'collected', 'dates', 'cls', 'days',
    'hstart', 'hend', 'boxes', 'inv', 'code_mac', 'id', 'months', 'made', 'move_request',
    'seq', 'uid_dates')
  if r[15] == move_id then
    return {'moved', redis.call('HGETALL', record)}
  end
  local refusal = move_refusal(r, a.actor, a.is_staff == '1', a.today)
  if refusal then
    return refusal
  end
  if before_first_day(days, a.first_day) then  -- the new days, as a claim checks its own
    return {'invalid', 'first_day'}
  end
  local old_days = split_numbers(r[6])
  local ours = as_set(split(r[10]))
  for _, day in ipairs(old_days) do
    local m = month_at(cal, day)
    ours[m and m.key or ''] = nil
  end
  if r[5] ~= cls or next(ours) ~= nil or #old_days ~= #days then
    return {'invalid', 'class'}
  end
  if r[6] == a.days and tonumber(r[7]) == hstart and tonumber(r[8]) == hend
      and r[9] == a.boxes then
    return {'unchanged'}
  end
  local closed = closed_reason(k.closures, cls, days, hstart, hend)
  if closed ~= '' then
    return {'closed', closed}
  end
  if redis.call('HEXISTS', codes, a.code_mac) == 1 then
    return {'code_clash'}
  end

  -- Free for this booking: not booked by another (its own old bits do not count), not held
  -- by another buyer.
  local old_fields, kind = fields_of(cls, old_days, tonumber(r[7]), tonumber(r[8]),
    split_numbers(r[9]), cal)
  local new_fields = fields_of(cls, days, hstart, hend, boxes, cal)
  local merged = merged_fields(old_fields, new_fields)
  local values = read_fields(merged, kind)
  local taken = {}
  for i, field in ipairs(merged) do
    local overlap = bit.band(bit.band(values[i], bit.bnot(field[2])), field[6])
    if overlap ~= 0 then
      taken[#taken + 1] = joined({day = field[3], box = field[4], mask = overlap, held = 0},
        TAKEN_FIELDS, ':')
    end
  end
  local drop = holds_met(taken, k.holds, k.hold_days, r[1], cls, days, hstart, hend, boxes, now)
  if #taken > 0 then
    return {'taken', unpack(taken)}
  end

  edition_bump(k.edition)
  local updated = {}
  for i, field in ipairs(merged) do
    updated[i] = bit.bor(bit.band(values[i], bit.bnot(field[2])), field[6])
  end
  months_make(cal, cls)
  write_fields(merged, kind, updated)
  local change = stats_change()
  stats_slots(change, cls, merged, values, updated)
  stats_booking(change, cal, cls, old_days, 'confirmed', r[14], -1)
  stats_booking(change, cal, cls, days, 'confirmed', r[14], 1)
  stats_write(stats, change)
  local inventories, months = {}, {}
  local kept = months_drop_empty(cal, k.registry)
  if #kept > 0 then
    redis.call('SADD', k.registry, unpack(kept))
  end
  for _, day in ipairs(days) do
    local m = month_at(cal, day)
    if inventories[#inventories] ~= m.key then
      inventories[#inventories + 1] = m.key
      months[#months + 1] = m.month .. '/' .. m.first .. '/' .. m.n
    end
  end
  local id, seq = r[12], (tonumber(r[16]) or 0) + 1
  redis.call('HDEL', codes, r[11])
  redis.call('HSET', codes, a.code_mac, id)
  redis.call('HSET', record, 'days', a.days, 'dates', a.dates, 'hstart', tostring(hstart),
    'hend', tostring(hend), 'boxes', a.boxes, 'code_mac', a.code_mac, 'code_n', a.code_n,
    'inv', table.concat(inventories, ','), 'months', table.concat(months, ','),
    'code_sealed', '', 'seq', tostring(seq), 'move_request', move_id, 'moved_at', a.now_ms,
    'moved_by', a.actor, 'uid_dates', r[17] or r[4])
  if person_index then
    redis.call('ZADD', person_index, a.person_score, id)
    for _, date in ipairs(split(r[4])) do
      redis.call('ZREM', date_index, id .. '/' .. date)
    end
    local scored = {}
    for i, date in ipairs(split(a.dates)) do
      scored[#scored + 1] = date_scores[i]
      scored[#scored + 1] = id .. '/' .. date
    end
    redis.call('ZADD', date_index, unpack(scored))
  else
    redis.call('ZADD', k.unindexed, now, id)
  end
  drop_holds(k.holds, k.hold_days, drop, cls, days)
  audit(stream, a.audit_maxlen, 'move', a.actor, id, a.room, r[4] .. ' -> ' .. a.dates, now)
  redis.call('XADD', k.outbox, '*', 'm',
    outbox_entry(OUTBOX_MOVED, {booking_id = id, sequence = seq}))
  waits_clear_stale(k.waits, k.wait_notices, first_day)
  waits_release(k.waits, k.wait_notices, k.holds, k.hold_days, k.outbox, {[cls] = cal}, now,
    a.priority_hold_id or '', hold_ttl, a.room, k.closures, first_day, split(a.day_starts))
  return {'moved', redis.call('HGETALL', record)}
end

redis.register_function{function_name = 'booking_move', callback = move}
