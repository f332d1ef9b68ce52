"""tpch_load: generate TPC-H data, create dbgen's tables, load, add the seeds' constraints, rename
to lower case, analyze, and validate, on a target given by an Airflow connection.

Trigger it from the UI (the form validates every field) or with
``bin/airflow dags test tpch_load --conf '{"scale_factor": 0.1}'``. A second trigger with the same
scale factor on an intact, verified dataset skips the work and says so.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, get_current_context, task

STUDY = "tpch_load"


def _recorder(checked):
    from mysqlbench.recording import TaskRecorder

    return TaskRecorder(get_current_context(), study=STUDY, spec=checked)


@dag(
    dag_id="tpch_load",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mysqlbench", "tpch", "dataset"],
    doc_md=__doc__,
    params={
        "scale_factor": Param(0.1, type="number", exclusiveMinimum=0, maximum=1000,
                              description="TPC-H scale factor: 1 is 1 GB of .tbl files, 6,001,215 lineitem rows"),
        "target_conn_id": Param("mysqlbench_demo", type="string", pattern=r"^[A-Za-z0-9_.\-]{1,250}$",
                                description="Airflow connection of the server to load"),
        "schema": Param("tpch", type="string", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$",
                        description="schema to load into (created and owned by mysqlbench)"),
        "load_streams": Param(2, type="integer", minimum=1, maximum=16,
                              description="parallel LOAD DATA connections"),
        "load_redo_log_size": Param("keep", type="string", pattern=r"^(keep|[0-9]{1,15}[KMGkmg]?)$",
                                    description="redo log size during the load (e.g. 2G), restored "
                                                "afterwards; keep leaves it as configured"),
    },
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

    @task
    def create_tables(checked: dict, data: dict) -> dict:
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.create_tables(checked, data, _recorder(checked))

    @task
    def load(checked: dict, data: dict) -> dict:
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.load(checked, data, _recorder(checked))

    @task
    def add_constraints(checked: dict, data: dict) -> dict:
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.add_constraints(checked, data, _recorder(checked))

    @task
    def rename_tables(checked: dict, data: dict) -> None:
        from mysqlbench.workloads.tpch import pipeline

        pipeline.rename_tables(checked, data, _recorder(checked))

    @task
    def analyze(checked: dict, data: dict) -> dict:
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.analyze(checked, data, _recorder(checked))

    @task(trigger_rule="none_failed_min_one_success")
    def validate(checked: dict, data: dict) -> dict:
        from mysqlbench.workloads.tpch import pipeline

        return pipeline.validate_dataset(checked, data, _recorder(checked))

    checked = check_params()
    data = generate(checked)
    decision = plan(checked, data)
    created = create_tables(checked, data)
    loaded = load(checked, data)
    constrained = add_constraints(checked, data)
    renamed = rename_tables(checked, data)
    analyzed = analyze(checked, data)
    reused = reuse_dataset(checked, data)
    decision >> [created, reused]
    created >> loaded >> constrained >> renamed >> analyzed
    [analyzed, reused] >> validate(checked, data)


tpch_load()
