"""From recorded samples to the numbers a study reports: one row per execution, summaries per
point (median, min, max, coefficient of variation), and findings in words computed from the data."""

from __future__ import annotations

import json
import statistics
from typing import Any

SUMMARY_COUNTERS = ("Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_ahead", "Innodb_buffer_pool_read_requests",
                    "Innodb_data_read", "Handler_mrr_init", "Handler_read_key", "Handler_read_next",
                    "Handler_read_rnd_next", "Created_tmp_disk_tables", "Select_scan", "Sort_scan", "pages_data_bytes")


def executions(sample_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict per measured execution: point, query, cache, repetition, times, counters."""
    by_key: dict[tuple, dict[str, Any]] = {}
    for row in sample_rows:
        meta = json.loads(row["metadata"]) if isinstance(row["metadata"], str) else row["metadata"]
        if "repetition" not in meta and row["metric"] != "client_seconds":
            continue
        key = (meta.get("point"), meta.get("query"), meta.get("repetition"))
        entry = by_key.setdefault(key, {
            "point": meta.get("point"), "query": meta.get("query"), "repetition": meta.get("repetition"),
            "cache": meta.get("cache"), "swept": meta.get("swept", {}), "status": row["status"],
            "checksum": meta.get("checksum"), "cache_evidence": meta.get("cache_evidence", {}),
            "why": meta.get("why"), "counters": {}, "absent": []})
        if row["metric"] == "client_seconds":
            entry["client_s"] = row["value"]
            entry["status"] = row["status"]
        elif row["metric"] == "server_seconds":
            entry["server_s"] = row["value"]
        elif row["metric"] == "answer":
            entry["answer"] = meta.get("answer")
        elif not row["metric"].startswith("os_") and row["metric"] != "plan":
            if row["status"] == "absent":
                entry["absent"].append(row["metric"])
            else:
                entry["counters"][row["metric"]] = row["value"]
    return list(by_key.values())


def point_summaries(execs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for e in execs:
        groups.setdefault((e["query"], e["point"]), []).append(e)
    out = []
    for (query, point), runs in sorted(groups.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")):
        times = [r["client_s"] for r in runs if r.get("client_s") is not None]
        summary: dict[str, Any] = {"query": query, "point": point, "cache": runs[0]["cache"],
                                   "swept": runs[0]["swept"], "runs": len(runs),
                                   "timeouts": sum(r["status"] == "timeout" for r in runs),
                                   "not_applicable": next((r["why"] for r in runs if r["status"] == "not_applicable"), None),
                                   "warm": runs[0]["cache_evidence"].get("warm")}
        if times:
            mean = statistics.fmean(times)
            summary.update(median_s=statistics.median(times), min_s=min(times), max_s=max(times),
                           cv=(statistics.pstdev(times) / mean) if mean > 0 and len(times) > 1 else 0.0)
        server = [r["server_s"] for r in runs if r.get("server_s") is not None]
        summary["median_server_s"] = statistics.median(server) if server else None
        for name in SUMMARY_COUNTERS:
            values = [r["counters"][name] for r in runs if r["counters"].get(name) is not None]
            summary[name] = statistics.median(values) if values else None
        out.append(summary)
    return out


def _pct(new: float, old: float) -> float | None:
    return None if not old else 100.0 * (new - old) / old


def _phrase(pct: float | None, less: str, more: str) -> str | None:
    if pct is None:
        return None
    if abs(pct) < 0.5:
        return f"about the same {less.split()[-1]}"
    return f"{abs(pct):.0f}% {less if pct < 0 else more}"


def findings(summaries: list[dict[str, Any]]) -> list[str]:
    """For every swept on/off knob: pair points that differ only in it (same query, cache and
    other knobs), take the median change in physical reads and time, and say it in words."""
    sentences = []
    switches = sorted({k for s in summaries for k, v in s["swept"].items() if isinstance(v, bool) or
                       str(v).lower() in ("on", "off", "true", "false")})
    for knob in switches:
        for cache in sorted({s["cache"] for s in summaries}):
            reads, times, read_read_ahead = [], [], []
            unwarmable = False
            for on in summaries:
                if on["cache"] != cache or _state(on["swept"].get(knob)) != "on" or on.get("median_s") is None:
                    continue
                for off in summaries:
                    if (off["query"] == on["query"] and off["cache"] == cache and off.get("median_s") is not None
                            and _state(off["swept"].get(knob)) == "off"
                            and {k: v for k, v in off["swept"].items() if k != knob}
                            == {k: v for k, v in on["swept"].items() if k != knob}):
                        times.append(_pct(on["median_s"], off["median_s"]))
                        unwarmable = unwarmable or on.get("warm") is False or off.get("warm") is False
                        if on["Innodb_buffer_pool_reads"] is not None and off["Innodb_buffer_pool_reads"] is not None:
                            reads.append(_pct(on["Innodb_buffer_pool_reads"], off["Innodb_buffer_pool_reads"]))
                        if on["Innodb_buffer_pool_read_ahead"] is not None and off["Innodb_buffer_pool_read_ahead"] is not None:
                            read_read_ahead.append((on["Innodb_buffer_pool_read_ahead"], off["Innodb_buffer_pool_read_ahead"]))
            if not times:
                continue
            parts = []
            read_change = statistics.median([r for r in reads if r is not None]) if [r for r in reads if r is not None] else None
            phrase = _phrase(read_change, "fewer physical reads", "more physical reads")
            if phrase:
                parts.append(f"{phrase} (Innodb_buffer_pool_reads)")
            if read_read_ahead:
                on_ra = statistics.median(a for a, _ in read_read_ahead)
                off_ra = statistics.median(b for _, b in read_read_ahead)
                if on_ra != off_ra:
                    parts.append(f"{'more' if on_ra > off_ra else 'less'} read-ahead ({on_ra:.0f} vs {off_ra:.0f} pages)")
            parts.append(_phrase(statistics.median([t for t in times if t is not None]), "less time", "more time"))
            note = "; the working set did not fit the buffer pool, so never fully warm" if unwarmable else ""
            sentences.append(f"{knob} on vs off, {cache} cache ({len(times)} paired points{note}): "
                             + ", ".join(parts) + ".")
    return sentences


def _state(value: Any) -> str | None:
    if isinstance(value, bool):
        return "on" if value else "off"
    text = str(value).lower()
    return {"on": "on", "true": "on", "off": "off", "false": "off"}.get(text)
