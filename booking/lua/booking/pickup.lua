-- Pickup: booking_pickup opens the safe with the right code on its day. Wrong codes are counted
-- by the caller (booking/engine/pickup.py): they slow the client down and never lock anything,
-- so nothing here stands between a right code and its safe.

local PICKUP_KEYS = {'codes', 'record', 'audit', 'stats', 'edition'}
local PICKUP_ARGS = {'code_mac', 'booking_id', 'now_ms', 'today', 'minute', 'grace_minutes',
  'attempt_id', 'audit_maxlen', 'room', 'yesterday'}
local HANDOVER_KEYS = {'record', 'audit', 'stats', 'edition'}
local HANDOVER_ARGS = {'actor', 'today', 'note', 'now_ms', 'audit_maxlen', 'room', 'request_id',
  'day', 'yesterday', 'minute', 'grace_minutes'}
local HANDOVER_REPLIES = {'handed record', 'already_collected record', 'not_found',
  'not_today record', 'invalid what'}
local PICKUP_REPLIES = {'collected record', 'already_collected record', 'cancelled record',
  'wrong_day record', 'wrong_hour record', 'wrong_code', 'retry booking_id', 'invalid what'}

-- Whether yesterday's pickup window still runs at `minute` of today: only B/C hours that end
-- at 24:00 reach past midnight, by the grace (booking.engine.pickup.pickup_still_open).
local function grace_runs(cls, hend, grace, minute)
  return cls ~= 'A' and minute < (tonumber(hend) or 0) * 60 + grace - 1440
end

