"""The regression report: ``regression.json`` (the analysis as data) and ``index.html`` with, for
every series that changed or had an event, its chart (inline SVG: each run's median with its
interquartile range, the medians on either side of a change, a vertical line at the change with
the SVG id ``change-<series>-<position>``, and a marker at every event), what changed at that run
and the runs on either side."""

from __future__ import annotations

import datetime as dt
import html
import io
import json
from pathlib import Path
from typing import Any

from mysqlbench.studies.report import _pyplot, report_dir
from mysqlbench.theme import page_head


def inline_svg(fig) -> str:
    """A matplotlib figure as an inline ``<svg>`` element (closed afterwards); element ``gid``s
    become SVG ids a test or a link can find."""
    plt = _pyplot()
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _svg(series: dict[str, Any]) -> str:
    plt = _pyplot()
    runs = series["runs"]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    xs = [r["position"] for r in runs]
    ys = [r["value"] if r["value"] is not None else float("nan") for r in runs]
    errors = [[max(0.0, (r["iqr"] or 0) / 2) for r in runs]] * 2
    ax.errorbar(xs, ys, yerr=errors, fmt="o-", markersize=4, linewidth=1, color="#4c72b0", ecolor="#9bb0d3",
                capsize=2, label="run median (bar: interquartile range)")
    noisy = [r for r in runs if r.get("noisy")]
    if noisy:
        ax.plot([r["position"] for r in noisy], [r["value"] for r in noisy], "x", color="#888", markersize=8,
                label="measured under noise (other processes' CPU)", gid=f"noisy-{series['series_id']}")
    for change in series["changes"]:
        cut = change["index"] - 0.5
        color = "#c44e52" if change["regression"] else "#55a868"
        ax.axvline(cut, color=color, linestyle="--", linewidth=1.5, gid=f"change-{series['series_id']}-{change['index']}")
        before, after = change["before"], change["after"]
        ax.hlines(before["median"], before["runs"][0] - 0.3, before["runs"][-1] + 0.3, colors="#888", linewidth=1)
        ax.hlines(after["median"], after["runs"][0] - 0.3, after["runs"][-1] + 0.3, colors=color, linewidth=1.5)
        ax.annotate(f"{change['effect_pct']:+.0f}%{'' if change['confirmed'] else ' (unconfirmed)'}",
                    (change["index"], after["median"]), textcoords="offset points", xytext=(4, 6), fontsize=8,
                    color=color)
    for run in runs:
        if run["events"]:
            what = ", ".join(e["event"] for e in run["events"])
            ax.plot([run["position"]], [ax.get_ylim()[0]], marker="^", color="#dd8452", markersize=8, clip_on=False,
                    gid=f"event-{series['series_id']}-{run['position']}")
            ax.annotate(what, (run["position"], ax.get_ylim()[0]), textcoords="offset points", xytext=(3, 3),
                        fontsize=7, color="#dd8452", rotation=90)
    ax.set_xlabel("run (oldest first)")
    ax.set_ylabel(f"{series['metric']}, {series['unit']} ({series['better']} is better)")
    ax.set_title(series["label"], fontsize=9)
    ax.legend(fontsize=7, loc="best")
    return inline_svg(fig)


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(_cell(r.get(c)))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str)
    return str(value)


def _changes_text(changes: dict[str, Any]) -> str:
    return ", ".join(f"{name} {change[0]} -> {change[1]}" if isinstance(change, list) else f"{name}: {change}"
                     for name, change in changes.items())


def _events_text(events: list[dict[str, Any]], variables: dict[str, Any] | None = None,
                 host: dict[str, Any] | None = None) -> str:
    """What changed at a run in words; a configuration change names the variables that differ, a
    host change the host facts."""
    parts = []
    for e in events:
        if e["field"] == "variables_hash" and variables:
            parts.append("server configuration: " + _changes_text(variables))
        elif e["field"] == "host_hash" and host:
            parts.append("at a host change: " + _changes_text(host))
        else:
            parts.append(f"{e['event']}: {e['before']} -> {e['after']}")
    return "; ".join(parts) or "none"


