"""Study specs: every shipped spec validates, the matrix expands as a cross product with paired
dimensions, the order is random but reproducible from its seed, and bad specs name the problem."""

import pytest

from mysqlbench.errors import InvalidInput
from mysqlbench.measure import SEED_COUNTERS
from mysqlbench.studies.spec import STUDIES_DIR, load_spec, study_files


def test_every_shipped_spec_validates():
    names = {path.stem for path in study_files() if path.parent == STUDIES_DIR}
    tpcc_studies = {"tpcc_bp_instances_study", "tpcc_bp_sweep_study", "tpcc_bp_instances_seed001_full",
                    "tpcc_bp_sweep_seed002_full"}
    sysbench = {"sysbench_cpu", "sysbench_fileio", "sysbench_oltp", "slap_partitioning_study"}
    assert names == {"tpch_bka_study", "tpch_icp_study", "tpch_mrr_study", "tpch_power", *tpcc_studies, *sysbench}
    for name in names - tpcc_studies - sysbench:
        assert load_spec(name).counters == list(SEED_COUNTERS)
    tpcc = load_spec("tpcc_bp_instances_study")
    assert tpcc.workload == "tpcc" and "Innodb_row_lock_waits" in tpcc.counters
    sweep = load_spec("tpcc_bp_sweep_study")
    assert len(sweep.points()) == 3 * 3 * 2  # buffer pool sizes x instances (default, 1, 8) x redo sizes


def test_bka_matrix_pairs_buffers_and_crosses_cache():
    points = load_spec("tpch_bka_study", {"seed": 5}).points()
    assert len(points) == 2 * 2 * 2
    labels = {p["label"] for p in points}
    assert "bka=on join_buffer_size=6M mrr_buffer_size=6M cache=cold" in labels
    assert "bka=on join_buffer_size=6M mrr_buffer_size=256K cache=cold" not in labels  # paired, not crossed
    for p in points:
        assert p["knobs"]["icp"] is False and p["knobs"]["buffer_pool_size"] == "64M"  # fixed settings kept


def test_order_is_random_and_reproducible():
    a = [p["label"] for p in load_spec("tpch_bka_study", {"seed": 5}).points()]
    b = [p["label"] for p in load_spec("tpch_bka_study", {"seed": 5}).points()]
    c = [p["label"] for p in load_spec("tpch_bka_study", {"seed": 6}).points()]
    assert a == b and sorted(a) == sorted(c) and a != c


@pytest.mark.parametrize("overrides,message", [
    ({"queries": ["q03", "q23"]}, "unknown query 'q23'"),
    ({"units": ["q03", "q03"]}, "listed twice: ['q03']"),
    ({"cache": ["warm", "warm"]}, "a cache mode is listed twice"),
    ({"matrix": {"join_buffer_size": [f"{n}K" for n in range(1, 40)], "sort_buffer_size": [f"{n}K" for n in range(1, 40)]}},
     "expands to 3042 points"),
    ({"timeout_s": 1e-7}, "timeout_s: Input should be greater than or equal to 0.001"),
    ({"point_timeout_s": 60, "timeout_s": 900}, "must exceed timeout_s"),
    ({"workload": "nosuch"}, "unknown workload 'nosuch'"),
    # a raw variable a knob also sets would silently decide what the knob's label claims
    ({"variables": {"optimizer_switch": "mrr=off"}}, "optimizer_switch (knob"),
    ({"variables": {"join_cache_level": 0}}, "join_cache_level (knob bka)"),
    ({"variables": {"innodb_buffer_pool_size": "128M"}}, "innodb_buffer_pool_size (knob buffer_pool_size)"),
    ({"workload_params": {"orakel": True}}, "orakel"),
    ({"settings": {"bka": "on"}}, "both fixed (settings or workload_params) and swept in the matrix: ['bka']"),
    ({"matrix": {"join_buffer_size": ["6M", "6M'"]}}, "is not a size"),
    ({"matrix": {"bogus": [1]}}, "unknown knob 'bogus'"),
    ({"variables": {"secure_file_priv": "/tmp"}}, "is refused, path variable"),
    ({"repetitions": 0}, "repetitions: Value error, a number of repetitions from 1 to 100, or auto"),
    ({"repetitions": "many"}, "repetitions: Value error, a number of repetitions from 1 to 100, or auto"),
    ({"repetitions": "auto", "min_repetitions": 8, "max_repetitions": 7}, "max_repetitions (7) is below min_repetitions (8)"),
    ({"cache": ["lukewarm"]}, "cache.0: Input should be 'warm' or 'cold'"),
    ({"dataset": {"scale_factor": 1e-300}}, "greater than or equal to 0.01"),
    ({"settings": {"bka": True, "buffer_pool_size": "1K"}}, "buffer_pool_size: '1K' is below 8M"),
    ({"variables": {"Join_Buffer_Size": 1}}, "use lower-case letters, digits and underscores"),
    ({"dataset": {"schema": "x`y"}}, "schema name 'x`y' is not allowed"),
    ({"extra_field": 1}, "extra_field: Extra inputs are not permitted"),
])
def test_bad_specs_name_the_problem(overrides, message):
    with pytest.raises(InvalidInput) as caught:
        load_spec("tpch_bka_study", overrides)
    assert message in str(caught.value)


def test_a_key_given_twice_is_an_error_with_both_lines(tmp_path):
    """PyYAML keeps the last of two equal keys silently (issue 27): a spec saying repetitions
    twice is refused, naming the line of each, for study, regression and target specs alike."""
    from mysqlbench.studies.factory import spec_errors

    text = (STUDIES_DIR / "tpch_power.yaml").read_text()
    spec = tmp_path / "tpch_power.yaml"
    spec.write_text(text + "repetitions: 30\n")
    assert "repetitions" in text  # given once in the shipped spec, a second time at the end
    first = 1 + next(i for i, line in enumerate(text.splitlines()) if line.startswith("repetitions:"))
    [problem] = spec_errors(spec)
    assert problem.startswith(f"{spec}:{len(text.splitlines()) + 1}: not valid YAML: duplicate key 'repetitions'")
    assert f"first given on line {first}" in problem
    from mysqlbench.yamlfile import load

    assert load("a: {b: 1, c: 2}\nd: [1, 1]\n") == {"a": {"b": 1, "c": 2}, "d": [1, 1]}
    with pytest.raises(Exception, match="duplicate key 'b'"):
        load("a:\n  b: 1\n  b: 2\n")


def test_a_spec_whose_study_differs_from_its_file_name_is_refused(tmp_path):
    """The DAG id is the study name and the trigger looks the spec up by it: a spec whose
    ``study:`` differs from its file name made a DAG that always failed, and passed lint."""
    from mysqlbench.studies.factory import spec_errors

    spec = tmp_path / "my_power.yaml"
    spec.write_text((STUDIES_DIR / "tpch_power.yaml").read_text())
    [problem] = spec_errors(spec)
    assert "study: 'tpch_power' differs from the file's name" in problem and "rename the file" in problem
    with pytest.raises(InvalidInput, match="differs from the file's name"):
        load_spec(spec)
