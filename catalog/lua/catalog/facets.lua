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
      if tags and not string.find(tags, "\\", 1, true) then
        -- No escapes: every quoted string is a tag as it is (cheaper than decoding the JSON).
        for name in string.gmatch(tags, '"([^"]*)"') do
          local seen = wanted[name]
          if seen then
            wanted[name] = seen + 1
          end
        end
      elseif tags then
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

-- Facet counts of a result. KEYS: 1 the book-tags hash, 2 the all-books set, then the query's
-- known AND, OR and NOT tag sets, then one tag set per facet asked for.
-- ARGV: limit (0: exact), the largest result counted whole from the book-tags hash, n_and,
-- n_or, n_not, the result's size (from `query`), the most tag-set members a sample may read
-- (0: never sample), the sample's size, what building the result costs (from `query`), then
-- the facets' tag names (in their sets' order).
-- Reply: {counted, counts}: `counted` 0 when every count is exact (capped at the limit), else
-- the number of result books sampled and counted (each count is then of the sample, not
-- capped: scale it by total / counted). A result of at most the crossover is built again (in
-- Lua) and counted by reading its books' tag lists, one HMGET (cost grows with the result); a
-- bigger one, or one costly to build, is sampled down to about `sample` books and counted the
-- same way. A bigger one
-- without sampling (max_reads 0), or a store whose book-tags hash is not complete (data
-- written before it existed), counts per tag by inclusion-exclusion over the tag sets with
-- SINTERCARD ... LIMIT (cost grows with the number of tags), or with many query tags over the
-- result built in Lua.
local function facets(keys, args)
  local k, a = named(keys, FACETS_KEYS), named(args, FACETS_ARGS)
  local limit, crossover = tonumber(a.limit), tonumber(a.crossover)
  local n_and, n_or, n_not = tonumber(a.n_and), tonumber(a.n_or), tonumber(a.n_not)
  local total, max_reads, sample = tonumber(a.total), tonumber(a.max_reads), tonumber(a.sample)
  local build_cost = tonumber(a.build_cost)
  if not (limit and crossover and n_and and n_or and n_not and total and max_reads and sample
      and build_cost) or limit < 0 then
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
    local and_only = #any_of == 0 and #none_of == 0
    if max_reads > 0 and (total > crossover or build_cost > max_reads) then
      -- Big, or costly to build: counted on an even sample (the whole result if it fits).
      local share = walk_share(books, all_of, any_of, total, sample, max_reads)
      list = result_walk(books, all_of, any_of, none_of, share)
      if share < 1 then
        return {math.max(#list, 1), count_from_hash(book_tags, list, names, 0)}
      end
    elseif #all_of == 1 and and_only then
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
