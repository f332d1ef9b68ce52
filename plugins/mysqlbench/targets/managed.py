"""A MariaDB (or MySQL) instance this project runs itself: its own datadir under the work
directory, a my.cnf rendered from include/configs, its own port and socket, started from PATH or a
configured basedir as an unprivileged OS user. Start, stop, restart with new settings, health."""

from __future__ import annotations

import json
import logging
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from mysqlbench import paths
from mysqlbench.errors import InvalidInput, MysqlbenchError, TargetUnavailable
from mysqlbench.knobs import check_engine_variable, render_cnf_value
from mysqlbench.targets.connection import CONTROL_MANAGED, TargetConnection
from mysqlbench.targets.instance import Instance, ManagedSpec, _alive  # noqa: F401 - ManagedSpec: where its users import it

log = logging.getLogger(__name__)

BENCH_USER = "mysqlbench"
START_TIMEOUT_S = 120
# how long a restart waits for another client's statement to end before refusing
FOREIGN_WAIT_S = 120.0
STOP_TIMEOUT_S = 300


class ManagedServer(Instance):
    """Control of one managed instance. All state lives in files under its directory, so any
    process on this host (a CLI, an Airflow task, a test) can pick it up."""

    # -- binaries and users -------------------------------------------------------------------

    @property
    def server_record(self) -> Path:
        return self.root / "server.json"

    # -- lifecycle ----------------------------------------------------------------------------
    def initialize(self) -> None:
        """Create the datadir once; a second call is a no-op. A datadir another server made is
        refused (no silent upgrade or downgrade); a failed initialisation leaves no datadir."""
        if (self.datadir / "mysql").is_dir():
            self._check_same_server()
            return
        self.root.mkdir(parents=True, exist_ok=True)
        # the bootstrap server's temporary tables go to the instance's own tmpdir: in the shared /tmp
        # two initialisations at once collide on their names ("Unknown table 'mysql.tmp_user_sys'")
        self.tmpdir.mkdir(exist_ok=True)
        if self.run_as_root:
            self._check_reachable()
        b = self.binaries
        if self.flavor == "mysql":
            cmd = b.command("mysqld", "--no-defaults", "--initialize-insecure", f"--datadir={self.datadir}",
                            f"--tmpdir={self.tmpdir}")
            if b.basedir is not None:
                cmd.append(f"--basedir={b.basedir}")
            if b.share_dir is not None:
                cmd.append(f"--lc-messages-dir={b.share_dir}")
        else:
            cmd = b.install_db("--no-defaults", f"--datadir={self.datadir}", f"--tmpdir={self.tmpdir}",
                               "--auth-root-authentication-method=socket", "--skip-test-db")
        if self.run_as_root:
            self._chown(self.root)
            cmd.append(f"--user={self.spec.os_user}")
        log.info("initializing datadir %s for %s %s", self.datadir, b.server_id, b.version)
        done = subprocess.run(cmd, capture_output=True, text=True, env=b.env())
        if done.returncode != 0:
            shutil.rmtree(self.datadir, ignore_errors=True)
            raise TargetUnavailable(f"initializing {self.datadir} failed ({b.server_id}): "
                                    f"{(done.stdout + done.stderr)[-2000:]}")
        self.server_record.write_text(json.dumps({"server": b.server_id, "flavor": b.flavor, "version": b.version}))

    def _check_same_server(self) -> None:
        if not self.server_record.exists():
            return  # made before servers were recorded: the system MariaDB
        made = json.loads(self.server_record.read_text())
        if made["server"] != self.binaries.server_id:
            raise InvalidInput(f"managed target {self.spec.name!r}: its datadir was made by {made['server']} "
                               f"{made['version']}, not {self.binaries.server_id}; use another target name, or stop "
                               "it and delete its directory to start over")

    def _check_port_free(self) -> None:
        import socket

        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", self.spec.port))
            except OSError as exc:
                raise TargetUnavailable(f"port {self.spec.port} of managed target {self.spec.name!r} is in use by "
                                        f"another process ({exc.strerror}); pick another port") from exc

    def render_config(self, overrides: dict[str, Any] | None = None) -> str:
        merged = {**self.spec.overrides, **(overrides or {})}
        base = self.spec.base_cnf or f"{self.flavor}/base.cnf"
        lines = [(paths.CONFIG_DIR / base).read_text().rstrip(), "",
                 "# managed instance paths (mysqlbench.targets.managed)",
                 f"datadir = {self.datadir}", f"socket = {self.socket}", f"port = {self.spec.port}",
                 f"pid-file = {self.pid_file}", f"log-error = {self.error_log}", f"tmpdir = {self.tmpdir}"]
        b = self.binaries
        if b.basedir is not None:
            lines.append(f"basedir = {b.basedir}")
        if b.share_dir is not None and self.flavor == "mysql":
            lines.append(f"lc-messages-dir = {b.share_dir}")
        if self.flavor == "mysql":  # LOAD DATA INFILE (server side) only from the instance's own directory
            lines.append(f"secure-file-priv = {self.root / 'files'}")
        if self.run_as_root:
            lines.append(f"user = {self.spec.os_user}")
        if merged:
            lines.append("# overrides")
            for variable, value in sorted(merged.items()):
                check_engine_variable(variable)  # the spec's (checked at load) or a point's restart settings
                lines.append(f"{variable} = {render_cnf_value(value)}")
        return "\n".join(lines) + "\n"

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
        while another task holds the instance (``holder`` is the caller's own hold, if any). Bad
        input (an unknown server, a port in use, a bad override) fails before anything is made,
        and a first start that fails removes the datadir it initialised."""
        if self.is_running():
            return
        self._refuse_if_held(holder)
        config = self.render_config(overrides)
        self._check_port_free()
        fresh = not (self.datadir / "mysql").is_dir()
        self.initialize()
        try:
            self._launch(config)
        except TargetUnavailable:
            if fresh:
                shutil.rmtree(self.datadir, ignore_errors=True)
                self.server_record.unlink(missing_ok=True)
            raise

    def _launch(self, config: str) -> None:
        self.cnf.write_text(config)
        for directory in (self.tmpdir, self.root / "files"):
            directory.mkdir(parents=True, exist_ok=True)
        if self.run_as_root:
            self._chown(self.root)
        b = self.binaries
        cmd = b.command(b.server_binary, f"--defaults-file={self.cnf}")
        log.info("starting managed target %s (%s %s) on port %s", self.spec.name, b.server_id, b.version,
                 self.spec.port)
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, env=b.env())
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise TargetUnavailable(f"{b.server_binary} exited with {proc.returncode}: {self.error_tail()}")
            if self._ping():
                return
            time.sleep(0.2)
        raise TargetUnavailable(f"{b.server_binary} did not answer within {START_TIMEOUT_S} s: {self.error_tail()}")

    def stop(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        try:
            conn = self.admin_connect()
            with conn.cursor() as cur:
                cur.execute("SHUTDOWN")
            conn.close()
        except Exception:  # not answering: fall back to the signal the server handles as shutdown
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            if not _alive(pid):
                return
            time.sleep(0.2)
        raise TargetUnavailable(f"the server (pid {pid}) did not stop within {STOP_TIMEOUT_S} s")

    def restart(self, overrides: dict[str, Any] | None = None, holder: str | None = None,
                wait_s: float | None = None) -> None:
        """Stop and start with the base config plus ``overrides``. Another client's statement
        running on the instance is waited for (``FOREIGN_WAIT_S``), and one still running after
        that makes the restart refuse (``sessions.ServerBusy``, naming it) rather than cut it
        short; idle sessions it disconnects are named in the log."""
        from mysqlbench.targets import sessions

        self._refuse_if_held(holder)
        if self.is_running():
            conn = self.admin_connect()
            try:
                sessions.wait_until_idle(conn, FOREIGN_WAIT_S if wait_s is None else wait_s,
                                         f"restarting managed target {self.spec.name!r}")
                idle = sessions.idle_sessions(conn)
            finally:
                conn.close()
            if idle:
                log.warning("restarting managed target %s disconnects %d idle session(s): %s", self.spec.name,
                            len(idle), idle)
        self.stop()
        self.start(overrides, holder=holder)

    # -- datadir snapshots ----------------------------------------------------------------------
    SNAPSHOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")

    def snapshot_dir(self, name: str) -> Path:
        if not self.SNAPSHOT_NAME.fullmatch(name):
            raise InvalidInput(f"snapshot name {name!r} is not allowed (letters, digits, '_', '.', '-')")
        return self.root / "snapshots" / name

    def has_snapshot(self, name: str) -> bool:
        return (self.snapshot_dir(name) / "mysql").is_dir()

    def snapshot(self, name: str, holder: str | None = None) -> dict[str, Any]:
        """A copy of the stopped server's whole datadir as ``name`` (a workload's dataset id), so
        every point of a study that changes its data can start from the same bytes; the server is
        started again on its base config. A clean shutdown makes the copy self-contained."""
        target = self.snapshot_dir(name)
        self._refuse_if_held(holder)
        started = time.monotonic()
        self.stop()
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        try:
            _copy_tree(self.datadir, partial)
            shutil.rmtree(target, ignore_errors=True)
            partial.rename(target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
            self.start(holder=holder)
        size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
        log.info("snapshot %s of %s: %.0f MB in %.1f s", name, self.spec.name, size / 1e6, time.monotonic() - started)
        return {"snapshot": name, "bytes": size, "seconds": round(time.monotonic() - started, 3)}

    def restore(self, name: str, holder: str | None = None) -> dict[str, Any]:
        """Stop the server and put snapshot ``name`` back as its datadir; the caller starts it
        (with the settings it wants)."""
        source = self.snapshot_dir(name)
        if not self.has_snapshot(name):
            raise MysqlbenchError(f"managed target {self.spec.name!r} has no snapshot {name!r}")
        self._refuse_if_held(holder)
        started = time.monotonic()
        self.stop()
        fresh = self.datadir.with_name(self.datadir.name + ".restoring")
        shutil.rmtree(fresh, ignore_errors=True)
        _copy_tree(source, fresh)
        shutil.rmtree(self.datadir)
        fresh.rename(self.datadir)
        return {"snapshot": name, "seconds": round(time.monotonic() - started, 3)}

    def health(self) -> dict[str, Any]:
        conn = self.admin_connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT @@version")
                version = cur.fetchone()[0]
                cur.execute("SHOW GLOBAL STATUS LIKE 'Uptime'")  # MySQL has no information_schema.GLOBAL_STATUS
                uptime = cur.fetchone()[1]
        finally:
            conn.close()
        return {"name": self.spec.name, "port": self.spec.port, "version": version,
                "uptime_s": int(uptime), "datadir": str(self.datadir)}

    # -- accounts and connections ----------------------------------------------------------------

    def ensure_benchmark_user(self, password: str | None = None) -> str:
        """Make sure the benchmark user exists and logs in with ``password``; without one (or
        when it no longer works), set a new random password. Returns the password in force."""
        if password and self.login_works(password):
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

    def login_works(self, password: str) -> bool:
        try:
            self.connection(password).connect().close()
            return True
        except TargetUnavailable:
            return False

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


def check_host_bounds(target: TargetConnection, values: dict[str, list[object]]) -> None:
    """A managed target's sizes (``knobs.check_host_bounds``) against this host's memory and the
    free disk under its datadir, before anything starts. Other targets' hosts are not known here."""
    if target.control != "managed" or not target.managed_target:
        return
    from mysqlbench import knobs

    server = ManagedServer(ManagedSpec.load(target.managed_target))
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    free = shutil.disk_usage(next(p for p in (server.datadir, *server.datadir.parents) if p.exists())).free
    knobs.check_host_bounds(values, memory, free, f"{target.conn_id}'s host")


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _copy_tree(source: Path, destination: Path) -> None:
    """``cp -a`` (owners and modes kept; reflinks where the file system has them)."""
    done = subprocess.run(["cp", "-a", "--reflink=auto", "--", str(source), str(destination)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise MysqlbenchError(f"copying {source} to {destination} failed: {done.stderr.strip()}")
