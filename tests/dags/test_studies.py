"""The TPC-H study DAGs end to end with dag.test() at SF 0.01 on the managed MariaDB, asserting on
recorded results that only a working feature produces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mysqlbench.results.store import ResultsStore, TimeSeries, samples, server_snapshots, validations
from mysqlbench.studies.analysis import comparisons, execution_frame, findings
from mysqlbench.workloads.tpch.workload import TpchWorkload

from conftest import EXTERNAL_MARKED_CONN, TEST_CONN

PRIMARY = TpchWorkload.primary

SF = 0.01
SCHEMA = "tpch_study"
BASE = {"scale_factor": SF, "target_conn_id": TEST_CONN, "schema": SCHEMA, "seed": 11}


def tries(run_, task_id: str) -> int:
    """How many times ``task_id`` of the run was tried."""
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return session.scalar(select(TaskInstance.try_number).where(
            TaskInstance.run_id == run_.run_id, TaskInstance.dag_id == run_.dag_id, TaskInstance.task_id == task_id))


@pytest.fixture(scope="module")
def bag(airflow_db, target):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.pool import Pool

    for conn_id in ("mysqlbench_demo", TEST_CONN, EXTERNAL_MARKED_CONN):
        Pool.create_or_update_pool(f"target_{conn_id}", slots=1, description="tests", include_deferred=False)
    return DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))


def run(bag, dag_id, **conf):
    """A run on a freshly parsed DAG, as each run gets in a deployment: in one process, a DAG
    object that dag.test() ran keeps the last conf's values as its params' defaults (a previous
    test's `variables` turned up in the next run's spec)."""
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=bag.dag_folder).get_dag(dag_id)
    return dag.test(run_conf={**BASE, **conf})


def rows(run_, table=samples, **where):
    return ResultsStore().rows(table, dag_id=run_.dag_id, run_id=run_.run_id, **where)


def measured_of(run_):
    """The run's samples from its measuring tasks, every round's (a fixed count: two half rounds)."""
    return ResultsStore().measured_rows(samples, dag_id=run_.dag_id, run_id=run_.run_id)


def states(run_) -> dict[str, set[str]]:
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        tis = session.scalars(select(TaskInstance).where(TaskInstance.run_id == run_.run_id,
                                                         TaskInstance.dag_id == run_.dag_id)).all()
        out: dict[str, set[str]] = {}
        for ti in tis:
            out.setdefault(ti.task_id, set()).add(str(ti.state))
        return out


@pytest.fixture(scope="module")
def bka_run(bag):
    return run(bag, "tpch_bka_study", repetitions=2)


def test_bka_study_succeeds_and_publishes(bka_run):
    assert str(bka_run.state) == "success"
    assert states(bka_run)["publish"] == {"success"}
    assert len(states(bka_run)["measure_point"]) == 1 and rows(bka_run, validations, task_id="validate")[0]["success"]


def test_mapped_points_are_named_readably(bka_run):
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        names = set(session.scalars(select(TaskInstance.rendered_map_index).where(
            TaskInstance.run_id == bka_run.run_id, TaskInstance.task_id == "measure_point")))
    assert "bka=on join_buffer_size=6M mrr_buffer_size=6M cache=cold" in names and len(names) == 8


def test_bka_on_points_use_bka(bka_run):
    measured = measured_of(bka_run)
    for row in measured:
        meta = json.loads(row["metadata"])
        if row["metric"] == "plan":
            uses_bka = '"BKA' in json.dumps(meta["plan"])
            assert uses_bka == (meta["swept"]["bka"] is True), meta["point"]
        if row["metric"] == "Handler_mrr_init" and meta["swept"]["bka"] is True:
            assert row["value"] > 0, meta["point"]


def test_cold_reads_from_disk_and_warm_does_not(bka_run):
    measured = measured_of(bka_run)
    frame = execution_frame(measured, PRIMARY)
    cold = frame[frame["cache"] == "cold"]["physical_reads"]
    warm = frame[frame["cache"] == "warm"]["physical_reads"]
    assert len(cold) and len(warm) and cold.min() > 0 and warm.max() <= 10
    assert frame[frame["cache"] == "warm"]["warm"].all()
    evidence = [json.loads(r["metadata"])["cache_evidence"] for r in measured
                if r["metric"] == "client_seconds" and json.loads(r["metadata"])["cache"] == "cold"]
    # by default only the target's files leave the page cache, never the whole host's
    assert evidence and all(e["method"] == "posix_fadvise(DONTNEED)" and "target's datadir" in e["scope"]
                            and e["datadir_fs"]["type"] for e in evidence)


def test_server_time_and_counters_are_recorded_honestly(bka_run):
    measured = measured_of(bka_run)
    server = [r for r in measured if r["metric"] == "server_seconds"]
    assert server and all(r["status"] == "ok" and r["value"] > 0 for r in server)
    # MariaDB 10.10+ has no Innodb_rows_read: absent, never 0
    rows_read = [r for r in measured if r["metric"] == "Innodb_rows_read"]
    assert rows_read and all(r["status"] == "absent" and r["value"] is None for r in rows_read)
    os_cpu = [r for r in measured if r["metric"] == "os_cpu_user_pct"]
    assert os_cpu and all(0 <= r["value"] <= 100 and r["kind"] in ("os", "series") for r in os_cpu)
    series = [TimeSeries.from_json(r["series"]) for r in os_cpu if r["kind"] == "series"]
    assert series and all(len(s.values) >= 1 and s.interval_s == 1.0 for s in series)
    for name in ("os_disk_read_ops", "os_mem_used_bytes", "os_page_cache_bytes", "os_context_switches_per_s"):
        stored = [TimeSeries.from_json(r["series"]) for r in measured if r["metric"] == name and r["kind"] == "series"]
        assert stored and all(v is not None and v >= 0 for s in stored for v in s.values), name
    memory = [r["value"] for r in measured if r["metric"] == "os_mem_used_bytes" and r["kind"] == "os"]
    assert memory and all(v > 100 * 2**20 for v in memory)  # a level (bytes in use), not a delta


def test_point_order_seed_is_recorded_with_every_sample(bka_run):
    measured = measured_of(bka_run)
    seeds = {json.loads(r["metadata"]).get("seed") for r in measured}
    orders = {r["point"]: json.loads(r["metadata"])["order"] for r in measured}
    assert seeds == {11} and sorted(orders.values()) == list(range(8))


def test_report_is_written_with_charts_tables_and_findings(bka_run):
    from mysqlbench.studies.report import report_dir

    directory = report_dir(bka_run.dag_id, bka_run.run_id)
    html = (directory / "index.html").read_text()
    assert "INVALID" not in html and "primary_q03_bka.png" in html and "Warm vs cold" in html
    assert (directory / "primary_q03_bka.png").stat().st_size > 5000 and "TPC-H-derived" in html
    # the OS metrics of the measured windows, charted in every report (TPC-H's too), or, where every
    # window is shorter than the 1 s sampling (SF 0.01's queries usually are), the reason there is none
    charted = "os_metrics.png" in html and (directory / "os_metrics.png").stat().st_size > 20000
    assert charted or "No OS chart: every measured window was shorter than the 1 s OS sampling" in html
    assert "&lt;NA&gt;" not in html and ">None<" not in html  # the per-point table reads as words
    assert "<th>Handler_mrr_rowid_refills</th>" in html  # the MRR buffer's signal, in the counter table
    summary = json.loads((directory / "summary.json").read_text())
    assert summary["valid"] and any(s.startswith("bka on vs off, cold cache") for s in summary["findings"])


def test_the_benchmarks_pages_find_a_dags_test_run_by_the_id_airflow_gave_it(bka_run):
    """`dags test` names its run manual__<timestamp>+00:00 (':' and '+'): the pages list it with
    its validity and find its report (folder paths.run_dir_name, also kept in the store)."""
    from mysqlbench import paths
    from mysqlbench.ui.app import report_location, run_id_ok, runs_of

    assert bka_run.run_id.startswith("manual__") and ":" in bka_run.run_id and run_id_ok(bka_run.run_id)
    store = ResultsStore()
    listed = {r["run_id"]: r["validity"] for r in runs_of(store)["tpch_bka_study"]}
    assert listed[bka_run.run_id] == "valid"
    assert report_location(store, bka_run.dag_id, bka_run.run_id) == paths.run_dir_name(bka_run.run_id)
    assert store.report_file(bka_run.dag_id, paths.run_dir_name(bka_run.run_id), "index.html")


def test_report_findings_come_from_the_run(bka_run):
    """The report's findings and comparisons are the run's executions, estimated: two pairs of
    points per cache (the two buffer sizes), each with its n; at 2 repetitions no 95% interval."""
    from mysqlbench.studies.report import report_dir
    from mysqlbench.studies.spec import load_spec, spec_path

    frame = execution_frame(measured_of(bka_run), PRIMARY)
    said = comparisons(frame, PRIMARY, matrix=load_spec(spec_path("tpch_bka_study")).matrix)
    summary = json.loads((report_dir(bka_run.dag_id, bka_run.run_id) / "summary.json").read_text())
    assert summary["findings"] == findings(said)
    buffers = "join_buffer_size=6M mrr_buffer_size=6M vs the baseline join_buffer_size=256K mrr_buffer_size=256K"
    assert sorted(s.split(" (")[0] for s in summary["findings"]) == [
        "bka on vs off, cold cache", "bka on vs off, warm cache", f"{buffers}, cold cache", f"{buffers}, warm cache"]
    assert {(c["n_a"], c["n_b"], c["verdict"], c["ci_low"]) for c in summary["comparisons"]
            if c["metric"] == PRIMARY.name} == {(2, 2, "inconclusive", None)}
    assert all(isinstance(p["swept"], dict) for p in summary["points"])  # an object, not JSON text


def test_point_lineage_is_the_configuration_the_point_ran_with(bka_run, managed):
    """Each point's samples point at the server snapshot its measuring session saw (64M buffer
    pool, BKA's join_cache_level), not the base configuration restored after it."""
    store = ResultsStore()
    snapshots = {r["variables_hash"]: json.loads(r["variables"]) for r in store.rows(server_snapshots)}
    from mysqlbench.results.lineage import server_variables, variables_hash

    measured = measured_of(bka_run)
    conn = managed.admin_connect()  # after the run: the base configuration, restored
    try:
        base = server_variables(conn)
    finally:
        conn.close()
    base_hash = variables_hash(base)
    for row in measured:
        variables = snapshots[row["variables_hash"]]
        assert variables["innodb_buffer_pool_size"] == str(64 << 20), row["point"]
        assert variables["join_cache_level"] == ("6" if row["point"].startswith("bka=on") else "2"), row["point"]
    assert base_hash not in {r["variables_hash"] for r in measured}
    assert base["innodb_buffer_pool_size"] == str(256 << 20)


