"""A point that measured but could not store keeps its measurements: they are spooled beside the
run, the task fails, and the retry stores them without measuring again; with the retries spent, the
study's teardown stores them, or `bin/mysqlbench spool store` does. Rows stored from a spool carry
the try that measured them."""

from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from mysqlbench.recording import TaskRecorder
from mysqlbench.results.spool import Spool
from mysqlbench.results.store import ResultsStore, samples
from mysqlbench.studies import steps
from mysqlbench.studies.spec import load_spec
from mysqlbench.targets.connection import TargetConnection

from conftest import TEST_CONN


def _probe(tmp_path):
    spec = load_spec("probe_study", {"target": TEST_CONN, "workload_params": {"window_s": 1, "interval_s": 0.5,
                                                                              "rampup_s": 0}, "repetitions": 1})
    data = spec.model_dump(by_alias=True, mode="json")
    steps.workload_of(spec).ensure_dataset(TargetConnection.from_airflow(TEST_CONN), None)
    return spec, data


def _measured_unstored(data, point, run_id, tmp_path) -> Spool:
    """Try 1 of a point measures, and the store refuses its rows: they are spooled."""
    unwritable = ResultsStore(f"sqlite:///{tmp_path / 'broken.db'}")
    unwritable.engine = sa.create_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")  # cannot be opened
    ti = SimpleNamespace(dag_id="probe_study", run_id=run_id, task_id="measure_point", map_index=0, try_number=1)
    with pytest.raises(sa.exc.OperationalError):
        steps.measure_point(data, point, TaskRecorder({"ti": ti}, study="probe_study", spec=data, store=unwritable),
                            "probe-500")
    spool = Spool("probe_study", run_id, "measure_point", 0)
    assert spool.exists()
    return spool


def test_spooled_samples_are_stored_by_the_teardown_or_the_command_once_retries_are_spent(target, tmp_path, capsys):
    """Issue 27: once a point's retries were spent with the store still refusing, its spooled
    samples stayed on disk and nothing stored them."""
    import json

    from mysqlbench import cli

    spec, data = _probe(tmp_path)
    point = spec.points()[0]
    shared = ResultsStore.from_airflow()  # the store the teardown and the command write
    spent = _measured_unstored(data, point, "spool_retries_spent", tmp_path)
    out = steps.restore_target(data, "probe_study", "spool_retries_spent")
    assert [s["stored"] for s in out["stored_from_spool"]] and not spent.exists()
    rows = shared.rows(samples, dag_id="probe_study", run_id="spool_retries_spent")
    assert rows and {r["try_number"] for r in rows} == {1} and rows[0]["host_hash"] and rows[0]["variables_hash"]

    left = _measured_unstored(data, point, "spool_by_command", tmp_path)
    capsys.readouterr()
    assert cli.main(["spool", "list"]) == 0
    listed = json.loads(capsys.readouterr().out)["spooled"]
    assert [(s["run_id"], s["try_number"]) for s in listed] == [("spool_by_command", 1)]
    assert cli.main(["spool", "store"]) == 0 and not left.exists()
    assert shared.rows(samples, dag_id="probe_study", run_id="spool_by_command")


def test_measurements_survive_an_unwritable_store_and_the_retry_stores_them(target, tmp_path):
    spec = load_spec("probe_study", {"target": TEST_CONN, "workload_params": {"window_s": 1, "interval_s": 0.5,
                                                                              "rampup_s": 0}, "repetitions": 1})
    data = spec.model_dump(by_alias=True, mode="json")
    steps.workload_of(spec).ensure_dataset(TargetConnection.from_airflow(TEST_CONN), None)
    point = spec.points()[0]
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")

    def recorder(try_number):
        ti = SimpleNamespace(dag_id="probe_study", run_id="spool_test", task_id="measure_point", map_index=0,
                             try_number=try_number)
        return TaskRecorder({"ti": ti}, study="probe_study", spec=data, store=store)

    working = store.engine
    store.engine = sa.create_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")  # cannot be opened
    with pytest.raises(sa.exc.OperationalError):
        steps.measure_point(data, point, recorder(1), "probe-500")
    spool = Spool("probe_study", "spool_test", "measure_point", 0)
    assert spool.exists()
    spooled, snapshot = spool.read()
    assert snapshot is not None and any(s.metric == "throughput" and s.series is not None for s in spooled)

    store.engine = working
    measured = []
    out = steps.measure_point(data, point, recorder(2), "probe-500", on_start=measured.append)
    assert out["from_spool"] and measured == []  # stored what try 1 measured; nothing measured again
    rows = store.rows(samples, run_id="spool_test")
    assert len(rows) == len(spooled) and {r["try_number"] for r in rows} == {1} and not spool.exists()
    throughput = next(r for r in rows if r["metric"] == "throughput")
    assert throughput["value"] == next(s.value for s in spooled if s.metric == "throughput")
