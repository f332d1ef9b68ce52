"""mariadb-slap's output parsed on captured runs (10.11's client against the demo MariaDB), failed
runs as clear errors, the statement files seeded and routed as the seed did, bad specs refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from mysqlbench import slap_output
from mysqlbench.errors import InvalidInput
from mysqlbench.studies.spec import load_spec
from mysqlbench.workloads.slap.workload import SlapWorkload

DATA = Path(__file__).resolve().parents[1] / "data" / "slap"


def test_csv_lines_become_results():
    rows = slap_output.parse_csv((DATA / "ok.csv").read_text())
    assert rows == [
        {"engine": None, "load_type": "mixed", "avg_s": 0.001, "min_s": 0.001, "max_s": 0.002, "clients": 4,
         "queries_per_client": 2},
        {"engine": None, "load_type": "mixed", "avg_s": 0.003, "min_s": 0.003, "max_s": 0.004, "clients": 16,
         "queries_per_client": 2}]
    slap_output.check_errors((DATA / "ok_stdout.txt").read_text())  # nothing to complain about


def test_a_failed_connection_is_an_error_with_the_tools_message():
    output = (DATA / "connect_failed.txt").read_text()
    with pytest.raises(slap_output.SlapOutputError, match="Can't connect to server"):
        slap_output.parse_csv("", output)
    with pytest.raises(slap_output.SlapOutputError, match="Error when connecting"):
        slap_output.check_errors(output)


def test_a_failed_statement_is_an_error_though_the_tool_exits_0():
    with pytest.raises(slap_output.SlapOutputError, match="slap.nosuch"):
        slap_output.check_errors((DATA / "query_failed.txt").read_text())


def test_a_cut_or_odd_csv_is_an_error():
    with pytest.raises(slap_output.SlapOutputError, match="7 fields"):
        slap_output.parse_csv(",mixed,0.001,0.001\n")
    with pytest.raises(slap_output.SlapOutputError, match="not numbers"):
        slap_output.parse_csv(",mixed,x,0.001,0.002,4,2\n")


def workload(**params) -> SlapWorkload:
    return SlapWorkload(load_spec("slap_partitioning_study", {"dataset": {"rows": 1000, "parts": 10}}), params)


def test_statements_are_seeded_and_routed_like_the_seed():
    split = workload(engine="MyISAM", layout="split", concurrency=50)
    lines, ids = split.statements("select", 0)
    assert len(lines) == 100 and lines[0] == f"CALL myisam_split_select({ids[0]})" and all(1 <= i <= 1000 for i in ids)
    assert split.statements("select", 0) == (lines, ids)  # the same file for the same point and repetition
    assert split.statements("select", 1)[1] != ids
    single = workload(engine="InnoDB", layout="hash", concurrency=50)
    batch, _ = single.statements("batch_select", 0)
    assert len(batch) == 100 and batch[0].startswith("SELECT * FROM innodb_hash WHERE id = ")
    insert, _ = single.statements("insert", 0)
    assert insert[0].startswith("INSERT INTO innodb_hash (username, sex, birthday, email, tel, intro) VALUES ('")
    update, _ = split.statements("update", 0)
    assert update[0].startswith("CALL myisam_split_update(")
    assert workload(concurrency=500, concurrency_scale=0.1).params.clients() == 50


@pytest.mark.parametrize("overrides,message", [
    ({"units": ["select", "scan"]}, "unknown slap operation"),
    ({"matrix": {"concurrency": [50, "many"]}}, "concurrency: Input should be a valid integer"),
    ({"matrix": {"concurrency": [0]}}, "greater than or equal to 1"),
    ({"matrix": {"engine": ["MyISAM", "Aria"]}}, "engine: Input should be 'MyISAM' or 'InnoDB'"),
    ({"matrix": {"layout": ["single", "sharded"]}}, "layout: Input should be"),
    ({"dataset": {"schema": "slap; drop"}}, "not allowed"),
    ({"workload_params": {"concurrency_scale": 0}}, "greater than 0"),
])
def test_bad_slap_specs_are_refused(overrides, message):
    with pytest.raises(InvalidInput, match=message):
        load_spec("slap_partitioning_study", overrides)
