"""Measuring on the real server: counters with the reading cost subtracted, absent counters,
the server-side timeout, and the query killed on the server when the task is terminated."""

import os
import signal
import subprocess
import sys
import textwrap
import time

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


def test_terminated_task_kills_its_query_on_the_server(target, admin):
    script = textwrap.dedent(f"""
        import sys, os
        sys.path.insert(0, {os.path.join(os.getcwd(), 'plugins')!r})
        from mysqlbench.targets.connection import TargetConnection, server_info
        from mysqlbench.measure import StatementRunner
        target = TargetConnection.from_fields('t', host='127.0.0.1', port={target.port}, login={target.login!r},
                                              password=os.environ['PW'], extra={{}})
        conn = target.connect()
        def kill(cid):
            c = target.connect(); c.cursor().execute('KILL QUERY %s', (cid,)); c.close()
        runner = StatementRunner(conn, server_info(conn), timeout_s=600, kill_query=kill)
        print('ready', flush=True)
        runner.run('long', "SELECT BENCHMARK(20000000000, MD5('mysqlbench_kill_probe'))")
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PW": target.password})
    assert proc.stdout.readline().strip() == "ready"

    def probes():
        with admin.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%mysqlbench_kill_probe%' "
                        "AND INFO NOT LIKE '%PROCESSLIST%'")
            return cur.fetchone()[0]

    deadline = time.monotonic() + 10
    while probes() == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert probes() == 1
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)
    deadline = time.monotonic() + 5
    while probes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert probes() == 0
