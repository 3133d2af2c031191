-- Closures: staff close a room for days or hours (booking/engine/closures.py); the taking
-- functions read the room's closures hash. booking_closure_write puts one closure into the room
-- or takes it out, and sets the room's edition in the same call (what the pages show of the
-- room changes with it).

local CLOSURE_WRITE_KEYS = {'closures', 'edition'}
local CLOSURE_WRITE_ARGS = {'closure_id', 'value'}
local CLOSURE_WRITE_REPLIES = {'written', 'same', 'invalid what'}

-- KEYS: closures, edition. ARGV: closure id, its value (CLOSURE_FIELDS joined by '|'; '' to
-- take it out). Returns {'written'} | {'same'} (the same write again: nothing written) |
-- {'invalid', what}
local function closure_write(keys, args)
  local k, a = named(keys, CLOSURE_WRITE_KEYS), named(args, CLOSURE_WRITE_ARGS)
  if not k.edition or not a.closure_id or a.closure_id == '' or not a.value then
    return {'invalid', 'call'}
  end
  local now = redis.call('HGET', k.closures, a.closure_id)
  if (now or '') == a.value then
    return {'same'}
  end
  edition_bump(k.edition)
  if a.value == '' then
    redis.call('HDEL', k.closures, a.closure_id)
  else
    redis.call('HSET', k.closures, a.closure_id, a.value)
  end
  return {'written'}
end

redis.register_function{function_name = 'booking_closure_write', callback = closure_write}
