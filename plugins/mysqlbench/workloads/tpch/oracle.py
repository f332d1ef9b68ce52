"""DuckDB as an independent oracle for TPC-H answers: it reads the same generated .tbl files and
runs the same query text (index hints stripped), so a wrong answer from the server under test, or
a switch that changes results, is caught."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from mysqlbench import paths
from mysqlbench.answers import compare, normalise
from mysqlbench.sqlfiles import sql_statements
from mysqlbench.workloads.tpch import TABLES
from mysqlbench.workloads.tpch.queries import Query

log = logging.getLogger(__name__)

_HINT = re.compile(r"\b(?:force|use|ignore)\s+index\s*\([^)]*\)", re.IGNORECASE)
_COLUMN = re.compile(r"^\s*([A-Z_]+)\s+([A-Z]+(?:\(\d+(?:,\d+)?\))?)", re.MULTILINE)


def _duck_type(mysql_type: str) -> str:
    if mysql_type.startswith("CHAR"):
        return "VARCHAR"
    return mysql_type


@functools.lru_cache(maxsize=1)
def _columns() -> dict[str, list[tuple[str, str]]]:
    """Column names and types per table, read from include/sql/tpch/schema.sql (one source)."""
    columns: dict[str, list[tuple[str, str]]] = {}
    for statement in sql_statements(paths.sql_text("tpch/schema.sql")):
        table = re.match(r"CREATE TABLE (\w+)", statement).group(1).lower()
        columns[table] = [(name.lower(), _duck_type(kind)) for name, kind in _COLUMN.findall(statement)
                          if name not in ("PRIMARY", "CREATE")]
    return columns


class DuckDbOracle:
    def __init__(self, data_dir: Path):
        import duckdb

        self.con = duckdb.connect(":memory:")
        for table in TABLES:
            cols = _columns()[table]
            spec = ", ".join(f"'{name}': '{kind}'" for name, kind in cols) + ", 'trailing': 'VARCHAR'"
            names = ", ".join(name for name, _ in cols)
            # every .tbl line ends with '|', read as one empty trailing column
            self.con.execute(f"CREATE TABLE {table} AS SELECT {names} FROM read_csv(?, delim='|', "
                             f"header=false, quote='', escape='', columns={{{spec}}})", [str(data_dir / f"{table}.tbl")])
        log.info("DuckDB oracle loaded from %s", data_dir)

    def answer(self, query: Query) -> list[tuple[Any, ...]]:
        for statement in query.setup:
            self.con.execute(_HINT.sub("", statement))
        try:
            return [tuple(row) for row in self.con.execute(_HINT.sub("", query.statement)).fetchall()]
        finally:
            for statement in query.teardown:
                self.con.execute(_HINT.sub("", statement))


@functools.lru_cache(maxsize=1)
def _oracle(data_dir: str) -> DuckDbOracle:
    """One loaded DuckDB per process and dataset (the 22 queries of a power run share it)."""
    return DuckDbOracle(Path(data_dir))


# DuckDB holds the whole dataset in memory; above SF 1 that is more than this tool should take
ORACLE_MAX_SF = 1.0


def expected_answer(query: Query, scale_factor: float) -> list[tuple[Any, ...]]:
    """DuckDB's whole answer to ``query`` on the dataset's files, cached beside them per query text
    (the files are deterministic for a dataset id, so the answer is too): the first point that
    needs it pays for loading DuckDB, every later point and retry reads the cache."""
    from mysqlbench.workloads.tpch.generate import dataset_dir, ensure_generated

    manifest = ensure_generated(scale_factor)
    text = "\n".join((*query.setup, query.statement, *query.teardown))
    key = hashlib.sha256(f"{manifest['dataset_id']}\n{text}".encode()).hexdigest()[:16]
    cache = dataset_dir(scale_factor) / "oracle" / f"{query.id}-{key}.json"
    try:
        return [tuple(row) for row in json.loads(cache.read_text())]
    except (FileNotFoundError, json.JSONDecodeError):
        pass
    rows = [tuple(normalise(v) for v in row) for row in _oracle(str(dataset_dir(scale_factor))).answer(query)]
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(f".{os.getpid()}.partial")  # concurrent studies may write it at once
    partial.write_text(json.dumps(rows))
    partial.rename(cache)
    return rows


def verdict(query: Query, scale_factor: float, rows: list[tuple[Any, ...]]) -> str:
    """``match``, or why the server's whole answer differs from DuckDB's (tie-aware)."""
    return compare(rows, expected_answer(query, scale_factor), order_by=query.order_by, limit=query.limit).reason
