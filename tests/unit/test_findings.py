"""Findings: every on/off comparison of a run as an effect estimate with its interval and verdict,
on execution frames built from sample rows as the store holds them; the per-point summaries. The
captured run (tests/data/bka_sf0.1_points.json: a real tpch_bka_study at SF 0.1 with a 64M buffer
pool, 2 repetitions) is where the project used to state "less time" from two medians."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mysqlbench.studies.analysis import READ_AHEAD, comparisons, execution_frame, findings, summaries
from mysqlbench.workloads.base import Better, Metric

CAPTURED = json.loads((Path(__file__).parents[1] / "data" / "bka_sf0.1_points.json").read_text())["points"]
TIME = Metric("client_seconds", "s", Better.LOWER, "time")
THROUGHPUT = Metric("new_orders_per_min", "1/min", Better.HIGHER, "throughput")


def executions(points, metric=TIME):
    """Sample rows for several points: each point a dict with subject, cache, swept, times and
    optionally reads (one per repetition) and warm."""
    out = []
    for p in points:
        label = " ".join(f"{k}={'on' if v is True else 'off' if v is False else v}"
                         for k, v in sorted(p["swept"].items())) + f" cache={p['cache']}"
        for i, t in enumerate(p["times"]):
            meta = json.dumps({"cache": p["cache"], "swept": p["swept"], "cache_evidence": {"warm": p.get("warm")}})
            base = {"point": label, "subject": p.get("subject", "q03"), "repetition": i, "metadata": meta,
                    "series": None}
            out.append({**base, "metric": metric.name, "value": t, "status": "ok", "kind": "metric", "unit": "s"})
            if "reads" in p:
                out.append({**base, "metric": "physical_reads", "value": p["reads"][i], "status": "ok",
                            "kind": "counter", "unit": "count"})
    return execution_frame(out, metric)


def bka(ratio=0.6, reads_ratio=0.6, n=6, cache="cold", others=None, seed=3, **extra):
    rng = np.random.default_rng(seed)
    off_times = 2.0 * np.exp(rng.normal(0, 0.05, n))
    on_times = ratio * 2.0 * np.exp(rng.normal(0, 0.05, n))
    reads_off = rng.integers(17000, 18000, n)
    reads_on = (reads_ratio * rng.integers(17000, 18000, n)).astype(int)
    swept = others or {}
    return [{"cache": cache, "swept": {**swept, "bka": False}, "times": list(off_times), "reads": list(reads_off), **extra},
            {"cache": cache, "swept": {**swept, "bka": True}, "times": list(on_times), "reads": list(reads_on), **extra}]


def test_a_clear_effect_is_a_supported_finding_with_its_interval():
    said = comparisons(executions(bka()), TIME)
    time_ = next(c for c in said if c["metric"] == "client_seconds")
    reads = next(c for c in said if c["metric"] == "physical_reads")
    assert time_["verdict"] == "less" and time_["estimate"] == pytest.approx(-0.4, abs=0.05)
    assert time_["ci_low"] < time_["estimate"] < time_["ci_high"] < -0.03 and time_["n_a"] == time_["n_b"] == 6
    assert reads["verdict"] == "less" and reads["estimate"] == pytest.approx(-0.4, abs=0.05)
    [sentence] = findings(said)
    assert sentence.startswith("bka on vs off, cold cache: q03: time -") and "95.9% CI" in sentence
    assert "CI" in sentence and "n=6 vs 6" in sentence and "less time (better)" in sentence
    assert "fewer physical reads" in sentence


def test_reads_from_about_zero_are_said_as_medians_not_a_percentage():
    """Warm, BKA off read nothing from disk and on read ~40 pages: counts are compared as 1 + count,
    so a percentage would say "+4000%"; the sentence and the table give the medians per execution
    and keep the verdict the interval supports. Large counts still get their percentage."""
    from mysqlbench.studies.report import _comparisons_table

    points = bka(cache="warm")
    points[0]["reads"], points[1]["reads"] = [0, 0, 1, 0, 0, 0], [38, 41, 40, 39, 44, 40]
    said = comparisons(executions(points), TIME)
    reads = next(c for c in said if c["metric"] == "physical_reads")
    assert reads["small_counts"] and (reads["median_a"], reads["median_b"]) == (0.0, 40.0)
    assert reads["verdict"] == "more" and reads["estimate"] > 10  # kept in the numbers
    assert "reads 0 -> 40 per execution (medians, n=6 vs 6;" in reads["said"]
    assert "%" not in reads["said"].split(":")[0] and reads["said"].endswith("more physical reads")
    table = _comparisons_table(said, 0.03, None)
    assert "0 -&gt; 40 /exec" in table and "+4" not in table.split("0 -&gt; 40")[1].split("</tr>")[0]
    large = next(c for c in comparisons(executions(bka()), TIME) if c["metric"] == "physical_reads")
    assert not large["small_counts"] and "CI" in large["said"]
    paired = next(c for c in comparisons(executions(points), TIME, paired=True) if c["metric"] == "physical_reads")
    assert "reads 0 -> 40 per execution (medians, n=6 pairs;" in paired["said"]


def test_reversed_effect_reverses_the_sentence():
    [sentence] = findings(comparisons(executions(bka(ratio=1.6, reads_ratio=1.6)), TIME))
    assert "more time (worse)" in sentence and "more physical reads" in sentence


def test_direction_follows_the_primary_metric():
    [sentence] = findings(comparisons(executions(bka()), THROUGHPUT))
    assert "less throughput (worse)" in sentence


def test_no_real_difference_is_said_as_none_larger_than_the_band():
    said = comparisons(executions(bka(ratio=1.0, reads_ratio=1.0, n=10)), TIME, band=0.10)
    assert {c["verdict"] for c in said} == {"same"}
    assert "no difference larger than 10%" in findings(said)[0]
    assert all(c["said"].endswith("no difference larger than 10%") for c in said)  # no better/worse on a tie


def test_the_captured_two_repetition_run_is_inconclusive_and_says_why():
    """The real SF 0.1 run the project once summed up as "less time (better)": two repetitions a
    point give no 95% interval, so no claim."""
    points = [{"cache": p["cache"], "swept": p["swept"], "subject": p["query"],
               "times": [p["min_s"], p["max_s"]]} for p in CAPTURED]
    said = comparisons(executions(points), TIME)
    assert said and {c["verdict"] for c in said} == {"inconclusive"} and all(c["ci_low"] is None for c in said)
    cold = next(s for s in findings(said) if "cold cache" in s)
    assert "(n=2 vs 2: no 95% interval)" in cold and "too few repetitions for an interval" in cold and "(better)" not in cold


def test_several_pairs_are_each_said_never_pooled_into_one_number():
    points = bka(others={"join_buffer_size": "256K"}) + bka(ratio=1.0, reads_ratio=1.0, others={"join_buffer_size": "6M"},
                                                            seed=4)
    [sentence] = findings(comparisons(executions(points), TIME))
    assert "2 pairs of points, each said, not pooled" in sentence
    assert "q03 at join_buffer_size=256K: time -" in sentence and "q03 at join_buffer_size=6M: time" in sentence
    assert "less in 1" in sentence and re.search(r"primary metric verdicts: \w+ in 1, \w+ in 1\): q03", sentence)


def test_no_switch_swept_no_finding():
    points = [{**p, "swept": {"join_buffer_size": "6M" if p["swept"]["bka"] else "256K"}} for p in bka()]
    assert comparisons(executions(points), TIME) == [] and findings([]) == []


def test_a_warm_cache_that_never_warmed_is_said_so():
    said = comparisons(executions(bka(cache="warm", warm=False)), TIME)
    assert "not proven warm" in findings(said)[0]
    assert "not proven warm" not in findings(comparisons(executions(bka(cache="cold")), TIME))[0]


def rows(times, statuses=None, point="p1", subject="q01", cache="warm", reads=None, kind_extra=()):
    """Sample rows as the store holds them, for one point's executions."""
    out = []
    for i, t in enumerate(times):
        status = (statuses or ["ok"] * len(times))[i]
        meta = json.dumps({"point": point, "cache": cache, "swept": {}, "cache_evidence": {"warm": True}})
        base = {"point": point, "subject": subject, "repetition": i, "metadata": meta, "series": None}
        out.append({**base, "metric": "client_seconds", "value": t if status == "ok" else None, "status": status,
                    "kind": "metric", "unit": "s"})
        if reads is not None:
            out.append({**base, "metric": "physical_reads", "value": reads[i], "status": "ok",
                        "kind": "counter", "unit": "count"})
        for metric, value, kind in kind_extra:
            out.append({**base, "metric": metric, "value": value, "status": "ok", "kind": kind, "unit": "x"})
    return out


