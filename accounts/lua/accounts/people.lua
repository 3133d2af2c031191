#!lua name=accounts

-- Call specs: the names of each function's KEYS and ARGV, in order (a function reads its call
-- through `named`). accounts/calls.py declares the same lists for Python, and
-- tests/store/test_function_calls.py checks that the two agree.
local PERSON_CREATE_KEYS = {'person'}
local PERSON_CREATE_ARGS = {'username', 'name_key', 'password', 'is_staff', 'joined_ms', 'token'}
local NAME_CLAIM_KEYS = {'by_name', 'names', 'by_skeleton'}
local NAME_CLAIM_ARGS = {'name_key', 'id', 'username', 'skeleton'}
local PERSON_DISCARD_KEYS = {'person'}
local PERSON_DISCARD_ARGS = {'token'}
local LOGIN_GATE_KEYS = {'pair', 'pair_lock', 'trusted', 'address', 'address_lock', 'name',
  'name_pace', 'name_turns'}
local LOGIN_GATE_ARGS = {'now_ms', 'window_ms', 'pair_limit', 'lock_ms', 'address_limit',
  'name_limit', 'slow_ms', 'attempt_id', 'pace_free', 'known_device'}
local LOGIN_PASSED_KEYS = LOGIN_GATE_KEYS
local LOGIN_PASSED_ARGS = {'attempt_id', 'trust_ms'}
local LOGIN_DROPPED_KEYS = LOGIN_GATE_KEYS
local LOGIN_DROPPED_ARGS = {'attempt_id'}
local SIGNUP_GATE_KEYS = {'attempts'}
local SIGNUP_GATE_ARGS = {'now_ms', 'window_ms', 'limit', 'attempt_id'}
local RECENT_LOGINS_KEYS = {'recent', 'names'}
local RECENT_LOGINS_ARGS = {'count'}
local TOP_LOGINS_KEYS = {'leaderboard', 'names'}
local TOP_LOGINS_ARGS = {'count'}
local STAFF_SET_KEYS = {'person'}
local STAFF_SET_ARGS = {'is_staff'}
local STAFF_SET_REPLIES = {'changed username', 'same username', 'gone'}
local EMAIL_CLAIM_KEYS = {'by_email'}
local EMAIL_CLAIM_ARGS = {'email', 'person_id'}
local EMAIL_CONFIRM_KEYS = {'person'}
local EMAIL_CONFIRM_ARGS = {'email'}
local EMAIL_SET_KEYS = {'person'}
local EMAIL_SET_ARGS = {'email', 'language'}
local EMAIL_FORGET_KEYS = {'by_email'}
local EMAIL_FORGET_ARGS = {'email', 'person_id'}
local SKELETON_FORGET_KEYS = {'by_skeleton'}
local SKELETON_FORGET_ARGS = {'skeleton', 'person_id'}
local MAIL_GATE_KEYS = {'person', 'address', 'client'}
local MAIL_GATE_ARGS = {'now_ms', 'attempt_id', 'person_limit', 'person_window_ms',
  'address_limit', 'address_window_ms', 'client_limit', 'client_window_ms'}
local VISITS_ADD_KEYS = {'applied'}
local VISITS_ADD_ARGS = {'flush_id', 'now_ms', 'keep_s'}

-- A list's items by the names of `names` (same order): named({'a', 'b'}, {'x', 'y'}).x == 'a'.
local function named(values, names)
  local out = {}
  for i, name in ipairs(names) do out[name] = values[i] end
  return out
end

-- Sign-up takes two steps because the person ({person:<id>}) and the name map ({people}) live in
-- different slots on a cluster. Step 1 writes the new person under a fresh id (INCR of last-id);
-- step 2, the commit point, claims the name for it; a sign-up that lost the name discards its
-- person. A person whose name was never claimed is invisible (no name leads to it).
-- Step 1. Returns 'ok' (also for a retried call, which finds its own token) | 'exists' (the id
-- is in use, e.g. the counter went back after a failover: the caller takes another id).
local function person_create(keys, args)
  local person, a = named(keys, PERSON_CREATE_KEYS).person, named(args, PERSON_CREATE_ARGS)
  if redis.call('EXISTS', person) == 1 then
    if redis.call('HGET', person, 'signup_token') == a.token then return 'ok' end
    return 'exists'
  end
  redis.call('HSET', person, 'username', a.username, 'name_key', a.name_key, 'password',
    a.password, 'is_staff', a.is_staff, 'joined', a.joined_ms, 'logins', 0, 'signup_token',
    a.token)
  return 'ok'
end

