-- The sales window (booking/engine/window.py): booking_window_set stores a new window and its
-- staff audit entry in one call, the entry naming the window it replaced as the store held it
-- (a cached copy may be seconds old: two saves in a row would each name a stale "before"). A
-- save sent again (a retry, a second press of the same form) finds its own request id on the
-- stored window and answers as it did, writing nothing. A save of the window in force (stored,
-- or the environment's while none is) writes nothing either: no change, no audit entry.

local WINDOW_SET_KEYS = {'window', 'audit'}
local WINDOW_SET_ARGS = {'days', 'first', 'last', 'unset', 'after', 'actor', 'now_ms',
                         'audit_maxlen', 'request_id'}
local WINDOW_SET_REPLIES = {'set before', 'same before', 'invalid what'}

-- A stored window in the audit's words (booking.engine.window.window_describe says the same).
local function window_words(days, first, last)
  if first and first ~= '' and last and last ~= '' then
    return 'fixed ' .. first .. '..' .. last
  end
  return 'rolling ' .. days .. ' days'
end

-- KEYS: window, audit. ARGV: days, first, last (the new window; '' first and last: rolling),
-- unset (the words of the environment's window, in force while none is stored), after (the
-- audit's words for the new window, with the reason), actor, now_ms, audit_maxlen, request_id
-- (the form's; '' for none). Returns {'set', before} (the words of the window replaced) |
-- {'same', before} (the window asked for is the one in force: nothing written) | {'invalid', what}
local function window_set(keys, args)
  local k, a = named(keys, WINDOW_SET_KEYS), named(args, WINDOW_SET_ARGS)
  if not k.audit or not a.audit_maxlen or not tonumber(a.days) then
    return {'invalid', 'call'}
  end
  local stored = redis.call('HMGET', k.window, 'days', 'first', 'last', 'request', 'before')
  if a.request_id ~= '' and stored[4] == a.request_id then
    return {'set', stored[5] or ''}  -- this save, done already
  end
  local before = a.unset
  if stored[1] and stored[1] ~= '' then
    before = window_words(stored[1], stored[2], stored[3])
  end
  if before == window_words(a.days, a.first, a.last) then
    return {'same', before}
  end
  redis.call('DEL', k.window)
  redis.call('HSET', k.window, 'days', a.days, 'first', a.first, 'last', a.last,
             'request', a.request_id, 'before', before)
  redis.call('XADD', k.audit, 'MAXLEN', '~', a.audit_maxlen, '*', 'kind', 'sales_window',
             'actor', a.actor, 'subject', '', 'detail', before .. ' -> ' .. a.after,
             'at', a.now_ms)
  return {'set', before}
end

redis.register_function{function_name = 'booking_window_set', callback = window_set}
