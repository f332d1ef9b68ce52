"""TPC-C behind the workload interface. A unit is one driver run (the transaction mix): N
terminals run the five transactions through stored procedures; the rampup runs before the
engine's measured window and the window holds only the measure phase (its counters and OS
samples are the measure phase's). Every repetition starts from the verified dataset: a managed
target's datadir is restored from the snapshot taken when the dataset was verified, a
connection-only target is reloaded. Before the rampup the tables' checksums are compared with the
verified ones; after the run Great Expectations checks consistency conditions 1-4. Results are
TPC-C-derived New-Orders per minute, never an official tpmC."""

from __future__ import annotations

import hashlib
import json
import logging
import statistics
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mysqlbench.errors import InvalidInput, MysqlbenchError
from mysqlbench.workloads.base import Answer, Better, Metric, Session, StudyWorkload, UnitResult
from mysqlbench.workloads.tpcc import driver as tpcc_driver
from mysqlbench.workloads.tpcc.models import TpccDataset

log = logging.getLogger(__name__)

UNITS = ("mix",)
MAX_CONNECTIONS = 1024


class TpccParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    connections: int = Field(default=8, ge=1, le=MAX_CONNECTIONS, description="terminals (one connection each)")
    rampup_s: float = Field(default=10, ge=0, le=86_400, description="seconds run before the measure window")
    measure_s: float = Field(default=60, gt=0, le=86_400, description="the measure window, seconds")
    interval_s: float = Field(default=10, gt=0, le=3600, description="time series interval, seconds")
    mix: dict[str, float] = Field(default_factory=lambda: dict(tpcc_driver.STANDARD_MIX),
                                  description="percent per transaction (new_order, payment, order_status, "
                                              "delivery, stock_level), summing to 100")
    think_time: bool = Field(default=False, description="the specification's keying and think times")

    @field_validator("mix")
    @classmethod
    def _mix(cls, value: dict[str, float]) -> dict[str, float]:
        try:
            return tpcc_driver.check_mix(value)
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _windows(self) -> "TpccParams":
        if self.interval_s > self.measure_s:
            raise ValueError(f"interval_s ({self.interval_s:g}) is longer than the measure window ({self.measure_s:g})")
        return self


def checksum_digest(fingerprint: dict[str, dict[str, Any]]) -> str:
    """One value for every table's CHECKSUM TABLE: what the executions frame compares."""
    return hashlib.sha256(json.dumps({t: v["checksum"] for t, v in sorted(fingerprint.items())}).encode()
                          ).hexdigest()[:16]


