-- Editing the catalog: catalog_book_save, catalog_book_delete and catalog_book_tags_fill keep
-- the book hash, the orders, the tag sets and their counts in step.

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
-- Replies {"ok", version} | {"done", version} (this token already applied, as sent) |
--         {"resent", version} (this token applied, other content now: call again naming
--         that version) | {"stale", version} | {"exists"} | {"missing"}. Checks everything
--         before writing.
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
    local saved = redis.call("HMGET", book, "title", "author", "year", "description", "tags")
    if saved[1] == a.title and saved[2] == a.author and tonumber(saved[3]) == year
        and saved[4] == a.description and saved[5] == a.tags then
      return {"done", current[1]}
    end
    -- The same form sent again with other content (back, a typo fixed, save): the book is as
    -- this form left it, so the change goes on top, once the caller names that version (and
    -- so sends its tags as the current ones).
    if expected ~= current[1] then
      return {"resent", current[1]}
    end
  elseif expected == "" then
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
redis.register_function{function_name = "catalog_book_tags_fill", callback = book_tags_fill}
