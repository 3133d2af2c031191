-- Cancellation: booking_cancel frees the booking's slots and tells the waiting list.

local CANCEL_KEYS = {'record', 'inventory', 'registry', 'audit', 'stats', 'outbox', 'waits',
  'wait_notices', 'holds', 'hold_days'}
local CANCEL_ARGS = {'actor', 'is_staff', 'today', 'reason', 'now_ms', 'audit_maxlen',
  'request_id', 'first_day', 'priority_hold_id', 'priority_hold_ms'}
local CANCEL_REPLIES = {'cancelled record', 'already_cancelled', 'not_found', 'forbidden',
  'collected', 'started', 'stale', 'invalid what'}

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
  redis.call('XADD', outbox, '*', 'm', outbox_entry(OUTBOX_CANCEL, {booking_id = r[11]}))
  waits_clear_stale(waits, notices, first_day)
  waits_release(waits, notices, holds, k.hold_days, outbox, {[r[6]] = inv}, now, hold_id,
    hold_ttl, r[12])
  return {'cancelled', redis.call('HGETALL', record)}
end

redis.register_function{function_name = 'booking_cancel', callback = cancel}
