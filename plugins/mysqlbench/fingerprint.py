"""Is a verified dataset still what was verified? Each table's definition and contents, taken when
a dataset is verified and compared before it is reused or measured again (any workload)."""

from __future__ import annotations

from typing import Any

from mysqlbench.identifiers import quote


def fingerprint(conn, schema: str, tables) -> dict[str, dict[str, Any]]:
    """Each table's definition (a hash of SHOW CREATE TABLE) and contents (CHECKSUM TABLE, which
    reads every row), taken when the dataset is verified and compared before it is reused."""
    import hashlib

    s = quote(schema, "schema name")
    out = {}
    with conn.cursor() as cur:
        for table in tables:
            cur.execute(f"SHOW CREATE TABLE {s}.{quote(table)}")
            ddl = cur.fetchone()[1]
            cur.execute(f"CHECKSUM TABLE {s}.{quote(table)}")
            out[table] = {"ddl": hashlib.sha256(ddl.encode()).hexdigest()[:16], "checksum": int(cur.fetchone()[1])}
    return out


def changes_since_verified(conn, schema: str, marker: dict[str, Any], *, contents: bool) -> list[str]:
    """How the schema differs from what was verified (empty: unchanged).

    ``contents=False`` is the cheap check before each point: table set and definitions, and the
    server's own record of a write after the verification (InnoDB keeps UPDATE_TIME in memory, so
    it tells only since the last start). ``contents=True`` also compares every table's checksum:
    it reads the whole dataset, so it runs once, when a study or a load decides to reuse it."""
    import hashlib

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
            if hashlib.sha256(cur.fetchone()[1].encode()).hexdigest()[:16] != recorded[table]["ddl"]:
                found.append(f"{table}: definition changed (columns, keys or indexes)")
            if tables[table]:
                found.append(f"{table}: written after it was verified (information_schema.TABLES.UPDATE_TIME)")
            if contents:
                cur.execute(f"CHECKSUM TABLE {s}.{quote(table)}")
                if int(cur.fetchone()[1]) != recorded[table]["checksum"]:
                    found.append(f"{table}: contents changed (CHECKSUM TABLE)")
    return found
