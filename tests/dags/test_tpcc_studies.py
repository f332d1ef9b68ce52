"""The TPC-C study DAG end to end with dag.test(): one warehouse, a short run, on the session's
MariaDB 10.11 (instances not applicable, the baseline measured) and MySQL 9.7 (instances applied
and read back); every point from the verified snapshot, consistency checked after every run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mysqlbench.results.store import ResultsStore, TimeSeries, samples, server_snapshots

from conftest import MYSQL_CONN, TEST_CONN

BASE = {"warehouses": 1, "schema": "tpcc_study", "connections": 4, "rampup_s": 2, "measure_s": 6, "interval_s": 2,
        "seed": 9, "repetitions": 1}  # one each: the tests look at the mechanics (the specs say auto)


@pytest.fixture(scope="module")
def bag(airflow_db, target, mysql_target):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.pool import Pool

    for conn_id in (TEST_CONN, MYSQL_CONN):
        Pool.create_or_update_pool(f"target_{conn_id}", slots=1, description="tests", include_deferred=False)
    return DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))


def run(bag, dag_id, **conf):
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=bag.dag_folder).get_dag(dag_id)  # fresh: dag.test() keeps the last conf
    return dag.test(run_conf={**BASE, **conf})


def point_rows(run_):
    return ResultsStore().measured_rows(samples, dag_id=run_.dag_id, run_id=run_.run_id)


def frame_of(run_):
    from mysqlbench.studies.analysis import execution_frame
    from mysqlbench.workloads.tpcc.workload import TpccWorkload

    return execution_frame(point_rows(run_), TpccWorkload.primary)


@pytest.fixture(scope="module")
def on_mariadb(bag):
    return run(bag, "tpcc_bp_instances_study", target_conn_id=TEST_CONN, settings={"buffer_pool_size": "256M"},
               matrix={"buffer_pool_instances": [{}, 1, 8]})


def test_on_mariadb_the_baseline_runs_and_instances_are_not_applicable(on_mariadb):
    assert str(on_mariadb.state) == "success"
    rows = point_rows(on_mariadb)
    skipped = {r["point"] for r in rows if r["status"] == "not_applicable"}
    assert skipped == {"buffer_pool_instances=1 cache=warm", "buffer_pool_instances=8 cache=warm"}
    assert all("removed in MariaDB 10.6" in json.loads(r["metadata"])["why"] for r in rows
               if r["status"] == "not_applicable")
    frame = frame_of(on_mariadb)
    measured = frame[frame["status"] == "ok"]
    assert list(measured["point"]) == ["buffer_pool_instances=default cache=warm"]
    assert (measured["primary"] > 0).all() and (measured["oracle"] == "match").all()


def test_a_run_records_per_type_results_and_a_series_after_the_rampup(on_mariadb):
    rows = [r for r in point_rows(on_mariadb) if r["status"] == "ok"]
    metrics = {r["metric"]: r for r in rows if r["kind"] == "metric"}
    for kind in ("new_order", "payment", "order_status", "delivery", "stock_level"):
        assert metrics[f"{kind}_count"]["value"] > 0, kind
        assert metrics[f"{kind}_errors"]["value"] == 0, kind
        assert metrics[f"{kind}_p50_ms"]["value"] <= metrics[f"{kind}_p99_ms"]["value"] <= metrics[f"{kind}_max_ms"]["value"]
    assert metrics["new_orders_per_min"]["unit"] == "1/min"
    # issue 26: our driver's own count of the window, against the database's over the same span,
    # within the New-Orders alive while either of the database's reads was on its way (seen 1 to 5
    # of ~3,500 with BASE's 4 terminals); a driver counting its rollbacks as New-Orders (1% of
    # them, ~35 here) exceeds it (tried)
    driver, database = metrics["driver_new_orders"]["value"], metrics["new_orders_committed"]["value"]
    alive = metrics["new_orders_alive_at_reads"]["value"]
    assert database > 50 and abs(driver - database) <= alive < 0.02 * database, (driver, database, alive)
    assert 0 <= metrics["stability_cv"]["value"] < 1  # over the three intervals after the rampup
    (series_row,) = [r for r in rows if r["kind"] == "series" and r["metric"] == "new_orders_per_min"]
    series = TimeSeries.from_json(series_row["series"])
    assert series.interval_s == 2 and series.rampup_end_s == 2 and len(series.values) == 4
    measured = series.measured()
    assert len(measured) == 3 and all(v > 0 for v in measured)  # the rampup's interval left out
    # the measured window holds the measure phase only: the window's span is about measure_s
    meta = json.loads(metrics["new_orders_per_min"]["metadata"])
    span = meta["window"]["end"] - meta["window"]["start"]
    assert 5.5 < span < 8, span
    assert meta["cache_evidence"]["dataset_reset"]["how"] == "datadir snapshot"


def test_instances_apply_on_mysql_and_every_point_is_compared_with_the_baseline(bag):
    """Seed 001 on MySQL 9.7 (issue 22): the shipped matrix's baseline (the server's default) and 1
    instance of a 1 GB buffer pool, 4 repetitions a point (the fewest that give two unpaired points
    an interval), each point from the same data; windows of 4 s after a 1 s rampup (8 executions,
    each with two MySQL restarts: the test looks at the comparison, not at a rate). The point is
    compared with the baseline as an interval and a verdict; MySQL 9.7's default at 1 GB reads back
    1 instance, so 1 vs the baseline is the same setting and never reads as a supported difference
    (a 37% gap was once reported there, from one repetition a point). That 8 instances apply on
    MySQL is test_servers.py's test_buffer_pool_instances_applies_on_mysql_and_is_not_applicable_on_mariadb."""
    from mysqlbench.studies.report import report_dir

    result = run(bag, "tpcc_bp_instances_study", target_conn_id=MYSQL_CONN, settings={"buffer_pool_size": "1G"},
                 matrix={"buffer_pool_instances": [{}, 1]}, repetitions=4, rampup_s=1, measure_s=4)
    assert str(result.state) == "success"
    frame = frame_of(result)
    assert len(frame) == 8 and (frame["status"] == "ok").all() and (frame["oracle"] == "match").all()
    assert frame["checksum"].nunique() == 1  # every execution started from the same bytes
    snapshots = {r["variables_hash"]: json.loads(r["variables"]) for r in ResultsStore().rows(server_snapshots)}
    measured = [r for r in point_rows(result) if r["metric"] == "new_orders_per_min" and r["kind"] == "metric"]
    instances = {(json.loads(r["metadata"])["swept"].get("buffer_pool_instances", "default"),
                  snapshots[r["variables_hash"]]["innodb_buffer_pool_instances"]) for r in measured}
    assert instances == {("default", "1"), (1, "1")}, instances
    summary = json.loads((report_dir(result.dag_id, result.run_id) / "summary.json").read_text())
    primary = {c["title"]: c for c in summary["comparisons"] if c["metric"] == "new_orders_per_min"}
    assert set(primary) == {"buffer_pool_instances=1 vs the baseline default"}, primary.keys()
    assert all(c["n"] == 4 and c["ci_low"] is not None and c["verdict"] for c in primary.values()), primary
    assert primary["buffer_pool_instances=1 vs the baseline default"]["verdict"] in ("same", "inconclusive")
    # the report says what the default point really ran with (issue 26 item 4)
    from mysqlbench.studies.steps import USED_TITLE

    used = {r["point"]: r["buffer_pool_instances"] for r in summary["tables"][USED_TITLE]}
    assert used["buffer_pool_instances=default cache=warm"] == "default -> innodb_buffer_pool_instances = 1", used


