-- Cancellation: booking_cancel frees the booking's slots and tells the waiting list.

local CANCEL_KEYS = {'record', 'registry', 'audit', 'stats', 'outbox', 'waits',
  'wait_notices', 'holds', 'hold_days', 'edition', 'closures'}
local CANCEL_ARGS = {'actor', 'is_staff', 'today', 'reason', 'now_ms', 'audit_maxlen',
  'request_id', 'first_day', 'priority_hold_id', 'priority_hold_ms', 'day_starts'}
local CANCEL_REPLIES = {'cancelled record', 'already_cancelled', 'not_found', 'forbidden',
  'collected', 'started', 'partly_collected', 'stale', 'moved', 'invalid what'}

-- A record's months (calendar_of) when `inventories` (the keys the caller passed) are exactly
-- the bitmaps the record names; nil when the record names others (the caller read it stale).
local function record_calendar(inventories, record_inv, record_months)
  if table.concat(inventories, ',') ~= (record_inv or '') then
    return nil
  end
  return calendar_of(inventories, record_months)
end

-- Give a confirmed booking's slots back: clear its bits in its months' bitmaps (`cal`; a
-- bitmap goes, with its registry entry, once nothing in it is booked) and count the booking
-- cancelled in the stats. days_text and boxes_text are the record's comma lists.
local function slots_release(cal, registry, stats, cls, days_text, hstart, hend, boxes_text,
    made)
  local days = split_numbers(days_text)
  local fields, kind = fields_of(cls, days, tonumber(hstart), tonumber(hend),
    split_numbers(boxes_text), cal)
  local values = read_fields(fields, kind)
  local updated = {}
  for i, field in ipairs(fields) do
    updated[i] = bit.band(values[i], bit.bnot(field[2]))
  end
  write_fields(fields, kind, updated)
  local change = stats_change()
  stats_slots(change, cls, fields, values, updated)
  stats_booking(change, cal, cls, days, 'confirmed', made, -1)
  stats_booking(change, cal, cls, days, 'cancelled', made, 1)
  stats_write(stats, change)
  months_drop_empty(cal, registry)
end

-- Cancel: free exactly the booking's own slots, queue the buyer's mail and tell the waiters.
-- KEYS: record, registry, audit, stats, outbox, waits, wait-notices, holds, hold days, edition,
--       closures, then the bitmaps the record names (its 'inv', in that order)
-- ARGV: actor, is staff (1|0), today ISO, reason, now ms, audit maxlen, request id,
--       first bookable day, priority hold id (of this room), priority hold ms, the starts of
--       the days a priority hold may reach (hold_end)
-- Returns {'cancelled', <record>} | {outcome} with outcome not_found, forbidden,
--   already_cancelled, collected (every day), started (the owner, on or after the first day,
--   whatever is collected), partly_collected (staff: some days), stale, moved (the record
--   points where the booking went: cancel it there)
-- The request id (made by the caller) is kept in the record: a retry of the very call that
-- cancelled answers 'cancelled' again, any other call 'already_cancelled'.
local function cancel(keys, args)
  local k, a = named(keys, CANCEL_KEYS), named(args, CANCEL_ARGS)
  local record, registry, stream, stats = k.record, k.registry, k.audit, k.stats
  local actor, is_staff, today, reason, now, maxlen, request =
    a.actor, a.is_staff == '1', a.today, a.reason, tonumber(a.now_ms), a.audit_maxlen,
    a.request_id or ''
  if redis.call('EXISTS', record) == 0 then
    return {'not_found'}
  end
  local r = redis.call('HMGET', record, 'owner', 'status', 'collected', 'dates', 'inv', 'cls',
    'days', 'hstart', 'hend', 'boxes', 'id', 'room', 'cancel_request', 'months', 'made')
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
  if status == 'collected' then
    return {'collected'}
  end
  if status == 'moved' then
    return {'moved'}  -- a pointer to where the booking went: it holds no slots here
  end
  if status ~= 'confirmed' then
    return {'not_found'}  -- a move's new slots not yet its own ('pending')
  end
  -- The owner hears why before anything about collection: a day is collected only on or after
  -- the first, so a booking of which some days are collected has started.
  if not is_staff and today >= split(dates)[1] then
    return {'started'}
  end
  if collected and collected ~= '' then
    return {'partly_collected'}  -- staff: some days collected, the others not yet
  end
  local cal = record_calendar({unpack(keys, #CANCEL_KEYS + 1)}, r[5], r[14])
  if not cal then
    return {'stale'}
  end
  local outbox, waits, notices, holds = k.outbox, k.waits, k.wait_notices, k.holds
  local first_day, hold_id, hold_ttl =
    tonumber(a.first_day), a.priority_hold_id or '', tonumber(a.priority_hold_ms)
  if not stats or not holds or not first_day or not hold_ttl or not k.closures then
    return {'invalid', 'call'}
  end

  edition_bump(k.edition)
  slots_release(cal, registry, stats, r[6], r[7], r[8], r[9], r[10], r[15])
  redis.call('HSET', record, 'status', 'cancelled', 'cancelled_at', now, 'cancelled_by', actor,
    'cancel_reason', reason, 'cancel_request', request)
  audit(stream, maxlen, 'cancel', actor, r[11], r[12], reason, now)
  redis.call('XADD', outbox, '*', 'm', outbox_entry(OUTBOX_CANCEL, {booking_id = r[11]}))
  waits_clear_stale(waits, notices, first_day)
  waits_release(waits, notices, holds, k.hold_days, outbox, {[r[6]] = cal}, now, hold_id,
    hold_ttl, r[12], k.closures, first_day, split(a.day_starts))
  return {'cancelled', redis.call('HGETALL', record)}
end

redis.register_function{function_name = 'booking_cancel', callback = cancel}
