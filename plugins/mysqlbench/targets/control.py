"""One control protocol for every kind of target: what a point may do to the server beyond SQL.

A point asks its target's control, whatever kind it is, and never asks which kind it is:

- ``restarts``: can the server be restarted between repetitions (a cold cache, the base config
  back)? ``globals_by_restart``: are a point's global settings put on the restart's command line
  (our managed instance) rather than ``SET GLOBAL`` through the restore journal?
- ``restart(overrides, holder)``, ``admin_connect()``, ``server_process(conn)`` (the server's pid
  for the OS sampler, and whether it is unknown), ``drop_os_cache(scope)``, ``filesystem()``,
  ``host_state()``, ``os_source()`` (where OS samples come from), ``snapshots`` (the instance whose
  datadir a workload may snapshot and restore, or None).

Three implementations: :class:`ManagedControl` (our instance on this host: restarted with
overrides, its files' page cache dropped here), :class:`SshControl` (a server on a benchmark host:
restarted by the connection's ``restart_command`` over SSH, its cache dropped there; a setting
that needs a restart is not applicable) and :class:`ConnectionOnly` (nothing beyond SQL: no
restart, so no cold cache, and the server's process found on this host if it runs here).
:func:`take_control` picks one inside the point's hold.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from mysqlbench.errors import MysqlbenchError, NotApplicable
from mysqlbench.targets.host import HostError, SshHost

log = logging.getLogger(__name__)

# GNU dd's "iflag=nocache count=0" asks the kernel to drop a whole file's cached pages
# (posix_fadvise DONTNEED, as cache.evict_files does here), after a sync: the page cache forgets the
# server's files and only those; -print counts the files it worked on
EVICT = ["sh", "-c", 'sync && find "$1" -type f -exec dd iflag=nocache count=0 status=none "if={}" \\; -print | wc -l',
          "evict"]


class Control:
    """The protocol, with what a connection-only target can do (nothing beyond SQL)."""

    restarts = False
    globals_by_restart = False
    snapshots = None  # a ManagedServer whose datadir a workload may snapshot

    def __init__(self, target) -> None:
        self.target = target

    def server_process(self, conn) -> tuple[int | None, bool]:
        from mysqlbench.measure import local_server_process

        return local_server_process(conn)

    def admin_connect(self):
        return self.target.connect()

    def restart(self, overrides: dict[str, Any] | None = None, holder: str | None = None, journal=None) -> None:
        """Restart the server (with ``overrides`` where the control can put them on its command
        line, journaled first in ``journal``) and return once it takes connections."""
        raise NotApplicable(f"{self.target.conn_id} is {self.target.control} (connection only): it cannot be restarted")

    def drop_os_cache(self, scope: str) -> dict[str, Any]:
        raise NotApplicable(f"{self.target.conn_id} is {self.target.control} (connection only): its server's cache "
                            "cannot be dropped")

    def filesystem(self) -> dict[str, Any] | None:
        return None

    def host_state(self) -> dict[str, Any]:
        from mysqlbench.results.lineage import host_state

        return host_state()

    def os_source(self):
        """OS samples come from the benchmark host: over SSH when the target names one."""
        if not self.target.ssh_conn_id:
            return None
        from mysqlbench.ossampler import RemoteProc

        return RemoteProc(SshHost(self.target.ssh_conn_id))


class ConnectionOnly(Control):
    """A target reached only through its connection (``control: external``, or a managed claim
    not proven)."""


class ManagedControl(Control):
    """Our managed instance on this host, proven: restarted with a point's globals as overrides."""

    restarts = True
    globals_by_restart = True

    def __init__(self, target, server) -> None:
        super().__init__(target)
        self.server = self.snapshots = server

    def server_process(self, conn) -> tuple[int | None, bool]:
        return self.server.pid(), False

    def admin_connect(self):
        return self.server.admin_connect()

    def restart(self, overrides: dict[str, Any] | None = None, holder: str | None = None, journal=None) -> None:
        if overrides and journal is not None:  # a killed point's successor restarts it with the base config
            journal.record_restart(self.server.spec.name, overrides)
        self.server.restart(overrides, holder=holder)

    def drop_os_cache(self, scope: str) -> dict[str, Any]:
        from mysqlbench import cache

        return {**cache.drop_os_cache(self.server.datadir, scope),
                "o_direct_note": "innodb_flush_method=O_DIRECT: the page cache does not hold data pages"}

    def filesystem(self) -> dict[str, Any] | None:
        from mysqlbench.results.lineage import filesystem_of

        return filesystem_of(Path(self.server.datadir))

    def host_state(self) -> dict[str, Any]:
        from mysqlbench.results.lineage import host_state

        return host_state(self.server.datadir, self.server.tmpdir)


