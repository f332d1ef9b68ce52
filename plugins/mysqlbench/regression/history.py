"""Each metric's history per series, read from the results store: one value per study run.

A series is what must stay comparable from run to run: the study, the unit (a query, a sysbench
test, a TPC-C driver), the point's settings (cache, knobs, swept params), the target's name and
flavor, the dataset and the machine (its host name, CPU model and architecture). What may change
under a series without making a new one is an *event* on it: the server version (an upgrade), the
package commit, the server's configuration (the variables snapshot the measuring session saw), the
study spec, the plan, and the host's state (kernel, memory, disks and their I/O schedulers, CPU
governor: the rest of the host facts). So an upgrade, or a kernel update, that slows a query shows
as a step in one series, at that event, instead of starting a new series with no baseline.

A run's value is the median of its ok executions' primary metric (the study's own gate decided
which runs count: runs whose validation failed are left out, and said so). Runs are ordered by
when they measured, not by logical date: asset-triggered runs have none, and a backfill's logical
dates are not when the server ran.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pandas as pd
import sqlalchemy as sa

from mysqlbench.errors import InvalidInput
from mysqlbench.measure import plan_outline
from mysqlbench.regression.spec import releases_dag_ids
from mysqlbench.results.lineage import stable_hash
from mysqlbench.results.store import ResultsStore, SampleKind, last_try, samples, validations
from mysqlbench.studies.compare import setting_of
from mysqlbench.workloads.base import Metric

log = logging.getLogger(__name__)

KEY = ["study", "subject", "setting", "target", "flavor", "dataset_id", "machine"]
MACHINE_FACTS = ("hostname", "cpu_model", "machine")  # what the machine is; every other host fact is its state
# lineage that may change inside a series: each change is an event at the run it first appears in
EVENTS = {
    "server_version": "server version",
    "package_version": "package commit",
    "variables_hash": "server configuration",
    "spec_hash": "study spec",
    "plan_hash": "plan",
    "host_hash": "host state",
}
STUDY_SUITE_TASK = "validate"  # the study DAG's gate; its validation row says whether a run counts


def primary_metric(study: str) -> Metric:
    """The study's primary metric, from its spec's workload (what the study's own report ranks by)."""
    from mysqlbench.studies.spec import load_spec
    from mysqlbench.workloads.base import workload_class

    return workload_class(load_spec(study).workload).primary


def _meta(text: str | None) -> dict[str, Any]:
    return json.loads(text) if text else {}


def _setting(meta: dict[str, Any]) -> str:
    """The point's settings as one canonical string: cache, every knob in force, the swept values."""
    return json.dumps({"cache": meta.get("cache"), "knobs": meta.get("knobs") or {}, "swept": meta.get("swept") or {}},
                      sort_keys=True, default=str)


def setting_words(setting: str) -> str:
    """A series' setting (``_setting``'s JSON) in words: cache, then every knob and swept value,
    so two series at other fixed knobs (a 4G and a 256M buffer pool) never read alike."""
    data = json.loads(setting)
    parts = [f"cache={data.get('cache')}"] if data.get("cache") else []
    parts += [f"{k}={v}" for k, v in sorted({**(data.get("knobs") or {}), **(data.get("swept") or {})}.items())]
    return " ".join(parts) or "(base)"


def series_labels(keys: list[dict[str, Any]]) -> list[str]:
    """Each series' label: study, unit, setting, target and flavor; where two would still read
    alike, the key fields that tell them apart (dataset, machine) are added."""
    def base(key):
        return f"{key['study']} {key['subject']} [{setting_words(key['setting'])}] on {key['target']} ({key['flavor']})"

    bases = [base(k) for k in keys]
    labels = list(bases)
    for i, key in enumerate(keys):
        alike = [other for j, other in enumerate(keys) if j != i and bases[j] == bases[i]]
        if alike:
            extra = []
            if any(o["dataset_id"] != key["dataset_id"] for o in alike):
                extra.append(f"dataset {key['dataset_id']}")
            if any(o["machine"] != key["machine"] for o in alike):
                machine = json.loads(key["machine"]) if str(key["machine"]).startswith("{") else {}
                extra.append(f"host {machine.get('hostname') or key['machine']}")
            labels[i] += "".join(f", {e}" for e in extra)
    return labels


def _valid_runs(conn, studies: list[str]) -> dict[tuple[str, str], bool]:
    query = sa.select(validations.c.dag_id, validations.c.run_id, validations.c.success) \
        .where(validations.c.study.in_(studies), validations.c.task_id == STUDY_SUITE_TASK, last_try(validations))
    verdict: dict[tuple[str, str], bool] = {}
    for dag_id, run_id, success in conn.execute(query):
        verdict[(dag_id, run_id)] = verdict.get((dag_id, run_id), True) and bool(success)
    return verdict


def _machines(store: ResultsStore, host_hashes) -> dict[str, str]:
    """Each host hash's machine (``MACHINE_FACTS`` from its kept facts), as one canonical string."""
    out = {}
    for key in host_hashes:
        facts = store.host_facts(key)
        if facts is not None:
            out[key] = json.dumps({k: facts.get(k) for k in MACHINE_FACTS}, sort_keys=True)
    return out


def _noise(store: ResultsStore, studies: list[str]) -> pd.DataFrame:
    """Per execution, whether it was measured under noise: other processes' CPU or the hypervisor's
    steal over the window above the study report's thresholds (absent figures mark nothing)."""
    from mysqlbench.studies.analysis import NOISE_OTHER_CPU_PCT, NOISE_STEAL_PCT

    key = ["dag_id", "run_id", "point", "subject", "repetition"]
    with store.engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(
            sa.select(*[samples.c[c] for c in key], samples.c.metric, samples.c.value)
            .where(samples.c.kind == SampleKind.OS.value, samples.c.study.in_(studies),
                   samples.c.metric.in_(["os_other_cpu_pct", "os_steal_pct"]), last_try(samples)))]
    if not rows:
        return pd.DataFrame()
    wide = pd.DataFrame(rows).pivot_table(index=key, columns="metric", values="value", aggfunc="first")
    other = wide.get("os_other_cpu_pct", pd.Series(float("nan"), index=wide.index))
    steal = wide.get("os_steal_pct", pd.Series(float("nan"), index=wide.index))
    # the share of the machine's CPU time others took (processes, the hypervisor): absent when
    # neither was measured
    taken = other.fillna(0) + steal.fillna(0)
    taken = taken.where(other.notna() | steal.notna())
    out = pd.DataFrame({"noisy": (other > NOISE_OTHER_CPU_PCT) | (steal > NOISE_STEAL_PCT), "other_cpu_pct": other,
                        "noise_pct": taken})
    return out.reset_index()


