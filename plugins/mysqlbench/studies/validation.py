"""A study run's validation, gating it: every point returns the same answer, answers match the
DuckDB oracle, timings are positive, counters non-negative, cache evidence is consistent, and no
statement timed out unless the spec allows it. Noise above the spec's threshold is flagged."""

from __future__ import annotations

import logging
from typing import Any

from mysqlbench.answers import compare
from mysqlbench.checks import validate_checks
from mysqlbench.measure import GAUGES
from mysqlbench.results.store import Validation
from mysqlbench.studies.analysis import point_summaries
from mysqlbench.studies.spec import StudySpec

log = logging.getLogger(__name__)

ORACLE_MAX_SF = 1.0
WARM_READS_MAX = 10  # pages: "about 0" physical reads for a warm run


def study_checks(spec: StudySpec, execs: list[dict[str, Any]], oracle=None) -> tuple[list[dict[str, Any]], list[str]]:
    """(check rows, noise flags)."""
    rows: list[dict[str, Any]] = []

    def add(check: str, subject: str, observed: Any, expected: Any) -> None:
        rows.append({"check": check, "subject": subject, "observed": str(observed), "expected": str(expected)})

    measured = [e for e in execs if e["status"] in ("ok", "timeout")]
    add("executions", spec.study, len(measured) > 0, True)
    timeouts = [e for e in execs if e["status"] == "timeout"]
    if not spec.allow_timeouts:
        add("timeouts", spec.study, len(timeouts), 0)
    ok = [e for e in execs if e["status"] == "ok"]
    add("timings_positive", spec.study, sum(1 for e in ok if not (e.get("client_s") or 0) > 0), 0)
    add("counters_non_negative", spec.study,
        sum(1 for e in ok for name, v in e["counters"].items() if name not in GAUGES and v is not None and v < 0), 0)
    for query in sorted({e["query"] for e in ok}):
        checksums = sorted({e["checksum"] for e in ok if e["query"] == query})
        add("same_answer_all_points", query, len(checksums), 1)
    for e in ok:
        reads = e["counters"].get("Innodb_buffer_pool_reads")
        subject = f"{e['query']} {e['point']} rep {e['repetition']}"
        if reads is None:
            continue  # the counter is absent: no evidence either way, reported as absent
        if e["cache"] == "cold":
            add("cold_run_reads_from_disk", subject, reads > 0, True)
        elif e["cache_evidence"].get("warm") is True:
            add("warm_run_reads_about_zero", subject, reads <= WARM_READS_MAX, True)
    if oracle is not None:
        for e in ok:
            if e.get("answer") is None:
                continue
            from mysqlbench.workloads.tpch import queries

            query = queries.load(e["query"], spec.dataset.scale_factor)
            result = compare(e["answer"], oracle.answer(query), order_by=query.order_by, limit=query.limit)
            add("oracle_answer", f"{e['query']} {e['point']}", result.reason, "match")
    flags = [f"{s['query']} {s['point']}: coefficient of variation {s['cv']:.1%} above {spec.noise_cv_max:.0%}"
             for s in point_summaries(execs) if s.get("cv") is not None and s["cv"] > spec.noise_cv_max]
    return rows, flags


def validate_study(spec: StudySpec, execs: list[dict[str, Any]], oracle=None) -> tuple[Validation, list[str]]:
    rows, flags = study_checks(spec, execs, oracle)
    return validate_checks(rows, spec.study), flags


def make_oracle(spec: StudySpec):
    """DuckDB over the same files, for scale factors up to 1; None (and why) beyond."""
    if not spec.oracle or spec.dataset.scale_factor > ORACLE_MAX_SF:
        log.info("oracle check skipped: %s", "disabled by the spec" if not spec.oracle else
                 f"scale factor {spec.dataset.scale_factor:g} > {ORACLE_MAX_SF:g}")
        return None
    from mysqlbench.workloads.tpch.generate import dataset_dir, ensure_generated
    from mysqlbench.workloads.tpch.oracle import DuckDbOracle

    ensure_generated(spec.dataset.scale_factor)
    return DuckDbOracle(dataset_dir(spec.dataset.scale_factor))
