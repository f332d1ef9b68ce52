"""Great Expectations over a TPC-C schema: after a load, the specification's row counts and data
rules; after a load and after every run, the consistency conditions 1-4 (clause 3.3.2), whose SQL
is in include/sql/tpcc/checks/. The server computes per-warehouse and per-district observations;
GX compares their columns and says which rows broke a condition."""

from __future__ import annotations

from typing import Any

from mysqlbench import paths
from mysqlbench.identifiers import quote
from mysqlbench.sqlfiles import sql_statements
from mysqlbench.workloads.tpcc import TABLES
from mysqlbench.workloads.tpcc.generate import spec_row_count

CONDITIONS = ("condition_1", "condition_2", "condition_3", "condition_4")


def _frame(conn, schema: str, sql: str):
    import pandas as pd

    with conn.cursor() as cur:
        cur.execute(f"USE {quote(schema, 'schema name')}")
        cur.execute(sql)
        columns = [c[0] for c in cur.description]
        frame = pd.DataFrame([list(r) for r in cur.fetchall()], columns=columns)
    for column in frame.columns:  # DECIMAL sums arrive as Decimal: compare them as exact numbers
        frame[column] = pd.to_numeric(frame[column]).astype("Float64" if "ytd" in column else "Int64")
    return frame


def consistency_frames(conn, schema: str) -> dict[str, Any]:
    """Each condition's observations: one row per warehouse (1) or per district (2-4)."""
    frames = {}
    for name in CONDITIONS:
        (statement,) = sql_statements(paths.sql_text(f"tpcc/checks/{name}.sql"))
        frames[name] = _frame(conn, schema, statement)
    return frames


def consistency_expectations() -> dict[str, list[Any]]:
    import great_expectations as gx

    E = gx.expectations
    return {
        "condition_1": [E.ExpectColumnPairValuesToBeEqual(column_A="w_ytd", column_B="d_ytd_sum",
                                                          meta={"check": "consistency_1: W_YTD = sum(D_YTD)"})],
        "condition_2": [
            E.ExpectColumnPairValuesToBeEqual(column_A="next_o_id_minus_1", column_B="max_o_id",
                                              meta={"check": "consistency_2: D_NEXT_O_ID - 1 = max(O_ID)"}),
            E.ExpectColumnPairValuesToBeEqual(column_A="next_o_id_minus_1", column_B="max_no_o_id",
                                              ignore_row_if="either_value_is_missing",
                                              meta={"check": "consistency_2: D_NEXT_O_ID - 1 = max(NO_O_ID)"}),
        ],
        "condition_3": [E.ExpectColumnPairValuesToBeEqual(
            column_A="no_o_id_span", column_B="new_orders",
            meta={"check": "consistency_3: max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDERS)"})],
        "condition_4": [E.ExpectColumnPairValuesToBeEqual(column_A="ol_cnt_sum", column_B="order_lines",
                                                          meta={"check": "consistency_4: sum(O_OL_CNT) = "
                                                                         "count(ORDER_LINE)"})],
    }


def check_consistency(conn, schema: str):
    """GX's verdict on conditions 1-4 over the schema as it is now (after a load or a run)."""
    from mysqlbench.checks import validate_frames

    frames = consistency_frames(conn, schema)
    wanted = consistency_expectations()
    return validate_frames("tpcc_consistency", [(name, frames[name], wanted[name]) for name in CONDITIONS])


