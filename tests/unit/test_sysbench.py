"""The sysbench workloads' parsing on captured output of Debian's sysbench 1.0.20 (cpu, fileio;
the OLTP report is the sysbench-tpcc capture in tests/data/peers), killed and failed runs as clear
errors, and bad specs refused before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mysqlbench import sysbench_output
from mysqlbench.errors import InvalidInput
from mysqlbench.studies.spec import load_spec
from mysqlbench.workloads.sysbench import tool

DATA = Path(__file__).resolve().parents[1] / "data"


def text(name: str) -> str:
    return (DATA / "sysbench" / name).read_text()


def test_cpu_report_and_intervals():
    report = sysbench_output.parse_report(text("cpu.txt"), "cpu")
    assert report["events_per_s"] == 57726.22 and report["events"] == 173253
    assert report["total_time_s"] == 3.0008
    assert report["latency_ms"] == {"min": 0.02, "avg": 0.03, "max": 8.12, "p95": 0.02, "sum": 5950.27}
    assert report["fairness"] == {"events_avg": 86626.5, "events_stddev": 2916.5, "execution_avg_s": 2.9751,
                                  "execution_stddev_s": 0.01}
    intervals = sysbench_output.parse_intervals(text("cpu.txt"))
    assert [i["eps"] for i in intervals] == [57260.20, 55264.96, 60684.74]
    assert [i["threads"] for i in intervals] == [2, 2, 1]
    assert all(i["latency_pct"] == 95 for i in intervals)


def test_fileio_report_and_intervals():
    report = sysbench_output.parse_report(text("fio_rndrw.txt"), "fileio")
    assert (report["reads_per_s"], report["writes_per_s"], report["fsyncs_per_s"]) == (24611.73, 16407.82, 1642.44)
    assert (report["read_mib_per_s"], report["written_mib_per_s"]) == (384.56, 256.37)
    assert report["latency_ms"]["max"] == 27.93
    intervals = sysbench_output.parse_intervals(text("fio_rndrw.txt"))
    assert [i["read_mib_per_s"] for i in intervals] == [314.83, 443.46, 399.72]
    assert [i["fsyncs_per_s"] for i in intervals] == [1340.27, 1893.15, 1703.42]
    direct = sysbench_output.parse_report(text("fio_seqrd_direct.txt"), "fileio")
    assert direct["written_mib_per_s"] == 0.0 and direct["read_mib_per_s"] == 154.87


def test_oltp_report_keeps_each_figure():
    report = sysbench_output.parse_report((DATA / "peers" / "sysbench_tpcc_run.txt").read_text(), "oltp")
    assert report["tps"] == 309.49 and report["qps"] == 8635.46 and report["transactions"] == 7748
    assert (report["queries_read"], report["queries_write"], report["queries_other"]) == (98480, 102190, 15520)
    assert report["ignored_errors"] == 38 and report["reconnects"] == 0


def test_a_killed_run_is_an_error_not_zeros():
    with pytest.raises(sysbench_output.SysbenchOutputError, match="no final report"):
        sysbench_output.parse_report(text("cpu_killed.txt"), "cpu")
    # the interval lines before the kill are still there, honestly partial
    assert len(sysbench_output.parse_intervals(text("cpu_killed.txt"))) == 2


def test_missing_files_say_sysbench_fatal_line():
    with pytest.raises(sysbench_output.SysbenchOutputError, match="Cannot open file 'test_file.0'"):
        sysbench_output.parse_report(text("fio_nofiles.txt"), "fileio")


def test_a_cut_report_is_an_error():
    whole = text("fio_rndrw.txt")
    with pytest.raises(sysbench_output.SysbenchOutputError, match="fairness"):
        sysbench_output.parse_report(whole[:whole.index("Threads fairness")], "fileio")
    with pytest.raises(sysbench_output.SysbenchOutputError, match="read, MiB/s"):
        sysbench_output.parse_report(whole.replace("read, MiB/s", "red"), "fileio")


def test_sysbench_argv_is_plain_values_only():
    run = tool.SysbenchRun("cpu", {"threads": 2, "cpu-max-prime": 100, "skip_trx": True})
    assert run.argv()[1:] == ["cpu", "--threads=2", "--cpu-max-prime=100", "--skip_trx=on", "run"]
    for bad in ("1 --mysql-host=evil", "", "-x", "a\tb"):
        with pytest.raises(InvalidInput, match="not a plain value"):
            tool.SysbenchRun("cpu", {"threads": bad}).argv()


@pytest.mark.parametrize("study,overrides,message", [
    ("sysbench_oltp", {"units": ["oltp_read_write", "oltp_bogus"]}, "unknown sysbench script"),
    ("sysbench_oltp", {"units": ["oltp_insert"]}, "unknown sysbench script"),
    ("sysbench_fileio", {"units": ["seqrd", "rndfoo"]}, "unknown sysbench file test mode"),
    ("sysbench_cpu", {"matrix": {"threads": [1, 0]}}, "threads: Input should be greater than or equal to 1"),
    ("sysbench_oltp", {"matrix": {"threads": [1, "8; rm -rf /"]}}, "threads: Input should be a valid integer"),
    ("sysbench_cpu", {"workload_params": {"threads": 0}, "matrix": {}}, "greater than or equal to 1"),
    ("sysbench_cpu", {"workload_params": {"threads": 2}}, "both fixed"),
    ("sysbench_cpu", {"cache": ["cold"]}, "cold means nothing to sysbench cpu"),
    ("sysbench_fileio", {"dataset": {"directory": "/tmp/x; reboot"}}, "an absolute path"),
    ("sysbench_fileio", {"dataset": {"directory": "/tmp/$(id)"}}, "an absolute path"),
    ("sysbench_fileio", {"dataset": {"directory": "relative/dir"}}, "an absolute path"),
    ("sysbench_fileio", {"dataset": {"directory": "/tmp/../etc"}}, "an absolute path"),
    ("sysbench_fileio", {"dataset": {"file_total_size": "10K"}}, "at least 1M"),
    ("sysbench_fileio", {"matrix": {"block_size": [16384, 100]}}, "greater than or equal to 512"),
])
def test_bad_sysbench_specs_are_refused(study, overrides, message):
    with pytest.raises(InvalidInput, match=message):
        load_spec(study, overrides)


def test_swept_workload_params_reach_the_point_not_the_knobs():
    points = load_spec("sysbench_fileio", {"seed": 1}).points()
    assert {p["label"] for p in points} == {f"direct={d} cache={c}" for d in ("on", "off") for c in ("warm", "cold")}
    assert all(p["knobs"] == {} and set(p["params"]) == {"direct"} for p in points)
    from mysqlbench.workloads.base import workload_class

    spec = load_spec("sysbench_fileio")
    on = workload_class("sysbench_fileio")(spec, {"direct": True}).prepare("rndrd")
    off = workload_class("sysbench_fileio")(spec, {"direct": False}).prepare("rndrd")
    assert on.options["file-extra-flags"] == "direct" and "file-extra-flags" not in off.options
    assert on.options["threads"] == 4 and on.options["file-test-mode"] == "rndrd"


def test_an_oltp_run_that_could_not_connect_is_an_error():
    # sysbench 1.0.20 against a port nothing listens on (captured for the TPC-C peer; same driver code)
    text = (DATA / "peers" / "sysbench_tpcc_connect_failed.txt").read_text()
    with pytest.raises(sysbench_output.SysbenchOutputError, match="FATAL"):
        sysbench_output.parse_report(text, "oltp")
    assert sysbench_output.parse_intervals(text) == []
