"""The TPC-H study DAGs end to end with dag.test() at SF 0.01 on the managed MariaDB, asserting on
recorded results that only a working feature produces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import EXTERNAL_MARKED_CONN, TEST_CONN
from mysqlbench.results.store import ResultsStore, samples, validations
from mysqlbench.studies.analysis import executions, findings, point_summaries

SF = 0.01
SCHEMA = "tpch_study"
BASE = {"scale_factor": SF, "target_conn_id": TEST_CONN, "schema": SCHEMA, "seed": 11}


@pytest.fixture(scope="module")
def bag(airflow_db, target):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.pool import Pool

    for conn_id in ("mysqlbench_demo", TEST_CONN):
        Pool.create_or_update_pool(f"target_{conn_id}", slots=1, description="tests", include_deferred=False)
    return DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))


def run(bag, dag_id, **conf):
    return bag.get_dag(dag_id).test(run_conf={**BASE, **conf})


def rows(run_, table=samples, **where):
    return ResultsStore().rows(table, dag_id=run_.dag_id, run_id=run_.run_id, **where)


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
    measured = rows(bka_run, task_id="measure_point")
    for row in measured:
        meta = json.loads(row["metadata"])
        if row["metric"] == "plan":
            uses_bka = '"BKA' in json.dumps(meta["plan"])
            assert uses_bka == (meta["swept"]["bka"] is True), meta["point"]
        if row["metric"] == "Handler_mrr_init" and meta["swept"]["bka"] is True:
            assert row["value"] > 0, meta["point"]


def test_cold_reads_from_disk_and_warm_does_not(bka_run):
    execs = executions(rows(bka_run, task_id="measure_point"))
    cold = [e["counters"]["Innodb_buffer_pool_reads"] for e in execs if e["cache"] == "cold"]
    warm = [e["counters"]["Innodb_buffer_pool_reads"] for e in execs if e["cache"] == "warm"]
    assert cold and warm and min(cold) > 0 and max(warm) <= 10
    assert all(e["cache_evidence"]["warm"] is True for e in execs if e["cache"] == "warm")
    assert all(e["cache_evidence"]["method"] in ("drop_caches", "posix_fadvise(DONTNEED)")
               and e["cache_evidence"]["datadir_fs"]["type"] for e in execs if e["cache"] == "cold")


def test_server_time_and_counters_are_recorded_honestly(bka_run):
    measured = rows(bka_run, task_id="measure_point")
    server = [r for r in measured if r["metric"] == "server_seconds"]
    assert server and all(r["status"] == "ok" and r["value"] > 0 for r in server)
    # MariaDB 10.10+ has no Innodb_rows_read: absent, never 0
    rows_read = [r for r in measured if r["metric"] == "Innodb_rows_read"]
    assert rows_read and all(r["status"] == "absent" and r["value"] is None for r in rows_read)
    os_cpu = [r for r in measured if r["metric"] == "os_cpu_user_pct"]
    assert os_cpu and all(0 <= r["value"] <= 100 for r in os_cpu)


def test_point_order_seed_is_recorded_with_every_sample(bka_run):
    measured = rows(bka_run, task_id="measure_point")
    seeds = {json.loads(r["metadata"]).get("seed") for r in measured}
    orders = {json.loads(r["metadata"])["point"]: json.loads(r["metadata"])["order"] for r in measured}
    assert seeds == {11} and sorted(orders.values()) == list(range(8))


def test_report_is_written_with_charts_tables_and_findings(bka_run):
    from mysqlbench.studies.report import report_dir

    directory = report_dir(bka_run.dag_id, bka_run.run_id)
    html = (directory / "index.html").read_text()
    assert "INVALID" not in html and "time_q03_bka.png" in html and "Warm vs cold" in html
    assert (directory / "time_q03_bka.png").stat().st_size > 5000
    summary = json.loads((directory / "summary.json").read_text())
    assert summary["valid"] and any(s.startswith("bka on vs off, cold cache") for s in summary["findings"])


def test_report_findings_come_from_the_run(bka_run):
    summaries = point_summaries(executions(rows(bka_run, task_id="measure_point")))
    said = findings(summaries)
    assert [s.split(" (")[0] for s in said] == ["bka on vs off, cold cache", "bka on vs off, warm cache"]


def test_oracle_check_catches_an_altered_row(bka_run):
    from mysqlbench.studies.spec import load_spec
    from mysqlbench.studies.validation import make_oracle, validate_study

    spec = load_spec("tpch_bka_study", {"dataset": {"scale_factor": SF, "schema": SCHEMA}})
    execs = executions(rows(bka_run, task_id="measure_point"))
    oracle = make_oracle(spec)
    good, _ = validate_study(spec, execs, oracle)
    assert good.success
    victim = next(e for e in execs if e.get("answer"))
    victim["answer"][0][1] = victim["answer"][0][1] + 1.0  # revenue of the first row
    bad, _ = validate_study(spec, execs, oracle)
    assert not bad.success and any(f["check"] == "oracle_answer" for f in bad.failures)


def test_power_run_answers_match_the_oracle(bag):
    power = run(bag, "tpch_power")
    assert str(power.state) == "success"
    checks = json.loads(rows(power, validations, task_id="validate")[0]["statistics"])
    assert checks["checks"] >= 22
    execs = executions(rows(power, task_id="measure_point"))
    assert sorted({e["query"] for e in execs}) == [f"q{n:02d}" for n in range(1, 23)]


def test_tiny_timeout_is_recorded_as_timeout_and_fails_the_run(bag):
    timed_out = run(bag, "tpch_power", queries=["q01"], timeout_s=0.001)
    assert str(timed_out.state) == "failed"
    assert states(timed_out)["publish"] == {"failed"} and states(timed_out)["report"] == {"success"}
    client = [r for r in rows(timed_out, task_id="measure_point") if r["metric"] == "client_seconds"]
    assert client and all(r["status"] == "timeout" and r["value"] is None for r in client)
    failures = json.loads(rows(timed_out, validations, task_id="validate")[0]["failures"])
    assert any(f["check"] == "timeouts" for f in failures)


def test_mrr_and_icp_studies_run(bag):
    for dag_id in ("tpch_mrr_study", "tpch_icp_study"):
        result = run(bag, dag_id, repetitions=1)
        assert str(result.state) == "success", dag_id


def test_cold_cache_without_restart_control_is_not_applicable(bag):
    result = run(bag, "tpch_icp_study", target_conn_id=EXTERNAL_MARKED_CONN, repetitions=1,
                 settings={}, cache=["cold", "warm"])
    assert str(result.state) == "success"
    client = [r for r in rows(result, task_id="measure_point") if r["metric"] == "client_seconds"]
    na = [json.loads(r["metadata"]) for r in client if r["status"] == "not_applicable"]
    assert na and all(m["cache"] == "cold" and "restart control" in m["why"] for m in na)
    assert any(r["status"] == "ok" for r in client)


def server_fingerprint(conn):
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Com\\_%%' OR Variable_name IN ('Uptime', 'Connections')")
        values = {k: int(v) for k, v in cur.fetchall()}
    values.pop("Com_show_status")
    return values


@pytest.mark.parametrize("conf,message", [
    ({"queries": ["q99"]}, "unknown query 'q99'"),
    ({"settings": {"join_bufer_size": "1M"}}, "unknown knob 'join_bufer_size'"),
    ({"settings": {"join_buffer_size": "1; DROP DATABASE x"}}, "is not a size"),
    ({"settings": {"join_buffer_size": "6M'"}}, "is not a size"),
    ({"repetitions": -1}, "repetitions"),
    ({"counters": ["Innodb_buffer_pool_reads; DROP"]}, "counters"),
])
def test_bad_study_input_fails_before_any_server_change(bag, managed, conf, message, capfd):
    conn = managed.admin_connect()
    try:
        before = server_fingerprint(conn)
        try:
            result = run(bag, "tpch_bka_study", **conf)
        except Exception as exc:  # rejected by the trigger form's schema
            assert message in str(exc)
        else:
            assert str(result.state) == "failed" and states(result)["check_spec"] == {"failed"}
            assert message in capfd.readouterr().out
        after = server_fingerprint(conn)
    finally:
        conn.close()
    uptime_before, uptime_after = before.pop("Uptime"), after.pop("Uptime")
    assert after == before and uptime_after >= uptime_before


def test_a_setting_the_server_will_not_take_marks_points_not_applicable(bag):
    # max_sort_length tops out at 8M: the server would silently clamp 64M
    result = run(bag, "tpch_icp_study", repetitions=1, cache=["warm"], variables={"max_sort_length": "64M"})
    client = [r for r in rows(result, task_id="measure_point") if r["metric"] == "client_seconds"]
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
