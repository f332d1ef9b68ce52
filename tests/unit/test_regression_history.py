"""Issue 23 item 4, nothing falls through: the analysis over a real results store (SQLite) holding
recorded runs, written as the study tasks write them (samples, OS figures, the gate's validation,
host snapshots). A host change is an event on the series, not a new series; a timeout or an
INVALID run after a good history alerts; a step seen only in runs measured under noise is not
confirmed by them."""

from __future__ import annotations

import pytest

from mysqlbench.regression.analyse import analyse
from mysqlbench.regression.detect import Thresholds
from mysqlbench.regression.report import summary_text
from mysqlbench.results.lineage import Lineage, stable_hash
from mysqlbench.results.store import ResultsStore, Sample, Validation

pytestmark = pytest.mark.unit

FACTS = {"hostname": "bench1", "cpu_model": "Xeon", "machine": "x86_64", "kernel": "Linux 6.1.0",
         "mem_total_bytes": 24 << 30, "cpu_governor": "performance",
         "disks": [{"name": "sda", "scheduler": "mq-deadline", "rotational": False}]}
POINT = "cache=warm"
META = {"target": "mysqlbench_demo", "cache": "warm", "knobs": {}, "swept": {}}


class History:
    def __init__(self, tmp_path):
        self.store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
        self.n = 0

    def run(self, value: float, *, facts=FACTS, timeouts: int = 0, valid: bool = True,
            other_cpu: float | list[float] = 1.0, steal: float | None = None, knobs=None, variables=None, plan=None,
            run_id=None):
        """One tpch_power run of q08: three executions (``timeouts`` of them timed out), their OS
        figures (``other_cpu`` one share for all three, or one each), and the gate's verdict."""
        self.n += 1
        run_id = run_id or f"scheduled__{self.n:03d}"
        host = self.store.keep_host_facts(facts)
        config = self.store.keep_server_snapshot("mariadb", "10.11.19", variables or {"optimizer_search_depth": "62"})
        meta = {**META, "knobs": knobs or {}}
        base = dict(study="tpch_power", dag_id="tpch_power", run_id=run_id, map_index=0, try_number=1,
                    spec_hash="spec", package_version="abc", server_flavor="mariadb", server_version="10.11.19",
                    variables_hash=config, host_hash=host, dataset_id="tpch-sf0.01")
        rows = []
        for repetition in range(3):
            timed_out = repetition < timeouts
            rows.append(Sample("client_seconds", None if timed_out else value * (1 + 0.01 * repetition), "s",
                               status="timeout" if timed_out else "ok", kind="metric", point=POINT, subject="q08",
                               repetition=repetition, metadata=meta))
            share = other_cpu[repetition] if isinstance(other_cpu, list) else other_cpu
            rows.append(Sample("os_other_cpu_pct", share, "pct", kind="os", point=POINT, subject="q08",
                               repetition=repetition, metadata=meta))
            if steal is not None:
                rows.append(Sample("os_steal_pct", steal, "pct", kind="os", point=POINT, subject="q08",
                                   repetition=repetition, metadata=meta))
        if plan is not None:  # as TpchWorkload records it: the server's EXPLAIN FORMAT=JSON, parsed
            rows.append(Sample("plan", None, "json", kind="plan", point=POINT, subject="q08",
                               metadata={**meta, "plan_hash": stable_hash(plan)[:16], "plan": plan}))
        self.store.record(Lineage(task_id="measure_point", **base), rows)
        failures = [] if valid else [{"check": "no timeouts", "expectation": "expect_column_values_to_be_in_set",
                                      "where": "q08"}]
        self.store.record(Lineage(task_id="validate", map_index=-1, **{k: v for k, v in base.items()
                                                                       if k != "map_index"}),
                          [], [Validation("study", valid, {}, failures)])
        return run_id


def _analyse(history):
    return analyse(history.store, ["tpch_power"], Thresholds())


def test_a_host_change_is_an_event_on_the_series_and_the_step_is_blamed_on_it(tmp_path):
    """A kernel update and another I/O scheduler on the same machine: the runs after stay in the
    series (the machine is its key, the host state an event), so the 10x step alerts, at a host
    change, naming the facts that differ."""
    history = History(tmp_path)
    for _ in range(8):
        history.run(0.020)
    updated = {**FACTS, "kernel": "Linux 6.5.0", "disks": [{"name": "sda", "scheduler": "none", "rotational": False}]}
    at = history.run(0.200, facts=updated)
    for _ in range(3):
        history.run(0.200, facts=updated)
    result = _analyse(history)
    [series] = result["series"]
    assert len(series["runs"]) == 12 and series["runs"][8]["events"][0]["event"] == "host state"
    [alert] = result["alerts"]
    assert alert["run_id"] == at and alert["kind"] == "change"
    assert alert["host_changed"] == {"disks.sda.scheduler": ["mq-deadline", "none"],
                                     "kernel": ["Linux 6.1.0", "Linux 6.5.0"]}
    assert "at a host change: disks.sda.scheduler mq-deadline -> none, kernel Linux 6.1.0 -> Linux 6.5.0" \
        in summary_text(result)


