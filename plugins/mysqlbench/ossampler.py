"""Once-a-second OS samples during a measured window, from /proc (the numbers sar and iostat
report): CPU user/system/iowait, disk read/write bytes, and CPU used by processes other than the
server under test and this one (a noise signal)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _cpu() -> list[int]:
    with open("/proc/stat") as stat:
        return [int(v) for v in stat.readline().split()[1:]]


def _disk_sectors() -> tuple[int, int]:
    """Bytes read and written by whole block devices (/sys/block lists no partitions, so nothing
    counts twice); loop and ram devices are left out."""
    devices = {name for name in os.listdir("/sys/block") if not name.startswith(("loop", "ram", "zram"))}
    read = written = 0
    for line in Path("/proc/diskstats").read_text().splitlines():
        parts = line.split()
        if parts[2] in devices:
            read += int(parts[5])
            written += int(parts[9])
    return read * 512, written * 512


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

    def __enter__(self) -> "OsSampler":
        self._stop = threading.Event()
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
        read_b, write_b = _disk_sectors()
        return {"t": time.monotonic(), "cpu": _cpu(), "read": read_b, "write": write_b,
                "server": _process_ticks(self.server_pid), "self": _process_ticks(os.getpid())}

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
        # CPU time used by everything but the server and this process, as a share of all CPUs
        "other_cpu_pct": round(100 * max(busy - ours, 0) / total, 1),
    }
