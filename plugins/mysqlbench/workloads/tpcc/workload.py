"""TPC-C behind the workload interface. A unit is one driver run (the transaction mix): N
terminals run the five transactions, by stored procedures or statement by statement
(``workload_params.protocol``), or a peer tool runs them (``driver``); the rampup runs before the
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
import threading
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mysqlbench.counters import PHYSICAL_READS
from mysqlbench.errors import InvalidInput, MysqlbenchError
from mysqlbench.identifiers import check_name
from mysqlbench.workloads.base import Answer, Better, Metric, Session, StudyWorkload, UnitResult
from mysqlbench.workloads.tpcc import driver as tpcc_driver
from mysqlbench.workloads.tpcc import statements as tpcc_statements
from mysqlbench.workloads.tpcc.models import TpccDataset

log = logging.getLogger(__name__)

UNITS = ("mix",)
PEERS_MIX = "tpcc-mysql"  # tpcc-mysql's and sysbench-tpcc's own 10/10/1/1/1
MAX_CONNECTIONS = 1024


class TpccParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    connections: int = Field(default=8, ge=1, le=MAX_CONNECTIONS, description="terminals (one connection each)")
    rampup_s: float = Field(default=10, ge=0, le=86_400, description="seconds run before the measure window")
    measure_s: float = Field(default=60, gt=0, le=86_400, description="the measure window, seconds")
    interval_s: float = Field(default=10, gt=0, le=3600, description="time series interval, seconds")
    mix: str | dict[str, float] = Field(
        default=tpcc_driver.DEFAULT_MIX,
        description="the transaction mix: a deck dealt to each terminal, 'spec' (9/10/1/1/1: every minimum of the "
                    "specification with a margin) or 'tpcc-mysql' (the peers' 10/10/1/1/1), or percent weights per "
                    "transaction (new_order, payment, order_status, delivery, stock_level) summing to 100, drawn at "
                    "random")
    think_time: bool = Field(default=False, description="the specification's keying and think times")
    processes: int = Field(default=1, ge=1, le=MAX_CONNECTIONS,
                           description="processes our driver spreads its terminals over (threads within each): "
                                       "more than 1 takes the driver's Python past one core (the GIL)")
    driver: Literal["ours", "tpcc-mysql", "sysbench-tpcc"] = Field(
        default="ours", description="who runs the transactions: our driver, or a peer "
                                    "(tpcc-mysql, sysbench-tpcc) built with `bin/mysqlbench peer build`")
    protocol: Literal["procedures", "statements"] = Field(
        default=tpcc_statements.DEFAULT_PROTOCOL,
        description="how our driver issues a transaction: 'procedures' (one CALL of a stored procedure, one round "
                    "trip) or 'statements' (one statement a round trip as tpcc-mysql issues them, the terminal "
                    "output read back; text protocol)")

    @field_validator("mix")
    @classmethod
    def _mix(cls, value: str | dict[str, float]) -> str | dict[str, float]:
        try:
            return tpcc_driver.check_mix(value)
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _windows(self) -> "TpccParams":
        if self.interval_s > self.measure_s:
            raise ValueError(f"interval_s ({self.interval_s:g}) is longer than the measure window ({self.measure_s:g})")
        if self.processes > self.connections:
            raise ValueError(f"processes ({self.processes}) is more than connections ({self.connections}): "
                             "a process runs one terminal at least")
        if self.driver != "ours":
            from mysqlbench.workloads.tpcc import peers

            if ("protocol" in self.model_fields_set and self.protocol != tpcc_statements.DEFAULT_PROTOCOL) \
                    or self.processes > 1:
                raise ValueError(f"protocol and processes are our driver's; driver {self.driver} issues its own "
                                 "statements from its own process")
            if ("mix" in self.model_fields_set and self.mix != PEERS_MIX) or self.think_time:
                raise ValueError(f"driver {self.driver} runs its own fixed mix ({PEERS_MIX}) without think times: "
                                 f"leave mix at {PEERS_MIX!r} or unset and think_time off, or use driver: ours")
            self.mix = PEERS_MIX  # what the peer runs, recorded as such
            try:
                peers.check_whole_seconds(self.rampup_s, self.measure_s, self.interval_s)
                peers.PeerRunConfig(1, self.connections, int(self.rampup_s), int(self.measure_s), int(self.interval_s))
            except InvalidInput as exc:
                raise ValueError(str(exc)) from None
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
    def _build(self, target):
        from mysqlbench.workloads.tpcc.build import TpccBuild
        from mysqlbench.workloads.tpcc.models import TpccLoadParams

        params = TpccLoadParams(**self.spec.dataset.model_dump(), target_conn_id=target.conn_id)
        return TpccBuild(params, target)

    def ensure_dataset(self, target, recorder) -> dict[str, Any]:
        """The verified dataset (loaded, or reused while unchanged), its procedures, and on a
        managed target a datadir snapshot of it that every repetition starts from. The
        connection limit is checked here, before any point changes the server."""
        from mysqlbench import ownership
        from mysqlbench.targets.lock import exclusive
        from mysqlbench.workloads import lifecycle
        from mysqlbench.workloads.tpcc import dataset

        self._check_connections(target)
        schema = self.spec.dataset.schema_name
        control = self._control(target)
        build = self._build(target)
        wanted = build.identify()["dataset_id"]
        if control is not None and control.has_snapshot(wanted) and self._marker(target).get("dataset_id") == wanted:
            # the last study left its runs' changes: the verified bytes come back from the snapshot
            with exclusive(target, "restore the dataset's snapshot", dataset=schema) as lock:
                self._restore(target, control, wanted, lock.token)
                control.start(holder=lock.token)
        data = lifecycle.ensure(build, recorder)
        dataset.install_procedures(target, schema)  # a reused dataset's may predate this version's
        snapshot = None
        if control is not None:
            with exclusive(target, "snapshot the dataset", dataset=schema) as lock:
                if not control.has_snapshot(data["dataset_id"]):
                    with target.session() as conn:
                        holds = ownership.datasets(conn)
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
            with target.session() as conn:
                now = ownership.datasets(conn)
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

        with target.session() as conn:
            limit = int(knobs.read_variable(conn, "max_connections", "global"))
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

        with target.session() as conn:
            return ownership.read_marker(conn, self.spec.dataset.schema_name)

    def check_dataset(self, target, dataset_id: str) -> None:
        """Inside a point: the verified dataset with its tables and definitions (the runs write rows
        by design; each repetition starts from the snapshot or a rebuild), and its snapshot."""
        from mysqlbench.workloads.lifecycle import require_verified

        require_verified(target, self.spec.dataset.schema_name, dataset_id, "TPC-C", writes_expected=True)
        control = self._control(target)
        if control is not None and not control.has_snapshot(dataset_id):
            raise MysqlbenchError(f"no snapshot of dataset {dataset_id} on {target.conn_id}: run the study again "
                                  "(its dataset step takes it)")

    def reset_dataset(self, target, control, holder: str) -> dict[str, Any]:
        from mysqlbench.workloads import lifecycle

        build = self._build(target)
        data = build.identify()
        wanted = data["dataset_id"]
        if control is not None:
            return {"how": "datadir snapshot", **self._restore(target, control, wanted, holder)}
        started = time.monotonic()  # connection only: build it again (the point already holds the target)
        _, result = lifecycle.rebuild(build, data)
        if not result.success:
            raise MysqlbenchError(f"reloading dataset {wanted} failed validation: {result.failures}")
        return {"how": "reload", "seconds": round(time.monotonic() - started, 3)}

    @classmethod
    def check_spec(cls, spec) -> None:
        params = cls.params_model.model_validate(spec.workload_params)
        run_s = params.rampup_s + params.measure_s
        if run_s >= spec.timeout_s:
            raise ValueError(f"rampup_s + measure_s ({run_s:g} s) is longer than a run may take (timeout_s = "
                             f"{spec.timeout_s:g} s): shorten the rampup or raise timeout_s")

    def check_runnable(self) -> None:
        if self.params.driver != "ours":
            from mysqlbench.workloads.tpcc import peers

            peers.locate(self.params.driver)

    # -- one run ----------------------------------------------------------------------------------
    def prepare(self, unit: str) -> tpcc_driver.DriverConfig:
        p = self.params
        return tpcc_driver.DriverConfig(warehouses=self.spec.dataset.warehouses, connections=p.connections,
                                        rampup_s=p.rampup_s, measure_s=p.measure_s, interval_s=p.interval_s,
                                        mix=p.mix, think_time=p.think_time, protocol=p.protocol,
                                        processes=p.processes)

    def measure(self, session: Session, config: tpcc_driver.DriverConfig, repetition: int) -> UnitResult:
        from mysqlbench import ownership
        from mysqlbench.fingerprint import fingerprint
        from mysqlbench.results.store import TimeSeries
        from mysqlbench.workloads.tpcc.validate import check_consistency

        schema = session.schema
        marker = ownership.read_marker(session.conn, schema)
        # the data this run starts from, against the verified dataset's (outside the window)
        expected = checksum_digest(marker["fingerprint"])
        found = checksum_digest(fingerprint(session.conn, schema, sorted(marker["fingerprint"])))
        run = _ours if self.params.driver == "ours" else _peer
        measured, out, counted = run(session, config, marker, self.params.driver)
        if measured.error is not None:
            raise measured.error
        consistency = check_consistency(session.conn, schema)
        problems = [] if found == expected else [f"started from other data than the verified dataset (table "
                                                  f"checksums {found}, verified {expected})"]
        problems += [f"{f['check']} ({f.get('unexpected_count')} rows)" for f in consistency.failures]
        verdict = "; ".join(problems) or "match"
        # every driver is counted the same way: New-Orders the database committed in the window
        new_orders_per_min = counted["new_orders"] * 60 / counted["seconds"]
        metrics: dict[str, tuple[float | None, str]] = {
            "new_orders_per_min": (new_orders_per_min, "1/min"),
            "new_orders_committed": (float(counted["new_orders"]), "count"),
            "window_s": (counted["seconds"], "s"),
            "driver_new_orders_per_min": (out["new_orders_per_min"], "1/min"),
            "driver_new_orders": (float(out["new_orders"]) if out.get("new_orders") is not None else None, "count"),
            # how far the two counts may honestly differ (our driver only)
            "new_orders_alive_at_reads": (float(out["new_orders_alive_at_reads"])
                                          if out.get("new_orders_alive_at_reads") is not None else None, "count"),
            "transactions_per_s": (out["transactions"] / out["measure_s"] if out["transactions"] is not None
                                   else None, "1/s"),
            "driver_cpu_share": (counted["driver_cpu_s"] / counted["seconds"]
                                 if counted["driver_cpu_s"] is not None else None, "cores"),
        }
        for kind, stats in out["per_type"].items():
            for key in ("ok", "rollbacks", "errors", "retries"):
                value = stats[key]
                metrics[f"{kind}_{'count' if key == 'ok' else key}"] = (
                    float(value) if value is not None else None, "count")
            for q in ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms"):
                metrics[f"{kind}_{q}"] = (stats[q], "ms")
        units = {"tpmC": "1/min", "tps_in_window": "1/s", "tps_whole_run": "1/s"}
        for name, value in (out.get("tool_figure") or {}).items():
            if isinstance(value, (int, float)):
                metrics[f"tool_{name}"] = (float(value), units.get(name, "count"))
        intervals = out["intervals"]
        offsets = [i["end_s"] for i in intervals]
        window_intervals = tpcc_driver.window_intervals(intervals, config)
        key = "new_orders_per_min" if all(i["new_orders_per_min"] is not None for i in intervals) \
            else "transactions_per_s"
        after_rampup = [i[key] for i in window_intervals]
        if len(after_rampup) >= 2 and statistics.fmean(after_rampup) > 0:
            # the seeds judged stability from throughput over time: its coefficient of variation
            metrics["stability_cv"] = (statistics.stdev(after_rampup) / statistics.fmean(after_rampup), "ratio")
        series = {}
        if intervals:
            unit = "1/min" if key == "new_orders_per_min" else "1/s"
            series[key] = (TimeSeries(offsets, [i[key] for i in intervals], config.interval_s, config.rampup_s), unit)
            if all(i["p95_ms"] is not None for i in intervals):
                series["p95_latency_ms"] = (TimeSeries(offsets, [i["p95_ms"] for i in intervals], config.interval_s,
                                                       config.rampup_s), "ms")
        return UnitResult(
            status="ok", primary=new_orders_per_min, metrics=metrics, counters=measured.counters,
            os=measured.os, os_samples=measured.os_samples, series=series,
            answer=Answer(rows=counted["new_orders"], checksum=found, oracle=verdict),
            facts={"dataset_checksum": {"expected": expected, "found": found}, "errors": out["errors"],
                   "driver": self.params.driver,
                   "protocol": self.params.protocol if self.params.driver == "ours" else None,
                   "processes": self.params.processes if self.params.driver == "ours" else None,
                   "tool_figure": out.get("tool_figure"),
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

    def report_tables(self, rows: list[dict[str, Any]], frame) -> list[tuple[str, Any]]:
        """Latency percentiles and counts per transaction type, and each run's figures: the
        database's count beside the driver's own, the driver's CPU, stability and consistency."""
        import pandas as pd

        ok = frame[frame["status"] == "ok"] if not frame.empty else frame
        if ok.empty:
            return []
        stats = ("count", "rollbacks", "errors", "retries", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms")
        per_type = []
        for point, group in ok.groupby("point"):
            for kind in tpcc_driver.TRANSACTIONS:
                if f"{kind}_count" not in group:
                    continue
                per_type.append({"point": point, "transaction": kind, **{
                    stat: group[f"{kind}_{stat}"].median() if f"{kind}_{stat}" in group
                    and group[f"{kind}_{stat}"].notna().any() else None for stat in stats}})
        tables = []
        if per_type:
            tables.append(("Per transaction type (median over repetitions; latency in ms; absent: the driver does "
                           "not report it)", pd.DataFrame(per_type).set_index(["point", "transaction"])))
        columns = [c for c in ("point", "repetition", "primary", "driver_new_orders_per_min", "tool_tpmC",
                               "tool_tps_in_window", "driver_cpu_share", "stability_cv", "oracle", "checksum")
                   if c in ok]
        runs = ok[columns].rename(columns={"primary": "new_orders_per_min (database)", "oracle": "consistency"})
        tables.append(("Each run: New-Orders per minute counted from the database, the driver's own figure, the "
                       "driver's CPU (cores), stability (coefficient of variation of the intervals after the "
                       "rampup) and the checks after the run", runs.set_index(["point", "repetition"])))
        return tables

    def summary_counters(self) -> tuple[str, ...]:
        wanted = ("Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_data_written",
                  "Innodb_os_log_written", "Innodb_row_lock_waits")
        return (PHYSICAL_READS, *(c for c in wanted if c in self.spec.counters))


# -- the drivers: each runs the rampup outside the engine's window and the measure phase inside it,
# and reads sum(d_next_o_id) at the window's edges (outside it: one cheap read on each side)
def _new_orders(conn, table: str = "district") -> int:
    return _new_orders_read(conn, table)[0]


def _new_orders_read(conn, table: str = "district") -> tuple[int, tuple[float, float]]:
    """The database's New-Order count, with the client's clock just before the SELECT was sent and
    just after its answer came: the snapshot it read was taken somewhere between the two."""
    conn.commit()  # a fresh snapshot for each read
    with conn.cursor() as cur:
        sent = time.perf_counter()
        cur.execute(f"SELECT SUM(d_next_o_id) FROM `{check_name(table, 'table')}`")
        value = int(cur.fetchone()[0])
        return value, (sent, time.perf_counter())


def _ours(session: Session, config: tpcc_driver.DriverConfig, marker: dict[str, Any], _name: str):
    driver = tpcc_driver.driver_for(config, session.target, session.schema, marker["c_load"])
    driver.start()
    try:
        deadline = driver.started + config.rampup_s
        while time.perf_counter() < deadline and not session.window.aborted:
            time.sleep(0.05)
        # the database's count is read at the window's edges, and the driver's own count covers
        # the same span (from the middle of one read's round trip to the middle of the other's), so
        # the two differ by at most the New-Orders alive while either read was on its way: the
        # snapshot is taken at an unknown instant inside the round trip, and the terminals' threads
        # share this process with the read (a read's round trip was seen to stretch to ~20 ms)
        before, opening = _new_orders_read(session.conn)
        cpu = driver.cpu_seconds()
        edge = sum(opening) / 2

        def window() -> None:  # the measure phase only: the terminals are already running
            end = driver.started + config.rampup_s + config.measure_s
            while time.perf_counter() < end and not session.window.aborted:
                time.sleep(0.05)

        measured = session.window.run(window, kill=driver.stop)
        after, closing_read = _new_orders_read(session.conn)
        cpu = driver.cpu_seconds() - cpu
        closing = sum(closing_read) / 2
        seconds = closing - edge
    finally:
        driver.stop()
    if driver.failures:
        raise MysqlbenchError(f"a TPC-C terminal failed: {driver.failures[0]!r}")
    # our driver runs in this process (its CPU is this process's, plus the engine's once-a-second OS
    # sampler, a few /proc reads), or in child processes too (theirs added)
    counted = {"new_orders": after - before, "seconds": seconds, "driver_cpu_s": cpu}
    reads = [(a - driver.started, b - driver.started) for a, b in (opening, closing_read)]
    return measured, tpcc_driver.results(driver.records, config, (edge - driver.started, closing - driver.started),
                                         reads=reads), counted


def _peer(session: Session, config: tpcc_driver.DriverConfig, marker: dict[str, Any], name: str, *,
          own_tables: bool = False):
    """``own_tables``: sysbench-tpcc on the tables its own ``prepare`` made (``make bench``), not
    on ours through views."""
    from mysqlbench.workloads.tpcc import peers

    home = peers.locate(name)
    pconfig = peers.PeerRunConfig(config.warehouses, config.connections, int(config.rampup_s),
                                  int(config.measure_s), int(config.interval_s))
    target = session.target
    started, finished = threading.Event(), threading.Event()
    if name == peers.TPCC_MYSQL:
        def on_line(line: str) -> None:
            if line.strip() == peers.TPCC_MYSQL_MEASURE_START:
                started.set()
            elif peers.is_tpcc_mysql_interval(line) == pconfig.measure_s:
                finished.set()

        endpoint = peers.Endpoint.of(target, session.schema)
        proc = peers.PeerProcess(peers.tpcc_mysql_start_argv(home, endpoint, pconfig), home, [target.password],
                                 on_line)
        return _drive_peer(session, proc, pconfig, started, finished, lambda text: peers.parse_tpcc_mysql(text, pconfig))
    if own_tables:
        endpoint = peers.Endpoint.of(target, session.schema)
    else:
        with session.conn.cursor() as cur:  # sysbench-tpcc reaches our tables through merge views
            for statement in peers.sysbench_views(session.schema):
                cur.execute(statement)
        endpoint = peers.Endpoint.of(target, peers.views_schema(session.schema))

    finished = threading.Event()
    timers: list[threading.Timer] = []

    def on_sysbench(line: str) -> None:
        if line.strip() == "Threads started!":
            # sysbench 1.0 has no warm-up option: the rampup is timed from its threads' start, and the
            # window ends when its --time does, not when it has joined its threads and printed its
            # report and exited (its shutdown is no part of the measured work)
            timers.extend((threading.Timer(pconfig.rampup_s, started.set),
                           threading.Timer(pconfig.rampup_s + pconfig.measure_s, finished.set)))
            for timer in timers:
                timer.daemon = True
                timer.start()

    with peers.SysbenchSecret(target.password) as secret:
        argv = peers.sysbench_argv(home, endpoint, pconfig, secret, "run", pconfig.rampup_s + pconfig.measure_s)
        proc = peers.PeerProcess(argv, home, [target.password], on_sysbench)
        try:
            return _drive_peer(session, proc, pconfig, started, finished,
                               lambda text: peers.parse_sysbench_tpcc(text, pconfig),
                               district="district1" if own_tables else "district")
        finally:
            for timer in timers:
                timer.cancel()


def _drive_peer(session: Session, proc, pconfig, started: threading.Event, finished: threading.Event | None, parse,
                district: str = "district"):
    proc.start()
    try:
        limit = time.monotonic() + pconfig.rampup_s + 120
        while not started.wait(0.05):
            if session.window.aborted or proc.proc.poll() is not None or time.monotonic() > limit:
                proc.stop()
                raise MysqlbenchError(f"{proc.argv[0]} did not start its measure phase: {proc.output[-800:]}")
        before, edge = _new_orders(session.conn, district), time.perf_counter()
        cpu = {"start": proc.cpu_seconds(), "last": None}

        def window() -> None:
            end = time.perf_counter() + pconfig.measure_s + 60
            while not session.window.aborted and time.perf_counter() < end:
                # the last reading before the tool exits (a process gone has no /proc entry)
                cpu["last"] = proc.cpu_seconds() or cpu["last"]
                if (finished is not None and finished.is_set()) or proc.proc.poll() is not None:
                    return
                time.sleep(0.1)

        measured = session.window.run(window, kill=proc.stop, tool_pid=proc.proc.pid)
        after, seconds = _new_orders(session.conn, district), time.perf_counter() - edge
        proc.wait(120)
    finally:
        proc.stop()
    if measured.error is not None:  # killed: the abort is what the point records, not a missing report
        return measured, {}, {}
    log.info("%s output:\n%s", proc.argv[0], proc.output)
    cpu_s = cpu["last"] - cpu["start"] if cpu["start"] is not None and cpu["last"] is not None else None
    return measured, parse(proc.output), {"new_orders": after - before, "seconds": seconds, "driver_cpu_s": cpu_s}
