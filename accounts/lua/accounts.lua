#!lua name=accounts

-- Sign-up, step 1: write the new person under a fresh id (from INCR of last-id).
-- KEYS: person hash ({person:<id>}); ARGV: username, name_key, password_hash, is_staff (0|1),
-- joined_ms, signup token (unique per sign-up)
-- Returns 'ok' (also for a retried call, which finds its own token) | 'exists' (the id is in
-- use, e.g. the counter went back after a failover: the caller takes another id).
local function person_create(keys, args)
  local person = keys[1]
  if redis.call('EXISTS', person) == 1 then
    if redis.call('HGET', person, 'signup_token') == args[6] then return 'ok' end
    return 'exists'
  end
  redis.call('HSET', person, 'username', args[1], 'name_key', args[2], 'password', args[3],
    'is_staff', args[4], 'joined', args[5], 'logins', 0, 'signup_token', args[6])
  return 'ok'
end

-- Sign-up, step 2, the commit point: claim the name for the person written in step 1.
-- KEYS: by-name hash, names-by-id hash; ARGV: name_key, id, username
-- Returns 'ok' (also when a retried call finds its own claim) | 'taken'
local function name_claim(keys, args)
  local owner = redis.call('HGET', keys[1], args[1])
  if owner then
    if owner == args[2] then return 'ok' end
    return 'taken'
  end
  redis.call('HSET', keys[1], args[1], args[2])
  redis.call('HSET', keys[2], args[2], args[3])
  return 'ok'
end

-- A sign-up that lost the name takes its person back (only its own: the token must match).
-- KEYS: person hash; ARGV: signup token. Returns 1 when deleted.
local function person_discard(keys, args)
  if redis.call('HGET', keys[1], 'signup_token') == args[1] then
    return redis.call('DEL', keys[1])
  end
  return 0
end

-- The login throttle's gate, taken before a password is checked: checks every limit, then
-- counts this attempt as a failure at once (a success takes it back), so parallel attempts can
-- never be checked more often than the limits allow.
-- KEYS: 1 pair failures zset, 2 pair lock, 3 pair trusted, 4 address failures zset,
--       5 address lock, 6 name failures zset (all under one hash tag)
-- ARGV: now_ms, window_ms, pair limit, lock_ms, address limit, name limit, slow_ms, attempt id
-- Returns {"go", lock end or 0 (this attempt locked the pair)} | {"locked", lock end}.
-- A pair (name, client) that logged in within the trust period skips the address lock and the
-- name's slowdown: others' guesses never keep a person out of their usual connection. Once a
-- name has `name limit` failures in the window, from any clients, every other pair may try it
-- once per slow_ms: spread guessing is slowed, a real person waits a minute at most.
local function login_gate(keys, args)
  local pair, pair_lock, trusted, address, address_lock, name =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  local now, window, pair_limit, lock_ms = tonumber(args[1]), tonumber(args[2]),
    tonumber(args[3]), tonumber(args[4])
  local address_limit, name_limit, slow_ms = tonumber(args[5]), tonumber(args[6]),
    tonumber(args[7])
  local attempt = args[8]
  if not (now and window and pair_limit and lock_ms and address_limit and name_limit and slow_ms)
      or attempt == nil then
    return redis.error_reply("ERR accounts_login_gate: malformed call")
  end
  if redis.call('ZSCORE', pair, attempt) then
    return {'go', 0}  -- a retried call: this attempt was let through already
  end
  local is_trusted = redis.call('EXISTS', trusted) == 1
  local since = '(' .. tostring(now - window)
  local ends = tonumber(redis.call('GET', pair_lock) or '0')
  if ends > now then return {'locked', ends} end
  if not is_trusted then
    ends = tonumber(redis.call('GET', address_lock) or '0')
    if ends > now then return {'locked', ends} end
  end
  local pair_count = redis.call('ZCOUNT', pair, since, '+inf')
  if pair_count >= pair_limit then
    ends = now + lock_ms
    redis.call('SET', pair_lock, tostring(ends), 'PX', lock_ms)
    return {'locked', ends}
  end
  local address_count = redis.call('ZCOUNT', address, since, '+inf')
  local name_count = redis.call('ZCOUNT', name, since, '+inf')

  -- Every check is done: count the attempt.
  for _, key in ipairs({pair, address, name}) do
    redis.call('ZADD', key, now, attempt)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. tostring(now - window))
    redis.call('PEXPIRE', key, window)
  end
  local locked_until = 0
  if pair_count + 1 >= pair_limit then
    locked_until = now + lock_ms
    redis.call('SET', pair_lock, tostring(locked_until), 'PX', lock_ms)
  elseif not is_trusted and name_count + 1 >= name_limit then
    redis.call('SET', pair_lock, tostring(now + slow_ms), 'PX', slow_ms)
  end
  if address_count + 1 >= address_limit then
    redis.call('SET', address_lock, tostring(now + lock_ms), 'PX', lock_ms)
  end
  return {'go', locked_until}
