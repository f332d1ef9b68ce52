"""The study report's OS chart and per-point table (plugins/mysqlbench/studies/report.py), as a
reader sees them (issue 24 item 5): no figure of empty panels, and no pandas or Python placeholders."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mysqlbench.studies.report import _os_chart, _readable

pytestmark = pytest.mark.unit


def _series(length_s: float) -> pd.DataFrame:
    """One OS series per metric for one window, sampled every second as the sampler stores it."""
    offsets = [float(t) for t in range(1, int(length_s) + 1)] + ([length_s] if length_s % 1 else [])
    return pd.DataFrame([{"metric": metric, "point": "cache=warm", "subject": "q03", "repetition": 0,
                          "series": json.dumps({"offsets_s": offsets, "values": [10.0] * len(offsets)})}
                         for metric in ("os_cpu_user_pct", "os_disk_read_ops")])


def test_windows_shorter_than_a_sample_get_a_reason_not_empty_panels(tmp_path):
    why = _os_chart(_series(0.42), tmp_path / "os.png")
    assert why.startswith("No OS chart: every measured window was shorter than the 1 s OS sampling")
    assert "0.42 s" in why and not (tmp_path / "os.png").exists()
    assert _os_chart(_series(3.0), tmp_path / "os.png") is None and (tmp_path / "os.png").stat().st_size > 5000


def test_the_per_point_table_says_words_not_placeholders():
    table = pd.DataFrame({"point": ["a", "b", "c"], "warm": pd.array([True, False, pd.NA], dtype="boolean"),
                          "not_applicable": [None, "removed in MariaDB 10.6", None], "median": [1.0, None, 2.0]})
    html = _readable(table).to_html(index=False, na_rep="absent")
    assert "&lt;NA&gt;" not in html and "None" not in html
    assert list(_readable(table)["warm"]) == ["yes", "no", "-"]
    assert list(_readable(table)["not_applicable"]) == ["", "removed in MariaDB 10.6", ""]
    assert "absent" in html  # a missing number still says absent


def test_a_round_is_said_with_its_repetition_or_why_it_stopped():
    from mysqlbench.studies.report import _round_words

    one = {"round": 7, "repetitions": [6, 7], "points": ["a", "b"], "why": "1 comparison(s) not decided"}
    assert _round_words(one) == "round 7: repetition 7 of 2 point(s) (1 comparison(s) not decided)"
    assert _round_words({**one, "repetitions": [6, 8]}).startswith("round 7: repetitions 7-8 of 2 point(s)")
    assert _round_words({**one, "stopped": "decided"}) == "round 7: nothing measured; stopped: decided"
