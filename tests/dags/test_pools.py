"""The pool `bin/mysqlbench target up` makes for a target: one slot, counting deferred tasks (a
deferred point keeps its slot; the hold is what makes the target and its host exclusive)."""


def test_a_targets_pool_has_one_slot_and_counts_deferred_tasks(airflow_db):
    from airflow.models.pool import Pool

    from mysqlbench.cli import _ensure_pool

    name = _ensure_pool("mysqlbench_pool_probe")
    pool = Pool.get_pool(name)
    assert pool.slots == 1 and pool.include_deferred is True
