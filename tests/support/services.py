"""PostgreSQL and Redis started by the tests themselves, each on its own port and in its own
directory, from Debian's binaries (bin/setup installs them): the CeleryExecutor test's metadata
database, results store and broker, never the services that may happen to run on the machine.
Both require a password; the passwords are random per start."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, process: subprocess.Popen, what: str, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{what} is not listening on {port} after {timeout}s: {log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def stop_groups(procs: list[subprocess.Popen], grace: float = 60) -> None:
    """Stop processes started with ``start_new_session`` and everything they started (an Airflow
    service's workers and task runners): SIGTERM to each group, then SIGKILL to a group still there
    after ``grace`` seconds."""
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def postgres_bin() -> Path:
    """Debian's PostgreSQL server binaries (postgresql-15 on Debian 12), the newest installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[4]))
    if not found:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql (bin/setup installs postgresql)")
    return Path(found[-1]).parent


@dataclass
class Postgres:
    """A private PostgreSQL cluster: superuser ``admin``, TCP on 127.0.0.1 only, scram passwords."""
    root: Path
    port: int
    password: str
    process: subprocess.Popen

    def url(self, database: str, user: str = "admin", password: str | None = None,
            driver: str = "postgresql+psycopg2") -> str:
        return f"{driver}://{user}:{password or self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, owner: str, password: str) -> None:
        """A role with a password and a database it owns (names are the test's own constants)."""
        import psycopg2
        from psycopg2 import sql

        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user="admin", password=self.password,
                                dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD %s").format(sql.Identifier(owner)), [password])
            cur.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(owner)))
        conn.close()

    def stop(self) -> None:
        _stop(self.process)


def start_postgres(root: Path) -> Postgres:
    """initdb and start a cluster under ``root`` as Debian's ``postgres`` OS user (PostgreSQL
    refuses to run as root); no Unix socket, so nothing collides with a system cluster."""
    binaries = postgres_bin()
    user = pwd.getpwnam("postgres")
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    data, log = root / "data", root / "postgres.log"
    password = secrets.token_urlsafe(16)
    pwfile = root / "pwfile"
    pwfile.write_text(password + "\n")
    for path in (root, pwfile):
        os.chown(path, user.pw_uid, user.pw_gid)
    as_postgres = ["runuser", "-u", "postgres", "--"]
    done = subprocess.run([*as_postgres, str(binaries / "initdb"), "-D", str(data), "-U", "admin",
                           f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8", "--locale=C"],
                          capture_output=True, text=True)
    pwfile.unlink()
    if done.returncode:  # e.g. a parent directory the postgres user cannot traverse
        raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr[-2000:]}")
    port = free_port()
    log.touch()
    os.chown(log, user.pw_uid, user.pw_gid)
    process = subprocess.Popen([*as_postgres, str(binaries / "postgres"), "-D", str(data), "-p", str(port),
                                "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                                "-c", "max_connections=200", "-c", "fsync=off"],
                               stdout=open(log, "a"), stderr=subprocess.STDOUT)
    server = Postgres(root, port, password, process)
    _wait_port(port, process, "postgres", log)
    deadline = time.monotonic() + 60
    while True:  # listening comes before accepting connections (recovery at start)
        probe = subprocess.run([str(binaries / "pg_isready"), "-h", "127.0.0.1", "-p", str(port)], capture_output=True)
        if probe.returncode == 0:
            return server
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"postgres not ready: {log.read_text()[-2000:]}")
        time.sleep(0.3)


@dataclass
class Redis:
    port: int
    password: str
    process: subprocess.Popen

    def url(self, db: int = 0) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/{db}"

    def stop(self) -> None:
        _stop(self.process)


def start_redis(root: Path) -> Redis:
    """redis-server on its own port, 127.0.0.1 only, a password, nothing persisted."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    root.mkdir(parents=True, exist_ok=True)
    port, password = free_port(), secrets.token_urlsafe(16)
    config = root / "redis.conf"  # the password in a file, not on a command line others can read
    config.write_text(f"port {port}\nbind 127.0.0.1\nrequirepass {password}\nsave \"\"\nappendonly no\n"
                      f"dir {root}\nlogfile {root / 'redis.log'}\n")
    os.chmod(config, 0o600)
    process = subprocess.Popen([binary, str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    _wait_port(port, process, "redis-server", root / "redis.log")
    return Redis(port, password, process)