def test_summaries_take_the_median_not_the_mean():
    summary = summaries(execution_frame(rows([1.0, 1.0, 10.0]), TIME))
    assert summary.loc[0, "median"] == 1.0 and summary.loc[0, "min"] == 1.0 and summary.loc[0, "max"] == 10.0


def test_coefficient_of_variation_is_population_std_over_mean():
    summary = summaries(execution_frame(rows([1.0, 3.0]), TIME))
    assert summary.loc[0, "cv"] == pytest.approx(0.5)  # std 1 (population), mean 2


def test_timeouts_do_not_enter_the_statistics_but_are_counted():
    summary = summaries(execution_frame(rows([1.0, 2.0, 99.0], ["ok", "ok", "timeout"]), TIME))
    assert summary.loc[0, "median"] == 1.5 and summary.loc[0, "timeouts"] == 1 and summary.loc[0, "runs"] == 3


def test_os_and_series_samples_are_not_counters():
    frame_ = execution_frame(rows([1.0], reads=[5], kind_extra=[("os_cpu_user_pct", 40.0, "os"),
                                                                  ("throughput", 12.0, "series")]), TIME)
    assert "physical_reads" in frame_ and frame_.loc[0, "physical_reads"] == 5
    assert "os_cpu_user_pct" not in frame_ and "throughput" not in frame_