def take_control(target, lock) -> Control:
    """Inside the hold (another point may have had the server down for a restart until now): a
    server on a benchmark host is controlled over SSH; our managed instance is started if it is
    down, and controlled only once the connection is proven to reach it; anything else is
    connection only."""
    if target.control == "ssh":
        return SshControl(target)
    if target.control != "managed":
        return ConnectionOnly(target)
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    server = ManagedServer(ManagedSpec.load(target.managed_target))
    if not server.is_running():
        server.start(holder=lock.token)
        lock.renew()
        target.__dict__.pop("managed_proven", None)  # a proof tried while it was down is void
    if target.managed_proven:  # a connection that only claims it gets no restart of our instance
        return ManagedControl(target, server)
    return ConnectionOnly(target)


# How long a quick question to a benchmark host (its datadir's filesystem, its free space) may
# take: a df or stat that hangs (a stale network mount) leaves the answer unknown, not the task stuck.
HOST_QUERY_TIMEOUT_S = 30


class SshControl(Control):
    """A server on a benchmark host (``control: ssh``): restarted as it is configured there, its
    cache dropped there; a point's globals are SET GLOBAL after the restart."""

    restarts = True

    def __init__(self, target) -> None:
        super().__init__(target)
        self.host = SshHost(target.ssh_conn_id)
        self.datadir = target.datadir

    def server_process(self, conn) -> tuple[int | None, bool]:
        return None, False  # the server's process is on another host: its CPU is not read from here

    def os_source(self):
        from mysqlbench.ossampler import RemoteProc

        return RemoteProc(self.host)

    def restart(self, overrides: dict[str, Any] | None = None, holder: str | None = None, journal=None,
                wait_s: float = 300) -> None:
        if overrides:
            raise NotApplicable(f"{sorted(overrides)} need a server restart with new settings; "
                                f"{self.target.conn_id} is restarted over SSH with its own config "
                                f"({' '.join(self.target.restart_command)}): set them there")
        # the caller's hold token goes along (a hex token, in the environment of the command): a
        # restart command that is this project's own `target restart` lets it through the hold
        argv = ["env", f"MYSQLBENCH_HOLDER={holder}", *self.target.restart_command] if holder else \
            list(self.target.restart_command)
        self.host.run(argv, timeout=wait_s)
        deadline = time.monotonic() + wait_s
        while True:  # back when it takes connections again
            try:
                self.target.connect().close()
                return
            except Exception as exc:  # noqa: BLE001 - any failure to connect means not yet
                if time.monotonic() > deadline:
                    raise MysqlbenchError(f"{self.target.conn_id} did not come back within {wait_s:.0f} s after "
                                          f"its restart over SSH: {exc}") from None
                time.sleep(0.5)

    def drop_os_cache(self, scope: str) -> dict[str, Any]:
        """The host's whole page cache (``host``: drop_caches, when its SSH user may), or the
        server's files only (posix_fadvise over the datadir), on the benchmark host."""
        if scope == "host":
            try:
                self.host.run(["sh", "-c", "sync && echo 3 > /proc/sys/vm/drop_caches"], timeout=120)
                return {"method": "drop_caches over SSH", "scope": "whole page cache", "host": self.host.name}
            except HostError as exc:
                why = f"drop_caches not permitted on {self.host.name}: {exc}"
        else:
            why = None
        count = int(self.host.run([*EVICT, self.datadir], timeout=300).strip() or 0)
        out = {"method": "posix_fadvise(DONTNEED) over SSH", "scope": f"{count} files of the target's datadir",
               "host": self.host.name}
        return {**out, "why": why} if why else out

    def filesystem(self) -> dict[str, Any] | None:
        try:
            fstype = self.host.run(["stat", "-f", "-c", "%T", self.datadir], timeout=HOST_QUERY_TIMEOUT_S).strip()
        except HostError:
            return None
        return {"type": fstype, "host": self.host.name}

    def host_state(self) -> dict[str, Any]:
        try:
            free = int(self.host.run(["df", "-B1", "--output=avail", self.datadir],
                                     timeout=HOST_QUERY_TIMEOUT_S).split()[-1])
        except (HostError, ValueError, IndexError):
            free = None
        return {"host": self.host.name, "free_bytes": {self.datadir: free}}


def ensure_running(target) -> None:
    """A connection naming a managed instance: start that instance if it is down (after a reboot,
    say). Starting our own instance on its own datadir is safe whatever the connection points at;
    whether the connection really reaches it is proven afterwards (``managed_proven``)."""
    if target.control != "managed":
        return
    from mysqlbench.targets.lock import exclusive
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    server = ManagedServer(ManagedSpec.load(target.managed_target))
    if server.is_running():
        return
    with exclusive(target, "start a managed target that was down") as lock:  # waits for a holder mid-restart
        if not server.is_running():
            log.info("managed target %s is not running; starting it", target.managed_target)
            server.start(holder=lock.token)
