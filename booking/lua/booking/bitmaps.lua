-- The month bitmaps of a room (the layout in common.lua): their fields read and written a
-- bitmap at a time, a month's bitmap made before its first bit and dropped with its last, and
-- what of a request is booked already.

-- The fields' indexes grouped by bitmap key, keys in the order first met.
local function fields_by_key(fields)
  local order, by_key = {}, {}
  for i, field in ipairs(fields) do
    local key = field[5].key
    if not by_key[key] then
      by_key[key] = {}
      order[#order + 1] = key
    end
    local list = by_key[key]
    list[#list + 1] = i
  end
  return order, by_key
end

-- Calls each(key, batch) with the fields' indexes by bitmap key, at most 1000 at a time (one
-- BITFIELD call's worth).
local function fields_batched(fields, each)
  local order, by_key = fields_by_key(fields)
  for _, key in ipairs(order) do
    local at = by_key[key]
    for first = 1, #at, 1000 do
      each(key, {unpack(at, first, math.min(first + 999, #at))})
    end
  end
end

-- Current values of the fields, one BITFIELD_RO call per bitmap and 1000 fields.
local function read_fields(fields, kind)
  local values = {}
  fields_batched(fields, function(key, batch)
    local args = {}
    for _, i in ipairs(batch) do
      args[#args + 1] = 'GET'
      args[#args + 1] = kind
      args[#args + 1] = fields[i][1]
    end
    for j, value in ipairs(redis.call('BITFIELD_RO', key, unpack(args))) do
      values[batch[j]] = value
    end
  end)
  return values
end

local function write_fields(fields, kind, values)
  fields_batched(fields, function(key, batch)
    local args = {}
    for _, i in ipairs(batch) do
      args[#args + 1] = 'SET'
      args[#args + 1] = kind
      args[#args + 1] = fields[i][1]
      args[#args + 1] = values[i]
    end
    redis.call('BITFIELD', key, unpack(args))
  end)
end

-- Makes each month bitmap of `cal` not there yet at its full size, before bits are written
-- (SETRANGE on a missing key allocates exactly, and the AOF gets a short command).
local function months_make(cal, cls)
  for _, m in ipairs(cal) do
    if redis.call('EXISTS', m.key) == 0 then
      redis.call('SETRANGE', m.key, math.ceil(m.n * SLOTS_PER_DAY[cls] / 8) - 1, '\0')
    end
  end
end

-- Drops each month bitmap of `cal` left without a booked slot, with its registry entry;
-- returns the keys of those that still hold one.
local function months_drop_empty(cal, registry)
  local kept = {}
  for _, m in ipairs(cal) do
    if redis.call('BITCOUNT', m.key) == 0 then
      redis.call('DEL', m.key)
      redis.call('SREM', registry, m.key)
    else
      kept[#kept + 1] = m.key
    end
  end
  return kept
end

-- Booked slots that overlap the request: "day:box:mask:0" entries, plus the current values.
local function booked_conflicts(fields, kind)
  local values = read_fields(fields, kind)
  local conflicts = {}
  for i, field in ipairs(fields) do
    local overlap = bit.band(values[i], field[2])
    if overlap ~= 0 then
      conflicts[#conflicts + 1] = joined({day = field[3], box = field[4], mask = overlap,
        held = 0}, TAKEN_FIELDS, ':')
    end
  end
  return conflicts, values
end