def test_an_absent_counter_stays_absent_in_the_summary():
    summary = summaries(execution_frame(rows([1.0, 2.0]), TIME), counters=("Innodb_rows_read",))
    assert summary.loc[0, "Innodb_rows_read"] != summary.loc[0, "Innodb_rows_read"]  # NaN, never 0


def test_great_expectations_holds_every_stated_comparison_to_its_interval():
    """GX over the comparisons frame: a sound run passes; an interval missing where the
    repetitions allow one, or a claim made without an interval, fails with its check named."""
    from types import SimpleNamespace

    from mysqlbench.checks import validate_frames
    from mysqlbench.studies.validation import comparison_expectations, comparisons_frame

    spec = SimpleNamespace(min_effect=0.03, matrix={"bka": [False, True]}, sequential=False)
    workload = SimpleNamespace(primary=TIME)
    said = comparisons_frame(spec, workload, executions(bka()))
    assert len(said) == 2 and said["has_interval"].all() and said["enough"].all()
    assert validate_frames("t", [("comparisons", said, comparison_expectations())]).success
    pointless = said.assign(ci_low=float("nan"), ci_high=float("nan"), confidence=float("nan"), has_interval=False)
    result = validate_frames("t", [("comparisons", pointless, comparison_expectations())])
    assert not result.success
    assert {f["check"] for f in result.failures} == {"interval_where_repetitions_allow", "no_interval_no_claim"}
    few = comparisons_frame(spec, workload, executions(bka(n=2)))
    assert not few["has_interval"].any() and not few["enough"].any()
    assert validate_frames("t", [("comparisons", few, comparison_expectations())]).success  # inconclusive is valid


