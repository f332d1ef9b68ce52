"""The regression analysis: every series of the studies' history through change-point detection,
each change with the runs on either side (their lineage) and what else changed at that run (server
version, package commit, configuration with the variables that differ, study spec, plan). Plan
changes are reported as events even when the timing did not move."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pandas as pd

from mysqlbench.regression.detect import Thresholds, change_points, readiness
from mysqlbench.regression.history import KEY, history, primary_metric, sides_differences, variable_changes
from mysqlbench.results.store import ResultsStore

LINEAGE = ["dag_id", "run_id", "server_version", "package_version", "variables_hash", "spec_hash", "plan_hash"]


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
            "events": row["events"], **{c: _plain(row.get(c)) for c in LINEAGE}}


def _label(row: dict[str, Any]) -> str:
    return f"{row['study']} {row['subject']} [{row['point']}] on {row['target']} ({row['flavor']})"


def analyse(store: ResultsStore, studies: list[str], thresholds: Thresholds) -> dict[str, Any]:
    """The analysis as plain data (the regression report's JSON): ``series`` (each with its runs,
    changes and events), ``alerts`` (confirmed, recent regressions), ``plan_changes``, and the
    runs ``left_out`` with why."""
    runs, left_out = history(store, studies)
    metrics = {study: primary_metric(study) for study in studies}
    out: dict[str, Any] = {"studies": studies, "thresholds": thresholds.model_dump(), "series": [], "alerts": [],
                           "plan_changes": [], "left_out": left_out,
                           "runs_analysed": int(runs[["dag_id", "run_id"]].drop_duplicates().shape[0]) if not runs.empty else 0}
    if runs.empty:
        return out
    for series_id, group in runs.groupby("series_id", sort=False):
        rows = group.sort_values(["run_time", "run_id"]).to_dict(orient="records")
        first = rows[0]
        metric = metrics[first["study"]]
        records = [_run_record(i, r) for i, r in enumerate(rows)]
        changes = []
        values = [r["value"] for r in rows]
        found = change_points(values, thresholds, metric.better)
        for change in found:
            at = rows[change.index]
            # blamed: what differs between the runs before and the runs after, not what changed
            # since the previous run (a setting both sides ran with did not make the step)
            blame = sides_differences([rows[i] for i in change.before.runs], [rows[i] for i in change.after.runs])
            config = next((b for b in blame if b["field"] == "variables_hash"), None)
            record = change.as_dict() | {
                "run_id": at["run_id"], "dag_id": at["dag_id"], "run_time": _plain(at["run_time"]),
                "events": at["events"], "blame": blame,
                "variables_changed": variable_changes(store, config["before"], config["after"]) if config else {},
                "plan_changed": any(e["field"] == "plan_hash" for e in at["events"]),
                "runs_before": [records[i] for i in change.before.runs],
                "runs_after": [records[i] for i in change.after.runs],
            }
            changes.append(record)
        series = {"series_id": series_id, "label": _label(first), "key": {k: _plain(first[k]) for k in KEY},
                  "metric": metric.name, "unit": metric.unit, "better": metric.better.value,
                  "runs": records, "changes": changes, "readiness": readiness(values, found, thresholds)}
        out["series"].append(series)
        for change in changes:
            if change["alert"]:
                out["alerts"].append({"series_id": series_id, "label": series["label"], "metric": metric.name,
                                      "unit": metric.unit, **{k: change[k] for k in (
                                          "run_id", "dag_id", "run_time", "index", "effect_pct", "interval_words",
                                          "interval", "pvalue", "events", "blame",
                                          "variables_changed", "plan_changed")},
                                      "before_median": change["before"]["median"],
                                      "after_median": change["after"]["median"]})
        for i, record in enumerate(records):
            for event in record["events"]:
                if event["field"] == "plan_hash":
                    out["plan_changes"].append({"series_id": series_id, "label": series["label"], "position": i,
                                                "run_id": record["run_id"], "run_time": record["run_time"],
                                                "before": event["before"], "after": event["after"],
                                                "value_before": records[i - 1]["value"], "value_after": record["value"]})
    out["series"].sort(key=lambda s: (not any(c["alert"] for c in s["changes"]), s["label"]))
    return out
