"""What TPC-H's dataset steps do on a target: create dbgen's tables, load the generated files over
parallel connections under the load profile, add the seeds' constraints, rename to lower case.
:mod:`mysqlbench.workloads.tpch.build` declares them to the dataset lifecycle, which claims and
empties the schema first, holds the target, keeps the marker and verifies."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mysqlbench import knobs, ownership
from mysqlbench.errors import MysqlbenchError
from mysqlbench.identifiers import quote
from mysqlbench.targets.connection import TargetConnection, server_info
from mysqlbench.targets.journal import RestoreJournal
from mysqlbench.workloads.lifecycle import LOAD_SESSION, run_sql_file
from mysqlbench.workloads.tpch import TABLES

log = logging.getLogger(__name__)

# The load-time profile: the lifecycle's LOAD_SESSION (unique and foreign-key checks off), tables
# loaded over parallel connections. A larger redo log is opt-in (redo_log_size): measured
# on the project's 2-core machine at SF1 it did not speed up the lineitem load (19.6 s vs 20.1 s
# with a 1G buffer pool, 19.2 s vs 21.1 s with 128M), while shrinking it back afterwards forces a
# checkpoint that costs about 10 s. On slower disks it can pay; the bench tells.

_LOAD_SQL = ("LOAD DATA LOCAL INFILE %s INTO TABLE {table} CHARACTER SET latin1 "
             "FIELDS TERMINATED BY '|' LINES TERMINATED BY '|\\n'")


def create_tables(conn, schema: str) -> None:
    """dbgen's tables, in a schema the lifecycle has claimed and emptied."""
    run_sql_file(conn, "tpch/schema.sql", schema)


def load_tables(target: TargetConnection, schema: str, manifest: dict[str, Any], *, streams: int = 2,
                redo_log_size: int | None = None, data_dir: Path | None = None) -> dict[str, Any]:
    """``LOAD DATA LOCAL INFILE`` every table, largest first over ``streams`` connections, under the
    load-time profile (the redo log raised to ``redo_log_size`` if given), which is reverted
    afterwards. Returns per-table timings and the profile as applied and reverted."""
    from mysqlbench.workloads.tpch.generate import dataset_dir

    directory = data_dir or dataset_dir(manifest["scale_factor"])
    jobs = sorted(TABLES, key=lambda t: manifest["tables"][t]["bytes"], reverse=True)
    with target.session() as admin:
        ownership.require_owned(admin, target, schema)
        server = server_info(admin)
        journal = RestoreJournal.of(target)
        profile = _raise_redo_log(admin, target, server, redo_log_size, journal) if redo_log_size else []
        results: dict[str, dict[str, Any]] = {}
        started = time.monotonic()
        try:
            results = _load_parallel(target, schema, directory, manifest, jobs, streams, started)
        finally:
            reverted = _revert_profile(admin, profile, journal, target)
        total = time.monotonic() - started
    return {"tables": results, "seconds": round(total, 3), "streams": streams,
            "profile": {"applied": profile, "reverted": reverted, "session": LOAD_SESSION}}


def _raise_redo_log(conn, target: TargetConnection, server, size: int, journal) -> list[dict[str, Any]]:
    files = None
    if server.mysql_like and not server.at_least(8, 0, 30):
        files = {"innodb_log_files_in_group": knobs.read_variable(conn, "innodb_log_files_in_group", "global")}
    profile = []
    for setting in knobs.translate({"redo_log_size": size}, server, server_variables=files):
        before = knobs.read_variable(conn, setting.variable, "global")
        info = knobs.describe_variable(conn, server, setting.variable, may_probe_global=target.benchmark_target)
        if info.dynamic is False:
            log.info("load profile: %s needs a restart on %s; loading without it", setting.variable, server.label)
            profile.append({"variable": setting.variable, "before": before, "during": before,
                            "not_applied": f"needs a restart on {server.label}"})
            continue
        started = time.monotonic()
        applied = knobs.apply_settings(conn, target, server, [setting], journal=journal)[0]
        profile.append({"variable": setting.variable, "before": before, "during": applied.effective,
                        "seconds": round(time.monotonic() - started, 3)})
    return profile


def _revert_profile(conn, profile: list[dict[str, Any]], journal, target) -> list[dict[str, Any]]:
    """Undo the load profile through the restore journal (what it recorded before each change)."""
    journal.replay(target)
    return [{"variable": e["variable"], "after": knobs.read_variable(conn, e["variable"], "global")}
            for e in profile if "not_applied" not in e]


def _load_parallel(target, schema, directory, manifest, jobs, streams, started) -> dict[str, dict[str, Any]]:
    queue = list(jobs)
    lock = threading.Lock()
    results: dict[str, dict[str, Any]] = {}
    total_bytes = sum(manifest["tables"][t]["bytes"] for t in jobs)

    def worker() -> None:
        with target.session(database=schema, local_infile=True) as conn:
            with conn.cursor() as cur:
                for variable, value in LOAD_SESSION.items():
                    cur.execute(f"SET SESSION {variable} = %s", (value,))
            while True:
                with lock:
                    if not queue:
                        return
                    table = queue.pop(0)
                entry = manifest["tables"][table]
                t0 = time.monotonic()
                with conn.cursor() as cur:
                    cur.execute(_LOAD_SQL.format(table=quote(table.upper())), (str(directory / entry["file"]),))
                    rows = cur.rowcount
                    cur.execute("SHOW COUNT(*) WARNINGS")
                    warnings = cur.fetchone()[0]
                seconds = time.monotonic() - t0
                if rows != entry["rows"] or warnings:
                    raise MysqlbenchError(f"loading {table}: {rows} rows loaded of {entry['rows']}, "
                                          f"{warnings} warnings")
                with lock:
                    results[table] = {"rows": rows, "bytes": entry["bytes"], "seconds": round(seconds, 3)}
                    done = sum(r["bytes"] for r in results.values())
                log.info("loaded %-8s %10d rows in %6.1f s  (%3.0f%% of bytes, %.1f s elapsed)", table, rows,
                         seconds, 100 * done / total_bytes, time.monotonic() - started)

    with ThreadPoolExecutor(max_workers=streams) as pool:
        for future in [pool.submit(worker) for _ in range(streams)]:
            future.result()
    return results


def add_constraints(conn, schema: str) -> dict[str, float]:
    """dss.ri's foreign keys and the named indexes, one ALTER per table."""
    with conn.cursor() as cur:
        cur.execute("SET SESSION foreign_key_checks = 0")
    return {head: round(seconds, 3) for head, seconds in run_sql_file(conn, "tpch/constraints.sql", schema)}


def rename_tables(conn, schema: str) -> None:
    """dbgen's upper-case names to the lower case the seeds' queries use."""
    run_sql_file(conn, "tpch/rename.sql", schema)
