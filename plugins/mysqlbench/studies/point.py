"""One sweep point as one task instance: hold the target exclusively, apply the base config plus
the spec plus this point's values (everything else reset), prepare the cache, measure every
repetition, take the plan after the measured runs, and return samples for the results store."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from mysqlbench import cache, knobs, measure
from mysqlbench.errors import MysqlbenchError, NotApplicable
from mysqlbench.results.lineage import filesystem_of
from mysqlbench.results.store import Sample
from mysqlbench.studies.spec import StudySpec
from mysqlbench.targets.connection import CONTROL_MANAGED, TargetConnection, server_info
from mysqlbench.targets.lock import exclusive
from mysqlbench.workloads.tpch import queries

log = logging.getLogger(__name__)

IDLE_WAIT_S = 60
UNITS = {"Innodb_data_read": "bytes", "pages_data_bytes": "bytes"}


def wait_until_idle(conn, wait_s: float = IDLE_WAIT_S) -> None:
    """The process list must show no other client statement before a measured window."""
    deadline = time.monotonic() + wait_s
    while True:
        with conn.cursor() as cur:
            cur.execute("SELECT ID, USER, COMMAND, LEFT(COALESCE(INFO, ''), 80) FROM information_schema.PROCESSLIST "
                        "WHERE ID <> CONNECTION_ID() AND COMMAND NOT IN ('Sleep', 'Daemon', 'Binlog Dump') "
                        "AND USER NOT IN ('system user', 'event_scheduler') "
                        # a task waiting for our lock is blocked, not working
                        "AND COALESCE(INFO, '') NOT LIKE 'SELECT GET_LOCK(%%'")
            busy = cur.fetchall()
        if not busy:
            return
        if time.monotonic() > deadline:
            raise MysqlbenchError(f"target not idle before a measured window: {busy}")
        time.sleep(0.5)


class PointRun:
    def __init__(self, spec: StudySpec, point: dict[str, Any], target: TargetConnection):
        self.spec, self.point, self.target = spec, point, target
        self.control = None
        if target.control == CONTROL_MANAGED:
            from mysqlbench.targets.managed import ManagedServer, ManagedSpec

            self.control = ManagedServer(ManagedSpec.load(target.managed_target))
        self.samples: list[Sample] = []
        self._global_settings: list[knobs.Setting] = []
        self.phases = {"restart": 0.0, "warmup": 0.0, "measure": 0.0, "explain": 0.0}
        self.meta = {"point": point["label"], "order": point["order"], "seed": point["seed"],
                     "cache": point["cache"], "knobs": point["knobs"], "swept": point["swept"]}

    # -- settings -------------------------------------------------------------------------------
    def _settings(self, conn) -> tuple[Any, list[knobs.Setting], list[knobs.Setting]]:
        info = server_info(conn)
        settings = knobs.translate(self.point["knobs"], info, raw_variables=self.spec.variables)
        return (info, [s for s in settings if s.scope == "session"], [s for s in settings if s.scope == "global"])

    @contextlib.contextmanager
    def _phase(self, name: str):
        """Time spent in restart, warm-up, measuring and explain, recorded so orchestration
        overhead (everything else) can be told apart."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] += time.monotonic() - started

    def _restart(self, global_settings) -> None:
        """Managed: restart with the base config plus this point's global settings. The slow-log
        table (our server-time source) is emptied so looking a statement up stays cheap; on a
        managed instance nothing else writes to it."""
        with self._phase("restart"):
            self.control.restart({s.variable: s.value for s in global_settings})
            conn = self.control.admin_connect()
            try:
                with conn.cursor() as cur:
                    cur.execute("TRUNCATE TABLE mysql.slow_log")
            finally:
                conn.close()

    def _session(self, info, session_settings):
        conn = self.target.connect(database=self.spec.dataset.schema_name)
        applied = knobs.apply_settings(conn, self.target, info, session_settings)
        slow_log = measure.enable_slow_log_table(conn, self.target)
        runner = measure.StatementRunner(conn, info, timeout_s=self.spec.timeout_s, slow_log=slow_log,
                                         counters=self.spec.counters,
                                         server_pid=self.control.pid() if self.control else None,
                                         kill_query=self._kill_query)
        return conn, runner, applied

    # -- the point --------------------------------------------------------------------------------
    def run(self) -> list[Sample]:
        if self.point["cache"] == "cold" and self.control is None:
            return self._not_applicable(f"cold cache needs restart control; {self.target.conn_id} is "
                                        f"{self.target.control} (connection only)")
        with exclusive(self.target) as lock:
            probe = self.target.connect()
            try:
                info, session_settings, global_settings = self._settings(probe)
            except NotApplicable as exc:
                return self._not_applicable(str(exc))
            finally:
                probe.close()
            restored: list[tuple[str, Any]] = []
            self._global_settings = global_settings
            try:
                restored = self._apply_globals(info, global_settings, lock)
                for query_id in self.spec.queries:
                    self._run_query(query_id, info, session_settings, global_settings, lock)
            except NotApplicable as exc:  # the server would not take a setting as asked
                return self._not_applicable(str(exc))
            finally:
                self._restore_globals(restored)
        self.samples += [Sample("phase_seconds", round(seconds, 3), "s", metadata={**self.meta, "phase": phase})
                         for phase, seconds in self.phases.items()]
        return self.samples

    def _apply_globals(self, info, global_settings, lock) -> list[tuple[str, Any]]:
        if self.control is not None:
            if self.point["cache"] != "cold":  # a cold point restarts before every repetition anyway
                self._restart(global_settings)  # resets every other global to the base config
                lock.renew()
            return []
        conn = self.target.connect()
        try:
            before = [(s.variable, knobs.read_variable(conn, s.variable, "global")) for s in global_settings]
            knobs.apply_settings(conn, self.target, info, global_settings)
        finally:
            conn.close()
        return before

    def _restore_globals(self, restored) -> None:
        """Leave the server as the point found it: external targets get their values back; a
        managed one restarts with its base config if the point changed a global."""
        if self.control is not None:
            if self._global_settings:
                self._restart([])
            return
        if not restored:
            return
        conn = self.target.connect()
        try:
            with conn.cursor() as cur:
                for variable, value in restored:
                    cur.execute(f"SET GLOBAL {knobs.check_settable_variable(variable)} = %s", (value,))
        finally:
            conn.close()

    def _run_query(self, query_id, info, session_settings, global_settings, lock) -> None:
        query = queries.load(query_id, self.spec.dataset.scale_factor)
        meta = {**self.meta, "query": query_id}
        cold = self.point["cache"] == "cold"
        conn = runner = None
        evidence: dict[str, Any] = {}
        try:
            for repetition in range(self.spec.repetitions):
                if cold:
                    if conn is not None:
                        conn.close()
                    self._restart(global_settings)
                    lock.renew()
                    with self._phase("restart"):
                        evidence = {"restart": True, **cache.drop_os_cache(self.control.datadir),
                                    "datadir_fs": filesystem_of(self.control.datadir),
                                    "o_direct_note": "innodb_flush_method=O_DIRECT: the page cache does not hold data pages"}
                    conn, runner, applied = self._session(info, session_settings)
                elif conn is None:
                    conn, runner, applied = self._session(info, session_settings)
                    with self._phase("warmup"):
                        evidence = cache.warm_up(lambda: self._untimed(runner, query), self.spec.warmup_max_runs)
                    if evidence["warm"] is False:
                        log.warning("%s: %s", self.point["label"], evidence["why"])
                with self._phase("measure"):
                    runner.execute(query.setup)
                    wait_until_idle(conn)
                    execution = runner.run(query_id, query.statement, keep_answer=repetition == 0)
                    runner.execute(query.teardown)
                self._record_execution(execution, {**meta, "repetition": repetition, "cache_evidence": evidence,
                                                   "applied": [a.__dict__ for a in applied]})
            with self._phase("explain"):
                runner.execute(query.setup)
                plan, plan_hash = runner.explain(query.statement)  # after the measured runs, never before
                runner.execute(query.teardown)
            self.samples.append(Sample("plan", None, "json", status="ok",
                                       metadata={**meta, "plan_hash": plan_hash, "plan": plan}))
        finally:
            if conn is not None:
                conn.close()

    def _kill_query(self, connection_id: int) -> None:
        conn = self.target.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("KILL QUERY %s", (int(connection_id),))
        finally:
            conn.close()

    @staticmethod
    def _untimed(runner, query) -> int | None:
        runner.execute(query.setup)
        execution = runner.run(query.id, query.statement)
        runner.execute(query.teardown)
        return execution.counters.get("Innodb_buffer_pool_reads")

    def _record_execution(self, execution: measure.Execution, meta: dict[str, Any]) -> None:
        meta = {**meta, "status": execution.status, "rows": execution.rows, "checksum": execution.checksum,
                "server_time_source": execution.server_time_source}
        if execution.status == "timeout":
            self.samples.append(Sample("client_seconds", None, "s", status="timeout", metadata=meta))
            return
        self.samples.append(Sample("client_seconds", execution.client_s, "s", metadata=meta))
        self.samples.append(Sample("server_seconds", execution.server_s, "s",
                                   status="ok" if execution.server_s is not None else "absent", metadata=meta))
        for name, value in execution.counters.items():
            self.samples.append(Sample(name, value, UNITS.get(name, "count"),
                                       status="ok" if value is not None else "absent", metadata=meta))
        for name, value in execution.os.items():
            unit = "pct" if name.endswith("_pct") else "bytes" if name.endswith("_bytes") else "s" \
                if name == "seconds" else "count"
            self.samples.append(Sample(f"os_{name}", value, unit, metadata=meta))
        if execution.os_samples:
            self.samples.append(Sample("os_samples", len(execution.os_samples), "count",
                                       metadata={**meta, "per_second": execution.os_samples}))
        if execution.answer is not None:
            rows = [[json_value(v) for v in row] for row in execution.answer[:10_000]]
            self.samples.append(Sample("answer", len(execution.answer), "rows", metadata={**meta, "answer": rows}))

    def _not_applicable(self, why: str) -> list[Sample]:
        log.info("%s: not applicable: %s", self.point["label"], why)
        return [Sample("client_seconds", None, "s", status="not_applicable",
                       metadata={**self.meta, "query": q, "why": why}) for q in self.spec.queries]


def json_value(value: Any) -> Any:
    """JSON-safe answer values for the oracle check (decimals as floats: the check's tolerance is
    far above a double's rounding; dates ISO)."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return float(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode()
    return value


def run_point(spec: StudySpec, point: dict[str, Any]) -> list[Sample]:
    target = TargetConnection.from_airflow(spec.target)
    return PointRun(spec, point, target).run()

