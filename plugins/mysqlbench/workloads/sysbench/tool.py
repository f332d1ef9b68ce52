"""Running Debian's sysbench 1.0.20 for the sysbench workloads: argv from validated parameters
only (every value is a checked number or an allow-listed word, and the process is started without
a shell), the password in a private config file, the output read line by line and parsed by
:mod:`mysqlbench.sysbench_output`.

The measured window is sysbench's own timed run: the process is started before the engine's
window, the window opens at ``Threads started!`` (sysbench starts its ``--time`` clock there; the
threads have connected by then) and closes when the process exits after its report. Starting
processes and connecting are outside it.
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mysqlbench.errors import InvalidInput, MysqlbenchError
from mysqlbench.sysbench_output import SysbenchOutputError, parse_intervals, parse_report

THREADS_STARTED = "Threads started!"
# Debian's sysbench 1.0.20 ships these OLTP scripts (/usr/share/sysbench). oltp_insert is left out:
# it grows the tables, so no two points would measure the same data.
OLTP_SCRIPTS = ("oltp_read_write", "oltp_read_only", "oltp_point_select", "oltp_write_only",
                "oltp_update_index", "oltp_update_non_index", "oltp_delete", "select_random_points",
                "select_random_ranges")
WRITE_SCRIPTS = ("oltp_read_write", "oltp_write_only", "oltp_update_index", "oltp_update_non_index", "oltp_delete")
FILEIO_MODES = ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw")


def sysbench_binary(remote: bool = False) -> str:
    """sysbench on this machine (checked), or on a benchmark host (found on its PATH there)."""
    if remote:
        return "sysbench"
    path = shutil.which("sysbench")
    if path is None:
        raise InvalidInput("sysbench is not installed on this host (Debian package sysbench; `make setup` installs it)")
    return path


@dataclass
class SysbenchRun:
    """One sysbench invocation: the test (cpu, fileio or a script name) and its options."""

    test: str
    options: dict[str, Any]
    command: str = "run"
    cwd: Path | None = None
    secrets: list[str] = field(default_factory=list, repr=False)
    config_file: Path | str | None = None   # holds --mysql-password
    remote: bool = False                    # run on a benchmark host over SSH

    def argv(self) -> list[str]:
        argv = [sysbench_binary(self.remote)]
        if self.config_file is not None:
            argv.append(f"--config-file={self.config_file}")
        argv.append(self.test)
        for name, value in self.options.items():
            if isinstance(value, bool):
                value = "on" if value else "off"
            text = str(value)
            if not text or any(c.isspace() for c in text) or text.startswith("-"):
                raise InvalidInput(f"sysbench option --{name}: {text!r} is not a plain value")
            argv.append(f"--{name}={text}")
        return [*argv, self.command]


@dataclass
class RunOutcome:
    report: dict[str, Any]
    intervals: list[dict[str, Any]]
    output: str
    window: Any              # the engine's WindowResult
    started_s: float         # wall-clock seconds from the process start to "Threads started!"


def run_measured(session, run: SysbenchRun, test: str, timeout_s: float, host=None) -> RunOutcome:
    """Start sysbench (on the target's benchmark host: this machine, or over SSH), open the
    engine's window at ``Threads started!``, close it when sysbench exits; parse its report (a
    killed or failed run raises, never gives zeros)."""
    from mysqlbench.targets.host import LocalHost

    started = threading.Event()

    def on_line(line: str) -> None:
        if line.strip() == THREADS_STARTED:
            started.set()

    host = host or LocalHost()
    begin = time.monotonic()
    proc = host.start(run.argv(), run.cwd, run.secrets, on_line)  # a local tool without one runs in ours
    try:
        while not started.wait(0.02):
            if session.window.aborted or proc.proc.poll() is not None or time.monotonic() - begin > 600:
                proc.stop()
                proc.wait(10)
                raise _failure(proc.output, "sysbench did not start its threads")
        started_s = time.monotonic() - begin

        def work() -> int:
            return proc.wait(timeout_s)

        local_pid = getattr(proc.proc, "pid", None) if isinstance(host, LocalHost) else None
        measured = session.window.run(work, kill=proc.stop, tool_pid=local_pid)
    finally:
        proc.stop()
    if measured.error is not None:
        raise measured.error
    if measured.value != 0:
        raise _failure(proc.output, f"sysbench exited with status {measured.value}")
    return RunOutcome(report=parse_report(proc.output, test), intervals=parse_intervals(proc.output),
                      output=proc.output, window=measured, started_s=started_s)


def run_untimed(run: SysbenchRun, timeout_s: float, host=None) -> str:
    """prepare, cleanup, or a warm-up run: to the end, outside any window; its output, or an error
    with sysbench's own FATAL line."""
    from mysqlbench.targets.host import LocalHost

    host = host or LocalHost()
    proc = host.start(run.argv(), run.cwd, run.secrets)
    try:
        code = proc.wait(timeout_s)
    finally:
        proc.stop()
    if code != 0:
        raise _failure(proc.output, f"sysbench {run.test} {run.command} exited with status {code}")
    return proc.output


def _failure(output: str, what: str) -> MysqlbenchError:
    fatal = [line.strip() for line in output.splitlines() if "FATAL" in line or "error" in line.lower()]
    return SysbenchOutputError(f"{what}: {fatal[0] if fatal else output[-400:]}")
