-- accounts: the people's addresses (claims, confirmation, changes), the gates of mail someone asks
-- for, visits, and every function's registration (the functions of people.lua included).

-- Take `field` out of the hash `index`, only if it still names this person. Returns 1 | 0.
local function entry_forget(index, field, person_id)
  if redis.call('HGET', index, field) == person_id then
    return redis.call('HDEL', index, field)
  end
  return 0
end

-- A verified address (someone else may have verified it since).
local function email_forget(keys, args)
  local k, a = named(keys, EMAIL_FORGET_KEYS), named(args, EMAIL_FORGET_ARGS)
  return entry_forget(k.by_email, a.email, a.person_id)
end

-- A confirmed address is one account's: the first to confirm it keeps it until they let it go
-- (change or clear it, delete the account). Returns 'ok' (also when it is theirs already) |
-- 'taken' (another account's: nothing is written).
local function email_claim(keys, args)
  local k, a = named(keys, EMAIL_CLAIM_KEYS), named(args, EMAIL_CLAIM_ARGS)
  local owner = redis.call('HGET', k.by_email, a.email)
  if owner and owner ~= a.person_id then return 'taken' end
  redis.call('HSET', k.by_email, a.email, a.person_id)
  return 'ok'
end

-- The person's flag, once their address is claimed in the index (another slot on a cluster):
-- set only while the person still has the address the link was for. An address changed
-- between the link's check and this call is not confirmed by it. A new address waiting while a
-- confirmed one stays in use (`email_pending`) takes its place here. Returns 1 (set, or set
-- already) | 2 (the waiting address took the confirmed one's place) | 0 (the person has
-- another address, or is gone: nothing is written).
local function email_confirm(keys, args)
  local k, a = named(keys, EMAIL_CONFIRM_KEYS), named(args, EMAIL_CONFIRM_ARGS)
  if redis.call('HGET', k.person, 'email') == a.email then
    redis.call('HSET', k.person, 'email_verified', '1')
    return 1
  end
  if redis.call('HGET', k.person, 'email_pending') ~= a.email then return 0 end
  redis.call('HSET', k.person, 'email', a.email, 'email_verified', '1')
  redis.call('HDEL', k.person, 'email_pending')
  return 2
end

-- A person's new address (checked, in its one form), or none, decided and written in one step:
-- two forms sent at once change it once, and only the one that changed it sends mail. The
-- address in use, or the one waiting already, changes nothing ('same'; going back to the address
-- in use drops a waiting one); a new one beside a confirmed address waits in `email_pending`
-- ('waiting'); else it replaces the address, unconfirmed ('set'), or clears it ('cleared'). The
-- language (when given) is saved whatever the address. Returns {status, the address before, '1'
-- when it was confirmed else '0'} | {'gone', '', '0'} (no such person: nothing is written).
local function email_set(keys, args)
  local k, a = named(keys, EMAIL_SET_KEYS), named(args, EMAIL_SET_ARGS)
  if redis.call('EXISTS', k.person) == 0 then return {'gone', '', '0'} end
  if a.language ~= '' then redis.call('HSET', k.person, 'lang', a.language) end
  local current = redis.call('HGET', k.person, 'email') or ''
  local confirmed = current ~= '' and redis.call('HGET', k.person, 'email_verified') == '1'
  local was = confirmed and '1' or '0'
  if a.email == current then
    redis.call('HDEL', k.person, 'email_pending')
    return {'same', current, was}
  end
  if confirmed and a.email ~= '' then
    if redis.call('HGET', k.person, 'email_pending') == a.email then
      return {'same', current, was}
    end
    redis.call('HSET', k.person, 'email_pending', a.email)
    return {'waiting', current, was}
  end
  redis.call('HSET', k.person, 'email', a.email, 'email_verified', '0')
  redis.call('HDEL', k.person, 'email_pending')
  return {a.email == '' and 'cleared' or 'set', current, was}
end

-- A look-alike entry (a name claimed under an older skeleton may share another name's).
local function skeleton_forget(keys, args)
  local k, a = named(keys, SKELETON_FORGET_KEYS), named(args, SKELETON_FORGET_ARGS)
  return entry_forget(k.by_skeleton, a.skeleton, a.person_id)
end

redis.register_function{function_name='accounts_person_create', callback=person_create}
redis.register_function{function_name='accounts_name_claim', callback=name_claim}
redis.register_function{function_name='accounts_person_discard', callback=person_discard}
redis.register_function{function_name='accounts_email_claim', callback=email_claim}
redis.register_function{function_name='accounts_email_forget', callback=email_forget}
redis.register_function{function_name='accounts_email_confirm', callback=email_confirm}
redis.register_function{function_name='accounts_email_set', callback=email_set}
redis.register_function{function_name='accounts_skeleton_forget', callback=skeleton_forget}
redis.register_function{function_name='accounts_staff_set', callback=staff_set}
redis.register_function{function_name='accounts_login_gate', callback=login_gate}
redis.register_function{function_name='accounts_login_passed', callback=login_passed}
redis.register_function{function_name='accounts_login_dropped', callback=login_dropped}
-- A mail someone asked for (a reset link, a confirmation link): at most `limit` per window for
-- the person, for the address it goes to and for the asking client (a limit of 0: not
-- counted). Every gate is checked before any is counted, so a refused mail uses up nothing.
-- KEYS: the three zsets; ARGV: now_ms, attempt id, then limit and window ms of each
-- Returns 0 when the mail may go, else the epoch ms when the gate that refused opens again.
local function mail_gate(keys, args)
  local k, a = named(keys, MAIL_GATE_KEYS), named(args, MAIL_GATE_ARGS)
  local now = tonumber(a.now_ms)
  if not now or not a.attempt_id then
    return redis.error_reply('ERR accounts_mail_gate: malformed call')
  end
  local gates = {}
  for _, name in ipairs(MAIL_GATE_KEYS) do
    local limit, window = tonumber(a[name .. '_limit']), tonumber(a[name .. '_window_ms'])
    if not limit or not window then
      return redis.error_reply('ERR accounts_mail_gate: malformed call')
    end
    if limit > 0 then gates[#gates + 1] = {k[name], limit, window} end
  end
  if #gates > 0 and redis.call('ZSCORE', gates[1][1], a.attempt_id) then return 0 end
  local opens = 0
  for _, gate in ipairs(gates) do
    local since = '(' .. tostring(now - gate[3])
    if redis.call('ZCOUNT', gate[1], since, '+inf') >= gate[2] then
      local oldest = redis.call('ZRANGEBYSCORE', gate[1], since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      opens = math.max(opens, tonumber(oldest[2]) + gate[3])
    end
  end
  if opens > 0 then return opens end
  for _, gate in ipairs(gates) do
    redis.call('ZADD', gate[1], now, a.attempt_id)
    redis.call('ZREMRANGEBYSCORE', gate[1], '-inf', '(' .. tostring(now - gate[3]))
    redis.call('PEXPIRE', gate[1], gate[3])
  end
  return 0
end

-- One flush's page views, added once: a flush sent again (its reply lost while the store
-- stalled, which then ran the first send all the same) finds its id and adds nothing. Ids are
-- kept an hour.
-- KEYS: applied, then the views counter of each day; ARGV: flush id, now ms, the counters'
-- life in seconds, then the views of each day (same order). Returns 1 (added) | 0 (had been).
local function visits_add(keys, args)
  local k, a = named(keys, VISITS_ADD_KEYS), named(args, VISITS_ADD_ARGS)
  local now, keep, first = tonumber(a.now_ms), tonumber(a.keep_s), #VISITS_ADD_ARGS
  if not a.flush_id or a.flush_id == '' or not now or not keep
      or #args - first ~= #keys - 1 then
    return redis.error_reply('ERR accounts_visits_add: malformed call')
  end
  if redis.call('ZSCORE', k.applied, a.flush_id) then return 0 end
  for i = 2, #keys do  -- every counter checked before the first is written
    local kind = redis.call('TYPE', keys[i]).ok
    if not tonumber(args[first + i - 1]) or (kind ~= 'string' and kind ~= 'none') then
      return redis.error_reply('ERR accounts_visits_add: not a counter: ' .. keys[i])
    end
  end
  for i = 2, #keys do
    redis.call('INCRBY', keys[i], args[first + i - 1])
    redis.call('EXPIRE', keys[i], keep)
  end
  -- Trimmed by the store's own clock: a worker whose clock runs ahead must not drop the ids
  -- other workers wrote within the hour.
  local time = redis.call('TIME')
  local store_now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  redis.call('ZADD', k.applied, store_now, a.flush_id)
  redis.call('ZREMRANGEBYSCORE', k.applied, '-inf', '(' .. tostring(store_now - 3600000))
  redis.call('PEXPIRE', k.applied, 3600000)
  return 1
end

redis.register_function{function_name='accounts_signup_gate', callback=signup_gate}
redis.register_function{function_name='accounts_visits_add', callback=visits_add}
redis.register_function{function_name='accounts_mail_gate', callback=mail_gate}
redis.register_function{function_name='accounts_recent_logins', callback=recent_logins,
  flags={'no-writes'}}
redis.register_function{function_name='accounts_top_logins', callback=top_logins,
  flags={'no-writes'}}
