"""Exclusive use of a server: a server-side named lock, so every mysqlbench task that changes or
measures a server (study points, tpch_load) excludes the others, from any Airflow deployment."""

from __future__ import annotations

import contextlib

from mysqlbench.errors import MysqlbenchError
from mysqlbench.targets.connection import TargetConnection

LOCK_NAME = "mysqlbench:exclusive"


@contextlib.contextmanager
def exclusive(target: TargetConnection, wait_s: int = 3600):
    """A server-side named lock: excludes every other mysqlbench task on this server, from this
    or any other Airflow deployment. It lives in its own connection; a restart drops it and the
    caller takes it again with ``renew()``. Taking it replays a restore journal left behind."""
    holder = _Exclusive(target, wait_s)
    holder.renew()
    # whoever takes the target first undoes what a killed holder left (its restore journal)
    from mysqlbench.targets.journal import RestoreJournal

    if any(entry["kind"] == "restart" for entry in RestoreJournal(target.conn_id).replay(target)):
        holder.renew()  # the restart dropped the lock's connection
    try:
        yield holder
    finally:
        holder.release()


class _Exclusive:
    def __init__(self, target: TargetConnection, wait_s: int):
        self.target, self.wait_s, self.conn = target, wait_s, None

    def renew(self) -> None:
        self.release()
        self.conn = self.target.connect()
        with self.conn.cursor() as cur:
            cur.execute("SELECT GET_LOCK(%s, %s)", (LOCK_NAME, self.wait_s))
            if cur.fetchone()[0] != 1:
                raise MysqlbenchError(f"another mysqlbench task holds {LOCK_NAME} on {self.target.conn_id}")

    def release(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()  # closing releases the lock
            self.conn = None
