"""The query files: 22 power-run queries plus study variants, each with one measured select."""

import pytest

from mysqlbench.errors import InvalidInput
from mysqlbench.workloads.tpch import queries


def test_all_22_queries_load():
    for query_id in queries.POWER_QUERIES:
        query = queries.load(query_id, 1)
        assert query.statement.lower().startswith(("select", "with"))


def test_q15_view_is_setup_and_teardown():
    q15 = queries.load("q15", 1)
    assert q15.setup[0].lower().startswith("create view revenue0")
    assert q15.teardown == ("drop view revenue0",)


def test_q11_fraction_follows_the_scale_factor():
    assert "0.001" in queries.load("q11", 0.1).statement
    assert "{fraction}" not in queries.load("q11", 1).statement


def test_limits_and_order_keys():
    q3 = queries.load("q03", 1)
    assert q3.limit == 10 and q3.order_by == (2, 3)
    assert queries.load("q06", 1).order_by == ()
    assert {q: queries.load(q, 1).limit for q in ("q02", "q03", "q10", "q18", "q21")} == {
        "q02": 100, "q03": 10, "q10": 20, "q18": 100, "q21": 100}


def test_study_variants_carry_the_seed_hints():
    assert "force index (L_ORDERKEY)" in queries.load("q03_bka", 1).statement
    assert "force index (i_l_partkey)" in queries.load("q19_icp", 1).statement


@pytest.mark.parametrize("bad", ["q99", "q1", "q03;drop", "../q03", "Q03", None])
def test_unknown_or_unsafe_ids_are_rejected(bad):
    with pytest.raises(InvalidInput):
        queries.load(bad, 1)
