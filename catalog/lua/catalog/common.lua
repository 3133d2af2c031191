#!lua name=catalog

-- The catalog's server-side functions. Every key arrives in KEYS[]; nothing here builds a name.
-- Fixed keys of the edit functions: 1 book hash, 2 all-books set, 3 tag registry (zset of
-- counts), 4 title order, 5 title lex index, 6 oldest-first order, 7 newest-first order,
-- 8 book-tags hash (book id -> the book's tags as a JSON list, read by the facet counts),
-- 9 edition (a token set anew by every write: workers keep result pages while it holds).
--
-- Orders are zsets scanned ascending. A title's score is its gapped rank (neighbours at least
-- 1 apart); the year orders add it to +/- year * 1e10, so books of one year stay A to Z.
--
-- One file per function family (edit, query, facets), joined in the order of library.txt.

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
local QUERY_ARGS = {'n_and', 'n_or', 'n_not', 'sort', 'offset', 'count', 'top_n', 'exact_cost',
  'max_reads'}
local FACETS_KEYS = {'book_tags', 'books'}
local FACETS_ARGS = {'limit', 'crossover', 'n_and', 'n_or', 'n_not', 'total', 'max_reads',
  'sample', 'build_cost'}
local TAGS_FILL_KEYS = {'book_tags'}
local TAGS_FILL_ARGS = {}
local FIXED = #SAVE_KEYS  -- the edit functions' fixed keys; tag sets follow

-- A list's items by the names of `names` (same order): named({'a', 'b'}, {'x', 'y'}).x == 'a'.
local function named(values, names)
  local out = {}
  for i, name in ipairs(names) do out[name] = values[i] end
  return out
end
