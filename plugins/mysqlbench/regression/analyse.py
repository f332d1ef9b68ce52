"""The regression analysis: every series of the studies' history through change-point detection,
each change with the runs on either side (their lineage) and what differs between them (server
version, package commit, configuration with the variables that differ, study spec, plan, host
state with the facts that differ). Plan changes are reported as events even when the timing did
not move.

Nothing falls through (issue 23): a run that timed out, or failed its study's validation, after a
good history is an alert of its own (a timeout is the worst regression, and an INVALID run has no
value for the detector to see); a change whose runs after it were mostly measured under noise
(other processes' CPU, steal) is reported but not confirmed by them."""

from __future__ import annotations

import datetime as dt
import statistics
from typing import Any

import pandas as pd

from mysqlbench.regression.detect import Thresholds, change_points, readiness
from mysqlbench.regression.history import (
    KEY,
    history,
    host_changes,
    primary_metric,
    series_labels,
    sides_differences,
    validation_failures,
)
from mysqlbench.results.store import ResultsStore
from mysqlbench.workloads.base import Better

LINEAGE = ["dag_id", "run_id", "server_version", "package_version", "variables_hash", "spec_hash", "plan_hash",
           "host_hash"]


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, (pd.Timestamp, dt.datetime)):
        return value.isoformat()
    if hasattr(value, "item"):
        return value.item()
    return value


def _run_record(position: int, row: dict[str, Any]) -> dict[str, Any]:
    return {"position": position, "run_time": _plain(row["run_time"]), "value": _plain(row["value"]),
            "iqr": _plain(row["iqr"]), "n_ok": int(row["n_ok"]), "n": int(row["n"]), "statuses": row["statuses"],
            "n_timeout": int(row.get("n_timeout") or 0), "noisy": bool(row.get("noisy")),
            "other_cpu_pct": _plain(row.get("other_cpu_pct")), "noise_max_pct": _plain(row.get("noise_max_pct")),
            "events": row["events"], **{c: _plain(row.get(c)) for c in LINEAGE}}


