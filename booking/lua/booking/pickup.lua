-- Pickup: booking_pickup opens the safe with the right code on its day; booking_pickup_miss
-- counts wrong codes.

local PICKUP_KEYS = {'lock', 'failures', 'codes', 'record', 'audit', 'stats'}
local PICKUP_ARGS = {'code_mac', 'booking_id', 'now_ms', 'today', 'minute', 'grace_minutes',
  'max_failures', 'window_ms', 'lock_ms', 'attempt_id', 'audit_maxlen', 'room', 'yesterday'}
local PICKUP_MISS_KEYS = {'failures', 'lock'}
local PICKUP_MISS_ARGS = {'failure', 'now_ms', 'max_failures', 'window_ms', 'lock_ms'}

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
    'pickup_attempt', 'months')
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

redis.register_function{function_name = 'booking_pickup', callback = pickup}
redis.register_function{function_name = 'booking_pickup_miss', callback = pickup_miss}
