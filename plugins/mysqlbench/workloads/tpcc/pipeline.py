"""The steps of the ``tpcc_load`` DAG as plain functions of the validated params and a
:class:`~mysqlbench.recording.TaskRecorder`, as for TPC-H: check, plan (reuse a verified, unchanged
dataset or build it), create, load, index, analyze, validate with Great Expectations. A study's
dataset step runs the same steps in one task."""

from __future__ import annotations

import logging
import shutil
import time
from datetime import datetime, timezone
from typing import Any

from mysqlbench import ownership, paths
from mysqlbench.errors import InvalidInput, MysqlbenchError
from mysqlbench.fingerprint import changes_since_verified
from mysqlbench.params import validate_params
from mysqlbench.recording import TaskRecorder
from mysqlbench.results.store import Sample
from mysqlbench.targets.connection import TargetConnection
from mysqlbench.targets.lock import building, end_build, exclusive
from mysqlbench.targets.managed import ensure_running
from mysqlbench.workloads.tpcc import dataset, generate, validate
from mysqlbench.workloads.tpcc.models import TpccLoadParams
from mysqlbench.workloads.tpch.pipeline import build_id

log = logging.getLogger(__name__)

STUDY = "tpcc_load"
# Measured here: one warehouse takes about 75 MB of files (deleted as they load; two warehouses are
# in flight at most) and about 110 MB in the datadir with its indexes. Asked for with a margin.
FILE_BYTES_IN_FLIGHT = 3 * 80e6
DATADIR_BYTES_PER_WAREHOUSE = 160e6


def _target(params: dict[str, Any]) -> TargetConnection:
    return TargetConnection.from_airflow(params["target_conn_id"])


def check_params(raw: dict[str, Any]) -> dict[str, Any]:
    """Shape, allow-listed names, a defined and marked target, and the disk space, before the
    server sees anything."""
    params = validate_params(TpccLoadParams, raw).model_dump(by_alias=True)
    target = _target(params)
    ensure_running(target)
    target.require_benchmark_target(f"load TPC-C into schema {params['schema']!r}")
    check_disk(params, target)
    log.info("params ok: %s on %s (dataset %s)", params, target.conn_id,
             generate.dataset_id(params["warehouses"], params["data_seed"]))
    return params


def check_disk(params: dict[str, Any], target: TargetConnection) -> None:
    needs = [("the generated files in flight", paths.work_dir(), FILE_BYTES_IN_FLIGHT)]
    if target.managed_proven:
        from mysqlbench.targets.managed import ManagedServer, ManagedSpec

        root = ManagedServer(ManagedSpec.load(target.managed_target)).root
        needs.append(("the loaded schema", root if root.exists() else paths.work_dir(),
                      DATADIR_BYTES_PER_WAREHOUSE * params["warehouses"]))
    for what, where, need in needs:
        where.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(where).free
        if free < need:
            raise InvalidInput(f"TPC-C with {params['warehouses']} warehouses needs about {need / 1e9:.1f} GB for "
                               f"{what} under {where}; {free / 1e9:.1f} GB are free")


def data_of(params: dict[str, Any]) -> dict[str, Any]:
    warehouses, seed = params["warehouses"], params["data_seed"]
    return {"dataset_id": generate.dataset_id(warehouses, seed), "warehouses": warehouses, "data_seed": seed,
            "c_load": generate.c_load(seed), "generator_version": generate.GENERATOR_VERSION}


def plan(params: dict[str, Any]) -> str:
    """``reuse_dataset`` when the schema holds this dataset, verified and unchanged (checksums
    compared under the target's hold); else ``create_tables``."""
    target = _target(params)
    ensure_running(target)
    data = data_of(params)
    conn = target.connect()
    try:
        marker = ownership.read_marker(conn, params["schema"])
        if marker.get("state") == "verified" and marker.get("dataset_id") == data["dataset_id"]:
            with exclusive(target, "check the dataset's fingerprint", dataset=params["schema"]):
                changed = changes_since_verified(conn, params["schema"], marker, contents=True)
            if not changed:
                return "reuse_dataset"
            log.warning("schema %s no longer holds dataset %s as verified (%s): rebuilding it", params["schema"],
                        data["dataset_id"], "; ".join(changed))
            ownership.require_owned(conn, target, params["schema"])
            ownership.set_marker(conn, params["schema"], state="changed")
    finally:
        conn.close()
    return "create_tables"


def reuse_dataset(params: dict[str, Any], recorder: TaskRecorder) -> dict[str, Any]:
    data = data_of(params)
    log.info("SKIPPING load: schema %s already holds dataset %s, verified and unchanged", params["schema"],
             data["dataset_id"])
    recorder.record([Sample("dataset_reused", 1.0, "bool")], target=_target(params), dataset_id=data["dataset_id"])
    return {"reused": True, **data}


