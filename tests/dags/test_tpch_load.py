"""tpch_load end to end with Airflow's dag.test() on the test session's managed MariaDB."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mysqlbench.results.store import ResultsStore, samples, validations
from mysqlbench.workloads.tpch.validate import NAMED_INDEXES

from conftest import EXTERNAL_CONN, TEST_CONN

SCHEMA = "tpch_dagtest"
SF = 0.01


@pytest.fixture(scope="module")
def dag(airflow_db, target):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))
    return bag.get_dag("tpch_load")


def run(dag, **conf):
    conf = {"scale_factor": SF, "target_conn_id": TEST_CONN, "schema": SCHEMA, **conf}
    return dag.test(run_conf=conf)


def task_states(dag_run) -> dict[str, str]:
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        tis = session.scalars(select(TaskInstance).where(TaskInstance.run_id == dag_run.run_id,
                                                         TaskInstance.dag_id == dag_run.dag_id)).all()
        return {ti.task_id: str(ti.state) for ti in tis}


@pytest.fixture(scope="module")
def loaded(dag, admin_module):
    with admin_module.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS {SCHEMA}")
    dag_run = run(dag)
    return dag_run


@pytest.fixture(scope="module")
def admin_module(managed):
    conn = managed.admin_connect()
    yield conn
    conn.close()


def query(conn, sql, *args):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def test_load_succeeds_with_every_step(loaded):
    assert str(loaded.state) == "success"
    states = task_states(loaded)
    for task in ("check_params", "generate", "plan", "create_tables", "load", "add_constraints",
                 "rename_tables", "analyze", "validate"):
        assert states[task] == "success", (task, states)
    assert states["reuse_dataset"] == "skipped"


def test_loaded_schema_has_rows_keys_indexes_and_lower_case_names(loaded, admin_module):
    rows = dict(query(admin_module, "SELECT TABLE_NAME, 0 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                      "AND TABLE_NAME <> 'mysqlbench_owner'", SCHEMA))
    assert sorted(rows) == sorted(["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"])
    assert query(admin_module, f"SELECT COUNT(*) FROM {SCHEMA}.lineitem")[0][0] == 60_175
    assert query(admin_module, f"SELECT COUNT(*) FROM {SCHEMA}.orders")[0][0] == 15_000
    pks = query(admin_module, "SELECT COUNT(*) FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = %s "
                "AND CONSTRAINT_TYPE = 'PRIMARY KEY' AND TABLE_NAME <> 'mysqlbench_owner'", SCHEMA)[0][0]
    assert pks == 8
    fks = query(admin_module, "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS "
                "WHERE CONSTRAINT_SCHEMA = %s", SCHEMA)[0][0]
    assert fks == 8
    indexes = {r[0] for r in query(admin_module, "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS "
                                   "WHERE TABLE_SCHEMA = %s AND INDEX_NAME <> 'PRIMARY'", SCHEMA)}
    assert indexes == set(NAMED_INDEXES)
    # statistics pinned: persistent, no automatic recalculation
    options = query(admin_module, "SELECT CREATE_OPTIONS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                    "AND TABLE_NAME = 'lineitem'", SCHEMA)[0][0]
    assert "stats_auto_recalc=0" in options.lower()


def test_every_index_hint_in_include_sql_exists_on_the_loaded_schema(loaded, admin_module):
    from mysqlbench.sqlfiles import index_hints

    existing = {r[0].lower() for r in query(admin_module, "SELECT DISTINCT INDEX_NAME FROM "
                                            "information_schema.STATISTICS WHERE TABLE_SCHEMA = %s", SCHEMA)}
    assert index_hints() and {h.lower() for h in index_hints()} <= existing


def test_results_store_has_validation_and_lineage(loaded):
    store = ResultsStore()
    checks = store.rows(validations, run_id=loaded.run_id)
    assert len(checks) == 1 and checks[0]["success"] and checks[0]["suite"] == "tpch_load"
    statistics = json.loads(checks[0]["statistics"])
    assert statistics["evaluated_expectations"] == statistics["successful_expectations"] == 11
    load_rows = store.rows(samples, run_id=loaded.run_id, task_id="load")
    total = [r for r in load_rows if r["metric"] == "load_seconds"][0]
    assert total["value"] > 0 and total["unit"] == "s"
    profile = json.loads(total["metadata"])["profile"]
    # 10 MB of data fits in the 96 MB redo log: no resize, and the session profile is recorded
    assert profile["applied"] == [] and profile["session"] == {"unique_checks": 0, "foreign_key_checks": 0}
    for column in ("server_flavor", "server_version", "variables_hash", "host_hash", "dataset_id",
                   "package_version", "spec_hash"):
        assert total[column], column
    assert total["dataset_id"].startswith("tpch-sf0.01-")


def test_second_trigger_skips_the_work_and_says_so(dag, loaded):
    again = run(dag)
    assert str(again.state) == "success"
    states = task_states(again)
    assert states["reuse_dataset"] == "success" and states["validate"] == "success"
    for task in ("create_tables", "load", "add_constraints", "rename_tables", "analyze"):
        assert states[task] == "skipped", (task, states)
    reused = ResultsStore().rows(samples, run_id=again.run_id, task_id="reuse_dataset")
    assert reused[0]["metric"] == "dataset_reused"
    generated = ResultsStore().rows(samples, run_id=again.run_id, task_id="generate")[0]
    assert generated["status"] == "skipped" and generated["value"] is None


def server_fingerprint(admin_conn) -> tuple[dict, int, int]:
    rows = dict(query(admin_conn, "SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Com\\_%%' "
                      "OR Variable_name IN ('Uptime', 'Connections')"))
    uptime = int(rows.pop("Uptime"))
    connections = int(rows.pop("Connections"))
    rows.pop("Com_show_status")  # this query itself
    return {k: int(v) for k, v in rows.items()}, uptime, connections


def untouched(first, then) -> None:
    """Two server_fingerprint readings: no statement counted, not even a connection, no restart."""
    (before, uptime_before, connections_before), (after, uptime_after, connections_after) = first, then
    assert after == before, {k: (before[k], after[k]) for k in after if after[k] != before.get(k)}
    assert connections_after == connections_before, "nothing even connected"
    assert uptime_after >= uptime_before


@pytest.mark.parametrize("conf,message", [
    ({"scale_factor": 0}, "scale_factor"),
    ({"scale_factor": -1}, "scale_factor"),
    ({"scale_factor": "abc"}, "scale_factor"),
    ({"target_conn_id": "no_such_connection"}, "no_such_connection"),
    ({"schema": "tpch`x"}, "schema"),
    ({"schema": "tpch;drop"}, "schema"),
    ({"target_conn_id": EXTERNAL_CONN}, "not marked as a benchmark target"),
    ({"load_redo_log_size": "900T"}, "load_redo_log_size 900T is more than the free disk under the datadir"),
])
def test_bad_input_is_refused_by_the_check_before_any_server_change(target, managed, conf, message):
    """Each bad input through the load's first task's own check (check_params, what the DAG runs
    first): a clear error; the server's statement counters unchanged and not even a connection."""
    from mysqlbench.workloads.lifecycle import check_params
    from mysqlbench.workloads.tpch.build import TpchBuild

    conn = managed.admin_connect()
    try:
        before, uptime_before, connections_before = server_fingerprint(conn)
        with pytest.raises(Exception) as refused:
            check_params(TpchBuild, {"scale_factor": SF, "target_conn_id": TEST_CONN, "schema": SCHEMA, **conf})
        assert message in str(refused.value)
        after, uptime_after, connections_after = server_fingerprint(conn)
    finally:
        conn.close()
    untouched((before, uptime_before, connections_before), (after, uptime_after, connections_after))


