-- The facet counts beside a result: how many books of the result carry each tag.

-- stopping at `limit` (0: exact): walks the smaller side.
local function count_in(list, set, key, limit)
  local counted = 0
  if redis.call("SCARD", key) <= #list then
    for _, member in ipairs(redis.call("SMEMBERS", key)) do
      if set[member] then
        counted = counted + 1
        if limit > 0 and counted >= limit then return limit end
      end
    end
    return counted
  end
  for first = 1, #list, CHUNK do
    local last = math.min(#list, first + CHUNK - 1)
    for _, found in ipairs(redis.call("SMISMEMBER", key, unpack(list, first, last))) do
      counted = counted + found
    end
    if limit > 0 and counted >= limit then return limit end
  end
  return counted
end

-- Count tags over a list of book ids from the book-tags hash (one HMGET per 4096 ids).
local function count_from_hash(book_tags, ids, names, limit)
  local wanted = {}
  for _, name in ipairs(names) do
    wanted[name] = 0
  end
  local step = 4096
  for first = 1, #ids, step do
    local lists = redis.call("HMGET", book_tags, unpack(ids, first, math.min(#ids, first + step - 1)))
    for _, tags in ipairs(lists) do
      if tags then
        for _, name in ipairs(cjson.decode(tags)) do
          local seen = wanted[name]
          if seen then
            wanted[name] = seen + 1
          end
        end
      end
    end
  end
  local counts = {}
  for i, name in ipairs(names) do
    local count = wanted[name]
    if limit > 0 and count > limit then
      count = limit
    end
    counts[i] = count
  end
  return counts
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
      local any = {}
      for i = 1, #kept do any[i] = 0 end
      for _, key in ipairs(check[1]) do
        for first = 1, #kept, CHUNK do
          local found = redis.call("SMISMEMBER", key, unpack(kept, first, math.min(#kept, first + CHUNK - 1)))
          for i, flag in ipairs(found) do
            if flag == 1 then any[first + i - 1] = 1 end
          end
        end
      end
      local next_kept = {}
      for i, id in ipairs(kept) do
        if any[i] == 1 then next_kept[#next_kept + 1] = id end
      end
      kept = next_kept
    else
      kept = filter_by(kept, check[1], check[2])
    end
  end
  return kept
end

-- An even sample of a big result, about `wanted` books, reading at most `max_reads` tag-set
-- members: the same share of each "driver" set is read (the smallest AND set; else each OR
-- set, a book counted only in the first OR set that has it; else every book), and the books
-- that pass the query's other sets are kept. Each book of the result is in the sample with
-- about the same chance, so a tag's share of the sample estimates its share of the result.
local function result_sample(books, all_of, any_of, none_of, total, wanted, max_reads)
  local drivers, size = {books}, {}
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
  local reads = 0
  for _, key in ipairs(drivers) do
    size[key] = size[key] or redis.call("SCARD", key)
    reads = reads + size[key]
  end
  local share = math.min(wanted / math.max(total, 1), max_reads / math.max(reads, 1), 1)
  local sample = {}
  for d, driver in ipairs(drivers) do
    local checks = {}
    for _, key in ipairs(all_of) do
      if key ~= driver then checks[#checks + 1] = {key, 1} end
    end
    if #all_of > 0 or #any_of == 0 then
      if #any_of > 0 then checks[#checks + 1] = {any_of, 1} end
    else
      for i = 1, d - 1 do checks[#checks + 1] = {any_of[i], 0} end
    end
    for _, key in ipairs(none_of) do checks[#checks + 1] = {key, 0} end
    local take = math.ceil(share * size[driver])
    for _, id in ipairs(passing(first_members(driver, take), checks)) do
      sample[#sample + 1] = id
    end
  end
  return sample
end

-- Facet counts of a result. KEYS: 1 the book-tags hash, 2 the all-books set, then the query's
-- known AND, OR and NOT tag sets, then one tag set per facet asked for.
-- ARGV: limit (0: exact), the largest result counted whole from the book-tags hash, n_and,
-- n_or, n_not, the result's size (from `query`), the most tag-set members a sample may read
-- (0: never sample), then the facets' tag names (in their sets' order).
-- Reply: {counted, counts}: `counted` 0 when every count is exact (capped at the limit), else
-- the number of result books sampled and counted (each count is then of the sample, not
-- capped: scale it by total / counted). A result of at most the crossover is built again (in
-- Lua) and counted by reading its books' tag lists, one HMGET (cost grows with the result); a
-- bigger one is sampled down to about the crossover and counted the same way. A bigger one
-- without sampling (max_reads 0), or a store whose book-tags hash is not complete (data
-- written before it existed), counts per tag by inclusion-exclusion over the tag sets with
-- SINTERCARD ... LIMIT (cost grows with the number of tags), or with many query tags over the
-- result built in Lua.
local function facets(keys, args)
  local k, a = named(keys, FACETS_KEYS), named(args, FACETS_ARGS)
  local limit, crossover = tonumber(a.limit), tonumber(a.crossover)
  local n_and, n_or, n_not = tonumber(a.n_and), tonumber(a.n_or), tonumber(a.n_not)
  local total, max_reads = tonumber(a.total), tonumber(a.max_reads)
  if not (limit and crossover and n_and and n_or and n_not and total and max_reads)
      or limit < 0 then
    return redis.error_reply("ERR catalog_facets: malformed call")
  end
  local first_tag = #FACETS_KEYS + 1
  local first_facet = first_tag + n_and + n_or + n_not
  local n = #keys - first_facet + 1
  if n < 0 or #args ~= #FACETS_ARGS + n or n_and + n_or + n_not == 0 then
    return redis.error_reply("ERR catalog_facets: malformed call")
  end
  local book_tags, books = k.book_tags, k.books
  local all_of = {unpack(keys, first_tag, first_tag + n_and - 1)}
  local any_of = {unpack(keys, first_tag + n_and, first_tag + n_and + n_or - 1)}
  local none_of = {unpack(keys, first_tag + n_and + n_or, first_facet - 1)}
  local names, counts = {unpack(args, #FACETS_ARGS + 1, #FACETS_ARGS + n)}, {}
  if n == 0 then
    return {0, counts}
  end

  if (total <= crossover or max_reads > 0)
      and redis.call("HLEN", book_tags) == redis.call("SCARD", books) then
    local list
    if total > crossover then
      list = result_sample(books, all_of, any_of, none_of, total, crossover, max_reads)
      return {math.max(#list, 1), count_from_hash(book_tags, list, names, 0)}
    elseif #all_of == 1 and #any_of == 0 and #none_of == 0 then
      list = redis.call("SMEMBERS", all_of[1])
    else
      list = result_list(books, all_of, any_of, none_of)
    end
    return {0, count_from_hash(book_tags, list, names, limit)}
  end
  local terms = terms_of(books, all_of, any_of, none_of)
  if terms then
    for i = 1, n do
      counts[i] = facet_count(terms, keys[first_facet - 1 + i], limit)
    end
    return {0, counts}
  end
  local list = result_list(books, all_of, any_of, none_of)
  local set = as_set(list)
  for i = 1, n do
    counts[i] = count_in(list, set, keys[first_facet - 1 + i], limit)
  end
  return {0, counts}
end

redis.register_function{function_name = "catalog_facets", callback = facets,
  flags = {"no-writes"}}
