"""A point stopped from outside (what on_kill and an execution timeout do): the running statement
is cancelled on the server, the point stops at once instead of running its other repetitions, the
interrupted execution is recorded as killed, and the target's globals are restored."""

import threading
import time

import pytest

from mysqlbench import knobs
from mysqlbench.measure import Aborted
from mysqlbench.studies.point import PointRun
from mysqlbench.studies.spec import load_spec
from mysqlbench.targets.connection import TargetConnection
from mysqlbench.targets.journal import RestoreJournal

from conftest import EXTERNAL_MARKED_CONN


def test_an_aborted_point_stops_records_killed_and_restores(target, admin):
    spec = load_spec("probe_study", {"target": EXTERNAL_MARKED_CONN, "matrix": {}, "repetitions": 5,
                                     "variables": {"innodb_old_blocks_time": 555},
                                     "workload_params": {"window_s": 30, "interval_s": 1, "rampup_s": 0}})
    marked = TargetConnection.from_airflow(EXTERNAL_MARKED_CONN)
    from mysqlbench.workloads.base import workload_class

    workload = workload_class("probe")(spec)
    workload.ensure_dataset(marked, None)
    before = knobs.read_variable(admin, "innodb_old_blocks_time", "global")
    run = PointRun(spec, spec.points()[0], marked, workload)

    def abort_when_measuring():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with admin.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' "
                            "AND INFO LIKE 'SELECT v FROM probe%%'")
                if cur.fetchone()[0]:
                    break
            time.sleep(0.1)
        time.sleep(1)
        run.abort("task terminated (on_kill)")

    helper = threading.Thread(target=abort_when_measuring)
    helper.start()
    started = time.monotonic()
    with pytest.raises(Aborted):
        run.run()
    helper.join()
    assert time.monotonic() - started < 20  # not 5 windows of 30 s
    killed = [s for s in run.samples if s.status == "killed"]
    assert len(killed) == 1 and killed[0].repetition == 0 and "on_kill" in killed[0].metadata["why"]
    assert not any(s.status == "ok" and s.kind == "metric" for s in run.samples)
    assert knobs.read_variable(admin, "innodb_old_blocks_time", "global") == before
    assert RestoreJournal.of(marked).entries() == []