def test_a_refused_load_fails_at_its_first_task_and_touches_nothing(dag, loaded, managed, capfd):
    """A whole run whose params check_params refuses fails there: every other task but the
    release_build teardown (which touches only the results store) never runs, and the server sees
    nothing. A value beyond a bound too: the form's params state no bounds (Airflow's form would
    clamp to them unseen, issue 24), so the run starts and check_params refuses it with the reason."""
    conn = managed.admin_connect()
    try:
        before, uptime_before, connections_before = server_fingerprint(conn)
        dag_run = run(dag, schema="tpch;drop")
        assert str(dag_run.state) == "failed"
        states = task_states(dag_run)
        assert states["check_params"] == "failed"
        assert all(states[t] in ("upstream_failed", "None") for t in states
                   if t not in ("check_params", "release_build")), states
        assert states["release_build"] == "success", states  # nothing to release, and no secondary error
        out = capfd.readouterr().out
        assert "schema" in out and "TypeError" not in out
        beyond = run(dag, scale_factor=-1)
        assert str(beyond.state) == "failed" and task_states(beyond)["check_params"] == "failed"
        assert "scale_factor: Input should be greater than or equal to 0.01" in capfd.readouterr().out
        after, uptime_after, connections_after = server_fingerprint(conn)
    finally:
        conn.close()
    untouched((before, uptime_before, connections_before), (after, uptime_after, connections_after))