def analyse(store: ResultsStore, studies: list[str], thresholds: Thresholds) -> dict[str, Any]:
    """The analysis as plain data (the regression report's JSON): ``series`` (each with its runs,
    changes and events), ``alerts`` (confirmed, recent regressions), ``plan_changes``, and the
    runs ``left_out`` with why."""
    runs, left_out = history(store, studies, include_invalid=True)
    metrics = {study: primary_metric(study) for study in studies}
    out: dict[str, Any] = {"studies": studies, "thresholds": thresholds.model_dump(), "series": [], "alerts": [],
                           "plan_changes": [], "left_out": left_out,
                           "runs_analysed": int(runs[["dag_id", "run_id"]].drop_duplicates().shape[0]) if not runs.empty else 0}
    if runs.empty:
        return out
    out["runs_analysed"] = int(runs[runs["valid"]][["dag_id", "run_id"]].drop_duplicates().shape[0])
    invalid_alerted: set[tuple[str, str]] = set()
    firsts = runs.drop_duplicates("series_id")
    labels = dict(zip(firsts["series_id"], series_labels(firsts[KEY].to_dict(orient="records")), strict=True))
    for series_id, group in runs.groupby("series_id", sort=False):
        every = group.sort_values(["run_time", "run_id"]).to_dict(orient="records")
        rows = [r for r in every if r["valid"]]
        if not rows:
            continue  # a series with no valid run yet: nothing to compare with
        first = rows[0]
        metric = metrics[first["study"]]
        records = [_run_record(i, r) for i, r in enumerate(rows)]
        changes = []
        values = [r["value"] for r in rows]
        found = change_points(values, thresholds, metric.better)
        for change in found:
            _weigh_noise(change, rows, thresholds, metric.better)
            at = rows[change.index]
            # blamed: what differs between the runs before and the runs after, not what changed
            # since the previous run (a setting both sides ran with did not make the step)
            blame = sides_differences([rows[i] for i in change.before.runs], [rows[i] for i in change.after.runs])
            config = next((b for b in blame if b["field"] == "variables_hash"), None)
            host = next((b for b in blame if b["field"] == "host_hash"), None)
            record = change.as_dict() | {
                "run_id": at["run_id"], "dag_id": at["dag_id"], "run_time": _plain(at["run_time"]),
                "events": at["events"], "blame": blame,
                "variables_changed": store.variable_changes(config["before"], config["after"]) if config else {},
                "host_changed": host_changes(store, host["before"], host["after"]) if host else {},
                "plan_changed": any(e["field"] == "plan_hash" for e in at["events"]),
                "runs_before": [records[i] for i in change.before.runs],
                "runs_after": [records[i] for i in change.after.runs],
            }
            changes.append(record)
        series = {"series_id": series_id, "label": labels[series_id], "key": {k: _plain(first[k]) for k in KEY},
                  "metric": metric.name, "unit": metric.unit, "better": metric.better.value,
                  "runs": records, "changes": changes, "readiness": readiness(values, found, thresholds)}
        out["series"].append(series)
        for change in changes:
            if change["alert"]:
                out["alerts"].append({"series_id": series_id, "label": series["label"], "metric": metric.name,
                                      "unit": metric.unit, **{k: change[k] for k in (
                                          "run_id", "dag_id", "run_time", "index", "effect_pct", "interval_words",
                                          "interval", "pvalue", "events", "blame",
                                          "variables_changed", "host_changed", "plan_changed", "noise_words")},
                                      "kind": "change", "before_median": change["before"]["median"],
                                      "after_median": change["after"]["median"]})
        for failure in _failures(every, rows, thresholds, metric):
            if failure["kind"] == "invalid":
                if (failure["dag_id"], failure["run_id"]) in invalid_alerted:
                    continue  # one alert per INVALID run, not one per series of it
                invalid_alerted.add((failure["dag_id"], failure["run_id"]))
                failure["failures"] = validation_failures(store, failure["dag_id"], failure["run_id"])
                label = f"{first['study']} run {failure['run_id']}"
            else:
                label = series["label"]
            series.setdefault("failures", []).append(failure)
            out["alerts"].append({"series_id": series_id, "label": label, "metric": metric.name, "unit": metric.unit,
                                  **failure})
        for i, record in enumerate(records):
            for event in record["events"]:
                if event["field"] == "plan_hash":
                    out["plan_changes"].append({"series_id": series_id, "label": series["label"], "position": i,
                                                "run_id": record["run_id"], "run_time": record["run_time"],
                                                "before": event["before"], "after": event["after"],
                                                "value_before": records[i - 1]["value"], "value_after": record["value"]})
    out["series"].sort(key=lambda s: (not any(c["alert"] for c in s["changes"]) and not s.get("failures"), s["label"]))
    return out


# above this share of the CPUs taken by others, noise bounds nothing (1 / (1 - share) grows without end)
NOISE_BOUND_MAX_PCT = 90.0


def noise_slowdown_bound(row: dict[str, Any]) -> float | None:
    """The most a run's measured noise could have slowed CPU-bound work: when other processes and
    the hypervisor took a share ``s`` of the machine's CPU time, what was left is ``1 - s`` of it, so
    the work took at most ``1 / (1 - s)`` times as long. ``s`` is the largest over the run's
    executions (the median of values each at most that much slower is at most that much slower).
    None when no share was measured or it leaves too little to bound. It bounds CPU noise only, the
    noise the sampler sees: a neighbour's disk I/O is neither flagged nor bounded here."""
    share = row.get("noise_max_pct")
    if share is None or share != share or share >= NOISE_BOUND_MAX_PCT:
        return None
    return 1.0 / (1.0 - max(float(share), 0.0) / 100.0)


