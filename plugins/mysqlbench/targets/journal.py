"""The restore journal: how a target is left as it was found, by one mechanism for every global
change. Before a global is changed (a knob or a raw variable, ``SET GLOBAL`` on any target, or a
managed restart with a point's overrides) the journal records what to undo, on disk and synced.
Replaying it undoes everything in reverse: ``SET GLOBAL v = old`` for variables, a restart with
the base configuration for a managed instance.

It is replayed when a point ends, by the study's teardown task (which runs even when points
failed), and by whoever next takes the target, so a point killed with SIGKILL, which runs no
cleanup at all, is undone before anything else measures there. It is kept per server, not per
Airflow connection (``RestoreJournal.of``: the identity the holds use, a managed instance's
datadir or a server's host and port), so a second connection id to the same server finds and
undoes what a killed run through the first left (issue 27). It lives in the work directory of the
host that changed the target; with workers on several hosts, route a target's points to one queue
(moving it into the results store, beside the holds, is issue 27's next step).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

from mysqlbench import paths
from mysqlbench.errors import MysqlbenchError

log = logging.getLogger(__name__)


class RestoreJournal:
    def __init__(self, key: str, directory: Path | None = None, conn_id: str | None = None):
        """The journal of ``key`` (a server identity; tests may use any name) in ``directory``."""
        self.key, self.conn_id = key, conn_id or key
        name = hashlib.sha256(key.encode()).hexdigest()[:24] if conn_id else key
        self.path = (directory or paths.work_dir() / "journal") / f"{name}.json"

    @classmethod
    def of(cls, target, directory: Path | None = None) -> "RestoreJournal":
        """The journal of the server ``target`` reaches, whichever connection id names it. A
        journal an older version left under the connection id is taken over."""
        from mysqlbench.targets.hold import target_resources

        journal = cls(target_resources(target)[0], directory, conn_id=target.conn_id)
        legacy = journal.path.parent / f"{target.conn_id}.json"
        if legacy.exists() and not journal.path.exists():
            os.replace(legacy, journal.path)
        return journal

    def entries(self) -> list[dict[str, Any]]:
        try:
            return json.loads(self.path.read_text())["entries"]
        except FileNotFoundError:
            return []

    def owner(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.path.read_text())["owner"]
        except FileNotFoundError:
            return None

    def _write(self, entries: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        owner = self.owner() or {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        with open(partial, "w") as handle:
            json.dump({"server": self.key, "target": self.conn_id, "owner": owner, "entries": entries}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself survives a crash
        finally:
            os.close(directory)

    def record_global(self, variable: str, old: Any) -> None:
        """Before ``SET GLOBAL variable``: remember its value. The first record of a variable wins
        (it is the value found; later ones are our own). Only a variable the engine may set is
        journaled (:func:`mysqlbench.knobs.check_engine_variable`)."""
        from mysqlbench import knobs

        knobs.check_engine_variable(variable)
        entries = self.entries()
        if any(e["kind"] == "global" and e["variable"] == variable for e in entries):
            return
        entries.append({"kind": "global", "variable": variable, "old": old})
        self._write(entries)

    def record_restart(self, managed_target: str, overrides: dict[str, Any]) -> None:
        """Before a managed restart with ``overrides``: undo is a restart with the base config."""
        entries = self.entries()
        if not any(e["kind"] == "restart" for e in entries):
            entries.append({"kind": "restart", "managed_target": managed_target, "overrides": overrides})
            self._write(entries)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def replay(self, target, holder: str | None = None) -> list[dict[str, Any]]:
        """Undo every recorded change, newest first, then forget them. Returns what was undone."""
        entries = self.entries()
        if not entries:
            return []
        from mysqlbench import knobs

        log.warning("restore journal %s: undoing %d change(s) left on %s (owner %s)", self.path, len(entries),
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
            conn = target.connect()
            try:
                with conn.cursor() as cur:
                    for entry in variables:
                        variable = knobs.check_engine_variable(entry["variable"])
                        cur.execute(f"SET GLOBAL {variable} = %s", (entry["old"],))
                        now = knobs.read_variable(conn, variable, "global")
                        if not knobs.same_value(entry["old"], now):
                            raise MysqlbenchError(f"restore journal: {variable} is {now!r} after restoring "
                                                  f"{entry['old']!r}")
                        undone.append(entry)
            finally:
                conn.close()
        self.clear()
        return undone
