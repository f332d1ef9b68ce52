"""From recorded samples to what a study reports, on one pandas frame: one row per execution
(built from the samples' explicit execution columns and kinds, never from metric names),
summaries per point with groupby (median, min, max, coefficient of variation), and findings in
words from on/off rows merged side by side, the direction taken from the workload's primary metric."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from mysqlbench.results.store import SampleKind
from mysqlbench.workloads.base import Better, Metric

KEY = ["point", "subject", "repetition"]
VALUE_KINDS = (SampleKind.METRIC.value, SampleKind.COUNTER.value, SampleKind.GAUGE.value)
READS = "Innodb_buffer_pool_reads"
READ_AHEAD = "Innodb_buffer_pool_read_ahead"


def _meta(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else (value or {})


def execution_frame(sample_rows: list[dict[str, Any]], primary: Metric) -> pd.DataFrame:
    """One row per execution: point, subject, repetition, cache, status, ``primary`` (the primary
    metric), every metric, counter and gauge as a column (NaN where absent), and the evidence
    validation needs (checksum, oracle verdict, warm, swept knobs)."""
    rows = [r for r in sample_rows if r.get("point") is not None and r.get("subject") is not None]
    columns = KEY + ["cache", "status", "primary", "order", "swept", "warm", "checksum", "oracle", "why", "target",
                     "server"]
    if not rows:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(rows)
    frame["repetition"] = frame["repetition"].fillna(-1).astype(int)  # -1: a point that never ran a unit
    frame["meta"] = frame["metadata"].map(_meta)
    values = frame[frame["kind"].isin(VALUE_KINDS)]
    wide = values.pivot_table(index=KEY, columns="metric", values="value", aggfunc="first", dropna=False)
    heads = frame[frame["kind"] == SampleKind.METRIC.value].drop_duplicates(KEY).set_index(KEY)
    out = pd.DataFrame(index=heads.index)
    primary_rows = frame[(frame["kind"] == SampleKind.METRIC.value) & (frame["metric"] == primary.name)] \
        .drop_duplicates(KEY).set_index(KEY)
    out["status"] = primary_rows["status"].reindex(out.index).fillna(heads["status"])
    out["primary"] = primary_rows["value"].reindex(out.index)
    meta = heads["meta"]
    out["cache"] = meta.map(lambda m: m.get("cache"))
    out["order"] = meta.map(lambda m: m.get("order"))
    out["swept"] = meta.map(lambda m: json.dumps(m.get("swept", {}), sort_keys=True))
    out["warm"] = meta.map(lambda m: (m.get("cache_evidence") or {}).get("warm")).astype("boolean")
    out["why"] = meta.map(lambda m: m.get("why"))
    out["target"] = meta.map(lambda m: m.get("target"))
    # the server the execution ran on, as its samples' lineage says (flavor and exact version)
    out["server"] = (heads["server_flavor"].fillna("?") + " " + heads["server_version"].fillna("?")
                     .str.extract(r"^(\d+(?:\.\d+)*)", expand=False).fillna("?")) if "server_flavor" in heads else None
    answers = frame[frame["kind"] == SampleKind.ANSWER.value].drop_duplicates(KEY).set_index(KEY)["meta"]
    out["checksum"] = answers.map(lambda m: m.get("checksum")).reindex(out.index)
    out["oracle"] = answers.map(lambda m: m.get("oracle")).reindex(out.index)
    out = out.join(wide.reindex(out.index), how="left")
    return out.reset_index()


def summaries(frame: pd.DataFrame, counters: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per (subject, point): runs, timeouts, not-applicable reason, warmth, and the primary
    metric's median, min, max and coefficient of variation (population std / mean) over the point's
    ok executions; the median of each counter."""
    if frame.empty:
        return pd.DataFrame()
    groups = frame.groupby(["subject", "point"], sort=True)
    out = groups.agg(cache=("cache", "first"), swept=("swept", "first"), target=("target", "first"),
                     server=("server", "first"), runs=("status", "size"),
                     timeouts=("status", lambda s: int((s == "timeout").sum())),
                     killed=("status", lambda s: int((s == "killed").sum())),
                     not_applicable=("why", lambda s: next((w for w in s if isinstance(w, str)), None)),
                     warm=("warm", "first"))
    ok = frame[frame["status"] == "ok"]
    stats = ok.groupby(["subject", "point"])["primary"].agg(median="median", min="min", max="max", mean="mean",
                                                             std=lambda s: s.std(ddof=0), n="count")
    stats["cv"] = (stats["std"] / stats["mean"]).where((stats["n"] > 1) & (stats["mean"] > 0), 0.0)
    out = out.join(stats[["median", "min", "max", "cv"]], how="left")
    if "server_seconds" in ok:
        out = out.join(ok.groupby(["subject", "point"])["server_seconds"].median().rename("median_server"), how="left")
    present = [c for c in counters if c in ok]
    if present:
        out = out.join(ok.groupby(["subject", "point"])[present].median(), how="left")
    for column in counters:
        if column not in out:
            out[column] = float("nan")  # absent on this server: no column of numbers to invent
    return out.reset_index()


