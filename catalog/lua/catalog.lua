#!lua name=catalog

-- The catalog's server-side functions. Every key arrives in KEYS[]; nothing here builds a name.
-- Fixed keys of the edit functions: 1 book hash, 2 all-books set, 3 tag registry (zset of
-- counts), 4 title order, 5 title lex index, 6 oldest-first order, 7 newest-first order,
-- 8 book-tags hash (book id -> the book's tags as a JSON list, read by the facet counts).
--
-- Orders are zsets scanned ascending. A title's score is its gapped rank (neighbours at least
-- 1 apart); the year orders add it to +/- year * 1e10, so books of one year stay A to Z.

local GAP = 1024
local FIXED = 8
local YEAR = 10000000000

-- Call specs: the names of each function's first KEYS and ARGV, in order (a function reads its
-- call through `named`; tag sets, tag names and ids follow these). catalog/calls.py declares the
-- same lists for Python, and tests/test_function_calls.py checks that the two agree.
local SAVE_KEYS = {'book', 'books', 'registry', 'by_title', 'title_lex', 'by_year',
  'by_year_desc', 'book_tags'}
local SAVE_ARGS = {'book_id', 'expected', 'token', 'title', 'author', 'year', 'description',
  'sort_key', 'tags', 'n_old', 'n_new'}
local DELETE_KEYS = SAVE_KEYS
local DELETE_ARGS = {'book_id', 'expected', 'n_old'}
local QUERY_KEYS = {'books', 'registry', 'by_title', 'by_year', 'by_year_desc', 'result', 'any',
  'sorted'}
local QUERY_ARGS = {'n_and', 'n_or', 'n_not', 'sort', 'offset', 'count', 'ttl_ms', 'top_n'}
local FACETS_KEYS = {'result', 'book_tags', 'books'}
local FACETS_ARGS = {'limit', 'drop', 'crossover'}
local TAGS_FILL_KEYS = {'book_tags'}
local TAGS_FILL_ARGS = {}

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
  return {"ok"}
end

-- Drop the tag sets that do not exist (unknown tags), remembering their positions.
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

-- Walk `order` from its start, keeping the members of `source`, until a page is full.
-- Cheap when the result is a large share of the catalog: about (offset + count) / share reads.
local function scan_page(order, source, offset, count, expected_reads)
  local ids, skipped, position = {}, 0, 0
  local batch = math.max(64, math.min(1000, expected_reads))
  while #ids < count do
    local chunk = redis.call("ZRANGE", order, position, position + batch - 1)
    if #chunk == 0 then
      break
    end
    local member = redis.call("SMISMEMBER", source, unpack(chunk))
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

-- Intersect the result with `order` (ZINTERSTORE) and read the page: for small shares.
local function sort_page(order, source, sorted, offset, count)
  redis.call("ZINTERSTORE", sorted, 2, source, order, "WEIGHTS", 0, 1)
  local ids = redis.call("ZRANGE", sorted, offset, offset + count - 1)
  redis.call("DEL", sorted)
  return ids
end

-- One result page. KEYS: 1 all-books set, 2 tag registry, 3 title order, 4 oldest-first order,
-- 5 newest-first order, 6 scratch result, 7 scratch any, 8 scratch sorted, then the AND, OR
-- and NOT tag sets. ARGV: n_and, n_or, n_not, sort ("title" | "year" | "-year"), offset,
-- count, scratch ttl ms, top n.
-- Reply: {total, result key index (0: every book), page ids, unknown key indexes,
--         top tags as name, count, name, count..., number of books in the catalog}. The scratch result (KEYS[6]) is left
-- with a short expiry for the caller's facet counts, which follow in the same request.
local FIRST_TAG = 9

