"""Dataset validation for a loaded TPC-H schema: exact row counts, key uniqueness, foreign-key
integrity (anti-joins) and the expected structure, checked with Great Expectations."""

from __future__ import annotations

from typing import Any

from mysqlbench.identifiers import quote
from mysqlbench.workloads.tpch import TABLES
from mysqlbench.workloads.tpch.generate import spec_row_count

PRIMARY_KEYS = {
    "region": ("r_regionkey",), "nation": ("n_nationkey",), "part": ("p_partkey",),
    "supplier": ("s_suppkey",), "partsupp": ("ps_partkey", "ps_suppkey"), "customer": ("c_custkey",),
    "orders": ("o_orderkey",), "lineitem": ("l_orderkey", "l_linenumber"),
}
# (name, child table, child columns, parent table, parent columns), as in constraints.sql
FOREIGN_KEYS = (
    ("fk_nation_region", "nation", ("n_regionkey",), "region", ("r_regionkey",)),
    ("fk_supplier_nation", "supplier", ("s_nationkey",), "nation", ("n_nationkey",)),
    ("fk_customer_nation", "customer", ("c_nationkey",), "nation", ("n_nationkey",)),
    ("fk_partsupp_part", "partsupp", ("ps_partkey",), "part", ("p_partkey",)),
    ("fk_partsupp_supplier", "partsupp", ("ps_suppkey",), "supplier", ("s_suppkey",)),
    ("fk_orders_customer", "orders", ("o_custkey",), "customer", ("c_custkey",)),
    ("fk_lineitem_orders", "lineitem", ("l_orderkey",), "orders", ("o_orderkey",)),
    ("fk_lineitem_partsupp", "lineitem", ("l_partkey", "l_suppkey"), "partsupp", ("ps_partkey", "ps_suppkey")),
)
NAMED_INDEXES = ("L_ORDERKEY", "i_c_nationkey", "i_l_partkey", "i_n_regionkey", "i_o_custkey",
                 "i_o_orderdate", "i_ps_suppkey", "i_s_nationkey")


def observations(conn, schema: str, manifest: dict[str, Any]):
    """What the loaded schema holds, as typed frames for Great Expectations: one row per table
    (rows, the manifest's and the specification's counts, duplicate keys), one per foreign key
    (orphan rows, declared on the server or not), and one per schema object (tables, primary keys,
    foreign keys, named indexes). Counting happens in SQL on the server: pulling 6 M rows into
    pandas to let GX count them would be slower and no more honest."""
    import pandas as pd

    s = quote(schema, "schema name")
    tables, fks, objects = [], [], []
    with conn.cursor() as cur:
        for table in TABLES:
            cur.execute(f"SELECT COUNT(*) FROM {s}.{quote(table)}")
            count = cur.fetchone()[0]
            key = ", ".join(quote(c) for c in PRIMARY_KEYS[table])
            cur.execute(f"SELECT COUNT(*) FROM (SELECT {key} FROM {s}.{quote(table)} GROUP BY {key} "
                        "HAVING COUNT(*) > 1) AS dup")
            tables.append({"table": table, "rows": int(count), "manifest_rows": int(manifest["tables"][table]["rows"]),
                           "spec_rows": spec_row_count(table, manifest["scale_factor"]),
                           "duplicate_keys": int(cur.fetchone()[0])})
        cur.execute("SELECT CONSTRAINT_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS "
                    "WHERE CONSTRAINT_SCHEMA = %s", (schema,))
        declared = {r[0] for r in cur.fetchall()}
        for name, child, columns, parent, parent_columns in FOREIGN_KEYS:
            on = " AND ".join(f"p.{quote(pc)} = c.{quote(cc)}" for cc, pc in zip(columns, parent_columns, strict=True))
            cur.execute(f"SELECT COUNT(*) FROM {s}.{quote(child)} AS c LEFT JOIN {s}.{quote(parent)} AS p "
                        f"ON {on} WHERE p.{quote(parent_columns[0])} IS NULL")
            fks.append({"name": name, "orphans": int(cur.fetchone()[0]), "declared": name in declared})
        objects += [{"kind": "foreign_key", "name": name} for name in sorted(declared)]
        cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                    "AND TABLE_NAME <> 'mysqlbench_owner'", (schema,))
        objects += [{"kind": "table", "name": r[0]} for r in cur.fetchall()]
        cur.execute("SELECT TABLE_NAME FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = %s "
                    "AND CONSTRAINT_TYPE = 'PRIMARY KEY' AND TABLE_NAME <> 'mysqlbench_owner'", (schema,))
        objects += [{"kind": "primary_key", "name": r[0]} for r in cur.fetchall()]
        cur.execute("SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s "
                    "AND INDEX_NAME <> 'PRIMARY'", (schema,))
        objects += [{"kind": "index", "name": r[0].lower()} for r in cur.fetchall()]
    table_frame = pd.DataFrame(tables)
    table_frame["spec_rows"] = table_frame["spec_rows"].astype("Int64")  # unknown at this scale: <NA>
    return {"tables": table_frame, "foreign_keys": pd.DataFrame(fks),
            "objects": pd.DataFrame(objects, columns=["kind", "name"])}


def expectations() -> dict[str, list[Any]]:
    import great_expectations as gx

    from mysqlbench.checks import condition

    E = gx.expectations
    return {
        "tables": [
            E.ExpectColumnDistinctValuesToEqualSet(column="table", value_set=list(TABLES), meta={"check": "tables"}),
            E.ExpectColumnPairValuesToBeEqual(column_A="rows", column_B="manifest_rows", meta={"check": "row_count"}),
            E.ExpectColumnPairValuesToBeEqual(column_A="rows", column_B="spec_rows", ignore_row_if="either_value_is_missing",
                                              meta={"check": "row_count_spec"}),
            E.ExpectColumnValuesToBeBetween(column="rows", min_value=1, meta={"check": "tables_not_empty"}),
            E.ExpectColumnValuesToBeBetween(column="duplicate_keys", min_value=0, max_value=0,
                                            meta={"check": "duplicate_keys"}),
        ],
        "foreign_keys": [
            E.ExpectColumnValuesToBeBetween(column="orphans", min_value=0, max_value=0, meta={"check": "fk_orphans"}),
            E.ExpectColumnValuesToBeInSet(column="declared", value_set=[True], meta={"check": "foreign_keys_declared"}),
        ],
        "objects": [
            E.ExpectColumnDistinctValuesToEqualSet(column="name", value_set=list(TABLES), **condition(kind="table"),
                                                   meta={"check": "no_other_tables"}),
            E.ExpectColumnDistinctValuesToEqualSet(column="name", value_set=list(TABLES), **condition(kind="primary_key"),
                                                   meta={"check": "primary_keys"}),
            E.ExpectColumnDistinctValuesToEqualSet(column="name", value_set=[f[0] for f in FOREIGN_KEYS],
                                                   **condition(kind="foreign_key"), meta={"check": "foreign_keys"}),
            E.ExpectColumnDistinctValuesToContainSet(column="name", value_set=[i.lower() for i in NAMED_INDEXES],
                                                     **condition(kind="index"), meta={"check": "named_indexes"}),
        ],
    }


def validate_dataset(conn, schema: str, manifest: dict[str, Any]):
    """Great Expectations' verdict over the loaded schema's observations."""
    from mysqlbench.checks import validate_frames

    frames = observations(conn, schema, manifest)
    wanted = expectations()
    return validate_frames("tpch_load", [(name, frames[name], wanted[name]) for name in frames])