def write(analysis: dict[str, Any], *, dag_id: str, run_id: str) -> dict[str, Any]:
    """Write the report; returns its paths and the alerts (what a notifier sends)."""
    directory: Path = report_dir(dag_id, run_id)
    analysis = {"dag_id": dag_id, "run_id": run_id, "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(),
                **analysis}
    (directory / "regression.json").write_text(json.dumps(analysis, indent=2, default=str))
    esc = html.escape
    alerts = analysis["alerts"]
    body = [f"<h1>Regression report: {esc(dag_id)}</h1>",
            f"<p>Run {esc(run_id)}; studies {esc(', '.join(analysis['studies']))}; "
            f"{analysis['runs_analysed']} runs in {len(analysis['series'])} series. Thresholds: "
            f"{esc(json.dumps(analysis['thresholds']))}.</p>"]
    if alerts:
        body.append(f"<h2 style='color:#b00'>{len(alerts)} confirmed regression(s)</h2>")
        body.append(_table([{**a, "blame": _events_text(a.get("blame", []), a["variables_changed"],
                                                        a.get("host_changed"))} for a in alerts],
                           ["label", "kind", "metric", "run_id", "run_time", "before_median", "after_median",
                            "effect_pct", "interval_words", "pvalue", "blame", "variables_changed", "plan_changed"]))
    else:
        body.append("<h2>No confirmed regression</h2>")
    if analysis["plan_changes"]:
        body.append("<h2>Plan changes (same query and settings)</h2>")
        body.append(_table(analysis["plan_changes"], ["label", "run_id", "run_time", "before", "after",
                                                       "value_before", "value_after"]))
    charted = [s for s in analysis["series"]
               if s["changes"] or s.get("failures") or any(r["events"] for r in s["runs"])]
    for series in charted:
        body.append(f"<h2 id='series-{esc(series['series_id'])}'>{esc(series['label'])}</h2>")
        body.append(f"<div class='chart'>{_svg(series)}</div>")
        body.append(f"<p>{esc(series['readiness']['words'])}.</p>")
        for failure in series.get("failures", []):
            failed = f" Failed: {', '.join(failure['failures'])}." if failure.get("failures") else ""
            body.append(f"<h3>REGRESSION ({esc(failure['kind'])}) at run {esc(failure['run_id'])}</h3>"
                        f"<p>{esc(failure['interval_words'])}.{esc(failed)}</p>")
        for change in series["changes"]:
            state = ("REGRESSION" if change["regression"] else "improvement") + \
                ("" if change["confirmed"] else f" (not confirmed: {change['why_not_confirmed']})")
            body.append(f"<h3>{esc(state)} at run {esc(change['run_id'])}: {change['effect_pct']:+.1f}% "
                        f"(median {change['before']['median']:.6g} -> {change['after']['median']:.6g}, "
                        f"p = {change['pvalue']:.2g})</h3>")
            body.append(f"<p>Effect with its interval (one value per run on each side, unpaired): "
                        f"{esc(change.get('interval_words', 'no interval'))}.</p>")
            if change.get("noise_words"):
                body.append(f"<p>Noise: {esc(change['noise_words'])}.</p>")
            blamed = _events_text(change.get("blame", []), change["variables_changed"], change.get("host_changed"))
            body.append("<p>Differs between the runs before and the runs after (what the step can be blamed on): "
                        f"{esc(blamed)}. Changed at this run: {esc(_events_text(change['events']))}.</p>")
            if change["variables_changed"]:
                body.append("<p>Server variables that differ: " + esc(json.dumps(change["variables_changed"])) + "</p>")
            if change.get("host_changed"):
                body.append("<p>Host facts that differ: " + esc(json.dumps(change["host_changed"])) + "</p>")
            columns = ["position", "run_id", "run_time", "value", "iqr", "n_ok", "noisy", "server_version",
                       "package_version", "variables_hash", "spec_hash", "plan_hash", "host_hash"]
            body.append("<p>Runs before:</p>" + _table(change["runs_before"], columns))
            body.append("<p>Runs after:</p>" + _table(change["runs_after"], columns))
    quiet = [s for s in analysis["series"] if s not in charted]
    if quiet:
        body.append("<h2>Series without change or event</h2>")
        body.append(_table([{"label": s["label"], "runs": len(s["runs"]), "last value": s["runs"][-1]["value"],
                             "unit": s["unit"], "can alert": s["readiness"]["words"]} for s in quiet],
                           ["label", "runs", "last value", "unit", "can alert"]))
    if analysis["left_out"]:
        body.append("<h2>Runs left out</h2>" + _table(analysis["left_out"], ["dag_id", "run_id", "why"]))
    (directory / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>" + esc(dag_id) + " regression report</title>"
        + page_head("body{max-width:1200px;margin:2em auto}") + "\n".join(body))
    return {"html": str(directory / "index.html"), "json": str(directory / "regression.json"),
            "alerts": alerts, "plan_changes": len(analysis["plan_changes"]),
            "summary": summary_text(analysis)}


def summary_text(analysis: dict[str, Any]) -> str:
    alerts = analysis["alerts"]
    if not alerts:
        return f"no confirmed regression in {len(analysis['series'])} series of {', '.join(analysis['studies'])}"
    lines = [f"{len(alerts)} confirmed regression(s):"]
    for a in alerts:
        if a.get("kind", "change") != "change":  # a timeout or an INVALID run after a good history
            failed = f" (failed: {', '.join(a['failures'])})" if a.get("failures") else ""
            lines.append(f"- {a['label']}: {a['kind']} at run {a['run_id']}: {a['interval_words']}{failed}")
            continue
        lines.append(f"- {a['label']}: {a['metric']} {a['before_median']:.6g} -> {a['after_median']:.6g} {a['unit']} "
                     f"({a['effect_pct']:+.1f}%; {a.get('interval_words', 'no interval')}) from run {a['run_id']}; "
                     "differs between the runs before and after: "
                     f"{_events_text(a.get('blame', []), a['variables_changed'], a.get('host_changed'))}"
                     + (f"; {a['noise_words']}" if a.get("noise_words") else ""))
    return "\n".join(lines)
