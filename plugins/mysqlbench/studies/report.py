"""The study report: an HTML page with charts (PNG) and tables in a results folder, and a
machine-readable summary.json. Written for every run, marked INVALID when validation failed, with
each failed expectation and the value GX observed."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from mysqlbench import paths
from mysqlbench.counters import with_derived
from mysqlbench.studies.analysis import findings, summaries
from mysqlbench.studies.compare import as_records, compare
from mysqlbench.studies.sequential import design, stop_reasons, study_comparisons
from mysqlbench.studies.sequential import key as comparison_key
from mysqlbench.theme import page_head


def report_dir(dag_id: str, run_id: str) -> Path:
    directory = paths.work_dir() / "reports" / dag_id / paths.run_dir_name(run_id)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bar_chart(summary: pd.DataFrame, subject: str, primary, path: Path) -> None:
    plt = _pyplot()
    rows = summary[(summary["subject"] == subject) & summary["median"].notna()].sort_values("point")
    fig, ax = plt.subplots(figsize=(max(6, 1.5 * len(rows)), 5.5))
    errors = [rows["median"] - rows["min"], rows["max"] - rows["median"]]
    ax.bar(range(len(rows)), rows["median"], yerr=errors, capsize=4,
           color=["#4c72b0" if c == "warm" else "#dd8452" for c in rows["cache"]])
    ax.set_xticks(range(len(rows)), [p.replace(" ", "\n") for p in rows["point"]], fontsize=7, rotation=30, ha="right")
    ax.set_ylabel(f"{primary.name}, {primary.unit} (median; bars: min-max)")
    ax.set_title(f"{subject}: {primary.title} per setting (blue warm, orange cold)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def ratio_chart(effects: dict[tuple[str, str], Any], title: str, band: float) -> bytes:
    """A PNG of each (subject, setting)'s ratio B / A (``effects``: ``statistics.Effect`` per key):
    the estimate as a dot, its confidence interval as a bar, the band of no difference that matters
    shaded; a ratio with no interval at its n is a hollow dot, and one with no estimate is left out."""
    import io

    plt = _pyplot()
    keys = [key for key, effect in effects.items() if effect.estimate is not None]
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.45 * max(1, len(keys))))
    ax.axvspan(1 - band, 1 + band, color="#e4e4e4", label=f"within {band:.0%}: no difference that matters")
    ax.axvline(1, color="#888", linewidth=0.8)
    for y, key in enumerate(keys):
        effect = effects[key]
        if effect.ci_low is None:
            ax.plot(1 + effect.estimate, y, "o", mfc="none", color="#dd8452")
        else:
            ax.errorbar(1 + effect.estimate, y, fmt="o", color="#4c72b0", capsize=4,
                        xerr=[[max(0.0, effect.estimate - effect.ci_low)], [max(0.0, effect.ci_high - effect.estimate)]])
    ax.set_yticks(range(len(keys)), [subject if setting == "(base)" else f"{subject} {setting}"
                                     for subject, setting in keys], fontsize=8)
    ax.set_ylim(len(keys) - 0.5, -0.5)  # the first on top, half a row of room around each
    ax.set_xlabel("ratio B / A: dot the estimate, bar its confidence interval (hollow: no interval at this n)",
                  fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100)
    plt.close(fig)
    return out.getvalue()


def _series_chart(series: pd.DataFrame, metric: str, path: Path) -> None:
    """One line per point (repetition 0) of a time-series metric; a dashed line where rampup ends."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for row in series.itertuples():
        data = json.loads(row.series)
        ax.plot(data["offsets_s"], data["values"], label=f"{row.point} {row.subject}", linewidth=1)
        if data.get("rampup_end_s"):
            ax.axvline(data["rampup_end_s"], linestyle="--", color="#999", linewidth=0.8)
    ax.set_xlabel("seconds into the measured window")
    ax.set_ylabel(f"{metric} ({series['unit'].iloc[0]})")
    ax.set_title(f"{metric} over time")
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# the OS panels, in the order sar/iostat users read them: CPU, disk, memory, scheduler
OS_PANELS = (("os_cpu_user_pct", "CPU user %"), ("os_cpu_system_pct", "CPU system %"),
             ("os_cpu_iowait_pct", "CPU iowait %"), ("os_other_cpu_pct", "CPU of other processes % (noise)"),
             ("os_disk_read_bytes", "disk read, bytes/s"), ("os_disk_write_bytes", "disk written, bytes/s"),
             ("os_disk_read_ops", "disk reads/s"), ("os_disk_write_ops", "disk writes/s"),
             ("os_mem_used_bytes", "memory in use, bytes"), ("os_page_cache_bytes", "page cache, bytes"),
             ("os_context_switches_per_s", "context switches/s"))