def test_every_option_of_a_dimension_is_compared_with_the_baseline():
    """tpcc_bp_instances_study's matrix: `{}` (the server's default) is the baseline; 1, 2 and 8
    instances are each compared with it, and `1` (the same setting as the default on a small pool)
    reads "no difference" when the throughput does not move."""
    rng = np.random.default_rng(8)
    level = {None: 1000.0, 1: 1000.0, 2: 1000.0, 8: 1200.0}
    points = [{"cache": "warm", "swept": {} if n is None else {"buffer_pool_instances": n},
               "subject": "mix", "times": list(level[n] * np.exp(rng.normal(0, 0.01, 6)))} for n in level]
    matrix = {"buffer_pool_instances": [{}, 1, 2, 8]}
    said = comparisons(executions(points, THROUGHPUT), THROUGHPUT, matrix=matrix)
    verdicts = {c["knob"]: c["verdict"] for c in said}
    assert verdicts == {"buffer_pool_instances: buffer_pool_instances=1": "same",
                        "buffer_pool_instances: buffer_pool_instances=2": "same",
                        "buffer_pool_instances: buffer_pool_instances=8": "more"}
    sentences = findings(said)
    assert any(s.startswith("buffer_pool_instances=8 vs the baseline default, warm cache: mix: throughput +")
               and "more throughput (better)" in s for s in sentences), sentences
    assert comparisons(executions(points, THROUGHPUT), THROUGHPUT) == []  # without the matrix: no baseline known


def test_a_dimension_of_paired_values_is_compared_with_its_first_option_at_each_other_setting():
    """tpch_bka_study's `buffers` (256K pairs, then 6M pairs), at bka off and at bka on: two pairs
    against the baseline, beside bka's own on/off pairs."""
    small = {"join_buffer_size": "256K", "mrr_buffer_size": "256K"}
    large = {"join_buffer_size": "6M", "mrr_buffer_size": "6M"}
    points = bka(others=small) + bka(others=large, seed=4)
    said = comparisons(executions(points), TIME, matrix={"bka": [False, True], "buffers": [small, large]})
    titles = {c["title"] for c in said}
    assert titles == {"bka on vs off", "join_buffer_size=6M mrr_buffer_size=6M vs the baseline "
                                       "join_buffer_size=256K mrr_buffer_size=256K"}
    against = [c for c in said if c["title"] != "bka on vs off" and c["metric"] == "client_seconds"]
    assert sorted(c["others"]["bka"] for c in against) == [False, True]


def test_a_side_that_was_not_applicable_is_not_compared():
    """MariaDB has no buffer pool instances: those points record no value, so there is nothing to
    compare them with (the report says why per point), and GX is not handed an n of 0."""
    frame = executions(bka())
    assert comparisons(frame, TIME)
    frame.loc[frame["point"].str.contains("bka=on"), ["status", "primary"]] = ["not_applicable", float("nan")]
    assert comparisons(frame, TIME) == []


def _on_targets(points_by_target: dict[str, list[dict]], metric=TIME):
    """Sample rows of the same points measured on several targets (a study's `targets`), each with
    its connection id in the metadata and its server in the lineage, as the store holds them."""
    out = []
    for target, points in points_by_target.items():
        for p in points:
            label = f"target={target} " + " ".join(f"{k}={'on' if v is True else 'off'}"
                                                   for k, v in sorted(p["swept"].items())) + f" cache={p['cache']}"
            for i, t in enumerate(p["times"]):
                meta = json.dumps({"cache": p["cache"], "swept": p["swept"], "target": target})
                out.append({"point": label, "subject": "q03", "repetition": i, "metadata": meta, "series": None,
                            "metric": metric.name, "value": t, "status": "ok", "kind": "metric", "unit": "s",
                            "server_flavor": p["flavor"], "server_version": p["version"]})
    return execution_frame(out, metric)


