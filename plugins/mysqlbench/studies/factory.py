"""The one DAG factory: each study spec under include/configs/studies/ becomes a DAG whose
trigger-form params can override every dimension. The only module here that knows Airflow."""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, Param, get_current_context, task

from mysqlbench.params import CONN_ID_PATTERN, SCHEMA_PATTERN
from mysqlbench.studies.spec import StudySpec, load_spec, study_files


def target_pool(conn_id: str) -> str:
    """One Airflow pool per configured target, one slot: points on a target never overlap within
    this deployment (the server-side lock covers other deployments and overridden targets)."""
    return f"target_{conn_id}"


def _recorder(study: str, spec_data: dict[str, Any]):
    from mysqlbench.recording import TaskRecorder

    return TaskRecorder(get_current_context(), study=study, spec=spec_data)


def study_params(spec: StudySpec) -> dict[str, Param]:
    return {
        "scale_factor": Param(spec.dataset.scale_factor, type="number", exclusiveMinimum=0, maximum=1000,
                              description="TPC-H scale factor"),
        "target_conn_id": Param(spec.target, type="string", pattern=CONN_ID_PATTERN,
                                description="Airflow connection of the server under test"),
        "schema": Param(spec.dataset.schema_name, type="string", pattern=SCHEMA_PATTERN, description="dataset schema"),
        "queries": Param(spec.queries, type="array", items={"type": "string", "pattern": r"^q\d{2}(_[a-z0-9]+)?$"},
                         description="query ids (include/sql/tpch/queries and studies)"),
        "settings": Param(spec.settings, type="object", description="knobs fixed for every point"),
        "variables": Param(spec.variables, type="object", description="raw server variables, fixed"),
        "matrix": Param(spec.matrix, type="object", description="swept knobs: cross product of the lists"),
        "counters": Param(spec.counters, type="array", items={"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
                          description="status counters whose deltas are recorded per execution"),
        "cache": Param(spec.cache, type="array", items={"type": "string", "enum": ["warm", "cold"]}),
        "repetitions": Param(spec.repetitions, type="integer", minimum=1, maximum=100),
        "timeout_s": Param(spec.timeout_s, type="number", exclusiveMinimum=0, maximum=86400,
                           description="per-statement timeout, enforced by the server"),
        "seed": Param(spec.seed, type=["integer", "null"], description="point order seed (random when empty)"),
        "noise_cv_max": Param(spec.noise_cv_max, type="number", exclusiveMinimum=0),
        "allow_timeouts": Param(spec.allow_timeouts, type="boolean"),
    }


def build_study_dag(spec: StudySpec) -> DAG:
    study = spec.study
    asset = Asset(name=f"mysqlbench_{study}", uri=f"mysqlbench://studies/{study}")
    with DAG(
        dag_id=study,
        description=spec.description,
        schedule=spec.schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["mysqlbench", "tpch", "study"],
        params=study_params(spec),
        doc_md=f"**{study}**: {spec.description}\n\nSpec: `include/configs/studies/{study}.yaml`.",
    ) as dag:

        @task
        def check_spec() -> dict:
            from mysqlbench.studies import steps

            return steps.check_spec(study, get_current_context()["params"])

        @task
        def ensure_dataset(spec_data: dict) -> dict:
            from mysqlbench.studies import steps

            return steps.ensure_dataset(spec_data, _recorder(study, spec_data))

        @task
        def plan_points(spec_data: dict, data: dict) -> list:
            from mysqlbench.studies import steps

            return steps.plan_points(spec_data)

        @task(pool=target_pool(spec.target), max_active_tis_per_dag=1, map_index_template="{{ point_label }}")
        def measure_point(spec_data: dict, point: dict, data: dict) -> dict:
            from mysqlbench.studies import steps

            get_current_context()["point_label"] = point["label"]
            return steps.measure_point(spec_data, point, _recorder(study, spec_data), data["dataset_id"])

        @task(trigger_rule="all_done")
        def validate(spec_data: dict, data: dict) -> dict:
            from mysqlbench.studies import steps

            return steps.validate(spec_data, _recorder(study, spec_data), data.get("dataset_id"))

        @task(trigger_rule="all_done")
        def report(spec_data: dict, validation: dict) -> dict:
            from mysqlbench.studies import steps

            return steps.report(spec_data, validation, _recorder(study, spec_data))

        @task(outlets=[asset])
        def publish(validation: dict, report_out: dict) -> dict:
            from mysqlbench.studies import steps

            return steps.publish(validation, report_out)

        spec_data = check_spec()
        data = ensure_dataset(spec_data)
        points = plan_points(spec_data, data)
        measured = measure_point.partial(spec_data=spec_data, data=data).expand(point=points)
        checked = validate(spec_data, data)
        measured >> checked
        written = report(spec_data, checked)
        publish(checked, written)
    return dag


def build_all() -> dict[str, DAG]:
    return {path.stem: build_study_dag(load_spec(path)) for path in study_files()}