-- Step 2. Returns 'ok' (also when a retried call finds its own claim) | 'taken' | 'lookalike'
-- (another person's name has the same confusable skeleton: it would pass for theirs).
local function name_claim(keys, args)
  local k, a = named(keys, NAME_CLAIM_KEYS), named(args, NAME_CLAIM_ARGS)
  local owner = redis.call('HGET', k.by_name, a.name_key)
  if owner then
    if owner == a.id then return 'ok' end
    return 'taken'
  end
  local lookalike = redis.call('HGET', k.by_skeleton, a.skeleton)
  if lookalike and lookalike ~= a.id then return 'lookalike' end
  redis.call('HSET', k.by_name, a.name_key, a.id)
  redis.call('HSET', k.names, a.id, a.username)
  redis.call('HSET', k.by_skeleton, a.skeleton, a.id)
  return 'ok'
end

-- A sign-up that lost the name takes its person back (only its own: the token must match).
-- Returns 1 when deleted.
local function person_discard(keys, args)
  local person, a = named(keys, PERSON_DISCARD_KEYS).person, named(args, PERSON_DISCARD_ARGS)
  if redis.call('HGET', person, 'signup_token') == a.token then
    return redis.call('DEL', person)
  end
  return 0
end

-- The login throttle's gate, taken before a password is checked: checks every limit, then
-- counts this attempt as a failure at once (a success takes it back), so parallel attempts can
-- never be checked more often than the limits allow.
-- KEYS: 1 pair failures zset, 2 pair lock, 3 pair trusted, 4 address failures zset,
--       5 address lock, 6 name failures zset, 7 name pace, 8 name turns (all under one hash
--       tag)
-- ARGV: now_ms, window_ms, pair limit, lock_ms, address limit, name limit, slow_ms, attempt id,
--       pace_free, known_device (0|1)
-- Returns {"go", lock end or 0 (this attempt locked the pair), "", known: "1" for a pair or a
-- browser that skips the limits below, else "0"} | {"locked", lock end} (the pair's lock) |
-- {"locked", lock end, "address"} (the client's, whatever the name) | {"locked", pace end,
-- "name"} (the name's pace).
-- A pair (name, client) that logged in within the trust period, and a browser that shows a
-- live known-device cookie of the name's person (known_device), skip the address lock and the
-- name's pace: others' guesses never keep a person out of their usual connection or device.
-- Once a name has `name limit` failures in the window, from any clients, the pairs that have
-- more than `pace_free` failures of it themselves may try it once per slow_ms between them all
-- (the name's pace); a pair with `pace_free` failures or fewer (a person who mistyped once or
-- twice) is not paced. Each address still has its own lock after `pair limit` failures.
-- A paced pair refused is given a turn of its own (name_turns: after the pace and after every
-- turn given before, one slow_ms apart), which no other pair may take: whoever was told to
-- come back then finds it free, however many poll meanwhile. A turn not taken within slow_ms
-- of its time is given up.
-- A paced pair's turn at the name's pace (see login_gate): nil when it may try now (its own
-- turn has come, or no turn is kept and the pace is over), else when its turn comes.
local function name_turn(turns, pair, pace_ends, now, slow_ms)
  redis.call('ZREMRANGEBYSCORE', turns, '-inf', '(' .. tostring(now - slow_ms))
  local mine = tonumber(redis.call('ZSCORE', turns, pair))
  if mine then
    if mine > now then return mine end
    redis.call('ZREM', turns, pair)
    return nil
  end
  local last = redis.call('ZRANGE', turns, -1, -1, 'WITHSCORES')
  if pace_ends <= now and #last == 0 then return nil end
  local at = math.max(pace_ends, now)
  if #last > 0 then at = math.max(at, tonumber(last[2]) + slow_ms) end
  redis.call('ZADD', turns, at, pair)
  redis.call('PEXPIRE', turns, at - now + 2 * slow_ms)
  return at
end

local function login_gate(keys, args)
  local k, a = named(keys, LOGIN_GATE_KEYS), named(args, LOGIN_GATE_ARGS)
  local pair, pair_lock, trusted, address, address_lock, name =
    k.pair, k.pair_lock, k.trusted, k.address, k.address_lock, k.name
  local now, window, pair_limit, lock_ms = tonumber(a.now_ms), tonumber(a.window_ms),
    tonumber(a.pair_limit), tonumber(a.lock_ms)
  local address_limit, name_limit, slow_ms = tonumber(a.address_limit), tonumber(a.name_limit),
    tonumber(a.slow_ms)
  local pace_free = tonumber(a.pace_free)
  local attempt = a.attempt_id
  if not (now and window and pair_limit and lock_ms and address_limit and name_limit and slow_ms
      and pace_free) or attempt == nil then
    return redis.error_reply("ERR accounts_login_gate: malformed call")
  end
  local is_known = redis.call('EXISTS', trusted) == 1 or a.known_device == '1'
  local known = is_known and '1' or '0'
  if redis.call('ZSCORE', pair, attempt) then
    return {'go', 0, '', known}  -- a retried call: this attempt was let through already
  end
  local since = '(' .. tostring(now - window)
  local ends = tonumber(redis.call('GET', pair_lock) or '0')
  if ends > now then return {'locked', ends} end
  local address_count = redis.call('ZCOUNT', address, since, '+inf')
  local pair_count = redis.call('ZCOUNT', pair, since, '+inf')
  local paced = not is_known and pair_count > pace_free
  if not is_known then
    ends = tonumber(redis.call('GET', address_lock) or '0')
    if ends > now then return {'locked', ends, 'address'} end
    if paced then
      local turn = name_turn(k.name_turns, pair, tonumber(redis.call('GET', k.name_pace) or '0'),
        now, slow_ms)
      if turn then return {'locked', turn, 'name'} end
    end
  end
  if pair_count >= pair_limit then
    ends = now + lock_ms
    redis.call('SET', pair_lock, tostring(ends), 'PX', lock_ms)
    return {'locked', ends}
  end
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
  elseif paced and name_count + 1 >= name_limit then
    -- Only a paced attempt takes the name's turn: a person's own mistypes never start it.
    redis.call('SET', k.name_pace, tostring(now + slow_ms), 'PX', slow_ms)
  end
  -- A lock already running is not made longer: only a known pair gets here while it runs,
  -- and its owner's attempt (a success is taken back) must not keep the others out longer.
  if address_count + 1 >= address_limit
      and tonumber(redis.call('GET', address_lock) or '0') <= now then
    redis.call('SET', address_lock, tostring(now + lock_ms), 'PX', lock_ms)
  end
  return {'go', locked_until, '', known}
end

-- The attempt let through by the gate was a success: take it back from every count, lift the
-- pair's lock and trust the pair (name, client) for `trust_ms`.
-- KEYS: the gate's keys 1..7; ARGV: attempt id, trust_ms
local function login_passed(keys, args)
  local k, a = named(keys, LOGIN_PASSED_KEYS), named(args, LOGIN_PASSED_ARGS)
  local trust_ms = tonumber(a.trust_ms)
  if not trust_ms then
    return redis.error_reply("ERR accounts_login_passed: malformed call")
  end
  redis.call('DEL', k.pair, k.pair_lock)
  redis.call('ZREM', k.address, a.attempt_id)
  redis.call('ZREM', k.name, a.attempt_id)
  redis.call('SET', k.trusted, '1', 'PX', trust_ms)
  return 1
end

-- The attempt let through by the gate was not checked after all (the site was too busy to
-- hash it): take it back from every count, trusting nothing. A lock it started stays, as it
-- would after a wrong password.
-- KEYS: the gate's keys 1..7; ARGV: attempt id
local function login_dropped(keys, args)
  local k, a = named(keys, LOGIN_DROPPED_KEYS), named(args, LOGIN_DROPPED_ARGS)
  if not a.attempt_id then
    return redis.error_reply("ERR accounts_login_dropped: malformed call")
  end
  for _, key in ipairs({k.pair, k.address, k.name}) do
    redis.call('ZREM', key, a.attempt_id)
  end
  return 1
end

-- Sign-up from one client: at most `limit` within the window, counted before the account is
-- made, so parallel sign-ups cannot outrun it.
-- KEYS: the client's sign-up zset; ARGV: now_ms, window_ms, limit, attempt id
-- Returns 0 when the sign-up may go ahead, else the epoch ms when the next one may.
local function signup_gate(keys, args)
  local attempts, a = named(keys, SIGNUP_GATE_KEYS).attempts, named(args, SIGNUP_GATE_ARGS)
  local now, window, limit = tonumber(a.now_ms), tonumber(a.window_ms), tonumber(a.limit)
  local attempt = a.attempt_id
  if not (now and window and limit) or attempt == nil then
    return redis.error_reply("ERR accounts_signup_gate: malformed call")
  end
  if redis.call('ZSCORE', attempts, attempt) then return 0 end
  local since = '(' .. tostring(now - window)
  if redis.call('ZCOUNT', attempts, since, '+inf') >= limit then
    local oldest = redis.call('ZRANGEBYSCORE', attempts, since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    return tonumber(oldest[2]) + window
  end
  redis.call('ZADD', attempts, now, attempt)
  redis.call('ZREMRANGEBYSCORE', attempts, '-inf', '(' .. tostring(now - window))
  redis.call('PEXPIRE', attempts, window)
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
-- KEYS: person hash; ARGV: is_staff (0|1). Returns {'changed', username} (the flag is set) |
-- {'same', username} (they already were what was asked: nothing is written) | {'gone'} (no such
-- person). Decided where it is written: of two presses at once, one answers 'changed' and only
-- its caller writes the staff audit entry.
local function staff_set(keys, args)
  local k, a = named(keys, STAFF_SET_KEYS), named(args, STAFF_SET_ARGS)
  local r = redis.call('HMGET', k.person, 'username', 'is_staff')
  local username, was = r[1], r[2] == '1'
  if not username then return {'gone'} end
  if was == (a.is_staff == '1') then return {'same', username} end
  redis.call('HSET', k.person, 'is_staff', a.is_staff)
  return {'changed', username}
end
