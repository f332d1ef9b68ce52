"""The seed 004 study end to end with dag.test(): the six tables built and verified, every
operation run by mariadb-slap at two concurrency levels on MariaDB 10.11, the data put back after
each run, the seed's table in the report; on MySQL 9.7 MyISAM partitions are not applicable, with
the server's own reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mysqlbench.results.store import ResultsStore, samples

from conftest import MYSQL_CONN, TEST_CONN

UNITS = ["select", "insert", "delete", "update", "batch_select"]


@pytest.fixture(scope="module")
def bag(airflow_db, target, mysql_target):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.pool import Pool

    for conn_id in (TEST_CONN, MYSQL_CONN):
        Pool.create_or_update_pool(f"target_{conn_id}", slots=1, description="tests", include_deferred=False)
    return DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))


def run(bag, **conf):
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=bag.dag_folder).get_dag("slap_partitioning_study")
    return dag.test(run_conf={"rows": 2000, "schema": "slap_t", "repetitions": 1, "seed": 4, "concurrency_scale": 1,
                              "queries_per_client": 200, "batch_statements": 50, **conf})


def rows_of(run_):
    return ResultsStore().measured_rows(samples, dag_id=run_.dag_id, run_id=run_.run_id)


@pytest.fixture(scope="module")
def on_mariadb(bag):
    return run(bag, target_conn_id=TEST_CONN, units=UNITS,
               matrix={"engine": ["MyISAM", "InnoDB"], "layout": ["single", "hash", "split"], "concurrency": [2, 6]})


def test_every_engine_layout_and_operation_is_measured(on_mariadb):
    assert str(on_mariadb.state) == "success"
    rows = [r for r in rows_of(on_mariadb) if r["kind"] == "metric"]
    avg = [r for r in rows if r["metric"] == "avg_s"]
    assert len(avg) == 2 * 3 * 2 * len(UNITS) and all(r["status"] == "ok" and r["value"] >= 0 for r in avg)
    clients = {(r["point"].split(" cache")[0], r["subject"]): r["value"] for r in rows if r["metric"] == "clients"}
    assert clients[("engine=MyISAM layout=split concurrency=6", "update")] == 6
    assert clients[("engine=MyISAM layout=split concurrency=6", "batch_select")] == 1  # the seed's single client
    per_client = {r["value"] for r in rows if r["metric"] == "queries_per_client"}
    assert per_client == {200, 50}  # the statements file, as mariadb-slap counted it
    meta = json.loads(avg[0]["metadata"])
    assert meta["slap"]["tool"] == "mariadb-slap" and meta["slap"]["bulk_insert_s"] > 0


def test_the_server_did_the_work_the_operation_names(on_mariadb):
    counters = {(r["point"], r["subject"], r["metric"]): r["value"] for r in rows_of(on_mariadb)
                if r["kind"] == "counter"}
    point = "engine=InnoDB layout=split concurrency=6 cache=warm"
    assert counters[(point, "delete", "Handler_delete")] > 0
    assert counters[(point, "insert", "Handler_write")] >= 6 * 200  # every client's inserts (and the sequence's)
    myisam = "engine=MyISAM layout=single concurrency=6 cache=warm"
    assert counters[(myisam, "update", "Table_locks_immediate")] + counters[(myisam, "update", "Table_locks_waited")] > 0


def test_every_run_put_the_data_back(on_mariadb, managed):
    from mysqlbench import fingerprint, ownership

    conn = managed.admin_connect()
    try:
        marker = ownership.read_marker(conn, "slap_t")
        assert marker["state"] == "verified"
        assert fingerprint.changes_since_verified(conn, "slap_t", marker, contents=True) == [
            c for c in fingerprint.changes_since_verified(conn, "slap_t", marker, contents=False)
            if "written after" in c]  # written, but every checksum is the verified one
    finally:
        conn.close()


def test_the_report_has_the_seeds_table(on_mariadb):
    from mysqlbench.studies.report import report_dir

    directory = report_dir(on_mariadb.dag_id, on_mariadb.run_id)
    summary = json.loads((directory / "summary.json").read_text())
    (title,) = [t for t in summary["tables"] if t.startswith("Seed 004's table")]
    table = summary["tables"][title]
    assert {(r["operation"], r["concurrency"]) for r in table} == {
        *((op, c) for op in ("select", "insert", "delete", "update") for c in (2, 6)), ("batch_select", 1)}
    columns = ["MyISAM single", "MyISAM hash", "MyISAM split", "InnoDB single", "InnoDB hash", "InnoDB split"]
    assert all(all(r[c] is not None for c in columns) for r in table)  # MyISAM and InnoDB side by side
    (bulk_title,) = [t for t in summary["tables"] if t.startswith("Bulk insert of 2000 rows")]
    assert all(summary["tables"][bulk_title][0][c] > 0 for c in columns)
    # the OS chart, or where every window is shorter than the 1 s sampling (this test's 2,000 rows
    # usually are), the reason there is none instead of empty panels
    html = (directory / "index.html").read_text()
    assert "os_metrics.png" in html or "No OS chart: every measured window was shorter than the 1 s OS sampling" in html


def test_on_mysql_myisam_partitions_are_not_applicable(bag):
    out = run(bag, target_conn_id=MYSQL_CONN, units=["select"],
              matrix={"engine": ["MyISAM", "InnoDB"], "layout": ["hash"], "concurrency": [2]})
    assert str(out.state) == "success"
    rows = [r for r in rows_of(out) if r["kind"] == "metric"]
    (skipped,) = [r for r in rows if r["status"] == "not_applicable"]
    assert skipped["point"].startswith("engine=MyISAM layout=hash")
    why = json.loads(skipped["metadata"])["why"]
    assert "MyISAM hash on mysql 9.7" in why and "partition" in why.lower()  # the server's own words
    (measured,) = [r for r in rows if r["metric"] == "avg_s" and r["status"] == "ok"]
    assert measured["point"].startswith("engine=InnoDB layout=hash")
