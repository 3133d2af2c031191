-- Booking: booking_claim checks and takes a whole request, writes the record, the code, the
-- receipt and the statistics in one call.

local CLAIM_KEYS = {'registry', 'record', 'ledger', 'codes', 'holds', 'audit',
  'stats', 'hold_days', 'unindexed', 'refs', 'outbox', 'hold_streaks', 'waits', 'wait_notices',
  'gone', 'closures', 'edition'}
local CLAIM_ARGS = {'owner', 'cls', 'months', 'days', 'hstart', 'hend', 'boxes', 'booking_id',
  'now_ms', 'code_mac', 'code_n', 'dates', 'hold_id', 'audit_maxlen', 'room', 'made',
  'person_score', 'date_scores', 'reference', 'pace_limit', 'pace_window_ms', 'first_day',
  'mark_unsure', 'actor', 'audit_note'}
local CLAIM_REPLIES = {'ok record fulfilled', 'taken *slots', 'paced until', 'id_in_use',
  'code_clash', 'ref_clash', 'gone', 'closed reason', 'waited', 'invalid what'}
-- The keys a call adds after the named ones: the inventory of each calendar month of the
-- request (as many as ARGV months names), on one server the indexes (written here), and with
-- an allowance the buyer's pace.
local CLAIM_KEY_TAILS = {'inventories', 'person_index', 'date_index', 'pace'}

