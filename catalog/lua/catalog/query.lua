-- Reads below write nothing (flag no-writes, called with FCALL_RO): a visitor's query keeps
-- its intermediate sets in Lua tables, never in keys, so browsing adds nothing to the
-- append-only file and runs on a replica as well.

-- The tag sets that exist, remembering the positions of the others (an unknown tag is an empty
-- set: it empties an AND, and leaves an OR or a NOT as they were).
local function known_keys(keys, first, count, unknown)
  local found = {}
  for i = first, first + count - 1 do
    if redis.call("EXISTS", keys[i]) == 1 then
      table.insert(found, keys[i])
    else
      table.insert(unknown, i)
    end
  end
  return found
end

-- The result of AND (all_of), OR (any_of) and NOT (none_of) tag sets as a Lua list, computed
-- with the read forms SINTER / SUNION / SDIFF and membership checks; nothing is stored.
local function result_list(books, all_of, any_of, none_of)
  local list
  if #all_of > 0 and #any_of > 0 then
    -- (AND) and (B1 or B2 ...) is the union of (AND and Bi): each SINTER walks its smallest
    -- set and returns only the common members.
    local seen = {}
    list = {}
    for _, key in ipairs(any_of) do
      local sets = {unpack(all_of)}
      sets[#sets + 1] = key
      for _, member in ipairs(redis.call("SINTER", unpack(sets))) do
        if not seen[member] then
          seen[member] = true
          list[#list + 1] = member
        end
      end
    end
  elseif #all_of > 0 then
    list = redis.call("SINTER", unpack(all_of))
  elseif #any_of > 0 then
    list = redis.call("SUNION", unpack(any_of))
  else
    return redis.call("SDIFF", books, unpack(none_of))
  end
  for _, key in ipairs(none_of) do
    list = filter_by(list, key, 0)
  end
  return list
end

-- The result's size and facet counts without building it: by inclusion-exclusion, the result
-- (AND sets) and (any OR set) and not (any NOT set) counts as a signed sum of plain
-- intersections, each one SINTERCARD over the tag sets themselves. With up to MAX_TERMS terms
-- (3 OR and 2 NOT tags give 28); more tags build the result in Lua instead.
local MAX_TERMS = 32

local function bits_of(mask, keys)
  local chosen = {}
  for i = 1, #keys do
    if math.floor(mask / 2 ^ (i - 1)) % 2 == 1 then
      chosen[#chosen + 1] = keys[i]
    end
  end
  return chosen
end

-- Each term: {sign, sets, lower, positive}; `lower` marks a term that alone bounds the result
-- from below (no NOT tags, at most one OR set), so a count reaching the limit there is final;
-- `positive` one without NOT sets (their sum is the result before the NOT tags take books out).
local function terms_of(books, all_of, any_of, none_of)
  local n_or = #any_of
  local or_sets = (n_or == 0) and 1 or (2 ^ n_or - 1)
  if or_sets * 2 ^ #none_of > MAX_TERMS then
    return nil
  end
  local terms = {}
  for or_mask = (n_or == 0) and 0 or 1, 2 ^ n_or - 1 do
    local chosen_or = bits_of(or_mask, any_of)
    local or_sign = (#chosen_or % 2 == 1 or n_or == 0) and 1 or -1
    for not_mask = 0, 2 ^ #none_of - 1 do
      local chosen_not = bits_of(not_mask, none_of)
      local sets = {}
      for _, list in ipairs({all_of, chosen_or, chosen_not}) do
        for _, key in ipairs(list) do
          sets[#sets + 1] = key
        end
      end
      if #sets == 0 then
        sets = {books}
      end
      local sign = (#chosen_not % 2 == 0) and or_sign or -or_sign
      local lower = #none_of == 0 and #chosen_or <= 1
      table.insert(terms, lower and 1 or #terms + 1, {sign, sets, lower, #chosen_not == 0})
    end
  end
  return terms
end

-- SINTERCARD of a term's sets (and `extra`, a facet's tag set), stopping at `limit` (0: exact).
local function term_count(sets, extra, limit)
  if #sets == 1 and not extra then
    return redis.call("SCARD", sets[1])
  end
  local call = {"SINTERCARD", #sets + (extra and 1 or 0)}
  for _, key in ipairs(sets) do
    call[#call + 1] = key
  end
  if extra then
    call[#call + 1] = extra
  end
  if limit > 0 then
    call[#call + 1] = "LIMIT"
    call[#call + 1] = limit
  end
  return redis.call(unpack(call))
end

local function terms_total(terms, extra, limit)
  local sum = 0
  for _, term in ipairs(terms) do
    sum = sum + term[1] * term_count(term[2], extra, limit)
  end
  return sum
end

-- A facet's count over the terms, capped at `limit`: first with the limit on every term (cheap);
-- all below it are exact. A capped lower-bound term settles it; any other capped term asks for
-- exact counts.
local function facet_count(terms, tag, limit)
  if limit == 0 then
    return terms_total(terms, tag, 0)
  end
  local sum = 0
  for _, term in ipairs(terms) do
    local count = term_count(term[2], tag, limit)
    if count >= limit then
      if term[3] then
        return limit
      end
      return math.min(limit, terms_total(terms, tag, 0))
    end
    sum = sum + term[1] * count
  end
  return math.min(limit, sum)
end

-- Which ids of `chunk` are in the result: 1 or 0 each. The checks run in the order given
-- (`scan_checks`), each only on the ids that passed the ones before.
local function result_flags(chunk, checks)
  local kept = as_set(passing(chunk, checks))
  local flags = {}
  for i, id in ipairs(chunk) do
    flags[i] = kept[id] and 1 or 0
  end
  return flags
end

-- The result's membership checks, the most selective first: AND sets smallest first, then
-- "in one of the OR sets", then the NOT sets.
local function scan_checks(all_of, any_of, none_of)
  local sized = {}
  for _, key in ipairs(all_of) do
    sized[#sized + 1] = {redis.call("SCARD", key), key}
  end
  table.sort(sized, function(x, y) return x[1] < y[1] end)
  local checks = {}
  for _, pair in ipairs(sized) do
    checks[#checks + 1] = {pair[2], 1}
  end
  if #any_of > 0 then
    checks[#checks + 1] = {any_of, 1}
  end
  for _, key in ipairs(none_of) do
    checks[#checks + 1] = {key, 0}
  end
  return checks
end

-- Walk `order` from its start, keeping the ids for which `inside(ids)` answers 1, until a page
-- is full. Cheap when the result is a large share of the catalog: about (offset + count) / share.
local function scan_page(order, inside, offset, count, expected_reads)
  local ids, skipped, position = {}, 0, 0
  local batch = math.max(64, math.min(1000, expected_reads))
  while #ids < count do
    local chunk = redis.call("ZRANGE", order, position, position + batch - 1)
    if #chunk == 0 then
      break
    end
    local member = inside(chunk)
    for i = 1, #chunk do
      if member[i] == 1 then
        if skipped < offset then
          skipped = skipped + 1
        elseif #ids < count then
          table.insert(ids, chunk[i])
        end
      end
    end
    position = position + batch
  end
  return ids
end

-- Sort a small result by its scores in `order` (ties by id, as ZRANGE does) and cut a page.
local function sort_page(order, list, offset, count)
  local scored = {}
  for first = 1, #list, CHUNK do
    local last = math.min(#list, first + CHUNK - 1)
    local scores = redis.call("ZMSCORE", order, unpack(list, first, last))
    for i = first, last do
      local score = scores[i - first + 1]
      if score then
        scored[#scored + 1] = {tonumber(score), list[i]}
      end
    end
  end
  table.sort(scored, function(a, b)
    if a[1] ~= b[1] then
      return a[1] < b[1]
    end
    return a[2] < b[2]
  end)
  local ids = {}
  for i = offset + 1, math.min(#scored, offset + count) do
    ids[#ids + 1] = scored[i][2]
  end
  return ids
end

-- What the exact size costs by inclusion-exclusion: each SINTERCARD walks its smallest set.
local function terms_cost(terms)
  local size, cost = {}, 0
  for _, term in ipairs(terms) do
    local sets = term[2]
    if #sets > 1 then
      local smallest
      for _, key in ipairs(sets) do
        size[key] = size[key] or redis.call("SCARD", key)
        smallest = math.min(smallest or size[key], size[key])
      end
      cost = cost + smallest
    end
  end
  return cost
end

-- The result's size: exact (SINTERCARD terms) when that costs at most `exact_cost` set members
-- walked, else from a walk of the drivers reading at most `max_reads` members (exact when the
-- walk reads them all, and then the result as a list too; 0: never walk). Returns the size,
-- the list (or nil), 1 when the size is an estimate, and what building the list would cost.
local function result_size(books, all_of, any_of, none_of, exact_cost, max_reads)
  local terms = terms_of(books, all_of, any_of, none_of)
  local _, _, reads = drivers_of(books, all_of, any_of)
  local total, list, estimated = nil, nil, 0
  local list_cost
  if terms and (max_reads == 0 or terms_cost(terms) <= exact_cost) then
    total, list_cost = 0, 0
    for _, term in ipairs(terms) do
      local counted = term[1] * term_count(term[2], nil, 0)
      total = total + counted
      if term[4] then list_cost = list_cost + counted end
    end
  elseif max_reads == 0 then
    list = result_list(books, all_of, any_of, none_of)
    total = #list
  else
    local share = math.min(1, max_reads / math.max(reads, 1))
    local sample
    sample, total = result_walk(books, all_of, any_of, none_of, share)
    if share >= 1 then
      list = sample
    elseif total > 0 then
      estimated = 1
    else
      -- The sample found none: the result is a tiny share of its drivers, worth building.
      list = result_list(books, all_of, any_of, none_of)
      total = #list
    end
  end
  -- Building the list: SINTER / SUNION in the store, then NOT sets filter what they gave in Lua.
  return total, list, estimated, list_cost or math.max(total, reads)
end

-- One result page. KEYS: 1 all-books set, 2 tag registry, 3 title order, 4 oldest-first order,
-- 5 newest-first order, 6 edition, then the AND, OR and NOT tag sets. ARGV: n_and, n_or,
-- n_not, sort ("title" | "year" | "-year"), offset, count, top n, the most set members the
-- exact size may walk, the most members a walk estimating it may read (0: always exact).
-- Reply: {total, result (0: every book, k: the one tag set KEYS[k], -1: computed), page ids,
--         unknown key indexes, top tags as name, count, name, count..., books in the catalog,
--         the edition the page was computed from ("" when none was ever set), 1 when the total
--         is an estimate (from an even sample of the result) else 0, what building the result
--         as a list costs (members read, for `catalog_facets`)}.
local FIRST_TAG = #QUERY_KEYS + 1

local function query(keys, args)
  local k, a = named(keys, QUERY_KEYS), named(args, QUERY_ARGS)
  local books, registry = k.books, k.registry
  local orders = {title = k.by_title, year = k.by_year, ["-year"] = k.by_year_desc}
  local n_and, n_or, n_not = tonumber(a.n_and), tonumber(a.n_or), tonumber(a.n_not)
  local order = orders[a.sort] or k.by_title
  local offset, count, top_n = tonumber(a.offset), tonumber(a.count), tonumber(a.top_n)
  local exact_cost, max_reads = tonumber(a.exact_cost), tonumber(a.max_reads)
  if not (n_and and n_or and n_not and offset and count and top_n and exact_cost and max_reads)
      or #keys ~= FIRST_TAG - 1 + n_and + n_or + n_not then
    return redis.error_reply("ERR catalog_query: malformed call")
  end

  local unknown = {}
  local all_of = known_keys(keys, FIRST_TAG, n_and, unknown)
  local any_of = known_keys(keys, FIRST_TAG + n_and, n_or, unknown)
  local none_of = known_keys(keys, FIRST_TAG + n_and + n_or, n_not, unknown)
  local everything = redis.call("ZCARD", k.by_title)
  local edition = redis.call("GET", k.edition) or ""
  local top = redis.call("ZRANGE", registry, 0, top_n - 1, "REV", "WITHSCORES")

  if #all_of < n_and or (n_or > 0 and #any_of == 0) then
    -- A required tag no book has, or "any of" tags none of which a book has: nothing matches.
    return {0, -1, {}, unknown, top, everything, edition, 0, 0}
  end

  if #all_of == 0 and #any_of == 0 and #none_of == 0 then
    local ids = redis.call("ZRANGE", order, offset, offset + count - 1)
    return {everything, 0, ids, unknown, top, everything, edition, 0, everything}
  end

  local result, total, inside, list
  local estimated, list_cost = 0, 0
  if #all_of == 1 and #any_of == 0 and #none_of == 0 then
    -- One tag is its own result: membership is asked of its set.
    for i = FIRST_TAG, FIRST_TAG + n_and - 1 do
      if keys[i] == all_of[1] then
        result = i
      end
    end
    total = redis.call("SCARD", all_of[1])
    list_cost = total
  else
    result = -1
    total, list, estimated, list_cost = result_size(books, all_of, any_of, none_of,
      exact_cost, max_reads)
  end

  local ids = {}
  if total > 0 and (offset < total or estimated == 1) then
    local expected_reads = math.ceil((offset + count) * everything / total)
    if expected_reads <= list_cost or (estimated == 1 and not list) then
      if result == -1 and not list then
        local checks = scan_checks(all_of, any_of, none_of)
        inside = function(chunk) return result_flags(chunk, checks) end
      elseif list then
        local set = as_set(list)
        inside = function(chunk)
          local member = {}
          for i, id in ipairs(chunk) do
            member[i] = set[id] and 1 or 0
          end
          return member
        end
      else
        local key = keys[result]
        inside = function(chunk) return redis.call("SMISMEMBER", key, unpack(chunk)) end
      end
      ids = scan_page(order, inside, offset, count, expected_reads)
    else
      if result == -1 and not list then
        list = result_list(books, all_of, any_of, none_of)  -- a small share: few members
      end
      ids = sort_page(order, list or redis.call("SMEMBERS", keys[result]), offset, count)
    end
  end
  return {total, result, ids, unknown, top, everything, edition, estimated, list_cost}
end

-- How many members of `list` (a Lua list, `set` the same as a set) are in tag set `key`,

redis.register_function{function_name = "catalog_query", callback = query,
  flags = {"no-writes"}}
