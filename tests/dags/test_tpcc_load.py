"""tpcc_load end to end with Airflow's dag.test() on the test session's managed MariaDB: one
warehouse loaded, validated with Great Expectations, reused, and a broken row caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mysqlbench.results.store import ResultsStore, validations

from conftest import TEST_CONN

SCHEMA = "tpcc_dagtest"


@pytest.fixture(scope="module")
def bag(airflow_db, target):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))


def run(bag, **conf):
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=bag.dag_folder).get_dag("tpcc_load")  # fresh: dag.test() keeps the last conf
    return dag.test(run_conf={"warehouses": 1, "target_conn_id": TEST_CONN, "schema": SCHEMA, **conf})


def task_states(dag_run) -> dict[str, str]:
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        tis = session.scalars(select(TaskInstance).where(TaskInstance.run_id == dag_run.run_id,
                                                         TaskInstance.dag_id == dag_run.dag_id)).all()
        return {ti.task_id: str(ti.state) for ti in tis}


@pytest.fixture(scope="module")
def admin(managed):
    conn = managed.admin_connect()
    yield conn
    conn.close()


def query(conn, sql, *args):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


@pytest.fixture(scope="module")
def loaded(bag, admin):
    with admin.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS {SCHEMA}")
    return run(bag)


def run_validations(dag_run):
    return [r for r in ResultsStore().rows(validations) if r["run_id"] == dag_run.run_id]


def test_one_warehouse_loads_and_validates(loaded, admin):
    assert str(loaded.state) == "success", task_states(loaded)
    states = task_states(loaded)
    for task in ("check_params", "plan", "create_tables", "load", "add_indexes", "analyze", "procedures",
                 "validate"):
        assert states[task] == "success", (task, states)
    counts = {t: query(admin, f"SELECT COUNT(*) FROM {SCHEMA}.{t}")[0][0]
              for t in ("warehouse", "district", "customer", "history", "orders", "new_orders", "item", "stock")}
    assert counts == {"warehouse": 1, "district": 10, "customer": 30_000, "history": 30_000, "orders": 30_000,
                      "new_orders": 9_000, "item": 100_000, "stock": 100_000}
    indexes = {r[0] for r in query(admin, "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS "
                                          "WHERE TABLE_SCHEMA = %s", SCHEMA)}
    assert {"idx_customer", "idx_orders", "fkey_stock_2", "fkey_order_line_2"} <= indexes
    fks = query(admin, "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = %s",
                SCHEMA)[0][0]
    assert fks == 10
    (validation,) = run_validations(loaded)
    assert validation["success"] and validation["suite"] == "tpcc_load"
    # GX evaluated the consistency conditions among the load's expectations
    assert json.loads(validation["statistics"])["evaluated_expectations"] >= 15
    marker = dict(query(admin, f"SELECT name, value FROM {SCHEMA}.mysqlbench_owner"))
    assert json.loads(marker["state"]) == "verified" and 0 <= json.loads(marker["c_load"]) <= 255


def test_a_second_load_reuses_the_verified_dataset(bag, loaded):
    again = run(bag)
    assert str(again.state) == "success"
    states = task_states(again)
    assert states["reuse_dataset"] == "success" and states["create_tables"] == "skipped"


@pytest.mark.parametrize("broken,check", [
    ("UPDATE {s}.warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1", ["consistency_1: W_YTD = sum(D_YTD)"]),
    ("UPDATE {s}.district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 3",
     ["consistency_2: D_NEXT_O_ID - 1 = max(O_ID)", "consistency_2: D_NEXT_O_ID - 1 = max(NO_O_ID)"]),
    ("DELETE FROM {s}.new_orders WHERE no_w_id = 1 AND no_d_id = 4 AND no_o_id = 2500",
     ["consistency_3: max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDERS)"]),
    ("DELETE FROM {s}.order_line WHERE ol_w_id = 1 AND ol_d_id = 5 AND ol_o_id = 17 AND ol_number = 1",
     ["consistency_4: sum(O_OL_CNT) = count(ORDER_LINE)"]),
])
def test_a_broken_row_fails_its_consistency_condition(loaded, admin, broken, check):
    """Each condition fails on the row that breaks it, and GX names the district."""
    from mysqlbench.workloads.tpcc.validate import check_consistency

    with admin.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute(broken.format(s=SCHEMA))
        try:
            result = check_consistency(admin, SCHEMA)  # the same session sees its own change
        finally:
            cur.execute("ROLLBACK")
    assert not result.success
    assert [f["check"] for f in result.failures] == check, result.failures
    assert all(f["unexpected_count"] == 1 for f in result.failures)  # one warehouse or district
    assert check_consistency(admin, SCHEMA).success  # rolled back: consistent again


def test_a_changed_dataset_is_rebuilt_not_reused(bag, loaded, admin):
    with admin.cursor() as cur:
        cur.execute(f"UPDATE {SCHEMA}.stock SET s_quantity = s_quantity + 1 WHERE s_w_id = 1 AND s_i_id = 42")
    again = run(bag)
    assert str(again.state) == "success"
    states = task_states(again)
    assert states["create_tables"] == "success" and states["reuse_dataset"] == "skipped"
    assert query(admin, f"SELECT COUNT(*) FROM {SCHEMA}.stock")[0][0] == 100_000


@pytest.mark.parametrize("conf,words", [
    ({"warehouses": 0}, "warehouses"),
    ({"warehouses": -2}, "warehouses"),
    ({"warehouses": "2"}, "whole number"),
    ({"warehouses": True}, "whole number"),
    ({"schema": "tpcc; DROP SCHEMA mysql"}, "schema"),
    ({"load_streams": 0}, "load_streams"),
])
def test_bad_input_fails_before_the_server_sees_anything(conf, words, admin):
    from mysqlbench.errors import InvalidInput
    from mysqlbench.workloads.lifecycle import check_params
    from mysqlbench.workloads.tpcc.build import TpccBuild

    before = dict(query(admin, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_create_table', 'Com_drop_table', "
                               "'Com_load')"))
    with pytest.raises(InvalidInput, match=words):
        check_params(TpccBuild, {"warehouses": 1, "target_conn_id": TEST_CONN, "schema": SCHEMA, **conf})
    after = dict(query(admin, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_create_table', 'Com_drop_table', "
                              "'Com_load')"))
    assert before == after


@pytest.mark.parametrize("protocol,processes", [("procedures", 1), ("statements", 1), ("statements", 2)])
def test_the_driver_runs_the_mix_and_leaves_the_data_consistent(bag, admin, protocol, processes):
    """Our driver against the loaded warehouse for a few seconds, by each protocol, its terminals
    threads of this process or spread over two processes: every
    transaction type commits, about 1% of New-Orders roll back, nothing errors, the committed
    New-Orders are exactly what the districts' d_next_o_id advanced by, and GX finds conditions
    1-4 intact after the run."""
    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.workloads.tpcc import driver
    from mysqlbench.workloads.tpcc.validate import check_consistency

    assert str(run(bag).state) == "success"  # a verified dataset (rebuilt if an earlier test changed it)
    target = TargetConnection.from_airflow(TEST_CONN)
    marker = dict(query(admin, f"SELECT name, value FROM {SCHEMA}.mysqlbench_owner"))
    next_before = query(admin, f"SELECT SUM(d_next_o_id) FROM {SCHEMA}.district")[0][0]
    config = driver.DriverConfig(warehouses=1, connections=4, rampup_s=0, measure_s=6, interval_s=1, seed=3,
                                 protocol=protocol, processes=processes)
    out = driver.run(config, target, SCHEMA, json.loads(marker["c_load"]))
    next_after = query(admin, f"SELECT SUM(d_next_o_id) FROM {SCHEMA}.district")[0][0]
    per_type = out["per_type"]
    assert all(per_type[t]["ok"] > 0 for t in driver.TRANSACTIONS), per_type
    assert out["errors"] == {} and all(per_type[t]["errors"] == 0 for t in driver.TRANSACTIONS)
    assert per_type["new_order"]["rollbacks"] < per_type["new_order"]["count"] * 0.05
    # every committed New-Order took one order id; a call that ended after the window still counted
    # on the server, so the server's count is at least the window's
    assert next_after - next_before >= out["new_orders"] > 0
    assert len(out["intervals"]) == 6 and all(i["transactions_per_s"] > 0 for i in out["intervals"])
    # every terminal's calls came back (from every process): over the whole run, the driver saw
    # every New-Order the database committed
    assert out["new_orders_whole_run"] == next_after - next_before
    assert all(per_type[t]["p50_ms"] <= per_type[t]["p99_ms"] <= per_type[t]["max_ms"] for t in driver.TRANSACTIONS)
    result = check_consistency(admin, SCHEMA)
    assert result.success, result.failures


def _state(admin) -> dict:
    """What the transactions change, row by row where the change does not depend on earlier runs."""
    from collections import Counter

    return {
        "customer": {r[:3]: r[3:] for r in query(admin, f"SELECT c_w_id, c_d_id, c_id, c_ytd_payment, c_payment_cnt, "
                                                        f"c_delivery_cnt, c_balance, c_data FROM {SCHEMA}.customer")},
        "stock": {r[:2]: r[2:] for r in query(admin, f"SELECT s_w_id, s_i_id, s_ytd, s_order_cnt, s_remote_cnt "
                                                     f"FROM {SCHEMA}.stock")},
        "history": Counter(query(admin, f"SELECT h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_amount, h_data "
                                        f"FROM {SCHEMA}.history")),
        "new_orders": set(query(admin, f"SELECT no_w_id, no_d_id, no_o_id FROM {SCHEMA}.new_orders")),
        "next_o_id": dict(query(admin, f"SELECT d_id, d_next_o_id FROM {SCHEMA}.district")),
        "ytd": query(admin, f"SELECT (SELECT SUM(w_ytd) FROM {SCHEMA}.warehouse), "
                            f"(SELECT SUM(d_ytd) FROM {SCHEMA}.district)")[0],
    }


def _changes(admin, before: dict, after: dict) -> dict:
    """The changes one pass of transactions made, in terms that do not depend on what earlier
    passes did: per customer the payments and deliveries, per stock row the ordered quantities,
    the history rows added, the orders and lines inserted (numbered within the pass), the
    districts delivered and whether every delivered order's amount reached its customer."""
    inserted = {d: (before["next_o_id"][d], after["next_o_id"][d]) for d in after["next_o_id"]}
    orders = sorted((d, o - lo, *rest) for d, (lo, hi) in inserted.items() for (o, *rest) in query(
        admin, f"SELECT o_id, o_c_id, o_ol_cnt, o_all_local, o_carrier_id FROM {SCHEMA}.orders "
               f"WHERE o_w_id = 1 AND o_d_id = %s AND o_id >= %s AND o_id < %s", d, lo, hi))
    lines = sorted((d, o - lo, *rest) for d, (lo, hi) in inserted.items() for (o, *rest) in query(
        admin, f"SELECT ol_o_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info "
               f"FROM {SCHEMA}.order_line WHERE ol_w_id = 1 AND ol_d_id = %s AND ol_o_id >= %s AND ol_o_id < %s",
        d, lo, hi))
    delivered = sorted(before["new_orders"] - after["new_orders"])
    credited = sum((query(admin, f"SELECT SUM(ol_amount) FROM {SCHEMA}.order_line WHERE ol_w_id = %s AND "
                                 f"ol_d_id = %s AND ol_o_id = %s", *key)[0][0] for key in delivered), start=0)
    balance = sum(a[3] - b[3] for a, b in zip(after["customer"].values(), before["customer"].values(), strict=True))
    paid = sum(a[0] - b[0] for a, b in zip(after["customer"].values(), before["customer"].values(), strict=True))
    return {
        "payments": {k: (a[0] - before["customer"][k][0], a[1] - before["customer"][k][1])
                     for k, a in after["customer"].items() if a[:2] != before["customer"][k][:2]},
        "bad_credit_data": sorted(k for k, a in after["customer"].items() if a[4] != before["customer"][k][4]),
        "deliveries": sum(a[2] - before["customer"][k][2] for k, a in after["customer"].items()),
        "stock": {k: tuple(x - y for x, y in zip(a, before["stock"][k], strict=True))
                  for k, a in after["stock"].items() if a != before["stock"][k]},
        "history": sorted((after["history"] - before["history"]).elements()),
        "orders": orders, "lines": lines, "delivered_per_district": sorted(d for _, d, _ in delivered),
        "delivered_amount_credited": balance + paid == credited,
        "ytd": tuple(a - b for a, b in zip(after["ytd"], before["ytd"], strict=True)),
    }


