"""TPC-C's population rules (clause 4.3.3.1) in the generator, on the rows it writes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mysqlbench.workloads.tpcc import generate as g


def read(path, table):
    return pd.read_csv(path, sep="\t", header=None, names=list(g.COLUMNS[table]), na_values=["\\N"],
                       keep_default_na=False, dtype=str)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tpcc")
    rows = g.warehouse_tables(7, 2, g.c_load(7), directory)
    g.items(7, directory / "item.tsv")
    return directory, rows


def test_last_names_from_syllables():
    assert g.last_name(371) == "PRICALLYOUGHT"  # the specification's example
    assert g.last_name(0) == "BARBARBAR" and g.last_name(999) == "EINGEINGEING"


def test_nurand_stays_in_range_and_is_skewed():
    rng = np.random.default_rng(1)
    values = g.nurand(rng, 1023, 1, 3000, 259, 200_000)
    assert values.min() >= 1 and values.max() <= 3000
    counts = np.bincount(values, minlength=3001)[1:]
    assert counts.max() > 3 * counts.mean()  # non-uniform: some customers are hot


def test_rows_per_table_follow_the_specification(warehouse):
    directory, rows = warehouse
    for table in ("warehouse", "district", "customer", "history", "orders", "new_orders", "stock"):
        assert rows[table] == g.spec_row_count(table, 1), table
    orders = read(directory / "orders.2.tsv", "orders")
    assert rows["order_line"] == orders["o_ol_cnt"].astype(int).sum()


def test_orders_and_new_orders(warehouse):
    directory, _ = warehouse
    orders = read(directory / "orders.2.tsv", "orders").astype({"o_id": int, "o_d_id": int, "o_c_id": int})
    for _, district in orders.groupby("o_d_id"):
        assert sorted(district["o_c_id"]) == list(range(1, 3001))  # a permutation of the customers
    delivered = orders["o_id"] < 2101
    assert orders.loc[delivered, "o_carrier_id"].notna().all()
    assert orders.loc[~delivered, "o_carrier_id"].isna().all()
    new_orders = read(directory / "new_orders.2.tsv", "new_orders").astype(int)
    assert new_orders["no_o_id"].min() == 2101 and len(new_orders) == 9000
    lines = read(directory / "order_line.2.tsv", "order_line")
    undelivered = lines["ol_o_id"].astype(int) >= 2101
    assert lines.loc[undelivered, "ol_delivery_d"].isna().all()
    assert (lines.loc[~undelivered, "ol_amount"].astype(float) == 0).all()
    assert lines.loc[undelivered, "ol_amount"].astype(float).between(0.01, 9999.99).all()


def test_customers_and_data_rules(warehouse):
    directory, _ = warehouse
    customers = read(directory / "customer.2.tsv", "customer")
    first = customers[customers["c_id"].astype(int) <= 1000]
    assert list(first["c_last"][:3]) == ["BARBARBAR", "BARBAROUGHT", "BARBARABLE"]
    assert 0.08 < (customers["c_credit"] == "BC").mean() < 0.12
    assert customers["c_data"].str.len().between(300, 500).all()
    assert customers["c_zip"].str.fullmatch(r"[0-9]{4}11111").all()
    assert customers["c_discount"].astype(float).between(0, 0.5).all()
    stock = read(directory / "stock.2.tsv", "stock")
    assert 0.08 < stock["s_data"].str.contains("ORIGINAL").mean() < 0.12
    assert stock["s_data"].str.len().between(26, 50).all()
    assert stock["s_quantity"].astype(int).between(10, 100).all()
    items = read(directory / "item.tsv", "item")
    assert 0.08 < items["i_data"].str.contains("ORIGINAL").mean() < 0.12
    assert items["i_price"].astype(float).between(1, 100).all()


def test_a_warehouse_is_the_same_whoever_makes_it(tmp_path, warehouse):
    """A warehouse draws from its own stream: the same bytes from another process and another
    number of warehouses; another seed gives other data."""
    directory, _ = warehouse
    g.warehouse_tables(7, 2, g.c_load(7), tmp_path)
    assert (tmp_path / "customer.2.tsv").read_bytes() == (directory / "customer.2.tsv").read_bytes()
    g.warehouse_tables(8, 2, g.c_load(8), tmp_path)
    assert (tmp_path / "customer.2.tsv").read_bytes() != (directory / "customer.2.tsv").read_bytes()
    assert g.dataset_id(2, 7) != g.dataset_id(2, 8) != g.dataset_id(3, 7)