end

-- The attempt let through by the gate was a success: take it back from every count, lift the
-- pair's lock and trust the pair (name, client) for `trust_ms`.
-- KEYS: the gate's keys 1..6; ARGV: attempt id, trust_ms
local function login_passed(keys, args)
  local trust_ms = tonumber(args[2])
  if not trust_ms then
    return redis.error_reply("ERR accounts_login_passed: malformed call")
  end
  redis.call('DEL', keys[1], keys[2])
  redis.call('ZREM', keys[4], args[1])
  redis.call('ZREM', keys[6], args[1])
  redis.call('SET', keys[3], '1', 'PX', trust_ms)
  return 1
end

-- Sign-up from one client: at most `limit` within the window, counted before the account is
-- made, so parallel sign-ups cannot outrun it.
-- KEYS: the client's sign-up zset; ARGV: now_ms, window_ms, limit, attempt id
-- Returns 0 when the sign-up may go ahead, else the epoch ms when the next one may.
local function signup_gate(keys, args)
  local now, window, limit = tonumber(args[1]), tonumber(args[2]), tonumber(args[3])
  if not (now and window and limit) or args[4] == nil then
    return redis.error_reply("ERR accounts_signup_gate: malformed call")
  end
  if redis.call('ZSCORE', keys[1], args[4]) then return 0 end
  local since = '(' .. tostring(now - window)
  if redis.call('ZCOUNT', keys[1], since, '+inf') >= limit then
    local oldest = redis.call('ZRANGEBYSCORE', keys[1], since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    return tonumber(oldest[2]) + window
  end
  redis.call('ZADD', keys[1], now, args[4])
  redis.call('ZREMRANGEBYSCORE', keys[1], '-inf', '(' .. tostring(now - window))
  redis.call('PEXPIRE', keys[1], window)
  return 0
end

-- Recent logins with names, in one call.
-- KEYS: recent list, names-by-id hash; ARGV: count
-- Returns a flat list: entry, name, entry, name, ... (entry is "<id>:<epoch ms>")
local function recent_logins(keys, args)
  local entries = redis.call('LRANGE', keys[1], 0, tonumber(args[1]) - 1)
  local out = {}
  if #entries == 0 then return out end
  local ids = {}
  for i, entry in ipairs(entries) do
    ids[i] = string.match(entry, '^(%d+):')
  end
  local names = redis.call('HMGET', keys[2], unpack(ids))
  for i, entry in ipairs(entries) do
    out[#out + 1] = entry
    out[#out + 1] = names[i] or ''
  end
  return out
end

-- The people who log in most, with names, in one call.
-- KEYS: leaderboard zset, names-by-id hash; ARGV: count
-- Returns a flat list: id, count, name, ...
local function top_logins(keys, args)
  local ranked = redis.call('ZRANGE', keys[1], 0, tonumber(args[1]) - 1, 'REV', 'WITHSCORES')
  local out = {}
  if #ranked == 0 then return out end
  local ids = {}
  for i = 1, #ranked, 2 do ids[#ids + 1] = ranked[i] end
  local names = redis.call('HMGET', keys[2], unpack(ids))
  for i = 1, #ids do
    out[#out + 1] = ids[i]
    out[#out + 1] = ranked[2 * i]
    out[#out + 1] = names[i] or ''
  end
  return out
end

-- Grant or revoke staff on an existing person only (never creating a stray hash).
-- KEYS: person hash; ARGV: is_staff (0|1). Returns the username, or false for no such person.
-- Setting a flag to a value is idempotent: a repeated call changes nothing more.
local function staff_set(keys, args)
  local username = redis.call('HGET', keys[1], 'username')
  if not username then return false end
  redis.call('HSET', keys[1], 'is_staff', args[1])
  return username
end

redis.register_function{function_name='accounts_person_create', callback=person_create}
redis.register_function{function_name='accounts_name_claim', callback=name_claim}
redis.register_function{function_name='accounts_person_discard', callback=person_discard}
redis.register_function{function_name='accounts_staff_set', callback=staff_set}
redis.register_function{function_name='accounts_login_gate', callback=login_gate}
redis.register_function{function_name='accounts_login_passed', callback=login_passed}
redis.register_function{function_name='accounts_signup_gate', callback=signup_gate}
redis.register_function{function_name='accounts_recent_logins', callback=recent_logins,
  flags={'no-writes'}}
redis.register_function{function_name='accounts_top_logins', callback=top_logins,
  flags={'no-writes'}}
