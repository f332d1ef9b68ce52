"""What TPC-C's dataset steps do on a target: create tpcc-mysql's tables, load the population while
it is being generated, add the indexes and foreign keys, install the driver's procedures.
:mod:`mysqlbench.workloads.tpcc.build` declares them to the dataset lifecycle."""

from __future__ import annotations

import logging
import queue
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mysqlbench import ownership, paths
from mysqlbench.errors import MysqlbenchError
from mysqlbench.identifiers import quote
from mysqlbench.targets.connection import TargetConnection
from mysqlbench.workloads.lifecycle import LOAD_SESSION, run_sql_file
from mysqlbench.workloads.tpcc import TABLES, generate

log = logging.getLogger(__name__)

_LOAD_SQL = ("LOAD DATA LOCAL INFILE %s INTO TABLE {table} CHARACTER SET utf8mb4 "
             "FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' ({columns})")


def create_tables(conn, schema: str) -> None:
    """tpcc-mysql's nine tables, in a schema the lifecycle has claimed and emptied."""
    run_sql_file(conn, "tpcc/schema.sql", schema)


def staging_dir(dataset_id: str) -> Path:
    return paths.work_dir() / "tmp" / dataset_id


def load_tables(target: TargetConnection, schema: str, warehouses: int, seed: int, *, streams: int = 2,
                processes: int = 2) -> dict[str, Any]:
    """Generate the population warehouse by warehouse and ``LOAD DATA LOCAL INFILE`` each file as
    soon as it is written, over ``streams`` connections (unique and foreign-key checks off); each
    file is deleted once loaded, so the disk holds at most a few warehouses' files."""
    dataset_id = generate.dataset_id(warehouses, seed)
    directory = staging_dir(dataset_id)
    shutil.rmtree(directory, ignore_errors=True)
    jobs: queue.Queue = queue.Queue(maxsize=4 * streams)
    lock = threading.Lock()
    rows: dict[str, int] = dict.fromkeys(TABLES, 0)
    seconds: dict[str, float] = dict.fromkeys(TABLES, 0.0)
    failed: list[BaseException] = []
    started = time.monotonic()

    def worker() -> None:
        conn = target.connect(database=schema, local_infile=True)
        try:
            with conn.cursor() as cur:
                for variable, value in LOAD_SESSION.items():
                    cur.execute(f"SET SESSION {variable} = %s", (value,))
            while (job := jobs.get()) is not None:
                table, path, expected = job
                if failed:  # another stream failed: drain without loading
                    continue
                t0 = time.monotonic()
                with conn.cursor() as cur:
                    columns = ", ".join(quote(c) for c in generate.COLUMNS[table])
                    cur.execute(_LOAD_SQL.format(table=quote(table), columns=columns), (str(path),))
                    loaded = cur.rowcount
                    cur.execute("SHOW COUNT(*) WARNINGS")
                    warnings = cur.fetchone()[0]
                path.unlink()
                if loaded != expected or warnings:
                    raise MysqlbenchError(f"loading {path.name}: {loaded} rows of {expected}, {warnings} warnings")
                with lock:
                    rows[table] += loaded
                    seconds[table] += time.monotonic() - t0
        except BaseException as exc:
            failed.append(exc)
            while jobs.get() is not None:  # let the producer finish
                pass
        finally:
            conn.close()

    conn = target.connect()
    try:
        ownership.require_owned(conn, target, schema)
        with ThreadPoolExecutor(max_workers=streams) as pool:
            futures = [pool.submit(worker) for _ in range(streams)]
            try:
                for batch, counts in generate.generate(warehouses, seed, directory, processes=processes):
                    # largest first, so the streams finish together
                    for table in sorted(batch, key=lambda t: -counts[t]):
                        if failed:
                            break
                        jobs.put((table, batch[table], counts[table]))
                    if failed:
                        break
            finally:
                for _ in futures:
                    jobs.put(None)
            for future in futures:
                future.result()
        if failed:
            raise failed[0]
        total = time.monotonic() - started
    finally:
        conn.close()
        shutil.rmtree(directory, ignore_errors=True)
    log.info("loaded %d warehouses (%d rows) in %.1f s", warehouses, sum(rows.values()), total)
    return {"dataset_id": dataset_id, "rows": rows, "table_seconds": {t: round(s, 3) for t, s in seconds.items()},
            "seconds": round(total, 3), "streams": streams, "c_load": generate.c_load(seed)}


def add_indexes(conn, schema: str) -> dict[str, float]:
    """tpcc-mysql's secondary indexes and foreign keys, one ALTER per table."""
    with conn.cursor() as cur:
        cur.execute("SET SESSION foreign_key_checks = 0")
    return {head: round(seconds, 3) for head, seconds in run_sql_file(conn, "tpcc/indexes.sql", schema)}


def procedure_sql(name: str) -> str:
    """One procedure's CREATE statement: the whole file, comment lines dropped (its body holds
    many ';', so it is sent as one statement, which needs no DELIMITER)."""
    text = paths.sql_text(f"tpcc/procedures/{name}.sql")
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")).strip()


def install_procedures(target: TargetConnection, schema: str) -> list[str]:
    """(Re)create the driver's five procedures in ``schema`` (ours: it carries the marker)."""
    from mysqlbench.workloads.tpcc.driver import PROCEDURES

    with target.session() as conn:
        ownership.require_owned(conn, target, schema)
        with conn.cursor() as cur:
            cur.execute(f"USE {quote(schema, 'schema name')}")
            for name in PROCEDURES:
                cur.execute(f"DROP PROCEDURE IF EXISTS {quote('tpcc_' + name)}")
                cur.execute(procedure_sql(name))
    return [f"tpcc_{name}" for name in PROCEDURES]