# stored per sampling interval; charted per second
PER_INTERVAL = ("os_disk_read_bytes", "os_disk_write_bytes", "os_disk_read_ops", "os_disk_write_ops")


def _rates(offsets: list[float], values: list[float | None], *, per_second: bool) -> tuple[list[float], list[float]]:
    """The chart's points: counts per interval turned into rates, and a last partial interval
    shorter than half a sample left out of the chart (a few milliseconds of a window make a
    meaningless spike; the stored series keeps it)."""
    xs, ys = [], []
    previous = 0.0
    for offset, value in zip(offsets, values, strict=True):
        length = offset - previous
        previous = offset
        if length < 0.5:
            continue
        if value is None:
            xs.append(offset)
            ys.append(float("nan"))
            continue
        xs.append(offset)
        ys.append(value / length if per_second else value)
    return xs, ys


def _os_chart(series: pd.DataFrame, path: Path) -> str | None:
    """Every OS series of the measured windows (repetition 0 of each point and unit), one panel
    per figure, one line per window, from the samples taken every second. None when drawn, else
    why there is no chart (a figure of empty panels says nothing)."""
    plt = _pyplot()
    panels = [(metric, title) for metric, title in OS_PANELS if (series["metric"] == metric).any()]
    if not panels:
        return "No OS chart: no OS samples were recorded for the measured windows."
    lengths = [max(json.loads(s)["offsets_s"] or [0.0]) for s in series["series"]]
    if all(length < 1.0 for length in lengths):
        return (f"No OS chart: every measured window was shorter than the 1 s OS sampling (the longest "
                f"{max(lengths, default=0.0):.2f} s), so no window has a whole sample to draw; each "
                "execution's OS figures over its window are still recorded (os_* samples).")
    columns = 3
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(15, 3.2 * rows), squeeze=False)
    for ax, (metric, title) in zip(axes.flat, panels, strict=False):  # the grid may have spare cells
        for row in series[series["metric"] == metric].itertuples():
            data = json.loads(row.series)
            offsets, values = _rates(data["offsets_s"], data["values"], per_second=metric in PER_INTERVAL)
            ax.plot(offsets, values, label=f"{row.point} {row.subject}", linewidth=1)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("seconds into the measured window", fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=6, loc="lower center", ncol=4)
    fig.suptitle("OS metrics of the measured windows (one sample per second; repetition 0)")
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return None


def _readable(table: pd.DataFrame) -> pd.DataFrame:
    """A per-point table as a reader wants it: warmth as yes/no ("-" where a point is not warmed,
    a cold one), no reason as an empty cell: never pandas' "<NA>" or Python's "None"."""
    out = table.copy()
    if "warm" in out:
        out["warm"] = out["warm"].map(lambda v: "-" if pd.isna(v) else "yes" if v else "no").astype(object)
    if "not_applicable" in out:
        out["not_applicable"] = out["not_applicable"].map(lambda v: "" if v is None or pd.isna(v) else v)
    return out


VERDICT_WORDS = ("<p>How to read a verdict: <b>more</b> or <b>less</b> only when the whole confidence interval "
                 "lies beyond ±{band} (the spec's <code>min_effect</code>); <b>same</b> when it lies inside: no "
                 "difference larger than {band}; <b>inconclusive</b> when it straddles a band edge, or when too few "
                 "repetitions give no interval at all. Effects are changes of B (on) against A (off): Hodges-Lehmann "
                 "on log ratios with its exact rank interval; n is the repetitions on each side.</p>")
AUTO_WORDS = ("<p>Repetitions: auto. The points were measured in rounds, the order reversed each round, until each "
              "comparison was decided or the budget spent; the two sides of a comparison ran in the same rounds, so "
              "each repetition is a pair measured close together (paired intervals). Each look used a "
              "{level} interval, so the interval a comparison stopped at covers the true effect at least 95% of the "
              "time; <i>noisy</i> counts pairs with a side measured under noise (other processes' CPU, steal): "
              "kept, and one more measured in their place.</p>")


def _reproduction_words(reproduction: dict[str, Any]) -> str:
    """A rerun's verdicts: each point against the original, rerun / original, with the band."""
    esc = html.escape
    head = (f"<h2>Reproduction of {esc(reproduction['original'])}</h2><p>Each point's {esc(_primary_of(reproduction))}"
            f" in this run against the original's (rerun / original, unpaired: two separate runs), against "
            f"±{100 * reproduction['band']:.3g}%: <i>reproduced</i> when the whole interval lies inside it, "
            "<i>differs</i> when it lies beyond.</p>")
    if reproduction["differences"]:
        head += "<p>Run with these differences from the original: " + esc("; ".join(reproduction["differences"])) + "</p>"
    return head + "<ul>" + "".join(f"<li>{esc(v['said'])}</li>" for v in reproduction["verdicts"]) + "</ul>"


