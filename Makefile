# mysqlbench: `make demo` runs a real study on a MariaDB the project starts itself; `make test`
# runs the whole suite. Both set everything up first (bin/setup is idempotent).
SHELL := /bin/bash
DEMO_SF ?= 0.1

.PHONY: setup demo test bench down clean

setup:
	@bin/setup

demo: setup
	@bin/mysqlbench target up demo >/dev/null
	@echo "managed MariaDB 'demo' is up on 127.0.0.1:3317 (connection mysqlbench_demo)"
	bin/airflow dags test tpch_load --conf '{"scale_factor": $(DEMO_SF), "target_conn_id": "mysqlbench_demo", "schema": "tpch"}' > work/demo-airflow.log 2>&1 \
	  || { tail -40 work/demo-airflow.log; echo "demo failed: full log in work/demo-airflow.log"; exit 1; }
	@bin/mysqlbench results --dag-id tpch_load > work/demo-results.json
	@echo "tpch_load at SF $(DEMO_SF) done."
	@echo "  results store: $$(pwd)/work/results.db (this run's rows: work/demo-results.json)"
	@echo "  Airflow log of the run: work/demo-airflow.log"
	@echo "  data: work/data/tpch/sf$(DEMO_SF)/ (manifest.json); server: work/targets/demo/"

test: setup
	.venv/bin/pytest

bench: setup
	.venv/bin/python bench/load_bench.py

down:
	@bin/mysqlbench target down demo

clean: down
	rm -rf work
