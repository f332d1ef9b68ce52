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


def parse_stat(text: str) -> tuple[list[int], int]:
    """The CPU line's ticks and the context switches since boot, from /proc/stat's text."""
    cpu, ctxt = [], 0
    for line in text.splitlines():
        if line.startswith("cpu "):
            cpu = [int(v) for v in line.split()[1:]]
        elif line.startswith("ctxt "):
            ctxt = int(line.split()[1])
    return cpu, ctxt


def whole_disks(names: list[str]) -> list[str]:
    """Whole block devices of a /sys/block listing (it lists no partitions, so nothing counts
    twice), without loop and ram devices."""
    return sorted(name for name in names if name and not name.startswith(("loop", "ram", "zram")))


def block_devices() -> list[str]:
    return whole_disks(os.listdir("/sys/block"))


def parse_disks(text: str, devices: list[str]) -> tuple[int, int, int, int]:
    """Bytes read and written, and read and write operations completed, by ``devices``, from
    /proc/diskstats's text."""
    wanted = set(devices)
    read = written = reads = writes = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 9 and parts[2] in wanted:
            reads += int(parts[3])
            read += int(parts[5])
            writes += int(parts[7])
            written += int(parts[9])
    return read * 512, written * 512, reads, writes


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo's text in bytes."""
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            out[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes (empty where unreadable)."""
    try:
        return parse_meminfo(Path("/proc/meminfo").read_text())
    except OSError:
        return {}


class LocalProc:
    """This machine's /proc."""

    name = "local"
    local = True

    def read(self) -> dict[str, Any]:
        return {"stat": Path("/proc/stat").read_text(), "diskstats": Path("/proc/diskstats").read_text(),
                "meminfo": Path("/proc/meminfo").read_text(), "devices": block_devices()}


class RemoteProc:
    """A benchmark host's /proc, read over SSH in one command per sample."""

    local = False
    _SEP = "@@mysqlbench@@"

    def __init__(self, host):
        self.host = host
        self.name = host.name

    def read(self) -> dict[str, Any]:
        sep = self._SEP
        text = self.host.run(["sh", "-c", f"cat /proc/stat; echo {sep}; cat /proc/diskstats; echo {sep}; "
                                          f"cat /proc/meminfo; echo {sep}; ls /sys/block"], timeout=30)
        stat, diskstats, memory, devices = (text.split(sep + "\n") + ["", "", "", ""])[:4]
        return {"stat": stat, "diskstats": diskstats, "meminfo": memory, "devices": whole_disks(devices.split())}


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
    source: Any = None  # where /proc is read: this machine (LocalProc, the default) or a RemoteProc
    # the server runs on this machine but its process is not known (a connection-only target whose
    # pid file cannot be read): its CPU cannot be told from other processes', so that share is absent
    server_unknown: bool = False

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
        source = self.source or LocalProc()
        texts = source.read()
        read_b, write_b, reads, writes = parse_disks(texts["diskstats"], texts["devices"])
        cpu, ctxt = parse_stat(texts["stat"])
        memory = parse_meminfo(texts["meminfo"])
        # processes are only ours to read on this machine: on a remote host the noise share is absent
        local = source.local
        return {"t": time.monotonic(), "cpu": cpu, "ctxt": ctxt, "read": read_b, "write": write_b, "reads": reads,
                "writes": writes, "mem_total": memory.get("MemTotal"), "mem_available": memory.get("MemAvailable"),
                "cached": memory.get("Cached"),
                "server": _process_ticks(self.server_pid) + self._tool() if local and not self.server_unknown else None,
                "self": _process_ticks(os.getpid()) if local else None}

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


MIN_SHARE_TICKS = 100  # CPU ticks (all CPUs) a window needs for a share of them to mean something: 1% per tick


def _delta(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    cpu = [y - x for x, y in zip(a["cpu"], b["cpu"], strict=True)]
    total = sum(cpu) or 1
    user, nice, system, idle, iowait = cpu[:5]
    busy = total - idle - iowait
    ours = None if b.get("server") is None else (b["server"] - a["server"]) + (b["self"] - a["self"])
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
        # of all CPUs; absent over a window too short to tell (a 10 ms query spans one or two clock
        # ticks, so one tick of anything reads as 50%)
        "other_cpu_pct": round(100 * max(busy - ours, 0) / total, 1)
        if ours is not None and sum(cpu) >= MIN_SHARE_TICKS else None,
        # time a hypervisor gave this machine's CPUs to another guest (absent where /proc/stat has no column)
        "steal_pct": round(100 * cpu[7] / total, 1) if len(cpu) > 7 else None,
    }
