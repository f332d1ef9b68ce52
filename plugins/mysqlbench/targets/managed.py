"""A MariaDB (or MySQL) instance this project runs itself: its own datadir under the work
directory, a my.cnf rendered from include/configs, its own port and socket, started from PATH or a
configured basedir as an unprivileged OS user. Start, stop, restart with new settings, health."""

from __future__ import annotations

import getpass
import logging
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mysqlbench import paths
from mysqlbench.errors import InvalidInput, TargetUnavailable
from mysqlbench.identifiers import check_name
from mysqlbench.knobs import check_engine_variable, check_settable_variable, render_cnf_value
from mysqlbench.targets.connection import CONTROL_MANAGED, TargetConnection

log = logging.getLogger(__name__)

BENCH_USER = "mysqlbench"
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 300


@dataclass(frozen=True)
class ManagedSpec:
    """A managed instance as configured in ``include/configs/targets/<name>.yaml``."""

    name: str
    conn_id: str
    port: int
    base_cnf: str = "mariadb/base.cnf"
    overrides: dict[str, Any] = field(default_factory=dict)
    basedir: str | None = None
    os_user: str = "mysql"

    @classmethod
    def load(cls, name: str) -> "ManagedSpec":
        check_name(name, "managed target name")
        path = paths.CONFIG_DIR / "targets" / f"{name}.yaml"
        if not path.exists():
            raise InvalidInput(f"no managed target {name!r}: {path} does not exist")
        data = yaml.safe_load(path.read_text()) or {}
        config = data.get("config") or {}
        spec = cls(
            name=data.get("name", name),
            conn_id=data["conn_id"],
            port=int(data["port"]),
            base_cnf=config.get("base", cls.base_cnf),
            overrides=dict(config.get("overrides") or {}),
            basedir=data.get("basedir"),
            os_user=data.get("os_user", "mysql"),
        )
        for variable in spec.overrides:
            check_settable_variable(variable)
        return spec


