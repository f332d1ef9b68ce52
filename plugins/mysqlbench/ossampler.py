"""Once-a-second OS samples during a measured window, from /proc (the numbers sar and iostat
report): CPU user/system/iowait, disk read/write bytes and operations, memory in use and the page
cache, context switches, and CPU used by processes other than the server under test and this one
(a noise signal)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _stat() -> tuple[list[int], int]:
    """The CPU line's ticks and the context switches since boot, from /proc/stat."""
    cpu, ctxt = [], 0
    with open("/proc/stat") as stat:
        for line in stat:
            if line.startswith("cpu "):
                cpu = [int(v) for v in line.split()[1:]]
            elif line.startswith("ctxt "):
                ctxt = int(line.split()[1])
    return cpu, ctxt


def block_devices() -> list[str]:
    """Whole block devices (/sys/block lists no partitions, so nothing counts twice), without loop
    and ram devices."""
    return sorted(name for name in os.listdir("/sys/block") if not name.startswith(("loop", "ram", "zram")))


def _disks() -> tuple[int, int, int, int]:
    """Bytes read and written, and read and write operations completed, by whole block devices."""
    devices = set(block_devices())
    read = written = reads = writes = 0
    for line in Path("/proc/diskstats").read_text().splitlines():
        parts = line.split()
        if parts[2] in devices:
            reads += int(parts[3])
            read += int(parts[5])
            writes += int(parts[7])
            written += int(parts[9])
    return read * 512, written * 512, reads, writes


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes (empty where unreadable)."""
    out = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                out[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    except OSError:
        pass
    return out


def _stat_ticks(pid: int | None) -> int | None:
    """User + system clock ticks of process ``pid`` (from /proc/PID/stat); None if it is gone."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(") ", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError):
        return None


def _process_ticks(pid: int | None) -> int:
    return _stat_ticks(pid) or 0


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` so far; None once it is gone."""
    ticks = _stat_ticks(pid)
    return None if ticks is None else ticks / os.sysconf("SC_CLK_TCK")


@dataclass
class OsSampler:
    """Use as a context manager around the measured work only."""

    server_pid: int | None = None
    interval_s: float = 1.0
    samples: list[dict[str, Any]] = field(default_factory=list)
    # a benchmark tool's process (sysbench, a TPC-C peer, mariadb-slap), or a callable giving it once
    # started: its CPU is the run's, not other processes' noise
    tool_pid: Any = None

    def __enter__(self) -> "OsSampler":
        self._stop = threading.Event()
        self._tool_ticks = 0
        self._last = self._read()
        self._first = self._last
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()  # the partial last interval

    def _read(self) -> dict[str, Any]:
        read_b, write_b, reads, writes = _disks()
        cpu, ctxt = _stat()
        memory = meminfo()
        return {"t": time.monotonic(), "cpu": cpu, "ctxt": ctxt, "read": read_b, "write": write_b, "reads": reads,
                "writes": writes, "mem_total": memory.get("MemTotal"), "mem_available": memory.get("MemAvailable"),
                "cached": memory.get("Cached"),
                "server": _process_ticks(self.server_pid) + self._tool(), "self": _process_ticks(os.getpid())}

    def _tool(self) -> int:
        """The tool's CPU ticks so far; the last reading once it has exited and been reaped (its
        ticks are not lost to the "other" share)."""
        ticks = _stat_ticks(self.tool_pid() if callable(self.tool_pid) else self.tool_pid)
        if ticks is not None:
            self._tool_ticks = ticks
        return self._tool_ticks

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        now = self._read()
        self.samples.append(_delta(self._last, now))
        self._last = now

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {}
        whole = _delta(self._first, self._last)
        return {**whole, "samples": len(self.samples)}


def _delta(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    cpu = [y - x for x, y in zip(a["cpu"], b["cpu"], strict=True)]
    total = sum(cpu) or 1
    user, nice, system, idle, iowait = cpu[:5]
    busy = total - idle - iowait
    ours = (b["server"] - a["server"]) + (b["self"] - a["self"])
    seconds = max(b["t"] - a["t"], 1e-9)
    return {
        "seconds": round(seconds, 3),
        "cpu_user_pct": round(100 * (user + nice) / total, 1),
        "cpu_system_pct": round(100 * system / total, 1),
        "cpu_iowait_pct": round(100 * iowait / total, 1),
        "disk_read_bytes": b["read"] - a["read"],
        "disk_write_bytes": b["write"] - a["write"],
        "disk_read_ops": b["reads"] - a["reads"],
        "disk_write_ops": b["writes"] - a["writes"],
        "context_switches_per_s": round((b["ctxt"] - a["ctxt"]) / seconds, 1),
        # levels at the interval's end, not deltas
        "mem_used_bytes": b["mem_total"] - b["mem_available"] if b["mem_total"] is not None
        and b["mem_available"] is not None else None,
        "page_cache_bytes": b["cached"],
        # CPU time used by everything but the server, the benchmark tool and this process, as a share
        # of all CPUs
        "other_cpu_pct": round(100 * max(busy - ours, 0) / total, 1),
    }
