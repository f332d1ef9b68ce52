"""A test-only workload: the engine's second user, shaped like a driver rather than a query. A unit
is a timed window in which one connection runs point selects (or sleeps) in a loop; it reports
statements per second as its primary metric (higher is better) and a throughput time series per
interval with a rampup, the way a TPC-C or sysbench driver will. Registered for the tests with
MYSQLBENCH_WORKLOADS=probe=probe_workload:ProbeWorkload."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mysqlbench import ownership
from mysqlbench.errors import InvalidInput
from mysqlbench.identifiers import quote
from mysqlbench.params import DatasetBase
from mysqlbench.results.store import TimeSeries
from mysqlbench.workloads.base import Better, Metric, StudyWorkload, UnitResult

UNITS = {"point_select": "SELECT v FROM probe WHERE id = %s", "sleep": "SELECT SLEEP(0.2)"}


class ProbeDataset(DatasetBase):
    schema_name: str = Field(default="probe", alias="schema")
    rows: int = Field(default=1000, ge=1, le=1_000_000)


class ProbeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    window_s: float = Field(default=3.0, gt=0, le=3600)
    interval_s: float = Field(default=1.0, gt=0, le=60)
    rampup_s: float = Field(default=1.0, ge=0, le=3600)


class ProbeWorkload(StudyWorkload):
    name = "probe"
    label = "test-only probe workload (not a benchmark)"
    unit_title = "window"
    primary = Metric("statements_per_s", "1/s", Better.HIGHER, "throughput")
    dataset_model = ProbeDataset
    params_model = ProbeParams
    warms_in_window = True

    @classmethod
    def check_units(cls, units, dataset) -> None:
        unknown = sorted(set(units) - set(UNITS))
        if unknown:
            raise InvalidInput(f"unknown probe units {unknown}; known: {sorted(UNITS)}")

    def ensure_dataset(self, target, recorder) -> dict[str, Any]:
        schema, rows = self.spec.dataset.schema_name, self.spec.dataset.rows
        conn = target.connect()
        try:
            ownership.claim_schema(conn, target, schema)
            with conn.cursor() as cur:
                cur.execute(f"CREATE TABLE IF NOT EXISTS {quote(schema)}.probe (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
                cur.execute(f"SELECT COUNT(*) FROM {quote(schema)}.probe")
                if cur.fetchone()[0] != rows:
                    cur.execute(f"TRUNCATE TABLE {quote(schema)}.probe")
                    cur.executemany(f"INSERT INTO {quote(schema)}.probe VALUES (%s, %s)", [(i, i * 7) for i in range(rows)])
        finally:
            conn.close()
        return {"dataset_id": f"probe-{rows}"}

    def prepare(self, unit: str) -> str:
        return unit

    def measure(self, session, unit: str, repetition: int) -> UnitResult:
        params, rows = self.params, self.spec.dataset.rows
        with session.conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            connection_id = cur.fetchone()[0]
        buckets = [0] * max(1, int(round(params.window_s / params.interval_s)))

        def work() -> int:
            started = time.perf_counter()
            done = 0
            with session.conn.cursor() as cur:
                while not session.window.aborted:
                    elapsed = time.perf_counter() - started
                    if elapsed >= params.window_s:
                        break
                    cur.execute(UNITS[unit], (done % rows,) if "%s" in UNITS[unit] else None)
                    cur.fetchall()
                    done += 1
                    buckets[min(int((time.perf_counter() - started) / params.interval_s), len(buckets) - 1)] += 1
            return done

        result = session.window.run(work, kill=lambda: session.kill_query(connection_id))
        if result.error is not None:
            raise result.error
        offsets = [round((i + 1) * params.interval_s, 3) for i in range(len(buckets))]
        series = TimeSeries(offsets, [b / params.interval_s for b in buckets], params.interval_s, params.rampup_s)
        measured = series.measured()
        rate = sum(measured) / len(measured) if measured else None
        return UnitResult(status="ok", primary=rate, metrics={"statements_per_s": (rate, "1/s"),
                                                              "statements": (float(result.value), "count")},
                          counters=result.counters, os=result.os, os_samples=result.os_samples,
                          series={"throughput": (series, "1/s")})