def executions(store: ResultsStore, studies: list[str], include_invalid: bool = False
               ) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    """Every recorded execution of the studies' primary metrics (one row each, with the run's
    lineage, the point's settings, the machine and whether it was measured under noise), every
    recorded plan hash, and the runs left out (no validation yet, or INVALID) with why. With
    ``include_invalid`` those runs' executions are in the frame too (``valid`` False)."""
    metrics = {}
    for study in studies:
        try:
            metrics[study] = primary_metric(study)
        except InvalidInput as exc:
            raise InvalidInput(f"regression analysis of {study!r}: {exc}") from exc
    wanted = sa.or_(*[sa.and_(samples.c.study == study, samples.c.metric == metric.name)
                      for study, metric in metrics.items()])
    columns = [samples.c[c] for c in ("study", "dag_id", "run_id", "point", "subject", "repetition", "value", "status",
                                       "metadata", "server_flavor", "server_version", "package_version",
                                       "variables_hash", "spec_hash", "dataset_id", "host_hash", "recorded_at")]
    with store.engine.connect() as conn:
        verdict = _valid_runs(conn, studies)
        rows = [dict(r._mapping) for r in conn.execute(
            sa.select(*columns).where(samples.c.kind == SampleKind.METRIC.value, wanted, last_try(samples)))]
        plan_rows = [dict(r._mapping) for r in conn.execute(
            sa.select(samples.c.study, samples.c.dag_id, samples.c.run_id, samples.c.point, samples.c.subject,
                      samples.c.metadata).where(samples.c.kind == SampleKind.PLAN.value, samples.c.study.in_(studies),
                                                last_try(samples)))]
    if not rows:
        return pd.DataFrame(), pd.DataFrame(), []
    frame = pd.DataFrame(rows)
    frame["recorded_at"] = pd.to_datetime(frame["recorded_at"], utc=True)
    left_out = []
    keep = set()
    # a study run a releases DAG triggered measures one server version on that version's own
    # target: its trend report compares the versions; here it would be a one-run series forever
    across_versions = {f"{dag_id}__": dag_id for dag_id in releases_dag_ids()}
    versions_runs = set()
    for (dag_id, run_id), started in frame.groupby(["dag_id", "run_id"])["recorded_at"].min().items():
        by = next((d for prefix, d in across_versions.items() if run_id.startswith(prefix)), None)
        if by is not None:
            versions_runs.add((dag_id, run_id))
            left_out.append({"dag_id": dag_id, "run_id": run_id, "run_time": started.isoformat(),
                             "why": f"measured across server versions by {by}: its trend report compares them",
                             "invalid": False})
            continue
        state = verdict.get((dag_id, run_id))
        if state is True:
            keep.add((dag_id, run_id))
        else:
            left_out.append({"dag_id": dag_id, "run_id": run_id, "run_time": started.isoformat(),
                             "why": "validation failed (INVALID run)" if state is False else "not validated",
                             "invalid": state is False})
    if versions_runs:
        frame = frame[[(d, r) not in versions_runs for d, r in zip(frame["dag_id"], frame["run_id"], strict=True)]]
        if frame.empty:
            return pd.DataFrame(), pd.DataFrame(), left_out
    frame["valid"] = [(d, r) in keep for d, r in zip(frame["dag_id"], frame["run_id"], strict=True)]
    frame["validated"] = [(d, r) in verdict for d, r in zip(frame["dag_id"], frame["run_id"], strict=True)]
    if not include_invalid:
        frame = frame[frame["valid"]].copy()
    frame["machine"] = frame["host_hash"].map(_machines(store, frame["host_hash"].dropna().unique()))
    frame["machine"] = frame["machine"].fillna("host " + frame["host_hash"].fillna("?"))
    noise = _noise(store, studies)
    if noise.empty:
        frame["noisy"], frame["other_cpu_pct"], frame["noise_pct"] = False, float("nan"), float("nan")
    else:
        frame["repetition"] = frame["repetition"].astype(float)
        noise["repetition"] = noise["repetition"].astype(float)
        frame = frame.merge(noise, on=["dag_id", "run_id", "point", "subject", "repetition"], how="left")
    meta = frame["metadata"].map(_meta)
    frame["setting"] = meta.map(_setting)
    frame["target"] = meta.map(lambda m: m.get("target") or "")
    frame["flavor"] = frame["server_flavor"].fillna("?")
    frame["label_point"] = frame["point"].map(setting_of)
    frame["metric"] = frame["study"].map(lambda s: metrics[s].name)
    frame = frame.drop(columns=["metadata"])
    plans = pd.DataFrame(plan_rows)
    if not plans.empty:
        plan_meta = plans["metadata"].map(_meta)
        plans["plan_hash"] = plan_meta.map(lambda m: m.get("comparable_hash") or m.get("plan_hash"))
        # what the plan does, one line per table access in join order (read whole: servers whose
        # JSON repeats keys are parsed with every table kept)
        plans["plan_outline"] = plan_meta.map(lambda m: plan_outline(m["plan"]) if m.get("plan") else [])
        plans = plans.drop(columns=["metadata"])
    return frame, plans, left_out


