"""Studies started together wait for each other instead of spoiling each other: separate dag.test()
processes (each with its own copy of Airflow's metadata DB, all sharing one results store, as
workers of one deployment do) run two TPC-H studies and a tpch_load on one managed target and a
probe study on a second managed target on the same host, at once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from mysqlbench.results.store import ResultsStore, samples, server_snapshots

from conftest import TEST_CONN

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "tpch_conc"
RUN = textwrap.dedent("""
    import json, sys
    from airflow.dag_processing.dagbag import DagBag
    dag = DagBag(dag_folder=sys.argv[1]).get_dag(sys.argv[2])
    run = dag.test(run_conf=json.loads(sys.argv[3]))
    print("RUN", run.run_id, flush=True)
    print("STATE", run.state, flush=True)
""")


def test_concurrent_studies_wait_and_each_point_runs_with_its_own_settings(airflow_db, target, managed, session_dir):
    from airflow.models.pool import Pool

    from mysqlbench.targets.managed import ManagedServer

    from conftest import managed_spec

    second = ManagedServer(managed_spec("test_bench"))  # another managed target, same host, a free port
    second.start()
    try:
        password = second.ensure_benchmark_user()
        os.environ["AIRFLOW_CONN_MYSQLBENCH_TEST_BENCH"] = json.dumps(
            {"conn_type": "mysql", "host": "127.0.0.1", "port": second.spec.port, "login": "mysqlbench",
             "password": password, "extra": second.connection_extra()})
        for conn_id in (TEST_CONN, "mysqlbench_test_bench"):
            Pool.create_or_update_pool(f"target_{conn_id}", slots=1, description="tests", include_deferred=False)
        db = Path(os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].removeprefix("sqlite:///"))
        runs = {
            "tpch_bka_study": {"scale_factor": 0.01, "schema": SCHEMA, "target_conn_id": TEST_CONN, "repetitions": 1,
                               "seed": 3},
            "tpch_icp_study": {"scale_factor": 0.01, "schema": SCHEMA, "target_conn_id": TEST_CONN, "repetitions": 1,
                               "seed": 4},
            "tpch_load": {"scale_factor": 0.01, "schema": SCHEMA, "target_conn_id": TEST_CONN},
            "probe_study": {"target_conn_id": "mysqlbench_test_bench"},
        }
        procs, logs = {}, {}
        for n, (dag_id, conf) in enumerate(runs.items()):
            copy = session_dir / f"airflow-{n}.db"
            shutil.copy(db, copy)
            env = {**os.environ, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{copy}"}
            logs[dag_id] = session_dir / f"concurrent-{dag_id}.log"  # a file: a full pipe would block a holder
            with open(logs[dag_id], "w") as out:
                procs[dag_id] = subprocess.Popen([sys.executable, "-c", RUN, str(REPO / "dags"), dag_id,
                                                  json.dumps(conf)], env=env, stdout=out, stderr=subprocess.STDOUT)
        for proc in procs.values():
            proc.wait(timeout=1200)
        outputs = {dag_id: path.read_text() for dag_id, path in logs.items()}
    finally:
        os.environ.pop("AIRFLOW_CONN_MYSQLBENCH_BENCH", None)
        second.stop()
    run_ids = {}
    for dag_id, out in outputs.items():
        problems = [line for line in out.splitlines() if "Error" in line or "Traceback" in line or "failed" in line]
        assert "STATE success" in out, f"{dag_id}:\n" + "\n".join(problems[-30:])
        run_ids[dag_id] = next(line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("RUN "))

    store = ResultsStore()
    snapshots = {r["variables_hash"]: json.loads(r["variables"]) for r in store.rows(server_snapshots)}
    wanted = {"tpch_bka_study": 64 << 20, "tpch_icp_study": 512 << 20}
    windows = []
    for dag_id in ("tpch_bka_study", "tpch_icp_study", "probe_study"):
        rows = store.measured_rows(samples, dag_id=dag_id, run_id=run_ids[dag_id])
        assert rows, dag_id
        for row in rows:
            if dag_id in wanted:  # the settings read back in the point are the point's own
                assert snapshots[row["variables_hash"]]["innodb_buffer_pool_size"] == str(wanted[dag_id]), \
                    (row["point"], row["metric"], row["status"], row["try_number"], json.loads(row["metadata"]).get("why"))
            meta = json.loads(row["metadata"])
            if row["kind"] == "metric" and meta.get("window"):
                windows.append((meta["window"]["start"], meta["window"]["end"], dag_id, row["point"]))
    windows = sorted(set(windows))
    assert {w[2] for w in windows} == {"tpch_bka_study", "tpch_icp_study", "probe_study"}
    for earlier, later in zip(windows, windows[1:], strict=False):
        # one measurement per host at a time, across targets and DAG runs
        assert earlier[1] <= later[0], f"{earlier} overlaps {later}"

    conn = managed.admin_connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT value FROM {SCHEMA}.mysqlbench_owner WHERE name = 'state'")
            assert json.loads(cur.fetchone()[0]) == "verified"
    finally:
        conn.close()
