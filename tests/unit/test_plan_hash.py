"""Plan-structure hashes on EXPLAIN FORMAT=JSON captured from MariaDB 10.11 (TPC-H Q10, SF 1)."""

import copy
import json
from pathlib import Path

from mysqlbench.measure import plan_structure_hash

PLANS = json.loads((Path(__file__).parents[1] / "data" / "q10_plans_mrr_on_off.json").read_text())


def test_mrr_changes_the_plan_structure():
    assert "Rowid-ordered scan" in json.dumps(PLANS["mrr_on"])
    assert plan_structure_hash(PLANS["mrr_on"]) != plan_structure_hash(PLANS["mrr_off"])


def test_estimates_do_not_change_the_hash():
    bumped = copy.deepcopy(PLANS["mrr_on"])
    first = bumped["query_block"]["filesort"]["temporary_table"]["nested_loop"][0]["table"]
    first["rows"] = first["rows"] * 10
    first["filtered"] = 12.5
    first["r_total_time_ms"] = 99.0
    assert plan_structure_hash(bumped) == plan_structure_hash(PLANS["mrr_on"])


def test_a_different_index_changes_the_hash():
    other = copy.deepcopy(PLANS["mrr_off"])
    other["query_block"]["filesort"]["temporary_table"]["nested_loop"][0]["table"]["key"] = "i_o_custkey"
    assert plan_structure_hash(other) != plan_structure_hash(PLANS["mrr_off"])


def test_outline_names_the_mrr_strategy():
    from mysqlbench.measure import plan_outline

    on = plan_outline(PLANS["mrr_on"])
    assert on[0] == "orders range key=i_o_orderdate mrr=Rowid-ordered scan"
    assert len(on) == 4 and all("mrr=" not in line for line in plan_outline(PLANS["mrr_off"]))


def test_outline_names_bka():
    from mysqlbench.measure import plan_outline

    captured = json.loads((Path(__file__).parents[1] / "data" / "q03_bka_plan_bka_on.json").read_text())
    outline = plan_outline(captured["plan"])
    assert any(line.startswith("lineitem ref key=L_ORDERKEY") and "join=BKA" in line for line in outline), outline


MYSQL = json.loads((Path(__file__).parents[1] / "data" / "q03_bka_plans_mysql_9_7.json").read_text())


def test_mysql_9_json_version_2_has_an_outline():
    """MySQL 9.x answers EXPLAIN FORMAT=JSON with schema version 2 (an iterator tree): the outline
    reads it (it was empty before), the BKA join's inner tables marked."""
    from mysqlbench.measure import plan_outline

    assert MYSQL["bka_on"]["json_schema_version"] == "2.0"
    assert plan_outline(MYSQL["bka_on"]) == ["customer scan", "orders ref key=i_o_custkey join=bka",
                                             "lineitem ref key=l_orderkey join=bka"]
    assert plan_outline(MYSQL["bka_off"]) == ["customer scan", "orders ref key=i_o_custkey", "lineitem ref key=l_orderkey"]


def test_the_same_plan_hashes_the_same_on_mariadb_and_mysql():
    """Captured Q3 with BKA on MariaDB 10.11 (SF 0.1) and MySQL 9.7 (SF 0.01): different JSON,
    same join order and accesses, one comparable hash; BKA off differs."""
    from mysqlbench.measure import comparable_plan_hash

    mariadb = json.loads((Path(__file__).parents[1] / "data" / "q03_bka_plan_bka_on.json").read_text())["plan"]
    assert comparable_plan_hash(mariadb) == comparable_plan_hash(MYSQL["bka_on"])
    assert comparable_plan_hash(MYSQL["bka_off"]) != comparable_plan_hash(MYSQL["bka_on"])
    assert plan_structure_hash(mariadb) != plan_structure_hash(MYSQL["bka_on"])  # the raw shapes differ


# MariaDB 10.5 writes a join's tables as repeated "table" keys of one object (10.6+: nested_loop)
REPEATED_10_5 = """{"query_block": {"select_id": 1,
  "table": {"table_name": "orders", "access_type": "ALL", "rows": 1500},
  "table": {"table_name": "lineitem", "access_type": "ref", "key": "i_l_orderkey", "rows": 4}}}"""
REPEATED_OTHER_JOIN = """{"query_block": {"select_id": 1,
  "table": {"table_name": "customer", "access_type": "ALL", "rows": 150},
  "table": {"table_name": "lineitem", "access_type": "ref", "key": "i_l_orderkey", "rows": 4}}}"""
NESTED_10_11 = """{"query_block": {"select_id": 1, "nested_loop": [
  {"table": {"table_name": "orders", "access_type": "ALL", "rows": 1500}},
  {"table": {"table_name": "lineitem", "access_type": "ref", "key": "i_l_orderkey", "rows": 4}}]}}"""


def test_repeated_keys_are_read_whole_and_hash_like_the_nested_loop_form():
    from mysqlbench.measure import comparable_plan_hash, parse_plan, plan_outline

    plan = parse_plan(REPEATED_10_5)
    assert plan_outline(plan) == ["orders ALL", "lineitem ref key=i_l_orderkey"]
    assert comparable_plan_hash(plan) == comparable_plan_hash(parse_plan(NESTED_10_11))
    assert plan_structure_hash(plan) != plan_structure_hash(parse_plan(REPEATED_OTHER_JOIN))
    assert comparable_plan_hash(plan) != comparable_plan_hash(parse_plan(REPEATED_OTHER_JOIN))
    # a plain json.loads keeps only the last table: the two joins would look the same
    assert plan_structure_hash(json.loads(REPEATED_10_5)) == plan_structure_hash(json.loads(REPEATED_OTHER_JOIN))
