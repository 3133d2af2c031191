-- A room's edition: every function that writes a key of a room sets the room's edition anew in
-- the same call, before its first write (booking/README.md, "Kept pieces"); the one exception,
-- the waits sweep (booking_waits_check), bumps after its writes, and only when it wrote: most
-- sweeps change nothing, and no reader sees between the two (a call is atomic). A worker keeps
-- what it rendered from a room under the edition it read with the room, so a piece whose
-- edition is still the room's is exact. The new edition is one above the last and at least the
-- store's clock in microseconds: a store restarted without its last writes never gives an
-- edition again with other contents (its clock has moved on).
local function edition_bump(key)
  local clock = redis.call('TIME')
  local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  local last = tonumber(redis.call('GET', key)) or 0
  redis.call('SET', key, string.format('%.0f', math.max(last + 1, now_us)))
end
