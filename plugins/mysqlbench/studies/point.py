"""One sweep point as one task instance, for any workload: hold the target exclusively, apply the
base config plus the spec plus this point's values (everything else reset), prepare the cache,
open the measuring session, let the workload measure each unit every repetition inside the
engine's measured window, and turn what it returns into samples with an explicit execution.

Every global change goes through the restore journal first and is undone when the point ends,
however it ends. ``abort`` (from the operator's ``on_kill``, or an execution timeout) cancels the
running statement on the server and stops the point; the execution it interrupted is recorded as
``killed``."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from mysqlbench import cache, knobs
from mysqlbench.counters import PHYSICAL_READS
from mysqlbench.errors import NotApplicable
from mysqlbench.measure import GAUGES, Aborted, MeasuredWindow, enable_slow_log_table
from mysqlbench.results.lineage import server_variables
from mysqlbench.results.store import Sample, SampleKind, Status, TimeSeries
from mysqlbench.studies.spec import StudySpec
from mysqlbench.targets import sessions
from mysqlbench.targets.connection import TargetConnection, server_info
from mysqlbench.targets.control import ConnectionOnly, Control, take_control
from mysqlbench.targets.journal import RestoreJournal
from mysqlbench.targets.lock import exclusive
from mysqlbench.workloads.base import Session, StudyWorkload, UnitResult, workload_class

log = logging.getLogger(__name__)

IDLE_WAIT_S = 60
UNITS = {"Innodb_data_read": "bytes", "pages_data_bytes": "bytes", PHYSICAL_READS: "pages"}
# the once-a-second OS figures kept as time series for every measured window
OS_SERIES = ("cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "disk_read_bytes", "disk_write_bytes",
             "disk_read_ops", "disk_write_ops", "mem_used_bytes", "page_cache_bytes", "context_switches_per_s",
             "other_cpu_pct")


def wait_until_idle(conn, wait_s: float = IDLE_WAIT_S) -> None:
    """The process list must show no other client statement before a measured window."""
    sessions.wait_until_idle(conn, wait_s, "a measured window")


def _os_unit(name: str) -> str:
    return "pct" if name.endswith("_pct") else "bytes" if name.endswith("_bytes") else "s" if name == "seconds" \
        else "1/s" if name.endswith("_per_s") else "count"


class PointRun:
    def __init__(self, spec: StudySpec, point: dict[str, Any], target: TargetConnection,
                 workload: StudyWorkload | None = None, dataset_id: str | None = None):
        self.spec, self.point, self.target = spec, point, target
        # a point that sweeps a workload param (threads, concurrency) runs the workload with its value
        self.workload = workload or workload_class(spec.workload)(spec, point.get("params"))
        self.control: Control = ConnectionOnly(target)  # what the point may do beyond SQL: taken inside the hold
        self.journal = RestoreJournal.of(target)
        self.dataset_id = dataset_id
        self.samples: list[Sample] = []
        # (server info, variables) as the measuring session saw them with the point's settings in
        # force: the point's lineage, never the base config a later restart brings back
        self.snapshot: tuple[Any, dict[str, str]] | None = None
        self.phases = {"restart": 0.0, "reset": 0.0, "warmup": 0.0, "measure": 0.0, "after_unit": 0.0}
        self.meta = {"point": point["label"], "order": point["order"], "seed": point["seed"],
                     "cache": point["cache"], "knobs": point["knobs"], "swept": point["swept"],
                     "target": target.conn_id, "round": point.get("round", 1)}
        # this task's repetitions, [start, stop): one round's
        self.repetitions = tuple(point.get("repetitions") or spec.rounds()[0])
        self._window: MeasuredWindow | None = None
        self._abort_reason: str | None = None
        self._current: tuple[str, int] | None = None  # the unit and repetition being measured

    # -- stopping from outside ----------------------------------------------------------------------
    def abort(self, reason: str) -> None:
        """Cancel the running statement on the server and stop the point (any thread)."""
        self._abort_reason = reason
        if self._window is not None:
            self._window.abort(reason)

    def _check_abort(self) -> None:
        if self._abort_reason is not None:
            raise Aborted(self._abort_reason)

    # -- settings -------------------------------------------------------------------------------
    def _settings(self, conn) -> tuple[Any, list[knobs.Setting], list[knobs.Setting]]:
        info = server_info(conn)
        settings = knobs.translate(self.point["knobs"], info, raw_variables=self.spec.variables)
        if self.spec.server_config:  # the base the point's own settings override
            mine = {s.variable for s in settings}
            settings = [s for s in knobs.server_config_settings(self.spec.server_config, info)
                        if s.variable not in mine] + settings
        return (info, [s for s in settings if s.scope == "session"], [s for s in settings if s.scope == "global"])

    @contextlib.contextmanager
    def _phase(self, name: str):
        """Time spent in restart, warm-up, measuring and after-unit work, recorded so orchestration
        overhead (everything else) can be told apart."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] += time.monotonic() - started

    def _restart(self, global_settings, info, holder: str) -> None:
        """Managed: restart with the base config plus this point's global settings (journaled
        first), and read each one back: a value the server silently capped at start makes the
        point not applicable, as for session knobs. The slow-log table (our server-time source) is
        emptied so looking a statement up stays cheap; on a managed instance nothing else writes to it."""
        if not self.control.globals_by_restart:  # a service on a benchmark host: restarted as it is
            with self._phase("restart"):            # configured, then the point's globals SET again (journaled)
                self.control.restart(holder=holder)
                if global_settings:
                    with self.target.session() as conn:
                        knobs.apply_settings(conn, self.target, info, global_settings, journal=self.journal)
            return
        overrides = {s.variable: s.value for s in global_settings}
        with self._phase("restart"):
            self.control.restart(overrides, holder=holder, journal=self.journal)
            conn = self.control.admin_connect()
            try:
                with conn.cursor() as cur:
                    cur.execute("TRUNCATE TABLE mysql.slow_log")
                for setting in global_settings:
                    effective = knobs.read_variable(conn, setting.variable, "global")
                    knobs.check_effective(setting, setting.value, effective, info)
            finally:
                conn.close()

    def _open_session(self, info, session_settings) -> tuple[Session, list[knobs.Applied]]:
        conn = self.target.connect(database=self.spec.dataset.schema_name)
        try:
            applied = knobs.apply_settings(conn, self.target, info, session_settings, journal=self.journal)
            if self.snapshot is None:
                self.snapshot = (info, server_variables(conn, scope="SESSION"))
            slow_log = enable_slow_log_table(conn, self.target, self.journal)
            with conn.cursor() as cur:
                cur.execute("SELECT @@innodb_page_size")
                page_size = cur.fetchone()[0]
            server_pid, unknown = self.control.server_process(conn)
            self._window = MeasuredWindow(conn, flavor=info.flavor, counters=self.spec.counters, page_size=page_size,
                                          server_pid=server_pid, server_unknown=unknown, os_source=self.control.os_source())
            if self._abort_reason is not None:
                self._window.abort(self._abort_reason)
        except BaseException:
            conn.close()
            raise
        return Session(conn=conn, target=self.target, server=info, schema=self.spec.dataset.schema_name,
                       window=self._window, timeout_s=self.spec.timeout_s, slow_log=slow_log,
                       kill_query=self._kill_query, server_pid=self._window.server_pid), applied

    # -- the point --------------------------------------------------------------------------------
    def run(self) -> list[Sample]:
        with exclusive(self.target, f"study point {self.point['label']}", dataset=self.spec.dataset.schema_name) as lock:
            self.control = take_control(self.target, lock)
            # what changes from run to run on the host (free space, available memory), kept with
            # every sample of the point and out of the host hash
            self.meta["host_state"] = self.control.host_state()
            if self.point["cache"] == "cold" and not self.control.restarts:
                return self._not_applicable(f"cold cache needs restart control; {self.target.conn_id} is "
                                            f"{self.target.control} (connection only)")
            if self.dataset_id is not None:
                self.workload.check_dataset(self.target, self.dataset_id)
            probe = self.target.connect()
            try:
                info, session_settings, global_settings = self._settings(probe)
                if self.point["cache"] == "cold" and self.workload.buffer_pool_cache:
                    with probe.cursor() as cur:
                        cur.execute("SELECT @@GLOBAL.innodb_buffer_pool_load_at_startup")
                        why = cache.restart_left_warm(cur.fetchone()[0])
                    if why:
                        raise NotApplicable(f"cold cache on {self.target.conn_id}: {why}")
            except NotApplicable as exc:
                return self._not_applicable(str(exc))
            finally:
                probe.close()
            try:
                if global_settings and not self.control.globals_by_restart:
                    with self.target.session() as conn:
                        knobs.apply_settings(conn, self.target, info, global_settings, journal=self.journal)
                elif self.control.restarts and self.point["cache"] != "cold" and not self.workload.changes_dataset:
                    # a cold point, or one whose workload resets its data, restarts before every repetition anyway
                    # every other global back to the base, set or not: a point that skipped this measured on
                    # whatever an earlier client left (thread_pool_size, seen in tests/dags/test_rerun.py)
                    self._restart(global_settings, info, lock.token)
                    lock.renew()
                for unit in self.spec.units:
                    self._check_abort()
                    self._run_unit(unit, info, session_settings, global_settings, lock)
            except NotApplicable as exc:  # the server would not take a setting as asked
                return self._not_applicable(str(exc))
            except BaseException as exc:
                self._record_killed(exc)
                raise
            finally:
                with self._phase("restart"):
                    self.journal.replay(self.target, holder=lock.token)  # leave the target as found
        self.samples += [Sample("phase_seconds", round(seconds, 3), "s", kind=SampleKind.PHASE.value,
                                point=self.point["label"], metadata={**self.meta, "phase": phase})
                         for phase, seconds in self.phases.items()]
        return self.samples

    def _record_killed(self, exc: BaseException) -> None:
        """An execution stopped from outside (abort, Airflow's execution timeout or termination)
        is recorded as killed; any other error fails the task with its own traceback."""
        stopped = isinstance(exc, (Aborted, KeyboardInterrupt, SystemExit)) or \
            type(exc).__name__ in ("AirflowTaskTimeout", "AirflowTaskTerminated")
        if self._current is None or not stopped:
            return
        unit, repetition = self._current
        why = self._abort_reason or f"{type(exc).__name__}: {exc}"
        log.warning("%s: %s repetition %d killed: %s", self.point["label"], unit, repetition, why)
        self.samples.append(Sample(self.workload.primary.name, None, self.workload.primary.unit,
                                   status=Status.KILLED.value, kind=SampleKind.METRIC.value,
                                   point=self.point["label"], subject=unit, repetition=repetition,
                                   metadata={**self.meta, "why": why}))

    def _run_unit(self, unit, info, session_settings, global_settings, lock) -> None:
        prepared = self.workload.prepare(unit)
        meta = {**self.meta, "unit": unit}
        cold = self.point["cache"] == "cold"
        session = None
        evidence: dict[str, Any] = {}
        applied: list[knobs.Applied] = []
        try:
            for repetition in range(*self.repetitions):
                self._check_abort()
                if cold or self.workload.changes_dataset:
                    if session is not None:
                        session.conn.close()
                        session = None
                    reset = None
                    if self.workload.changes_dataset:  # every repetition from the same verified data
                        with self._phase("reset"):
                            # a datadir snapshot only on our own instance; any other server is reloaded
                            reset = self.workload.reset_dataset(self.target, self.control.snapshots, lock.token)
                        lock.renew()
                    if self.control.restarts:
                        self._restart(global_settings, info, lock.token)
                        lock.renew()
                    if cold:
                        with self._phase("restart"):
                            own = self.workload.evict_cold(self.target)
                            evidence = {"restart": True, **self.control.drop_os_cache(self.spec.cold_eviction),
                                        **({"workload_files_evicted": own} if own else {}),
                                        "datadir_fs": self.control.filesystem()}
                    session, applied = self._open_session(info, session_settings)
                    if not cold:  # warm after the reset and restart, the way the workload warms
                        evidence = self._warm(session, prepared)
                    if reset is not None:
                        evidence = {**evidence, "dataset_reset": reset}
                elif session is None:
                    session, applied = self._open_session(info, session_settings)
                    evidence = self._warm(session, prepared)
                with self._phase("measure"):
                    wait_until_idle(session.conn)
                    self._current = (unit, repetition)
                    result = self.workload.measure(session, prepared, repetition)
                    self._current = None
                # when the measured work ran (wall clock): windows of different points and
                # targets can be shown never to overlap
                span = session.window.last_span
                self._record_execution(result, unit, repetition,
                                       {**meta, "repetition": repetition, "cache_evidence": evidence,
                                        "applied": [a.__dict__ for a in applied],
                                        "window": {"start": span[0], "end": span[1]} if span else None})
            with self._phase("after_unit"):
                self.samples += self.workload.after_unit(session, prepared, meta)
        finally:
            if session is not None:
                session.conn.close()

    def _warm(self, session, prepared) -> dict[str, Any]:
        """A warm repetition's cache: the workload's own rampup inside the window, or untimed runs
        until physical reads stop (or the evidence that the working set does not fit)."""
        if self.workload.warms_in_window:
            return {"warm": None, "why": "warmed by the workload's own rampup inside the window"}
        with self._phase("warmup"):
            own = self.workload.warm(session, prepared)
        if own is not None:
            return own
        with self._phase("warmup"):
            evidence = cache.warm_up(lambda s=session: self.workload.warm_run(s, prepared), self.spec.warmup_max_runs)
        if evidence["warm"] is False:
            log.warning("%s: %s", self.point["label"], evidence["why"])
        return evidence

    def _kill_query(self, connection_id: int) -> None:
        with self.target.session() as conn:
            with conn.cursor() as cur:
                cur.execute("KILL QUERY %s", (int(connection_id),))

    def _record_execution(self, result: UnitResult, unit: str, repetition: int, meta: dict[str, Any]) -> None:
        meta = {**meta, "status": result.status, **result.facts}
        execution = {"point": self.point["label"], "subject": unit, "repetition": repetition}
        primary = self.workload.primary
        if result.status != Status.OK.value:
            self.samples.append(Sample(primary.name, None, primary.unit, status=result.status,
                                       kind=SampleKind.METRIC.value, metadata=meta, **execution))
            return
        for name, (value, unit_name) in result.metrics.items():
            self.samples.append(Sample(name, value, unit_name, status="ok" if value is not None else "absent",
                                       kind=SampleKind.METRIC.value, metadata=meta, **execution))
        for name, value in result.counters.items():
            self.samples.append(Sample(name, value, UNITS.get(name, "count"),
                                       status="ok" if value is not None else "absent",
                                       kind=(SampleKind.GAUGE if name in GAUGES else SampleKind.COUNTER).value,
                                       metadata=meta, **execution))
        for name, value in result.os.items():
            if name != "samples":
                self.samples.append(Sample(f"os_{name}", value, _os_unit(name), kind=SampleKind.OS.value,
                                           status="ok" if value is not None else "absent",
                                           metadata=meta, **execution))
        series = dict(result.series)
        if result.os_samples:
            offsets = [round(sum(s["seconds"] for s in result.os_samples[:i + 1]), 3)
                       for i in range(len(result.os_samples))]
            for name in OS_SERIES:
                series[f"os_{name}"] = (TimeSeries(offsets, [s[name] for s in result.os_samples], 1.0), _os_unit(name))
        for name, (values, unit_name) in series.items():
            measured = values.measured()
            self.samples.append(Sample(name, sum(measured) / len(measured) if measured else None, unit_name,
                                       status="ok" if measured else "absent", kind=SampleKind.SERIES.value,
                                       series=values, metadata=meta, **execution))
        if result.answer is not None:
            self.samples.append(Sample("answer_rows", result.answer.rows, "rows", kind=SampleKind.ANSWER.value,
                                       metadata={**meta, "checksum": result.answer.checksum,
                                                 "oracle": result.answer.oracle, "sample": result.answer.sample},
                                       **execution))

    def _not_applicable(self, why: str) -> list[Sample]:
        log.info("%s: not applicable: %s", self.point["label"], why)
        return [Sample(self.workload.primary.name, None, self.workload.primary.unit,
                       status=Status.NOT_APPLICABLE.value, kind=SampleKind.METRIC.value, point=self.point["label"],
                       subject=unit, metadata={**self.meta, "why": why}) for unit in self.spec.units]
