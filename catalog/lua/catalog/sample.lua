-- Walking a result instead of building it: the sets whose members are read (the "drivers"),
-- membership checks against the query's other sets, and an even sample of a big result with
-- the estimate of its size it gives.

local CHUNK = 1000  -- members per SMISMEMBER / ZMSCORE call; keeps unpack() within Lua's stack

local function as_set(list)
  local set = {}
  for _, member in ipairs(list) do
    set[member] = true
  end
  return set
end

-- Keep the members of `list` that are (wanted == 1) or are not (wanted == 0) in set `key`.
local function filter_by(list, key, wanted)
  local kept = {}
  for first = 1, #list, CHUNK do
    local last = math.min(#list, first + CHUNK - 1)
    local member = redis.call("SMISMEMBER", key, unpack(list, first, last))
    for i = first, last do
      if member[i - first + 1] == wanted then
        kept[#kept + 1] = list[i]
      end
    end
  end
  return kept
end

-- The first `take` members of set `key` in the store's own order (SSCAN from the start): for a
-- set kept as a hash table that order follows the members' hashes, so a prefix is an even
-- sample of the set whatever other tags its books carry. The same store answers the same.
local function first_members(key, take)
  local found, cursor = {}, "0"
  repeat
    local reply = redis.call("SSCAN", key, cursor, "COUNT", math.max(10, take - #found))
    cursor = reply[1]
    for _, member in ipairs(reply[2]) do
      if #found < take then found[#found + 1] = member end
    end
  until cursor == "0" or #found >= take
  return found
end

-- Keep the members of `list` for which every set of `checks` answers as wanted: each check is
-- {key, wanted (1 or 0)}, or {keys, 1} for "in at least one of them".
local function passing(list, checks)
  local kept = list
  for _, check in ipairs(checks) do
    if type(check[1]) == "table" then
      -- In one of the sets: each set is asked only about the ids no earlier set had.
      local found, open = {}, kept
      for _, key in ipairs(check[1]) do
        open = filter_by(open, key, 0)
      end
      local missing = as_set(open)
      for _, id in ipairs(kept) do
        if not missing[id] then found[#found + 1] = id end
      end
      kept = found
    else
      kept = filter_by(kept, check[1], check[2])
    end
  end
  return kept
end

-- The sets whose members are read to find the result's books: the smallest AND set; else
-- every OR set (a book belongs to the first OR set that has it); else every book. Returns them,
-- their sizes (by key) and the sum of the sizes.
local function drivers_of(books, all_of, any_of)
  local drivers, size, sum = {books}, {}, 0
  if #all_of > 0 then
    local smallest
    for _, key in ipairs(all_of) do
      size[key] = redis.call("SCARD", key)
      if not smallest or size[key] < size[smallest] then smallest = key end
    end
    drivers = {smallest}
  elseif #any_of > 0 then
    drivers = any_of
  end
  for _, key in ipairs(drivers) do
    size[key] = size[key] or redis.call("SCARD", key)
    sum = sum + size[key]
  end
  return drivers, size, sum
end

-- Read `share` (0 to 1) of every driver set, in SSCAN order, and keep the books of the result.
-- Each book of the result is kept with about the same chance, so the kept books are an even
-- sample of it (the whole result when `share` is 1). Returns the sample and the result's size
-- it suggests (exact when `share` is 1).
local function result_walk(books, all_of, any_of, none_of, share)
  local drivers, size = drivers_of(books, all_of, any_of)
  local sample, estimate = {}, 0
  for d, driver in ipairs(drivers) do
    local checks = {}
    for _, key in ipairs(all_of) do
      if key ~= driver then checks[#checks + 1] = {key, 1} end
    end
    if #all_of > 0 then
      if #any_of > 0 then checks[#checks + 1] = {any_of, 1} end
    else
      for i = 1, d - 1 do checks[#checks + 1] = {any_of[i], 0} end
    end
    for _, key in ipairs(none_of) do checks[#checks + 1] = {key, 0} end
    local take = (share >= 1) and size[driver] or math.ceil(share * size[driver])
    local kept = passing(first_members(driver, take), checks)
    for _, id in ipairs(kept) do
      sample[#sample + 1] = id
    end
    if take > 0 then
      estimate = estimate + #kept * size[driver] / take
    end
  end
  return sample, math.floor(estimate + 0.5)
end

-- The share of the drivers that about `wanted` books of a result of about `total` books take,
-- reading at most `max_reads` members (1: all of them).
local function walk_share(books, all_of, any_of, total, wanted, max_reads)
  local _, _, reads = drivers_of(books, all_of, any_of)
  return math.min(math.max(wanted, 1) / math.max(total, 1), max_reads / math.max(reads, 1), 1)
end
