"""Is a verified dataset still what was verified? Each table's definition and contents, taken when
a dataset is verified and compared before it is reused or measured again (any workload)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from mysqlbench import ownership
from mysqlbench.identifiers import quote

# the next auto-increment value is a counter, not the table's definition: a row inserted and
# deleted again leaves the table as it was
_AUTO_INCREMENT = re.compile(r" AUTO_INCREMENT=\d+")


def ddl_hash(ddl: str) -> str:
    """SHOW CREATE TABLE's text, without its AUTO_INCREMENT counter, hashed."""
    return hashlib.sha256(_AUTO_INCREMENT.sub("", ddl).encode()).hexdigest()[:16]


def fingerprint(conn, schema: str, tables) -> dict[str, dict[str, Any]]:
    """Each table's definition (a hash of SHOW CREATE TABLE) and contents (CHECKSUM TABLE, which
    reads every row), taken when the dataset is verified and compared before it is reused."""
    s = quote(schema, "schema name")
    out = {}
    with conn.cursor() as cur:
        for table in tables:
            cur.execute(f"SHOW CREATE TABLE {s}.{quote(table)}")
            ddl = cur.fetchone()[1]
            cur.execute(f"CHECKSUM TABLE {s}.{quote(table)}")
            out[table] = {"ddl": ddl_hash(ddl), "checksum": int(cur.fetchone()[1])}
    return out


def changes_since_verified(conn, schema: str, marker: dict[str, Any], *, contents: bool) -> list[str]:
    """How the schema differs from what was verified (empty: unchanged).

    ``contents=False`` is the cheap check before each point: table set and definitions, and the
    server's own record of a write after the verification (InnoDB keeps UPDATE_TIME in memory, so
    it tells only since the last start). ``contents=True`` also compares every table's checksum:
    it reads the whole dataset, so it runs once, when a study or a load decides to reuse it."""

    recorded = marker.get("fingerprint")
    if not recorded:
        return ["no fingerprint was recorded when it was verified"]
    s = quote(schema, "schema name")
    found: list[str] = []
    with conn.cursor() as cur:
        cur.execute("SELECT TABLE_NAME, UPDATE_TIME > %s FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                    "AND TABLE_TYPE = 'BASE TABLE' AND TABLE_NAME <> 'mysqlbench_owner'",
                    (marker.get("verified_server_time"), schema))
        tables = dict(cur.fetchall())
        for table in sorted(set(recorded) - set(tables)):
            found.append(f"{table}: dropped")
        for table in sorted(set(tables) - set(recorded)):
            found.append(f"{table}: not part of the verified dataset")
        for table in sorted(set(recorded) & set(tables)):
            cur.execute(f"SHOW CREATE TABLE {s}.{quote(table)}")
            if ddl_hash(cur.fetchone()[1]) != recorded[table]["ddl"]:
                found.append(f"{table}: definition changed (columns, keys or indexes)")
            if tables[table]:
                found.append(f"{table}: written after it was verified (information_schema.TABLES.UPDATE_TIME)")
            if contents:
                cur.execute(f"CHECKSUM TABLE {s}.{quote(table)}")
                if int(cur.fetchone()[1]) != recorded[table]["checksum"]:
                    found.append(f"{table}: contents changed (CHECKSUM TABLE)")
    return found


def mark_verified(conn, schema: str, tables, **extra: Any) -> None:
    """Mark ``schema`` verified now, with every table's fingerprint and the server's clock (what
    UPDATE_TIME is compared with later), plus the workload's own ``extra`` facts."""
    from datetime import datetime, timezone

    with conn.cursor() as cur:
        cur.execute("SELECT NOW(6)")
        server_time = str(cur.fetchone()[0])
    ownership.set_marker(conn, schema, state="verified", verified_at=datetime.now(timezone.utc).isoformat(),
                         verified_server_time=server_time, fingerprint=fingerprint(conn, schema, tables), **extra)