@pytest.mark.parametrize("conf,words", [
    ({"warehouses": 0}, "warehouses"),
    ({"mix": {"new_order": 50, "refund": 50}}, "unknown transaction"),
    ({"mix": {"new_order": 45, "payment": 43}}, "sum to 100"),
    ({"measure_s": 4, "interval_s": 10}, "longer than the measure window"),
    ({"connections": 0}, "connections"),
    ({"rampup_s": 880, "measure_s": 60}, "longer than a run may take"),  # the spec's timeout_s is 900
    ({"driver": "tpcc-mysql", "rampup_s": 2.5}, "whole seconds"),
])
def test_bad_input_is_refused_before_any_server_change(conf, words):
    from mysqlbench.errors import InvalidInput
    from mysqlbench.studies.steps import merged_spec, workload_of

    with pytest.raises(InvalidInput, match=words):
        workload_of(merged_spec("tpcc_bp_instances_study", {**BASE, "target_conn_id": TEST_CONN, **conf}))


def test_more_connections_than_the_server_allows_is_refused_before_loading(managed, target):
    from mysqlbench.errors import InvalidInput
    from mysqlbench.studies.steps import merged_spec, workload_of
    from mysqlbench.targets.connection import TargetConnection

    workload = workload_of(merged_spec("tpcc_bp_instances_study", {**BASE, "target_conn_id": TEST_CONN,
                                                                    "connections": 400}))
    with pytest.raises(InvalidInput, match="max_connections = 200"):
        workload._check_connections(TargetConnection.from_airflow(TEST_CONN))


