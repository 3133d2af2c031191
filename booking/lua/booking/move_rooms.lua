-- Moving a booking to another room. The two rooms' keys live in different hash slots (on a
-- cluster, maybe on different primaries), so no one call can touch both. The old room decides:
--   1. booking_move_in   (new room) takes the new slots for a pending record: the hold, kept
--                        until the old room decides; nobody else can take them, the code does
--                        not open yet, and no list shows it.
--   2. booking_move_out  (old room) gives the old slots back and marks the booking moved (to
--                        the new id), unless this move was aborted: the one decisive write.
--   3. booking_move_commit (new room) confirms the pending record.
-- Whoever finds a pending record whose mover went away (booking.engine.moves.moves_recover)
-- asks the old room with booking_move_abort, which marks the move aborted unless step 2 ran:
-- then commits (step 2 ran) or lets go of the new slots (booking_move_release). Steps 2 and
-- the abort are one field of one record in one slot, so exactly one of them wins.

-- After the named KEYS of move_in, move_out and move_release: the month bitmaps of the days
-- (move_in: of the new days, ARGV months naming them; the others: those the record names).
local MOVE_IN_KEYS = {'record', 'registry', 'codes', 'holds', 'hold_days', 'stats', 'moves',
  'ledger', 'closures', 'edition', 'gone'}
local MOVE_IN_ARGS = {'owner', 'cls', 'months', 'days', 'hstart', 'hend', 'boxes', 'dates',
  'booking_id', 'from_id', 'move_id', 'code_mac', 'now_ms', 'room', 'first_day'}
local MOVE_IN_KEY_TAILS = {'inventories'}
local MOVE_OUT_KEYS = {'record', 'registry', 'codes', 'ledger', 'audit', 'stats',
  'waits', 'wait_notices', 'holds', 'hold_days', 'outbox', 'edition', 'gone', 'closures'}
local MOVE_OUT_KEY_TAILS = {'inventories'}
local MOVE_OUT_ARGS = {'actor', 'is_staff', 'today', 'move_id', 'to_id', 'now_ms',
  'audit_maxlen', 'room', 'first_day', 'priority_hold_id', 'priority_hold_ms', 'cls', 'days_n',
  'day_starts'}
local MOVE_COMMIT_KEYS = {'record', 'codes', 'ledger', 'stats', 'audit', 'outbox', 'moves',
  'unindexed', 'edition'}
local MOVE_COMMIT_ARGS = {'move_id', 'from_fields', 'now_ms', 'audit_maxlen', 'room',
  'person_score', 'date_scores', 'actor'}
local MOVE_ABORT_KEYS = {'record', 'edition'}
local MOVE_ABORT_ARGS = {'move_id'}
local MOVE_RELEASE_KEYS = {'record', 'registry', 'stats', 'moves', 'edition'}
local MOVE_RELEASE_KEY_TAILS = {'inventories'}
local MOVE_RELEASE_ARGS = {'move_id'}
local MOVE_IN_REPLIES = {'held', 'taken *slots', 'code_clash', 'closed reason', 'gone',
  'moved_away', 'invalid what'}
local MOVE_OUT_REPLIES = {'moved record', 'aborted', 'not_found', 'forbidden', 'cancelled',
  'moved_away', 'collected', 'started', 'other_class', 'stale', 'gone', 'invalid what'}
local MOVE_COMMIT_REPLIES = {'moved record', 'not_found', 'invalid what'}
local MOVE_COMMIT_KEY_TAILS = {'person_index', 'date_index'}
local MOVE_ABORT_REPLIES = {'moved', 'aborted'}
local MOVE_RELEASE_REPLIES = {'released', 'moved'}

