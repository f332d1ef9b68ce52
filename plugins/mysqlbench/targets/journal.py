"""The restore journal: how a target is left as it was found, by one mechanism for every global
change. Before a global is changed (a knob or a raw variable, ``SET GLOBAL`` on any target, or a
managed restart with a point's overrides) the journal records what to undo, on disk and synced.
Replaying it undoes everything in reverse: ``SET GLOBAL v = old`` for variables, a restart with
the base configuration for a managed instance.

It is replayed when a point ends, by the study's teardown task (which runs even when points
failed), and by whoever next takes the target, so a point killed with SIGKILL, which runs no
cleanup at all, is undone before anything else measures there. It is kept per server, as the
server names itself (``targets.hold.server_identity``: its host name, port and datadir), not per
Airflow connection or address, so a second connection id, a socket instead of TCP, or a host name
instead of 127.0.0.1 finds and undoes what a killed run through the first left (issue 27). It lives
in the results store, beside the holds, so whichever worker takes the server next, on any host,
finds it; each change is committed there before the server is touched.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from typing import Any

import sqlalchemy as sa

from mysqlbench import paths
from mysqlbench.errors import MysqlbenchError

log = logging.getLogger(__name__)


class RestoreJournal:
    def __init__(self, key: str, store=None, conn_id: str | None = None):
        """The journal of server ``key`` (``targets.hold.server_identity``; tests may use any
        name) in ``store`` (the deployment's results store by default)."""
        from mysqlbench.results.store import ResultsStore, restore_journals

        self.key, self.conn_id = key, conn_id or key
        self.store, self.table = store or ResultsStore.from_airflow(), restore_journals

    @classmethod
    def of(cls, target, store=None) -> "RestoreJournal":
        """The journal of the server ``target`` reaches, whichever connection id, address or
        socket reaches it. A journal file an earlier release left in ``work/journal/`` (keyed by
        the server's address, or by connection id) is taken over into the store."""
        from mysqlbench.targets.hold import server_identity

        journal = cls(server_identity(target), store, conn_id=target.conn_id)
        journal._take_over_files(target)
        return journal

    def _take_over_files(self, target) -> None:
        import hashlib

        from mysqlbench.targets.hold import address_identity

        directory = paths.work_dir() / "journal"
        for name in (hashlib.sha256(address_identity(target).encode()).hexdigest()[:24], target.conn_id):
            legacy = directory / f"{name}.json"
            if not legacy.exists():
                continue
            left = json.loads(legacy.read_text())
            with self.store.engine.begin() as conn:
                entries = self._entries(conn)
                for entry in left.get("entries", []):
                    if entry not in entries:
                        entries.append(entry)
                self._put(conn, entries, owner=left.get("owner"))
            log.warning("restore journal: took over %s (%d change(s) left by %s)", legacy, len(left.get("entries", [])),
                        left.get("owner"))
            legacy.unlink()

    # -- the row ----------------------------------------------------------------------------------
    def _row(self, conn):
        return conn.execute(sa.select(self.table).where(self.table.c.server == self.key)).first()

    def _entries(self, conn) -> list[dict[str, Any]]:
        row = self._row(conn)
        return [] if row is None else json.loads(row.entries)

    def _put(self, conn, entries: list[dict[str, Any]], owner: dict[str, Any] | None = None) -> None:
        """Write the journal in the caller's transaction; committed before the server is changed."""
        row = self._row(conn)
        owner = owner or (json.loads(row.owner) if row is not None else
                          {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
        values = {"target": self.conn_id, "owner": json.dumps(owner), "entries": json.dumps(entries),
                  "updated_at": time.time()}
        if row is None:
            conn.execute(self.table.insert().values(server=self.key, **values))
        else:
            conn.execute(self.table.update().where(self.table.c.server == self.key).values(**values))

    def entries(self) -> list[dict[str, Any]]:
        with self.store.engine.connect() as conn:
            return self._entries(conn)

    def owner(self) -> dict[str, Any] | None:
        with self.store.engine.connect() as conn:
            row = self._row(conn)
        return None if row is None else json.loads(row.owner)

    def record(self) -> dict[str, Any] | None:
        """The journal as stored (server, target, owner, entries), or None when nothing is left."""
        with self.store.engine.connect() as conn:
            row = self._row(conn)
        return None if row is None else {"server": row.server, "target": row.target, "owner": json.loads(row.owner),
                                         "entries": json.loads(row.entries)}

    def record_global(self, variable: str, old: Any) -> None:
        """Before ``SET GLOBAL variable``: remember its value. The first record of a variable wins
        (it is the value found; later ones are our own). Only a variable the engine may set is
        journaled (:func:`mysqlbench.knobs.check_engine_variable`)."""
        from mysqlbench import knobs

        knobs.check_engine_variable(variable)
        with self.store.engine.begin() as conn:
            entries = self._entries(conn)
            if any(e["kind"] == "global" and e["variable"] == variable for e in entries):
                return
            self._put(conn, entries + [{"kind": "global", "variable": variable, "old": old}])

    def record_restart(self, managed_target: str, overrides: dict[str, Any]) -> None:
        """Before a managed restart with ``overrides``: undo is a restart with the base config."""
        with self.store.engine.begin() as conn:
            entries = self._entries(conn)
            if not any(e["kind"] == "restart" for e in entries):
                self._put(conn, entries + [{"kind": "restart", "managed_target": managed_target,
                                            "overrides": overrides}])

    def clear(self) -> None:
        with self.store.engine.begin() as conn:
            conn.execute(self.table.delete().where(self.table.c.server == self.key))

    def replay(self, target, holder: str | None = None) -> list[dict[str, Any]]:
        """Undo every recorded change, newest first, then forget them. Returns what was undone."""
        entries = self.entries()
        if not entries:
            return []
        from mysqlbench import knobs

        log.warning("restore journal of %s: undoing %d change(s) left through %s (owner %s)", self.key, len(entries),
                    self.conn_id, self.owner())
        undone = []
        restart = next((e for e in entries if e["kind"] == "restart"), None)
        variables = [e for e in reversed(entries) if e["kind"] == "global"]
        if restart is not None:
            from mysqlbench.targets.managed import ManagedServer, ManagedSpec

            # a restart with the base config undoes every global, raw SET GLOBALs included
            ManagedServer(ManagedSpec.load(restart["managed_target"])).restart(holder=holder)
            undone.append(restart)
        elif variables:
            target.require_benchmark_target("restore global variables")
            with target.session() as conn:
                with conn.cursor() as cur:
                    for entry in variables:
                        variable = knobs.check_engine_variable(entry["variable"])
                        cur.execute(f"SET GLOBAL {variable} = %s", (entry["old"],))
                        now = knobs.read_variable(conn, variable, "global")
                        if not knobs.same_value(entry["old"], now):
                            raise MysqlbenchError(f"restore journal: {variable} is {now!r} after restoring "
                                                  f"{entry['old']!r}")
                        undone.append(entry)
        self.clear()
        return undone