def test_each_target_is_compared_within_itself_and_named_by_its_server():
    """Two targets running the same points: on and off are paired within a target, never across
    (a pairing across would compare one server's "on" with the other's "off"), and each finding
    names its server."""
    maria = [{**p, "flavor": "mariadb", "version": "10.11.6"} for p in bka(ratio=0.5)]
    mysql = [{**p, "flavor": "mysql", "version": "9.7.4"} for p in bka(ratio=1.0, seed=5)]
    for p in mysql:  # the MySQL server is 3x slower overall: a pairing across targets would show it
        p["times"] = [3 * t for t in p["times"]]
    said = [c for c in comparisons(_on_targets({"conn_maria": maria, "conn_mysql": mysql}), TIME)
            if c["metric"] == "client_seconds"]
    assert sorted((c["target"], c["server"], c["verdict"]) for c in said) == [
        ("conn_maria", "mariadb 10.11.6", "less"), ("conn_mysql", "mysql 9.7.4", "inconclusive")], said
    sentences = findings(said)
    assert any(", on mariadb 10.11.6 (conn_maria): q03: time -" in s for s in sentences), sentences
    assert any(", on mysql 9.7.4 (conn_mysql): q03: time" in s for s in sentences), sentences


@pytest.mark.parametrize("missing", ["256K", "6M"])
def test_a_pair_with_a_side_not_applicable_does_not_stop_the_other_pairs(missing):
    """One pair of points has a side that recorded no value; the contrast's other pair is still
    compared, whichever of the two comes first."""
    points = bka(others={"join_buffer_size": "256K"}) + bka(others={"join_buffer_size": "6M"}, seed=4)
    frame = executions(points)
    gone = frame["point"].str.contains("bka=on") & frame["point"].str.contains(f"join_buffer_size={missing}")
    frame.loc[gone, ["status", "primary"]] = ["not_applicable", float("nan")]
    said = [c for c in comparisons(frame, TIME) if c["metric"] == "client_seconds"]
    kept = "6M" if missing == "256K" else "256K"
    assert [c["others"] for c in said] == [{"join_buffer_size": kept}], said


def test_a_paired_design_is_estimated_as_pairs_by_repetition():
    """`repetitions: auto` measures the two sides in the same rounds: repetition r of each side is a
    block, so the estimate is the paired one over the blocks both sides have (a repetition missing
    on one side drops out, never shifting the others), at the confidence asked for; noise is counted
    by block."""
    frame = executions(bka(n=8))
    frame = frame[~((frame["point"].str.contains("bka=on")) & (frame["repetition"] == 2))
                  & ~((frame["point"].str.contains("bka=off")) & (frame["repetition"] == 4))].copy()
    frame.loc[frame["repetition"].isin([5, 6]), "noisy"] = True  # both sides of blocks 5 and 6
    frame.loc[frame["point"].str.contains("bka=off") & (frame["repetition"] == 0), "noisy"] = True  # one side of 0
    paired = [c for c in comparisons(frame, TIME, paired=True, confidence=0.90) if c["metric"] == "client_seconds"]
    [time_] = paired
    # (a paired interval's confidence is what its order statistics achieve nearest the one asked for)
    assert time_["paired"] is True and time_["n"] == 6 and abs(time_["confidence"] - 0.90) < 0.03, time_
    assert time_["noisy"] == 3 and "n=6 pairs" in time_["said"]  # blocks 0, 5 and 6 (the half blocks 2, 4: none)
    [unpaired] = [c for c in comparisons(frame, TIME) if c["metric"] == "client_seconds"]
    assert unpaired["paired"] is False and (unpaired["n_a"], unpaired["n_b"]) == (7, 7) and unpaired["noisy"] == 5


@pytest.mark.parametrize("cold_side", ["bka=on", "bka=off"])
def test_either_side_that_never_warmed_makes_the_pair_unwarmable(cold_side):
    frame = executions(bka(cache="warm", warm=True))
    frame.loc[frame["point"].str.contains(cold_side), "warm"] = False
    said = comparisons(frame, TIME)
    assert all(c["unwarmable"] for c in said) and "not proven warm" in findings(said)[0]


