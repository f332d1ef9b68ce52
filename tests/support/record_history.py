"""Record a history without a change, for tests/data/regression/: the same short study runs again
and again on the demo target, in one process (dag.test, no scheduler), with nothing else changed.
Run it on a quiet machine, from the repository, after `bin/mysqlbench target up demo`:

    source bin/env.sh && taskset -c 0 .venv/bin/python tests/support/record_history.py 28 recorded.json

It writes the runs' history as `bin/mysqlbench history` prints it (the results store's path
removed) to the file given."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNS = [
    ("tpch_power", {"scale_factor": 0.01, "queries": ["q01", "q03", "q06", "q08", "q10", "q12", "q14", "q18"],
                    "repetitions": 3, "warmup_max_runs": 3, "schema": "tpch_rg"}),
    ("sysbench_cpu", {"max_prime": 2000, "time_s": 2, "interval_s": 1, "repetitions": 2, "matrix": {"threads": [1, 2]}}),
]


def main(count: int, out_path: Path) -> None:
    from airflow.dag_processing.dagbag import DagBag

    from mysqlbench.cli import history_export

    since = dt.datetime.now(dt.timezone.utc).isoformat()
    for i in range(count):
        for dag_id, conf in RUNS:
            run = DagBag(dag_folder=str(REPO / "dags")).get_dag(dag_id).test(run_conf=conf)
            print(f"{i} {dag_id} {run.state}", file=sys.stderr)
    out = history_export([dag_id for dag_id, _ in RUNS], since)
    out.pop("results_store")
    out_path.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]))