class ManagedServer:
    """Control of one managed instance. All state lives in files under its directory, so any
    process on this host (a CLI, an Airflow task, a test) can pick it up."""

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

    # -- binaries and users -------------------------------------------------------------------
    def binary(self, name: str) -> str:
        if self.spec.basedir:
            for sub in ("bin", "sbin", "scripts"):
                candidate = Path(self.spec.basedir) / sub / name
                if candidate.exists():
                    return str(candidate)
            raise TargetUnavailable(f"{name} not found under basedir {self.spec.basedir}")
        found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
        if not found:
            raise TargetUnavailable(f"{name} not found on PATH; install mariadb-server or set basedir")
        return found

    @property
    def run_as_root(self) -> bool:
        return os.geteuid() == 0

    @property
    def admin_user(self) -> str:
        # mariadb-install-db creates this account with unix_socket authentication
        return "root" if self.run_as_root else getpass.getuser()

    # -- lifecycle ----------------------------------------------------------------------------
    def initialize(self) -> None:
        """Create the datadir once; a second call is a no-op."""
        if (self.datadir / "mysql").is_dir():
            return
        self.root.mkdir(parents=True, exist_ok=True)
        cmd = [
            self.binary("mariadb-install-db"),
            "--no-defaults",
            f"--datadir={self.datadir}",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
        ]
        if self.spec.basedir:
            cmd.append(f"--basedir={self.spec.basedir}")
        if self.run_as_root:
            self._check_reachable()
            self._chown(self.root)
            cmd.append(f"--user={self.spec.os_user}")
        log.info("initializing datadir %s", self.datadir)
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise TargetUnavailable(f"mariadb-install-db failed: {done.stderr[-2000:]}")

    def render_config(self, overrides: dict[str, Any] | None = None) -> str:
        merged = {**self.spec.overrides, **(overrides or {})}
        lines = [(paths.CONFIG_DIR / self.spec.base_cnf).read_text().rstrip(), "",
                 "# managed instance paths (mysqlbench.targets.managed)",
                 f"datadir = {self.datadir}", f"socket = {self.socket}", f"port = {self.spec.port}",
                 f"pid-file = {self.pid_file}", f"log-error = {self.error_log}", f"tmpdir = {self.tmpdir}"]
        if self.run_as_root:
            lines.append(f"user = {self.spec.os_user}")
        if merged:
            lines.append("# overrides")
            for variable, value in sorted(merged.items()):
                check_engine_variable(variable)  # the spec's (checked at load) or a point's restart settings
                lines.append(f"{variable} = {render_cnf_value(value)}")
        return "\n".join(lines) + "\n"

    def resource(self) -> str:
        """This instance's name in the holds table (``targets.hold``)."""
        import socket

        return f"target:managed:{socket.gethostname()}:{self.datadir}"

    def _refuse_if_held(self, holder: str | None) -> None:
        """Starting while another task holds the instance would undo what it set up (a point
        restarting with its own settings, found down by someone else and started on the base)."""
        from mysqlbench.results.store import ResultsStore
        from mysqlbench.targets.hold import holder_of

        current = holder_of(ResultsStore.from_airflow(), self.resource())
        if current is not None and current["holder"] != holder:
            raise TargetUnavailable(f"managed target {self.spec.name!r} is held by {current}; not starting it "
                                    "under them")

    def start(self, overrides: dict[str, Any] | None = None, holder: str | None = None) -> None:
        """Start with the base config plus ``overrides``; a running instance is left alone. Refused
        while another task holds the instance (``holder`` is the caller's own hold, if any)."""
        self.initialize()
        if self.is_running():
            return
        self._refuse_if_held(holder)
        self.cnf.write_text(self.render_config(overrides))
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        if self.run_as_root:
            self._chown(self.root)
        cmd = [self.binary("mariadbd"), f"--defaults-file={self.cnf}"]
        if self.spec.basedir:
            cmd.append(f"--basedir={self.spec.basedir}")
        log.info("starting managed target %s on port %s", self.spec.name, self.spec.port)
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise TargetUnavailable(f"mariadbd exited with {proc.returncode}: {self.error_tail()}")
            if self._ping():
                return
            time.sleep(0.2)
        raise TargetUnavailable(f"mariadbd did not answer within {START_TIMEOUT_S} s: {self.error_tail()}")

    def stop(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        try:
            conn = self.admin_connect()
            with conn.cursor() as cur:
                cur.execute("SHUTDOWN")
            conn.close()
        except Exception:  # not answering: fall back to the signal mariadbd handles as shutdown
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            if not _alive(pid):
                return
            time.sleep(0.2)
        raise TargetUnavailable(f"mariadbd (pid {pid}) did not stop within {STOP_TIMEOUT_S} s")

    def restart(self, overrides: dict[str, Any] | None = None, holder: str | None = None) -> None:
        self._refuse_if_held(holder)
        self.stop()
        self.start(overrides, holder=holder)

    def is_running(self) -> bool:
        return self.pid() is not None and self._ping()

    def health(self) -> dict[str, Any]:
        conn = self.admin_connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT @@version, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                            "WHERE VARIABLE_NAME = 'UPTIME'")
                version, uptime = cur.fetchone()
        finally:
            conn.close()
        return {"name": self.spec.name, "port": self.spec.port, "version": version,
                "uptime_s": int(uptime), "datadir": str(self.datadir)}

    # -- accounts and connections ----------------------------------------------------------------
    def admin_connect(self):
        import MySQLdb

        try:
            return MySQLdb.connect(unix_socket=str(self.socket), user=self.admin_user,
                                   autocommit=True, connect_timeout=5)
        except MySQLdb.OperationalError as exc:
            raise TargetUnavailable(f"managed target {self.spec.name!r} does not answer: {exc.args[-1]}") from exc

    def ensure_benchmark_user(self, password: str | None = None) -> str:
        """Make sure the benchmark user exists and logs in with ``password``; without one (or
        when it no longer works), set a new random password. Returns the password in force."""
        if password and self._login_works(password):
            return password
        password = secrets.token_urlsafe(24)
        self.set_benchmark_password(password)
        return password

    def set_benchmark_password(self, password: str) -> None:
        """Create or update the benchmark user with ``password``. The statements carry the password,
        so this session logs nothing: with sql_log_off the general log never sees them (whatever
        general_log and log_output say), and the slow log's 10 s threshold is far above them."""
        conn = self.admin_connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION sql_log_off = 1")
                for host in ("localhost", "127.0.0.1"):
                    cur.execute("CREATE USER IF NOT EXISTS %s@%s IDENTIFIED BY %s", (BENCH_USER, host, password))
                    cur.execute("ALTER USER %s@%s IDENTIFIED BY %s", (BENCH_USER, host, password))
                    cur.execute("GRANT ALL PRIVILEGES ON *.* TO %s@%s", (BENCH_USER, host))
        finally:
            conn.close()

    def connection(self, password: str, conn_id: str | None = None) -> TargetConnection:
        return TargetConnection.from_fields(
            conn_id or self.spec.conn_id, host="127.0.0.1", port=self.spec.port, login=BENCH_USER,
            password=password, extra=self.connection_extra(),
        )

    def connection_extra(self) -> dict[str, Any]:
        # no benchmark_target here: the mark of a managed connection is the proof that it reaches
        # this instance (TargetConnection.managed_proven), so copied extras mark nothing
        return {"control": CONTROL_MANAGED, "managed_target": self.spec.name}

    # -- internals ----------------------------------------------------------------------------
    def error_tail(self, lines: int = 15) -> str:
        if not self.error_log.exists():
            return "(no error log)"
        return " | ".join(self.error_log.read_text(errors="replace").splitlines()[-lines:])

    def _login_works(self, password: str) -> bool:
        try:
            self.connection(password).connect().close()
            return True
        except TargetUnavailable:
            return False

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

    def _check_reachable(self) -> None:
        """The server runs as its OS user, who must be able to walk down to its directory."""
        for parent in self.root.resolve().parents:
            if not os.stat(parent).st_mode & 0o001:
                raise TargetUnavailable(
                    f"the {self.spec.os_user} OS user cannot reach {self.root}: {parent} is not searchable by "
                    f"others (mode {oct(os.stat(parent).st_mode & 0o777)}); put the work directory elsewhere "
                    "(MYSQLBENCH_WORK_DIR) or allow it (chmod o+x)")

    def _chown(self, top: Path) -> None:
        entry = pwd.getpwnam(self.spec.os_user)
        for directory, _, files in os.walk(top):
            os.chown(directory, entry.pw_uid, entry.pw_gid)
            for name in files:
                os.chown(os.path.join(directory, name), entry.pw_uid, entry.pw_gid)


def ensure_running(target: TargetConnection) -> None:
    """A connection naming a managed instance: start that instance if it is down (after a reboot,
    say). Starting our own instance on its own datadir is safe whatever the connection points at;
    whether the connection really reaches it is proven afterwards (``managed_proven``)."""
    if target.control != CONTROL_MANAGED:
        return
    server = ManagedServer(ManagedSpec.load(target.managed_target))
    if server.is_running():
        return
    from mysqlbench.targets.lock import exclusive

    with exclusive(target, "start a managed target that was down") as lock:  # waits for a holder mid-restart
        if not server.is_running():
            log.info("managed target %s is not running; starting it", target.managed_target)
            server.start(holder=lock.token)


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


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
