"""tpcc_load: TPC-C's initial population for W warehouses (the specification's data rules), in
tpcc-mysql's nine tables, on a target given by an Airflow connection: create the tables, generate
and load warehouse by warehouse over parallel connections, add tpcc-mysql's indexes and foreign
keys, analyze, install the driver's stored procedures, and validate with Great Expectations (row counts, data rules, consistency
conditions 1-4). A valid dataset emits the ``mysqlbench_tpcc_dataset`` Asset.

``bin/airflow dags test tpcc_load --conf '{"warehouses": 2}'``. A second trigger with the same
warehouses and seed on an intact, verified dataset skips the work and says so.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Asset, dag, get_current_context, task, teardown

from mysqlbench.studies.factory import bench_queue
from mysqlbench.studies.form import model_params
from mysqlbench.workloads.tpcc.models import TpccLoadParams

STUDY = "tpcc_load"
DATASET_ASSET = Asset(name="mysqlbench_tpcc_dataset", uri="mysqlbench://datasets/tpcc")


def _recorder(checked):
    from mysqlbench.recording import TaskRecorder

    return TaskRecorder(get_current_context(), study=STUDY, spec=checked)


def _step(name: str):
    @task(task_id=name)
    def step(checked: dict):
        from mysqlbench.workloads.tpcc import pipeline

        return pipeline.run_step(name, checked, _recorder(checked))

    return step


@dag(
    dag_id="tpcc_load",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=bench_queue(),  # every step touches the target or its files: the benchmark host's worker
    tags=["mysqlbench", "tpcc", "dataset"],
    doc_md=__doc__,
    params=model_params(TpccLoadParams, {"warehouses": 1, "target_conn_id": "mysqlbench_demo"}, "Load"),
)
def tpcc_load():
    @task
    def check_params() -> dict:
        from mysqlbench.workloads.tpcc import pipeline

        return pipeline.check_params(get_current_context()["params"])

    @task.branch
    def plan(checked: dict) -> str:
        from mysqlbench.workloads.tpcc import pipeline

        return pipeline.plan(checked)

    @task
    def reuse_dataset(checked: dict) -> dict:
        from mysqlbench.workloads.tpcc import pipeline

        return pipeline.reuse_dataset(checked, _recorder(checked))

    @task(trigger_rule="none_failed_min_one_success", outlets=[DATASET_ASSET])
    def validate(checked: dict) -> dict:
        from mysqlbench.workloads.tpcc import pipeline

        out = pipeline.validate_dataset(checked, _recorder(checked))
        get_current_context()["outlet_events"][DATASET_ASSET].extra = {
            "dataset_id": out["dataset_id"], "warehouses": checked["warehouses"], "schema": checked["schema"],
            "target": checked["target_conn_id"]}
        return out

    @teardown
    def release_build(checked: dict | None) -> None:
        if not checked:  # check_params refused the run: nothing was built, nothing is held
            return
        from mysqlbench.workloads.tpcc import pipeline

        pipeline.release_build(checked, _recorder(checked))

    checked = check_params()
    decision = plan(checked)
    created = _step("create_tables")(checked)
    loaded = _step("load")(checked)
    indexed = _step("add_indexes")(checked)
    analyzed = _step("analyze")(checked)
    procedures = _step("procedures")(checked)
    reused = reuse_dataset(checked)
    decision >> [created, reused]
    created >> loaded >> indexed >> analyzed >> procedures
    validated = validate(checked)
    [procedures, reused] >> validated
    [created, loaded, indexed, analyzed, procedures, validated] >> release_build(checked)


tpcc_load()
