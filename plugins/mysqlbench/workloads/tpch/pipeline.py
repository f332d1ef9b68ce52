"""The steps of the ``tpch_load`` DAG as plain functions: each takes the validated params and a
:class:`~mysqlbench.recording.TaskRecorder`, does its work, records its samples and returns a
small, secret-free dict for XCom. The DAG file only wires them together."""

from __future__ import annotations

import logging
import time
from typing import Any

from mysqlbench import ownership
from mysqlbench.errors import MysqlbenchError
from mysqlbench.params import validate_params
from mysqlbench.recording import TaskRecorder
from mysqlbench.results.store import Sample
from mysqlbench.targets.connection import TargetConnection
from mysqlbench.targets.lock import building, end_build, exclusive
from mysqlbench.targets.managed import check_host_bounds, ensure_running
from mysqlbench.workloads.tpch import dataset, generate, validate
from mysqlbench.workloads.tpch.models import TpchLoadParams

log = logging.getLogger(__name__)

STUDY = "tpch_load"


def check_params(raw: dict[str, Any]) -> dict[str, Any]:
    """Validate the params and the target's connection without contacting the server: shape,
    allow-listed names, a defined connection, and a target marked for destructive steps."""
    params = validate_params(TpchLoadParams, raw)
    target = TargetConnection.from_airflow(params.target_conn_id)
    # a redo log the datadir's disk cannot hold would fail half way through the load: refused first
    check_host_bounds(target, {"load_redo_log_size": [params.load_redo_log_size]})
    ensure_running(target)  # our own instance, down after a reboot: up, so it can prove what it is
    target.require_benchmark_target(f"load TPC-H into schema {params.schema_name!r}")
    checked = params.model_dump(by_alias=True)
    check_disk(checked, target)
    log.info("params ok: %s on %s (control %s)", checked, target.conn_id, target.control)
    return checked


# Measured here at SF 1: 1.07 GB of .tbl files; the loaded schema with its keys and indexes takes
# about 1.9 GB in the datadir. Asked for with a margin, before anything is generated or loaded.
FILE_BYTES_PER_SF = 1.2e9
DATADIR_BYTES_PER_SF = 2.5e9


def check_disk(params: dict[str, Any], target: TargetConnection) -> None:
    """Enough free space for the generated files (unless they are there) and, for a managed
    target on this host, for the loaded schema; else a clear error before anything starts."""
    import shutil

    from mysqlbench import paths
    from mysqlbench.errors import InvalidInput

    sf = params["scale_factor"]
    needs = []
    if generate.read_manifest(generate.dataset_dir(sf)) is None:
        needs.append(("the generated files", paths.work_dir(), FILE_BYTES_PER_SF * sf))
    if target.managed_proven:
        from mysqlbench.targets.managed import ManagedServer, ManagedSpec

        root = ManagedServer(ManagedSpec.load(target.managed_target)).root
        needs.append(("the loaded schema", root if root.exists() else paths.work_dir(), DATADIR_BYTES_PER_SF * sf))
    for what, where, need in needs:
        free = shutil.disk_usage(where).free
        if free < need:
            raise InvalidInput(f"TPC-H SF {sf:g} needs about {need / 1e9:.1f} GB for {what} under {where}; "
                               f"{free / 1e9:.1f} GB are free")


def _target(params: dict[str, Any]) -> TargetConnection:
    return TargetConnection.from_airflow(params["target_conn_id"])


def ensure_managed_running(params: dict[str, Any]) -> None:
    ensure_running(_target(params))


def generate_data(params: dict[str, Any], recorder: TaskRecorder) -> dict[str, Any]:
    manifest = generate.ensure_generated(params["scale_factor"])
    recorder.store.keep_dataset(manifest)
    if manifest["reused"]:
        sample = Sample("generate_seconds", None, "s", status="skipped", metadata={"reused": True})
    else:
        sample = Sample("generate_seconds", manifest["generated_seconds"], "s", metadata={"reused": False})
    recorder.record([sample], dataset_id=manifest["dataset_id"])
    return _summary(manifest)


def _summary(manifest: dict[str, Any]) -> dict[str, Any]:
    return {"dataset_id": manifest["dataset_id"], "scale_factor": manifest["scale_factor"],
            "reused_files": manifest["reused"],
            "rows": {table: entry["rows"] for table, entry in manifest["tables"].items()}}