def test_only_counters_are_said_as_medians_and_only_below_ten_per_execution():
    """The primary metric always gets its percentage (a time of 2 s is not a count near zero); a
    counter whose side's median is exactly 10 per execution is not "about zero"."""
    points = bka()
    points[0]["reads"], points[1]["reads"] = [10] * 6, [30, 31, 29, 30, 32, 30]
    said = comparisons(executions(points), TIME)
    time_ = next(c for c in said if c["metric"] == "client_seconds")
    reads = next(c for c in said if c["metric"] == "physical_reads")
    assert not time_["small_counts"] and "median_a" not in time_
    assert (reads["median_a"], reads["small_counts"]) == (10.0, False) and "CI" in reads["said"]


@pytest.mark.parametrize("value,state", [(True, "on"), (False, "off"), ("on", "on"), ("ON", "on"), ("true", "on"),
                                         ("True", "on"), ("off", "off"), ("OFF", "off"), ("false", "off"),
                                         ("FALSE", "off"), ("256K", None), (1, None)])
def test_a_switch_is_on_or_off_however_a_spec_spells_it(value, state):
    """YAML gives `bka: on` as True, a quoted "ON" or "false" as a string: each is the same switch;
    anything else is a value, not a switch."""
    from mysqlbench.studies.analysis import _label, _state

    assert _state(value) == state
    assert _label({"bka": value}) == f"bka={state or value}"


def test_several_pairs_read_as_one_sentence_with_each_pair_its_tally_and_the_warmth_note():
    """The whole sentence for a contrast with two pairs, one of them never warm: each pair said in
    turn, the primary metric's verdicts tallied (counters not in the tally), and an undecided
    read-ahead left out of the words (it stays in the numbers)."""
    points = bka(cache="warm", others={"join_buffer_size": "256K"}, warm=False) \
        + bka(cache="warm", ratio=0.5, reads_ratio=0.5, others={"join_buffer_size": "1M"}, seed=5) \
        + bka(cache="warm", ratio=1.0, reads_ratio=1.0, others={"join_buffer_size": "6M"}, seed=4, n=10)
    said = comparisons(executions(points), TIME, band=0.10)
    said.append({**said[-1], "metric": READ_AHEAD, "verdict": "inconclusive", "said": "read-ahead: unknown"})
    [sentence] = findings(said)
    first, middle, last = (c for c in said if c["metric"] == "client_seconds")
    reads = [c["said"] for c in said if c["metric"] == "physical_reads"]
    assert sentence == (
        "bka on vs off, warm cache (3 pairs of points, each said, not pooled; primary metric verdicts: less in 2, "
        "same in 1; a point not proven warm: its physical reads were not zero when its warm-up ended): "
        f"q03 at join_buffer_size=256K: {first['said']}; {reads[0]} | "
        f"q03 at join_buffer_size=1M: {middle['said']}; {reads[1]} | "
        f"q03 at join_buffer_size=6M: {last['said']}; {reads[2]}.")


def test_a_sub_second_point_has_its_spread_and_a_point_that_measured_zero_has_none():
    """Most TPC-H times at small scale are under a second: their CV is the same std / mean; a point
    whose every value is 0 (a throughput that never moved) has a CV of 0, not 0 / 0."""
    summary = summaries(execution_frame(rows([0.04, 0.05, 0.06], point="fast") + rows([0.0, 0.0], point="zero"),
                                        TIME)).set_index("point")
    assert summary.loc["fast", "cv"] == pytest.approx(np.std([0.04, 0.05, 0.06]) / 0.05)
    assert summary.loc["zero", "cv"] == 0.0


def test_a_row_without_its_subject_or_point_is_no_execution_and_metadata_may_be_a_mapping():
    """Run-level rows (a point's row without a subject, the run's own without a point) are not
    executions; a row's metadata is read whether the store gives it as JSON text or the spool as a
    mapping, and a row with none (a counter) leaves the execution's own metadata in force."""
    executions_ = rows([1.0, 2.0], reads=[5, 6])
    for r in executions_:
        if r["kind"] == "counter":
            r["metadata"] = None
    executions_[0]["metadata"] = json.loads(executions_[0]["metadata"])
    stray = [{**executions_[0], "subject": None, "repetition": None}, {**executions_[0], "point": None}]
    frame_ = execution_frame(executions_ + stray, TIME)
    assert len(frame_) == 2 and list(frame_["physical_reads"]) == [5, 6] and list(frame_["cache"]) == ["warm", "warm"]