def test_a_snapshot_restore_that_would_take_back_another_dataset_is_refused(on_mariadb, managed):
    """The snapshot is the whole datadir: a schema built after it would silently vanish on restore,
    so the restore refuses and says which schema and what to do."""
    from mysqlbench import ownership
    from mysqlbench.errors import MysqlbenchError
    from mysqlbench.studies.steps import merged_spec, workload_of
    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.workloads.tpcc.generate import dataset_id

    target = TargetConnection.from_airflow(TEST_CONN)
    workload = workload_of(merged_spec("tpcc_bp_instances_study", {**BASE, "target_conn_id": TEST_CONN}))
    control = workload._control(target)
    wanted = dataset_id(1, 1)
    assert control.has_snapshot(wanted)
    conn = target.connect()
    try:
        ownership.claim_schema(conn, target, "built_after_snapshot")
        ownership.set_marker(conn, "built_after_snapshot", state="verified", dataset_id="other-1")
        with pytest.raises(MysqlbenchError, match="built_after_snapshot"):
            workload._restore(target, control, wanted, holder=None)
        assert control.is_running()  # refused before anything was stopped
    finally:
        with conn.cursor() as cur:
            cur.execute("DROP SCHEMA built_after_snapshot")
        conn.close()


def test_the_seed_002_sweep_runs_pool_and_redo_points_with_the_flush_settings(bag):
    """tpcc_bp_sweep_study, shrunk: buffer pool x redo log size with the seeds' durability and
    flush settings, each read back in the point's own server snapshot, all from the same data."""
    result = run(bag, "tpcc_bp_sweep_study", target_conn_id=TEST_CONN,
                 settings={"flush_log_at_trx_commit": 2, "flush_method": "O_DIRECT"},
                 matrix={"buffer_pool_size": ["128M", "256M"], "buffer_pool_instances": [{}],
                         "redo_log_size": ["64M", "128M"]})
    assert str(result.state) == "success"
    frame = frame_of(result)
    assert len(frame) == 4 and (frame["status"] == "ok").all() and frame["checksum"].nunique() == 1
    snapshots = {r["variables_hash"]: json.loads(r["variables"]) for r in ResultsStore().rows(server_snapshots)}
    measured = [r for r in point_rows(result) if r["metric"] == "new_orders_per_min" and r["kind"] == "metric"]
    seen = {(snapshots[r["variables_hash"]]["innodb_buffer_pool_size"], snapshots[r["variables_hash"]]["innodb_log_file_size"])
            for r in measured}
    assert seen == {(str(a << 20), str(b << 20)) for a in (128, 256) for b in (64, 128)}
    assert {snapshots[r["variables_hash"]]["innodb_flush_log_at_trx_commit"] for r in measured} == {"2"}


