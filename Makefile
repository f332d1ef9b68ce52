# mysqlbench: `make demo` runs a real study on a MariaDB the project starts itself; `make test`
# runs the whole suite. Both set everything up first (bin/setup is idempotent).
SHELL := /bin/bash
DEMO_SF ?= 0.1
# 4: the fewest repetitions a point for which two points' difference has a 95% interval (94.3%)
DEMO_REPETITIONS ?= 4

PYTEST_WORKERS ?= 2

.PHONY: setup demo test acceptance test-unit test-server test-e2e lint docs bench mutate mutate-targets down clean

setup:
	@bin/setup

demo: setup
	@bin/mysqlbench target up demo >/dev/null
	@echo "managed MariaDB 'demo' is up on 127.0.0.1:3317 (connection mysqlbench_demo)"
	@echo "running tpch_bka_study at SF $(DEMO_SF) (loads the dataset first; a few minutes)..."
	@bin/airflow dags test tpch_bka_study --conf '{"scale_factor": $(DEMO_SF), "repetitions": $(DEMO_REPETITIONS)}' > work/demo-airflow.log 2>&1 \
	  || { grep -E "INVALID|Error" work/demo-airflow.log | tail -5; echo "demo run failed or INVALID: log in work/demo-airflow.log"; exit 1; }
	@bin/mysqlbench results --dag-id tpch_bka_study > work/demo-results.json
	@echo "tpch_bka_study at SF $(DEMO_SF) done. Findings:"
	@grep -o "finding: [^\[]*" work/demo-airflow.log | sed 's/^/  /'
	@echo "  report:        $$(grep -o 'report: [^ ]*index.html' work/demo-airflow.log | tail -1 | cut -d' ' -f2)"
	@echo "  results store: $$(pwd)/work/results.db (this run's rows: work/demo-results.json)"
	@echo "  Airflow log:   work/demo-airflow.log"

lint: setup
	.venv/bin/ruff check .

# the reference pages regenerated from the code and data they describe, then the site (work/site/)
docs: setup
	bin/mysqlbench docs
	.venv/bin/mkdocs build --strict
	@echo "the manual: $$(pwd)/work/site/index.html"

# The whole suite: on PYTEST_WORKERS workers side by side (each test process has its own work
# directory, Airflow home and server ports; a module's tests stay on one worker), then the tests
# that judge a measured effect (marked serial), alone. Modules start slowest first (tests/conftest.py
# SLOWEST_FIRST), not in xdist's most-tests-first order. One tier at a time: make test-unit (no
# server, seconds), test-server (servers the suite starts), test-e2e (Airflow runs). An open
# issue's acceptance that does not hold yet is an expected failure, which cannot fail a run: it is
# left to make acceptance, not spent in every make test.
test: lint
	.venv/bin/pytest -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder -m "not serial and not open_acceptance"
	.venv/bin/pytest -m "serial and not open_acceptance"

acceptance: setup
	.venv/bin/pytest -m open_acceptance

test-unit: setup
	.venv/bin/pytest -m unit

test-server: setup
	.venv/bin/pytest -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder -m server

test-e2e: setup
	.venv/bin/pytest -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder -m e2e

bench: setup
	source bin/env.sh && .venv/bin/python bench/dataset_check_bench.py
	source bin/env.sh && .venv/bin/python bench/parse_bench.py
	source bin/env.sh && .venv/bin/python bench/history_bench.py
	source bin/env.sh && .venv/bin/python bench/load_bench.py
	source bin/env.sh && .venv/bin/python bench/study_bench.py
	source bin/env.sh && .venv/bin/python bench/tpcc_bench.py

# mutation testing of the pure modules against the unit tier (mutmut; outside make test, minutes):
# every surviving mutant listed. MUTATE_MODULES="statistics.py ..." (under plugins/mysqlbench/) narrows it.
mutate: setup
	bin/mutate $(MUTATE_MODULES)

# a seeded sample of 200 mutants of targets/ against the unit and server tiers (outside make test;
# about an hour here): each mutant runs the tests that reach its function, servers and all
mutate-targets: setup
	bin/mutate --server --sample 200 targets/

down:
	@bin/mysqlbench target down demo

# every managed server is stopped first (a datadir deleted under a running server orphans it)
clean: setup
	bin/mysqlbench target down --all
	rm -rf work