def history(store: ResultsStore, studies: list[str], include_invalid: bool = False
            ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """One row per (series, run): the series key and id, the run's value (median of its ok
    executions; NaN when none was ok), how many executions were ok, timed out, measured under
    noise and recorded, the run's time and lineage, the plan hash, and the events at that run
    (what changed since the series' previous valid run). Sorted by series, then time. With
    ``include_invalid``, INVALID runs are rows too (``valid`` False; no events of their own)."""
    frame, plans, left_out = executions(store, studies, include_invalid)
    if frame.empty:
        return pd.DataFrame(), left_out
    frame["ok_value"] = frame["value"].where(frame["status"] == "ok")
    frame["timed_out"] = frame["status"] == "timeout"
    frame["noisy"] = frame["noisy"].astype("boolean").fillna(False).astype(bool)
    lineage = ["server_version", "package_version", "variables_hash", "spec_hash", "host_hash", "valid", "validated"]
    grouped = frame.groupby(KEY + ["dag_id", "run_id"], dropna=False, sort=False)
    runs = grouped.agg(value=("ok_value", "median"), n_ok=("ok_value", "count"), n=("status", "size"),
                       n_timeout=("timed_out", "sum"), n_noisy=("noisy", "sum"),
                       other_cpu_pct=("other_cpu_pct", "median"), noise_max_pct=("noise_pct", "max"),
                       run_time=("recorded_at", "min"), metric=("metric", "first"), point=("label_point", "first"),
                       raw_point=("point", "first"), **{c: (c, "first") for c in lineage}).reset_index()
    # the run's spread over its ok executions, and the statuses it had: grouped whole, not a Python
    # function per run (which was most of the history's cost over a year of nightly runs)
    # (row i of runs is group i: both in order of first appearance)
    numbered = frame.assign(_group=grouped.ngroup())
    quartiles = numbered.groupby("_group")["ok_value"].quantile([0.25, 0.75]).unstack().reindex(range(len(runs)))
    runs["iqr"] = (quartiles[0.75] - quartiles[0.25]).to_numpy()
    seen = numbered.drop_duplicates(["_group", "status"]).sort_values("status")
    runs["statuses"] = seen.groupby("_group")["status"].agg(",".join).reindex(range(len(runs))).to_numpy()
    if not plans.empty:
        plan_of = plans.drop_duplicates(["dag_id", "run_id", "point", "subject"]) \
            .rename(columns={"point": "raw_point"})[["dag_id", "run_id", "raw_point", "subject", "plan_hash",
                                                     "plan_outline"]]
        runs = runs.merge(plan_of, on=["dag_id", "run_id", "raw_point", "subject"], how="left")
    else:
        runs["plan_hash"], runs["plan_outline"] = None, None
    runs["series_id"] = runs[KEY].apply(lambda row: stable_hash(list(row)), axis=1)
    runs = runs.sort_values(["series_id", "run_time", "run_id"]).reset_index(drop=True)
    # a run measured under noise: most of its executions were
    runs["noisy"] = runs["n_noisy"] > runs["n"] / 2
    runs["events"] = _events(runs)
    return runs, left_out


def _events(runs: pd.DataFrame) -> list[list[dict[str, Any]]]:
    """What changed at each valid run since the series' previous valid run (none at a series'
    first run, nor at an INVALID one)."""
    out: list[list[dict[str, Any]]] = []
    previous: dict[str, Any] = {}
    for row in runs.to_dict(orient="records"):
        if not row.get("valid", True):
            out.append([])
            continue
        before = previous.get(row["series_id"])
        events = []
        if before is not None:
            for column, what in EVENTS.items():
                old, new = before.get(column), row.get(column)
                if not _same(old, new):
                    events.append({"event": what, "field": column, "before": old, "after": new})
        out.append(events)
        previous[row["series_id"]] = row
    return out


def sides_differences(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What differs between the two sides of a change, as events: each lineage field whose values
    on the runs before and on the runs after have none in common, with each side's most common
    value. A setting that already held on runs before the step is not its cause, however recently
    it changed (what changed at the step's run alone is its ``events``)."""
    from collections import Counter

    def values(rows: list[dict[str, Any]], column: str) -> list[Any]:
        return [None if _same(r.get(column), None) else r.get(column) for r in rows]

    out = []
    for column, what in EVENTS.items():
        old, new = values(before, column), values(after, column)
        if old and new and not set(old) & set(new):
            out.append({"event": what, "field": column, "before": Counter(old).most_common(1)[0][0],
                        "after": Counter(new).most_common(1)[0][0]})
    return out


def _same(old: Any, new: Any) -> bool:
    missing = old is None or (isinstance(old, float) and old != old), new is None or (isinstance(new, float) and new != new)
    return all(missing) if any(missing) else old == new


def host_changes(store: ResultsStore, before_hash: str | None, after_hash: str | None) -> dict[str, Any]:
    """Which host facts differ between two host snapshots (fact: [before, after]; a disk's facts
    as ``disks.NAME.fact``); a snapshot the store does not hold is said so."""
    if not before_hash or not after_hash or before_hash == after_hash:
        return {}
    old, new = store.host_facts(before_hash), store.host_facts(after_hash)
    if old is None or new is None:
        return {"(unknown)": "a host snapshot is not in the store"}
    old, new = _flat(old), _flat(new)
    return {name: [old.get(name), new.get(name)] for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)}


def _flat(facts: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in facts.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}."))
        elif isinstance(value, list) and all(isinstance(v, dict) and "name" in v for v in value):
            for item in value:
                out.update(_flat({k: v for k, v in item.items() if k != "name"}, f"{name}.{item['name']}."))
        else:
            out[name] = value
    return out


def validation_failures(store: ResultsStore, dag_id: str, run_id: str) -> list[str]:
    """The checks a run's study validation failed (its gate's last try), in words."""
    with store.engine.connect() as conn:
        texts = conn.execute(sa.select(validations.c.failures).where(
            validations.c.dag_id == dag_id, validations.c.run_id == run_id,
            validations.c.task_id == STUDY_SUITE_TASK, last_try(validations))).scalars().all()
    out = []
    for text in texts:
        for failure in json.loads(text or "[]"):
            words = failure.get("check") or failure.get("expectation") or "?"
            if failure.get("where"):
                words += f" ({failure['where']})"
            if words not in out:
                out.append(words)
    return out