def test_benchmark_password_appears_nowhere(loaded, bench_password, session_dir):
    secret = bench_password.encode()
    leaks = []
    for root in (Path(os.environ["MYSQLBENCH_WORK_DIR"]), Path(os.environ["AIRFLOW_HOME"]) / "logs"):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    if secret in path.read_bytes():
                        leaks.append(str(path))
                except PermissionError:
                    continue
    assert leaks == []
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        values = session.scalars(select(XComModel.value).where(XComModel.dag_id == "tpch_load")).all()
    assert values and not any(bench_password in json.dumps(v, default=str) for v in values)


def _changes(conn, contents: bool) -> list[str]:
    from mysqlbench import ownership
    from mysqlbench.fingerprint import changes_since_verified

    return changes_since_verified(conn, SCHEMA, ownership.read_marker(conn, SCHEMA), contents=contents)


def test_a_tampered_dataset_is_seen_and_rebuilt(dag, loaded, managed):
    """Issue 7 #8: a verified dataset changed behind mysqlbench's back is no longer trusted. The
    cheap check before each point sees a write since the last start and a dropped index; the
    contents check when a run decides to reuse it sees a change hidden by a restart (InnoDB forgets
    UPDATE_TIME), and the load rebuilds it instead of failing on it forever."""
    conn = managed.admin_connect()
    try:
        assert _changes(conn, contents=True) == []
        query(conn, f"UPDATE {SCHEMA}.lineitem SET l_quantity = l_quantity + 1 WHERE l_orderkey = 1 AND l_linenumber = 1")
        conn.commit()
        assert _changes(conn, contents=False) == [
            "lineitem: written after it was verified (information_schema.TABLES.UPDATE_TIME)"]
        # a study's point checks before it measures
        from mysqlbench import ownership
        from mysqlbench.errors import MysqlbenchError
        from mysqlbench.studies.spec import load_spec
        from mysqlbench.targets.connection import TargetConnection
        from mysqlbench.workloads.tpch.workload import TpchWorkload

        workload = TpchWorkload(load_spec("tpch_bka_study", {"dataset": {"scale_factor": SF, "schema": SCHEMA}}))
        with pytest.raises(MysqlbenchError, match="changed after dataset .* was verified .*lineitem: written"):
            workload.check_dataset(TargetConnection.from_airflow(TEST_CONN), ownership.read_marker(conn, SCHEMA)["dataset_id"])
        query(conn, f"ALTER TABLE {SCHEMA}.orders DROP INDEX i_o_orderdate")
        assert "orders: definition changed (columns, keys or indexes)" in _changes(conn, contents=False)
    finally:
        conn.close()
    managed.restart()  # UPDATE_TIME is gone; the index and the checksum still tell
    conn = managed.admin_connect()
    try:
        changed = _changes(conn, contents=True)
        assert "lineitem: contents changed (CHECKSUM TABLE)" in changed
        assert not any("UPDATE_TIME" in line for line in changed)
    finally:
        conn.close()

    rebuilt = run(dag)
    assert str(rebuilt.state) == "success"
    states = task_states(rebuilt)
    assert states["create_tables"] == "success" and states["reuse_dataset"] == "skipped", states
    conn = managed.admin_connect()
    try:
        assert _changes(conn, contents=True) == []
        assert query(conn, "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s "
                           "AND INDEX_NAME = 'i_o_orderdate'", SCHEMA)[0][0] == 1
    finally:
        conn.close()
