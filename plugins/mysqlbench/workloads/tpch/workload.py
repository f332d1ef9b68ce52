"""TPC-H behind the workload interface: a unit is one query (qgen's defaults, MySQL dialect, or a
seed's variant with its index hints). The statement and its fetch are the measured window; server
time comes from the slow log; the whole answer is compared with DuckDB's in the task; the plan is
taken after the measured runs."""

from __future__ import annotations

import logging
from typing import Any

from mysqlbench.checks import condition
from mysqlbench.counters import PHYSICAL_READS
from mysqlbench.measure import StatementRunner
from mysqlbench.results.store import Sample, SampleKind
from mysqlbench.workloads.base import Answer, Better, Metric, Session, StudyWorkload, UnitResult
from mysqlbench.workloads.tpch import queries
from mysqlbench.workloads.tpch.models import TpchDataset, TpchParams

log = logging.getLogger(__name__)

ANSWER_SAMPLE_ROWS = 20  # what the report shows of an answer; the oracle compares the whole of it


def json_value(value: Any) -> Any:
    """JSON-safe answer values (decimals as floats, dates ISO) for the stored sample rows."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return float(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode()
    return value


class TpchWorkload(StudyWorkload):
    name = "tpch"
    label = "TPC-H-derived; not an official TPC-H metric"
    unit_title = "query"
    primary = Metric("client_seconds", "s", Better.LOWER, "time")
    dataset_model = TpchDataset
    params_model = TpchParams

    @classmethod
    def check_units(cls, units: list[str], dataset: TpchDataset) -> None:
        for query_id in units:
            queries.load(query_id, dataset.scale_factor)

    def ensure_dataset(self, target, recorder) -> dict[str, Any]:
        from mysqlbench.workloads import lifecycle
        from mysqlbench.workloads.tpch.build import TpchBuild
        from mysqlbench.workloads.tpch.models import TpchLoadParams

        params = TpchLoadParams(**self.spec.dataset.model_dump(), target_conn_id=target.conn_id)
        return lifecycle.ensure(TpchBuild(params, target), recorder)

    def check_dataset(self, target, dataset_id: str) -> None:
        """Inside a point: the verified dataset, unchanged (a query writes nothing: any write the
        server recorded since is a change)."""
        from mysqlbench.workloads.lifecycle import require_verified

        require_verified(target, self.spec.dataset.schema_name, dataset_id, "TPC-H", writes_expected=False)

    @property
    def oracle_enabled(self) -> bool:
        from mysqlbench.workloads.tpch.oracle import ORACLE_MAX_SF

        return self.params.oracle and self.spec.dataset.scale_factor <= ORACLE_MAX_SF

    def prepare(self, unit: str) -> queries.Query:
        return queries.load(unit, self.spec.dataset.scale_factor)

    @staticmethod
    def _runner(session: Session) -> StatementRunner:
        runner = session.state.get("runner")
        if runner is None:
            runner = StatementRunner(session.conn, session.server, timeout_s=session.timeout_s, window=session.window,
                                     slow_log=session.slow_log, kill_query=session.kill_query)
            session.state["runner"] = runner
        return runner

    def warm_run(self, session: Session, query: queries.Query) -> int | None:
        runner = self._runner(session)
        runner.execute(query.setup)
        execution = runner.run(query.id, query.statement)
        runner.execute(query.teardown)
        return execution.counters.get(PHYSICAL_READS)

    def measure(self, session: Session, query: queries.Query, repetition: int) -> UnitResult:
        runner = self._runner(session)
        runner.execute(query.setup)
        check_answer = repetition == 0 and self.oracle_enabled
        execution = runner.run(query.id, query.statement, keep_answer=check_answer or repetition == 0)
        runner.execute(query.teardown)
        answer = None
        if execution.status == "ok":
            verdict = None
            if check_answer:  # outside the window: the whole answer against DuckDB's
                from mysqlbench.workloads.tpch.oracle import verdict as oracle_verdict

                verdict = oracle_verdict(query, self.spec.dataset.scale_factor, execution.answer)
            sample = [[json_value(v) for v in row] for row in (execution.answer or [])[:ANSWER_SAMPLE_ROWS]]
            answer = Answer(rows=execution.rows, checksum=execution.checksum, oracle=verdict, sample=sample)
        return UnitResult(
            status=execution.status, primary=execution.client_s,
            metrics={"client_seconds": (execution.client_s, "s"), "server_seconds": (execution.server_s, "s")},
            counters=execution.counters, os=execution.os, os_samples=execution.os_samples, answer=answer,
            facts={"server_time_source": execution.server_time_source})

    def after_unit(self, session: Session, query: queries.Query, meta: dict[str, Any]) -> list[Sample]:
        """EXPLAIN FORMAT=JSON after the measured runs, never before (it would warm the cache)."""
        runner = self._runner(session)
        runner.execute(query.setup)
        plan, plan_hash = runner.explain(query.statement)
        runner.execute(query.teardown)
        return [Sample("plan", None, "json", kind=SampleKind.PLAN.value, point=meta["point"], subject=query.id,
                       metadata={**meta, "plan_hash": plan_hash, "plan": plan})]

    def expectations(self, frame) -> list[Any]:
        import great_expectations as gx

        out = []
        ok = frame[frame["status"] == "ok"] if not frame.empty else frame
        for unit in sorted(ok["subject"].unique()) if not ok.empty else []:
            # the same answer at every point and repetition: a switch must never change results
            out.append(gx.expectations.ExpectColumnUniqueValueCountToBeBetween(
                column="checksum", min_value=1, max_value=1, **condition(subject=unit, status="ok"),
                meta={"check": "same_answer_all_points", "subject": unit}))
        if self.oracle_enabled:
            # every verdict DuckDB gave is "match" (None where the oracle was not asked)
            out.append(gx.expectations.ExpectColumnValuesToBeInSet(
                column="oracle", value_set=["match"], meta={"check": "oracle_answer"}))
            out.append(gx.expectations.ExpectColumnValuesToNotBeNull(
                column="oracle", **condition(status="ok", repetition=0), meta={"check": "oracle_answer_present"}))
        return out

    def summary_counters(self) -> tuple[str, ...]:
        wanted = ("Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_ahead", "Innodb_buffer_pool_read_requests",
                  "Innodb_data_read", "Handler_mrr_init", "Handler_mrr_rowid_refills", "Handler_read_key",
                  "Handler_read_next",
                  "Handler_read_rnd_next", "Created_tmp_disk_tables", "Select_scan", "Sort_scan")
        return (PHYSICAL_READS, *(c for c in wanted if c in self.spec.counters), "pages_data_bytes")

