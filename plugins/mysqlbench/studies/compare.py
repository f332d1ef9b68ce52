"""Servers side by side: the same units at the same settings on several servers, from one study
run (``targets``) or from runs on different servers. One module, so the study report, the
regression report and the UI compare the same way.

Input is the execution frame (``analysis.execution_frame``: one row per execution with ``server``
and ``target``) and the plans recorded per point. Output: per unit and setting, the primary
metric's median on each server and, against the first server, the effect estimate
(``mysqlbench.statistics``: the ratio with its 95% interval, n per side and verdict; the two sides
are independent executions, so unpaired), each counter's median per server (absent where the
server lacks it, never 0), and per server the plan hash that is comparable across flavors
(``measure.comparable_plan_hash``: the same join order and accesses hash the same on MariaDB's and
MySQL's JSON).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from mysqlbench.statistics import DEFAULT_BAND
from mysqlbench.statistics import compare as estimate
from mysqlbench.workloads.base import Metric

_TARGET = re.compile(r"^target=\S+ ?")


def setting_of(point: str) -> str:
    """A point's label without its server: the setting the servers are compared at."""
    return _TARGET.sub("", point) or "(base)"


def server_label(row: Any) -> str:
    return f"{row['server']} ({row['target']})" if row.get("target") else str(row["server"])


def _interval(effect) -> str:
    if effect.ci_low is None:
        return f"none ({effect.why})" if effect.estimate is not None else effect.why
    return f"{1 + effect.ci_low:.3f} .. {1 + effect.ci_high:.3f} ({100 * effect.confidence:.3g}%)"


def compare(frame: pd.DataFrame, primary: Metric, counters: tuple[str, ...] = (),
            plans: list[dict[str, Any]] | None = None, band: float = DEFAULT_BAND) -> dict[str, Any]:
    """Side-by-side tables; ``servers`` lists the servers in the order they are compared (the
    first is the baseline of the ratios). Beside each ratio (Hodges-Lehmann, B / A): its interval,
    n per side and the verdict against ``band``; ``effects`` holds each ratio's estimates per
    (subject, setting), for a chart."""
    if frame.empty or "server" not in frame:
        return {"servers": [], "primary": None, "counters": {}, "plans": None}
    frame = frame.assign(setting=frame["point"].map(setting_of), label=frame.apply(server_label, axis=1))
    if frame["label"].nunique() < 2:
        return {"servers": sorted(frame["label"].unique()), "primary": None, "counters": {}, "plans": None}
    ok = frame[frame["status"] == "ok"]
    servers = list(dict.fromkeys(frame.sort_values(["server", "target"])["label"]))
    index = ["subject", "setting"]
    medians = ok.pivot_table(index=index, columns="label", values="primary", aggfunc="median")
    medians = medians.reindex(columns=servers)
    baseline = servers[0]
    values = ok.groupby(index + ["label"])["primary"].agg(list)
    every_effect = {}
    for other in servers[1:]:
        ratio = f"{other} / {baseline}"
        effects = every_effect[ratio] = {
            key: estimate(values.get((*key, baseline), []), values.get((*key, other), []), band=band)
            for key in medians.index}
        medians[ratio] = [None if e.estimate is None else 1 + e.estimate for e in effects.values()]
        medians[f"{ratio}: 95% CI"] = [_interval(e) for e in effects.values()]
        medians[f"{ratio}: n"] = [f"{e.n_a} vs {e.n_b}" for e in effects.values()]
        medians[f"{ratio}: verdict"] = [e.verdict.value for e in effects.values()]
    not_applicable = frame[frame["status"] == "not_applicable"].groupby(index + ["label"])["why"].first()
    counter_tables = {}
    for counter in counters:
        if counter in ok:
            table = ok.pivot_table(index=index, columns="label", values=counter, aggfunc="median", dropna=False)
            counter_tables[counter] = table.reindex(columns=servers)  # NaN: absent on that server
    plan_table = None
    if plans:
        label_of = frame.drop_duplicates("point").set_index("point")["label"].to_dict()
        rows = [{"subject": p["subject"], "setting": setting_of(p["point"]), "label": label_of.get(p["point"]),
                 "plan_hash": p.get("comparable_hash") or p["plan_hash"]} for p in plans if p["point"] in label_of]
        if rows:
            plan_table = pd.DataFrame(rows).pivot_table(index=index, columns="label", values="plan_hash",
                                                        aggfunc="first").reindex(columns=servers)
            # the same only when every server recorded a plan and they all hash alike: one plan
            # alone is not "the same" as a plan nobody recorded
            plan_table["same plan structure"] = plan_table.notna().all(axis=1) & (plan_table.nunique(axis=1) == 1)
    return {"servers": servers, "primary": medians, "not_applicable": not_applicable, "counters": counter_tables,
            "plans": plan_table, "better": primary.better.value, "effects": every_effect, "band": band}


def server_of(row: dict[str, Any]) -> str:
    """A recorded row's server as compared: flavor and numeric version ("mariadb 10.11.19")."""
    version = row.get("server_version") or "?"
    number = re.match(r"\d+(?:\.\d+)*", version)
    return f"{row.get('server_flavor') or '?'} {number.group(0) if number else version}"


def frame_of_runs(runs: list[tuple[str, list[dict[str, Any]]]], primary: Metric) -> tuple[pd.DataFrame, list[dict]]:
    """Several recorded runs as one execution frame for ``compare``: each run's measure_point
    sample rows under its label (``runs``: (label, rows) in the order to compare them; labels must
    sort in that order), and the plans each recorded. Runs measured the same points, so each run's
    points are told apart by a ``target=<n>`` prefix that ``setting_of`` takes off again."""
    import json

    from mysqlbench.measure import comparable_plan_hash
    from mysqlbench.results.store import SampleKind
    from mysqlbench.studies.analysis import execution_frame

    frames, plans = [], []
    for n, (label, rows) in enumerate(runs):
        rows = [{**r, "point": f"target=run{n} {r['point']}"} for r in rows if r.get("point") is not None]
        frame = execution_frame(rows, primary)
        frame["server"], frame["target"] = label, None
        frames.append(frame)
        for row in rows:
            if row["kind"] == SampleKind.PLAN.value:
                meta = json.loads(row["metadata"])
                plans.append({"subject": row["subject"], "point": row["point"], "plan_hash": meta["plan_hash"],
                              "comparable_hash": comparable_plan_hash(meta["plan"])})
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return frame, plans


def as_records(comparison: dict[str, Any]) -> dict[str, Any]:
    """The comparison in summary.json's terms (plain lists and numbers; absent as null)."""
    def records(table: pd.DataFrame | None) -> list[dict[str, Any]]:
        if table is None:
            return []
        return [{k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
                for row in table.reset_index().to_dict(orient="records")]

    return {"servers": comparison["servers"], "primary": records(comparison.get("primary")),
            "counters": {k: records(v) for k, v in comparison.get("counters", {}).items()},
            "plans": records(comparison.get("plans"))}
