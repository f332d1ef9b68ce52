"""From recorded samples to what a study reports, on one pandas frame: one row per execution
(built from the samples' explicit execution columns and kinds, never from metric names),
summaries per point with groupby (median, min, max, coefficient of variation), and comparisons of
on/off points merged side by side, each an effect estimate with its interval and verdict
(``mysqlbench.statistics``), said in words whose direction comes from the primary metric."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from mysqlbench.counters import PHYSICAL_READS
from mysqlbench.results.store import SampleKind
from mysqlbench.statistics import CONFIDENCE, DEFAULT_BAND, Effect, Verdict, compare
from mysqlbench.studies.spec import as_knobs
from mysqlbench.workloads.base import Better, Metric

KEY = ["point", "subject", "repetition"]
VALUE_KINDS = (SampleKind.METRIC.value, SampleKind.COUNTER.value, SampleKind.GAUGE.value)
READS = PHYSICAL_READS  # pages read from disk, as each flavor counts them (include/configs/counters.yaml)
READ_AHEAD = "Innodb_buffer_pool_read_ahead"
# an execution is marked noisy (kept, counted, and with repetitions: auto measured once more) when
# other processes used more than this share of all CPUs during its window, or a hypervisor stole more
NOISE_OTHER_CPU_PCT = 20.0
NOISE_STEAL_PCT = 5.0


def _meta(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else (value or {})


def execution_frame(sample_rows: list[dict[str, Any]], primary: Metric) -> pd.DataFrame:
    """One row per execution: point, subject, repetition, cache, status, ``primary`` (the primary
    metric), every metric, counter and gauge as a column (NaN where absent), and the evidence
    validation needs (checksum, oracle verdict, warm, swept knobs)."""
    rows = [r for r in sample_rows if r.get("point") is not None and r.get("subject") is not None]
    columns = KEY + ["cache", "status", "primary", "order", "swept", "warm", "checksum", "oracle", "why", "target",
                     "server", "other_cpu", "steal", "noisy"]
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
    os_rows = frame[frame["kind"] == SampleKind.OS.value]
    for column, metric in (("other_cpu", "os_other_cpu_pct"), ("steal", "os_steal_pct")):
        out[column] = os_rows[os_rows["metric"] == metric].drop_duplicates(KEY).set_index(KEY)["value"] \
            .reindex(out.index).astype(float)
    # absent figures (a remote host's processes, no steal column) mark nothing
    out["noisy"] = (out["other_cpu"] > NOISE_OTHER_CPU_PCT) | (out["steal"] > NOISE_STEAL_PCT)
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


# counters a finding states beside the primary metric: (counter, words for less, words for more)
COUNTED = ((READS, "fewer physical reads", "more physical reads"), (READ_AHEAD, "less read-ahead", "more read-ahead"))
# below this many per execution (a side's median), a counter's change is said as the two medians:
# counts are compared as 1 + count, so from 0 to 40 reads would read as "+4000%", a number that
# says nothing; the verdict (from the same interval) still stands
SMALL_COUNT = 10.0


def _said(label: str, effect: Effect, less: str, more: str, counts: bool, medians: tuple[float, float] | None) -> str:
    """A comparison in words: the change with its interval, or, for a counter near zero on a
    side, the two medians per execution; then the verdict."""
    verdict = effect.verdict_words(less, more)
    if counts and medians is not None and min(medians) < SMALL_COUNT and effect.estimate is not None:
        sample = f"n={effect.n} pairs" if effect.paired else f"n={effect.n_a} vs {effect.n_b}"
        return (f"{label} {medians[0]:.3g} -> {medians[1]:.3g} per execution (medians, {sample}; "
                f"from about zero a percentage says nothing): {verdict}")
    return f"{label} {effect.interval_words()}: {verdict}"


def _better(verdict: Verdict, primary: Metric) -> str:
    if verdict not in (Verdict.MORE, Verdict.LESS):
        return ""
    good = (verdict is Verdict.LESS) == (primary.better == Better.LOWER)
    return " (better)" if good else " (worse)"


def _label(knobs: dict[str, Any]) -> str:
    return " ".join(f"{k}={_state(v) or v}" for k, v in knobs.items()) or "default"


def _contrasts(swept: list[dict[str, Any]], matrix: dict[str, list[Any]] | None):
    """What a run compares, each as (name, title, side): ``side(swept)`` says whether a point is
    the B side, the A side or neither, and what else it sets. Every swept on/off knob (on against
    off), and every other option of a matrix dimension against the dimension's first option, the
    spec's baseline (``{}``: the server's default)."""
    out = []
    for knob in sorted({k for s in swept for k, v in s.items() if _state(v) is not None}):
        def switch(s, knob=knob):
            return {"on": "b", "off": "a"}.get(_state(s.get(knob))), {k: v for k, v in s.items() if k != knob}
        out.append((knob, f"{knob} on vs off", switch))
    for dimension, options in (matrix or {}).items():
        knobs = [as_knobs(dimension, o) for o in options]
        if all(len(k) == 1 and _state(next(iter(k.values()))) is not None for k in knobs):
            continue  # an on/off knob: compared above
        keys = set().union(*knobs)
        for option in knobs[1:]:
            def against_baseline(s, base=knobs[0], this=option, keys=keys):
                chosen = {k: s[k] for k in keys if k in s}
                side = "a" if chosen == base else "b" if chosen == this else None
                return side, {k: v for k, v in s.items() if k not in keys}
            out.append((f"{dimension}: {_label(option)}", f"{_label(option)} vs the baseline {_label(knobs[0])}",
                        against_baseline))
    return out


def _sides(a: pd.DataFrame, b: pd.DataFrame, column: str, paired: bool) -> tuple[list[float], list[float]]:
    """The two sides' values; paired: aligned by repetition (a repetition measured in the same
    round on both sides is one block; one missing on either side drops out)."""
    if not paired:
        return a[column].tolist(), b[column].tolist()
    left, right = a.set_index("repetition")[column], b.set_index("repetition")[column]
    reps = sorted(set(left.index) | set(right.index))
    return left.reindex(reps).tolist(), right.reindex(reps).tolist()


def _noisy(a: pd.DataFrame, b: pd.DataFrame, paired: bool) -> int:
    """Noisy executions behind a comparison: blocks with a noisy side when paired, else executions."""
    if paired:
        marks = pd.concat([a.set_index("repetition")["noisy"], b.set_index("repetition")["noisy"]], axis=1)
        return int(marks.fillna(False).any(axis=1).sum())
    return int(a["noisy"].fillna(False).sum() + b["noisy"].fillna(False).sum())


def comparisons(frame: pd.DataFrame, primary: Metric, band: float = DEFAULT_BAND,
                matrix: dict[str, list[Any]] | None = None, *, paired: bool = False,
                confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """Every stated difference of a study run, as numbers: each swept on/off knob's "on" point
    against the "off" point that differs only in that knob, and each other option of a ``matrix``
    dimension against the dimension's baseline (its first option), always at the same subject,
    cache, target and other settings: the primary metric and the physical-read counters, each an
    effect estimate of B against A over the two points' ok repetitions with its interval, n, method
    and verdict against ``band`` (``mysqlbench.statistics``). ``paired``: the sides were measured in
    the same rounds, in alternating order (``repetitions: auto``), so repetition r of one side and
    of the other are a block; otherwise each point ran all its repetitions as one task and the
    sides are not paired. ``noisy`` counts the executions (blocks, when paired) measured under
    noise: kept in the estimate, and said."""
    if frame.empty:
        return []
    ok = frame[frame["status"] == "ok"]
    points = frame.drop_duplicates(["subject", "point"])[["subject", "point", "cache", "swept", "target", "server",
                                                          "warm"]].reset_index(drop=True)
    points["target"] = points["target"].fillna("")
    swept = points["swept"].map(json.loads)
    warm = ok.groupby(["subject", "point"])["warm"].agg(lambda s: bool((s == False).any()))  # noqa: E712
    out: list[dict[str, Any]] = []
    for name, title, side in _contrasts(list(swept), matrix):
        sides = swept.map(side)
        marked = points.assign(side=sides.map(lambda x: x[0]),
                               others=sides.map(lambda x: json.dumps(x[1], sort_keys=True, default=str)))
        pairs = marked[marked["side"] == "b"].merge(marked[marked["side"] == "a"],
                                                    on=["subject", "cache", "others", "target"], suffixes=("_b", "_a"))
        for pair in pairs.itertuples():
            b = ok[(ok["subject"] == pair.subject) & (ok["point"] == pair.point_b)]
            a = ok[(ok["subject"] == pair.subject) & (ok["point"] == pair.point_a)]
            if not (a["primary"].notna().any() and b["primary"].notna().any()):
                continue  # a side not applicable (or never measured) here: the report says why, per point
            measured = [("primary", primary.title, False, *primary.change_words())]
            measured += [(c, c, True, less, more) for c, less, more in COUNTED
                         if c in ok and b[c].notna().any() and a[c].notna().any()]
            noisy = _noisy(a, b, paired)
            for column, label, counts, less, more in measured:
                effect = compare(*_sides(a, b, column, paired), band=band, counts=counts, paired=paired,
                                 confidence=confidence)
                better = _better(effect.verdict, primary) if column == "primary" else ""
                medians = (float(a[column].median()), float(b[column].median())) if counts else None
                out.append({
                    "knob": name, "title": title, "cache": pair.cache, "target": pair.target,
                    "server": pair.server_b, "subject": pair.subject, "on": pair.point_b, "off": pair.point_a,
                    "others": json.loads(pair.others), "metric": primary.name if column == "primary" else column,
                    "unwarmable": bool(warm.get((pair.subject, pair.point_b), False)
                                       or warm.get((pair.subject, pair.point_a), False)),
                    **effect.as_dict(), "noisy": noisy,
                    **({"median_a": medians[0], "median_b": medians[1]} if medians else {}),
                    "small_counts": bool(medians and min(medians) < SMALL_COUNT),
                    "said": _said(label, effect, less, more, counts, medians) + better})
    return out


def findings(said: list[dict[str, Any]]) -> list[str]:
    """The comparisons in words, one sentence per contrast (a knob on vs off, an option vs the
    baseline), cache and target: each pair of points
    with its intervals and verdicts; several pairs are said one by one, never pooled into one
    number, with a tally of the primary metric's verdicts."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in said:
        groups.setdefault((row["title"], row["cache"], row["target"]), []).append(row)
    several_targets = len({row["target"] for row in said}) > 1
    sentences = []
    for (knob, cache, target), rows in groups.items():
        pairs: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for row in rows:
            pairs.setdefault((row["subject"], row["on"], row["off"]), []).append(row)
        where = f", on {rows[0]['server']} ({target})" if several_targets else ""
        unwarmable = any(row["unwarmable"] for row in rows)
        # why a point was not warm is its cache evidence's: the working set did not fit, or its
        # warm-up ended (warmup_max_runs) with reads still falling; the note claims neither
        note = "a point not proven warm: its physical reads were not zero when its warm-up ended" if unwarmable else ""
        parts = []
        for (subject, _, _), measured in pairs.items():
            others = _label(dict(sorted(measured[0]["others"].items())))
            # read-ahead is said where it is decided; every comparison is in the numbers either way
            stated = [m["said"] for m in measured if m["metric"] != READ_AHEAD or m["verdict"] != Verdict.INCONCLUSIVE.value]
            parts.append(f"{subject}{' at ' + others if others != 'default' else ''}: " + "; ".join(stated))
        if len(pairs) == 1:
            sentences.append(f"{knob}, {cache} cache{where}{f' ({note})' if note else ''}: {parts[0]}.")
            continue
        counters = {c for c, _, _ in COUNTED}
        tally: dict[str, int] = {}
        for row in rows:
            if row["metric"] not in counters:
                tally[row["verdict"]] = tally.get(row["verdict"], 0) + 1
        counted = ", ".join(f"{verdict} in {count}" for verdict, count in sorted(tally.items()))
        sentences.append(f"{knob}, {cache} cache{where} ({len(pairs)} pairs of points, each said, not "
                         f"pooled; primary metric verdicts: {counted}{'; ' + note if note else ''}): "
                         + " | ".join(parts) + ".")
    return sentences


