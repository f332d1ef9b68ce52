"""A target as an Airflow connection: where the server is, who we log in as, and how far we may
control it. Credentials only ever come from the connection; nothing here prints them."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mysqlbench.errors import InvalidInput, TargetUnavailable, UnsafeOperation
from mysqlbench.flavor import ServerInfo, parse_server_info
from mysqlbench.params import CONN_ID_PATTERN

log = logging.getLogger(__name__)

CONTROL_MANAGED = "managed"
CONTROL_EXTERNAL = "external"
CONTROL_SSH = "ssh"
CONTROLS = (CONTROL_MANAGED, CONTROL_EXTERNAL, CONTROL_SSH)
MANAGED_WAIT_S = 120.0  # how long a managed instance that is starting, or held by another process, is waited for
# The connection extras mysqlbench reads, with what each means (the reference, docs/reference/
# connections.md, is generated from this); any other extra is the mysql provider's own and reaches
# its MySqlHook as the provider documents it.
EXTRAS = {
    "control": '`"managed"`: a local instance this project runs (restart with new settings, cache drop, '
               'datadir snapshots); `"external"` (the default): the connection only, nothing that needs a '
               'restart, so no cold-cache points; `"ssh"`: a server on a benchmark host, see `restart_command`',
    "benchmark_target": "`true`: the owner allows destructive steps (CREATE/DROP SCHEMA, SET GLOBAL, restart, cache "
                        "drop). A managed target is one once proven to be its instance; an external one only when "
                        "this says so",
    "managed_target": "which managed instance (`include/configs/targets/NAME.yaml`, or one made by "
                      "`bin/mysqlbench target up NAME --server ID`) a managed connection belongs to; believed only "
                      "when the server it reaches reports that instance's datadir and port on this host",
    "ssh_conn_id": "the benchmark host's SSH connection (type `ssh`, its host key given): sysbench and mariadb-slap "
                   "run there, and OS samples and host facts are read there",
    "restart_command": 'with `"control": "ssh"`: an argv list run on the benchmark host to restart the server, '
                       'e.g. `["systemctl", "restart", "mariadb"]`; global settings are then SET GLOBAL through the '
                       'restore journal, and a setting that needs a restart is not applicable',
    "datadir": 'with `"control": "ssh"`: the server\'s data directory on the benchmark host (its page cache is '
               'dropped there for a cold point; its free space is recorded)',
    "unix_socket": "connect through this socket instead of TCP (also the provider's own extra)",
}
_OUR_EXTRAS = frozenset(EXTRAS) - {"unix_socket"}  # unix_socket also reaches the provider's hook
# a path on a benchmark host, as a command there gets it
_REMOTE_PATH = re.compile(r"^/[A-Za-z0-9_./-]{0,4000}$")
# a host name or address, as tools on the benchmark host get it in their argv
_HOST = re.compile(r"^[A-Za-z0-9_.:\-\[\]%]{1,253}$")


@dataclass(frozen=True)
class TargetConnection:
    """How to reach one server under test.

    Connection extras (JSON) understood here: ``EXTRAS`` (each with what it means); the mysql
    provider's own extras (``ssl``, ``charset``, ``client``, ...) reach its ``MySqlHook``.
    """

    conn_id: str
    host: str
    port: int
    login: str
    password: str = field(repr=False)
    unix_socket: str | None = None
    marked: bool = False  # the connection's own benchmark_target extra
    control: str = CONTROL_EXTERNAL
    managed_target: str | None = None
    ssh_conn_id: str | None = None
    restart_command: tuple[str, ...] = ()
    datadir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the driver settings

    @classmethod
    def from_airflow(cls, conn_id: str) -> "TargetConnection":
        """Resolve ``conn_id`` through Airflow (metadata DB, environment or secrets backend)."""
        from airflow.sdk import BaseHook

        try:
            conn = BaseHook.get_connection(conn_id)
        except Exception as exc:  # AirflowNotFoundException, or the API's not-found error
            raise InvalidInput(f"target connection {conn_id!r} is not defined in Airflow") from exc
        return cls.from_fields(
            conn_id,
            host=conn.host,
            port=conn.port,
            login=conn.login,
            password=conn.password,
            extra=conn.extra_dejson,
        )

    @classmethod
    def from_fields(
        cls,
        conn_id: str,
        *,
        host: str | None,
        port: int | None,
        login: str | None,
        password: str | None,
        extra: dict[str, Any] | None,
    ) -> "TargetConnection":
        extra = dict(extra or {})
        control = extra.get("control", CONTROL_EXTERNAL)
        if control not in CONTROLS:
            raise InvalidInput(f"connection {conn_id!r}: control must be one of {CONTROLS}, not {control!r}")
        marked = extra.get("benchmark_target", False)
        if not isinstance(marked, bool):
            raise InvalidInput(f"connection {conn_id!r}: benchmark_target must be true or false")
        if control == CONTROL_MANAGED and not extra.get("managed_target"):
            raise InvalidInput(f"connection {conn_id!r}: a managed target needs managed_target in its extras")
        if not login:
            raise InvalidInput(f"connection {conn_id!r} has no login")
        if host and not _HOST.fullmatch(host):
            raise InvalidInput(f"connection {conn_id!r}: host {host!r} is not a host name or address")
        ssh_conn_id = extra.get("ssh_conn_id")
        if ssh_conn_id is not None and not re.fullmatch(CONN_ID_PATTERN, str(ssh_conn_id)):
            raise InvalidInput(f"connection {conn_id!r}: ssh_conn_id {ssh_conn_id!r} is not a connection id")
        restart = extra.get("restart_command") or []
        datadir = extra.get("datadir")
        if control == CONTROL_SSH:
            if not ssh_conn_id:
                raise InvalidInput(f"connection {conn_id!r}: control ssh needs ssh_conn_id in its extras")
            if not (isinstance(restart, list) and restart and all(isinstance(a, str) and a and "\n" not in a
                                                                  and "\0" not in a for a in restart)):
                raise InvalidInput(f"connection {conn_id!r}: control ssh needs restart_command, a list of arguments "
                                   "(e.g. [\"systemctl\", \"restart\", \"mariadb\"])")
            if not (isinstance(datadir, str) and _REMOTE_PATH.fullmatch(datadir) and "/../" not in f"{datadir}/"):
                raise InvalidInput(f"connection {conn_id!r}: control ssh needs datadir, the server's data directory "
                                   "on the host (an absolute path of letters, digits and _ . - /)")
        return cls(
            conn_id=conn_id,
            host=host or "127.0.0.1",
            port=int(port or 3306),
            login=login,
            password=password or "",
            unix_socket=extra.get("unix_socket"),
            marked=marked,
            control=control,
            managed_target=extra.get("managed_target"),
            ssh_conn_id=ssh_conn_id,
            restart_command=tuple(restart) if control == CONTROL_SSH else (),
            datadir=datadir if control == CONTROL_SSH else None,
            extra={k: v for k, v in extra.items() if k not in _OUR_EXTRAS},
        )

    @functools.cached_property
    def managed_proven(self) -> bool:
        """Is this the managed instance its extras name? The server it reaches must report that
        instance's datadir and port, on this host. A connection that only says so is external:
        no restart of our instance for it, and no mark."""
        if self.control != CONTROL_MANAGED:
            return False
        from mysqlbench.targets.hold import reported_self
        from mysqlbench.targets.instance import Instance, ManagedSpec

        instance = Instance(ManagedSpec.load(self.managed_target))
        object.__setattr__(self, "unreachable", self._wait_for_managed(instance))  # (frozen: a cached finding)
        if self.unreachable:
            return False
        hostname, port, datadir = reported_self(self)
        proven = (Path(datadir).resolve() == instance.datadir.resolve() and int(port) == instance.spec.port
                  and hostname == socket.gethostname())
        if not proven:
            log.warning("connection %s says control: managed for %r, but the server it reaches is not that "
                        "instance (datadir %s, port %s, host %s): treated as external", self.conn_id,
                        self.managed_target, datadir, port, hostname)
        return proven

    # why a managed claim could not be proven: the instance was not reachable
    unreachable: str | None = field(default=None, init=False, repr=False, compare=False)

    def _wait_for_managed(self, instance) -> str | None:
        """None once the managed instance answers; else why it does not. While its process runs
        (starting) or another process holds the server (another study's cold point restarts it),
        wait up to ``MANAGED_WAIT_S`` for it: a study that starts then is not refused."""
        deadline = time.monotonic() + MANAGED_WAIT_S
        store: list[Any] = []  # opened (and migrated) once, at the first wait
        while True:
            try:
                self.connect().close()
                return None
            except TargetUnavailable as exc:
                why = str(exc)
            if time.monotonic() > deadline or not (instance.is_running() or self._held_elsewhere(store)):
                return why
            time.sleep(1.0)

    def _held_elsewhere(self, store: list[Any]) -> bool:
        """Does another process (here or on another host) hold this server right now?"""
        try:
            from mysqlbench.results.store import ResultsStore
            from mysqlbench.targets.hold import holder_of, target_resources

            if not store:
                store.append(ResultsStore.from_airflow())
            holder = holder_of(store[0], target_resources(self)[0])
        except Exception:  # noqa: BLE001 - no results store here (a bare CLI): nobody to wait for
            return False
        return holder is not None and (holder.get("pid"), holder.get("host")) != (os.getpid(), socket.gethostname())

    @property
    def benchmark_target(self) -> bool:
        """May destructive steps run here? The owner's mark, or a proven managed instance (which
        exists only to be benchmarked)."""
        return self.marked or self.managed_proven

    def require_benchmark_target(self, action: str) -> None:
        """Refuse ``action`` unless the target's owner marked it as a benchmark target."""
        if not self.benchmark_target:
            if self.control == CONTROL_MANAGED and self.unreachable:
                raise TargetUnavailable(
                    f"cannot {action} on {self.conn_id!r}: its managed instance {self.managed_target!r} is not "
                    f"reachable ({self.unreachable}); start it with: bin/mysqlbench target up {self.managed_target}")
            claim = (f" (it says control: managed for {self.managed_target!r}, but the server it reaches is not "
                     "that instance)" if self.control == CONTROL_MANAGED else "")
            raise UnsafeOperation(
                f"refusing to {action} on {self.conn_id!r}: it is not marked as a benchmark target{claim} "
                '(set "benchmark_target": true in the connection extras if this server is yours to change)'
            )

    @contextlib.contextmanager
    def session(self, *, database: str | None = None, local_infile: bool = False):
        """A connection for the block (:meth:`connect`), closed however the block ends."""
        conn = self.connect(database=database, local_infile=local_infile)
        try:
            yield conn
        finally:
            conn.close()

    def connect(self, *, database: str | None = None, local_infile: bool = False):
        """A connection through the mysql provider's ``MySqlHook``, so the connection's own extras
        (``ssl``, ``ssl_mode``, ``charset``, ``unix_socket``, ``client``, ``iam``) work as for any
        Airflow user; with autocommit on, utf8mb4 unless the connection says otherwise, and plain
        tuple rows (a ``cursor`` extra is ignored: measurements read rows positionally)."""
        import MySQLdb
        from airflow.providers.mysql.hooks.mysql import MySqlHook
        from airflow.sdk import Connection

        extra = {"charset": "utf8mb4", **{k: v for k, v in self.extra.items() if k != "cursor"}}
        if self.unix_socket:
            extra["unix_socket"] = self.unix_socket
        connection = Connection(conn_id=self.conn_id, conn_type="mysql", host=self.host, port=self.port,
                                login=self.login, password=self.password, extra=json.dumps(extra))
        hook = MySqlHook(mysql_conn_id=self.conn_id, connection=connection, schema=database, local_infile=local_infile)
        try:
            conn = hook.get_conn()
        except MySQLdb.OperationalError as exc:
            # the driver's message names host and user, never the password
            raise TargetUnavailable(f"cannot connect to target {self.conn_id!r}: {exc.args[-1]}") from exc
        hook.set_autocommit(conn, True)
        return conn


def server_info(conn) -> ServerInfo:
    with conn.cursor() as cur:
        cur.execute("SELECT @@version, @@version_comment")
        version, comment = cur.fetchone()
    return parse_server_info(version, comment)