def plan(params: dict[str, Any], data: dict[str, Any]) -> str:
    """``reuse_dataset`` when the schema already holds this dataset, verified; else ``create_tables``."""
    ensure_managed_running(params)
    target = _target(params)
    conn = target.connect()
    try:
        marker = ownership.read_marker(conn, params["schema"])
        if marker.get("state") == "verified" and marker.get("dataset_id") == data["dataset_id"]:
            # reading every table would spoil another study's measured window: hold the target
            with exclusive(target, "check the dataset's fingerprint", dataset=params["schema"]):
                changed = validate.changes_since_verified(conn, params["schema"], marker, contents=True)
            if not changed:
                return "reuse_dataset"
            log.warning("schema %s no longer holds dataset %s as verified at %s (%s): rebuilding it",
                        params["schema"], data["dataset_id"], marker.get("verified_at"), "; ".join(changed))
            ownership.require_owned(conn, target, params["schema"])
            ownership.set_marker(conn, params["schema"], state="changed")
            return "create_tables"
    finally:
        conn.close()
    log.info("schema %s holds %s (state %s): loading %s", params["schema"], marker.get("dataset_id"),
             marker.get("state"), data["dataset_id"])
    return "create_tables"


def reuse_dataset(params: dict[str, Any], data: dict[str, Any], recorder: TaskRecorder) -> dict[str, Any]:
    target = _target(params)
    conn = target.connect()
    try:
        verified_at = ownership.read_marker(conn, params["schema"]).get("verified_at")
    finally:
        conn.close()
    log.info("SKIPPING load: schema %s already holds dataset %s, verified at %s; nothing to do",
             params["schema"], data["dataset_id"], verified_at)
    recorder.record([Sample("dataset_reused", 1.0, "bool", metadata={"verified_at": verified_at})],
                    target=target, dataset_id=data["dataset_id"])
    return {"reused": True, "verified_at": verified_at}


def _create_tables(target, params, data) -> tuple[dict[str, Any], list[Sample]]:
    return dataset.create_tables(target, params["schema"]), []


def _load(target, params, data) -> tuple[dict[str, Any], list[Sample]]:
    # Runs where the files are: if this worker has no intact copy (another host), it regenerates
    # the same deterministic files, and the checksums must match what the generate task recorded.
    manifest = generate.ensure_generated(params["scale_factor"])
    if manifest["dataset_id"] != data["dataset_id"]:
        raise MysqlbenchError(f"this worker's files are dataset {manifest['dataset_id']}, "
                              f"the generate task made {data['dataset_id']}")
    redo = validate_params(TpchLoadParams, params).redo_log_bytes()
    result = dataset.load_tables(target, params["schema"], manifest, streams=params["load_streams"],
                                 redo_log_size=redo)
    samples = [Sample("load_seconds", result["seconds"], "s",
                      metadata={"streams": result["streams"], "profile": result["profile"]})]
    samples += [Sample("table_load_seconds", entry["seconds"], "s", metadata={"table": table, "rows": entry["rows"]})
                for table, entry in result["tables"].items()]
    return {"seconds": result["seconds"], "profile": result["profile"]}, samples


def _add_constraints(target, params, data) -> tuple[dict[str, float], list[Sample]]:
    timings = dataset.add_constraints(target, params["schema"])
    return timings, [Sample("constraint_seconds", seconds, "s", metadata={"statement": head})
                     for head, seconds in timings.items()]


def _rename_tables(target, params, data) -> tuple[None, list[Sample]]:
    dataset.rename_tables(target, params["schema"])
    return None, []


def _analyze(target, params, data) -> tuple[dict[str, float], list[Sample]]:
    timings = dataset.analyze_tables(target, params["schema"])
    return timings, [Sample("analyze_seconds", seconds, "s", metadata={"table": table})
                     for table, seconds in timings.items()]


# The dataset path, once: tpch_load runs each step as its own task, a study's ensure_dataset runs
# them in one task; both with the same params (TpchLoadParams) and the same samples.
STEPS = {"create_tables": _create_tables, "load": _load, "add_constraints": _add_constraints,
         "rename_tables": _rename_tables, "analyze": _analyze}


def build_id(recorder: TaskRecorder) -> str:
    """The dataset build a tpch_load run is: its steps share one hold on the dataset."""
    ti = recorder.context["ti"]
    return f"{ti.dag_id}/{ti.run_id}"


