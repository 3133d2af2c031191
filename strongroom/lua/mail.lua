#!lua name=mail

-- Call specs: the names of each function's KEYS and ARGV, in order. strongroom/outbox.py
-- declares the same lists for Python, and tests/store/test_function_calls.py checks them.
local DEAD_RETRY_KEYS = {'dead', 'queue'}
local DEAD_RETRY_ARGS = {'letter', 'field'}
local DEAD_DISCARD_KEYS = {'dead'}
local DEAD_DISCARD_ARGS = {'letter'}
local QUEUE_ONCE_KEYS = {'once', 'queue'}
local QUEUE_ONCE_ARGS = {'member', 'field', 'keep_ms'}

local function named(values, names)
  local out = {}
  for i, name in ipairs(names) do out[name] = values[i] end
  return out
end

-- Staff's "retry" on a dead letter: queue its message again and forget the letter, in one step,
-- so that two presses at once (two tabs, a double click) queue it once: the second finds no
-- letter. The message goes to the site's outbox ({mail}:queue, the letter's own slot) whatever
-- outbox it failed in: a room's outbox lives in the room's slot, and a message is rendered
-- from its entry alone.
-- Returns {'queued', entry id} | {'gone'} (handled already) | {'invalid', what}.
local function dead_retry(keys, args)
  local k, a = named(keys, DEAD_RETRY_KEYS), named(args, DEAD_RETRY_ARGS)
  if not a.letter or not a.field or a.field == '' then return {'invalid', 'call'} end
  local stored = redis.call('HGET', k.dead, a.letter)
  if not stored then return {'gone'} end
  local ok, letter = pcall(cjson.decode, stored)
  if not ok or type(letter) ~= 'table' or type(letter.member) ~= 'string'
      or letter.member == '' then
    return {'invalid', 'letter'}
  end
  local id = redis.call('XADD', k.queue, '*', a.field, letter.member)
  redis.call('HDEL', k.dead, a.letter)
  return {'queued', id}
end

-- Staff's "discard": forget the letter. Returns 'discarded' | 'gone' (handled already).
local function dead_discard(keys, args)
  local k, a = named(keys, DEAD_DISCARD_KEYS), named(args, DEAD_DISCARD_ARGS)
  if redis.call('HDEL', k.dead, a.letter or '') == 1 then return 'discarded' end
  return 'gone'
end

-- Queue a message once for one form request (staff's "send the receipt again"): a double click
-- or the form sent again finds its request's mark and queues nothing more.
-- Returns {'queued', entry id} | {'again'} | {'invalid', what}.
local function queue_once(keys, args)
  local k, a = named(keys, QUEUE_ONCE_KEYS), named(args, QUEUE_ONCE_ARGS)
  local keep = tonumber(a.keep_ms)
  if not a.member or a.member == '' or not a.field or a.field == '' or not keep or keep < 1 then
    return {'invalid', 'call'}
  end
  if not redis.call('SET', k.once, '1', 'NX', 'PX', keep) then return {'again'} end
  return {'queued', redis.call('XADD', k.queue, '*', a.field, a.member)}
end

redis.register_function{function_name='mail_dead_retry', callback=dead_retry}
redis.register_function{function_name='mail_dead_discard', callback=dead_discard}
redis.register_function{function_name='mail_queue_once', callback=queue_once}
