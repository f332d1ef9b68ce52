"""TPC-C's dataset, declared to the lifecycle (:mod:`mysqlbench.workloads.lifecycle`): create
tpcc-mysql's nine tables, generate and load the population warehouse by warehouse, add the indexes
and foreign keys, analyze, install the driver's procedures; Great Expectations over the
population's rules and consistency conditions 1-4. The verified marker keeps the load's NURand
constant ``c_load`` (the driver's must differ from it). The ``tpcc_load`` DAG runs each step as its
task; a TPC-C study runs them in its dataset step, and a connection-only target's points rebuild
it between repetitions."""

from __future__ import annotations

from typing import Any

from mysqlbench.workloads.lifecycle import DatasetBuild, StepOutcome, analyze_tables, datadir_root
from mysqlbench.workloads.tpcc.models import TpccLoadParams

# Measured here: one warehouse takes about 75 MB of files (deleted as they load; two warehouses are
# in flight at most) and about 110 MB in the datadir with its indexes. Asked for with a margin.
FILE_BYTES_IN_FLIGHT = 3 * 80e6
DATADIR_BYTES_PER_WAREHOUSE = 160e6


class TpccBuild(DatasetBuild):
    what = "TPC-C"
    params_model = TpccLoadParams
    steps = ("create_tables", "load", "add_indexes", "analyze", "procedures")
    params: TpccLoadParams

    @property
    def schema(self) -> str:
        return self.params.schema_name

    def disk_needs(self):
        from mysqlbench import paths

        w = self.params.warehouses
        needs = [(f"{w} warehouses' generated files in flight", paths.work_dir(), FILE_BYTES_IN_FLIGHT)]
        root = datadir_root(self.target)
        if root is not None:
            needs.append((f"{w} warehouses' loaded schema", root, DATADIR_BYTES_PER_WAREHOUSE * w))
        return needs

    def identify(self, recorder=None) -> dict[str, Any]:
        """Deterministic from warehouses and seed: nothing is generated before the load."""
        from mysqlbench.workloads.tpcc import generate

        warehouses, seed = self.params.warehouses, self.params.data_seed
        return {"dataset_id": generate.dataset_id(warehouses, seed), "warehouses": warehouses, "data_seed": seed,
                "c_load": generate.c_load(seed), "generator_version": generate.GENERATOR_VERSION}

    def create_tables(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.workloads.tpcc import dataset

        with self.target.session() as conn:
            dataset.create_tables(conn, self.schema)
        return StepOutcome()

    def load(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.results.store import Sample
        from mysqlbench.workloads.tpcc import dataset

        p = self.params
        result = dataset.load_tables(self.target, self.schema, p.warehouses, p.data_seed, streams=p.load_streams)
        samples = [Sample("load_seconds", result["seconds"], "s",
                          metadata={"streams": result["streams"], "warehouses": p.warehouses})]
        samples += [Sample("table_load_seconds", seconds, "s", metadata={"table": table, "rows": result["rows"][table]})
                    for table, seconds in result["table_seconds"].items()]
        return StepOutcome({"seconds": result["seconds"], "rows": result["rows"]}, samples)

    def add_indexes(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.results.store import Sample
        from mysqlbench.workloads.tpcc import dataset

        with self.target.session() as conn:
            timings = dataset.add_indexes(conn, self.schema)
        return StepOutcome(timings, [Sample("index_seconds", seconds, "s", metadata={"statement": head})
                                     for head, seconds in timings.items()])

    def analyze(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.results.store import Sample
        from mysqlbench.workloads.tpcc import TABLES

        with self.target.session() as conn:
            timings = analyze_tables(conn, self.schema, TABLES)
        return StepOutcome(timings, [Sample("analyze_seconds", seconds, "s", metadata={"table": table})
                                     for table, seconds in timings.items()])

    def procedures(self, data: dict[str, Any]) -> StepOutcome:
        from mysqlbench.workloads.tpcc import dataset

        return StepOutcome(dataset.install_procedures(self.target, self.schema))

    def validate(self, conn, data: dict[str, Any]):
        from mysqlbench.workloads.tpcc import validate

        return validate.validate_load(conn, self.schema, self.params.warehouses)

    def verified_facts(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"c_load": data["c_load"], "warehouses": self.params.warehouses}
