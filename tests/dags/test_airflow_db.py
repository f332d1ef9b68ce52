"""The local deployment's Airflow metadata DB is SQLite, written by the scheduler, the
dag-processor, the api-server and CLI commands at once: a command must wait for another's write,
not fail with "database is locked" after sqlite3's default 5 s (CI saw `airflow backfill create`
refused that way while the scheduler committed)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
import time

from conftest import REPO

HOLD_S = 20  # longer than the CLI's start plus sqlite3's default 5 s wait, well under the minute allowed


def test_a_cli_write_waits_for_the_schedulers_lock(airflow_db):
    path = airflow_db.removeprefix("sqlite:///")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another process's write transaction, as the scheduler's
    holder.execute("UPDATE dag SET is_paused = is_paused")
    released = threading.Timer(HOLD_S, lambda: holder.execute("COMMIT"))
    started = time.monotonic()
    released.start()
    try:
        done = subprocess.run([str(REPO / "bin" / "airflow"), "variables", "set", "mysqlbench_lock_probe", "1"],
                              capture_output=True, text=True, env=os.environ.copy(), timeout=120)
    finally:
        released.join()
        holder.close()
    waited = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert waited >= HOLD_S  # it did wait for the lock rather than slip in
    stored = sqlite3.connect(path).execute("SELECT count(*) FROM variable WHERE key = 'mysqlbench_lock_probe'")
    assert stored.fetchone() == (1,)  # (its value is stored encrypted)


def test_a_tasks_api_call_outwaits_the_api_servers_lock_wait():
    """A task's Execution API call (its start, its state) is a write the api-server may hold up to
    the lock wait: the task must wait longer than that, not time out and retry a call in flight."""
    from mysqlbench.airflow_db import BUSY_TIMEOUT_S

    env = {k: v for k, v in os.environ.items() if k != "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT"}
    done = subprocess.run([str(REPO / "bin" / "airflow"), "config", "get-value", "workers", "execution_api_timeout"],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    assert float(done.stdout.strip().splitlines()[-1]) > BUSY_TIMEOUT_S


def _savepoint_read_then_insert(tmp_path, connect_args) -> tuple[str, float]:
    """Airflow's backfill step on a SQLite file: inside a SAVEPOINT, read, then insert, while
    another process's write transaction holds the lock for 3 s more. Its outcome and how long it took."""
    import sqlalchemy as sa

    path = tmp_path / "meta.db"
    setup = sqlite3.connect(path)
    setup.execute("CREATE TABLE dag_run (id INTEGER PRIMARY KEY, logical_date TEXT)")
    setup.commit()
    setup.close()
    engine = sa.create_engine(f"sqlite:///{path}", connect_args=connect_args)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the scheduler, writing
    holder.execute("INSERT INTO dag_run (logical_date) VALUES ('2018-04-19')")
    release = threading.Timer(3, lambda: holder.execute("COMMIT"))
    release.start()
    started = time.monotonic()
    try:
        with engine.connect() as conn:
            with conn.begin_nested():  # a SAVEPOINT: SQLite begins a deferred transaction
                conn.execute(sa.text("SELECT max(id) FROM dag_run")).all()
                conn.execute(sa.text("INSERT INTO dag_run (logical_date) VALUES ('2024-04-30')"))
            conn.commit()
        outcome = "stored"
    except sa.exc.OperationalError as exc:
        outcome = str(exc.orig)
    finally:
        took = time.monotonic() - started
        release.join()
        holder.close()
        engine.dispose()
    return outcome, took


def test_the_backfill_command_waits_for_the_lock_its_read_would_have_to_upgrade(tmp_path):
    """Issue 23 item 6: `airflow backfill create` failed with "database is locked" at once while
    the scheduler wrote: a busy timeout cannot help a transaction that read before it writes, so
    SQLite refuses that upgrade without waiting. With the connection arguments bin/airflow gives
    the backfill command (every transaction starts with BEGIN IMMEDIATE) the same steps wait for
    the other writer and succeed."""
    from mysqlbench.airflow_db import SQLITE_CONNECT_ARGS, SQLITE_WRITER_CONNECT_ARGS

    for name in ("plain", "writer"):
        (tmp_path / name).mkdir()
    outcome, took = _savepoint_read_then_insert(tmp_path / "plain", SQLITE_CONNECT_ARGS)
    assert outcome == "database is locked" and took < 5, (outcome, took)  # refused at once, not after the wait
    outcome, took = _savepoint_read_then_insert(tmp_path / "writer", SQLITE_WRITER_CONNECT_ARGS)
    assert outcome == "stored" and took >= 2.5, (outcome, took)  # it waited for the other writer
