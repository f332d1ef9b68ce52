"""The Great Expectations suite over check rows: it passes only when every observation equals its
expectation and none is missing."""

from mysqlbench.checks import validate_checks


def row(observed, expected="0"):
    return {"check": "fk_orphans", "subject": "fk_lineitem_orders", "observed": observed, "expected": expected}


def test_all_equal_passes():
    result = validate_checks([row("0"), row("8", "8")], "tpch_load")
    assert result.success and result.failures == [] and result.statistics["checks"] == 2


def test_a_mismatch_fails_and_is_named():
    result = validate_checks([row("0"), row("3")], "tpch_load")
    assert not result.success and result.failures == [row("3")]


def test_a_missing_observation_fails():
    assert not validate_checks([row(None)], "tpch_load").success
