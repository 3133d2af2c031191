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

-- A failed login of one (username, client) pair; locks the pair at the limit.
-- KEYS: failures zset, lock string
-- ARGV: now_ms, window_ms, limit, lock_ms, attempt id (unique, so a retried call counts once)
-- Returns the lock's end (epoch ms) or 0.
local function login_failure(keys, args)
  local failures, lock = keys[1], keys[2]
  local now, window, limit, lock_ms = tonumber(args[1]), tonumber(args[2]),
    tonumber(args[3]), tonumber(args[4])
  redis.call('ZADD', failures, now, args[5])
  redis.call('ZREMRANGEBYSCORE', failures, '-inf', '(' .. tostring(now - window))
  if redis.call('ZCARD', failures) >= limit then
    local ends = now + lock_ms
    redis.call('SET', lock, tostring(ends), 'PX', lock_ms)
    redis.call('DEL', failures)
    return ends
  end
  redis.call('PEXPIRE', failures, window)
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
redis.register_function{function_name='accounts_login_failure', callback=login_failure}
redis.register_function{function_name='accounts_recent_logins', callback=recent_logins,
  flags={'no-writes'}}
redis.register_function{function_name='accounts_top_logins', callback=top_logins,
  flags={'no-writes'}}