def run_step(name: str, params: dict[str, Any], data: dict[str, Any], recorder: TaskRecorder) -> Any:
    """One dataset step as its own task: the dataset stays held by this build from its first step
    to its verification (nothing measures or rebuilds it in between), the target during the step."""
    target = _target(params)
    with building(target, params["schema"], build_id(recorder)):
        result, samples = STEPS[name](target, params, data)
    recorder.record(samples, target=target, dataset_id=data["dataset_id"])
    return result


def _verify(target: TargetConnection, schema: str, manifest: dict[str, Any], dataset_id: str):
    """Great Expectations over the loaded schema; on success the schema is marked verified."""
    from datetime import datetime, timezone

    conn = target.connect()
    try:
        ownership.require_owned(conn, target, schema)
        result = validate.validate_dataset(conn, schema, manifest)
        marker = ownership.read_marker(conn, schema)
        if result.success and marker.get("state") == "verified" and marker.get("dataset_id") == dataset_id \
                and marker.get("fingerprint"):
            pass  # re-proved on reuse: plan() has just compared it with its fingerprint, which stays
        elif result.success:
            with conn.cursor() as cur:
                cur.execute("SELECT NOW(6)")
                server_time = str(cur.fetchone()[0])
            ownership.set_marker(conn, schema, state="verified", dataset_id=dataset_id,
                                 verified_at=datetime.now(timezone.utc).isoformat(), verified_server_time=server_time,
                                 fingerprint=validate.fingerprint(conn, schema))
    finally:
        conn.close()
    return result


def validate_dataset(params: dict[str, Any], data: dict[str, Any], recorder: TaskRecorder) -> dict[str, Any]:
    manifest = generate.read_manifest(generate.dataset_dir(params["scale_factor"])) or {}
    if manifest.get("dataset_id") != data["dataset_id"]:
        manifest = {"scale_factor": data["scale_factor"], "dataset_id": data["dataset_id"],
                    "tables": {table: {"rows": rows} for table, rows in data["rows"].items()}}
    target = _target(params)
    try:
        with building(target, params["schema"], build_id(recorder)):
            result = _verify(target, params["schema"], manifest, data["dataset_id"])
    finally:
        end_build(target, params["schema"], build_id(recorder))
    recorder.record([], [result], target=target, dataset_id=data["dataset_id"])
    if not result.success:
        raise MysqlbenchError(f"dataset validation failed: {result.failures}")
    log.info("dataset %s in %s verified: %d checks passed", data["dataset_id"], params["schema"],
             result.statistics["checks"])
    return {"success": True, "checks": result.statistics["checks"]}

def ensure_dataset(params: dict[str, Any], recorder: TaskRecorder) -> dict[str, Any]:
    """The whole of ``tpch_load`` in one task, for a study that needs its dataset: the same steps
    with the same params, skipped when the schema already holds this dataset, verified."""
    params = validate_params(TpchLoadParams, params).model_dump(by_alias=True)
    check_disk(params, _target(params))
    manifest = generate.ensure_generated(params["scale_factor"])
    recorder.store.keep_dataset(manifest)
    data = _summary(manifest)
    target = _target(params)
    if plan(params, data) == "reuse_dataset":
        log.info("dataset %s already loaded and verified in %s: not reloading", data["dataset_id"], params["schema"])
        recorder.record([Sample("dataset_reused", 1.0, "bool")], target=target, dataset_id=data["dataset_id"])
        return data
    samples: list[Sample] = []
    with exclusive(target, "build the dataset", dataset=params["schema"]):
        for name, step in STEPS.items():
            started = time.monotonic()
            samples += step(target, params, data)[1]
            log.info("dataset step %s done in %.1f s", name, time.monotonic() - started)
        result = _verify(target, params["schema"], manifest, data["dataset_id"])
    recorder.record(samples, [result], target=target, dataset_id=data["dataset_id"])
    if not result.success:
        raise MysqlbenchError(f"dataset validation failed: {result.failures}")
    return data


def release_build(params: dict[str, Any], recorder: TaskRecorder) -> None:
    """tpch_load's teardown: a build that failed half-way gives the dataset back at once instead of
    when its lease runs out."""
    end_build(_target(params), params["schema"], build_id(recorder))