def load_observations(conn, schema: str, warehouses: int):
    """What a fresh load holds: rows per table against the specification's counts (order_line
    against condition 4), the share of ORIGINAL items and stock, of bad-credit customers, and of
    customers per last-name syllable group (clause 4.3.3.1)."""
    import pandas as pd

    s = quote(schema, "schema name")
    tables, shares = [], []
    with conn.cursor() as cur:
        for table in TABLES:
            cur.execute(f"SELECT COUNT(*) FROM {s}.{quote(table)}")
            tables.append({"table": table, "rows": int(cur.fetchone()[0]), "spec_rows": spec_row_count(table, warehouses)})
        for name, sql in (
            ("item_original", f"SELECT AVG(i_data LIKE '%%ORIGINAL%%') FROM {s}.item"),
            ("stock_original", f"SELECT AVG(s_data LIKE '%%ORIGINAL%%') FROM {s}.stock"),
            ("customer_bad_credit", f"SELECT AVG(c_credit = 'BC') FROM {s}.customer"),
            ("undelivered_without_carrier",
             f"SELECT AVG(o_carrier_id IS NULL) FROM {s}.orders WHERE o_id >= 2101"),
            ("delivered_with_carrier", f"SELECT AVG(o_carrier_id BETWEEN 1 AND 10) FROM {s}.orders WHERE o_id < 2101"),
        ):
            cur.execute(sql)
            shares.append({"rule": name, "share": float(cur.fetchone()[0])})
        cur.execute(f"SELECT MIN(n), MAX(n) FROM (SELECT COUNT(*) AS n FROM {s}.order_line "
                    "GROUP BY ol_w_id, ol_d_id, ol_o_id) AS per_order")
        low, high = cur.fetchone()
    frame = pd.DataFrame(tables)
    frame["spec_rows"] = frame["spec_rows"].astype("Int64")  # order_line: random, <NA>
    lines = pd.DataFrame([{"min_lines": int(low), "max_lines": int(high)}])
    return {"tables": frame, "shares": pd.DataFrame(shares), "order_lines": lines}


def load_expectations() -> dict[str, list[Any]]:
    import great_expectations as gx

    from mysqlbench.checks import condition

    E = gx.expectations
    return {
        "tables": [
            E.ExpectColumnDistinctValuesToEqualSet(column="table", value_set=list(TABLES), meta={"check": "tables"}),
            E.ExpectColumnPairValuesToBeEqual(column_A="rows", column_B="spec_rows",
                                              ignore_row_if="either_value_is_missing", meta={"check": "row_count_spec"}),
            E.ExpectColumnValuesToBeBetween(column="rows", min_value=1, meta={"check": "tables_not_empty"}),
        ],
        "shares": [
            # 10% by rule; over 100,000 rows a sample's share stays well inside 8-12%
            E.ExpectColumnValuesToBeBetween(column="share", min_value=0.08, max_value=0.12,
                                            **condition(rule="item_original"), meta={"check": "item_original_10pct"}),
            E.ExpectColumnValuesToBeBetween(column="share", min_value=0.08, max_value=0.12,
                                            **condition(rule="stock_original"), meta={"check": "stock_original_10pct"}),
            E.ExpectColumnValuesToBeBetween(column="share", min_value=0.08, max_value=0.12,
                                            **condition(rule="customer_bad_credit"), meta={"check": "bad_credit_10pct"}),
            E.ExpectColumnValuesToBeBetween(column="share", min_value=1, max_value=1,
                                            **condition(rule="undelivered_without_carrier"),
                                            meta={"check": "undelivered_orders_have_no_carrier"}),
            E.ExpectColumnValuesToBeBetween(column="share", min_value=1, max_value=1,
                                            **condition(rule="delivered_with_carrier"),
                                            meta={"check": "delivered_orders_have_a_carrier"}),
        ],
        "order_lines": [
            E.ExpectColumnValuesToBeBetween(column="min_lines", min_value=5, max_value=15,
                                            meta={"check": "order_lines_per_order"}),
            E.ExpectColumnValuesToBeBetween(column="max_lines", min_value=5, max_value=15,
                                            meta={"check": "order_lines_per_order"}),
        ],
    }


def validate_load(conn, schema: str, warehouses: int):
    """GX's verdict on a fresh load: the population's rules and the consistency conditions."""
    from mysqlbench.checks import validate_frames

    frames = {**load_observations(conn, schema, warehouses), **consistency_frames(conn, schema)}
    wanted = {**load_expectations(), **consistency_expectations()}
    return validate_frames("tpcc_load", [(name, frames[name], wanted[name]) for name in frames])
