"""The study report: an HTML page with charts (PNG) and tables in a results folder, and a
machine-readable summary.json. Written for every run, marked INVALID when validation failed."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from mysqlbench import paths
from mysqlbench.studies.analysis import SUMMARY_COUNTERS, findings, point_summaries


def report_dir(dag_id: str, run_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id)
    directory = paths.work_dir() / "reports" / dag_id / safe
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _bar_chart(summaries: list[dict[str, Any]], query: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [s for s in summaries if s["query"] == query and s.get("median_s") is not None]
    rows.sort(key=lambda s: s["point"])
    labels = [s["point"].replace(" ", "\n") for s in rows]
    medians = [s["median_s"] for s in rows]
    errors = [[s["median_s"] - s["min_s"] for s in rows], [s["max_s"] - s["median_s"] for s in rows]]
    fig, ax = plt.subplots(figsize=(max(6, 1.5 * len(rows)), 5.5))
    ax.bar(range(len(rows)), medians, yerr=errors, capsize=4,
           color=["#4c72b0" if s["cache"] == "warm" else "#dd8452" for s in rows])
    ax.set_xticks(range(len(rows)), labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("query time, s (median; bars: min-max)")
    ax.set_title(f"{query}: query time per setting (blue warm, orange cold)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(*, spec, dag_id: str, run_id: str, execs: list[dict[str, Any]], plans: list[dict[str, Any]],
                 validation: dict[str, Any], flags: list[str], metadata: dict[str, Any]) -> dict[str, Any]:
    import pandas as pd

    directory = report_dir(dag_id, run_id)
    summaries = point_summaries(execs)
    sentences = findings(summaries)
    valid = bool(validation.get("success"))
    charts = []
    for query in sorted({s["query"] for s in summaries if s["query"]}):
        name = f"time_{query}.png"
        if any(s["query"] == query and s.get("median_s") is not None for s in summaries):
            _bar_chart(summaries, query, directory / name)
            charts.append(name)
    frame = pd.DataFrame(summaries)
    tables = []
    if not frame.empty:
        timing_cols = [c for c in ("query", "point", "cache", "runs", "median_s", "min_s", "max_s", "cv",
                                   "median_server_s", "timeouts", "warm", "not_applicable") if c in frame]
        tables.append(("Query time per point", frame[timing_cols].to_html(index=False, float_format="%.4f",
                                                                          na_rep="absent")))
        for query, group in frame.groupby("query"):
            counters = group.set_index("point")[[c for c in SUMMARY_COUNTERS if c in group]].T
            tables.append((f"Counters for {query} (median delta per execution; settings as columns)",
                           counters.to_html(float_format="%.0f", na_rep="absent")))
            if "median_s" not in group or group["median_s"].isna().all():
                continue
            pivot = group.pivot_table(index=group["point"].str.replace(r" cache=\w+", "", regex=True),
                                      columns="cache", values="median_s", aggfunc="first")
            tables.append((f"Warm vs cold for {query} (median s)", pivot.to_html(float_format="%.4f", na_rep="-")))
    plan_groups: dict[str, list[str]] = {}
    outlines: dict[str, list[str]] = {}
    for plan in plans:
        key = f"{plan['query']} plan {plan['plan_hash']}"
        plan_groups.setdefault(key, []).append(plan["point"])
        outlines[key] = plan.get("outline", [])
    summary = {
        "study": spec.study, "dag_id": dag_id, "run_id": run_id, "valid": valid,
        "label": "TPC-H-derived; not an official TPC-H metric",
        "findings": sentences, "noise_flags": flags, "validation": validation,
        "points": summaries, "plans": plan_groups, "plan_outlines": outlines, "metadata": metadata,
    }
    (directory / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    esc = html.escape
    body = [f"<h1>{esc(spec.study)}{' — INVALID' if not valid else ''}</h1>",
            f"<p>{esc(spec.description)}</p><p><i>{esc(summary['label'])}</i></p>"]
    if not valid:
        body.append(f"<p style='color:#b00'><b>INVALID:</b> validation failed: "
                    f"{esc(json.dumps(validation.get('failures', [])[:20], default=str))}</p>")
    body.append("<h2>Findings</h2><ul>" + "".join(f"<li>{esc(s)}</li>" for s in sentences or
                                                    ["no on/off knob was swept"]) + "</ul>")
    if flags:
        body.append("<h2>Noise</h2><ul>" + "".join(f"<li>{esc(f)}</li>" for f in flags) + "</ul>")
    body += [f"<img src='{name}' alt='{name}'>" for name in charts]
    body += [f"<h2>{esc(title)}</h2>{table}" for title, table in tables]
    body.append("<h2>Plans (points sharing a plan structure)</h2><ul>" + "".join(
        f"<li><b>{esc(k)}</b>: {esc(', '.join(v))}<pre>{esc(chr(10).join(outlines.get(k, [])))}</pre></li>"
        for k, v in plan_groups.items()) + "</ul>")
    body.append(f"<h2>Run metadata</h2><pre>{esc(json.dumps(metadata, indent=2, default=str))}</pre>")
    (directory / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>" + esc(spec.study) + "</title>"
        "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse;"
        "font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}</style>" + "\n".join(body))
    return {"dir": str(directory), "html": str(directory / "index.html"), "summary": str(directory / "summary.json"),
            "valid": valid, "findings": sentences}