def _create_tables(target, params) -> tuple[dict[str, Any], list[Sample]]:
    return dataset.create_tables(target, params["schema"]), []


def _load(target, params) -> tuple[dict[str, Any], list[Sample]]:
    result = dataset.load_tables(target, params["schema"], params["warehouses"], params["data_seed"],
                                 streams=params["load_streams"])
    samples = [Sample("load_seconds", result["seconds"], "s",
                      metadata={"streams": result["streams"], "warehouses": params["warehouses"]})]
    samples += [Sample("table_load_seconds", seconds, "s", metadata={"table": table, "rows": result["rows"][table]})
                for table, seconds in result["table_seconds"].items()]
    return {"seconds": result["seconds"], "rows": result["rows"]}, samples


def _add_indexes(target, params) -> tuple[dict[str, float], list[Sample]]:
    timings = dataset.add_indexes(target, params["schema"])
    return timings, [Sample("index_seconds", seconds, "s", metadata={"statement": head})
                     for head, seconds in timings.items()]


def _analyze(target, params) -> tuple[dict[str, float], list[Sample]]:
    timings = dataset.analyze_tables(target, params["schema"])
    return timings, [Sample("analyze_seconds", seconds, "s", metadata={"table": table})
                     for table, seconds in timings.items()]


def _procedures(target, params) -> tuple[list[str], list[Sample]]:
    return dataset.install_procedures(target, params["schema"]), []


STEPS = {"create_tables": _create_tables, "load": _load, "add_indexes": _add_indexes, "analyze": _analyze,
         "procedures": _procedures}


def run_step(name: str, params: dict[str, Any], recorder: TaskRecorder) -> Any:
    """One dataset step as its own task, under the build's hold on the dataset."""
    target = _target(params)
    with building(target, params["schema"], build_id(recorder)):
        result, samples = STEPS[name](target, params)
    recorder.record(samples, target=target, dataset_id=data_of(params)["dataset_id"])
    return result


def _verify(target: TargetConnection, params: dict[str, Any]):
    """Great Expectations over the loaded schema; on success it is marked verified, with its
    fingerprint and the load's NURand constant (which the driver's must differ from)."""
    schema = params["schema"]
    data = data_of(params)
    conn = target.connect()
    try:
        ownership.require_owned(conn, target, schema)
        result = validate.validate_load(conn, schema, params["warehouses"])
        if result.success:
            with conn.cursor() as cur:
                cur.execute("SELECT NOW(6)")
                server_time = str(cur.fetchone()[0])
            ownership.set_marker(conn, schema, state="verified", dataset_id=data["dataset_id"],
                                 verified_at=datetime.now(timezone.utc).isoformat(), verified_server_time=server_time,
                                 fingerprint=validate.fingerprint(conn, schema), c_load=data["c_load"],
                                 warehouses=params["warehouses"])
    finally:
        conn.close()
    return result


def validate_dataset(params: dict[str, Any], recorder: TaskRecorder) -> dict[str, Any]:
    target = _target(params)
    data = data_of(params)
    try:
        with building(target, params["schema"], build_id(recorder)):
            result = _verify(target, params)
    finally:
        end_build(target, params["schema"], build_id(recorder))
    recorder.record([], [result], target=target, dataset_id=data["dataset_id"])
    if not result.success:
        raise MysqlbenchError(f"TPC-C dataset validation failed: {result.failures}")
    log.info("dataset %s in %s verified: %d checks passed", data["dataset_id"], params["schema"],
             result.statistics["checks"])
    return {"success": True, "checks": result.statistics["checks"], **data}


def ensure_dataset(params: dict[str, Any], recorder: TaskRecorder) -> dict[str, Any]:
    """The whole of ``tpcc_load`` in one task, for a study: skipped when the schema holds this
    dataset, verified and unchanged."""
    params = validate_params(TpccLoadParams, params).model_dump(by_alias=True)
    target = _target(params)
    check_disk(params, target)
    data = data_of(params)
    if plan(params) == "reuse_dataset":
        recorder.record([Sample("dataset_reused", 1.0, "bool")], target=target, dataset_id=data["dataset_id"])
        return data
    samples: list[Sample] = []
    with exclusive(target, "build the dataset", dataset=params["schema"]):
        for name, step in STEPS.items():
            started = time.monotonic()
            samples += step(target, params)[1]
            log.info("dataset step %s done in %.1f s", name, time.monotonic() - started)
        result = _verify(target, params)
    recorder.record(samples, [result], target=target, dataset_id=data["dataset_id"])
    if not result.success:
        raise MysqlbenchError(f"TPC-C dataset validation failed: {result.failures}")
    return data


def release_build(params: dict[str, Any], recorder: TaskRecorder) -> None:
    end_build(_target(params), params["schema"], build_id(recorder))
