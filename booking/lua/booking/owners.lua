-- Account deletion: booking_owner_forget cancels a person's bookings in one room.

-- Followed by n record keys, then every inventory key those records name.
local OWNER_FORGET_KEYS = {'registry', 'audit', 'stats', 'waits', 'wait_notices', 'holds',
  'outbox', 'hold_days', 'edition', 'closures'}
local OWNER_FORGET_ARGS = {'owner', 'now_ms', 'audit_maxlen', 'n', 'room', 'first_day',
  'priority_hold_id', 'priority_hold_ms', 'mail_lang', 'mail_name', 'mail_address', 'actor',
  'day_starts'}
local OWNER_FORGET_REPLIES = {'ok cancelled kept', 'stale', 'invalid what'}
local OWNER_FORGET_KEY_TAILS = {'records', 'inventories'}

-- Forget an owner in one room (account deletion): their bookings not collected at all are
-- cancelled and their slots freed; every one of their records stays for staff with owner '0';
-- their holds and waits go; waiters of the freed booked slots are told (slots only held by
-- them are open to everyone at once, and the notices of a priority hold of theirs say so).
-- KEYS: registry, audit, stats, waits, wait-notices, holds, outbox, hold days, edition,
--       closures, n records, then
--       every inventory the records name (their 'inv'), any order
-- ARGV: owner, now ms, audit maxlen, n, room, first bookable day, priority hold id,
--       priority hold ms, then the buyer's confirmed address (language, name, address; an
--       empty address: none), to which each booking cancelled here is told, in this call, then
--       who deleted the account (the owner, or the staff member who did: the cancellations are
--       audited under their id, and the mail says that staff closed the account), then the
--       starts of the days a priority hold may reach (hold_end)
-- Returns {'ok', cancelled, kept} | {'stale'}
local function owner_forget(keys, args)
  local k, a = named(keys, OWNER_FORGET_KEYS), named(args, OWNER_FORGET_ARGS)
  local registry, stream, stats, waits, notices, holds, outbox =
    k.registry, k.audit, k.stats, k.waits, k.wait_notices, k.holds, k.outbox
  local owner, now, maxlen, n, room = a.owner, tonumber(a.now_ms), a.audit_maxlen, tonumber(a.n),
    a.room
  local first_day, hold_ttl = tonumber(a.first_day), tonumber(a.priority_hold_ms)
  local actor = (a.actor and a.actor ~= '') and a.actor or owner
  local by = actor ~= owner and 'staff' or ''
  local first = #OWNER_FORGET_KEYS -- the records follow the named keys
  if owner == '' or not now or not n or #keys < first + n or not first_day or not hold_ttl
      or not k.closures then
    return {'invalid', 'call'}
  end
  local passed = as_set({unpack(keys, first + 1 + n)})
  local rows, seen = {}, {}
  for i = 1, n do
    local record = keys[first + i]
    -- A record named twice (a caller's list may repeat one) is counted once.
    local r = seen[record] and {} or redis.call('HMGET', record, 'owner', 'status',
      'collected', 'inv', 'cls', 'days', 'hstart', 'hend', 'boxes', 'id', 'months', 'made')
    seen[record] = true
    if r[1] == owner then
      local inventories = split(r[4])
      for _, inv in ipairs(inventories) do
        if not passed[inv] then
          return {'stale'}
        end
      end
      local cal = calendar_of(inventories, r[11])
      if not cal then
        return {'stale'}
      end
      rows[#rows + 1] = {record, cal, r}
    end
  end

  edition_bump(k.edition)
  local cancelled, cal_of = 0, {}
  for _, row in ipairs(rows) do
    local record, cal, r = row[1], row[2], row[3]
    if r[2] == 'confirmed' and (r[3] == nil or r[3] == '') then
      slots_release(cal, registry, stats, r[5], r[6], r[7], r[8], r[9], r[12])
      redis.call('HSET', record, 'status', 'cancelled', 'cancelled_at', now, 'cancelled_by',
        actor, 'cancel_reason', 'account deleted')
      audit(stream, maxlen, 'cancel', actor, r[10], room, 'account deleted', now)
      if a.mail_address and a.mail_address ~= '' then
        redis.call('XADD', outbox, '*', 'm', outbox_entry(OUTBOX_CANCEL_TO, {booking_id = r[10],
          lang = a.mail_lang, name = a.mail_name, address = a.mail_address, by = by}))
      end
      cancelled = cancelled + 1
      -- The waiters of every month it freed, per class.
      cal_of[r[5]] = append(cal_of[r[5]] or {}, cal)
    end
    redis.call('HSET', record, 'owner', '0')
  end
  -- Their holds here, a plain one or a priority one (granted, or still pending for them), go:
  -- a deleted person's hold would keep its slots from everyone until it ran out.
  local theirs, flat = {}, redis.call('HGETALL', holds)
  for i = 1, #flat, 2 do
    local holder = parse_hold(flat[i + 1]).owner
    if holder == owner or holder == PRIORITY_PENDING .. owner then
      theirs[flat[i]] = flat[i + 1]
    end
  end
  drop_holds(holds, k.hold_days, theirs, '', {})
  for id, value in pairs(theirs) do
    notices_opened(notices, id, tostring(parse_hold(value).expiry))
  end
  local mine = {}
  for _, member in ipairs(redis.call('ZRANGE', waits, 0, -1)) do
    if parse_wait(member).person == owner then
      mine[#mine + 1] = member
    end
  end
  if #mine > 0 then
    redis.call('ZREM', waits, unpack(mine))
  end
  for _, member in ipairs(redis.call('HKEYS', notices)) do
    if parse_wait(member).person == owner then
      redis.call('HDEL', notices, member)
    end
  end
  waits_release(waits, notices, holds, k.hold_days, outbox, cal_of, now, a.priority_hold_id,
    hold_ttl, room, k.closures, first_day, split(a.day_starts))
  return {'ok', cancelled, #rows - cancelled}
end

redis.register_function{function_name = 'booking_owner_forget', callback = owner_forget}
