"""Parsing sysbench 1.0's output: the interval lines (``--report-interval``) and the final report.

A run that was killed, or failed before its report, gives :class:`SysbenchOutputError` naming
what is missing (and sysbench's own FATAL line when there is one), never zeros.
"""

from __future__ import annotations

import re
from typing import Any

from mysqlbench.errors import MysqlbenchError


class SysbenchOutputError(MysqlbenchError):
    """sysbench's output does not hold the report (failed or killed run)."""


# [ 10s ] thds: 8 tps: 322.38 qps: 8827.74 (r/w/o: 4024.40/4155.39/647.95) lat (ms,95%): 61.08 err/s 1.60 reconn/s: 0.00
_INTERVAL = re.compile(r"^\[\s*(?P<t>[\d.]+)s\s*\]\s+(?P<body>.*)$")
_PAIR = re.compile(r"(?P<key>thds|tps|qps|eps|err/s|reconn/s):?\s+(?P<value>[\d.]+)")
_RWO = re.compile(r"\(r/w/o:\s*([\d.]+)/([\d.]+)/([\d.]+)\)")
# fileio: [ 1s ] reads: 314.83 MiB/s writes: 209.88 MiB/s fsyncs: 1340.27/s latency (ms,95%): 0.011
_FILEIO = re.compile(r"(?P<key>reads|writes|fsyncs):\s+(?P<value>[\d.]+)\s*(?:MiB)?/s")
_LAT = re.compile(r"lat(?:ency)? \(ms,(?P<pct>[\d.]+)%\):\s+(?P<value>[\d.]+)")
_REPORT_NUMBER = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z0-9 ()/.%,-]*?):\s+(?P<value>[\d.]+)(?P<unit>s)?"
                            r"(?:\s+\((?P<rate>[\d.]+) per sec\.\))?\s*$")
_FAIRNESS = re.compile(r"^\s*(events|execution time) \(avg/stddev\):\s+([\d.]+)/([\d.]+)\s*$")
_PERCENTILE = re.compile(r"^\s*(\d+(?:\.\d+)?)th percentile:\s+([\d.]+)\s*$")


def parse_intervals(text: str) -> list[dict[str, Any]]:
    """Every interval line: ``t_s`` (its end, seconds from the start), threads, tps/qps/eps,
    reads/writes/other per second, the latency percentile line, errors and reconnects per second."""
    out = []
    for line in text.splitlines():
        match = _INTERVAL.match(line.strip())
        if not match:
            continue
        body = match.group("body")
        row: dict[str, Any] = {"t_s": float(match.group("t"))}
        for pair in _PAIR.finditer(body):
            key = {"thds": "threads", "err/s": "errors_per_s", "reconn/s": "reconnects_per_s"}.get(pair["key"],
                                                                                               pair["key"])
            row[key] = float(pair["value"])
        for pair in _FILEIO.finditer(body):
            row[{"reads": "read_mib_per_s", "writes": "written_mib_per_s", "fsyncs": "fsyncs_per_s"}[pair["key"]]] = \
                float(pair["value"])
        rwo = _RWO.search(body)
        if rwo:
            row["reads_per_s"], row["writes_per_s"], row["other_per_s"] = (float(v) for v in rwo.groups())
        lat = _LAT.search(body)
        if lat:
            row["latency_pct"], row["latency_pct_ms"] = float(lat["pct"]), float(lat["value"])
        out.append(row)
    return out


def _sections(text: str) -> tuple[dict[str, dict[str, tuple[float, float | None]]], dict[str, float],
                                   dict[str, tuple[float, float]]]:
    """The report's numbers by section (``General statistics``, ``File operations``, ...), its
    latency block, and the threads' fairness."""
    values: dict[str, dict[str, tuple[float, float | None]]] = {}
    latency: dict[str, float] = {}
    fairness: dict[str, tuple[float, float]] = {}
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.endswith(":") and not _REPORT_NUMBER.match(line):
            if not line[:1].isspace():  # a top-level header; an indented one ("queries performed") is a part
                section = stripped[:-1]
            continue
        fair = _FAIRNESS.match(line)
        if fair:
            fairness[fair.group(1)] = (float(fair.group(2)), float(fair.group(3)))
            continue
        pct = _PERCENTILE.match(line)
        if pct and section == "Latency (ms)":
            latency[f"p{float(pct.group(1)):g}"] = float(pct.group(2))
            continue
        number = _REPORT_NUMBER.match(line)
        if number and section is not None:
            key = number["key"].strip()
            if section == "Latency (ms)":
                latency[key] = float(number["value"])
            else:
                values.setdefault(section, {})[key] = (float(number["value"]),
                                                       float(number["rate"]) if number["rate"] else None)
    return values, latency, fairness


def parse_report(text: str, test: str = "oltp") -> dict[str, Any]:
    """The final report of ``sysbench <test> run``: ``oltp`` (any database script: transactions,
    queries, errors, reconnects), ``cpu`` (events per second) or ``fileio`` (operations and
    throughput). Every test's report has the general statistics, latency and fairness."""
    if test not in ("oltp", "cpu", "fileio"):
        raise ValueError(f"unknown sysbench report kind {test!r}")
    fatal = [line.strip() for line in text.splitlines() if "FATAL" in line]
    if "General statistics:" not in text or "Latency (ms):" not in text:
        said = f": {fatal[0]}" if fatal else ""
        raise SysbenchOutputError(f"sysbench's output has no final report (a failed or killed run){said}")
    sections, latency, fairness = _sections(text)

    def need(section: str, key: str) -> tuple[float, float | None]:
        if key not in sections.get(section, {}):
            raise SysbenchOutputError(f"sysbench's report has no {key!r} line under {section!r}")
        return sections[section][key]

    events, _ = need("General statistics", "total number of events")
    total_time, _ = need("General statistics", "total time")
    for key in ("min", "avg", "max"):
        if key not in latency:
            raise SysbenchOutputError(f"sysbench's latency report has no {key!r}")
    if "events" not in fairness or "execution time" not in fairness:
        raise SysbenchOutputError("sysbench's report has no threads fairness block (a cut-off report)")
    out: dict[str, Any] = {
        "events": int(events), "total_time_s": total_time, "latency_ms": latency,
        "fairness": {"events_avg": fairness["events"][0], "events_stddev": fairness["events"][1],
                     "execution_avg_s": fairness["execution time"][0],
                     "execution_stddev_s": fairness["execution time"][1]},
    }
    if test == "oltp":
        transactions, tps = need("SQL statistics", "transactions")
        queries = sections["SQL statistics"].get("queries", (None, None))
        out.update(transactions=int(transactions), tps=tps, queries=queries[0], qps=queries[1],
                   ignored_errors=int(need("SQL statistics", "ignored errors")[0]),
                   reconnects=int(need("SQL statistics", "reconnects")[0]))
        for kind in ("read", "write", "other"):
            value = sections["SQL statistics"].get(kind)
            out[f"queries_{kind}"] = int(value[0]) if value else None
    elif test == "cpu":
        out["events_per_s"] = need("CPU speed", "events per second")[0]
    else:
        out.update(reads_per_s=need("File operations", "reads/s")[0],
                   writes_per_s=need("File operations", "writes/s")[0],
                   fsyncs_per_s=need("File operations", "fsyncs/s")[0],
                   read_mib_per_s=need("Throughput", "read, MiB/s")[0],
                   written_mib_per_s=need("Throughput", "written, MiB/s")[0])
    return out