def test_gx_is_the_gate(bka_run, monkeypatch):
    """A broken answer makes the run INVALID through an expectation GX evaluated, with its observed
    value; with GX's verdict replaced by success, the same data is VALID (nothing else decides)."""
    from mysqlbench.studies.spec import load_spec
    from mysqlbench.studies.validation import validate_study

    spec = load_spec("tpch_bka_study", {"dataset": {"scale_factor": SF, "schema": SCHEMA}, "seed": 11,
                                        "repetitions": 2})
    workload = TpchWorkload(spec)
    frame = execution_frame(measured_of(bka_run), PRIMARY)
    good, _ = validate_study(spec, workload, frame)
    assert good.success, good.failures
    broken = frame.copy()
    first = broken.index[broken["oracle"].notna()][0]
    broken.loc[first, "oracle"] = "rows differ: unexpected [(1,)], missing [(2,)]"
    broken.loc[broken.index[-1], "checksum"] = "0000000000000000"
    bad, _ = validate_study(spec, workload, broken)
    assert not bad.success
    checks = {f["check"]: f for f in bad.failures}
    assert checks["oracle_answer"]["unexpected"] == ["rows differ: unexpected [(1,)], missing [(2,)]"]
    assert checks["same_answer_all_points"]["observed"] == 2
    # the cache thresholds (issue 25's surviving mutants): a cold execution that read nothing from
    # disk, and a warm one that read more than "about 0" pages, each fail their own check; a warm
    # one at the threshold does not
    from mysqlbench.studies.analysis import READS
    from mysqlbench.studies.validation import WARM_READS_MAX

    ok = frame["status"] == "ok"
    cold, warm = frame.index[ok & (frame["cache"] == "cold")], frame.index[ok & (frame["cache"] == "warm") & frame["warm"]]
    at_threshold = frame.copy()
    at_threshold.loc[warm[0], READS] = WARM_READS_MAX
    assert validate_study(spec, workload, at_threshold)[0].success
    for row, reads, check in ((cold[0], 0, "cold_run_reads_from_disk"),
                              (warm[0], WARM_READS_MAX + 1, "warm_run_reads_about_zero")):
        changed = frame.copy()
        changed.loc[row, READS] = reads
        result, _ = validate_study(spec, workload, changed)
        assert not result.success and [f["check"] for f in result.failures] == [check], result.failures

    import great_expectations.datasource.fluent.interfaces as gx_batch

    real = gx_batch.Batch.validate

    def always_success(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        result.success = True
        for r in result.results:
            r.success = True
        return result

    monkeypatch.setattr(gx_batch.Batch, "validate", always_success)
    overridden, _ = validate_study(spec, workload, broken)
    assert overridden.success and overridden.failures == []


def test_power_run_answers_match_the_oracle(bag):
    power = run(bag, "tpch_power")
    assert str(power.state) == "success"
    frame = execution_frame(measured_of(power), PRIMARY)
    assert sorted(frame["subject"]) == [f"q{n:02d}" for n in range(1, 23)]
    assert (frame["oracle"] == "match").all()  # the whole answer, compared in the task
    answers = [r for r in measured_of(power) if r["kind"] == "answer"]
    assert all(len(json.loads(r["metadata"])["sample"]) <= 20 for r in answers)


def test_tiny_timeout_is_recorded_as_timeout_and_fails_the_run(bag):
    timed_out = run(bag, "tpch_power", queries=["q01"], timeout_s=0.001)
    assert str(timed_out.state) == "failed"
    assert states(timed_out)["publish"] == {"failed"} and states(timed_out)["report"] == {"success"}
    client = [r for r in measured_of(timed_out) if r["metric"] == "client_seconds"]
    assert client and all(r["status"] == "timeout" and r["value"] is None for r in client)
    failures = json.loads(rows(timed_out, validations, task_id="validate")[0]["failures"])
    assert any(f["check"] == "statuses" and f["unexpected"] == ["timeout"] for f in failures)


def test_mrr_and_icp_studies_run(bag):
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    for dag_id in ("tpch_mrr_study", "tpch_icp_study"):
        result = run(bag, dag_id, repetitions=1)
        assert str(result.state) == "success", dag_id
        # one repetition on a DAG of twelve rounds: plan_round_2 finds nothing left and skips every
        # later round at once (none is planned or expanded one by one)
        with create_session() as session:
            states = dict(session.execute(select(TaskInstance.task_id, TaskInstance.state).where(
                TaskInstance.dag_id == dag_id, TaskInstance.run_id == result.run_id,
                TaskInstance.task_id.like("%_round_%"))).all())
        assert states.pop("plan_round_2") == "success", states
        assert len(states) == 21 and set(states.values()) == {"skipped"}, states


def test_cold_cache_without_restart_control_is_not_applicable(bag):
    result = run(bag, "tpch_icp_study", target_conn_id=EXTERNAL_MARKED_CONN, repetitions=1,
                 settings={}, cache=["cold", "warm"])
    assert str(result.state) == "success"
    client = [r for r in measured_of(result) if r["metric"] == "client_seconds"]
    na = [json.loads(r["metadata"]) for r in client if r["status"] == "not_applicable"]
    assert na and all(m["cache"] == "cold" and "restart control" in m["why"] for m in na)
    assert any(r["status"] == "ok" for r in client)


def server_fingerprint(conn):
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Com\\_%%' OR Variable_name IN ('Uptime', 'Connections')")
        values = {k: int(v) for k, v in cur.fetchall()}
    values.pop("Com_show_status")
    return values


BAD_INPUT = [
    ({"queries": ["q99"]}, "unknown query 'q99'"),
    ({"units": ["q03", "q03"]}, "listed twice"),
    ({"repetitons": 2}, "unknown study conf key(s) ['repetitons']"),
    ({"settings": {"join_bufer_size": "1M"}}, "unknown knob 'join_bufer_size'"),
    ({"settings": {"join_buffer_size": "1; DROP DATABASE x"}}, "is not a size"),
    ({"settings": {"join_buffer_size": "6M'"}}, "is not a size"),
    ({"repetitions": -1}, "repetitions"),
    ({"counters": ["Innodb_buffer_pool_reads; DROP"]}, "counters"),
]


@pytest.mark.parametrize("conf,message", BAD_INPUT)
def test_bad_study_input_is_refused_by_the_check_before_any_server_change(target, managed, conf, message):
    """Each bad input, through the study's first task's own check (what the DAG runs first; the
    DAG-level consequences are the next test's): a clear error, the server untouched."""
    from mysqlbench.studies.steps import check_spec

    conn = managed.admin_connect()
    try:
        before = server_fingerprint(conn)
        with pytest.raises(Exception) as refused:
            check_spec("tpch_bka_study", {**BASE, **conf})
        assert message in str(refused.value)
        after = server_fingerprint(conn)
    finally:
        conn.close()
    uptime_before, uptime_after = before.pop("Uptime"), after.pop("Uptime")
    assert after == before and uptime_after >= uptime_before


def test_a_refused_run_fails_at_its_first_task_and_touches_nothing(bag, managed, capfd):
    """A whole run whose conf check_spec refuses: the run fails there; nothing is touched, the
    teardown and the report skip (no retry, no crash on a missing spec), validate fails with the
    reason and publish never runs. The reason is what the run's Benchmark report tab says (issue
    24: Airflow's trigger form shows none), for a value beyond a bound too: the form's params state
    no bounds, so such a run starts and its check refuses it."""
    from mysqlbench.ui.app import _airflow_refusal, no_report

    conn = managed.admin_connect()
    try:
        before = server_fingerprint(conn)
        result = run(bag, "tpch_bka_study", queries=["q99"])
        ran = states(result)
        assert str(result.state) == "failed" and ran["check_spec"] == {"failed"}
        assert ran["restore_target"] == ran["report"] == {"skipped"}
        assert ran["validate"] == {"failed"} and ran["publish"] == {"upstream_failed"}
        out = capfd.readouterr().out
        assert "unknown query 'q99'" in out and "check_spec refused this run's input" in out
        assert "unknown query 'q99'" in _airflow_refusal(result.dag_id, result.run_id)
        beyond = run(bag, "tpch_bka_study", repetitions=-1)
        assert str(beyond.state) == "failed" and states(beyond)["check_spec"] == {"failed"}
        status, words = no_report(beyond.dag_id, beyond.run_id, False, "failed",
                                  _airflow_refusal(beyond.dag_id, beyond.run_id))
        assert status == 200 and "refused before anything was measured" in words
        assert "repetitions: Value error, a number of repetitions from 1 to 100, or auto; got -1" in words
        after = server_fingerprint(conn)
    finally:
        conn.close()
    uptime_before, uptime_after = before.pop("Uptime"), after.pop("Uptime")
    assert after == before and uptime_after >= uptime_before


def test_a_dataset_larger_than_the_disk_is_refused_once_with_the_reason(bag):
    """Within every bound, but more than this disk holds (SF 1000: about 1.2 TB of generated
    files): ensure_dataset refuses it before it loads anything, once (a retry would meet the same
    refusal), and the run's tab says why. On a disk that could hold it the run would really
    generate it, so there the test is skipped rather than run."""
    import shutil

    from mysqlbench import paths
    from mysqlbench.ui.app import _airflow_refusal, no_report
    from mysqlbench.workloads.tpch.build import FILE_BYTES_PER_SF

    paths.work_dir().mkdir(parents=True, exist_ok=True)
    if shutil.disk_usage(paths.work_dir()).free >= FILE_BYTES_PER_SF * 1000:
        pytest.skip("this disk could hold SF 1000's files: the refusal cannot be shown without generating them")
    too_big = run(bag, "tpch_bka_study", scale_factor=1000)
    ran = states(too_big)
    assert str(too_big.state) == "failed" and ran["check_spec"] == {"success"}, ran
    assert ran["ensure_dataset"] == {"failed"} and ran["plan_points"] == {"upstream_failed"}, ran
    assert tries(too_big, "ensure_dataset") == 1  # the spec's one retry not spent on it
    status, words = no_report(too_big.dag_id, too_big.run_id, False, "failed",
                              _airflow_refusal(too_big.dag_id, too_big.run_id))
    assert status == 200 and "GB for SF 1000's generated files" in words and "GB are free" in words, words


def test_a_setting_the_server_will_not_take_marks_points_not_applicable(bag):
    # max_sort_length tops out at 8M: the server would silently clamp 64M
    result = run(bag, "tpch_icp_study", repetitions=1, cache=["warm"], variables={"max_sort_length": "64M"})
    client = [r for r in measured_of(result) if r["metric"] == "client_seconds"]
    assert client and all(r["status"] == "not_applicable" for r in client)
    assert all("capped or out of range" in json.loads(r["metadata"])["why"] for r in client)
    assert str(result.state) == "failed"  # nothing was measured: the run is INVALID, not silently green


def test_managed_target_is_back_on_its_base_config_after_a_study(bka_run, managed):
    from mysqlbench import knobs

    conn = managed.admin_connect()
    try:  # the BKA points ran with a 64M buffer pool; the test target's base is 256M
        assert knobs.read_variable(conn, "innodb_buffer_pool_size", "global") == 256 << 20
    finally:
        conn.close()


def test_slow_log_holds_only_what_the_last_point_logged(bka_run, managed):
    conn = managed.admin_connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM mysql.slow_log")
            # every point ends with a restart back to the base config, which empties the table;
            # nothing logs between points (the global threshold stays at 10 s)
            assert cur.fetchone()[0] == 0
    finally:
        conn.close()


def test_a_second_workload_goes_through_the_same_factory_and_stores_a_time_series(bag):
    """tests/support/probe_workload.py is a driver-shaped workload (a timed window, throughput as
    the primary metric, a per-interval series with rampup) that knows nothing of TPC-H."""
    result = bag.get_dag("probe_study").test(run_conf={})
    assert str(result.state) == "success"
    measured = measured_of(result)
    throughput = [r for r in measured if r["metric"] == "throughput"]
    assert len(throughput) == 4 and all(r["kind"] == "series" for r in throughput)
    for row in throughput:
        series = TimeSeries.from_json(row["series"])
        assert series.interval_s == 0.5 and series.rampup_end_s == 0.5 and len(series.values) == 6
        assert row["value"] == pytest.approx(sum(series.measured()) / len(series.measured()))
        assert row["value"] > 10  # point selects per second, really executed
    from mysqlbench.studies.report import report_dir

    directory = report_dir(result.dag_id, result.run_id)
    assert (directory / "series_throughput.png").exists() and "test-only probe workload" in \
        (directory / "index.html").read_text()


def test_a_dataset_that_cannot_be_made_is_judged_invalid_not_a_crash(bag, admin):
    """ensure_dataset fails (the schema exists and is not ours, so nothing is touched): the points
    never run, restore_target still runs, validate records GX's INVALID verdict over nothing
    measured instead of crashing on the missing dataset, the report says so, publish fails."""
    from airflow.dag_processing.dagbag import DagBag

    with admin.cursor() as cur:
        cur.execute("CREATE SCHEMA IF NOT EXISTS someone_elses")
        cur.execute("CREATE TABLE IF NOT EXISTS someone_elses.t (id INT PRIMARY KEY)")
    try:
        result = DagBag(dag_folder=bag.dag_folder).get_dag("probe_study").test(run_conf={"schema": "someone_elses"})
        ran = states(result)
        assert str(result.state) == "failed" and ran["ensure_dataset"] == {"failed"}
        assert ran["restore_target"] == ran["validate"] == ran["report"] == {"success"}
        assert ran["publish"] == {"failed"} and not measured_of(result)
        verdict = rows(result, validations, task_id="validate")
        assert verdict and not any(v["success"] for v in verdict)
        with admin.cursor() as cur:
            cur.execute("SHOW TABLES FROM someone_elses")
            assert [r[0] for r in cur.fetchall()] == ["t"]  # refused, not claimed
    finally:
        with admin.cursor() as cur:
            cur.execute("DROP SCHEMA someone_elses")


def test_the_study_engine_never_imports_a_workload():
    import ast

    studies = Path(__file__).resolve().parents[2] / "plugins" / "mysqlbench" / "studies"
    for path in studies.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            # the interface a workload implements (base) and the dataset lifecycle it declares to
            assert not any(n.startswith("mysqlbench.workloads.")
                           and n not in ("mysqlbench.workloads.base", "mysqlbench.workloads.lifecycle")
                           for n in names), f"{path.name} imports {names}"


def test_a_broken_spec_hides_no_other_study(tmp_path, monkeypatch, airflow_db):
    import os
    import subprocess

    from airflow.dag_processing.dagbag import DagBag

    broken = tmp_path / "broken_study.yaml"
    broken.write_text("study: broken_study\ndataset: {scale_factor: 0.01}\ntarget: mysqlbench_test\n"
                      "queries: [q03]\nmatrix:\n  bka: [off, maybe]\n")
    monkeypatch.setenv("MYSQLBENCH_STUDY_DIRS", f"{tmp_path}:{Path(__file__).resolve().parents[1] / 'support' / 'studies'}")
    bag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))
    assert {"tpch_bka_study", "tpch_power", "probe_study", "tpch_load"} <= set(bag.dag_ids)
    (error,) = [e for f, e in bag.import_errors.items() if "study_spec_errors" in f]
    assert f"{broken}:5: matrix: Value error, bka: 'maybe' is not on/off" in error
    lint = subprocess.run([str(Path(__file__).resolve().parents[2] / "bin" / "mysqlbench"), "lint"],
                          capture_output=True, text=True, env={**os.environ})
    assert lint.returncode == 1 and f"{broken}:5: matrix: Value error, bka: 'maybe' is not on/off" in lint.stdout


