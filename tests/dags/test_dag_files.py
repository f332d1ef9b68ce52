"""The DAG files import cleanly and cheaply."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_dagbag_has_no_import_errors(airflow_db):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    assert "tpch_load" in bag.dag_ids
    dag = bag.get_dag("tpch_load")
    assert set(dag.params.keys()) == {"scale_factor", "target_conn_id", "schema", "load_streams", "load_redo_log_size"}


def test_dag_files_do_not_import_heavy_libraries_at_parse_time():
    code = ("import sys, glob, importlib.util\n"
            "for f in sorted(glob.glob('dags/*.py')):\n"
            "    spec = importlib.util.spec_from_file_location('m', f)\n"
            "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
            "heavy = ('numpy', 'pandas', 'great_expectations', 'matplotlib', 'MySQLdb', 'duckdb')\n"
            "heavy = [m for m in heavy if m in sys.modules]\n"
            "print(','.join(heavy))\n")
    # parse time itself is measured by `make bench`, not asserted here
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"imported at parse time: {out.stdout}"


def test_every_dag_file_passes_the_dag_processors_safe_mode():
    """The dag-processor (dag_discovery_safe_mode, on by default) skips a file that does not
    mention both "airflow" and "dag"; `dags test` and DagBag in a test may still load it, so only
    a real scheduler would miss its DAGs."""
    from airflow.utils.file import might_contain_dag_via_default_heuristic

    skipped = [f.name for f in sorted((REPO / "dags").glob("*.py")) if not might_contain_dag_via_default_heuristic(str(f))]
    assert skipped == []


def test_the_benchmark_hosts_tasks_go_to_its_queue(monkeypatch, airflow_db):
    """MYSQLBENCH_BENCH_QUEUE (a deployment's setting, read at parse time) sends every task that
    touches a target or its host to that queue, and nothing else; a bad name is refused."""
    from airflow.dag_processing.dagbag import DagBag

    from mysqlbench.errors import InvalidInput
    from mysqlbench.studies.factory import bench_queue

    monkeypatch.setenv("MYSQLBENCH_BENCH_QUEUE", "bench_host")
    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert not bag.import_errors
    on_host = {"check_spec", "ensure_dataset", "measure_point", "restore_target"}
    for dag_id in ("tpch_power", "sysbench_cpu", "tpcc_bp_sweep_study"):
        queues = {t.task_id: t.queue for t in bag.dags[dag_id].tasks}
        rounds = {t for t in queues if t.startswith("measure_round_")}  # one round a repetition
        assert {t for t, q in queues.items() if q == "bench_host"} == on_host | rounds, dag_id
        # a fixed count of 1 in the file: the fewest rounds (a trigger may ask for up to 6); auto: max_repetitions
        assert len(rounds) + 1 == (6 if dag_id == "tpch_power" else 12), (dag_id, rounds)
        assert bag.dags[dag_id].get_task("restore_target").is_teardown
    assert {t.queue for t in bag.dags["tpch_load"].tasks} == {"bench_host"}
    for line in ("mariadb", "mysql"):  # a releases spec's DAG per flavor line
        assert {t.task_id for t in bag.dags[f"tpch_power_across_versions_{line}"].tasks
                if t.queue == "bench_host"} == {"measure_version"}
    monkeypatch.delenv("MYSQLBENCH_BENCH_QUEUE")
    assert bench_queue() == {}
    monkeypatch.setenv("MYSQLBENCH_BENCH_QUEUE", "bench host; rm -rf /")
    with pytest.raises(InvalidInput, match="MYSQLBENCH_BENCH_QUEUE"):
        bench_queue()


def test_a_study_form_is_held_by_its_dag_not_copied_into_every_task(airflow_db):
    """The trigger form lives on the DAG only (factory.build_study_dag): copied into each task it
    made serializing studies.py 30x slower (make bench measures the parse). A task still sees the
    form's values at run time, merged from the DAG's params and the run's conf."""
    from airflow.sdk.definitions.param import process_params
    from airflow.serialization.serialized_objects import DagSerialization

    from mysqlbench.studies.factory import build_all

    dags, errors = build_all()
    assert not errors
    dag = dags["tpch_bka_study"]
    assert "scale_factor" in dag.params and len(dag.params) > 20
    assert {t.task_id for t in dag.tasks if len(t.params)} == set()
    seen = process_params(dag, dag.get_task("check_spec"), {"scale_factor": 0.1}, suppress_exception=False)
    assert seen["scale_factor"] == 0.1 and seen["repetitions"] == dag.params["repetitions"]
    serialized = DagSerialization.to_dict(dag)
    assert [name for name, _ in serialized["dag"]["params"]] == list(dag.params.keys())
    assert all("params" not in t["__var"] for t in serialized["dag"]["tasks"])
