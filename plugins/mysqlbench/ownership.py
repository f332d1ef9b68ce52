"""Schemas the project created. A marker table inside the schema records ownership and the state
of the dataset in it; destructive steps (DROP, recreate, load) run only in schemas that carry it."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from mysqlbench.errors import UnsafeOperation
from mysqlbench.identifiers import check_schema, quote

MARKER_TABLE = "mysqlbench_owner"


def schema_exists(conn, schema: str) -> bool:
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (schema,))
        return cur.fetchone() is not None


def is_owned(conn, schema: str) -> bool:
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                    (schema, MARKER_TABLE))
        return cur.fetchone() is not None


def claim_schema(conn, target, schema: str) -> bool:
    """Create ``schema`` with the marker, or accept it if it already carries the marker.

    Returns True when the schema was created now. Refuses a schema someone else created, even an
    empty one, and any target not marked as a benchmark target.
    """
    check_schema(schema)
    target.require_benchmark_target(f"create or change schema {schema!r}")
    if schema_exists(conn, schema):
        if not is_owned(conn, schema):
            raise UnsafeOperation(f"schema {schema!r} exists on {target.conn_id!r} but was not created by "
                                  f"mysqlbench (no {MARKER_TABLE} table); refusing to change it")
        return False
    with conn.cursor() as cur:
        cur.execute(f"CREATE SCHEMA {quote(schema, 'schema name')}")
        cur.execute(f"CREATE TABLE {quote(schema)}.{MARKER_TABLE} (name VARCHAR(64) PRIMARY KEY, "
                    "value TEXT NOT NULL) ENGINE=InnoDB")
    set_marker(conn, schema, owner="mysqlbench", created_at=datetime.now(timezone.utc).isoformat())
    return True


def require_owned(conn, target, schema: str) -> None:
    check_schema(schema)
    target.require_benchmark_target(f"change schema {schema!r}")
    if not is_owned(conn, schema):
        raise UnsafeOperation(f"schema {schema!r} on {target.conn_id!r} was not created by mysqlbench; "
                              "refusing to change it")


def set_marker(conn, schema: str, **values: Any) -> None:
    with conn.cursor() as cur:
        for name, value in values.items():
            cur.execute(f"REPLACE INTO {quote(schema)}.{MARKER_TABLE} (name, value) VALUES (%s, %s)",
                        (name, json.dumps(value)))


def read_marker(conn, schema: str) -> dict[str, Any]:
    if not (schema_exists(conn, schema) and is_owned(conn, schema)):
        return {}
    with conn.cursor() as cur:
        cur.execute(f"SELECT name, value FROM {quote(schema)}.{MARKER_TABLE}")
        return {name: json.loads(value) for name, value in cur.fetchall()}


def datasets(conn) -> dict[str, dict[str, Any]]:
    """Every schema we own on the server, with what its marker says it holds (dataset id, state,
    verification time): what a whole-datadir snapshot would bring back."""
    with conn.cursor() as cur:
        cur.execute("SELECT TABLE_SCHEMA FROM information_schema.TABLES WHERE TABLE_NAME = %s", (MARKER_TABLE,))
        schemas = sorted(r[0] for r in cur.fetchall())
    out = {}
    for schema in schemas:
        marker = read_marker(conn, schema)
        out[schema] = {k: marker.get(k) for k in ("dataset_id", "state", "verified_at")}
    return out

