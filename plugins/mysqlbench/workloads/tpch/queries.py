"""The TPC-H queries under include/sql/tpch/: the 22 (qgen's default parameters, MySQL dialect)
in queries/ and the seeds' study variants (with their index hints) in studies/."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mysqlbench import paths
from mysqlbench.errors import InvalidInput
from mysqlbench.sqlfiles import sql_statements

_ID = re.compile(r"q\d{2}(?:_[a-z0-9]+)?")
_ORDER_BY = re.compile(r"^--\s*order-by:\s*(.*)$", re.MULTILINE)
_MEASURED = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)
QUERY_DIRS = ("tpch/queries", "tpch/studies")
POWER_QUERIES = tuple(f"q{n:02d}" for n in range(1, 23))


@dataclass(frozen=True)
class Query:
    """One query: set-up statements, the one measured statement, tear-down statements, and the
    1-based output columns its ORDER BY sorts on (for tie-aware answer checks)."""

    id: str
    path: Path
    setup: tuple[str, ...]
    statement: str
    teardown: tuple[str, ...]
    order_by: tuple[int, ...]

    @property
    def limit(self) -> int | None:
        match = re.search(r"\blimit\s+(\d+)\s*$", self.statement, re.IGNORECASE)
        return int(match.group(1)) if match else None


def available() -> list[str]:
    return sorted(p.stem for d in QUERY_DIRS for p in (paths.SQL_DIR / d).glob("q*.sql"))


def load(query_id: object, scale_factor: float) -> Query:
    """The query ``query_id`` (``q01`` .. ``q22``, or a study variant such as ``q03_bka``)."""
    if not isinstance(query_id, str) or not _ID.fullmatch(query_id):
        raise InvalidInput(f"query id {query_id!r} is not allowed (q01..q22 or a variant like q03_bka)")
    for directory in QUERY_DIRS:
        path = paths.SQL_DIR / directory / f"{query_id}.sql"
        if path.exists():
            break
    else:
        raise InvalidInput(f"unknown query {query_id!r}; known: {', '.join(available())}")
    text = path.read_text()
    # Q11's threshold scales with the data; the number comes from the validated scale factor
    text = text.replace("{fraction}", repr(0.0001 / float(scale_factor)))
    statements = sql_statements(text)
    measured = [i for i, s in enumerate(statements) if _MEASURED.match(s)]
    if len(measured) != 1:
        raise InvalidInput(f"{path} must hold exactly one select; it has {len(measured)}")
    at = measured[0]
    order = _ORDER_BY.search(text)
    order_by = tuple(int(c) for c in order.group(1).split(",") if c.strip().isdigit()) if order else ()
    return Query(query_id, path, tuple(statements[:at]), statements[at], tuple(statements[at + 1:]), order_by)
