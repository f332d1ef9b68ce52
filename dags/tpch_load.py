"""tpch_load: generate TPC-H data, create dbgen's tables, load, add the seeds' constraints, rename
to lower case, analyze, and validate, on a target given by an Airflow connection. A valid dataset
emits the ``mysqlbench_tpch_dataset`` Asset (its extra names the dataset id, scale and schema).

Trigger it from the UI (the form is generated from the params model and validates every field) or
with ``bin/airflow dags test tpch_load --conf '{"scale_factor": 0.1}'``. A second trigger with the
same scale factor on an intact, verified dataset skips the work and says so.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Asset, dag, get_current_context, task, teardown

from mysqlbench.studies.factory import bench_queue
from mysqlbench.studies.form import model_params
from mysqlbench.workloads.tpch.models import TpchLoadParams

STUDY = "tpch_load"
DATASET_ASSET = Asset(name="mysqlbench_tpch_dataset", uri="mysqlbench://datasets/tpch")


def _recorder(checked):
    from mysqlbench.recording import TaskRecorder

    return TaskRecorder(get_current_context(), study=STUDY, spec=checked)


def _step(name: str):
    @task(task_id=name)
    def step(checked: dict, data: dict):
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.run_step(name, checked, data, _recorder(checked))

    return step


@dag(
    dag_id="tpch_load",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=bench_queue(),  # every step touches the target or its files: the benchmark host's worker
    tags=["mysqlbench", "tpch", "dataset"],
    doc_md=__doc__,
    params=model_params(TpchLoadParams, {"scale_factor": 0.1, "target_conn_id": "mysqlbench_demo"}, "Load"),
)
def tpch_load():
    @task
    def check_params() -> dict:
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.check_params(get_current_context()["params"])

    @task
    def generate(checked: dict) -> dict:
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.generate_data(checked, _recorder(checked))

    @task.branch
    def plan(checked: dict, data: dict) -> str:
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.plan(checked, data)

    @task
    def reuse_dataset(checked: dict, data: dict) -> dict:
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.reuse_dataset(checked, data, _recorder(checked))

    @task(trigger_rule="none_failed_min_one_success", outlets=[DATASET_ASSET])
    def validate(checked: dict, data: dict) -> dict:
        from mysqlbench.workloads.tpch import pipeline

        out = pipeline.validate_dataset(checked, data, _recorder(checked))
        get_current_context()["outlet_events"][DATASET_ASSET].extra = {
            "dataset_id": data["dataset_id"], "scale_factor": checked["scale_factor"], "schema": checked["schema"],
            "target": checked["target_conn_id"]}
        return out

    @teardown
    def release_build(checked: dict | None) -> None:
        if not checked:  # check_params refused the run: nothing was built, nothing is held
            return
        from mysqlbench.workloads.tpch import pipeline

        pipeline.release_build(checked, _recorder(checked))

    checked = check_params()
    data = generate(checked)
    decision = plan(checked, data)
    created = _step("create_tables")(checked, data)
    loaded = _step("load")(checked, data)
    constrained = _step("add_constraints")(checked, data)
    renamed = _step("rename_tables")(checked, data)
    analyzed = _step("analyze")(checked, data)
    reused = reuse_dataset(checked, data)
    decision >> [created, reused]
    created >> loaded >> constrained >> renamed >> analyzed
    validated = validate(checked, data)
    [analyzed, reused] >> validated
    [created, loaded, constrained, renamed, analyzed, validated] >> release_build(checked)


tpch_load()
