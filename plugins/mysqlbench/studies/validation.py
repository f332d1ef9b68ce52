"""A study run's validation, decided by Great Expectations over the run's executions frame: the
engine's expectations (every planned point and unit recorded, statuses, a positive primary metric,
non-negative counters, cache evidence for cold and warm rows) plus the workload's own (for TPC-H:
the same answer at every point, DuckDB's verdict on every answer). Noise above the spec's threshold
is flagged, not gated."""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from mysqlbench.checks import condition, validate_frames
from mysqlbench.measure import GAUGES
from mysqlbench.results.store import Validation
from mysqlbench.studies.analysis import READS, summaries

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
    if READS in frame:
        out.append(E.ExpectColumnValuesToBeBetween(column=READS, min_value=1, **condition(status="ok", cache="cold"),
                                                   meta={"check": "cold_run_reads_from_disk"}))
        out.append(E.ExpectColumnValuesToBeBetween(column=READS, max_value=WARM_READS_MAX,
                                                   **condition(status="ok", cache="warm", warm=True),
                                                   meta={"check": "warm_run_reads_about_zero"}))
    return out


def validate_study(spec, workload, frame: pd.DataFrame) -> tuple[Validation, list[str]]:
    """(GX's verdict with its failures, noise flags)."""
    frame = frame.assign(point_unit=frame["point"] + " | " + frame["subject"]) if not frame.empty else \
        frame.assign(point_unit=pd.Series(dtype=object))
    typed = frame.copy()
    for column in ("status", "cache", "subject", "point", "point_unit", "checksum", "oracle", "warm"):
        if column in typed:
            typed[column] = typed[column].astype(object)
    expectations = engine_expectations(spec, typed) + workload.expectations(typed)
    result = validate_frames(spec.study, [("executions", typed, expectations)])
    flags = []
    summary = summaries(frame)
    for row in summary.itertuples() if not summary.empty else []:
        if pd.notna(row.cv) and row.cv > spec.noise_cv_max:
            flags.append(f"{row.subject} {row.point}: coefficient of variation {row.cv:.1%} above {spec.noise_cv_max:.0%}")
    return result, flags
