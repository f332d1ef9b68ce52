"""A study run's validation, decided by Great Expectations over the run's executions frame: the
engine's expectations (every planned point and unit recorded, statuses, a positive primary metric,
non-negative counters, cache evidence for cold and warm rows) plus the workload's own (for TPC-H:
the same answer at every point, DuckDB's verdict on every answer). Noise above the spec's threshold
is flagged, not gated. Every comparison the report will state is checked too: its n and method,
an interval that holds its estimate at its stated level wherever the repetitions allow one, and no
verdict but "inconclusive" without one (a run whose comparisons are all inconclusive is valid)."""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from mysqlbench.checks import condition, validate_frames
from mysqlbench.measure import GAUGES
from mysqlbench.results.store import Validation
from mysqlbench.statistics import Verdict
from mysqlbench.studies.analysis import READS, summaries
from mysqlbench.studies.sequential import study_comparisons

log = logging.getLogger(__name__)

WARM_READS_MAX = 10  # pages: "about 0" physical reads for a warm run


def planned(spec) -> list[str]:
    """Every (point, unit) the spec plans, as the frame's ``point_unit`` column spells them."""
    return sorted(f"{p['label']} | {unit}" for p in spec.points() for unit in spec.units)


def engine_expectations(spec, frame: pd.DataFrame) -> list[Any]:
    import great_expectations as gx

    E = gx.expectations
    statuses = ["ok", "not_applicable"] + (["timeout"] if spec.allow_timeouts else [])
    out = [
        E.ExpectColumnDistinctValuesToEqualSet(column="point_unit", value_set=planned(spec),
                                               meta={"check": "points_recorded"}),
        E.ExpectColumnDistinctValuesToContainSet(column="status", value_set=["ok"],
                                                 meta={"check": "something_measured"}),
        E.ExpectColumnValuesToBeInSet(column="status", value_set=statuses, meta={"check": "statuses"}),
        E.ExpectColumnValuesToNotBeNull(column="primary", **condition(status="ok"), meta={"check": "primary_present"}),
        E.ExpectColumnValuesToBeBetween(column="primary", min_value=0, strict_min=True, **condition(status="ok"),
                                        meta={"check": "primary_positive"}),
    ]
    for counter in spec.counters:
        if counter in frame and counter not in GAUGES:
            # absent counters are NaN: GX leaves them out, so absent is never read as 0
            out.append(E.ExpectColumnValuesToBeBetween(column=counter, min_value=0, **condition(status="ok"),
                                                       meta={"check": "counters_non_negative", "counter": counter}))
    from mysqlbench.workloads.base import workload_class

    # physical reads are recorded for every execution; they prove a cold or warm buffer pool only
    # where the workload's cache is the buffer pool
    if READS in frame and workload_class(spec.workload).buffer_pool_cache:
        out.append(E.ExpectColumnValuesToBeBetween(column=READS, min_value=1, **condition(status="ok", cache="cold"),
                                                   meta={"check": "cold_run_reads_from_disk"}))
        out.append(E.ExpectColumnValuesToBeBetween(column=READS, max_value=WARM_READS_MAX,
                                                   **condition(status="ok", cache="warm", warm=True),
                                                   meta={"check": "warm_run_reads_about_zero"}))
    return out


UNPAIRED_MIN_N = 4  # the fewest values a side for which two unpaired sides have a 95% interval (94.3%)
PAIRED_MIN_N = 6  # the fewest pairs with an interval at the sequential looks' 97.5% (96.9%)


def comparison_expectations() -> list[Any]:
    import great_expectations as gx

    E = gx.expectations
    out = [E.ExpectColumnValuesToBeInSet(column="verdict", value_set=[v.value for v in Verdict],
                                         meta={"check": "comparison_verdict"}),
           E.ExpectColumnValuesToNotBeNull(column="method", meta={"check": "comparison_method"})]
    for column in ("n_a", "n_b"):
        out.append(E.ExpectColumnValuesToBeBetween(column=column, min_value=1, meta={"check": "comparison_n"}))
    with_interval = condition(has_interval=True)
    out += [
        E.ExpectColumnValuesToBeBetween(column="confidence", min_value=0.93, max_value=1, **with_interval,
                                        meta={"check": "comparison_level"}),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="ci_high", column_B="estimate", or_equal=True,
                                                  **with_interval, meta={"check": "comparison_interval_holds_estimate"}),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="estimate", column_B="ci_low", or_equal=True,
                                                  **with_interval, meta={"check": "comparison_interval_holds_estimate"}),
        E.ExpectColumnValuesToBeInSet(column="verdict", value_set=[Verdict.INCONCLUSIVE.value],
                                      **condition(has_interval=False), meta={"check": "no_interval_no_claim"}),
        E.ExpectColumnValuesToBeInSet(column="has_interval", value_set=[True], **condition(enough=True),
                                      meta={"check": "interval_where_repetitions_allow"}),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="n", column_B="min_required", or_equal=True,
                                                  meta={"check": "comparison_minimum_repetitions"}),
    ]
    return out


def comparisons_frame(spec, workload, frame: pd.DataFrame) -> pd.DataFrame:
    """The run's comparisons (as the report states them) as a typed frame for GX."""
    said = pd.DataFrame(study_comparisons(frame, spec, workload.primary))
    if said.empty:
        return said
    said["has_interval"] = said["ci_low"].notna()
    fewest = PAIRED_MIN_N if spec.sequential else UNPAIRED_MIN_N
    said["enough"] = (said["n_a"] >= fewest) & (said["n_b"] >= fewest) & said["estimate"].notna()
    # with auto: a comparison whose two points were both measured has at least min_repetitions pairs
    said["min_required"] = spec.min_repetitions if spec.sequential else 1
    for column in ("estimate", "ci_low", "ci_high", "confidence"):
        said[column] = said[column].astype(float)
    return said[["subject", "on", "off", "metric", "estimate", "ci_low", "ci_high", "confidence", "n_a", "n_b",
                 "n", "method", "paired", "verdict", "has_interval", "enough", "min_required"]]


def validate_study(spec, workload, frame: pd.DataFrame) -> tuple[Validation, list[str]]:
    """(GX's verdict with its failures, noise flags)."""
    frame = frame.assign(point_unit=frame["point"] + " | " + frame["subject"]) if not frame.empty else \
        frame.assign(point_unit=pd.Series(dtype=object))
    typed = frame.copy()
    for column in ("status", "cache", "subject", "point", "point_unit", "checksum", "oracle", "warm"):
        if column in typed:
            typed[column] = typed[column].astype(object)
    expectations = engine_expectations(spec, typed) + workload.expectations(typed)
    batches = [("executions", typed, expectations)]
    said = comparisons_frame(spec, workload, frame)
    if not said.empty:
        batches.append(("comparisons", said, comparison_expectations()))
    result = validate_frames(spec.study, batches)
    flags = []
    summary = summaries(frame)
    for row in summary.itertuples() if not summary.empty else []:
        if pd.notna(row.cv) and row.cv > spec.noise_cv_max:
            flags.append(f"{row.subject} {row.point}: coefficient of variation {row.cv:.1%} above {spec.noise_cv_max:.0%}")
    return result, flags