def test_another_machine_is_another_series(tmp_path):
    history = History(tmp_path)
    for _ in range(6):
        history.run(0.020)
    for _ in range(4):
        history.run(0.200, facts={**FACTS, "hostname": "bench2"})
    result = _analyse(history)
    assert len(result["series"]) == 2 and not result["alerts"]


def test_a_timeout_after_a_good_history_alerts(tmp_path):
    """q08 timed out in two of three executions and the run failed its gate: that is the worst
    regression, not a run to leave out. One alert for the timed-out series, one for the INVALID
    run with what failed."""
    history = History(tmp_path)
    for _ in range(6):
        history.run(0.020)
    bad = history.run(0.020, timeouts=2, valid=False)
    result = _analyse(history)
    kinds = {(a["kind"], a["run_id"]) for a in result["alerts"]}
    assert kinds == {("timeout", bad), ("invalid", bad)}
    timeout = next(a for a in result["alerts"] if a["kind"] == "timeout")
    assert "2 of 3 executions timed out" in timeout["interval_words"] and timeout["before_median"] == pytest.approx(0.0202)
    invalid = next(a for a in result["alerts"] if a["kind"] == "invalid")
    assert invalid["failures"] == ["no timeouts (q08)"] and "tpch_power run" in invalid["label"]
    assert f"timeout at run {bad}" in summary_text(result)


def test_a_failed_run_without_a_good_history_does_not_alert(tmp_path):
    history = History(tmp_path)
    for _ in range(2):
        history.run(0.020)
    history.run(0.020, timeouts=3, valid=False)
    assert not _analyse(history)["alerts"]


