"""Lineage hashing and the results store's idempotent, per-task writes (on a real SQLite file)."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from mysqlbench.results.lineage import Lineage, filesystem_of, host_facts, stable_variables, variables_hash
from mysqlbench.results.store import (
    ResultsStore,
    Sample,
    TimeSeries,
    Validation,
    samples,
    server_snapshots,
    validations,
)

VARIABLES = {"innodb_buffer_pool_size": "268435456", "join_buffer_size": "262144", "timestamp": "1764680000.1",
             "port": "3327", "datadir": "/tmp/a/data/", "socket": "/tmp/a/mysqld.sock", "gtid_binlog_pos": "0-1-5",
             "hostname": "box", "version": "10.11.19-MariaDB"}


def test_variables_hash_ignores_volatile_and_path_values():
    moved = {**VARIABLES, "timestamp": "1764689999.9", "port": "3317", "datadir": "/elsewhere/data/",
             "socket": "/x.sock", "gtid_binlog_pos": "0-1-99", "hostname": "other"}
    assert variables_hash(moved) == variables_hash(VARIABLES)
    assert set(stable_variables(VARIABLES)) == {"innodb_buffer_pool_size", "join_buffer_size", "version"}


def test_variables_hash_sees_configuration_changes():
    assert variables_hash({**VARIABLES, "innodb_buffer_pool_size": "536870912"}) != variables_hash(VARIABLES)


def test_host_facts_name_the_datadir_file_system(tmp_path):
    facts = host_facts(tmp_path)
    assert facts["cpu_count"] >= 1 and facts["mem_total_bytes"] > 0 and facts["kernel"]
    assert facts["datadir_fs"] == filesystem_of(tmp_path) and facts["datadir_fs"]["type"]
    assert host_facts(None)["datadir_fs"] is None


def test_host_facts_name_disks_schedulers_cores_and_swap(tmp_path):
    import os
    from pathlib import Path

    from mysqlbench.results.lineage import host_state, stable_hash

    facts = host_facts(tmp_path)
    assert 1 <= facts["cpu_cores"] <= facts["cpu_count"]
    assert facts["swap_total_bytes"] is not None and facts["swap_total_bytes"] >= 0
    # every whole disk /sys/block lists (no loop or ram devices), with the scheduler the kernel marks active
    names = sorted(n for n in os.listdir("/sys/block") if not n.startswith(("loop", "ram", "zram")))
    assert [d["name"] for d in facts["disks"]] == names
    for disk in facts["disks"]:
        text = (Path("/sys/block") / disk["name"] / "queue" / "scheduler").read_text()
        assert f"[{disk['scheduler']}]" in text and disk["size_bytes"] > 0
    assert facts["datadir_disk"] is None or facts["datadir_disk"]["name"] in names  # None: not a block device
    # the governor is read where the kernel has one; where it has not, absent with the reason
    assert facts["cpu_governor"] or "cpufreq" in facts["cpu_governor_why"]
    # free space changes from run to run: kept per point (host_state), never in the hashed facts
    assert "free" not in json.dumps(facts)
    before = stable_hash(facts)
    (tmp_path / "blob").write_bytes(os.urandom(1 << 20))
    assert stable_hash(host_facts(tmp_path)) == before
    state = host_state(tmp_path)
    assert state["free_bytes"][str(tmp_path)] > 0 and state["mem_available_bytes"] > 0


def lineage(task_id="load", map_index=-1, try_number=1):
    ti = SimpleNamespace(dag_id="tpch_load", run_id="manual__1", task_id=task_id, map_index=map_index,
                         try_number=try_number)
    return Lineage.from_context({"ti": ti}, study="tpch_load", spec={"scale_factor": 0.01},
                                server_flavor="mariadb", server_version="10.11.19", variables_hash="v",
                                host_hash="h", dataset_id="tpch-sf0.01-x")


@pytest.fixture()
def store(tmp_path):
    return ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")


def test_a_retry_is_read_in_place_of_its_earlier_tries_which_stay_on_record(store):
    store.record(lineage("load"), [Sample("load_seconds", 3.0, "s"), Sample("rows", 10, "rows")])
    store.record(lineage("constraints"), [Sample("constraint_seconds", 1.0, "s")])
    store.record(lineage("point", map_index=0), [Sample("q", 1.0, "s")])
    store.record(lineage("point", map_index=1), [Sample("q", 2.0, "s")])
    # the retry of load (try 2) and of point 1 replace exactly their own earlier rows
    store.record(lineage("load", try_number=2), [Sample("load_seconds", 2.5, "s")],
                 [Validation("tpch_load", True, {"checks": 1}, [])])
    store.record(lineage("point", map_index=1, try_number=2), [Sample("q", 2.2, "s")])
    rows = store.rows(samples)
    assert sorted((r["task_id"], r["map_index"], r["metric"], r["value"], r["try_number"]) for r in rows) == [
        ("constraints", -1, "constraint_seconds", 1.0, 1),
        ("load", -1, "load_seconds", 2.5, 2),
        ("point", 0, "q", 1.0, 1),
        ("point", 1, "q", 2.2, 2),
    ]
    assert [r["suite"] for r in store.rows(validations)] == ["tpch_load"]
    # every try's rows are kept (issue 27: a killed try's executions stay on record, by try number)
    every = store.rows(samples, every_try=True)
    assert sorted((r["task_id"], r["map_index"], r["metric"], r["value"], r["try_number"]) for r in every) == [
        ("constraints", -1, "constraint_seconds", 1.0, 1),
        ("load", -1, "load_seconds", 2.5, 2),
        ("load", -1, "load_seconds", 3.0, 1),
        ("load", -1, "rows", 10.0, 1),
        ("point", 0, "q", 1.0, 1),
        ("point", 1, "q", 2.0, 1),
        ("point", 1, "q", 2.2, 2),
    ]
    # and a try that records again replaces its own rows only
    store.record(lineage("point", map_index=1, try_number=2), [Sample("q", 2.3, "s")])
    assert [(r["value"], r["try_number"]) for r in store.rows(samples, every_try=True, task_id="point", map_index=1)] \
        == [(2.0, 1), (2.3, 2)]


def test_every_row_carries_lineage(store):
    store.record(lineage(), [Sample("load_seconds", 3.0, "s", metadata={"table": "lineitem"})])
    row = store.rows(samples)[0]
    for column in ("study", "dag_id", "run_id", "task_id", "spec_hash", "package_version", "server_flavor",
                   "server_version", "variables_hash", "host_hash", "dataset_id", "recorded_at"):
        assert row[column], column
    assert row["unit"] == "s" and row["status"] == "ok"


def test_absent_counters_are_stored_as_absent_not_zero(store):
    store.record(lineage(), [Sample("Innodb_rows_read", None, "rows", status="absent")])
    row = store.rows(samples)[0]
    assert row["value"] is None and row["status"] == "absent"


def test_server_snapshot_is_kept_once(store):
    first = store.keep_server_snapshot("mariadb", "10.11.19", VARIABLES)
    again = store.keep_server_snapshot("mariadb", "10.11.19", {**VARIABLES, "timestamp": "1"})
    assert first == again == variables_hash(VARIABLES)
    assert len(store.rows(server_snapshots)) == 1


def test_store_is_at_the_newest_migration(store):
    import sqlalchemy as sa
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from mysqlbench.results.store import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with store.engine.connect() as conn:
        version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    assert version == ScriptDirectory.from_config(config).get_current_head() == "0005"


def test_a_store_written_by_the_first_release_upgrades_with_its_rows_intact(tmp_path):
    """tests/data/results_store_v1.sql is a dump of a store the first release (before Alembic)
    wrote: it has no alembic_version. Opening it stamps it as the baseline and upgrades it."""
    import sqlite3

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript((Path(__file__).parents[1] / "data" / "results_store_v1.sql").read_text())
    store = ResultsStore(f"sqlite:///{path}")
    rows = {r["metric"]: r for r in store.rows(samples)}
    assert set(rows) == {"client_seconds", "Innodb_buffer_pool_reads", "Innodb_rows_read", "os_cpu_user_pct",
                         "noise_flags"}
    # the old rows keep their values and gain their execution and kind from their metadata
    client = rows["client_seconds"]
    assert client["value"] == 0.1234 and client["kind"] == "metric" and client["subject"] == "q03_bka"
    assert client["point"].startswith("bka=on") and client["repetition"] == 0 and client["map_index"] == 3
    assert rows["Innodb_buffer_pool_reads"]["kind"] == "counter" and rows["Innodb_buffer_pool_reads"]["value"] == 412
    assert rows["Innodb_rows_read"]["status"] == "absent" and rows["Innodb_rows_read"]["value"] is None
    assert rows["os_cpu_user_pct"]["kind"] == "os" and rows["noise_flags"]["kind"] == "run"
    assert [v["success"] for v in store.rows(validations)] == [True]
    assert len(store.rows(server_snapshots)) == 1
    # and it takes new rows with the new columns
    store.record(lineage("point", map_index=9), [Sample("q", 1.0, "s", kind="metric", point="p", subject="q01",
                                                        repetition=0)])
    assert any(r["map_index"] == 9 and r["subject"] == "q01" for r in store.rows(samples))
    # opening it again is a no-op
    assert len(ResultsStore(f"sqlite:///{path}").rows(samples)) == 6


def test_execution_samples_must_say_their_execution():
    with pytest.raises(ValueError, match="needs its execution"):
        Sample("client_seconds", 1.0, "s", kind="metric")
    with pytest.raises(ValueError, match="carries a series"):
        Sample("throughput", 1.0, "ops/s", kind="series", point="p", subject="w")
    with pytest.raises(ValueError):
        Sample("x", 1.0, "s", status="fine")


def test_a_time_series_round_trips_and_summarises_after_rampup(store):
    series = TimeSeries([1.0, 2.0, 3.0, 4.0], [10.0, 50.0, 52.0, None], 1.0, rampup_end_s=2.0)
    # offsets are where intervals end: 1-2 s is still rampup, 2-3 s is measured, 3-4 s had no reading
    assert series.measured() == [52.0]
    store.record(lineage("point", map_index=0), [Sample("throughput", 51.0, "ops/s", kind="series", point="p",
                                                        subject="w", repetition=0, series=series)])
    row = store.rows(samples)[0]
    assert TimeSeries.from_json(row["series"]) == series and row["kind"] == "series"


def test_non_finite_values_are_refused(store):
    with pytest.raises(ValueError, match="non-finite"):
        store.record(lineage(), [Sample("load_seconds", float("nan"), "s")])


def test_a_report_folder_is_kept_whole_and_replaced_by_a_retry(tmp_path):
    """The report's files go to the store (the UI reads them there, from another machine than the
    worker); a retry of the report task replaces the folder, leaving no file of the earlier try."""
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.db'}")
    folder = tmp_path / "reports" / "tpch_power" / "run_1"
    folder.mkdir(parents=True)
    (folder / "index.html").write_text("<h1>first</h1>")
    (folder / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    assert store.keep_report("tpch_power", folder) == 2
    assert store.report_file("tpch_power", "run_1", "chart.png") == b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    (folder / "chart.png").unlink()
    (folder / "index.html").write_text("<h1>retry</h1>")
    (folder / "trend.json").write_text("{}")
    assert store.keep_report("tpch_power", folder) == 2
    assert store.report_file("tpch_power", "run_1", "index.html") == b"<h1>retry</h1>"
    assert store.report_file("tpch_power", "run_1", "chart.png") is None
    assert store.report_file("other_dag", "run_1", "index.html") is None
    assert [r["run"] for r in store.reports_with("trend.json")] == ["run_1"]


def test_a_run_whose_retry_validated_is_valid_on_every_page(store):
    """A validate task that failed on its first try and passed on its second: the run is valid
    on the Benchmarks index and in the run summary, though both tries stay in the store."""
    from mysqlbench.ui.app import runs_of

    store.record(lineage("measure_point", map_index=0), [Sample("q", 1.0, "s")])
    store.record(lineage("validate"), [], [Validation("study", False, {"checks": 1}, ["x"])])
    store.record(lineage("validate", try_number=2), [], [Validation("study", True, {"checks": 1}, [])])
    [run] = runs_of(store)["tpch_load"]
    assert run["run_id"] == "manual__1" and run["validity"] == "valid", run
    assert [r["success"] for r in store.rows(validations, every_try=True)] == [False, True]
