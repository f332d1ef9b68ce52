"""Running a benchmark tool as a child process: its own process group (ours to stop on a kill),
its output read line by line and redacted, and an environment without Airflow's and mysqlbench's
settings (an ``AIRFLOW_CONN_*`` variable holds a connection's password)."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Callable

from mysqlbench.errors import MysqlbenchError


def _tool_environment() -> dict[str, str]:
    """The environment a tool runs with: ours without Airflow's and mysqlbench's settings (an
    ``AIRFLOW_CONN_*`` variable holds a connection's password; a tool has no use for any of them)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "MYSQLBENCH_"))}


class ToolProcess:
    """One run of a tool (a TPC-C peer, sysbench, mariadb-slap): its own process group, stdout
    read line by line (redacted), ``on_line`` called for every line so the caller can mark the
    window's edges as the tool reports them."""

    def __init__(self, argv: list[str], cwd: Path, secrets: list[str], on_line: Callable[[str], None] | None = None,
                 env: dict[str, str] | None = None):
        self.argv, self.cwd, self.secrets, self.on_line, self.env = argv, cwd, [s for s in secrets if s], on_line, env
        self.lines: list[str] = []
        self.proc: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def start(self) -> "ToolProcess":
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1, start_new_session=True,
                                     env={**_tool_environment(), **(self.env or {})})
        self._reader = threading.Thread(target=self._read, name="tool-output", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = self.redact(raw.rstrip("\n"))
            self.lines.append(line)
            if self.on_line is not None:
                self.on_line(line)

    def cpu_seconds(self) -> float | None:
        """User + system CPU of the tool's process so far (None once it has exited)."""
        from mysqlbench.ossampler import process_cpu_seconds

        return process_cpu_seconds(self.proc.pid) if self.proc is not None else None

    def stop(self) -> None:
        """Stop the whole process group (a kill of the point, or the end of a tool that runs on)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise MysqlbenchError(f"{Path(self.argv[0]).name} did not finish within {timeout:.0f} s; stopped it"
                                  ) from None
        if self._reader is not None:
            self._reader.join(10)
        return code

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


class SysbenchSecret:
    """A private sysbench config file holding the password (removed on exit)."""

    def __init__(self, password: str):
        self.password = password

    def __enter__(self) -> Path:
        self._dir = tempfile.TemporaryDirectory(prefix="mysqlbench-peer-")
        path = Path(self._dir.name) / "sysbench.cfg"
        path.touch(mode=0o600)
        path.write_text(f"mysql-password={self.password}\n")
        return path

    def __exit__(self, *exc) -> None:
        self._dir.cleanup()