-- Step 1. Returns {'held'} (also for a repeat) | {'taken', ...} | {'code_clash'}
--   | {'closed', reason} | {'gone'} | {'moved_away'} | {'invalid', what}
-- A move id as the forms make it (the old record's list of aborted moves is joined by ',').
local function move_id_ok(id)
  return id ~= nil and string.find(id, '^[%w_%-]+$') ~= nil
end

local function move_in(keys, args)
  local k, a = named(keys, MOVE_IN_KEYS), named(args, MOVE_IN_ARGS)
  local inventories = {unpack(keys, #MOVE_IN_KEYS + 1)}
  local cal = calendar_of(inventories, a.months)
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.days, a.hstart, a.hend,
    a.boxes, cal)
  if not cls then
    return {'invalid', days}
  end
  local now = tonumber(a.now_ms)
  if not now or not move_id_ok(a.move_id) or a.owner == '' or not k.ledger or not k.gone then
    return {'invalid', 'call'}
  end
  if redis.call('EXISTS', k.record) == 1 then
    if redis.call('HGET', k.record, 'move_request') == a.move_id then
      return {'held'}
    end
    -- The new id is this move's, its record another move's: the form of a move done long
    -- ago, sent again after the booking moved on from there.
    return {'moved_away'}
  end
  if before_first_day(days, a.first_day) then  -- the new days, as a claim checks its own
    return {'invalid', 'first_day'}
  end
  if redis.call('ZSCORE', k.gone, a.owner) then
    return {'gone'}  -- their account is being deleted: nothing more is moved for them
  end
  local closed = closed_reason(k.closures, cls, days, hstart, hend)
  if closed ~= '' then
    return {'closed', closed}
  end
  if redis.call('HEXISTS', k.codes, a.code_mac) == 1 then
    return {'code_clash'}
  end
  local fields, kind = fields_of(cls, days, hstart, hend, boxes, cal)
  local taken, values = booked_conflicts(fields, kind)
  local drop = holds_met(taken, k.holds, k.hold_days, a.owner, cls, days, hstart, hend, boxes,
    now)
  if #taken > 0 then
    return {'taken', unpack(taken)}
  end
  edition_bump(k.edition)
  local updated = {}
  for i, field in ipairs(fields) do
    updated[i] = bit.bor(values[i], field[2])
  end
  months_make(cal, cls)
  write_fields(fields, kind, updated)
  redis.call('SADD', k.registry, unpack(inventories))
  if redis.call('SCARD', k.ledger) == 0 and redis.call('HEXISTS', k.stats, 'v') == 0 then
    redis.call('DEL', k.stats)  -- as a claim into an empty room: its stats start exact here
    redis.call('HSET', k.stats, 'v', STATS_VERSION)
  end
  local change = stats_change()
  stats_slots(change, cls, fields, values, updated)
  stats_write(k.stats, change)
  redis.call('HSET', k.record, 'id', a.booking_id, 'owner', a.owner, 'cls', cls, 'room', a.room,
    'months', a.months, 'days', a.days, 'dates', a.dates, 'hstart', tostring(hstart),
    'hend', tostring(hend), 'boxes', a.boxes, 'created', a.now_ms, 'status', 'pending',
    'code_mac', a.code_mac, 'code_n', '0', 'collected', '', 'inv', table.concat(inventories, ','),
    'move_request', a.move_id, 'moved_from', a.from_id)
  redis.call('ZADD', k.moves, now, a.booking_id)
  drop_holds(k.holds, k.hold_days, drop, cls, days)
  return {'held'}
end

-- Step 2. Returns {'moved', <old record>} (also for a repeat) | {'aborted'} | {refusal}
--   for not_found, forbidden, cancelled, collected, started, other_class (not the booking's
--   class or number of days), stale (the record names other bitmaps: read again), gone (the
--   owner's account is being deleted)
local function move_out(keys, args)
  local k, a = named(keys, MOVE_OUT_KEYS), named(args, MOVE_OUT_ARGS)
  local now, hold_ttl = tonumber(a.now_ms), tonumber(a.priority_hold_ms)
  if not now or not hold_ttl or not tonumber(a.first_day) or not move_id_ok(a.move_id)
      or not k.gone or not k.closures then
    return {'invalid', 'call'}
  end
  if redis.call('EXISTS', k.record) == 0 then
    return {'not_found'}
  end
  local r = redis.call('HMGET', k.record, 'owner', 'status', 'collected', 'dates', 'cls',
    'days', 'hstart', 'hend', 'boxes', 'inv', 'code_mac', 'id', 'months', 'made',
    'move_request', 'move_abort')
  if r[15] == a.move_id and r[2] == 'moved' then
    return {'moved', redis.call('HGETALL', k.record)}
  end
  if as_set(split(r[16] or ''))[a.move_id] then
    return {'aborted'}
  end
  local refusal = move_refusal(r, a.actor, a.is_staff == '1', a.today)
  if refusal then
    return refusal
  end
  if redis.call('ZSCORE', k.gone, r[1]) then
    -- Their account is being deleted (marked in every room first): the deletion cancels the
    -- booking here; a move decided now would carry it past the deletion.
    return {'gone'}
  end
  -- The request the new room held for (the caller sends the same one to both) is of the
  -- booking's class and as many days: a move never changes what was bought.
  if r[5] ~= a.cls or #split(r[6]) ~= tonumber(a.days_n) then
    return {'other_class'}
  end
  local cal = record_calendar({unpack(keys, #MOVE_OUT_KEYS + 1)}, r[10], r[13])
  if not cal then
    return {'stale'}  -- the record names other bitmaps now (moved in its room): read again
  end
  edition_bump(k.edition)
  slots_release(cal, k.registry, k.stats, r[5], r[6], r[7], r[8], r[9], r[14])
  -- slots_release counted the booking cancelled: it moved, so it is counted nowhere here.
  local change = stats_change()
  stats_booking(change, cal, r[5], split_numbers(r[6]), 'cancelled', r[14], -1)
  stats_write(k.stats, change)
  redis.call('HDEL', k.codes, r[11])
  redis.call('SREM', k.ledger, r[12])
  redis.call('HSET', k.record, 'status', 'moved', 'moved_to', a.to_id, 'move_request',
    a.move_id, 'moved_at', a.now_ms, 'moved_by', a.actor)
  audit(k.audit, a.audit_maxlen, 'move', a.actor, r[12], a.room, 'to ' .. a.to_id, now)
  waits_clear_stale(k.waits, k.wait_notices, tonumber(a.first_day))
  waits_release(k.waits, k.wait_notices, k.holds, k.hold_days, k.outbox, {[r[5]] = cal},
    now, a.priority_hold_id or '', hold_ttl, a.room, k.closures, tonumber(a.first_day),
    split(a.day_starts))
  return {'moved', redis.call('HGETALL', k.record)}
end

-- Step 3. from_fields: the old record's owner-facing fields to carry ('ref|made|seq|uid_id|
-- uid_dates|created'). Returns {'moved', <record>} (also for a repeat) | {'not_found'}
local function move_commit(keys, args)
  local k, a = named(keys, MOVE_COMMIT_KEYS), named(args, MOVE_COMMIT_ARGS)
  local now = tonumber(a.now_ms)
  local from = pipe_fields(a.from_fields or '')
  if not now or #from ~= 6 or not k.unindexed then
    return {'invalid', 'call'}
  end
  local r = redis.call('HMGET', k.record, 'status', 'move_request', 'code_mac', 'id', 'months',
    'cls', 'days', 'dates', 'owner', 'inv')
  if r[2] ~= a.move_id then
    return {'not_found'}
  end
  if r[1] ~= 'pending' then
    return {'moved', redis.call('HGETALL', k.record)}
  end
  local id = r[4]
  edition_bump(k.edition)
  redis.call('HSET', k.record, 'status', 'confirmed', 'ref', from[1], 'made', from[2],
    'seq', tostring((tonumber(from[3]) or 0) + 1), 'uid_id', from[4], 'uid_dates', from[5],
    'created', from[6], 'moved_at', a.now_ms)
  redis.call('HSET', k.codes, r[3], id)
  redis.call('SADD', k.ledger, id)
  local change = stats_change()
  -- The months as the record names them (their keys are not touched here).
  local cal = calendar_of(split(r[10] or ''), r[5] or '')
  if cal then
    stats_booking(change, cal, r[6], split_numbers(r[7]), 'confirmed', from[2], 1)
  end
  stats_write(k.stats, change)
  redis.call('ZREM', k.moves, id)
  local tail = named({unpack(keys, #MOVE_COMMIT_KEYS + 1)}, MOVE_COMMIT_KEY_TAILS)
  local person_index, date_index = tail.person_index, tail.date_index
  if person_index then
    redis.call('ZADD', person_index, a.person_score, id)
    local scores, scored = split(a.date_scores), {}
    for i, date in ipairs(split(r[8])) do
      scored[#scored + 1] = scores[i]
      scored[#scored + 1] = id .. '/' .. date
    end
    redis.call('ZADD', date_index, unpack(scored))
  else
    redis.call('ZADD', k.unindexed, now, id)
  end
  -- Who moved it (the old room's moved_by): staff for the buyer are named, not the owner.
  local actor = (a.actor and a.actor ~= '') and a.actor or r[9]
  audit(k.audit, a.audit_maxlen, 'move', actor, id, a.room, 'from ' .. (from[4] or ''), now)
  redis.call('XADD', k.outbox, '*', 'm', outbox_entry(OUTBOX_MOVED, {booking_id = id,
    sequence = (tonumber(from[3]) or 0) + 1}))
  return {'moved', redis.call('HGETALL', k.record)}
end

local MOVE_ABORTS_KEPT = 64

-- The recovery's question to the old room. Returns {'moved'} | {'aborted'}
local function move_abort(keys, args)
  local k, a = named(keys, MOVE_ABORT_KEYS), named(args, MOVE_ABORT_ARGS)
  local r = redis.call('HMGET', k.record, 'status', 'move_request')
  if r[1] == 'moved' and r[2] == a.move_id then
    return {'moved'}
  end
  -- A record that no step 2 can move any more (cancelled, collected, moved by another move)
  -- needs no fence.
  if redis.call('EXISTS', k.record) == 1 and (r[1] == 'confirmed' or r[1] == 'pending') then
    -- Every aborted move stays fenced off (a list, not the last one: two moves of a booking
    -- may be aborted in turn while the first one's step 2 is still on its way); the newest
    -- MOVE_ABORTS_KEPT, far more than can be on their way at once.
    local aborted = split(redis.call('HGET', k.record, 'move_abort') or '')
    if not as_set(aborted)[a.move_id] then
      edition_bump(k.edition)
      aborted[#aborted + 1] = a.move_id
      local from = math.max(1, #aborted - MOVE_ABORTS_KEPT + 1)
      redis.call('HSET', k.record, 'move_abort', table.concat({unpack(aborted, from)}, ','))
    end
  end
  return {'aborted'}
end

-- Let go of a pending record's slots (its move was aborted). Returns {'released'} (also when
-- there is nothing left to release) | {'moved'} (it was committed: nothing to do)
local function move_release(keys, args)
  local k, a = named(keys, MOVE_RELEASE_KEYS), named(args, MOVE_RELEASE_ARGS)
  local r = redis.call('HMGET', k.record, 'status', 'move_request', 'cls', 'days', 'hstart',
    'hend', 'boxes', 'months', 'id', 'inv')
  if r[2] ~= a.move_id then
    return {'released'}
  end
  if r[1] ~= 'pending' then
    return {'moved'}
  end
  local cal = record_calendar({unpack(keys, #MOVE_RELEASE_KEYS + 1)}, r[10], r[8])
  if not cal then
    return {'released'}
  end
  local fields, kind = fields_of(r[3], split_numbers(r[4]), tonumber(r[5]), tonumber(r[6]),
    split_numbers(r[7]), cal)
  local values = read_fields(fields, kind)
  local updated = {}
  for i, field in ipairs(fields) do
    updated[i] = bit.band(values[i], bit.bnot(field[2]))
  end
  edition_bump(k.edition)
  write_fields(fields, kind, updated)
  local change = stats_change()
  stats_slots(change, r[3], fields, values, updated)
  stats_write(k.stats, change)
  months_drop_empty(cal, k.registry)
  redis.call('DEL', k.record)
  redis.call('ZREM', k.moves, r[9])
  return {'released'}
end

redis.register_function{function_name = 'booking_move_in', callback = move_in}
redis.register_function{function_name = 'booking_move_out', callback = move_out}
redis.register_function{function_name = 'booking_move_commit', callback = move_commit}
redis.register_function{function_name = 'booking_move_abort', callback = move_abort}
redis.register_function{function_name = 'booking_move_release', callback = move_release}