def _primary_of(reproduction: dict[str, Any]) -> str:
    return reproduction["verdicts"][0]["metric"] if reproduction["verdicts"] else "primary metric"


def _comparisons_table(said: list[dict[str, Any]], band: float, auto_level: float | None) -> str:
    """Every comparison behind the findings, as numbers (with auto: the noisy pairs and why each
    comparison's measuring stopped)."""
    table = pd.DataFrame([{"knob": c["knob"], "cache": c["cache"], "subject": c["subject"], "on": c["on"],
                           "off": c["off"], "metric": c["metric"], "effect": c["estimate"], "ci low": c["ci_low"],
                           "ci high": c["ci_high"], "level": c["confidence"], "n off": c["n_a"], "n on": c["n_b"],
                           "paired": c["paired"], "noisy": c.get("noisy", 0), "verdict": c["verdict"],
                           **({"stopped": c.get("stopped", "")} if auto_level else {})} for c in said])
    for column in ("effect", "ci low", "ci high"):
        table[column] = table[column].map(lambda v: "-" if v is None or pd.isna(v) else f"{100 * v:+.1f}%")
    # a counter near zero on a side: its two medians, not a percentage (analysis.SMALL_COUNT)
    small = [bool(c.get("small_counts")) for c in said]
    if any(small):
        table.loc[small, "effect"] = [f"{c['median_a']:.3g} -> {c['median_b']:.3g} /exec" for c in said
                                      if c.get("small_counts")]
        table.loc[small, ["ci low", "ci high"]] = "-"
    table["level"] = table["level"].map(lambda v: "none" if v is None or pd.isna(v) else f"{100 * v:.1f}%")
    words = VERDICT_WORDS.format(band=f"{100 * band:.3g}%")
    if auto_level:
        words += AUTO_WORDS.format(level=f"{100 * auto_level:.1f}%")
    return "<h2>Comparisons (each finding's numbers)</h2>" + words + table.to_html(index=False, na_rep="-")


def _round_words(record: dict[str, Any]) -> str:
    """"round 7: repetition 7 of 2 point(s) (1 comparison(s) not decided)", or why none ran."""
    if record.get("stopped"):
        return f"round {record['round']}: nothing measured; stopped: {record['stopped']}"
    start, stop = record["repetitions"]
    which = f"repetition {stop}" if stop == start + 1 else f"repetitions {start + 1}-{stop}"
    return (f"round {record['round']}: {which} of {len(record['points'])} point(s)"
            f"{' (' + record['why'] + ')' if record.get('why') else ''}")


def _observed(failure: dict[str, Any]) -> dict[str, Any]:
    return {k: failure[k] for k in ("observed", "unexpected_count", "unexpected", "mismatched", "error") if k in failure}


def earlier_tries(rows: list[dict[str, Any]], primary: str) -> list[dict[str, Any]]:
    """The measuring tries a later try replaced, from every try's rows (``rows(..., every_try=True)``):
    per task instance and try, its point, its executions of ``primary`` by status, and why any was
    stopped. What a run's figures come from is its last try; these say what happened before it."""
    last: dict[tuple[str, int], int] = {}
    for row in rows:
        key = (row["task_id"], row["map_index"])
        last[key] = max(last.get(key, 0), row["try_number"])
    tries: dict[tuple[str, int, int], dict[str, Any]] = {}
    for row in rows:
        key = (row["task_id"], row["map_index"])
        if row["try_number"] == last[key] or row["kind"] != "metric" or row["metric"] != primary:
            continue
        entry = tries.setdefault((*key, row["try_number"]), {
            "task": key[0], "map_index": key[1], "try": row["try_number"], "replaced_by": last[key],
            "point": row["point"], "executions": {}, "why": []})
        entry["executions"][row["status"]] = entry["executions"].get(row["status"], 0) + 1
        why = json.loads(row["metadata"]).get("why")
        if why and why not in entry["why"]:
            entry["why"].append(why)
    return [tries[k] for k in sorted(tries)]


