# Strongroom: `make run` serves the site with demo data; `make test` runs the whole suite;
# `make check` is the fast loop (lint, types, import rules and every test that is not slow
# and no exhaustive sweep).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

# pytest-xdist: each worker on a store of its own; the tests wait on their stores (a round
# trip, an fsync, a failover, a served site), and more workers than cores fill that time, up to
# four: then the machine is busy (1.8 of its 2 cores over the whole suite, Chromium the most).
# `make check` takes three (idle: the fast tests 52 s against 55-58 s with two). The whole
# suite takes four, handed out a file at a time, heaviest first (tests/marks_support.py), so a
# module's own site or server starts once: 5 min 35 s to 6 min 07 s on a fresh clone. Six took
# 5 min 53 s against 5 min 36 s for four on one tree (every test slower), and once the ten-kills
# mail test missed 49 receipts within its minute (alone, and under eight spinning processes, it
# passes; the cause is not known), so the suite stays on four. The cluster pass takes three
# (each worker starts a 3-node cluster): 63 s against 68 s with two.
PYTEST_PARALLEL := -n 3
SUITE_PARALLEL := -n 4
CLUSTER_PARALLEL := -n 3
# pytest keeps its compiled test modules (assertions rewritten) in __pycache__ for the next run,
# even where the environment says not to write bytecode: it saves seconds per worker.
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest
# The static checks as `make test` starts them beside the suite. Named through a variable: a
# recipe line that names $(MAKE) itself runs even under `make -n`, which would start the suite.
STATIC_CHECKS = $(MAKE) --no-print-directory static

.PHONY: run test check static lint bench install chromium redis-server clean-store

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

# The test extra in the same pip run as the site on a fresh machine (one resolution: about 10 s
# less than installing the site first, then the extra).
$(TEST_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,bench]"
	touch $(STAMP) $@

install: $(STAMP)

# Cookies are Secure whenever DEBUG=0 (settings.py). The one opt-out made here, and said aloud:
# the plain-HTTP demo, served on loopback (BIND's default) with no TLS proxy in front and no
# SECURE_COOKIES given. Behind a proxy (BEHIND_PROXY=1) or on any other address they stay Secure.
RUN_BIND := $(or $(BIND),127.0.0.1:8000)
ifeq ($(origin SECURE_COOKIES),undefined)
ifneq ($(BEHIND_PROXY),1)
ifneq ($(filter 127.0.0.1:% localhost:% [::1]:%,$(RUN_BIND)),)
DEMO_COOKIES := SECURE_COOKIES=0
endif
endif
endif

# A local secret key is made once and kept in var/.
run: $(STAMP)
	@mkdir -p var && { test -s var/secret-key || $(PY) -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret-key; }
	@test -z "$(DEMO_COOKIES)" || echo "make run: a plain-HTTP demo on $(RUN_BIND), so cookies are not marked Secure (SECURE_COOKIES=0). Behind TLS set BEHIND_PROXY=1 (or SECURE_COOKIES=1)."
	SECRET_KEY="$${SECRET_KEY:-$$(cat var/secret-key)}" $(DEMO_COOKIES) $(PY) manage.py serve

# Browser tests need Debian's Chromium; install it when missing and we may (root).
# (with a CJK font, so screenshots of the Chinese pages show their text).
chromium:
	@if { [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/opentype/noto ]; } && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk >/dev/null; \
	fi

# tests/store/test_redis70.py runs the site on Debian's Redis 7.0 (the oldest server supported), which
# the tests start themselves: install the binary when missing and we may (root), and leave no
# system service enabled or running.
redis-server:
	@if [ ! -x /usr/bin/redis-server ] && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
		{ systemctl disable --now redis-server || { update-rc.d redis-server disable && invoke-rc.d redis-server stop; }; } >/dev/null 2>&1 || true; \
	fi

static: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	# Static types (mypy + django-stubs); the settings module wants a SECRET_KEY when DEBUG is off.
	SECRET_KEY=mypy-only DEBUG=0 $(VENV)/bin/mypy strongroom accounts booking catalog dashboard bench tests
	# Import rules between the apps (pyproject.toml [tool.importlinter]).
	$(VENV)/bin/lint-imports

# The fast loop: every test that starts no process of its own (not `slow`, tests/conftest.py).
check: static
	$(PYTEST) -m "not slow and not sweep" $(PYTEST_PARALLEL)

test: $(TEST_STAMP) chromium redis-server
	# axe-core (package-lock.json) for the booking pages' accessibility check in the browser.
	test -f node_modules/axe-core/axe.min.js || npm ci --no-audit --no-fund
	# The static checks (about 20 s of one core, mypy most of it) run beside the whole suite,
	# whose workers spend their first seconds starting stores and waiting on them; either failing
	# fails make test, and the checks' output follows the suite's.
	@$(STATIC_CHECKS) > $(VENV)/static.log 2>&1 & checks=$$!; \
	$(PYTEST) $(SUITE_PARALLEL) --dist loadfile; suite=$$?; \
	wait $$checks; static=$$?; cat $(VENV)/static.log; \
	if [ $$static -ne 0 ]; then echo "make test: the static checks failed (above)"; fi; \
	[ $$static -eq 0 ] && [ $$suite -eq 0 ]
	# Again on a real 3-primary Valkey Cluster: every test that uses the session's store in this
	# process (`store`, not `slow`): keys, routing, pipelines and round trips across primaries.
	# tests/store/test_cluster.py, in the run above, covers failover and races on served sites.
	# The hostile-input sweeps stay on one server: they check refusals before any write, which
	# no cluster changes (the one-node store above already refuses keys that cross slots).
	STRONGROOM_TEST_STORE=cluster $(PYTEST) -m "store and not slow and not sweep" $(CLUSTER_PARALLEL)

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The baseline `make bench` measures this tree against (issue 34: the commit before its work);
# `make bench BENCH_BASE=main` or any commit. `python -m bench` is the single-tree benchmark.
BENCH_BASE ?= 1280d205776cc34c909501167a88bcf80a4b1f2f
bench: $(TEST_STAMP)
	BENCH_BASE=$(BENCH_BASE) $(PY) -m bench.compare

clean-store:
	rm -rf var/