def swept_as_used(spec, rows: list[dict[str, Any]], snapshot) -> pd.DataFrame | None:
    """Each swept knob's variable as the server reported it at each point, beside what the point
    asked for ("default": nothing was set): a default point's real value (MySQL 9.7 sized the
    buffer pool's instances itself), and what a capped or rounded setting became. ``snapshot`` maps
    a variables hash to the server's variables (``ResultsStore.server_snapshot``). None when no
    knob is swept."""
    from mysqlbench import knobs as knob_rules
    from mysqlbench.flavor import ServerInfo, parse_server_info

    swept_knobs = list(dict.fromkeys(
        [name for name in spec.matrix if name in knob_rules.knob_table()]
        + [k for option in spec.matrix.values() for o in option for k in as_knobs("", o) if k in knob_rules.knob_table()]))
    if not swept_knobs:
        return None
    table: dict[str, dict[str, str]] = {}
    for row in rows:
        if row.get("kind") != SampleKind.METRIC.value or row.get("status") != "ok" or not row.get("variables_hash"):
            continue
        if row["point"] in table:
            continue
        variables = snapshot(row["variables_hash"]) or {}
        parsed = parse_server_info(row["server_version"]) if row.get("server_version") else None
        server = ServerInfo(row.get("server_flavor") or parsed.flavor, parsed.version, parsed.version_string) \
            if parsed else None
        asked = _meta(row.get("metadata")).get("swept", {})
        cells = {}
        for knob in swept_knobs:
            variable = knob_rules.variable_for(knob, server) if server else None
            used = variables.get(variable) if variable else None
            # (without the server's version the knob's variable is unknown: not "not applicable")
            cells[knob] = (f"{asked.get(knob, 'default')} (server version not recorded)" if server is None else
                           f"{asked.get(knob, 'default')} -> {variable} = {used}" if used is not None else
                           f"{asked.get(knob, 'default')} (not applicable here)" if variable is None else
                           f"{asked.get(knob, 'default')} ({variable} not recorded)")
        table[row["point"]] = cells
    if not table:
        return None
    out = pd.DataFrame.from_dict(table, orient="index").sort_index()
    out.index.name = "point"
    return out
