"""Connection arguments for Airflow's own metadata database when it is SQLite (the local
deployment ``bin/env.sh`` sets up): ``[database] sql_alchemy_connect_args`` names these.

SQLite lets one writer at a time hold the database; Python's ``sqlite3`` gives up after 5 s of
waiting and Airflow surfaces that as ``database is locked``. With the scheduler, the dag-processor,
the api-server and a CLI command such as ``airflow backfill create`` all writing, 5 s is not enough
on a loaded two-core host (seen in CI: a backfill refused while the scheduler committed). Waiting up
to a minute turns the collision into a short delay. A server database (PostgreSQL, MySQL) does not
use these: ``bin/env.sh`` sets them only for a ``sqlite://`` connection.

The api-server waits for that lock too, while serving a task's Execution API call (a task's start
is a write). The task's client gives up after ``[workers] execution_api_timeout`` (5 s by default)
and retries a call the server may still complete, so ``bin/env.sh`` raises it above the lock wait
(CI saw a scheduled task fail before it started: its start call timed out five times)."""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa

BUSY_TIMEOUT_S = 60.0

# sqlite3.connect(timeout=...): how long a connection waits for another's write lock
SQLITE_CONNECT_ARGS: dict = {"timeout": BUSY_TIMEOUT_S}
# aiosqlite passes its keyword arguments on to sqlite3.connect (the api-server's async engine)
SQLITE_CONNECT_ARGS_ASYNC: dict = {"timeout": BUSY_TIMEOUT_S}


class WriterConnection(sqlite3.Connection):
    """A sqlite3 connection whose every transaction starts by taking the write lock."""


# `airflow backfill create` (bin/airflow gives it these): the lock wait above does not help a
# transaction that has read before it writes. Airflow's backfill creates each run inside a
# SAVEPOINT (a deferred transaction) that first reads the DAG's latest run, then inserts; when
# another process holds the write lock at that moment, SQLite refuses the read lock's upgrade at
# once, without waiting, as waiting could deadlock ("database is locked" after 0 s, in 3 of 5
# backfill commands while the scheduler ran). Starting the transaction with BEGIN IMMEDIATE takes
# the write lock before the read, and waiting for it is safe. Only a one-shot command gets this:
# a server process whose nested sessions each took the write lock could wait on itself.
SQLITE_WRITER_CONNECT_ARGS: dict = {"timeout": BUSY_TIMEOUT_S, "factory": WriterConnection}


def _begin_immediate(conn) -> None:
    if isinstance(conn.connection.dbapi_connection, WriterConnection):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


if not sa.event.contains(sa.engine.Engine, "begin", _begin_immediate):
    sa.event.listen(sa.engine.Engine, "begin", _begin_immediate)
