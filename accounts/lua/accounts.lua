#!lua name=accounts

-- Call specs: the names of each function's KEYS and ARGV, in order (a function reads its call
-- through `named`). accounts/calls.py declares the same lists for Python, and
-- tests/test_function_calls.py checks that the two agree.
local SIGNUP_KEYS = {'by_name', 'names', 'person', 'last_id'}
local SIGNUP_ARGS = {'name_key', 'username', 'password', 'is_staff', 'joined_ms', 'id', 'token'}
local LOGIN_FAILURE_KEYS = {'failures', 'lock'}
local LOGIN_FAILURE_ARGS = {'now_ms', 'window_ms', 'limit', 'lock_ms', 'attempt_id'}
local RECENT_LOGINS_KEYS = {'recent', 'names'}
local RECENT_LOGINS_ARGS = {'count'}
local TOP_LOGINS_KEYS = {'leaderboard', 'names'}
local TOP_LOGINS_ARGS = {'count'}
local STAFF_SET_KEYS = {'person'}
local STAFF_SET_ARGS = {'is_staff'}

-- A list's items by the names of `names` (same order): named({'a', 'b'}, {'x', 'y'}).x == 'a'.
local function named(values, names)
  local out = {}
  for i, name in ipairs(names) do out[name] = values[i] end
  return out
end

-- Sign-up: claim a name and write the person, all or nothing.
-- KEYS: by-name hash, names-by-id hash, person hash (for ARGV id), last-id string
-- ARGV: name_key, username, password_hash, is_staff (0|1), joined_ms, id, signup token
-- The caller proposes the id (last-id + 1) and a unique token; a retried call (redis-py retries
-- after a lost reply) finds its own token on the person and reports success again.
-- Returns {"ok", id} | {"taken", ""} | {"retry", last_id}
local function signup(keys, args)
  local k, a = named(keys, SIGNUP_KEYS), named(args, SIGNUP_ARGS)
  local by_name, names, person, last_id = k.by_name, k.names, k.person, k.last_id
  local name_key, username, password, is_staff, joined, id, token =
    a.name_key, a.username, a.password, a.is_staff, a.joined_ms, a.id, a.token
  local owner = redis.call('HGET', by_name, name_key)
  if owner then
    if owner == id and redis.call('HGET', person, 'signup_token') == token then
      return {'ok', id}
    end
    return {'taken', ''}
  end
  local last = tonumber(redis.call('GET', last_id) or '0')
  if tonumber(id) ~= last + 1 or redis.call('EXISTS', person) == 1 then
    return {'retry', tostring(last)}
  end
  redis.call('SET', last_id, id)
  redis.call('HSET', person, 'username', username, 'name_key', name_key, 'password', password,
    'is_staff', is_staff, 'joined', joined, 'logins', 0, 'signup_token', token)
  redis.call('HSET', by_name, name_key, id)
  redis.call('HSET', names, id, username)
  return {'ok', id}
end

-- A failed login of one (username, client) pair; locks the pair at the limit.
-- KEYS: failures zset, lock string
-- ARGV: now_ms, window_ms, limit, lock_ms, attempt id (unique, so a retried call counts once)
-- Returns the lock's end (epoch ms) or 0.
local function login_failure(keys, args)
  local k, a = named(keys, LOGIN_FAILURE_KEYS), named(args, LOGIN_FAILURE_ARGS)
  local failures, lock = k.failures, k.lock
  local now, window, limit, lock_ms = tonumber(a.now_ms), tonumber(a.window_ms),
    tonumber(a.limit), tonumber(a.lock_ms)
  redis.call('ZADD', failures, now, a.attempt_id)
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
  local k, a = named(keys, RECENT_LOGINS_KEYS), named(args, RECENT_LOGINS_ARGS)
  local entries = redis.call('LRANGE', k.recent, 0, tonumber(a.count) - 1)
  local out = {}
  if #entries == 0 then return out end
  local ids = {}
  for i, entry in ipairs(entries) do
    ids[i] = string.match(entry, '^(%d+):')
  end
  local names = redis.call('HMGET', k.names, unpack(ids))
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
  local k, a = named(keys, TOP_LOGINS_KEYS), named(args, TOP_LOGINS_ARGS)
  local ranked = redis.call('ZRANGE', k.leaderboard, 0, tonumber(a.count) - 1, 'REV', 'WITHSCORES')
  local out = {}
  if #ranked == 0 then return out end
  local ids = {}
  for i = 1, #ranked, 2 do ids[#ids + 1] = ranked[i] end
  local names = redis.call('HMGET', k.names, unpack(ids))
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
  local k, a = named(keys, STAFF_SET_KEYS), named(args, STAFF_SET_ARGS)
  local username = redis.call('HGET', k.person, 'username')
  if not username then return false end
  redis.call('HSET', k.person, 'is_staff', a.is_staff)
  return username
end

redis.register_function{function_name='accounts_signup', callback=signup}
redis.register_function{function_name='accounts_staff_set', callback=staff_set}
redis.register_function{function_name='accounts_login_failure', callback=login_failure}
redis.register_function{function_name='accounts_recent_logins', callback=recent_logins,
  flags={'no-writes'}}
redis.register_function{function_name='accounts_top_logins', callback=top_logins,
  flags={'no-writes'}}
