"""Where a benchmark tool runs: this machine (the default) or a benchmark host reached over SSH.

A remote host is an Airflow SSH connection, opened with apache-airflow-providers-ssh's
``SSHHook`` (its key handling, proxies and host-key settings, as any SSH user configures them).
The host key is always checked: a connection that turns checking off, or allows a changed key, is
refused before anything runs. Commands are argv lists joined with ``shlex.join`` (every argument
quoted), never strings built from user text.

The provider's ``exec_ssh_client_command`` gives up after ``cmd_timeout`` seconds without output
(10 by default), which a file test or a quiet server restart easily exceeds; a remote command here
has one overall deadline and no silence limit. It runs in its own session on the host
(``setsid``), whose process group is what ``stop`` signals, as for a local tool.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shlex
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterator

from mysqlbench.errors import InvalidInput, MysqlbenchError

log = logging.getLogger(__name__)

_PGID = re.compile(r"^mysqlbench-pgid (\d+)$")


class HostError(MysqlbenchError):
    """The benchmark host could not be reached, refused us, or a command failed there."""


class _Host:
    name: str

    def start(self, argv: list[str], cwd: Path | None, secrets: list[str], on_line=None):
        raise NotImplementedError

    def run(self, argv: list[str], *, timeout: float, cwd: Path | None = None, secrets: list[str] = ()) -> str:
        """``argv`` to its end within ``timeout`` seconds; its output, or :class:`HostError`."""
        proc = self.start(argv, cwd, list(secrets))
        try:
            code = proc.wait(timeout)
        finally:
            proc.stop()
        if code != 0:
            raise HostError(f"{Path(argv[0]).name} on {self.name} exited with status {code}: {proc.output[-600:]}")
        return proc.output


class LocalHost(_Host):
    name = "local"

    def start(self, argv: list[str], cwd: Path | None, secrets: list[str],
              on_line: Callable[[str], None] | None = None):
        from mysqlbench.tools import ToolProcess

        return ToolProcess(argv, cwd or Path.cwd(), secrets, on_line).start()

    def read_text(self, path: str, timeout: float = 30) -> str:
        return Path(path).read_text()

    @contextlib.contextmanager
    def private_file(self, name: str, text: str) -> Iterator[str]:
        """A file only we can read (a tool's password), removed on exit; yields its path."""
        with tempfile.TemporaryDirectory(prefix="mysqlbench-") as directory:
            path = Path(directory) / name
            path.touch(mode=0o600)
            path.write_text(text)
            yield str(path)


class SshHost(_Host):
    """A benchmark host over SSH (an Airflow connection of type ssh)."""

    def __init__(self, ssh_conn_id: str):
        from airflow.providers.ssh.hooks.ssh import SSHHook

        self.ssh_conn_id = ssh_conn_id
        self.hook = SSHHook(ssh_conn_id=ssh_conn_id, cmd_timeout=None)
        if self.hook.no_host_key_check or self.hook.allow_host_key_change:
            raise InvalidInput(f"SSH connection {ssh_conn_id!r} turns host key checking off; a benchmark host's key "
                               "must be checked: give its host_key in the connection's extra (or known_hosts)")
        self.name = f"{self.hook.remote_host}:{self.hook.port}"
        self._client = None
        self._lock = threading.Lock()

    def client(self):
        import paramiko

        with self._lock:
            transport = self._client.get_transport() if self._client is not None else None
            if transport is None or not transport.is_active():
                try:
                    self._client = self.hook.get_conn()
                except paramiko.BadHostKeyException as exc:
                    raise HostError(f"the host key of {self.name} does not match the one configured for "
                                    f"{self.ssh_conn_id!r} (got {exc.key.get_name()}): refusing to connect") from None
                except paramiko.SSHException as exc:
                    raise HostError(f"cannot open SSH to {self.name} ({self.ssh_conn_id!r}): {exc}") from None
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def start(self, argv: list[str], cwd: Path | None, secrets: list[str], on_line=None) -> "RemoteProcess":
        return RemoteProcess(self, argv, cwd, secrets, on_line).start()

    def read_text(self, path: str, timeout: float = 30) -> str:
        return self.run(["cat", "--", path], timeout=timeout)

    @contextlib.contextmanager
    def private_file(self, name: str, text: str) -> Iterator[str]:
        """A file on the host only its SSH user can read (a tool's password), in a fresh
        ``mktemp -d`` directory, its text sent on the command's standard input (never in a command
        line or a log); removed on exit. Yields its path there."""
        script = 'umask 077 && d=$(mktemp -d /tmp/mysqlbench-XXXXXXXX) && cat > "$d/$1" && echo "$d"'
        directory = self._run_with_input(["sh", "-c", script, "private", name], text).strip()
        try:
            yield f"{directory}/{name}"
        finally:
            self.run(["rm", "-rf", "--", directory], timeout=30)

    def _run_with_input(self, argv: list[str], data: str, timeout: float = 60) -> str:
        channel = self.client().get_transport().open_session()
        try:
            channel.settimeout(timeout)
            channel.exec_command(shlex.join(argv))
            channel.sendall(data.encode())
            channel.shutdown_write()
            out = b""
            while chunk := channel.recv(65536):
                out += chunk
            code = channel.recv_exit_status()
        finally:
            channel.close()
        if code != 0:
            raise HostError(f"{argv[0]} on {self.name} exited with status {code}: {out.decode(errors='replace')[-300:]}")
        return out.decode()


class RemoteProcess:
    """A command on an SSH host, with the interface of a local :class:`~mysqlbench.tools.ToolProcess`:
    output read line by line (redacted), ``wait``, ``stop`` (its process group), ``poll``."""

    def __init__(self, host: SshHost, argv: list[str], cwd: Path | None, secrets: list[str], on_line=None):
        self.host, self.argv, self.cwd, self.on_line = host, list(argv), cwd, on_line
        self.secrets = [s for s in secrets if s]
        self.lines: list[str] = []
        self.pgid: int | None = None
        self._channel = None
        self._reader: threading.Thread | None = None
        self._code: int | None = None
        self.proc = self  # a local ToolProcess's callers ask proc.proc.poll()

    def command(self) -> str:
        inner = shlex.join(self.argv)
        if self.cwd is not None:
            inner = f"cd {shlex.quote(str(self.cwd))} && exec {inner}"
        else:
            inner = f"exec {inner}"
        # a new session: its id is the process group stop() signals; stderr joins stdout
        return shlex.join(["setsid", "sh", "-c", 'echo "mysqlbench-pgid $$"; ' + inner + " 2>&1"])

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def start(self) -> "RemoteProcess":
        transport = self.host.client().get_transport()
        channel = transport.open_session()
        channel.exec_command(self.command())
        channel.shutdown_write()
        self._channel = channel
        self._reader = threading.Thread(target=self._read, name="remote-tool-output", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        buffer = b""
        channel = self._channel
        while True:
            data = channel.recv(65536)
            if not data:
                break
            buffer += data
            while b"\n" in buffer:
                raw, buffer = buffer.split(b"\n", 1)
                self._line(raw.decode("utf-8", "replace"))
        if buffer:
            self._line(buffer.decode("utf-8", "replace"))
        self._code = channel.recv_exit_status()

    def _line(self, text: str) -> None:
        match = _PGID.match(text.strip())
        if match and self.pgid is None:
            self.pgid = int(match.group(1))
            return
        line = self.redact(text.rstrip("\r"))
        self.lines.append(line)
        if self.on_line is not None:
            self.on_line(line)

    def poll(self) -> int | None:
        return self._code if self._reader is not None and not self._reader.is_alive() else None

    def wait(self, timeout: float) -> int:
        assert self._reader is not None
        self._reader.join(timeout)
        if self._reader.is_alive():
            self.stop()
            raise HostError(f"{Path(self.argv[0]).name} on {self.host.name} did not finish within {timeout:.0f} s; "
                            "stopped it")
        return int(self._code if self._code is not None else -1)

    def stop(self) -> None:
        """Signal the remote process group (TERM, then KILL), then close the channel."""
        if self.poll() is not None or self._channel is None:
            return
        if self.pgid is not None:
            for sig in ("TERM", "KILL"):
                try:
                    self.host.run(["kill", f"-{sig}", "--", f"-{self.pgid}"], timeout=15)
                except HostError:
                    break  # gone already
                if self._reader is not None:
                    self._reader.join(5)
                if self.poll() is not None:
                    break
        self._channel.close()

    def cpu_seconds(self) -> None:
        return None  # not readable from here: the remote host's /proc

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


def host_of(target) -> LocalHost | SshHost:
    """The host a target's tools run on: its connection's ``ssh_conn_id`` extra, or this machine."""
    ssh_conn_id = getattr(target, "ssh_conn_id", None)
    return SshHost(ssh_conn_id) if ssh_conn_id else LocalHost()