def test_a_connection_claiming_control_managed_for_another_server_gets_nothing_destructive(bag, managed, session_dir):
    """A second, unmarked server reached by a connection whose extras say it is the session's
    managed instance: the claim is not proven (that server reports another datadir and port), so
    the study is refused before anything is sent, and no restart reaches our instance."""
    import os
    import socket

    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    other = ManagedServer(ManagedSpec(name="other", conn_id="unused", port=port), root=session_dir / "work" / "other")
    other.start()
    try:
        password = other.ensure_benchmark_user()
        claim = {"conn_type": "mysql", "host": "127.0.0.1", "port": port, "login": "mysqlbench", "password": password,
                 "extra": {"control": "managed", "managed_target": managed.spec.name}}
        os.environ["AIRFLOW_CONN_MYSQLBENCH_CLAIMS_MANAGED"] = json.dumps(claim)
        target = TargetConnection.from_airflow("mysqlbench_claims_managed")
        assert not target.managed_proven and not target.benchmark_target
        assert TargetConnection.from_airflow(TEST_CONN).managed_proven  # the real one proves itself
        from mysqlbench.results.lineage import server_variables, stable_variables

        conn = other.admin_connect()
        destructive = ("Com_create_db", "Com_drop_db", "Com_create_table", "Com_drop_table", "Com_alter_table",
                       "Com_insert", "Com_load", "Com_truncate", "Com_kill", "Com_shutdown", "Com_delete")
        before = {k: v for k, v in server_fingerprint(conn).items() if k in destructive}
        variables = stable_variables(server_variables(conn))
        uptime = server_fingerprint(conn)["Uptime"]
        our_pid = managed.pid()
        result = run(bag, "tpch_icp_study", target_conn_id="mysqlbench_claims_managed", repetitions=1)
        assert str(result.state) == "failed" and states(result)["check_spec"] == {"failed"}
        # reading @@datadir to test the claim is all that reached it: no change, no restart
        assert {k: v for k, v in server_fingerprint(conn).items() if k in destructive} == before
        assert stable_variables(server_variables(conn)) == variables and server_fingerprint(conn)["Uptime"] >= uptime
        conn.close()
        assert managed.pid() == our_pid  # and our instance was not restarted for it
    finally:
        os.environ.pop("AIRFLOW_CONN_MYSQLBENCH_CLAIMS_MANAGED", None)
        other.stop()


def test_counters_without_the_defaults_still_report(bag):
    """Issue 7 #9: a study that asks for other counters than the seed's (no Handler_read_*)
    validates and reports on what it has; physical reads are counted whatever the spec lists
    (the cold and warm checks and the warm-up rest on them)."""
    result = run(bag, "tpch_icp_study", counters=["Select_scan", "Innodb_rows_read"], repetitions=1,
                 cache=["warm"])
    assert str(result.state) == "success", states(result)
    from mysqlbench.studies.report import report_dir

    frame = execution_frame(measured_of(result), PRIMARY)
    assert "Select_scan" in frame.columns and frame["Innodb_rows_read"].isna().all()  # absent on 10.11, not 0
    assert "Innodb_pages_read" not in frame.columns and (frame["physical_reads"] >= 0).all()
    directory = report_dir(result.dag_id, result.run_id)
    html = (directory / "index.html").read_text()
    assert "Select_scan" in html and "Innodb_rows_read" in html and "absent" in html and "INVALID" not in html
    assert json.loads((directory / "summary.json").read_text())["valid"]
