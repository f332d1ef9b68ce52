"""``repetitions: auto`` end to end: tests/support/studies/probe_auto_study.yaml (the probe
workload's point selects, join_buffer_size 1M against the 256K baseline, 6 to 8 repetitions) run
with dag.test() on the managed MariaDB. Whichever way the measured noise falls, what ran must be
what the stopping rule says for the data measured: the two half rounds in opposite orders, then
round 3 only if the comparison over the first six pairs was not decided; the report's comparison
is paired, with its n and why it stopped."""

from __future__ import annotations

import json
from pathlib import Path

from mysqlbench.results.store import ResultsStore, samples, validations
from mysqlbench.studies.analysis import execution_frame
from mysqlbench.studies.sequential import key, state, study_comparisons
from mysqlbench.studies.spec import load_spec

from conftest import TEST_CONN


def test_auto_measures_in_alternating_rounds_until_decided(airflow_db, target):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.pool import Pool

    from mysqlbench.studies.report import report_dir

    from probe_workload import ProbeWorkload

    Pool.create_or_update_pool(f"target_{TEST_CONN}", slots=1, description="tests", include_deferred=False)
    dag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags")).get_dag("probe_auto_study")
    assert {"plan_round_2", "measure_round_2", "plan_round_3", "measure_round_3"} <= set(dag.task_dict)
    result = dag.test(run_conf={})  # the id Airflow generates for it
    assert str(result.state) == "success"
    store = ResultsStore()
    measured = store.measured_rows(samples, dag_id=result.dag_id, run_id=result.run_id)
    primary = [r for r in measured if r["metric"] == "statements_per_s"]
    by_task: dict[str, set[tuple[str, int]]] = {}
    for r in primary:
        by_task.setdefault(r["task_id"], set()).add((r["point"], r["repetition"]))
    points = sorted({r["point"] for r in primary})
    assert len(points) == 2
    assert by_task["measure_point"] == {(p, i) for p in points for i in range(3)}
    assert by_task["measure_round_2"] == {(p, i) for p in points for i in range(3, 6)}

    # the second half round plans the points in the opposite order to the first: its map indexes,
    # which the scheduler queues a target's points by, one at a time (dag.test runs them in any order)
    planned = _planned_order(result)
    assert planned["measure_round_2"] == list(reversed(planned["measure_point"])) and sorted(planned["measure_point"]) == points

    # round 3 ran exactly when the first six pairs left the comparison undecided
    spec = load_spec("probe_auto_study")
    first_six = execution_frame([r for r in measured if r["repetition"] is None or r["repetition"] < 6],
                                ProbeWorkload.primary)
    [look] = [c for c in study_comparisons(first_six, spec, ProbeWorkload.primary) if c["metric"] == "statements_per_s"]
    assert look["paired"] and look["n"] == 6
    second, decision = sorted((json.loads(r["metadata"]) for r in store.rows(
        samples, dag_id=result.dag_id, run_id=result.run_id, metric="round_plan")), key=lambda d: d["round"])
    assert second["round"] == 2 and second["points"] == planned["measure_round_2"] and "comparisons" not in second
    assert decision["round"] == 3 and decision["comparisons"] == {key(look): state(look, spec)}
    if state(look, spec) == "decided":
        assert "measure_round_3" not in by_task and decision["stopped"] == "decided"
    else:
        assert by_task["measure_round_3"] == {(p, i) for p in points for i in range(6, 8)}
        assert decision["points"] == planned["measure_point"] == planned["measure_round_3"]

    [validation] = store.rows(validations, dag_id=result.dag_id, run_id=result.run_id, task_id="validate")
    assert validation["success"], validation["failures"]
    directory = report_dir(result.dag_id, result.run_id)
    summary = json.loads((directory / "summary.json").read_text())
    assert summary["repetitions"]["mode"] == "auto"
    assert [r["round"] for r in summary["repetitions"]["rounds"]] == [2, 3]
    [said] = [c for c in summary["comparisons"] if c["metric"] == "statements_per_s"]
    n = 6 if state(look, spec) == "decided" else 8
    assert said["paired"] and said["n"] == n and "paired" in said["method"] and 0.96 <= said["confidence"] < 0.98
    assert said["stopped"] in (f"decided after {n} paired repetitions", "max_repetitions (8) spent")
    assert said["title"] == "join_buffer_size=1M vs the baseline join_buffer_size=256K"
    html = (directory / "index.html").read_text()
    assert "Rounds (repetitions: auto)" in html and "round 3:" in html


def _planned_order(run_) -> dict[str, list[str]]:
    """Each measuring task's points (their rendered map index, the point label) by map index."""
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        tis = session.scalars(select(TaskInstance).where(TaskInstance.run_id == run_.run_id,
                                                         TaskInstance.dag_id == run_.dag_id,
                                                         TaskInstance.map_index >= 0)
                              .order_by(TaskInstance.map_index)).all()
        out: dict[str, list[str]] = {}
        for ti in tis:
            out.setdefault(ti.task_id, []).append(ti.rendered_map_index)
        return out
