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


def dataset_checks(conn, schema: str, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per check: what was observed and what is expected (both as text)."""
    rows: list[dict[str, Any]] = []

    def add(check: str, subject: str, observed: Any, expected: Any) -> None:
        rows.append({"check": check, "subject": subject, "observed": str(observed), "expected": str(expected)})

    s = quote(schema, "schema name")
    with conn.cursor() as cur:
        cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                    "AND TABLE_NAME <> 'mysqlbench_owner' ORDER BY TABLE_NAME", (schema,))
        add("tables", schema, ",".join(r[0] for r in cur.fetchall()), ",".join(sorted(TABLES)))
        for table in TABLES:
            cur.execute(f"SELECT COUNT(*) FROM {s}.{quote(table)}")
            count = cur.fetchone()[0]
            add("row_count", table, count, manifest["tables"][table]["rows"])
            spec = spec_row_count(table, manifest["scale_factor"])
            if spec is not None:
                add("row_count_spec", table, count, spec)
            key = ", ".join(quote(c) for c in PRIMARY_KEYS[table])
            cur.execute(f"SELECT COUNT(*) FROM (SELECT {key} FROM {s}.{quote(table)} GROUP BY {key} "
                        "HAVING COUNT(*) > 1) AS dup")
            add("duplicate_keys", table, cur.fetchone()[0], 0)
        for name, child, columns, parent, parent_columns in FOREIGN_KEYS:
            on = " AND ".join(f"p.{quote(pc)} = c.{quote(cc)}" for cc, pc in zip(columns, parent_columns))
            cur.execute(f"SELECT COUNT(*) FROM {s}.{quote(child)} AS c LEFT JOIN {s}.{quote(parent)} AS p "
                        f"ON {on} WHERE p.{quote(parent_columns[0])} IS NULL")
            add("fk_orphans", name, cur.fetchone()[0], 0)
        cur.execute("SELECT COUNT(*) FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = %s "
                    "AND CONSTRAINT_TYPE = 'PRIMARY KEY' AND TABLE_NAME <> 'mysqlbench_owner'", (schema,))
        add("primary_keys", schema, cur.fetchone()[0], len(TABLES))
        cur.execute("SELECT CONSTRAINT_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS "
                    "WHERE CONSTRAINT_SCHEMA = %s ORDER BY CONSTRAINT_NAME", (schema,))
        add("foreign_keys", schema, ",".join(r[0] for r in cur.fetchall()), ",".join(sorted(f[0] for f in FOREIGN_KEYS)))
        cur.execute("SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s "
                    "AND INDEX_NAME <> 'PRIMARY' ORDER BY INDEX_NAME", (schema,))
        add("named_indexes", schema, ",".join(sorted((r[0] for r in cur.fetchall()), key=str.lower)),
            ",".join(sorted(NAMED_INDEXES, key=str.lower)))
    return rows
