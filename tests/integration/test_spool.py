"""A point that measured but could not store keeps its measurements: they are spooled beside the
run, the task fails, and the retry stores them without measuring again."""

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
    assert len(rows) == len(spooled) and {r["try_number"] for r in rows} == {2} and not spool.exists()
    throughput = next(r for r in rows if r["metric"] == "throughput")
    assert throughput["value"] == next(s.value for s in spooled if s.metric == "throughput")
