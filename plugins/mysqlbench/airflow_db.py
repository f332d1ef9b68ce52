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

BUSY_TIMEOUT_S = 60.0

# sqlite3.connect(timeout=...): how long a connection waits for another's write lock
SQLITE_CONNECT_ARGS: dict = {"timeout": BUSY_TIMEOUT_S}
# aiosqlite passes its keyword arguments on to sqlite3.connect (the api-server's async engine)
SQLITE_CONNECT_ARGS_ASYNC: dict = {"timeout": BUSY_TIMEOUT_S}
