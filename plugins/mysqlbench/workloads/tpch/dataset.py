"""The TPC-H dataset steps on a target: create tables, load, add constraints, rename, analyze.
Each is a plain function of (target, schema, ...) so the DAG, the benchmark and the tests share it."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mysqlbench import knobs, ownership, paths
from mysqlbench.errors import MysqlbenchError
from mysqlbench.identifiers import quote
from mysqlbench.sqlfiles import sql_statements
from mysqlbench.targets.connection import TargetConnection, server_info
from mysqlbench.targets.journal import RestoreJournal
from mysqlbench.workloads.tpch import TABLES

log = logging.getLogger(__name__)

# The load-time profile: with unique and foreign-key checks off InnoDB bulk-loads an empty table,
# and tables load over parallel connections. A larger redo log is opt-in (redo_log_size): measured
# on the project's 2-core machine at SF1 it did not speed up the lineitem load (19.6 s vs 20.1 s
# with a 1G buffer pool, 19.2 s vs 21.1 s with 128M), while shrinking it back afterwards forces a
# checkpoint that costs about 10 s. On slower disks it can pay; the bench tells.
LOAD_SESSION = {"unique_checks": 0, "foreign_key_checks": 0}

_LOAD_SQL = ("LOAD DATA LOCAL INFILE %s INTO TABLE {table} CHARACTER SET latin1 "
             "FIELDS TERMINATED BY '|' LINES TERMINATED BY '|\\n'")


def run_sql_file(conn, relative: str, schema: str) -> list[tuple[str, float]]:
    """Run every statement of ``include/sql/<relative>`` in ``schema``; (statement head, seconds)."""
    timings = []
    with conn.cursor() as cur:
        cur.execute(f"USE {quote(schema, 'schema name')}")
        for statement in sql_statements(paths.sql_text(relative)):
            started = time.monotonic()
            cur.execute(statement)
            timings.append((" ".join(statement.split()[:3]), time.monotonic() - started))
    return timings


def create_tables(target: TargetConnection, schema: str) -> dict[str, Any]:
    """Claim the schema, drop any earlier TPC-H tables in it and create dbgen's tables."""
    conn = target.connect()
    try:
        created = ownership.claim_schema(conn, target, schema)  # refuses a schema we did not create
        with conn.cursor() as cur:
            cur.execute("SET SESSION foreign_key_checks = 0")
            names = [name for table in TABLES for name in (table, table.upper())]
            cur.execute(f"DROP TABLE IF EXISTS {', '.join(f'{quote(schema)}.{quote(n)}' for n in names)}")
        ownership.set_marker(conn, schema, state="created", dataset_id=None)
        run_sql_file(conn, "tpch/schema.sql", schema)
    finally:
        conn.close()
    return {"schema_created": created}


def load_tables(target: TargetConnection, schema: str, manifest: dict[str, Any], *, streams: int = 2,
                redo_log_size: int | None = None, data_dir: Path | None = None) -> dict[str, Any]:
    """``LOAD DATA LOCAL INFILE`` every table, largest first over ``streams`` connections, under the
    load-time profile (the redo log raised to ``redo_log_size`` if given), which is reverted
    afterwards. Returns per-table timings and the profile as applied and reverted."""
    from mysqlbench.workloads.tpch.generate import dataset_dir

    directory = data_dir or dataset_dir(manifest["scale_factor"])
    jobs = sorted(TABLES, key=lambda t: manifest["tables"][t]["bytes"], reverse=True)
    admin = target.connect()
    try:
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
        ownership.set_marker(admin, schema, state="loaded", dataset_id=manifest["dataset_id"])
    finally:
        admin.close()
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
        conn = target.connect(database=schema, local_infile=True)
        try:
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
        finally:
            conn.close()

    with ThreadPoolExecutor(max_workers=streams) as pool:
        for future in [pool.submit(worker) for _ in range(streams)]:
            future.result()
    return results


def add_constraints(target: TargetConnection, schema: str) -> dict[str, float]:
    """dss.ri's foreign keys and the named indexes, one ALTER per table."""
    conn = target.connect()
    try:
        ownership.require_owned(conn, target, schema)
        with conn.cursor() as cur:
            cur.execute("SET SESSION foreign_key_checks = 0")
        timings = run_sql_file(conn, "tpch/constraints.sql", schema)
        ownership.set_marker(conn, schema, state="constrained")
    finally:
        conn.close()
    return {head: round(seconds, 3) for head, seconds in timings}


def rename_tables(target: TargetConnection, schema: str) -> None:
    conn = target.connect()
    try:
        ownership.require_owned(conn, target, schema)
        run_sql_file(conn, "tpch/rename.sql", schema)
        ownership.set_marker(conn, schema, state="renamed")
    finally:
        conn.close()


def analyze_tables(target: TargetConnection, schema: str, tables=TABLES) -> dict[str, float]:
    """ANALYZE TABLE each table; with STATS_AUTO_RECALC=0 the statistics then stay pinned (any
    workload's tables: TPC-C passes its own)."""
    conn = target.connect()
    timings = {}
    try:
        ownership.require_owned(conn, target, schema)
        with conn.cursor() as cur:
            for table in tables:
                started = time.monotonic()
                cur.execute(f"ANALYZE TABLE {quote(schema)}.{quote(table)}")
                status = cur.fetchall()
                if any(row[2] == "error" for row in status):
                    raise MysqlbenchError(f"ANALYZE TABLE {table} failed: {status}")
                timings[table] = round(time.monotonic() - started, 3)
        ownership.set_marker(conn, schema, state="analyzed")
    finally:
        conn.close()
    return timings
