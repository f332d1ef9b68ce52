"""A managed instance as files on this host: its spec (``include/configs/targets/<name>.yaml``),
its directory, datadir, socket and pid file, whether it runs and answers, and the name it has as a
server. The bottom of ``targets/``: what a connection needs to prove it reaches the instance and
what holds need to name it, without the control that starts and restarts it
(:class:`~mysqlbench.targets.managed.ManagedServer`, built on this)."""

from __future__ import annotations

import functools
import getpass
import hashlib
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mysqlbench import paths, yamlfile
from mysqlbench.errors import InvalidInput, TargetUnavailable
from mysqlbench.identifiers import check_name
from mysqlbench.knobs import check_settable_variable
from mysqlbench.servers import Binaries


@dataclass(frozen=True)
class ManagedSpec:
    """A managed instance as configured in ``include/configs/targets/<name>.yaml``."""

    name: str
    conn_id: str
    port: int
    base_cnf: str | None = None  # None: the flavor's include/configs/<flavor>/base.cnf
    overrides: dict[str, Any] = field(default_factory=dict)
    basedir: str | None = None
    os_user: str = "mysql"
    server: str | None = None    # a catalog id (include/configs/servers.yaml); None: the system's MariaDB

    @classmethod
    def path_of(cls, name: str) -> Path:
        """include/configs/targets/NAME.yaml, or for a target made by `target up NAME --server ID`,
        the spec it wrote beside its datadir."""
        check_name(name, "managed target name")
        shipped = paths.CONFIG_DIR / "targets" / f"{name}.yaml"
        return shipped if shipped.exists() else paths.work_dir() / "targets" / name / "target.yaml"

    @classmethod
    def load(cls, name: str) -> "ManagedSpec":
        path = cls.path_of(name)
        if not path.exists():
            raise InvalidInput(f"no managed target {name!r}: neither include/configs/targets/{name}.yaml nor {path} "
                               "exists (create one with: bin/mysqlbench target up NAME --server ID)")
        data = yamlfile.load(path.read_text()) or {}
        config = data.get("config") or {}
        spec = cls(
            name=data.get("name", name),
            conn_id=data["conn_id"],
            port=int(data["port"]),
            base_cnf=config.get("base"),
            overrides=dict(config.get("overrides") or {}),
            basedir=data.get("basedir"),
            os_user=data.get("os_user", "mysql"),
            server=data.get("server"),
        )
        flavor = None
        if spec.server is not None:
            from mysqlbench import servers

            flavor = servers.get(spec.server).flavor  # an unknown id fails here, before anything starts
        for variable in spec.overrides:
            check_settable_variable(variable, flavor)
        return spec

    def save(self) -> Path:
        """Write this spec where ``load`` finds a target made on the command line."""
        path = paths.work_dir() / "targets" / self.name / "target.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({"name": self.name, "conn_id": self.conn_id, "port": self.port,
                                        "server": self.server, "basedir": self.basedir, "os_user": self.os_user,
                                        "config": {"base": self.base_cnf, "overrides": self.overrides}},
                                       sort_keys=False))
        return path


def server_key(hostname: str, port: int, datadir: str) -> str:
    """A server as it names itself: the host it runs on, its port and its datadir (MariaDB has no
    ``@@server_uuid``, and MySQL's is copied along with a cloned datadir; the three together tell
    any two servers apart, on one host or many)."""
    key = f"server:{str(hostname).lower()}:{int(port)}:{os.path.normpath(str(datadir))}"
    # the holds' and journals' key columns are 255 wide; a long datadir keeps its start and a digest
    return key if len(key) <= 200 else f"{key[:150]}#{hashlib.sha256(key.encode()).hexdigest()[:40]}"


class Instance:
    """One managed instance as its files say: paths, binaries, the admin connection over its
    socket, its process. Everything here reads; nothing starts, stops or changes it."""

    def __init__(self, spec: ManagedSpec, root: Path | None = None):
        self.spec = spec
        self.root = root or paths.work_dir() / "targets" / spec.name
        self.datadir = self.root / "data"
        self.socket = self.root / "mysqld.sock"
        self.pid_file = self.root / "mysqld.pid"
        self.cnf = self.root / "my.cnf"
        self.error_log = self.root / "error.log"
        # Its own temporary directory, beside the datadir on the same file system: the system-wide
        # /tmp is shared with every other process (a temporary table's file vanished under a cold
        # SF 1 MRR point there), and where temporary tables go changes what a query costs.
        self.tmpdir = self.root / "tmp"

    @functools.cached_property
    def binaries(self) -> Binaries:
        """The executables this instance runs: a catalog server's, or the system's MariaDB (or
        one under the spec's ``basedir``)."""
        from mysqlbench import servers

        if self.spec.server is not None:
            return servers.binaries(self.spec.server, basedir=self.spec.basedir)
        return Binaries("mariadb-system", "mariadb", "", Path(self.spec.basedir) if self.spec.basedir else None)

    @property
    def flavor(self) -> str:
        return self.binaries.flavor

    def binary(self, name: str) -> str:
        return self.binaries.path(name)

    @property
    def run_as_root(self) -> bool:
        return os.geteuid() == 0

    @property
    def admin_user(self) -> str:
        # MySQL's --initialize-insecure makes root@localhost with an empty password (reached over
        # the socket only); mariadb-install-db makes root and the OS user with unix_socket auth
        if self.flavor == "mysql":
            return "root"
        return "root" if self.run_as_root else getpass.getuser()

    def admin_connect(self):
        import MySQLdb

        try:
            return MySQLdb.connect(unix_socket=str(self.socket), user=self.admin_user,
                                   autocommit=True, connect_timeout=5)
        except MySQLdb.OperationalError as exc:
            raise TargetUnavailable(f"managed target {self.spec.name!r} does not answer: {exc.args[-1]}") from exc

    def _ping(self) -> bool:
        try:
            self.admin_connect().close()
            return True
        except TargetUnavailable:
            return False

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if _alive(pid) else None

    def is_running(self) -> bool:
        return self.pid() is not None and self._ping()

    def identity(self) -> str:
        """The server this instance is, as it reports itself once up (``server_key``)."""
        return server_key(socket.gethostname(), self.spec.port, str(self.datadir.resolve()))

    def resource(self) -> str:
        """This instance's name in the holds table (``targets.hold``)."""
        return f"target:{self.identity()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie left by a parent that has not reaped it is not a running server
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False
