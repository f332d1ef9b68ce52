"""Measuring on the real server: counters with the reading cost subtracted, absent counters,
the server-side timeout, and the query killed on the server when the task is terminated."""

import threading
import time

import pytest

from mysqlbench.measure import StatementRunner
from mysqlbench.targets.connection import server_info


def test_empty_statement_window_reads_zero_counters(target):
    conn = target.connect()
    runner = StatementRunner(conn, server_info(conn), timeout_s=10)
    execution = runner.run("noop", "SELECT 1")
    conn.close()
    assert execution.status == "ok" and execution.rows == 1 and execution.client_s > 0
    # reading SHOW GLOBAL STATUS itself bumps Handler_read_rnd_next etc.; the baseline removes it
    assert execution.counters["Handler_read_rnd_next"] == 0
    assert execution.counters["Innodb_buffer_pool_reads"] == 0
    assert execution.counters["Innodb_rows_read"] is None  # MariaDB 10.10+ has no such counter


def test_timeout_is_enforced_by_the_server(target):
    conn = target.connect()
    runner = StatementRunner(conn, server_info(conn), timeout_s=0.5)
    started = time.monotonic()
    execution = runner.run("busy", "SELECT BENCHMARK(20000000000, MD5('x'))")
    assert time.monotonic() - started < 10
    assert execution.status == "timeout" and execution.client_s is None and execution.rows is None
    # the timeout covers the statement only: the session is usable again right after
    assert runner.run("after", "SELECT 1").status == "ok"
    conn.close()


def test_abort_kills_the_statement_on_the_server_and_stops_the_window(target, admin):
    """What on_kill and an execution timeout do: abort() from another thread kills the running
    statement on the server, and the window raises Aborted instead of returning a time."""
    from mysqlbench.measure import Aborted

    conn = target.connect()

    def kill(connection_id):
        killer = target.connect()
        try:
            killer.cursor().execute("KILL QUERY %s", (connection_id,))
        finally:
            killer.close()

    runner = StatementRunner(conn, server_info(conn), timeout_s=600, kill_query=kill)

    def probes():
        with admin.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%mysqlbench_kill_probe%' "
                        "AND INFO NOT LIKE '%PROCESSLIST%'")
            return cur.fetchone()[0]

    def abort_when_running():
        deadline = time.monotonic() + 10
        while probes() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        runner.window.abort("task terminated (on_kill)")

    helper = threading.Thread(target=abort_when_running)
    helper.start()
    started = time.monotonic()
    with pytest.raises(Aborted, match="on_kill"):
        runner.run("long", "SELECT BENCHMARK(20000000000, MD5('mysqlbench_kill_probe'))")
    helper.join()
    assert time.monotonic() - started < 15
    deadline = time.monotonic() + 10  # KILL QUERY is asynchronous: the statement leaves when it next checks
    while probes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert probes() == 0
    with pytest.raises(Aborted):  # an aborted window measures nothing more
        runner.run("after", "SELECT 1")
    conn.close()


@pytest.mark.serial  # judges a CPU share: beside the parallel suite the server got too little CPU to show it
def test_a_connection_only_servers_own_cpu_is_not_counted_as_other_processes(target, managed):
    """A connection-only target on this machine (the regression tests' external one): the process
    ``local_server_process`` finds is the server's, and given to the sampler it takes the query's
    own CPU out of the other-processes share. Judged side by side with the same query sampled
    without it (where one core of two, ~50 points, read as noise), not against a quiet machine;
    alone, as it judges a CPU share (beside the parallel suite: 36 against 58 points)."""
    from mysqlbench.measure import MeasuredWindow, local_server_process

    conn = target.connect()
    try:
        pid, unknown = local_server_process(conn)
        assert (pid, unknown) == (managed.pid(), False)
        shares = {}
        for name, server_pid in (("found", pid), ("none", None)):
            runner = StatementRunner(conn, server_info(conn), timeout_s=30,
                                     window=MeasuredWindow(conn, flavor="mariadb", server_pid=server_pid,
                                                           server_unknown=unknown))
            execution = runner.run("busy", "SELECT BENCHMARK(8000000, MD5('x'))")
            assert execution.status == "ok" and execution.client_s > 0.5, execution.client_s
            shares[name] = execution.os["other_cpu_pct"]
    finally:
        conn.close()
    assert shares["found"] < shares["none"] - 25, shares