def test_both_protocols_make_the_same_changes_for_the_same_inputs(bag, admin):
    """The same 300 transactions (one terminal's deck and inputs from one seed), first as stored
    procedures, then statement by statement, one pass after the other on the same data: each pass
    commits and rolls back the same transactions and makes the same changes, row for row (orders
    and lines numbered within the pass; Delivery takes the oldest undelivered orders of each pass,
    so it is compared by districts delivered and amounts credited); the data stay consistent."""
    import random

    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.workloads.tpcc import driver
    from mysqlbench.workloads.tpcc.statements import EXECUTORS
    from mysqlbench.workloads.tpcc.validate import check_consistency

    assert str(run(bag).state) == "success"
    target = TargetConnection.from_airflow(TEST_CONN)
    c_load = json.loads(dict(query(admin, f"SELECT name, value FROM {SCHEMA}.mysqlbench_owner"))["c_load"])
    constants = driver.Constants.for_run(c_load, seed=5)
    passes = {}
    for protocol in ("procedures", "statements"):
        before = _state(admin)
        rng = random.Random(11)
        inputs, dealer = driver.Inputs(1, 1, constants, rng, district=4), driver.Dealer("spec", rng)
        with target.session(database=SCHEMA) as conn:
            executor = EXECUTORS[protocol](conn)
            statuses = []
            for _ in range(300):
                kind = dealer.next()
                statuses.append((kind, executor.run(kind, getattr(inputs, kind)())))
            executor.close()
        passes[protocol] = (statuses, _changes(admin, before, _state(admin)))
        assert check_consistency(admin, SCHEMA).success, protocol
    (statuses, changes), (statuses_s, changes_s) = passes["procedures"], passes["statements"]
    kinds = {kind for kind, _ in statuses}
    assert kinds == set(driver.TRANSACTIONS) and any(status == 1 for _, status in statuses), "a rollback among them"
    assert statuses_s == statuses
    assert changes["delivered_amount_credited"] and changes["payments"] and changes["stock"]
    for key in changes:
        assert changes_s[key] == changes[key], key
