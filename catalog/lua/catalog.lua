#!lua name=catalog

-- The catalog's server-side functions. Every key arrives in KEYS[]; nothing here builds a name.
-- Fixed keys of the edit functions: 1 book hash, 2 all-books set, 3 tag registry (zset of
-- counts), 4 title order, 5 title lex index, 6 oldest-first order, 7 newest-first order,
-- 8 book-tags hash (book id -> the book's tags as a JSON list, read by the facet counts),
-- 9 edition (a token set anew by every write: workers keep result pages while it holds).
--
-- Orders are zsets scanned ascending. A title's score is its gapped rank (neighbours at least
-- 1 apart); the year orders add it to +/- year * 1e10, so books of one year stay A to Z.

local GAP = 1024
local YEAR = 10000000000

-- Call specs: the names of each function's first KEYS and ARGV, in order (a function reads its
-- call through `named`; tag sets, tag names and ids follow these). catalog/calls.py declares the
-- same lists for Python, and tests/store/test_function_calls.py checks that the two agree.
local SAVE_KEYS = {'book', 'books', 'registry', 'by_title', 'title_lex', 'by_year',
  'by_year_desc', 'book_tags', 'edition'}
local SAVE_ARGS = {'book_id', 'expected', 'token', 'title', 'author', 'year', 'description',
  'sort_key', 'tags', 'n_old', 'n_new', 'edition'}
local DELETE_KEYS = SAVE_KEYS
local DELETE_ARGS = {'book_id', 'expected', 'n_old', 'edition'}
local QUERY_KEYS = {'books', 'registry', 'by_title', 'by_year', 'by_year_desc', 'edition'}
local QUERY_ARGS = {'n_and', 'n_or', 'n_not', 'sort', 'offset', 'count', 'top_n'}
local FACETS_KEYS = {'book_tags', 'books'}
local FACETS_ARGS = {'limit', 'crossover', 'n_and', 'n_or', 'n_not', 'total'}
local TAGS_FILL_KEYS = {'book_tags'}
local TAGS_FILL_ARGS = {}
local FIXED = #SAVE_KEYS  -- the edit functions' fixed keys; tag sets follow

-- A list's items by the names of `names` (same order): named({'a', 'b'}, {'x', 'y'}).x == 'a'.
local function named(values, names)
  local out = {}
  for i, name in ipairs(names) do out[name] = values[i] end
  return out
end

local function id_of(lex_member)
  return string.match(lex_member, "%z([^%z]*)$")
end

local function num(value)
  return string.format("%.17g", value)
end

-- Set a book's place in both year orders from its year and title score.
local function place_year(by_year, by_year_desc, book_id, year, title_score)
  redis.call("ZADD", by_year, num(year * YEAR + title_score), book_id)
  redis.call("ZADD", by_year_desc, num(-year * YEAR + title_score), book_id)
end

-- Give every book a fresh, evenly spaced title score (rare: only when a gap is used up).
local function renumber_titles(by_title, title_lex, by_year, by_year_desc)
  local members = redis.call("ZRANGE", title_lex, 0, -1)
  for i, member in ipairs(members) do
    local book_id = id_of(member)
    redis.call("ZADD", by_title, i * GAP, book_id)
    local placed = redis.call("ZSCORE", by_year, book_id)
    if placed then
      place_year(by_year, by_year_desc, book_id, math.floor(tonumber(placed) / YEAR + 0.5), i * GAP)
    end
  end
end

-- Insert a book into title order: its score lies between its neighbours' scores.
local function place_title(by_title, title_lex, by_year, by_year_desc, sort_key, book_id)
  local member = sort_key .. "\0" .. book_id
  redis.call("ZADD", title_lex, 0, member)
  local rank = redis.call("ZRANK", title_lex, member)
  local before, after
  if rank > 0 then
    local m = redis.call("ZRANGE", title_lex, rank - 1, rank - 1)[1]
    before = tonumber(redis.call("ZSCORE", by_title, id_of(m)))
  end
  local m = redis.call("ZRANGE", title_lex, rank + 1, rank + 1)[1]
  if m then
    after = tonumber(redis.call("ZSCORE", by_title, id_of(m)))
  end
  local score
  if before == nil and after == nil then
    score = 0
  elseif before == nil then
    score = after - GAP
  elseif after == nil then
    score = before + GAP
  elseif after - before < 2 then
    -- Keep neighbours at least one apart: the year order adds titles to year * 1e10,
    -- where smaller differences would be lost.
    renumber_titles(by_title, title_lex, by_year, by_year_desc)
    return
  else
    score = (before + after) / 2
  end
  redis.call("ZADD", by_title, num(score), book_id)
