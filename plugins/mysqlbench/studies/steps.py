"""The steps of a study DAG as plain functions (the factory only wires them): check the merged
spec, ensure the dataset, plan the points, run one point, restore the target, validate, report,
publish. They know the workload interface, never a particular workload."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from mysqlbench.errors import MysqlbenchError
from mysqlbench.recording import TaskRecorder
from mysqlbench.results.store import Sample, SampleKind, samples
from mysqlbench.studies import rerun
from mysqlbench.studies.spec import StudySpec, load_spec, spec_path
from mysqlbench.targets.connection import TargetConnection
from mysqlbench.workloads.base import StudyWorkload, workload_class

log = logging.getLogger(__name__)


def merged_spec(study: str, params: dict[str, Any]) -> StudySpec:
    from mysqlbench.errors import InvalidInput
    from mysqlbench.studies.form import overrides

    base = load_spec(spec_path(study))
    # the DAG's round tasks are made from the spec file: a fixed count fits into them, auto's
    # max_repetitions (one round each) must
    spec = load_spec(spec_path(study), {**overrides(base, params), "dag_rounds": base.round_tasks()})
    if spec.sequential and spec.max_repetitions > base.round_tasks():
        raise InvalidInput(f"repetitions: auto with max_repetitions {spec.max_repetitions} measures in up to "
                           f"{spec.max_repetitions} rounds (one repetition each), but the {study} DAG has "
                           f"{base.round_tasks()} (its rounds are built from {spec_path(study)}): set repetitions: "
                           "auto and its limits in that file, or ask for a smaller max_repetitions")
    return spec


# The XCom key under which a study's check_spec task leaves why it refused a run (the run's
# Benchmark report tab reads it from Airflow's metadata database).
REFUSAL_KEY = "refused"


def check_spec(study: str, params: dict[str, Any]) -> dict[str, Any]:
    """Validate everything before any task touches a server: the spec, the connection, and that
    the target may be changed (a study creates its dataset and sets globals)."""
    from mysqlbench.targets.control import ensure_running

    spec = merged_spec(study, params)
    workload_of(spec).check_runnable()
    targets = [TargetConnection.from_airflow(conn_id) for conn_id in spec.measured_targets()]  # all exist
    for target in targets:
        if target.ssh_conn_id:  # the benchmark host: defined, its key checked and matching, before anything runs
            check_ssh_host(target)
        ensure_running(target)  # our own instance, down after a reboot: up, so it can prove what it is
        target.require_benchmark_target(f"run study {spec.study}")
        _check_host_bounds(spec, target)
    log.info("spec ok: %s (%s) on %s, %d points", spec.study, spec.workload,
             ", ".join(t.conn_id for t in targets), len(spec.points()))
    data = spec.model_dump(by_alias=True, mode="json")
    if params.get(rerun.RERUN_OF):
        check_rerun(study, params, data, targets)
    return data


def _check_host_bounds(spec, target: TargetConnection) -> None:
    """A managed target's sizes against this host's memory and free disk (the host it runs on)."""
    from mysqlbench.targets.managed import check_host_bounds

    values: dict[str, list[object]] = {}
    for point in spec.points():
        if point["target"] == target.conn_id:
            for knob, value in point["knobs"].items():
                values.setdefault(knob, []).append(value)
    redo = getattr(spec.dataset, "load_redo_log_size", None)
    if redo:
        values.setdefault("load_redo_log_size", []).append(redo)
    check_host_bounds(target, values)


def check_rerun(study: str, params: dict[str, Any], data: dict[str, Any], targets: list[TargetConnection]) -> None:
    """A rerun: the original exists, and the spec, the targets' server versions and the host are
    what it ran with, or the differences are allowed (and logged, to be said with each verdict).
    Targets on several hosts have no one host to compare (the hosts are not checked then)."""
    from mysqlbench.recording import server_lineage
    from mysqlbench.results.store import ResultsStore

    store = ResultsStore.from_airflow()
    original = rerun.load_original(store, study, params[rerun.RERUN_OF])
    now = [server_lineage(store, target) for target in targets]
    hosts = {n["host_hash"] for n in now}
    differences = rerun.check(original, data, {n["server_version"] for n in now},
                              next(iter(hosts)) if len(hosts) == 1 else None, store,
                              bool(params.get(rerun.ALLOW_DIFFERENCES)))
    log.info("rerun of %s: %s", original.run_id, "; ".join(differences) or "the same spec, server version and host")


def check_ssh_host(target) -> None:
    """Open the target's SSH connection and run ``true`` there: a missing connection, one that
    turns key checking off, a host key that does not match or a refused login is a clear error
    here, before the study changes anything."""
    from mysqlbench.errors import InvalidInput
    from mysqlbench.targets.host import HostError, SshHost

    try:
        SshHost(target.ssh_conn_id).run(["true"], timeout=60)
    except HostError as exc:
        raise InvalidInput(f"{target.conn_id}'s benchmark host: {exc}") from None
    except InvalidInput:
        raise
    except Exception as exc:  # noqa: BLE001 - Airflow's not-found error, or the SSH layer's own
        raise InvalidInput(f"{target.conn_id}'s SSH connection {target.ssh_conn_id!r}: {exc}") from None


def spec_of(data: dict[str, Any]) -> StudySpec:
    return StudySpec.model_validate(data)


def workload_of(spec: StudySpec) -> StudyWorkload:
    return workload_class(spec.workload)(spec)


def ensure_dataset(data: dict[str, Any], recorder: TaskRecorder) -> dict[str, Any]:
    """The workload's dataset on every target of the run: the same dataset (one id), so servers
    are compared on the same data."""
    spec = spec_of(data)
    workload = workload_of(spec)
    out: dict[str, Any] = {}
    for conn_id in spec.measured_targets():
        got = workload.ensure_dataset(TargetConnection.from_airflow(conn_id), recorder)
        if out and got["dataset_id"] != out["dataset_id"]:
            raise MysqlbenchError(f"{conn_id} holds dataset {got['dataset_id']}, not {out['dataset_id']}")
        out = got
    return out


def plan_points(data: dict[str, Any], dataset: dict[str, Any]) -> list[dict[str, Any]]:
    """One mapped task's arguments per point (the spec travels with each, small and secret-free),
    for the first round (its first repetition of each)."""
    import pandas as pd

    from mysqlbench.studies.sequential import plan_round

    spec = spec_of(data)
    points = spec.points()
    log.info("%d points in random order, seed %s: %s", len(points), points[0]["seed"], [p["label"] for p in points])
    chosen, _ = plan_round(spec, points, 1, pd.DataFrame(), None, None)
    return [{"spec_data": data, "point": p, "dataset_id": dataset["dataset_id"]} for p in chosen]


def plan_round(data: dict[str, Any], planned: list[dict[str, Any]], number: int,
               recorder: TaskRecorder) -> list[dict[str, Any]]:
    """Round ``number`` (2 and on): with ``repetitions: auto`` the points to measure again, from the
    comparisons so far (``sequential.plan_round``), the decision stored with the run; with a fixed
    number, every point, the order reversed each round, until the count is measured."""
    import pandas as pd

    from mysqlbench.studies.analysis import execution_frame
    from mysqlbench.studies.sequential import first_window_start, round_records
    from mysqlbench.studies.sequential import plan_round as decide

    spec = spec_of(data)
    points = [kwargs["point"] for kwargs in planned]
    if spec.sequential:
        workload = workload_of(spec)
        rows = _measured_rows(recorder)
        ti = recorder.context["ti"]
        records = round_records(recorder.store.rows(samples, dag_id=ti.dag_id, run_id=ti.run_id, metric="round_plan"))
        previous = next((r for r in records if r["round"] == number - 1), None)
        chosen, record = decide(spec, points, number, execution_frame(rows, workload.primary), workload.primary,
                                first_window_start(rows), previous=previous)
        recorder.record([Sample("round_plan", len(chosen), "points", kind=SampleKind.RUN.value, metadata=record)])
    else:  # a fixed number: every point, the order reversed each round; no decision to store
        chosen, record = decide(spec, points, number, pd.DataFrame(), None, None)
    log.info("round %d of %d: %s", number, record["rounds"], json.dumps(record, default=str)[:3000])
    dataset_id = planned[0]["dataset_id"] if planned else None
    return [{"spec_data": data, "point": p, "dataset_id": dataset_id} for p in chosen]


def measure_point(data: dict[str, Any], point: dict[str, Any], recorder: TaskRecorder, dataset_id: str,
                  on_start=None) -> dict[str, Any]:
    """Run one point and record its samples with the lineage of the settings it ran with. A point
    stopped from outside records what it measured, the interrupted execution as killed, and fails."""
    from mysqlbench.results.spool import Spool, record_or_spool
    from mysqlbench.studies.point import PointRun

    spec = spec_of(data)
    target = TargetConnection.from_airflow(point.get("target") or spec.target)
    ti = recorder.context["ti"]
    spool = Spool(ti.dag_id, ti.run_id, ti.task_id, ti.map_index if ti.map_index is not None else -1)
    if spool.exists():  # an earlier try measured, but could not store: store that, do not measure again
        result, _ = spool.read()
        log.warning("storing the %d samples an earlier try spooled to %s", len(result), spool.path)
        spool.store(recorder.store, recorder, target=target, dataset_id=dataset_id)
        return {"point": point["label"], "statuses": sorted({s.status for s in result if s.kind == "metric"}),
                "from_spool": True}
    run = PointRun(spec, point, target, dataset_id=dataset_id)
    if on_start is not None:
        on_start(run)
    try:
        result = run.run()
    except BaseException:
        if run.samples:
            record_or_spool(recorder, spool, run.samples, run.snapshot, target=target, dataset_id=dataset_id)
        raise
    record_or_spool(recorder, spool, result, run.snapshot, target=target, dataset_id=dataset_id)
    statuses = sorted({s.status for s in result if s.kind == SampleKind.METRIC.value})
    return {"point": point["label"], "statuses": statuses}


def restore_target(data: dict[str, Any], dag_id: str | None = None, run_id: str | None = None) -> dict[str, Any]:
    """The teardown: take the target (which replays any restore journal a point left, killed or
    not) and report what had to be undone; then store what run ``dag_id``/``run_id``'s points
    spooled (``results.spool``)."""
    from mysqlbench.results.spool import STALE_S, store_spooled
    from mysqlbench.results.store import ResultsStore
    from mysqlbench.targets.journal import RestoreJournal
    from mysqlbench.targets.lock import exclusive

    spec = spec_of(data)
    workload = workload_of(spec)
    restored, released = {}, {}
    for conn_id in spec.measured_targets():
        target = TargetConnection.from_airflow(conn_id)
        left = RestoreJournal.of(target).entries()
        with exclusive(target):
            done = workload.release_dataset(target)  # what only this run needed (a file test's files)
        if left:
            log.warning("restored %s: %s", target.conn_id, left)
            restored[conn_id] = left
        if done:
            log.info("released on %s: %s", target.conn_id, done)
            released[conn_id] = done
    # what a point measured but could not store, its retries spent: stored now, before validation
    # reads the run (and what older runs on this worker left, once they are long over)
    stored = store_spooled(ResultsStore.from_airflow(), dag_id=dag_id, run_id=run_id, older_than_s=STALE_S) \
        if dag_id else []
    refused = [s for s in stored if "error" in s]
    if refused:
        raise MysqlbenchError(f"spooled samples still cannot be stored (left for `bin/mysqlbench spool store`): "
                              f"{refused}")
    return {"restored": restored, "released": released, "stored_from_spool": stored}


def _measured_rows(recorder: TaskRecorder) -> list[dict[str, Any]]:
    ti = recorder.context["ti"]
    return recorder.store.measured_rows(samples, dag_id=ti.dag_id, run_id=ti.run_id)


def validate(data: dict[str, Any], recorder: TaskRecorder, dataset_id: str | None) -> dict[str, Any]:
    """Runs even when points failed (trigger rule all_done), and never raises: the gate does."""
    from mysqlbench.studies.analysis import execution_frame
    from mysqlbench.studies.validation import validate_study

    started = time.monotonic()
    spec = spec_of(data)
    workload = workload_of(spec)
    frame = execution_frame(_measured_rows(recorder), workload.primary)
    result, flags = validate_study(spec, workload, frame)
    recorder.record([Sample("noise_flags", len(flags), "count", metadata={"flags": flags}),
                     Sample("phase_seconds", round(time.monotonic() - started, 3), "s", kind=SampleKind.PHASE.value,
                            metadata={"phase": "validate"})],
                    [result], dataset_id=dataset_id)
    log.info("validation %s: %d of %d expectations met%s", "passed" if result.success else "FAILED",
             result.statistics["successful_expectations"], result.statistics["evaluated_expectations"],
             "" if result.success else f"; failed: {json.dumps(result.failures, default=str)[:3000]}")
    return json.loads(json.dumps({"success": result.success, "failures": result.failures,
                                  "statistics": result.statistics, "flags": flags}, default=str))


def report(data: dict[str, Any], validation: dict[str, Any] | None, recorder: TaskRecorder) -> dict[str, Any]:
    import pandas as pd

    from mysqlbench.measure import comparable_plan_hash, plan_outline
    from mysqlbench.studies.analysis import execution_frame
    from mysqlbench.studies.report import earlier_tries, write_report
    from mysqlbench.studies.sequential import round_records

    spec = spec_of(data)
    workload = workload_of(spec)
    rows = _measured_rows(recorder)
    plans = []
    for row in rows:
        if row["kind"] == SampleKind.PLAN.value:
            meta = json.loads(row["metadata"])
            plans.append({"subject": row["subject"], "point": row["point"], "plan_hash": meta["plan_hash"],
                          "comparable_hash": comparable_plan_hash(meta["plan"]), "outline": plan_outline(meta["plan"])})
    series = pd.DataFrame([r for r in rows if r["kind"] == SampleKind.SERIES.value],
                          columns=["metric", "point", "subject", "repetition", "unit", "series"])
    first = rows[0] if rows else {}
    seed = json.loads(first["metadata"]).get("seed") if first else None  # the seed the points ran with
    metadata = {"spec": data, "seed": seed, "server": first.get("server_version"),
                "variables_hashes": sorted({r["variables_hash"] for r in rows if r.get("variables_hash")}),
                "host_hash": first.get("host_hash"), "dataset_id": first.get("dataset_id"),
                "package_version": first.get("package_version")}
    validation = validation or {"success": False, "failures": [{"check": "validation task did not finish"}]}
    ti = recorder.context["ti"]
    frame = execution_frame(rows, workload.primary)
    reproduction = reproduce(recorder, spec, workload, rows)
    out = write_report(spec=spec, workload=workload, dag_id=ti.dag_id, run_id=ti.run_id,
                       frame=frame, series=series, plans=plans,
                       validation=validation, flags=validation.get("flags", []), metadata=metadata,
                       extra_tables=workload.report_tables(rows, frame) + _used_table(spec, rows, recorder),
                       rounds=round_records(recorder.store.rows(samples, dag_id=ti.dag_id, run_id=ti.run_id,
                                                                metric="round_plan")),
                       reproduction=reproduction,
                       tries=earlier_tries(recorder.store.rows(samples, _measured=True, every_try=True,
                                                               dag_id=ti.dag_id, run_id=ti.run_id),
                                           workload.primary.name))
    stored = recorder.store.keep_report(ti.dag_id, Path(out["dir"]))  # the UI reads it there, from any machine
    log.info("report%s: %s (summary: %s; %d files kept in the results store)", "" if out["valid"] else " (INVALID)",
             out["html"], out["summary"], stored)
    for sentence in out["findings"]:
        log.info("finding: %s", sentence)
    for verdict in (reproduction or {}).get("verdicts", []):
        log.info("reproduction: %s", verdict["said"])
    return out


USED_TITLE = "What the server ran with: each swept knob as the point asked for it -> its variable as the server reported it"


def _used_table(spec: StudySpec, rows: list[dict[str, Any]], recorder: TaskRecorder) -> list[tuple[str, Any]]:
    from mysqlbench.studies.analysis import swept_as_used

    used = swept_as_used(spec, rows, recorder.store.server_snapshot)
    return [] if used is None else [(USED_TITLE, used)]


def reproduce(recorder: TaskRecorder, spec: StudySpec, workload: StudyWorkload,
              rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """For a rerun (``rerun_of`` set): each point's verdict against the original, with the
    differences it was allowed to run with (the host compared when the rerun measured on one)."""
    params = recorder.context["params"]
    if not params.get(rerun.RERUN_OF):
        return None
    store = recorder.store
    original = rerun.load_original(store, spec.study, params[rerun.RERUN_OF])
    hosts = {r["host_hash"] for r in rows if r.get("host_hash")}
    stated = rerun.check(original, spec.model_dump(by_alias=True, mode="json"),
                         {r["server_version"] for r in rows if r.get("server_version")},
                         next(iter(hosts)) if len(hosts) == 1 else None, store, True)
    verdicts = rerun.verdicts(store, original, rows, workload.primary, spec.min_effect, stated)
    return {"original": original.run_id, "original_valid": original.valid, "band": spec.min_effect,
            "differences": stated, "verdicts": verdicts,
            "reproduced": bool(verdicts) and all(v["reproduced"] for v in verdicts)}


def publish(validation: dict[str, Any] | None, report_out: dict[str, Any] | None) -> dict[str, Any]:
    """Succeeds, emitting the study's Asset event, only for a valid run."""
    if not validation or not validation.get("success"):
        raise MysqlbenchError(f"study run is INVALID: {(validation or {}).get('failures', 'no validation')}; "
                              f"report: {(report_out or {}).get('html')}")
    return {"report": report_out["html"]}
