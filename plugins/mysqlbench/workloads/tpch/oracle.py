"""DuckDB as an independent oracle for TPC-H answers: it reads the same generated .tbl files and
runs the same query text (index hints stripped), so a wrong answer from the server under test, or
a switch that changes results, is caught."""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path
from typing import Any

from mysqlbench import paths
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
