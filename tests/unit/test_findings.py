"""Findings in words, on point summaries captured from a real tpch_bka_study run (SF 0.1, 64M
buffer pool: the data does not fit, so BKA's effect on physical reads shows)."""

import json
from pathlib import Path

from mysqlbench.studies.analysis import findings

CAPTURED = json.loads((Path(__file__).parents[1] / "data" / "bka_sf0.1_points.json").read_text())["points"]


def test_bka_cuts_physical_reads_and_time_as_in_the_seed():
    cold = next(s for s in findings(CAPTURED) if "cold cache" in s)
    assert cold.startswith("bka on vs off, cold cache (2 paired points): ")
    assert "fewer physical reads (Innodb_buffer_pool_reads)" in cold
    assert "more read-ahead" in cold and "less time" in cold


def test_reversed_effect_reverses_the_sentence():
    reversed_points = [{**p, "swept": {**p["swept"], "bka": not p["swept"]["bka"]}} for p in CAPTURED]
    cold = next(s for s in findings(reversed_points) if "cold cache" in s)
    assert "more physical reads" in cold and "less read-ahead" in cold and "more time" in cold


def test_numbers_in_the_sentence_are_computed():
    on = [p for p in CAPTURED if p["cache"] == "cold" and p["swept"]["bka"]]
    off = [p for p in CAPTURED if p["cache"] == "cold" and not p["swept"]["bka"]]
    assert on and off
    doubled = [{**p, "Innodb_buffer_pool_reads": p["Innodb_buffer_pool_reads"] * (0.5 if p["swept"]["bka"] else 1)}
               for p in CAPTURED]
    # halving BKA-on reads moves the stated reduction accordingly
    before = next(s for s in findings(CAPTURED) if "cold" in s)
    after = next(s for s in findings(doubled) if "cold" in s)
    pct = lambda s: int(s.split(": ")[1].split("%")[0])  # noqa: E731
    assert pct(after) > pct(before)


def test_no_switch_swept_no_finding():
    plain = [{**p, "swept": {"join_buffer_size": "6M"}} for p in CAPTURED]
    assert findings(plain) == []


def test_a_warm_cache_that_never_warmed_is_said_so():
    points = [{**p, "warm": False if p["cache"] == "warm" else None} for p in CAPTURED]
    warm = next(s for s in findings(points) if "warm cache" in s)
    assert "never fully warm" in warm
    assert "never fully warm" not in next(s for s in findings(points) if "cold cache" in s)