def _state(value: Any) -> str | None:
    if isinstance(value, bool):
        return "on" if value else "off"
    return {"on": "on", "true": "on", "off": "off", "false": "off"}.get(str(value).lower())


def _pct_phrase(pct: float, less: str, more: str) -> str:
    if abs(pct) < 0.5:
        return f"about the same {less.split()[-1]}"
    return f"{abs(pct):.0f}% {less if pct < 0 else more}"


def findings(summary: pd.DataFrame, primary: Metric) -> list[str]:
    """For every swept on/off knob: pair each "on" point with the "off" point that differs only in
    that knob (same subject and cache), and say the median change in physical reads, read-ahead and
    the primary metric in words. Whether a change is good follows ``primary.better``."""
    if summary.empty or "median" not in summary:
        return []
    summary = summary.assign(target=summary["target"].fillna("") if "target" in summary else "",
                             server=summary["server"].fillna("") if "server" in summary else "")
    swept = summary["swept"].map(json.loads)
    switches = sorted({k for s in swept for k, v in s.items() if _state(v) is not None})
    sentences = []
    for knob in switches:
        frame = summary.assign(state=swept.map(lambda s, knob=knob: _state(s.get(knob))),
                               others=swept.map(lambda s, knob=knob: json.dumps({k: v for k, v in s.items() if k != knob},
                                                                     sort_keys=True)))
        frame = frame[frame["median"].notna()]
        on, off = frame[frame["state"] == "on"], frame[frame["state"] == "off"]
        pairs = on.merge(off, on=["subject", "cache", "others", "target"], suffixes=("_on", "_off"))
        several = summary["target"].nunique() > 1
        for (target, cache), group in pairs.groupby(["target", "cache"], sort=True):
            change = (100 * (group["median_on"] - group["median_off"]) / group["median_off"]).median()
            parts = []
            if f"{READS}_on" in group:
                both = group[[f"{READS}_on", f"{READS}_off"]].dropna()
                both = both[both[f"{READS}_off"] != 0]
                if not both.empty:
                    reads = (100 * (both[f"{READS}_on"] - both[f"{READS}_off"]) / both[f"{READS}_off"]).median()
                    parts.append(f"{_pct_phrase(reads, 'fewer physical reads', 'more physical reads')} ({READS})")
            if f"{READ_AHEAD}_on" in group:
                ahead = group[[f"{READ_AHEAD}_on", f"{READ_AHEAD}_off"]].dropna()
                if not ahead.empty:
                    a_on, a_off = ahead[f"{READ_AHEAD}_on"].median(), ahead[f"{READ_AHEAD}_off"].median()
                    if a_on != a_off:
                        parts.append(f"{'more' if a_on > a_off else 'less'} read-ahead ({a_on:.0f} vs {a_off:.0f} pages)")
            less, more = primary.change_words()
            parts.append(_pct_phrase(change, less, more))
            if primary.better == Better.HIGHER:
                verdict = "better" if change > 0.5 else "worse" if change < -0.5 else None
            else:
                verdict = "better" if change < -0.5 else "worse" if change > 0.5 else None
            unwarmable = bool((group["warm_on"] == False).any() or (group["warm_off"] == False).any())  # noqa: E712
            note = "; the working set did not fit the buffer pool, so never fully warm" if unwarmable else ""
            where = f", on {group['server_on'].iloc[0]} ({target})" if several else ""
            sentences.append(f"{knob} on vs off, {cache} cache{where} ({len(group)} paired points{note}): "
                             + ", ".join(parts)
                             + (f" ({verdict})" if verdict else "") + ".")
    return sentences