-- Pickup: open the safe with room + code, once per booked day, within the booked hours.
-- KEYS: codes, record (of ARGV booking id; any key of the room if none), audit, stats, edition
-- ARGV: code mac, booking id (''), now ms, today ISO, minute of day, grace minutes,
--       attempt id, audit maxlen, room, yesterday ISO
-- Returns {'collected', <record>} | {'wrong_code'} (writes nothing)
--       | {'retry', booking id} | {outcome, <record>} for cancelled, already_collected,
--         wrong_day, wrong_hour
-- The attempt id (made by the caller) makes a retry harmless: the attempt that collected is
-- kept in the record, so its retry answers 'collected' instead of 'already_collected'.
local function pickup(keys, args)
  local k, a = named(keys, PICKUP_KEYS), named(args, PICKUP_ARGS)
  local codes, record, stream, stats = k.codes, k.record, k.audit, k.stats
  local mac, expected, now, today = a.code_mac, a.booking_id, tonumber(a.now_ms), a.today
  local minute, grace = tonumber(a.minute), tonumber(a.grace_minutes)
  local attempt, maxlen, room, yesterday = a.attempt_id, a.audit_maxlen, a.room, a.yesterday

  local id = redis.call('HGET', codes, mac)
  if not id then
    return {'wrong_code'}
  end
  if id ~= expected then
    return {'retry', id}
  end

  local r = redis.call('HMGET', record, 'status', 'dates', 'collected', 'cls', 'hstart', 'hend',
    'pickup_attempt', 'months', 'handed_at')
  local status, dates, collected = r[1], split(r[2]), split(r[3])
  if r[7] == attempt .. '|' .. today then
    return {'collected', redis.call('HGETALL', record)}
  end
  if status == 'cancelled' then
    return {'cancelled', redis.call('HGETALL', record)}
  end
  if status == 'collected' or r[9] then
    -- Handed over at the desk: its code opens nothing any more (it may be in other hands), and
    -- its owner is told it was collected, not that the code is wrong.
    return {'already_collected', redis.call('HGETALL', record)}
  end
  -- The booked day this pickup is for: today within its hours (+ grace), or yesterday while the
  -- grace after hours that end at midnight runs on into today.
  local booked, done = as_set(dates), as_set(collected)
  local first, last = (tonumber(r[5]) or 0) * 60, (tonumber(r[6]) or 0) * 60 + grace
  local day
  if booked[today] and (r[4] == 'A' or (minute >= first and minute < last)) then
    day = today
  elseif booked[yesterday] and grace_runs(r[4], r[6], grace, minute) then
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

  edition_bump(k.edition)
  collected[#collected + 1] = day
  table.sort(collected)
  local fields = {'collected', table.concat(collected, ','), 'collected_at', now,
    'pickup_attempt', attempt .. '|' .. today}
  if #collected == #dates then
    fields[#fields + 1] = 'status'
    fields[#fields + 1] = 'collected'
    local change = stats_change()
    -- Counted in the month of the booking's first day: the first of its months.
    local month = string.match(r[8] or '', '^[^/]*')
    bump(change, 'status:' .. month .. ':' .. r[4] .. ':confirmed', -1)
    bump(change, 'status:' .. month .. ':' .. r[4] .. ':collected', 1)
    stats_write(stats, change)
  end
  redis.call('HSET', record, unpack(fields))
  audit(stream, maxlen, 'pickup', redis.call('HGET', record, 'owner'), id, room, day, now)
  return {'collected', redis.call('HGETALL', record)}
end

-- Hand over at the desk: staff mark today's pickup of a confirmed booking (or yesterday's, while
-- its grace runs on past midnight, as the kiosk would open it) collected without the code (a
-- buyer who lost it shows identification). The code stops opening (it may be in other
-- hands): it stays known, so the kiosk answers it "already collected" (booking_pickup reads
-- handed_at) rather than counting it as a wrong guess; the booking's later days, if any, are
-- handed over at the desk too.
-- KEYS: record, audit, stats, edition (the code stays known: the owner's code answers
--       'already collected' at the kiosk)
-- ARGV: actor (staff id), today ISO, note, now ms, audit maxlen, room, request id (client-made:
--       a repeat answers 'handed' again), day ISO (the day handed over: today, or yesterday
--       while its grace runs), yesterday ISO, minute of day, grace minutes
-- Returns {'handed', <record>} | {'already_collected', <record>} | {'not_found'}
--       | {'not_today', <record>} | {'invalid', what}
local function handover(keys, args)
  local k, a = named(keys, HANDOVER_KEYS), named(args, HANDOVER_ARGS)
  local now, minute, grace = tonumber(a.now_ms), tonumber(a.minute), tonumber(a.grace_minutes)
  if not now or not minute or not grace or a.actor == '' or a.request_id == '' or a.day == ''
    or not k.stats then
    return {'invalid', 'call'}
  end
  if redis.call('EXISTS', k.record) == 0 then
    return {'not_found'}
  end
  local r = redis.call('HMGET', k.record, 'status', 'dates', 'collected', 'cls', 'months',
    'handed_request', 'id', 'hend')
  if r[6] == a.request_id then
    return {'handed', redis.call('HGETALL', k.record)}
  end
  local day, dates, collected = a.day, split(r[2]), split(r[3])
  if r[1] ~= 'confirmed' or as_set(collected)[day] then
    if r[1] == 'confirmed' or r[1] == 'collected' then
      return {'already_collected', redis.call('HGETALL', k.record)}
    end
    return {'not_found'}
  end
  local now_due = day == a.today
    or (day == a.yesterday and grace_runs(r[4], r[8], grace, minute))
  if not as_set(dates)[day] or not now_due then
    return {'not_today', redis.call('HGETALL', k.record)}
  end
  edition_bump(k.edition)
  collected[#collected + 1] = day
  table.sort(collected)
  local fields = {'collected', table.concat(collected, ','), 'collected_at', a.now_ms,
    'handed_by', a.actor, 'handed_at', a.now_ms, 'handed_note', a.note,
    'handed_request', a.request_id}
  if #collected == #dates then
    fields[#fields + 1] = 'status'
    fields[#fields + 1] = 'collected'
    local change = stats_change()
    -- Counted in the month of the booking's first day: the first of its months.
    local month = string.match(r[5] or '', '^[^/]*')
    bump(change, 'status:' .. month .. ':' .. r[4] .. ':confirmed', -1)
    bump(change, 'status:' .. month .. ':' .. r[4] .. ':collected', 1)
    stats_write(k.stats, change)
  end
  redis.call('HSET', k.record, unpack(fields))
  audit(k.audit, a.audit_maxlen, 'handover', a.actor, r[7], a.room, day .. ' ' .. a.note, now)
  return {'handed', redis.call('HGETALL', k.record)}
end

redis.register_function{function_name = 'booking_pickup', callback = pickup}
redis.register_function{function_name = 'booking_handover', callback = handover}
