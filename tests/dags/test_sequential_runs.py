"""``repetitions: auto`` end to end: tests/support/studies/probe_auto_study.yaml (the probe
workload's point selects, join_buffer_size 1M against the 256K baseline, 6 to 8 repetitions) run
with dag.test() on the managed MariaDB. Whichever way the measured noise falls, what ran must be
what the stopping rule says for the data measured: six rounds of one repetition of each point, the
order reversed each round, then rounds 7 and 8 only if the comparison over the first six pairs was
not decided; the report's comparison is paired, with its n and why it stopped."""

from __future__ import annotations

import json
from pathlib import Path

from mysqlbench.results.store import ResultsStore, round_task_id, samples, validations
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
    rounds = [round_task_id(n) for n in range(1, 9)]  # one a repetition, up to max_repetitions 8
    assert set(rounds) | {f"plan_round_{n}" for n in range(2, 9)} <= set(dag.task_dict)
    assert "measure_round_9" not in dag.task_dict
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
    for number, task_id in enumerate(rounds[:6], start=1):  # every point, one repetition a round
        assert by_task[task_id] == {(p, number - 1) for p in points}, task_id

    # each round plans the points in the opposite order to the round before: its map indexes,
    # which the scheduler queues a target's points by, one at a time (dag.test runs them in any order)
    planned = _planned_order(result)
    assert sorted(planned[rounds[0]]) == points
    for before, after in zip(rounds[:5], rounds[1:6], strict=True):
        assert planned[after] == list(reversed(planned[before])), after

    # round 7 (the look) and 8 ran exactly when the first six pairs left the comparison undecided
    spec = load_spec("probe_auto_study")
    first_six = execution_frame([r for r in measured if r["repetition"] is None or r["repetition"] < 6],
                                ProbeWorkload.primary)
    [look] = [c for c in study_comparisons(first_six, spec, ProbeWorkload.primary) if c["metric"] == "statements_per_s"]
    assert look["paired"] and look["n"] == 6
    records = sorted((json.loads(r["metadata"]) for r in store.rows(
        samples, dag_id=result.dag_id, run_id=result.run_id, metric="round_plan")), key=lambda d: d["round"])
    decided = state(look, spec) == "decided"
    # a decided look ends the sequence: the rounds after it are skipped at once, never planned
    assert [r["round"] for r in records] == list(range(2, 8 if decided else 9))
    assert all("comparisons" not in r and r["points"] == planned[rounds[r["round"] - 1]] for r in records[:5])
    decision = records[5]
    assert decision["round"] == 7 and decision["comparisons"] == {key(look): state(look, spec)}
    if decided:
        assert not {rounds[6], rounds[7]} & set(by_task) and decision["stopped"] == "decided"
        assert _states(result, rounds[6], "plan_round_8", rounds[7]) == {"skipped"}
    else:
        assert "comparisons" not in records[6]  # between two looks: what the look chose
        assert by_task[rounds[6]] == {(p, 6) for p in points} and by_task[rounds[7]] == {(p, 7) for p in points}
        assert planned[rounds[7]] == list(reversed(planned[rounds[6]]))

    [validation] = store.rows(validations, dag_id=result.dag_id, run_id=result.run_id, task_id="validate")
    assert validation["success"], validation["failures"]
    directory = report_dir(result.dag_id, result.run_id)
    summary = json.loads((directory / "summary.json").read_text())
    assert summary["repetitions"]["mode"] == "auto"
    assert [r["round"] for r in summary["repetitions"]["rounds"]] == list(range(2, 8 if decided else 9))
    [said] = [c for c in summary["comparisons"] if c["metric"] == "statements_per_s"]
    n = 6 if decided else 8
    assert said["paired"] and said["n"] == n and "paired" in said["method"] and 0.96 <= said["confidence"] < 0.98
    assert said["stopped"] in (f"decided after {n} paired repetitions", "max_repetitions (8) spent")
    assert said["title"] == "join_buffer_size=1M vs the baseline join_buffer_size=256K"
    html = (directory / "index.html").read_text()
    assert "Rounds (repetitions: auto)" in html and "round 7:" in html


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


def _states(run_, *task_ids: str) -> set[str]:
    """The states of a run's task instances of ``task_ids``."""
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return {str(state) for state in session.scalars(select(TaskInstance.state).where(
            TaskInstance.dag_id == run_.dag_id, TaskInstance.run_id == run_.run_id, TaskInstance.task_id.in_(task_ids)))}