def test_each_swept_knob_is_shown_as_the_server_ran_it_at_each_point():
    """The report's "What the server ran with": each swept knob (a dimension named like a knob, or a
    knob inside a mapping option) at each point, from the variables of the point's first ok
    execution (not a timed-out one, not a counter row): what was asked and what the server had,
    "not applicable" where the server has no such variable (MariaDB's instances), "not recorded"
    where its snapshot lacks it, "server version not recorded" where the row lacks its server; the
    default point says "default"."""
    from types import SimpleNamespace

    from mysqlbench.studies.analysis import swept_as_used

    spec = SimpleNamespace(matrix={"buffer_pool_instances": [{}, 1, 8],
                                   "buffers": [{"join_buffer_size": "256K"}, {"join_buffer_size": "6M"}]})
    snapshots = {"default": {"innodb_buffer_pool_instances": "1", "join_buffer_size": "262144"},
                 "later": {"innodb_buffer_pool_instances": "4", "join_buffer_size": "262144"},
                 "bad": {"innodb_buffer_pool_instances": "99", "join_buffer_size": "1"},
                 "eight": {"innodb_buffer_pool_instances": "8"},
                 "maria": {"join_buffer_size": "262144"},
                 "unrecorded": {"join_buffer_size": "6291456"}}

    def row(point, swept, hash_, kind="metric", status="ok", flavor="mysql", version="9.7.4"):
        return {"point": point, "kind": kind, "status": status, "variables_hash": hash_, "server_flavor": flavor,
                "server_version": version, "metadata": json.dumps({"swept": swept})}

    default = "buffer_pool_instances=default join_buffer_size=256K"
    rows_ = [row(default, {"join_buffer_size": "256K"}, "default"),
             row(default, {"join_buffer_size": "256K"}, "later"),  # the point's first execution is the one shown
             row("bpi=8", {"buffer_pool_instances": 8, "join_buffer_size": "6M"}, "bad", status="timeout"),
             row("bpi=8", {"buffer_pool_instances": 8, "join_buffer_size": "6M"}, "bad", kind="counter"),
             row("bpi=8", {"buffer_pool_instances": 8, "join_buffer_size": "6M"}, "eight"),
             row("bpi=1 maria", {"buffer_pool_instances": 1, "join_buffer_size": "256K"}, "maria",
                 flavor="mariadb", version="10.11.6-MariaDB"),
             row("unrecorded", {"join_buffer_size": "6M"}, "unrecorded"),
             {**row("no version", {"join_buffer_size": "6M"}, "unrecorded"), "server_version": None}]
    del rows_[-1]["server_flavor"]
    used = swept_as_used(spec, rows_, snapshots.get)
    assert used.index.name == "point" and list(used.columns) == ["buffer_pool_instances", "join_buffer_size"]
    assert used.to_dict(orient="index") == {
        default: {"buffer_pool_instances": "default -> innodb_buffer_pool_instances = 1",
                  "join_buffer_size": "256K -> join_buffer_size = 262144"},
        "bpi=1 maria": {"buffer_pool_instances": "1 (not applicable here)",
                        "join_buffer_size": "256K -> join_buffer_size = 262144"},
        "bpi=8": {"buffer_pool_instances": "8 -> innodb_buffer_pool_instances = 8",
                  "join_buffer_size": "6M (join_buffer_size not recorded)"},
        "unrecorded": {"buffer_pool_instances": "default (innodb_buffer_pool_instances not recorded)",
                       "join_buffer_size": "6M -> join_buffer_size = 6291456"},
        # a row that never recorded its server: which variable a knob is can't be known
        "no version": {"buffer_pool_instances": "default (server version not recorded)",
                       "join_buffer_size": "6M (server version not recorded)"}}
    assert swept_as_used(SimpleNamespace(matrix={"cache_size": [1, 2]}), rows_, snapshots.get) is None