def _try_words(entry: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {status}" for status, n in sorted(entry["executions"].items()))
    why = f" ({'; '.join(entry['why'])})" if entry["why"] else ""
    return (f"{entry['task']}[{entry['map_index']}] try {entry['try']}, point {entry['point']}: {counts}{why}; "
            f"replaced by try {entry['replaced_by']}")


def write_report(*, spec, workload, dag_id: str, run_id: str, frame: pd.DataFrame, series: pd.DataFrame,
                 plans: list[dict[str, Any]], validation: dict[str, Any], flags: list[str],
                 metadata: dict[str, Any], extra_tables: list[tuple[str, pd.DataFrame]] = (),
                 rounds: list[dict[str, Any]] = (), reproduction: dict[str, Any] | None = None,
                 tries: list[dict[str, Any]] = ()) -> dict[str, Any]:
    """``rounds``: with repetitions auto, each round's plan as ``plan_round`` stored it.
    ``reproduction``: for a rerun, its verdicts against the original (``studies.rerun``).
    ``tries``: the measuring tries a retry replaced (``earlier_tries``)."""
    directory = report_dir(dag_id, run_id)
    counters = workload.summary_counters()
    summary = summaries(frame, counters)
    said = study_comparisons(frame, spec, workload.primary)
    stopped = stop_reasons([c for c in said if c["metric"] == workload.primary.name], spec, list(rounds))
    for c in said:
        if c["metric"] == workload.primary.name and comparison_key(c) in stopped:
            c["stopped"] = stopped[comparison_key(c)]
    sentences = findings(said)
    valid = bool(validation.get("success"))
    charts, chart_notes = [], []
    for subject in sorted(summary["subject"].unique()) if not summary.empty else []:
        if summary[(summary["subject"] == subject)]["median"].notna().any():
            name = f"primary_{subject}.png"
            _bar_chart(summary, subject, workload.primary, directory / name)
            charts.append(name)
    if not series.empty:
        first = series[series["repetition"] == 0]
        why_not = _os_chart(first, directory / "os_metrics.png")
        if why_not is None:
            charts.append("os_metrics.png")
        else:
            chart_notes.append(why_not)
        for metric, group in first.groupby("metric"):
            if metric.startswith("os_"):
                continue  # in the OS figure
            name = f"series_{metric}.png"
            _series_chart(group, metric, directory / name)
            charts.append(name)
    tables = []
    if not summary.empty:
        cols = [c for c in ("subject", "point", "cache", "runs", "median", "min", "max", "cv", "median_server",
                            "timeouts", "killed", "warm", "not_applicable") if c in summary]
        tables.append((f"{workload.primary.title.capitalize()} per point ({workload.primary.name}, "
                       f"{workload.primary.unit})", _readable(summary[cols]).to_html(index=False, float_format="%.4f",
                                                                                    na_rep="absent")))
        for subject, group in summary.groupby("subject"):
            table = group.set_index("point")[[c for c in counters if c in group]].T
            tables.append((f"Counters for {subject} (median delta per execution; settings as columns; "
                           "absent: the server has no such counter)",
                           table.to_html(float_format="%.0f", na_rep="absent")))
            if group["median"].notna().any() and group["cache"].nunique() > 1:
                pivot = group.pivot_table(index=group["point"].str.replace(r" cache=\w+", "", regex=True),
                                          columns="cache", values="median", aggfunc="first")
                tables.append((f"Warm vs cold for {subject} (median {workload.primary.unit})",
                               pivot.to_html(float_format="%.4f", na_rep="-")))
    for title, table in extra_tables:
        tables.append((title, table.to_html(float_format="%.2f", na_rep="absent")))
    # every counter: flavors differ in which they have
    comparison = compare(frame, workload.primary, with_derived(spec.counters), plans, band=spec.min_effect)
    if comparison["primary"] is not None:
        tables.insert(0, (f"Servers side by side: median {workload.primary.name} ({workload.primary.unit}; "
                          f"{workload.primary.better.value} is better; ratios to {comparison['servers'][0]})",
                          comparison["primary"].to_html(float_format="%.4f", na_rep="-")))
        for counter, table in comparison["counters"].items():
            tables.insert(1, (f"Servers side by side: {counter} (median delta; absent: the server has no such "
                              "counter)", table.to_html(float_format="%.0f", na_rep="absent")))
        if comparison["plans"] is not None:
            tables.insert(1, ("Servers side by side: plan structure hash per server",
                              comparison["plans"].to_html(na_rep="-")))
    plan_groups: dict[str, list[str]] = {}
    outlines: dict[str, list[str]] = {}
    for plan in plans:
        key = f"{plan['subject']} plan {plan['plan_hash']}"
        if plan["point"] not in plan_groups.setdefault(key, []):  # a point measured in several rounds: once
            plan_groups[key].append(plan["point"])
        outlines[key] = plan.get("outline", [])
    records = json.loads(summary.to_json(orient="records")) if not summary.empty else []
    for record in records:  # the swept knobs as an object, not the frame's JSON text
        record["swept"] = json.loads(record["swept"]) if isinstance(record.get("swept"), str) else record.get("swept")
    out = {
        "study": spec.study, "workload": workload.name, "dag_id": dag_id, "run_id": run_id, "valid": valid,
        "label": workload.label, "primary_metric": workload.primary.__dict__ | {"better": workload.primary.better.value},
        "findings": sentences, "comparisons": [{k: v for k, v in c.items() if k != "said"} for c in said],
        "repetitions": {"mode": "auto" if spec.sequential else "fixed",
                        "rounds": [{k: r.get(k) for k in ("round", "repetitions", "points", "stopped", "comparisons")}
                                   for r in rounds]},
        "noise_flags": flags, "validation": validation, "earlier_tries": list(tries),
        **({"reproduction": reproduction} if reproduction else {}),
        "points": records, "plans": plan_groups, "plan_outlines": outlines, "metadata": metadata,
        "servers": as_records(comparison),
        "tables": {title: json.loads(table.reset_index().to_json(orient="records")) for title, table in extra_tables},
    }
    (directory / "summary.json").write_text(json.dumps(out, indent=2, default=str))
    esc = html.escape
    body = [f"<h1>{esc(spec.study)}{' — INVALID' if not valid else ''}</h1>",
            f"<p>{esc(spec.description)}</p><p><i>{esc(workload.label)}</i></p>"]
    failures = validation.get("failures", [])
    if not valid:
        body.append("<p style='color:#b00'><b>INVALID:</b> these expectations failed (as Great Expectations "
                    "evaluated them over the recorded executions):</p>")
        body.append("<table><tr><th>check</th><th>expectation</th><th>rows</th><th>expected</th>"
                    "<th>observed</th></tr>" + "".join(
                        f"<tr><td>{esc(str(f.get('check')))}</td><td>{esc(str(f.get('expectation')))}</td>"
                        f"<td>{esc(str(f.get('where') or 'all'))}</td><td>{esc(json.dumps(f.get('kwargs'), default=str))}</td>"
                        f"<td>{esc(json.dumps(_observed(f), default=str))}</td></tr>"
                        for f in failures[:50]) + "</table>")
    stats = validation.get("statistics", {})
    body.append(f"<p>Validation: {stats.get('successful_expectations', '?')} of "
                f"{stats.get('evaluated_expectations', '?')} expectations met.</p>")
    body.append("<h2>Findings</h2><ul>" + "".join(f"<li>{esc(s)}</li>" for s in sentences or
                                                    ["no on/off knob was swept"]) + "</ul>")
    if reproduction:
        body.append(_reproduction_words(reproduction))
    if said:
        body.append(_comparisons_table(said, spec.min_effect, design(spec)["confidence"] if spec.sequential else None))
    if spec.sequential and rounds:
        body.append("<h2>Rounds (repetitions: auto)</h2><ul>" + "".join(f"<li>{esc(_round_words(r))}</li>"
                                                                       for r in rounds) + "</ul>")
    if tries:
        body.append("<h2>Earlier tries (kept in the store; the figures above are each point's last try)</h2><ul>"
                    + "".join(f"<li>{esc(_try_words(t))}</li>" for t in tries) + "</ul>")
    if flags:
        body.append("<h2>Noise</h2><ul>" + "".join(f"<li>{esc(f)}</li>" for f in flags) + "</ul>")
    body += [f"<p>{esc(note)}</p>" for note in chart_notes]
    body += [f"<img src='{name}' alt='{name}'>" for name in charts]
    body += [f"<h2>{esc(title)}</h2>{table}" for title, table in tables]
    if plan_groups:
        body.append("<h2>Plans (points sharing a plan structure)</h2><ul>" + "".join(
            f"<li><b>{esc(k)}</b>: {esc(', '.join(v))}<pre>{esc(chr(10).join(outlines.get(k, [])))}</pre></li>"
            for k, v in plan_groups.items()) + "</ul>")
    body.append(f"<h2>Run metadata</h2><pre>{esc(json.dumps(metadata, indent=2, default=str))}</pre>")
    (directory / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>" + esc(spec.study) + "</title>"
        + page_head("body{max-width:1200px;margin:2em auto}") + "\n".join(body))
    return {"dir": str(directory), "html": str(directory / "index.html"), "summary": str(directory / "summary.json"),
            "valid": valid, "findings": sentences}
