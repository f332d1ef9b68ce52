"""A server on a benchmark host, controlled over SSH (``control: ssh``): restarted with the
connection's ``restart_command`` there, its page cache dropped there, its free space read there.

What the engine asks of a control, for such a server: ``restart`` (with no overrides: a setting
that needs a restart cannot be put on the command line of a service we do not own, so it is not
applicable; dynamic ones are SET GLOBAL through the restore journal), ``drop_os_cache``,
``filesystem`` and ``host_state``. Nothing here runs on the worker's own disks.
"""

from __future__ import annotations

import time
from typing import Any

from mysqlbench.errors import MysqlbenchError, NotApplicable
from mysqlbench.targets.host import HostError, SshHost

# GNU dd's "iflag=nocache count=0" asks the kernel to drop a whole file's cached pages
# (posix_fadvise DONTNEED, as cache.evict_files does here), after a sync: the page cache forgets the
# server's files and only those; -print counts the files it worked on
EVICT = ["sh", "-c", 'sync && find "$1" -type f -exec dd iflag=nocache count=0 status=none "if={}" \\; -print | wc -l',
          "evict"]


class SshControl:
    def __init__(self, target):
        self.target = target
        self.host = SshHost(target.ssh_conn_id)
        self.datadir = target.datadir
        self.tmpdir = None

    def pid(self) -> None:
        return None  # the server's process is on another host: its CPU is not read from here

    def admin_connect(self):
        return self.target.connect()

    def restart(self, overrides: dict[str, Any] | None = None, holder: str | None = None, wait_s: float = 300) -> None:
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
            fstype = self.host.run(["stat", "-f", "-c", "%T", self.datadir], timeout=30).strip()
        except HostError:
            return None
        return {"type": fstype, "host": self.host.name}

    def host_state(self) -> dict[str, Any]:
        try:
            free = int(self.host.run(["df", "-B1", "--output=avail", self.datadir], timeout=30).split()[-1])
        except (HostError, ValueError, IndexError):
            free = None
        return {"host": self.host.name, "free_bytes": {self.datadir: free}}
