"""A rerun's conf, checks and verdicts (``mysqlbench.studies.rerun``) without a server: the conf
rebuilt from a run's recorded spec merges back to that spec for every shipped study; a difference
that can be known before running refuses the rerun with its reason unless allowed; the verdict
follows from the interval of rerun / original against the band."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mysqlbench.errors import InvalidInput
from mysqlbench.paths import CONFIG_DIR
from mysqlbench.studies import rerun
from mysqlbench.studies.spec import load_spec
from mysqlbench.studies.steps import merged_spec
from mysqlbench.workloads.base import Better, Metric

SHIPPED = sorted(p.stem for p in (CONFIG_DIR / "studies").glob("*.yaml"))
RATE = Metric("statements_per_s", "1/s", Better.HIGHER, "throughput")


def _original(spec: dict, rows=(), versions=("10.11.6-MariaDB",), hosts=("h1",), seed=77) -> rerun.Original:
    return rerun.Original(dag_id=spec.get("study", "tpch_power"), run_id="manual__x", spec=spec, seed=seed, valid=True,
                          server_versions=frozenset(versions), host_hashes=frozenset(hosts), rows=list(rows))


@pytest.mark.parametrize("study", SHIPPED)
def test_the_rebuilt_conf_merges_back_to_the_recorded_spec(study):
    spec_file = load_spec(study)
    first = {"repetitions": 5} if not spec_file.sequential else {}
    recorded = merged_spec(study, first).model_dump(by_alias=True, mode="json")  # a run as it was triggered
    conf = rerun.conf_of(_original(recorded), spec_file)
    assert conf["rerun_of"] == "manual__x" and conf["seed"] == 77
    again = merged_spec(study, conf).model_dump(by_alias=True, mode="json")
    assert rerun.spec_differences(recorded, again) == [] and again["seed"] == 77


@pytest.mark.parametrize(("study", "triggered"), [
    ("sysbench_oltp", {"time_s": 12, "table_size": 5000, "repetitions": 4}),
    ("tpch_bka_study", {"scale_factor": 0.01, "cache": ["cold"], "oracle": False}),
])
def test_a_run_triggered_with_its_own_settings_is_rebuilt_with_them(study, triggered):
    """Dataset keys, workload parameters and form fields a trigger changed come back as they ran."""
    recorded = merged_spec(study, triggered).model_dump(by_alias=True, mode="json")
    conf = rerun.conf_of(_original(recorded), load_spec(study))
    assert {k: conf[k] for k in triggered} == triggered
    again = merged_spec(study, conf).model_dump(by_alias=True, mode="json")
    assert rerun.spec_differences(recorded, again) == []


def test_a_changed_spec_a_gone_server_version_or_another_host_refuses_unless_allowed():
    recorded = merged_spec("tpch_bka_study", {}).model_dump(by_alias=True, mode="json")
    now = {**recorded, "min_effect": 0.1, "seed": 5}  # the seed is fixed by the rerun: not a difference

    class Store:
        @staticmethod
        def host_facts(key):
            return {"h1": {"cpu_model": "A", "cpu_count": 2}, "h2": {"cpu_model": "B", "cpu_count": 2}}[key]

    with pytest.raises(InvalidInput) as refused:
        rerun.check(_original(recorded), now, {"10.11.7-MariaDB"}, "h2", Store(), allow=False)
    words = str(refused.value)
    assert "spec min_effect: 0.03 then, 0.1 now" in words and "server version 10.11.6-MariaDB then, 10.11.7" in words
    assert "another host: cpu_model 'A' then, 'B' now" in words and "rerun_allow_differences" in words
    stated = rerun.check(_original(recorded), now, {"10.11.7-MariaDB"}, "h2", Store(), allow=True)
    assert len(stated) == 3
    assert rerun.check(_original(recorded), {**recorded, "seed": 5}, {"10.11.6-MariaDB"}, "h1", Store(), False) == []


def _rows(values, run: str, variables: str = "v1") -> list[dict]:
    meta = json.dumps({"cache": "warm", "swept": {}})
    return [{"point": "cache=warm", "subject": "point_select", "repetition": i, "metadata": meta, "series": None,
             "metric": RATE.name, "value": v, "status": "ok", "kind": "metric", "unit": "1/s", "run_id": run,
             "variables_hash": variables, "dataset_id": "d1"} for i, v in enumerate(values)]


class _Snapshots:
    """The store's two configuration snapshots; what differs between them is the store's own code."""
    from mysqlbench.results.store import ResultsStore

    variable_changes = ResultsStore.variable_changes

    def server_snapshot(self, key):
        return {"v1": {"max_prepared_stmt_count": "16382", "a": "1"},
                "v2": {"max_prepared_stmt_count": "12345", "a": "1"}}[key]


@pytest.mark.parametrize(("factor", "variables", "expected"), [
    (1.0, "v1", "reproduced:"),
    (1.0, "v2", "reproduced (configuration differs: max_prepared_stmt_count 16382 -> 12345):"),
    (0.5, "v1", ": differs by -5"),
])
def test_the_verdict_follows_from_the_interval(factor, variables, expected):
    rng = np.random.default_rng(1)
    then = 1000 * np.exp(rng.normal(0, 0.02, 6))
    now = factor * 1000 * np.exp(rng.normal(0, 0.02, 6))
    original = _original({}, rows=_rows(then, "a"))
    [verdict] = rerun.verdicts(_Snapshots(), original, _rows(now, "b", variables), RATE, band=0.05)
    assert expected in verdict["said"], verdict["said"]
    assert verdict["reproduced"] == (factor == 1.0) and verdict["n_a"] == verdict["n_b"] == 6
    if factor != 1.0:
        assert verdict["ci_high"] < -0.05 and verdict["verdict"] == "less"


def test_too_few_repetitions_are_inconclusive_never_reproduced():
    original = _original({}, rows=_rows([1000, 1010], "a"))
    [verdict] = rerun.verdicts(_Snapshots(), original, _rows([1005, 995], "b"), RATE, band=0.05)
    assert not verdict["reproduced"] and verdict["said"].startswith("point_select at cache=warm: inconclusive")
