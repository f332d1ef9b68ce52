"""Other clients' sessions on a server: what a measured window must not overlap, and what a managed
restart must not cut short. A statement running in another session is waited for; one still
running after the wait makes the caller refuse, naming it, instead of measuring over it or
dropping its connection."""

from __future__ import annotations

import logging
import time
from typing import Any

from mysqlbench.errors import MysqlbenchError

log = logging.getLogger(__name__)

# another session's statement: not our own connection, not the server's threads, not a task
# waiting for our server-side lock (it is blocked, not working)
_BUSY = ("SELECT ID, USER, HOST, COMMAND, TIME, LEFT(COALESCE(INFO, ''), 80) FROM information_schema.PROCESSLIST "
         "WHERE ID <> CONNECTION_ID() AND COMMAND NOT IN ('Sleep', 'Daemon', 'Binlog Dump') "
         "AND USER NOT IN ('system user', 'event_scheduler') "
         "AND COALESCE(INFO, '') NOT LIKE 'SELECT GET_LOCK(%%'")
_CONNECTED = ("SELECT ID, USER, HOST FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() "
              "AND COMMAND = 'Sleep' AND USER NOT IN ('system user', 'event_scheduler')")


class ServerBusy(MysqlbenchError):
    """Another client's statement kept running for longer than the caller would wait."""


def busy_sessions(conn) -> list[dict[str, Any]]:
    """Other sessions running a statement now."""
    with conn.cursor() as cur:
        cur.execute(_BUSY)
        return [{"id": r[0], "user": r[1], "host": r[2], "command": r[3], "seconds": r[4], "statement": r[5]}
                for r in cur.fetchall()]


def idle_sessions(conn) -> list[dict[str, Any]]:
    """Other sessions connected and idle (a restart disconnects them)."""
    with conn.cursor() as cur:
        cur.execute(_CONNECTED)
        return [{"id": r[0], "user": r[1], "host": r[2]} for r in cur.fetchall()]


def wait_until_idle(conn, wait_s: float, before: str) -> None:
    """Return once no other session runs a statement; raise ``ServerBusy`` naming them after
    ``wait_s`` seconds. ``before`` says what waits (for the log and the error)."""
    deadline = time.monotonic() + wait_s
    said = False
    while True:
        busy = busy_sessions(conn)
        if not busy:
            return
        if time.monotonic() > deadline:
            raise ServerBusy(f"another client's statement is still running after {wait_s:g} s; not going on with "
                             f"{before} over it: {busy}")
        if not said:
            log.info("waiting up to %g s for other sessions' statements before %s: %s", wait_s, before, busy)
            said = True
        time.sleep(0.5)