-- Claim: take every slot of the request, or nothing.
-- KEYS: registry, record, ledger, codes, holds, audit, stats, hold days, unindexed,
--       refs, outbox, hold streaks, waits, wait notices, gone (people being deleted), closures,
--       edition,
--       then the inventory of each calendar month of the request (as ARGV months),
--       then either the person index and the date index (one server: written here) or nothing
--       (a cluster: the id goes to `unindexed`, and the readers write the entries)
-- ARGV: owner, cls, months (of the inventory keys, in order), days (calendar day numbers),
--       hstart, hend, boxes, booking id, now ms, code mac,
--       code number (the code derives from the id and it), dates (ISO csv), hold id ('' for
--       none), audit maxlen, room, the local date of now (the stats' creation date), the person
--       index's score, the date index's score of each date (csv, in the order of the dates),
--       short reference, the buyer's hourly allowance and its window (0 and 0: not counted
--       here); with an allowance, the KEYS end with the buyer's pace (one server only: on a
--       cluster the caller counts it first, in the buyer's own slot)
-- Returns {'ok', <record as flat hash>, <the owner's waits it fulfilled>}
--       | {'taken', 'day:box:mask:held', ...} | {'paced', ms when the buyer may book again}
--       | {'id_in_use'} | {'code_clash'} | {'ref_clash'} | {'gone'} | {'invalid', what}
--       | {'waited'}: another buyer waits for a slot of it that a hold running out has just
--         freed, and the sweep offers it to them first (as `hold` answers; a claim whose hold
--         has ended, or a Book press on the booking page, takes no slot from the waiting list)
-- (a retry of a claim that succeeded returns {'ok', <record>}).
-- The receipt (OUTBOX_CONFIRM) goes into the room's outbox in the same call: as durable
-- as the booking, and no extra round trip (the owner named, the sender need not read the
-- booking of a buyer without a verified address).
local function claim(keys, args)
  local k, a = named(keys, CLAIM_KEYS), named(args, CLAIM_ARGS)
  local registry, record, ledger, codes, holds, stream, stats, hold_days, unindexed =
    k.registry, k.record, k.ledger, k.codes, k.holds, k.audit, k.stats,
    k.hold_days, k.unindexed
  local owner, id, now = a.owner, a.booking_id, tonumber(a.now_ms)
  local n_months = #split(a.months)
  local cal = calendar_of({unpack(keys, #CLAIM_KEYS + 1, #CLAIM_KEYS + n_months)}, a.months)
  local mac, code_n, dates, hold_id, maxlen, room =
    a.code_mac, a.code_n, a.dates, a.hold_id, a.audit_maxlen, a.room
  local cls, days, hstart, hend, boxes = checked_request(a.cls, a.days, a.hstart, a.hend,
    a.boxes, cal)
  if not cls then
    return {'invalid', days}
  end
  local made, ref, refs, outbox = a.made, a.reference, k.refs, k.outbox
  local date_scores = split(a.date_scores)
  -- KEYS after the inventories: the person index and the date index (when the store lets one
  -- call write them: not on a cluster, where the booking waits in `unindexed` instead).
  local tail = named({unpack(keys, #CLAIM_KEYS + n_months + 1)}, {unpack(CLAIM_KEY_TAILS, 2)})
  local person_index, date_index = tail.person_index, tail.date_index
  local pace, pace_limit, pace_window = tail.pace, tonumber(a.pace_limit),
    tonumber(a.pace_window_ms)
  if owner == '' or id == '' or not now or not unindexed
      or not made or made == '' or #split(dates) ~= #days or #date_scores ~= #days
      or not tonumber(a.person_score) or (person_index ~= nil) ~= (date_index ~= nil)
      or not ref or ref == '' or not outbox or not k.hold_streaks or not k.wait_notices
      or not k.gone
      or not pace_limit or not pace_window or (pace ~= nil) ~= (pace_limit > 0) then
    return {'invalid', 'call'}
  end

  if redis.call('EXISTS', record) == 1 then
    if redis.call('HGET', record, 'owner') == owner then
      return {'ok', redis.call('HGETALL', record)}
    end
    return {'id_in_use'}
  end
  -- After the repeat above: a claim that ran just before midnight, sent again just after it,
  -- is answered with its booking, not refused for a day that has become today.
  if before_first_day(days, a.first_day) then
    return {'invalid', 'first_day'}
  end
  if redis.call('ZSCORE', k.gone, owner) then
    return {'gone'}  -- their account is being deleted: nothing more is booked for them
  end
  local closed = closed_reason(k.closures, cls, days, hstart, hend)
  if closed ~= '' then
    return {'closed', closed}
  end
  if redis.call('HEXISTS', codes, mac) == 1 then
    return {'code_clash'}
  end
  if redis.call('HEXISTS', refs, ref) == 1 then
    return {'ref_clash'}
  end
  local pace_since = '(' .. tostring(now - pace_window)
  local paced_until = pace_spent_until(pace, pace_limit, pace_window, now)
  if paced_until then
    return {'paced', paced_until}
  end
  local fields, kind = fields_of(cls, days, hstart, hend, boxes, cal)
  local taken, values = booked_conflicts(fields, kind)
  local drop = holds_met(taken, holds, hold_days, owner, cls, days, hstart, hend, boxes, now)
  if #taken > 0 then
    return {'taken', unpack(taken)}
  end
  if waited_by_others(k, owner, cls, days, hstart, hend, boxes, cal, now) then
    return {'waited'}
  end

  edition_bump(k.edition)
  local updated = {}
  for i, field in ipairs(fields) do
    updated[i] = bit.bor(values[i], field[2])
  end
  months_make(cal, cls)
  local inventories = {}
  for _, m in ipairs(cal) do
    inventories[#inventories + 1] = m.key
  end
  write_fields(fields, kind, updated)
  redis.call('SADD', registry, unpack(inventories))
  -- The record as written is the record returned (no read back).
  local written = field_values({id = id, owner = owner, cls = cls, room = room,
    months = a.months, days = a.days, dates = dates, hstart = tostring(hstart),
    hend = tostring(hend), boxes = a.boxes, created = a.now_ms, status = 'confirmed',
    code_mac = mac, code_n = code_n, collected = '', inv = table.concat(inventories, ','),
    made = made, ref = ref}, RECORD_FIELDS)
  -- Marked (ARGV mark_unsure, booking.engine.unsure.marked_from_start): not confirmed until the
  -- caller's WAIT and WAITAOF answer, which then takes the mark away; a claim the store cannot
  -- confirm keeps it, so no page and no mail shows it as confirmed meanwhile, not even while
  -- the WAITAOF waits. (Not marked where the WAITAOF answers at once: one server that writes
  -- to disk before it replies; booking_claim_unsure marks it if the WAITAOF fails after all.)
  if a.mark_unsure == '1' then
    written[#written + 1], written[#written + 2] = 'unsure', a.now_ms
  end
  redis.call('HSET', record, unpack(written))
  redis.call('HSET', refs, ref, id)
  redis.call('XADD', outbox, '*', 'm', outbox_entry(OUTBOX_CONFIRM, {booking_id = id,
    owner = owner}))
  if redis.call('SCARD', ledger) == 0 and redis.call('HEXISTS', stats, 'v') == 0 then
    -- The room's first booking: its stats start exact from here.
    redis.call('DEL', stats)
    redis.call('HSET', stats, 'v', STATS_VERSION)
  end
  local change = stats_change()
  stats_slots(change, cls, fields, values, updated)
  stats_booking(change, cal, cls, days, 'confirmed', made, 1)
  stats_write(stats, change)
  redis.call('SADD', ledger, id)
  redis.call('HSET', codes, mac, id)
  if person_index then
    -- The indexes in the same atomic call: the booking is listed the moment it exists.
    redis.call('ZADD', person_index, a.person_score, id)
    local scored = {}
    for i, date in ipairs(split(dates)) do
      scored[#scored + 1] = date_scores[i]
      scored[#scored + 1] = id .. '/' .. date
    end
    redis.call('ZADD', date_index, unpack(scored))
  else
    redis.call('ZADD', unindexed, now, id)
  end
  if hold_id ~= '' then
    local value = redis.call('HGET', holds, hold_id)
    if value and parse_hold(value).owner == owner then
      drop[hold_id] = value
    end
  end
  drop_holds(holds, hold_days, drop, cls, days)
  redis.call('ZREM', k.hold_streaks, owner)  -- booked: the next hold here starts afresh
  if pace then
    -- Only a booking made counts against the allowance: a refusal above wrote nothing.
    redis.call('ZADD', pace, now, id)
    redis.call('ZREMRANGEBYSCORE', pace, '-inf', pace_since)
    redis.call('PEXPIRE', pace, pace_window)
  end
  -- The audit names who booked: the buyer, or the staff member acting for them (ARGV actor),
  -- with what the caller says of it (ARGV audit_note) before the class and dates.
  local actor = (a.actor and a.actor ~= '') and a.actor or owner
  local note = (a.audit_note and a.audit_note ~= '') and (a.audit_note .. ': ') or ''
  audit(stream, maxlen, 'claim', actor, id, room, note .. cls .. ' ' .. dates, now)
  return {'ok', written,
    waits_fulfilled(k.waits, k.wait_notices, owner, cls, days, hstart, hend, boxes)}
end

local CLAIM_UNSURE_KEYS = {'record', 'edition'}
local CLAIM_UNSURE_ARGS = {'now_ms'}

-- On one server, a claim whose WAITAOF fell short (a disk slower than the timeout): its record
-- says so (`unsure`, when) from then on (on a cluster the claim writes the mark itself), until
-- a durable call takes it away (booking.engine.unsure). A record that is not there (the claim
-- itself was lost) stays absent.
-- KEYS: record, edition. ARGV: now ms. Returns 1 (marked) | 0 (no such record)
local function claim_unsure(keys, args)
  local k, a = named(keys, CLAIM_UNSURE_KEYS), named(args, CLAIM_UNSURE_ARGS)
  if not k.edition or not tonumber(a.now_ms) then
    return redis.error_reply('booking_claim_unsure: invalid call')
  end
  if redis.call('EXISTS', k.record) == 0 then
    return 0
  end
  edition_bump(k.edition)
  redis.call('HSET', k.record, 'unsure', a.now_ms)
  return 1
end

redis.register_function{function_name = 'booking_claim', callback = claim}
redis.register_function{function_name = 'booking_claim_unsure', callback = claim_unsure}