local function query(keys, args)
  local k, a = named(keys, QUERY_KEYS), named(args, QUERY_ARGS)
  local books, registry = k.books, k.registry
  local orders = {title = k.by_title, year = k.by_year, ["-year"] = k.by_year_desc}
  local result, scratch_any, sorted = k.result, k.any, k.sorted
  local n_and, n_or, n_not = tonumber(a.n_and), tonumber(a.n_or), tonumber(a.n_not)
  local order = orders[a.sort] or k.by_title
  local offset, count = tonumber(a.offset), tonumber(a.count)
  local ttl, top_n = tonumber(a.ttl_ms), tonumber(a.top_n)

  local unknown = {}
  local all_of = known_keys(keys, FIRST_TAG, n_and, unknown)
  local any_of = known_keys(keys, FIRST_TAG + n_and, n_or, unknown)
  local none_of = known_keys(keys, FIRST_TAG + n_and + n_or, n_not, unknown)

  local result_index
  if #all_of == 0 and #any_of == 0 and #none_of == 0 then
    result_index = 0
  elseif #all_of == 1 and #any_of == 0 and #none_of == 0 then
    -- one tag is its own result: no copy
    for i = FIRST_TAG, FIRST_TAG + n_and - 1 do
      if keys[i] == all_of[1] then
        result_index = i
      end
    end
  else
    result_index = 6
    if #any_of > 0 then
      redis.call("SUNIONSTORE", scratch_any, unpack(any_of))
      redis.call("PEXPIRE", scratch_any, ttl)
      table.insert(all_of, scratch_any)
    end
    if #all_of > 0 then
      redis.call("SINTERSTORE", result, unpack(all_of))
    else
      redis.call("SDIFFSTORE", result, books, unpack(none_of))
      none_of = {}
    end
    if #none_of > 0 then
      redis.call("SDIFFSTORE", result, result, unpack(none_of))
    end
    redis.call("DEL", scratch_any)
    redis.call("PEXPIRE", result, ttl)
  end

  local ids, total
  local everything = redis.call("ZCARD", k.by_title)
  if result_index == 0 then
    total = everything
    ids = redis.call("ZRANGE", order, offset, offset + count - 1)
  else
    local source = keys[result_index]
    total = redis.call("SCARD", source)
    if total == 0 or offset >= total then
      ids = {}
    else
      local expected_reads = math.ceil((offset + count) * everything / total)
      if expected_reads <= total then
        ids = scan_page(order, source, offset, count, expected_reads)
      else
        ids = sort_page(order, source, sorted, offset, count)
      end
    end
  end
  local top = redis.call("ZRANGE", registry, 0, top_n - 1, "REV", "WITHSCORES")
  return {total, result_index, ids, unknown, top, everything}
end

-- Facet counts of a result. KEYS: 1 the result set, 2 the book-tags hash, 3 the all-books set,
-- then one tag set per facet asked for. ARGV: SINTERCARD limit (0: exact), "1" to drop the
-- result set afterwards (a scratch key), the largest result counted from the book-tags hash,
-- then the facets' tag names (in the order of their sets).
-- Reply: one count per tag set, in KEYS order, capped at the limit. A result of at most the
-- crossover is counted by reading its books' tag lists (one HMGET; cost grows with the result);
-- a bigger one, or a store whose book-tags hash is not complete (data written before it
-- existed), with one SINTERCARD per tag (cost grows with the number of tags).
local FACET_TAG = #FACETS_KEYS + 1

local function facets(keys, args)
  local k, a = named(keys, FACETS_KEYS), named(args, FACETS_ARGS)
  local limit, drop, crossover = tonumber(a.limit), a.drop == "1", tonumber(a.crossover)
  local n = #keys - FACET_TAG + 1
  if not (limit and crossover) or limit < 0 or n < 0 or #args ~= #FACETS_ARGS + n then
    return redis.error_reply("ERR catalog_facets: malformed call")
  end
  local result, book_tags, books, counts = k.result, k.book_tags, k.books, {}
  local size = redis.call("SCARD", result)
  if n > 0 and size <= crossover
      and redis.call("HLEN", book_tags) == redis.call("SCARD", books) then
    local wanted = {}
    for i = 1, n do
      wanted[args[#FACETS_ARGS + i]] = 0
    end
    local ids = redis.call("SMEMBERS", result)
    local step = 4096  -- keep unpack() within Lua's stack
    for first = 1, #ids, step do
      local lists = redis.call("HMGET", book_tags, unpack(ids, first, math.min(#ids, first + step - 1)))
      for _, list in ipairs(lists) do
        if list then
          for _, name in ipairs(cjson.decode(list)) do
            local seen = wanted[name]
            if seen then
              wanted[name] = seen + 1
            end
          end
        end
      end
    end
    for i = 1, n do
      local count = wanted[args[#FACETS_ARGS + i]]
      if limit > 0 and count > limit then
        count = limit
      end
      counts[i] = count
    end
  else
    for i = 1, n do
      counts[i] = redis.call("SINTERCARD", 2, result, keys[FACET_TAG - 1 + i], "LIMIT", limit)
    end
  end
  if drop then
    redis.call("UNLINK", result)
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
redis.register_function{function_name = "catalog_query", callback = query}
redis.register_function{function_name = "catalog_facets", callback = facets}
redis.register_function{function_name = "catalog_book_tags_fill", callback = book_tags_fill}
