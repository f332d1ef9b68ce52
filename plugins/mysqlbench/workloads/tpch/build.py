"""TPC-H's dataset, declared to the lifecycle (:mod:`mysqlbench.workloads.lifecycle`): generate the
files with tpchgen-cli (identify), create dbgen's tables, load, add the seeds' constraints, rename
to lower case, analyze; Great Expectations over row counts, keys and indexes. The ``tpch_load``
DAG runs each step as its task; a TPC-H study runs them in its dataset step."""

from __future__ import annotations

import logging
from typing import Any

from mysqlbench.workloads.lifecycle import DatasetBuild, StepOutcome, analyze_tables, datadir_root
from mysqlbench.workloads.tpch.models import TpchLoadParams

log = logging.getLogger(__name__)

# Measured here at SF 1: 1.07 GB of .tbl files; the loaded schema with its keys and indexes takes
# about 1.9 GB in the datadir. Asked for with a margin, before anything is generated or loaded.
FILE_BYTES_PER_SF = 1.2e9
DATADIR_BYTES_PER_SF = 2.5e9


class TpchBuild(DatasetBuild):
    what = "TPC-H"
    params_model = TpchLoadParams
    steps = ("create_tables", "load", "add_constraints", "rename_tables", "analyze")
    generates_files = True
    params: TpchLoadParams

    @property
    def schema(self) -> str:
        return self.params.schema_name

    # -- before anything starts ------------------------------------------------------------------
    def check_bounds(self) -> None:
        from mysqlbench.targets.managed import check_host_bounds

        # a redo log the datadir's disk cannot hold would fail half way through the load
        check_host_bounds(self.target, {"load_redo_log_size": [self.params.load_redo_log_size]})

    def disk_needs(self):
        from mysqlbench import paths
        from mysqlbench.workloads.tpch import generate

        sf = self.params.scale_factor
        needs = []
        if generate.read_manifest(generate.dataset_dir(sf)) is None:
            needs.append((f"SF {sf:g}'s generated files", paths.work_dir(), FILE_BYTES_PER_SF * sf))
        root = datadir_root(self.target)
        if root is not None:
            needs.append((f"SF {sf:g}'s loaded schema", root, DATADIR_BYTES_PER_SF * sf))
        return needs

    # -- what it is --------------------------------------------------------------------------------
    def identify(self, recorder=None) -> dict[str, Any]:
        """Generate the files (or find them intact; tpchgen-cli is deterministic), keep the
        manifest in the results store and record how long generating took."""
        from mysqlbench.results.store import Sample
        from mysqlbench.workloads.tpch import generate

        manifest = generate.ensure_generated(self.params.scale_factor)
        if recorder is not None:
            recorder.store.keep_dataset(manifest)
            if manifest["reused"]:
                sample = Sample("generate_seconds", None, "s", status="skipped", metadata={"reused": True})
            else:
                sample = Sample("generate_seconds", manifest["generated_seconds"], "s", metadata={"reused": False})
            recorder.record([sample], dataset_id=manifest["dataset_id"])
        return {"dataset_id": manifest["dataset_id"], "scale_factor": manifest["scale_factor"],
                "reused_files": manifest["reused"],
                "rows": {table: entry["rows"] for table, entry in manifest["tables"].items()}}

    def _manifest(self, data: dict[str, Any]) -> dict[str, Any]:
        from mysqlbench.workloads.tpch import generate

        manifest = generate.read_manifest(generate.dataset_dir(self.params.scale_factor)) or {}
        if manifest.get("dataset_id") == data["dataset_id"]:
            return manifest
        # another worker generated them: what that task recorded is what the schema must hold
        return {"scale_factor": data["scale_factor"], "dataset_id": data["dataset_id"],
                "tables": {table: {"rows": rows} for table, rows in data["rows"].items()}}

    # -- the steps ---------------------------------------------------------------------------------
    def create_tables(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.workloads.tpch import dataset

        with self.target.session() as conn:
            dataset.create_tables(conn, self.schema)
        return StepOutcome()

    def load(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.errors import MysqlbenchError
        from mysqlbench.results.store import Sample
        from mysqlbench.workloads.tpch import dataset, generate

        # Runs where the files are: a worker without an intact copy (another host) regenerates the
        # same deterministic files, and their checksums must match what identify recorded.
        manifest = generate.ensure_generated(self.params.scale_factor)
        if manifest["dataset_id"] != data["dataset_id"]:
            raise MysqlbenchError(f"this worker's files are dataset {manifest['dataset_id']}, "
                                  f"the generate task made {data['dataset_id']}")
        result = dataset.load_tables(self.target, self.schema, manifest, streams=self.params.load_streams,
                                     redo_log_size=self.params.redo_log_bytes())
        samples = [Sample("load_seconds", result["seconds"], "s",
                          metadata={"streams": result["streams"], "profile": result["profile"]})]
        samples += [Sample("table_load_seconds", entry["seconds"], "s", metadata={"table": table, "rows": entry["rows"]})
                    for table, entry in result["tables"].items()]
        return StepOutcome({"seconds": result["seconds"], "profile": result["profile"]}, samples)

    def add_constraints(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.results.store import Sample
        from mysqlbench.workloads.tpch import dataset

        with self.target.session() as conn:
            timings = dataset.add_constraints(conn, self.schema)
        return StepOutcome(timings, [Sample("constraint_seconds", seconds, "s", metadata={"statement": head})
                                     for head, seconds in timings.items()])

    def rename_tables(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.workloads.tpch import dataset

        with self.target.session() as conn:
            dataset.rename_tables(conn, self.schema)
        return StepOutcome()

    def analyze(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.results.store import Sample
        from mysqlbench.workloads.tpch import TABLES

        with self.target.session() as conn:
            timings = analyze_tables(conn, self.schema, TABLES)
        return StepOutcome(timings, [Sample("analyze_seconds", seconds, "s", metadata={"table": table})
                                     for table, seconds in timings.items()])

    # -- the verdict -------------------------------------------------------------------------------
    def validate(self, conn, data: dict[str, Any]):
        from mysqlbench.workloads.tpch import validate

        return validate.validate_dataset(conn, self.schema, self._manifest(data))
