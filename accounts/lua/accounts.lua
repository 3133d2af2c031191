#!lua name=accounts

-- Sign-up: claim a name and write the person, all or nothing.
-- KEYS: by-name hash, names-by-id hash, person hash (for ARGV id), last-id string
-- ARGV: name_key, username, password_hash, is_staff (0|1), joined_ms, id, signup token
-- The caller proposes the id (last-id + 1) and a unique token; a retried call (redis-py retries
-- after a lost reply) finds its own token on the person and reports success again.
-- Returns {"ok", id} | {"taken", ""} | {"retry", last_id}
local function signup(keys, args)
  local by_name, names, person, last_id = keys[1], keys[2], keys[3], keys[4]
  local name_key, username, password, is_staff, joined, id, token =
    args[1], args[2], args[3], args[4], args[5], args[6], args[7]
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

-- Take a verified address out of the index, only if it still names this person (someone else
-- may have verified it since). KEYS: by-email hash; ARGV: address, person id. Returns 1 | 0.
local function email_forget(keys, args)
  if redis.call('HGET', keys[1], args[1]) == args[2] then
    return redis.call('HDEL', keys[1], args[1])
  end
  return 0
end

redis.register_function{function_name='accounts_signup', callback=signup}
redis.register_function{function_name='accounts_email_forget', callback=email_forget}
redis.register_function{function_name='accounts_staff_set', callback=staff_set}
redis.register_function{function_name='accounts_login_failure', callback=login_failure}
redis.register_function{function_name='accounts_recent_logins', callback=recent_logins,
  flags={'no-writes'}}
redis.register_function{function_name='accounts_top_logins', callback=top_logins,
  flags={'no-writes'}}
