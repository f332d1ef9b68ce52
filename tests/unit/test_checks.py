"""Great Expectations decides: the verdict, the failed expectation and its observed value come from
GX's result over a typed frame (a frame that breaks an expectation fails, with what GX saw)."""

import great_expectations as gx
import pandas as pd

from mysqlbench.checks import condition, validate_frames

E = gx.expectations


def test_a_clean_frame_passes():
    frame = pd.DataFrame({"status": ["ok", "ok"], "primary": [0.5, 0.7]})
    result = validate_frames("t", [("x", frame, [E.ExpectColumnValuesToBeBetween(column="primary", min_value=0,
                                                                                   strict_min=True)])])
    assert result.success and result.failures == [] and result.statistics["evaluated_expectations"] == 1


def test_a_failure_carries_what_gx_observed():
    frame = pd.DataFrame({"status": ["ok", "timeout", "ok"], "primary": [0.5, None, -2.0]})
    result = validate_frames("t", [("x", frame, [
        E.ExpectColumnValuesToBeBetween(column="primary", min_value=0, strict_min=True, **condition(status="ok"),
                                        meta={"check": "primary_positive"})])])
    assert not result.success
    (failure,) = result.failures
    assert failure["check"] == "primary_positive" and failure["unexpected"] == [-2.0]
    assert failure["unexpected_count"] == 1 and failure["where"] == 'status=="ok"'


def test_a_row_condition_limits_the_rows_checked():
    frame = pd.DataFrame({"cache": ["cold", "warm"], "reads": [100, 0]})
    cold_reads = E.ExpectColumnValuesToBeBetween(column="reads", min_value=1, **condition(cache="cold"))
    assert validate_frames("t", [("x", frame, [cold_reads])]).success
    everywhere = E.ExpectColumnValuesToBeBetween(column="reads", min_value=1)
    assert not validate_frames("t", [("x", frame, [everywhere])]).success


def test_every_batch_must_pass():
    good = pd.DataFrame({"n": [0]})
    bad = pd.DataFrame({"n": [3]})
    def zero():
        return [E.ExpectColumnValuesToBeBetween(column="n", min_value=0, max_value=0)]

    result = validate_frames("t", [("a", good, zero()), ("b", bad, zero())])
    assert not result.success and [f["batch"] for f in result.failures] == ["b"]


def test_conditions_select_the_rows_they_name():
    # a condition that matched nothing would make every conditional expectation pass vacuously
    frame = pd.DataFrame({"status": ["ok", "timeout"], "cache": ["cold", "cold"], "repetition": [0, 1]})
    assert len(frame.query(condition(status="ok")["row_condition"])) == 1
    assert len(frame.query(condition(cache="cold", repetition=1)["row_condition"])) == 1


def dataset_frames():
    """Observations of a correctly loaded SF 0.01 dataset, as workloads.tpch.validate builds them."""
    from mysqlbench.workloads.tpch import TABLES
    from mysqlbench.workloads.tpch.generate import spec_row_count
    from mysqlbench.workloads.tpch.validate import FOREIGN_KEYS, NAMED_INDEXES

    counts = {t: spec_row_count(t, 0.01) for t in TABLES}
    tables = pd.DataFrame([{"table": t, "rows": n, "manifest_rows": n, "spec_rows": n, "duplicate_keys": 0}
                           for t, n in counts.items()])
    tables["spec_rows"] = tables["spec_rows"].astype("Int64")
    fks = pd.DataFrame([{"name": f[0], "orphans": 0, "declared": True} for f in FOREIGN_KEYS])
    objects = pd.DataFrame([{"kind": "table", "name": t} for t in TABLES] + [{"kind": "primary_key", "name": t}
                                                                             for t in TABLES]
                           + [{"kind": "foreign_key", "name": f[0]} for f in FOREIGN_KEYS]
                           + [{"kind": "index", "name": i.lower()} for i in NAMED_INDEXES])
    return {"tables": tables, "foreign_keys": fks, "objects": objects}


def validate_dataset_frames(frames):
    from mysqlbench.workloads.tpch.validate import expectations

    wanted = expectations()
    return validate_frames("tpch_load", [(name, frames[name], wanted[name]) for name in frames])


def test_a_correct_dataset_passes_every_expectation():
    result = validate_dataset_frames(dataset_frames())
    assert result.success and result.statistics["evaluated_expectations"] == 11


def test_a_tampered_dataset_fails_with_what_gx_observed():
    frames = dataset_frames()
    frames["tables"].loc[frames["tables"]["table"] == "lineitem", "rows"] = 60_174
    frames["foreign_keys"].loc[0, "orphans"] = 1
    frames["objects"] = frames["objects"][frames["objects"]["name"] != "fk_lineitem_orders"]
    result = validate_dataset_frames(frames)
    failed = {f["check"]: f for f in result.failures}
    assert not result.success
    assert set(failed) == {"row_count", "row_count_spec", "fk_orphans", "foreign_keys"}
    assert failed["fk_orphans"]["unexpected"] == [1]
    assert failed["row_count"]["unexpected_count"] == 1