@pytest.fixture(scope="module")
def built_peers():
    """The peers built from their checkouts (MYSQLBENCH_PEER_SOURCES, else ../shared/refs) into
    this session's work directory, as `bin/mysqlbench peer build` does."""
    from mysqlbench.workloads.tpcc import peers

    if peers.default_sources() is None:
        pytest.skip("no peer sources here (MYSQLBENCH_PEER_SOURCES or ../shared/refs)")
    return {name: peers.build(name) for name in peers.PEERS}


@pytest.mark.parametrize("driver,figure", [("tpcc-mysql", "tool_tpmC"), ("sysbench-tpcc", "tool_tps_in_window")])
def test_a_peer_drives_the_study_on_our_data_counted_from_the_database(bag, built_peers, driver, figure):
    """A spec picks tpcc-mysql or sysbench-tpcc as the driver: it runs on the verified dataset
    (checksums before, consistency after, as with ours), its output parsed into the results, and
    New-Orders per minute counted from the database as for every driver."""
    result = run(bag, "tpcc_bp_instances_study", target_conn_id=TEST_CONN, settings={"buffer_pool_size": "256M"},
                 matrix={"buffer_pool_instances": [{}]}, driver=driver, rampup_s=2, measure_s=6, interval_s=2)
    assert str(result.state) == "success"
    frame = frame_of(result)
    assert (frame["status"] == "ok").all() and (frame["oracle"] == "match").all() and (frame["primary"] > 0).all()
    metrics = {r["metric"]: r["value"] for r in point_rows(result) if r["kind"] == "metric" and r["status"] == "ok"}
    assert metrics[figure] > 0 and metrics["new_orders_committed"] > 0
    assert metrics["new_orders_per_min"] == pytest.approx(metrics["new_orders_committed"] * 60 / metrics["window_s"])
    # the window is the tool's measure phase: from its rampup's end to its last interval (tpcc-mysql)
    # or its --time (sysbench-tpcc), not its shutdown
    assert abs(metrics["window_s"] - 6) < 0.25, metrics["window_s"]
    assert metrics["driver_cpu_share"] is None or 0 < metrics["driver_cpu_share"] < 2
    if driver == "tpcc-mysql":  # its per-type counts are parsed; percentiles it does not print are absent
        assert metrics["payment_count"] > 0 and "new_order_p50_ms" not in metrics and metrics["new_order_max_ms"] > 0
        # the tool counts what it completed in its own window; the database what committed in ours
        assert metrics["driver_new_orders_per_min"] == pytest.approx(metrics["new_orders_per_min"], rel=0.25)
    series = [r for r in point_rows(result) if r["kind"] == "series"]
    assert series and all(TimeSeries.from_json(r["series"]).measured() for r in series)


def test_a_seed_config_is_every_points_base_and_the_points_knobs_override_it(bag):
    """`server_config: seed_002` (the seed's my.cnf, trimmed): the managed target restarts with it
    for every point; the point's own knobs (here the pool size) win over it."""
    result = run(bag, "tpcc_bp_instances_study", target_conn_id=TEST_CONN, server_config="seed_002",
                 settings={"buffer_pool_size": "256M", "flush_log_at_trx_commit": 2},
                 matrix={"buffer_pool_instances": [{}]})
    assert str(result.state) == "success"
    snapshots = {r["variables_hash"]: json.loads(r["variables"]) for r in ResultsStore().rows(server_snapshots)}
    (measured,) = [r for r in point_rows(result) if r["metric"] == "new_orders_per_min" and r["kind"] == "metric"]
    seen = snapshots[measured["variables_hash"]]
    assert seen["max_connections"] == "2000" and seen["innodb_io_capacity"] == "20000"
    assert seen["innodb_flush_method"] == "O_DIRECT" and seen["innodb_log_buffer_size"] == str(256 << 20)
    assert seen["innodb_flush_log_at_trx_commit"] == "2"  # the spec's knob, not the config's 1
    assert seen["innodb_buffer_pool_size"] == str(256 << 20)