def test_a_step_seen_only_under_noise_is_not_confirmed_by_it(tmp_path):
    """The same 3x step twice: measured while other processes took the CPU, it is reported but
    not confirmed; measured in quiet, it alerts."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    noisy, quiet = History(tmp_path / "a"), History(tmp_path / "b")
    for history in (noisy, quiet):
        for _ in range(8):
            history.run(0.020)
    for _ in range(4):
        noisy.run(0.060, other_cpu=65.0)
        quiet.run(0.060)
    result = _analyse(noisy)
    [change] = result["series"][0]["changes"]
    assert not result["alerts"] and not change["confirmed"] and "measured under noise" in change["why_not_confirmed"]
    assert all(r["noisy"] for r in result["series"][0]["runs"][8:])
    assert [a["kind"] for a in _analyse(quiet)["alerts"]] == ["change"]


def test_a_step_larger_than_its_noise_could_cause_is_confirmed_by_noisy_runs(tmp_path):
    """Issue 23: q08 went 24x slower while the host was busy, and the alert waited for three quiet
    runs. Other processes (or the hypervisor's steal) taking half the CPU can at most double a
    CPU-bound time: a run still worse than every run before once halved counts. A 2x step under the
    same noise does not, nor a 3.5x one whose noisiest execution lost three quarters of the CPU (the
    bound is the run's largest share, not its median)."""
    steps = {"busy": dict(value=0.480, other_cpu=50.0), "steal": dict(value=0.480, other_cpu=0.0, steal=50.0),
             "double": dict(value=0.040, other_cpu=50.0), "worst": dict(value=0.070, other_cpu=[40.0, 40.0, 75.0])}
    results = {}
    for name, step in steps.items():
        (tmp_path / name).mkdir()
        history = History(tmp_path / name)
        for _ in range(8):
            history.run(0.020)
        for _ in range(4):
            history.run(**step)
        results[name] = _analyse(history)
        assert all(r["noisy"] for r in results[name]["series"][0]["runs"][8:]), name
    for name in ("busy", "steal"):
        [alert] = results[name]["alerts"]
        assert "4 of its 4 runs after were measured under noise and count" in alert["noise_words"], name
        assert "2.00x faster" in alert["noise_words"] and alert["noise_words"] in summary_text(results[name])
    for name in ("double", "worst"):
        [change] = results[name]["series"][0]["changes"]
        assert not results[name]["alerts"] and not change["confirmed"], name
        assert "4 of them by enough to explain their step: 0 quiet and 0 beyond" in change["why_not_confirmed"], name


def test_history_says_unit_spread_and_what_changed_by_name_and_labels_never_collide(tmp_path, monkeypatch):
    """Issue 23 item 7: `bin/mysqlbench history` lacked the unit, each run's spread and the changed
    variables by name, and series at a 4G and a 256M buffer pool read alike."""
    from mysqlbench import cli
    from mysqlbench.measure import parse_plan
    from mysqlbench.results import store as store_module

    history = History(tmp_path)
    for size in ("4G", "256M"):
        history.run(0.020, knobs={"buffer_pool_size": size}, plan=parse_plan(NESTED_LOOP))
    history.run(0.021, knobs={"buffer_pool_size": "4G"}, variables={"optimizer_search_depth": "1"},
                plan=parse_plan(NESTED_LOOP.replace('"ref"', '"ALL"')))
    monkeypatch.setattr(store_module.ResultsStore, "from_airflow", classmethod(lambda cls: history.store))
    out = cli.history_export(["tpch_power"], None)
    labels = sorted(s["label"] for s in out["series"])
    assert labels == ["tpch_power q08 [cache=warm buffer_pool_size=256M] on mysqlbench_demo (mariadb)",
                      "tpch_power q08 [cache=warm buffer_pool_size=4G] on mysqlbench_demo (mariadb)"]
    big = next(s for s in out["series"] if "4G" in s["label"])
    assert big["unit"] == "s" and [r["n_ok"] for r in big["runs"]] == [3, 3]
    assert big["runs"][0]["iqr"] == pytest.approx(0.0002)  # 0.020, 0.0202, 0.0204
    events = {e["event"]: e for e in big["runs"][1]["events"]}
    assert events["server configuration"]["changed"] == {"optimizer_search_depth": ["62", "1"]}
    # the plan change names both plans, and the series says what each does, table by table in
    # join order (MariaDB 10.5 repeats the "table" key in one object: both tables are kept)
    before, after = (r["plan_hash"] for r in big["runs"])
    assert events["plan"]["before"] == before and events["plan"]["after"] == after and before != after
    assert big["plans"][before] == ["orders ALL", "lineitem ref key=PRIMARY"]
    assert big["plans"][after] == ["orders ALL", "lineitem ALL key=PRIMARY"]


# a two-table join as MariaDB 10.5 writes it: "table" twice in the same nested_loop entry
NESTED_LOOP = """{"query_block": {"select_id": 1, "nested_loop": [{
  "table": {"table_name": "orders", "access_type": "ALL"},
  "table": {"table_name": "lineitem", "access_type": "ref", "key": "PRIMARY"}}]}}"""


def test_labels_tell_apart_what_the_setting_does_not(tmp_path):
    from mysqlbench.regression.history import series_labels

    key = {"study": "s", "subject": "q", "setting": '{"cache": "warm", "knobs": {}, "swept": {}}', "target": "t",
           "flavor": "mariadb", "dataset_id": "d1", "machine": '{"hostname": "a"}'}
    assert series_labels([key, {**key, "dataset_id": "d2"}, {**key, "machine": '{"hostname": "b"}'}]) == [
        "s q [cache=warm] on t (mariadb), dataset d1, host a", "s q [cache=warm] on t (mariadb), dataset d2, host a",
        "s q [cache=warm] on t (mariadb), dataset d1, host b"]


def test_an_uncommitted_edit_is_named_by_its_diff(tmp_path, monkeypatch):
    """A bare "-dirty" made every uncommitted edit one version: two different edits measured one
    after the other showed no event, and the same edit measured twice... was the same."""
    import subprocess

    from mysqlbench import paths
    from mysqlbench.results import lineage

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t", *args], check=True,
                       capture_output=True)

    git("init", "-q")
    (tmp_path / "f.py").write_text("a = 1\n")
    git("add", "f.py")
    git("commit", "-qm", "one")
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)

    def version():
        lineage.package_version.cache_clear()
        return lineage.package_version()

    clean = version()
    (tmp_path / "f.py").write_text("a = 2\n")
    first = version()
    (tmp_path / "f.py").write_text("a = 3\n")
    second = version()
    (tmp_path / "f.py").write_text("a = 2\n")
    assert first.startswith(f"{clean}-dirty-") and second.startswith(f"{clean}-dirty-") and first != second
    assert version() == first
    lineage.package_version.cache_clear()


def test_a_run_measured_across_server_versions_is_left_to_its_trend(tmp_path):
    """Issue 23 item 6: backfilled version runs joined the history as one-run series (each version
    on its own target) that could never be analysed. They are left out of the regression history,
    saying that the releases DAG's trend report compares them; a nightly run still counts."""
    from mysqlbench.regression.history import history

    store_history = History(tmp_path)
    store_history.run(0.020)
    version_run = store_history.run(0.030, run_id="tpch_power_across_versions_mysql__mysql-9.7__0123456789ab")
    runs, left_out = history(store_history.store, ["tpch_power"])
    assert list(runs["run_id"]) == ["scheduled__001"]
    [left] = left_out
    assert left["run_id"] == version_run and not left["invalid"]
    assert left["why"] == ("measured across server versions by tpch_power_across_versions_mysql: "
                           "its trend report compares them")
