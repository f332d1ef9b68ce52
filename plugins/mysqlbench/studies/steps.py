"""The steps of a study DAG as plain functions (the factory only wires them): check the merged
spec, ensure the dataset, plan the points, run one point, validate, report, publish."""

from __future__ import annotations

import json
import logging
from typing import Any

from mysqlbench.errors import MysqlbenchError
from mysqlbench.measure import plan_outline
from mysqlbench.recording import TaskRecorder
from mysqlbench.results.store import Sample, Validation, samples
from mysqlbench.studies.spec import StudySpec, load_spec
from mysqlbench.targets.connection import TargetConnection

log = logging.getLogger(__name__)

# trigger-form params -> spec fields
PARAM_FIELDS = ("queries", "settings", "variables", "matrix", "counters", "cache", "repetitions", "timeout_s", "seed",
                "noise_cv_max", "allow_timeouts")


def merged_spec(study: str, params: dict[str, Any]) -> StudySpec:
    overrides: dict[str, Any] = {k: params.get(k) for k in PARAM_FIELDS if k in params}
    dataset = {k: params[k] for k in ("scale_factor", "schema") if params.get(k) is not None}
    if dataset:
        overrides["dataset"] = dataset
    if params.get("target_conn_id"):
        overrides["target"] = params["target_conn_id"]
    return load_spec(study, overrides)


def check_spec(study: str, params: dict[str, Any]) -> dict[str, Any]:
    """Validate everything before any task touches a server: the spec, the connection, and that
    the target may be changed (a study creates its dataset and sets globals)."""
    spec = merged_spec(study, params)
    target = TargetConnection.from_airflow(spec.target)
    target.require_benchmark_target(f"run study {spec.study}")
    spec.points()  # the matrix expands
    log.info("spec ok: %s on %s, %d points", spec.study, target.conn_id, len(spec.points()))
    return spec.model_dump(by_alias=True, mode="json")


def spec_of(data: dict[str, Any]) -> StudySpec:
    return StudySpec.model_validate(data)


def ensure_dataset(data: dict[str, Any], recorder: TaskRecorder) -> dict[str, Any]:
    from mysqlbench.workloads.tpch import pipeline

    spec = spec_of(data)
    params = {"scale_factor": spec.dataset.scale_factor, "schema": spec.dataset.schema_name,
              "target_conn_id": spec.target, "load_streams": 2}
    return pipeline.ensure_dataset(params, recorder)


def plan_points(data: dict[str, Any]) -> list[dict[str, Any]]:
    points = spec_of(data).points()
    log.info("%d points in random order, seed %s: %s", len(points), points[0]["seed"],
             [p["label"] for p in points])
    return points


def measure_point(data: dict[str, Any], point: dict[str, Any], recorder: TaskRecorder, dataset_id: str) -> dict:
    from mysqlbench.studies.point import run_point

    spec = spec_of(data)
    result = run_point(spec, point)
    recorder.record(result, target=TargetConnection.from_airflow(spec.target), dataset_id=dataset_id)
    statuses = sorted({s.status for s in result if s.metric == "client_seconds"})
    return {"point": point["label"], "statuses": statuses}


def _run_rows(recorder: TaskRecorder) -> list[dict[str, Any]]:
    ti = recorder.context["ti"]
    return recorder.store.rows(samples, dag_id=ti.dag_id, run_id=ti.run_id)


def validate(data: dict[str, Any], recorder: TaskRecorder, dataset_id: str | None) -> dict[str, Any]:
    """Runs even when points failed (trigger rule all_done), and never raises: the gate does."""
    from mysqlbench.studies.analysis import executions
    from mysqlbench.studies.validation import make_oracle, validate_study

    import time

    started = time.monotonic()
    spec = spec_of(data)
    execs = executions([r for r in _run_rows(recorder) if r["task_id"] == "measure_point"])
    expected_points = len(spec.points()) * len(spec.queries)
    got_points = len({(e["point"], e["query"]) for e in execs})
    result, flags = validate_study(spec, execs, make_oracle(spec))
    if got_points != expected_points:
        result = Validation(result.suite, False, result.statistics,
                            result.failures + [{"check": "points_recorded", "observed": got_points,
                                                "expected": expected_points}])
    recorder.record([Sample("noise_flags", len(flags), "count", metadata={"flags": flags}),
                     Sample("phase_seconds", round(time.monotonic() - started, 3), "s", metadata={"phase": "validate"})],
                    [result], dataset_id=dataset_id)
    log.info("validation %s: %s", "passed" if result.success else "FAILED", result.failures[:10])
    return {"success": result.success, "failures": result.failures, "statistics": result.statistics, "flags": flags}


def report(data: dict[str, Any], validation: dict[str, Any] | None, recorder: TaskRecorder) -> dict[str, Any]:
    from mysqlbench.studies.analysis import executions
    from mysqlbench.studies.report import write_report

    spec = spec_of(data)
    rows = [r for r in _run_rows(recorder) if r["task_id"] == "measure_point"]
    plans = []
    for row in rows:
        if row["metric"] == "plan":
            meta = json.loads(row["metadata"])
            plans.append({"query": meta["query"], "point": meta["point"], "plan_hash": meta["plan_hash"],
                          "outline": plan_outline(meta["plan"])})
    first = rows[0] if rows else {}
    seed = json.loads(first["metadata"]).get("seed") if first else None  # the seed the points ran with
    metadata = {"spec": data, "seed": seed, "server": first.get("server_version"),
                "variables_hash": first.get("variables_hash"), "host_hash": first.get("host_hash"),
                "dataset_id": first.get("dataset_id"), "package_version": first.get("package_version")}
    validation = validation or {"success": False, "failures": [{"check": "validation task did not finish"}]}
    out = write_report(spec=spec, dag_id=recorder.context["ti"].dag_id, run_id=recorder.context["ti"].run_id,
                       execs=executions(rows), plans=plans, validation=validation,
                       flags=validation.get("flags", []), metadata=metadata)
    log.info("report%s: %s (summary: %s)", "" if out["valid"] else " (INVALID)", out["html"], out["summary"])
    for sentence in out["findings"]:
        log.info("finding: %s", sentence)
    return out


def publish(validation: dict[str, Any] | None, report_out: dict[str, Any] | None) -> dict[str, Any]:
    """Succeeds, emitting the study's Asset event, only for a valid run."""
    if not validation or not validation.get("success"):
        raise MysqlbenchError(f"study run is INVALID: {(validation or {}).get('failures', 'no validation')}; "
                              f"report: {(report_out or {}).get('html')}")
    return {"report": report_out["html"]}