end

-- Keep the registry equal to the tag set's size; a tag with no books leaves the registry.
local function recount(registry, tag_key, name)
  local count = redis.call("SCARD", tag_key)
  if count == 0 then
    redis.call("ZREM", registry, name)
  else
    redis.call("ZADD", registry, count, name)
  end
end

-- KEYS: the 8 fixed keys, then the book's current tag sets, then its new tag sets.
-- ARGV: id, expected version ("" adds a new book), edit token, title, author, year,
--       description, title sort key, tags JSON, n_old, n_new, old names..., new names...
-- Replies {"ok", version} | {"done", version} (this token already applied) |
--         {"stale", version} | {"exists"} | {"missing"}. Checks everything before writing.
local function book_save(keys, args)
  local k, a = named(keys, SAVE_KEYS), named(args, SAVE_ARGS)
  local book, books, registry, by_title, title_lex, by_year, by_year_desc, book_tags =
    k.book, k.books, k.registry, k.by_title, k.title_lex, k.by_year, k.by_year_desc, k.book_tags
  local book_id, expected, token = a.book_id, a.expected, a.token
  local n_old, n_new = tonumber(a.n_old), tonumber(a.n_new)
  local year = tonumber(a.year)
  if not (n_old and n_new and year) or #keys ~= FIXED + n_old + n_new
      or #args ~= #SAVE_ARGS + n_old + n_new then
    return redis.error_reply("ERR catalog_book_save: malformed call")
  end
  local exists = redis.call("EXISTS", book) == 1
  local current = redis.call("HMGET", book, "ver", "token", "sort")
  if exists and current[2] == token then
    return {"done", current[1]}
  end
  if expected == "" then
    if exists then
      return {"exists"}
    end
    if n_old ~= 0 then
      return redis.error_reply("ERR a new book has no current tags")
    end
  else
    if not exists then
      return {"missing"}
    end
    if current[1] ~= expected then
      return {"stale", current[1]}
    end
  end

  local old, new = {}, {}
  for i = 1, n_old do
    old[args[#SAVE_ARGS + i]] = keys[FIXED + i]
  end
  for i = 1, n_new do
    new[args[#SAVE_ARGS + n_old + i]] = keys[FIXED + n_old + i]
  end
  for name, tag_key in pairs(old) do
    if new[name] == nil then
      redis.call("SREM", tag_key, book_id)
      recount(registry, tag_key, name)
    end
  end
  for name, tag_key in pairs(new) do
    if old[name] == nil then
      redis.call("SADD", tag_key, book_id)
      recount(registry, tag_key, name)
    end
  end

  local sort_key = a.sort_key
  if current[3] ~= sort_key then
    if current[3] then
      redis.call("ZREM", title_lex, current[3] .. "\0" .. book_id)
    end
    place_title(by_title, title_lex, by_year, by_year_desc, sort_key, book_id)
  end
  local title_score = tonumber(redis.call("ZSCORE", by_title, book_id))
  place_year(by_year, by_year_desc, book_id, year, title_score)
  redis.call("SADD", books, book_id)
  redis.call("HSET", book_tags, book_id, a.tags)
  local version = tonumber(current[1] or "0") + 1
  redis.call("HSET", book, "id", book_id, "title", a.title, "author", a.author, "year", a.year,
    "description", a.description, "sort", sort_key, "tags", a.tags, "ver", version, "token", token)
  redis.call("SET", k.edition, a.edition)
  return {"ok", tostring(version)}
end

-- KEYS: the 8 fixed keys, then the book's current tag sets.
-- ARGV: id, expected version, n_old, old names...
-- Replies {"ok"} | {"gone"} (nothing to delete: already deleted) | {"stale", version}.
local function book_delete(keys, args)
  local k, a = named(keys, DELETE_KEYS), named(args, DELETE_ARGS)
  local book, books, registry, by_title, title_lex, by_year, by_year_desc, book_tags =
    k.book, k.books, k.registry, k.by_title, k.title_lex, k.by_year, k.by_year_desc, k.book_tags
  local book_id, expected, n_old = a.book_id, a.expected, tonumber(a.n_old)
  if not n_old or #keys ~= FIXED + n_old or #args ~= #DELETE_ARGS + n_old then
    return redis.error_reply("ERR catalog_book_delete: malformed call")
  end
  if redis.call("EXISTS", book) == 0 then
    return {"gone"}
  end
  local current = redis.call("HMGET", book, "ver", "sort")
  if current[1] ~= expected then
    return {"stale", current[1]}
  end
  for i = 1, n_old do
    redis.call("SREM", keys[FIXED + i], book_id)
    recount(registry, keys[FIXED + i], args[#DELETE_ARGS + i])
  end
  redis.call("ZREM", title_lex, current[2] .. "\0" .. book_id)
  redis.call("ZREM", by_title, book_id)
  redis.call("ZREM", by_year, book_id)
  redis.call("ZREM", by_year_desc, book_id)
  redis.call("SREM", books, book_id)
  redis.call("HDEL", book_tags, book_id)
  redis.call("DEL", book)
  redis.call("SET", k.edition, a.edition)
  return {"ok"}
end

-- Reads below write nothing (flag no-writes, called with FCALL_RO): a visitor's query keeps
-- its intermediate sets in Lua tables, never in keys, so browsing adds nothing to the
-- append-only file and runs on a replica as well.

local CHUNK = 1000  -- members per SMISMEMBER / ZMSCORE call; keeps unpack() within Lua's stack

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

-- Each term: {sign, sets, lower}; `lower` marks a term that alone bounds the result from below
-- (no NOT tags, at most one OR set), so a count reaching the limit there is final.
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
      table.insert(terms, lower and 1 or #terms + 1, {sign, sets, lower})
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

-- Which ids of `chunk` are in the result: 1 or 0 each (one SMISMEMBER per tag set).
local function result_flags(chunk, all_of, any_of, none_of)
  local flags = {}
  for i = 1, #chunk do
    flags[i] = (#any_of == 0) and 1 or 0
  end
  for _, key in ipairs(any_of) do
    for i, found in ipairs(redis.call("SMISMEMBER", key, unpack(chunk))) do
      if found == 1 then flags[i] = 1 end
    end
  end
  for _, key in ipairs(all_of) do
    for i, found in ipairs(redis.call("SMISMEMBER", key, unpack(chunk))) do
      if found == 0 then flags[i] = 0 end
    end
  end
  for _, key in ipairs(none_of) do
    for i, found in ipairs(redis.call("SMISMEMBER", key, unpack(chunk))) do
      if found == 1 then flags[i] = 0 end
    end
  end
  return flags
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

-- One result page. KEYS: 1 all-books set, 2 tag registry, 3 title order, 4 oldest-first order,
-- 5 newest-first order, 6 edition, then the AND, OR and NOT tag sets. ARGV: n_and, n_or,
-- n_not, sort ("title" | "year" | "-year"), offset, count, top n.
-- Reply: {total, result (0: every book, k: the one tag set KEYS[k], -1: computed), page ids,
--         unknown key indexes, top tags as name, count, name, count..., books in the catalog,
--         the edition the page was computed from ("" when none was ever set)}.
local FIRST_TAG = #QUERY_KEYS + 1

local function query(keys, args)
  local k, a = named(keys, QUERY_KEYS), named(args, QUERY_ARGS)
  local books, registry = k.books, k.registry
  local orders = {title = k.by_title, year = k.by_year, ["-year"] = k.by_year_desc}
  local n_and, n_or, n_not = tonumber(a.n_and), tonumber(a.n_or), tonumber(a.n_not)
  local order = orders[a.sort] or k.by_title
  local offset, count, top_n = tonumber(a.offset), tonumber(a.count), tonumber(a.top_n)
  if not (n_and and n_or and n_not and offset and count and top_n)
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
    return {0, -1, {}, unknown, top, everything, edition}
  end

  if #all_of == 0 and #any_of == 0 and #none_of == 0 then
    local ids = redis.call("ZRANGE", order, offset, offset + count - 1)
    return {everything, 0, ids, unknown, top, everything, edition}
  end

  local result, total, inside, list
  if #all_of == 1 and #any_of == 0 and #none_of == 0 then
    -- One tag is its own result: membership is asked of its set.
    for i = FIRST_TAG, FIRST_TAG + n_and - 1 do
      if keys[i] == all_of[1] then
        result = i
      end
    end
    total = redis.call("SCARD", all_of[1])
  else
    result = -1
    local terms = terms_of(books, all_of, any_of, none_of)
    if terms then
      total = terms_total(terms, nil, 0)
    else
      list = result_list(books, all_of, any_of, none_of)
      total = #list
    end
  end

  local ids = {}
  if total > 0 and offset < total then
    local expected_reads = math.ceil((offset + count) * everything / total)
    if expected_reads <= total then
      if result == -1 and not list then
        inside = function(chunk) return result_flags(chunk, all_of, any_of, none_of) end
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
  return {total, result, ids, unknown, top, everything, edition}
end

-- How many members of `list` (a Lua list, `set` the same as a set) are in tag set `key`,
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

-- Facet counts of a result. KEYS: 1 the book-tags hash, 2 the all-books set, then the query's
-- known AND, OR and NOT tag sets, then one tag set per facet asked for.
-- ARGV: limit (0: exact), the largest result counted from the book-tags hash, n_and, n_or,
-- n_not, the result's size (from `query`), then the facets' tag names (in their sets' order).
-- Reply: one count per facet, capped at the limit. A result of at most the crossover is built
-- again (in Lua) and counted by reading its books' tag lists, one HMGET (cost grows with the
-- result); a bigger one, or a store whose book-tags hash is not complete (data written before
-- it existed), per tag by inclusion-exclusion over the tag sets with SINTERCARD ... LIMIT (cost
-- grows with the number of tags), or with many query tags over the result built in Lua.
local function facets(keys, args)
  local k, a = named(keys, FACETS_KEYS), named(args, FACETS_ARGS)
  local limit, crossover = tonumber(a.limit), tonumber(a.crossover)
  local n_and, n_or, n_not = tonumber(a.n_and), tonumber(a.n_or), tonumber(a.n_not)
  local total = tonumber(a.total)
  if not (limit and crossover and n_and and n_or and n_not and total) or limit < 0 then
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
    return counts
  end

  if total <= crossover and redis.call("HLEN", book_tags) == redis.call("SCARD", books) then
    local list
    if #all_of == 1 and #any_of == 0 and #none_of == 0 then
      list = redis.call("SMEMBERS", all_of[1])
    else
      list = result_list(books, all_of, any_of, none_of)
    end
    return count_from_hash(book_tags, list, names, limit)
  end
  local terms = terms_of(books, all_of, any_of, none_of)
  if terms then
    for i = 1, n do
      counts[i] = facet_count(terms, keys[first_facet - 1 + i], limit)
    end
    return counts
  end
  local list = result_list(books, all_of, any_of, none_of)
  local set = as_set(list)
  for i = 1, n do
    counts[i] = count_in(list, set, keys[first_facet - 1 + i], limit)
  end
  return counts
end

-- Fill the book-tags hash from the book hashes (for data written before the hash existed).
-- KEYS: 1 the book-tags hash, then book hashes. ARGV: the books' ids, in KEYS order.
-- Reply: the number of entries written. Idempotent: a book's entry is its hash's tag list.
local function book_tags_fill(keys, args)
  local book_tags = named(keys, TAGS_FILL_KEYS).book_tags
  if #keys ~= #args + #TAGS_FILL_KEYS then
    return redis.error_reply("ERR catalog_book_tags_fill: malformed call")
  end
  local written = 0
  for i = 1, #args do
    local tags = redis.call("HGET", keys[#TAGS_FILL_KEYS + i], "tags")
    if tags then
      redis.call("HSET", book_tags, args[i], tags)
      written = written + 1
    else
      redis.call("HDEL", book_tags, args[i])
    end
  end
  return written
end

redis.register_function{function_name = "catalog_book_save", callback = book_save}
redis.register_function{function_name = "catalog_book_delete", callback = book_delete}
redis.register_function{function_name = "catalog_query", callback = query,
  flags = {"no-writes"}}
redis.register_function{function_name = "catalog_facets", callback = facets,
  flags = {"no-writes"}}
redis.register_function{function_name = "catalog_book_tags_fill", callback = book_tags_fill}