def _beyond_noise(row: dict[str, Any], before: list[float], thresholds: Thresholds, better: Better) -> bool:
    """A run after a regression whose value, with its noise's largest possible slowdown taken out,
    is still worse than every run before the change and than their median by ``min_effect``."""
    bound = noise_slowdown_bound(row)
    value = row.get("value")
    if bound is None or value is None or value != value or not before:
        return False
    median = statistics.median(before)
    if better is Better.LOWER:
        return value / bound > max(max(before), median * (1 + thresholds.min_effect))
    return value * bound < min(min(before), median / (1 + thresholds.min_effect))


def _weigh_noise(change, rows: list[dict[str, Any]], thresholds: Thresholds, better: Better) -> None:
    """A regression is confirmed by runs whose step their noise cannot explain: runs measured in
    quiet, and runs measured under noise whose value is worse than every run before the change
    even with the most their noise could have slowed them taken out (``noise_slowdown_bound``: a
    24x step under 50% other CPU, which can at most double a time, still counts). With fewer than
    ``confirm_runs`` of them after it, it is reported, not confirmed (a busy host makes everything
    slower; the rank test cannot tell that from a regression)."""
    if not (change.regression and change.confirmed):
        return
    before = [v for v in (rows[i]["value"] for i in change.before.runs) if v is not None and v == v]
    noisy = [i for i in change.after.runs if rows[i].get("noisy")]
    beyond = [i for i in noisy if _beyond_noise(rows[i], before, thresholds, better)]
    quiet = len(change.after.runs) - len(noisy)
    if beyond:
        change.noise_words = (f"{len(beyond)} of its {len(change.after.runs)} runs after were measured under noise "
                              f"and count: each is worse than every run before even "
                              f"{max(noise_slowdown_bound(rows[i]) for i in beyond):.2f}x faster, the most its "
                              f"noise could have slowed it")
    if quiet + len(beyond) < thresholds.confirm_runs:
        change.confirmed = False
        change.why_not_confirmed = (f"{len(noisy)} of its {len(change.after.runs)} runs after were measured under "
                                    f"noise (other processes' CPU or steal), {len(noisy) - len(beyond)} of them by "
                                    f"enough to explain their step: {quiet} quiet and {len(beyond)} beyond their "
                                    f"noise, {thresholds.confirm_runs} needed")


def _failures(every: list[dict[str, Any]], valid: list[dict[str, Any]], thresholds: Thresholds,
              metric) -> list[dict[str, Any]]:
    """Runs among the series' last ``recent_runs`` that timed out or failed validation after a good
    history (at least ``min_baseline_runs`` valid runs with a value before them): each one alerts.
    A timeout is a step of at least the statement timeout; an INVALID run has no value at all."""
    import statistics as _stats

    out = []
    for position, row in enumerate(every):
        if position < len(every) - thresholds.recent_runs:
            continue
        good = [r["value"] for r in valid if r["run_time"] < row["run_time"] and r["value"] == r["value"]
                and r["value"] is not None]
        if len(good) < thresholds.min_baseline_runs:
            continue
        kinds = (["timeout"] if row.get("n_timeout") else []) + \
            (["invalid"] if not row["valid"] and row.get("validated") else [])
        baseline = _stats.median(good[-thresholds.baseline_runs:]) if kinds else None
        for kind in kinds:
            what = (f"{int(row['n_timeout'])} of {int(row['n'])} executions timed out (a step of at least the "
                    f"statement timeout) after {len(good)} good runs at median {baseline:.6g} {metric.unit}"
                    if kind == "timeout" else
                    f"the run failed its study's validation after {len(good)} good runs: its figures are not compared")
            out.append(_failure(kind, position, row, what, baseline))
    return out


def _failure(kind: str, position: int, row: dict[str, Any], what: str, baseline: float) -> dict[str, Any]:
    return {"kind": kind, "run_id": row["run_id"], "dag_id": row["dag_id"], "run_time": _plain(row["run_time"]),
            "index": position, "effect_pct": None, "interval_words": what, "interval": None, "pvalue": None,
            "events": [], "blame": [], "variables_changed": {}, "host_changed": {}, "plan_changed": False,
            "before_median": baseline, "after_median": _plain(row["value"]), "valid": bool(row["valid"])}
