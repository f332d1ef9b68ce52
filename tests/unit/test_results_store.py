"""Lineage hashing and the results store's idempotent, per-task writes (on a real SQLite file)."""

from types import SimpleNamespace

import pytest

from mysqlbench.results.lineage import Lineage, filesystem_of, host_facts, stable_variables, variables_hash
from mysqlbench.results.store import ResultsStore, Sample, Validation, samples, server_snapshots, validations

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


def lineage(task_id="load", map_index=-1, try_number=1):
    ti = SimpleNamespace(dag_id="tpch_load", run_id="manual__1", task_id=task_id, map_index=map_index,
                         try_number=try_number)
    return Lineage.from_context({"ti": ti}, study="tpch_load", spec={"scale_factor": 0.01},
                                server_flavor="mariadb", server_version="10.11.19", variables_hash="v",
                                host_hash="h", dataset_id="tpch-sf0.01-x")


@pytest.fixture()
def store(tmp_path):
    return ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")


def test_retry_replaces_its_own_rows_and_nothing_else(store):
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


def test_store_has_a_schema_version(store):
    import sqlalchemy as sa

    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT version FROM schema_version")).scalar() == 1
