"""One call spec per Redis Function of catalog/lua/catalog/ (see strongroom.calls). The Lua
declares the same names (its `*_KEYS` and `*_ARGS`); tests/store/test_function_calls.py reads
them from the Lua and checks that they agree with this module."""

from __future__ import annotations

from strongroom.calls import FunctionSpec

# more_keys: the book's current tag sets, then its new ones; more_args: their names, same order.
SAVE = FunctionSpec(
    "catalog_book_save",
    "SAVE",
    ("book", "books", "registry", "by_title", "title_lex", "by_year", "by_year_desc",
     "book_tags", "edition"),
    ("book_id", "expected", "token", "title", "author", "year", "description", "sort_key",
     "tags", "n_old", "n_new", "edition"),
    reply=("status", "version"),
)  # fmt: skip
# more_keys: the book's current tag sets; more_args: their names.
DELETE = FunctionSpec(
    "catalog_book_delete",
    "DELETE",
    SAVE.keys,
    ("book_id", "expected", "n_old", "edition"),
    reply=("status", "version"),
)
# more_keys: the AND, OR and NOT tag sets.
QUERY = FunctionSpec(
    "catalog_query",
    "QUERY",
    ("books", "registry", "by_title", "by_year", "by_year_desc", "edition"),
    ("n_and", "n_or", "n_not", "sort", "offset", "count", "top_n", "exact_cost", "max_reads"),
    reply=(
        "total",
        "result_index",
        "ids",
        "unknown",
        "top",
        "everything",
        "edition",
        "estimated",
        "build_cost",
    ),
)
# more_keys: the query's known AND, OR and NOT tag sets, then one tag set per facet; more_args:
# the facets' tag names, in their sets' order.
FACETS = FunctionSpec(
    "catalog_facets",
    "FACETS",
    ("book_tags", "books"),
    ("limit", "crossover", "n_and", "n_or", "n_not", "total", "max_reads", "sample", "build_cost"),
    reply=("counted", "counts"),
)
# more_keys: book hashes; more_args: the books' ids, same order.
TAGS_FILL = FunctionSpec("catalog_book_tags_fill", "TAGS_FILL", ("book_tags",), ())
SPECS = (SAVE, DELETE, QUERY, FACETS, TAGS_FILL)