class TpccWorkload(StudyWorkload):
    name = "tpcc"
    label = "TPC-C-derived; New-Orders per minute are not an official TPC-C tpmC"
    unit_title = "run"
    primary = Metric("new_orders_per_min", "1/min", Better.HIGHER, "throughput")
    dataset_model = TpccDataset
    params_model = TpccParams
    warms_in_window = True
    changes_dataset = True

    @classmethod
    def check_units(cls, units: list[str], dataset: TpccDataset) -> None:
        unknown = sorted(set(units) - set(UNITS))
        if unknown:
            raise InvalidInput(f"unknown TPC-C unit(s) {unknown}; a TPC-C study measures {list(UNITS)} "
                               "(the transaction mix is workload_params.mix)")

    # -- dataset --------------------------------------------------------------------------------
    def _load_params(self, target) -> dict[str, Any]:
        return {**self.spec.dataset.model_dump(by_alias=True), "target_conn_id": target.conn_id}

    def ensure_dataset(self, target, recorder) -> dict[str, Any]:
        """The verified dataset (loaded, or reused while unchanged), its procedures, and on a
        managed target a datadir snapshot of it that every repetition starts from. The
        connection limit is checked here, before any point changes the server."""
        from mysqlbench import ownership
        from mysqlbench.targets.lock import exclusive
        from mysqlbench.workloads.tpcc import dataset, pipeline

        self._check_connections(target)
        schema = self.spec.dataset.schema_name
        control = self._control(target)
        wanted = pipeline.data_of(self._load_params(target))["dataset_id"]
        if control is not None and control.has_snapshot(wanted) and self._marker(target).get("dataset_id") == wanted:
            # the last study left its runs' changes: the verified bytes come back from the snapshot
            with exclusive(target, "restore the dataset's snapshot", dataset=schema) as lock:
                self._restore(target, control, wanted, lock.token)
                control.start(holder=lock.token)
        data = pipeline.ensure_dataset(self._load_params(target), recorder)
        dataset.install_procedures(target, schema)
        snapshot = None
        if control is not None:
            with exclusive(target, "snapshot the dataset", dataset=schema) as lock:
                if not control.has_snapshot(data["dataset_id"]):
                    conn = target.connect()
                    try:
                        holds = ownership.datasets(conn)
                    finally:
                        conn.close()
                    snapshot = control.snapshot(data["dataset_id"], holder=lock.token)
                    (control.snapshot_dir(data["dataset_id"]).parent / f"{data['dataset_id']}.json").write_text(
                        json.dumps(holds, indent=2))
        return {**data, "snapshot": snapshot}

    def _restore(self, target, control, dataset_id: str, holder: str) -> dict[str, Any]:
        """The datadir snapshot holds every schema of the instance: refuse when another dataset
        was built or changed after it (restoring would silently take it back)."""
        from mysqlbench import ownership

        record = control.snapshot_dir(dataset_id).parent / f"{dataset_id}.json"
        if control.is_running() and record.exists():
            then = json.loads(record.read_text())
            conn = target.connect()
            try:
                now = ownership.datasets(conn)
            finally:
                conn.close()
            others = sorted(s for s in set(then) | set(now) if s != self.spec.dataset.schema_name
                            and then.get(s) != now.get(s))
            if others:
                raise MysqlbenchError(
                    f"restoring the snapshot of {dataset_id} on {target.conn_id} would take back schema(s) {others}, "
                    "built or changed after it (the snapshot is the whole datadir); give TPC-C its own managed "
                    f"target, or remove {control.snapshot_dir(dataset_id)} so the next study takes a new one")
        return control.restore(dataset_id, holder=holder)

    def _check_connections(self, target) -> None:
        from mysqlbench import knobs

        conn = target.connect()
        try:
            limit = int(knobs.read_variable(conn, "max_connections", "global"))
        finally:
            conn.close()
        # the engine's own sessions (measuring, counters, kills) need a few more
        if self.params.connections + 5 > limit:
            raise InvalidInput(f"{self.params.connections} connections (plus 5 for the engine) exceed "
                               f"{target.conn_id}'s max_connections = {limit}")

    @staticmethod
    def _control(target):
        if not target.managed_proven:
            return None
        from mysqlbench.targets.managed import ManagedServer, ManagedSpec

        return ManagedServer(ManagedSpec.load(target.managed_target))

    def _marker(self, target) -> dict[str, Any]:
        from mysqlbench import ownership

        conn = target.connect()
        try:
            return ownership.read_marker(conn, self.spec.dataset.schema_name)
        finally:
            conn.close()

    def check_dataset(self, target, dataset_id: str) -> None:
        marker = self._marker(target)
        if marker.get("state") != "verified" or marker.get("dataset_id") != dataset_id:
            raise MysqlbenchError(f"schema {self.spec.dataset.schema_name} no longer holds the verified dataset "
                                  f"{dataset_id} (it holds {marker.get('dataset_id')}, {marker.get('state')}): "
                                  "run the study again")
        control = self._control(target)
        if control is not None and not control.has_snapshot(dataset_id):
            raise MysqlbenchError(f"no snapshot of dataset {dataset_id} on {target.conn_id}: run the study again "
                                  "(its dataset step takes it)")

    def reset_dataset(self, target, control, holder: str) -> dict[str, Any]:
        from mysqlbench.workloads.tpcc import pipeline
        from mysqlbench.workloads.tpcc.generate import dataset_id as id_of

        wanted = id_of(self.spec.dataset.warehouses, self.spec.dataset.data_seed)
        if control is not None:
            return {"how": "datadir snapshot", **self._restore(target, control, wanted, holder)}
        started = time.monotonic()  # connection only: load it again (the point already holds the target)
        params = self._load_params(target)
        for step in pipeline.STEPS.values():
            step(target, params)
        result = pipeline._verify(target, params)
        if not result.success:
            raise MysqlbenchError(f"reloading dataset {wanted} failed validation: {result.failures}")
        return {"how": "reload", "seconds": round(time.monotonic() - started, 3)}

    # -- one run ----------------------------------------------------------------------------------
    def prepare(self, unit: str) -> tpcc_driver.DriverConfig:
        p = self.params
        return tpcc_driver.DriverConfig(warehouses=self.spec.dataset.warehouses, connections=p.connections,
                                        rampup_s=p.rampup_s, measure_s=p.measure_s, interval_s=p.interval_s,
                                        mix=p.mix, think_time=p.think_time)

    def measure(self, session: Session, config: tpcc_driver.DriverConfig, repetition: int) -> UnitResult:
        from mysqlbench import ownership
        from mysqlbench.results.store import TimeSeries
        from mysqlbench.workloads.tpcc.validate import check_consistency, fingerprint

        schema = session.schema
        marker = ownership.read_marker(session.conn, schema)
        # the data this run starts from, against the verified dataset's (outside the window)
        expected = checksum_digest(marker["fingerprint"])
        found = checksum_digest(fingerprint(session.conn, schema))
        driver = tpcc_driver.Driver(config, lambda: session.target.connect(database=schema), marker["c_load"])
        driver.start()
        try:
            deadline = driver.started + config.rampup_s
            while time.perf_counter() < deadline and not session.window.aborted:
                time.sleep(0.05)

            def window() -> None:  # the measure phase only: the terminals are already running
                end = driver.started + config.rampup_s + config.measure_s
                while time.perf_counter() < end and not session.window.aborted:
                    time.sleep(0.05)

            measured = session.window.run(window, kill=driver.stop)
        finally:
            driver.stop()
        if measured.error is not None:
            raise measured.error
        if driver.failures:
            raise MysqlbenchError(f"a TPC-C terminal failed: {driver.failures[0]!r}")
        out = tpcc_driver.results(driver.records, config)
        consistency = check_consistency(session.conn, schema)
        problems = [] if found == expected else [f"started from other data than the verified dataset (table "
                                                  f"checksums {found}, verified {expected})"]
        problems += [f"{f['check']} ({f.get('unexpected_count')} rows)" for f in consistency.failures]
        verdict = "; ".join(problems) or "match"
        metrics: dict[str, tuple[float | None, str]] = {
            "new_orders_per_min": (out["new_orders_per_min"], "1/min"),
            "transactions_per_s": (out["transactions"] / config.measure_s, "1/s"),
        }
        for kind, stats in out["per_type"].items():
            metrics[f"{kind}_count"] = (float(stats["ok"]), "count")
            metrics[f"{kind}_rollbacks"] = (float(stats["rollbacks"]), "count")
            metrics[f"{kind}_errors"] = (float(stats["errors"]), "count")
            metrics[f"{kind}_retries"] = (float(stats["retries"]), "count")
            for q in ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms"):
                metrics[f"{kind}_{q}"] = (stats[q], "ms")
        offsets = [i["end_s"] for i in out["intervals"]]
        after_rampup = [i["new_orders_per_min"] for i in out["intervals"]
                        if i["end_s"] - config.interval_s >= config.rampup_s - 1e-9]
        if len(after_rampup) >= 2 and statistics.fmean(after_rampup) > 0:
            # the seeds judged stability from throughput over time: its coefficient of variation
            metrics["stability_cv"] = (statistics.stdev(after_rampup) / statistics.fmean(after_rampup), "ratio")
        series = {
            "new_orders_per_min": (TimeSeries(offsets, [i["new_orders_per_min"] for i in out["intervals"]],
                                              config.interval_s, config.rampup_s), "1/min"),
            "p95_latency_ms": (TimeSeries(offsets, [i["p95_ms"] for i in out["intervals"]], config.interval_s,
                                          config.rampup_s), "ms"),
        }
        return UnitResult(
            status="ok", primary=out["new_orders_per_min"], metrics=metrics, counters=measured.counters,
            os=measured.os, os_samples=measured.os_samples, series=series,
            answer=Answer(rows=out["new_orders"], checksum=found, oracle=verdict),
            facts={"dataset_checksum": {"expected": expected, "found": found}, "errors": out["errors"],
                   "consistency": {"success": consistency.success, "failures": consistency.failures},
                   "per_type": out["per_type"]})

    def expectations(self, frame) -> list[Any]:
        """Every run started from the verified data and left it consistent (the oracle column: the
        checksums before the rampup equal the verified ones, and GX found conditions 1-4 intact
        after the run), and every point started from the same data (one checksum)."""
        import great_expectations as gx

        from mysqlbench.checks import condition

        out = [gx.expectations.ExpectColumnValuesToBeInSet(column="oracle", value_set=["match"],
                                                           **condition(status="ok"),
                                                           meta={"check": "tpcc_consistency_after_run"})]
        out.append(gx.expectations.ExpectColumnUniqueValueCountToBeBetween(
            column="checksum", min_value=1, max_value=1, **condition(status="ok"),
            meta={"check": "same_data_every_point"}))
        return out

    def summary_counters(self) -> tuple[str, ...]:
        wanted = ("Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_data_written",
                  "Innodb_os_log_written", "Innodb_row_lock_waits")
        return tuple(c for c in wanted if c in self.spec.counters)
