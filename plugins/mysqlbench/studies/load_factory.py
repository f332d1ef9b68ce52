"""The one load-DAG factory: a workload's declared dataset build (:class:`~mysqlbench.workloads.
lifecycle.DatasetBuild`) as a DAG of its own, one task per step, so a DBA can load (or check) a
dataset from the UI before any study runs, see each step's time, and retry a failed step alone.

The DAG's shape, for every build: ``check_params`` (the form's values validated, the target ours to
change, the disk enough; nothing touched) -> ``generate`` (only for a build that generates files)
-> ``plan`` branches to ``reuse_dataset`` (verified and unchanged) or to the first step -> the
declared steps in order -> ``validate`` (Great Expectations; a valid dataset emits the
``mysqlbench_<workload>_dataset`` Asset) and the ``release_build`` teardown, which gives the
dataset back if a step failed half-way. Its form is generated from the build's params model."""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import Asset, dag, get_current_context, task, teardown

from mysqlbench.studies.factory import bench_queue
from mysqlbench.studies.form import model_params
from mysqlbench.workloads.lifecycle import DatasetBuild


def dataset_asset(workload: str) -> Asset:
    return Asset(name=f"mysqlbench_{workload}_dataset", uri=f"mysqlbench://datasets/{workload}")


def load_dag(build_cls: type[DatasetBuild], *, dag_id: str, workload: str, defaults: dict[str, Any],
             asset_facts: tuple[str, ...], doc: str):
    """The load DAG ``dag_id`` for ``build_cls``; ``defaults`` fill its form, ``asset_facts`` are
    the params named in the Asset event's extra beside the dataset id, schema and target."""
    if build_cls.params_model is None:
        raise TypeError(f"{build_cls.__name__} declares no params_model: it has no load DAG")
    asset = dataset_asset(workload)
    steps = build_cls.steps

    def _recorder(checked: dict[str, Any]):
        from mysqlbench.recording import TaskRecorder

        return TaskRecorder(get_current_context(), study=dag_id, spec=checked)

    def _build(checked: dict[str, Any]) -> DatasetBuild:
        return build_cls.from_params(checked)

    def _data(build: DatasetBuild, data: dict[str, Any] | None) -> dict[str, Any]:
        # a build that generates files was identified by its generate task; any other is cheap to identify
        return data if data is not None else build.identify()

    def _step(name: str):
        @task(task_id=name)
        def step(checked: dict, data: dict | None = None):
            from mysqlbench.workloads import lifecycle

            build = _build(checked)
            return lifecycle.run_step(build, name, _data(build, data), _recorder(checked))

        return step

    @dag(
        dag_id=dag_id,
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        default_args=bench_queue(),  # every step touches the target or its files: the benchmark host's worker
        tags=["mysqlbench", workload, "dataset"],
        doc_md=doc,
        params=model_params(build_cls.params_model, defaults, "Load"),
    )
    def load():
        @task
        def check_params() -> dict:
            from mysqlbench.workloads import lifecycle

            return lifecycle.check_params(build_cls, get_current_context()["params"])

        @task
        def generate(checked: dict) -> dict:
            return _build(checked).identify(_recorder(checked))

        @task.branch
        def plan(checked: dict, data: dict | None = None) -> str:
            from mysqlbench.workloads import lifecycle

            build = _build(checked)
            return "reuse_dataset" if lifecycle.plan(build, _data(build, data)) else steps[0]

        @task
        def reuse_dataset(checked: dict, data: dict | None = None) -> dict:
            from mysqlbench.workloads import lifecycle

            build = _build(checked)
            return lifecycle.reuse(build, _data(build, data), _recorder(checked))

        @task(trigger_rule="none_failed_min_one_success", outlets=[asset])
        def validate(checked: dict, data: dict | None = None) -> dict:
            from mysqlbench.workloads import lifecycle

            build = _build(checked)
            out = lifecycle.validate(build, _data(build, data), _recorder(checked))
            get_current_context()["outlet_events"][asset].extra = {
                "dataset_id": out["dataset_id"], **{key: checked[key] for key in asset_facts},
                "schema": build.schema, "target": build.target.conn_id}
            return {key: value for key, value in out.items() if key != "rows"}

        @teardown
        def release_build(checked: dict | None) -> None:
            if not checked:  # check_params refused the run: nothing was built, nothing is held
                return
            from mysqlbench.workloads import lifecycle

            lifecycle.release(_build(checked), _recorder(checked))

        checked = check_params()
        data = generate(checked) if build_cls.generates_files else None
        decision = plan(checked, data)
        built = [_step(name)(checked, data) for name in steps]
        reused = reuse_dataset(checked, data)
        decision >> [built[0], reused]
        for before, after in zip(built, built[1:], strict=False):  # the steps in their declared order
            before >> after
        validated = validate(checked, data)
        [built[-1], reused] >> validated
        [*built, validated] >> release_build(checked)

    return load()
