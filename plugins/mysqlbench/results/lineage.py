"""Lineage: who produced a row (study, DAG run, task, try), with what code and spec, on which
server configuration, host and dataset. Hashes make runs comparable; full snapshots are kept once."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mysqlbench import __version__, paths

# Variables that change from one start or one host to the next without changing how the server
# behaves: timestamps, GTIDs, identities, addresses and paths.
_VOLATILE = re.compile(
    r"^(timestamp|gtid_.*|.*_gtid.*|server_uuid|server_id|hostname|port|socket|pid_file|"
    r"rand_seed\d|pseudo_thread_id|last_insert_id|insert_id|identity|warning_count|error_count|"
    r"in_transaction|system_time_zone|.*_file|.*_dir|.*_path|.*_basename|.*_filename|"
    r"basedir|datadir|tmpdir|log_error|general_log_file|slow_query_log_file|report_host|"
    r"wsrep_.*address.*)$"
)


def stable_hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def stable_variables(variables: dict[str, Any]) -> dict[str, str]:
    return {name.lower(): str(value) for name, value in variables.items()
            if not _VOLATILE.match(name.lower())}


def variables_hash(variables: dict[str, Any]) -> str:
    return stable_hash(stable_variables(variables))


def server_variables(conn, scope: str = "GLOBAL") -> dict[str, str]:
    """All variables; ``SESSION`` in a measuring session shows the point's session knobs on top
    of the globals in force."""
    if scope not in ("GLOBAL", "SESSION"):
        raise ValueError(f"scope {scope!r}")
    with conn.cursor() as cur:
        cur.execute(f"SHOW {scope} VARIABLES")
        return {name: value.decode() if isinstance(value, bytes) else str(value)
                for name, value in cur.fetchall()}


@functools.lru_cache(maxsize=1)
def package_version() -> str:
    """The git commit of this checkout, or the package version outside a checkout. Uncommitted
    changes to tracked files add ``-dirty-`` and a digest of the diff, so two different edits are
    two versions (an event between them) and the same edit measured twice is one (none)."""
    try:
        sha = subprocess.run(["git", "-C", str(paths.REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        diff = subprocess.run(["git", "-C", str(paths.REPO_ROOT), "diff", "HEAD", "--no-ext-diff", "--binary"],
                              capture_output=True, check=True).stdout
        return f"{sha}-dirty-{hashlib.sha256(diff).hexdigest()[:8]}" if diff else sha
    except (OSError, subprocess.CalledProcessError):
        return __version__


def host_facts(datadir: str | os.PathLike | None = None, tmpdir: str | os.PathLike | None = None) -> dict[str, Any]:
    """What the host is, as far as it changes how a benchmark runs: kernel, CPU model, physical
    cores and hardware threads, memory and swap, every disk (size, rotational, I/O scheduler,
    model), the CPU frequency governor where the kernel exposes one, and the file systems (and
    disk) the datadir and the server's tmpdir are on (only for a server on this host). Nothing
    here changes from run to run on the same host: it is hashed into the lineage. What does
    (free space, available memory) is :func:`host_state`."""
    from mysqlbench.ossampler import meminfo

    memory = meminfo()
    cores = _physical_cores()
    facts: dict[str, Any] = {
        "hostname": platform.node(),
        "kernel": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_cores": cores,
        "cpu_model": _cpu_model(),
        "mem_total_bytes": memory.get("MemTotal"),
        "swap_total_bytes": memory.get("SwapTotal"),
        "disks": _disks(),
        **_governor(),
    }
    facts["datadir_fs"] = filesystem_of(Path(datadir)) if datadir and Path(datadir).exists() else None
    if datadir and Path(datadir).exists():
        facts["datadir_disk"] = disk_of(Path(datadir))
    if tmpdir is not None:
        facts["tmpdir"] = str(tmpdir)
        facts["tmpdir_fs"] = filesystem_of(Path(tmpdir)) if Path(tmpdir).exists() else None
    return facts


def host_state(*directories: str | os.PathLike | None) -> dict[str, Any]:
    """What changes from run to run on the same host, kept with each point's results but out of
    the host hash: free space where the data lives, available memory, swap in use, load."""
    from mysqlbench.ossampler import meminfo

    memory = meminfo()
    out: dict[str, Any] = {"mem_available_bytes": memory.get("MemAvailable"),
                           "swap_used_bytes": memory["SwapTotal"] - memory["SwapFree"]
                           if "SwapTotal" in memory and "SwapFree" in memory else None,
                           "load_avg_1m": os.getloadavg()[0]}
    free = {}
    for directory in directories:
        if directory and Path(directory).exists():
            stat = os.statvfs(directory)
            free[str(directory)] = stat.f_bavail * stat.f_frsize
    out["free_bytes"] = free
    return out


def _physical_cores(text: str | None = None) -> int | None:
    """Distinct (physical id, core id) pairs in /proc/cpuinfo: cores, not hardware threads."""
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    pairs = set()
    for block in text.split("\n\n"):
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        if "core id" in fields:
            pairs.add((fields.get("physical id", "0"), fields["core id"]))
    return len(pairs) or None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _scheduler(device: str) -> str | None:
    """The active I/O scheduler of a block device: the bracketed one in queue/scheduler."""
    return _active(_read(Path("/sys/block") / device / "queue" / "scheduler"))


def _active(text: str | None) -> str | None:
    if not text:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else text


# what remote_host_facts asks a benchmark host, in one command: sections split by a marker line
_REMOTE_FACTS = r"""
sep=@@mysqlbench@@
hostname; echo $sep; uname -s; echo $sep; uname -r; echo $sep; uname -m; echo $sep; nproc --all; echo $sep
cat /proc/cpuinfo; echo $sep; cat /proc/meminfo; echo $sep
for d in /sys/block/*; do
  n=${d##*/}
  printf '%s|%s|%s|%s|%s\n' "$n" "$(cat $d/size 2>/dev/null)" \
    "$(cat $d/queue/rotational 2>/dev/null)" "$(cat $d/queue/scheduler 2>/dev/null)" \
    "$(cat $d/device/model 2>/dev/null)"
done; echo $sep
cat /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor 2>/dev/null | sort -u; echo $sep
stat -f -c %T "$1"; df --output=source,target "$1" | tail -1; echo $sep
"""


def remote_host_facts(host, datadir: str | None) -> dict[str, Any]:
    """:func:`host_facts` of a benchmark host reached over SSH (``targets.host.SshHost``): the same
    keys, read there in one command."""
    from mysqlbench.ossampler import parse_meminfo, whole_disks

    text = host.run(["sh", "-c", _REMOTE_FACTS, "facts", datadir or "/"], timeout=60)
    parts = [p.strip("\n") for p in text.split("@@mysqlbench@@")]
    hostname, system, release, machine, nproc, cpuinfo, memory_text, disks_text, governors, fs = (parts + [""] * 10)[:10]
    memory = parse_meminfo(memory_text)
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
                 None)
    disks = []
    names = whole_disks([line.split("|")[0] for line in disks_text.splitlines()])
    for line in disks_text.splitlines():
        name, size, rotational, scheduler, disk_model = (line.split("|") + [""] * 5)[:5]
        if name in names:
            disks.append({"name": name, "size_bytes": int(size) * 512 if size.isdigit() else None,
                          "rotational": rotational == "1" if rotational else None, "scheduler": _active(scheduler),
                          "model": disk_model or None})
    fs_lines = fs.splitlines()
    facts: dict[str, Any] = {
        "hostname": hostname.strip(), "kernel": f"{system.strip()} {release.strip()}", "machine": machine.strip(),
        "cpu_count": int(nproc) if nproc.strip().isdigit() else None, "cpu_cores": _physical_cores(cpuinfo),
        "cpu_model": model, "mem_total_bytes": memory.get("MemTotal"), "swap_total_bytes": memory.get("SwapTotal"),
        "disks": disks, "reached_over": host.name,
    }
    facts.update({"cpu_governor": ",".join(governors.split())} if governors.strip() else
                 {"cpu_governor": None, "cpu_governor_why": "not exposed by this kernel (no cpufreq in /sys: a "
                                                            "virtual machine or no driver)"})
    if datadir and len(fs_lines) >= 2:
        device, mount = (fs_lines[1].split() + ["", ""])[:2]
        facts["datadir_fs"] = {"device": device, "mount": mount, "type": fs_lines[0].strip()}
    else:
        facts["datadir_fs"] = None
    return facts


def _disks() -> list[dict[str, Any]]:
    from mysqlbench.ossampler import block_devices

    out = []
    for device in block_devices():
        base = Path("/sys/block") / device
        sectors = _read(base / "size")
        rotational = _read(base / "queue" / "rotational")
        out.append({"name": device, "size_bytes": int(sectors) * 512 if sectors and sectors.isdigit() else None,
                    "rotational": rotational == "1" if rotational is not None else None,
                    "scheduler": _scheduler(device), "model": _read(base / "device" / "model")})
    return out


def disk_of(path: Path) -> dict[str, Any] | None:
    """The whole disk holding ``path`` (through /sys/dev/block), with its I/O scheduler."""
    dev = os.stat(path).st_dev
    link = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    try:
        resolved = link.resolve(strict=True)
    except OSError:
        return None  # not a block device (overlay, tmpfs, a network file system)
    device = resolved.name if (resolved / "queue").exists() else resolved.parent.name  # a partition's parent
    return {"name": device, "scheduler": _scheduler(device)}


def _governor() -> dict[str, Any]:
    governors = sorted({g for g in (_read(p) for p in Path("/sys/devices/system/cpu").glob(
        "cpu[0-9]*/cpufreq/scaling_governor")) if g})
    if governors:
        return {"cpu_governor": ",".join(governors)}
    return {"cpu_governor": None,
            "cpu_governor_why": "not exposed by this kernel (no cpufreq in /sys: a virtual machine or no driver)"}


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def filesystem_of(path: Path) -> dict[str, str] | None:
    """Mount point, device and type of the file system holding ``path`` (from /proc/mounts)."""
    try:
        mounts = [line.split()[:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return None
    target = str(path.resolve())
    best = None
    for device, mount, fstype in mounts:
        mount = mount.replace("\\040", " ")
        if target == mount or target.startswith(mount.rstrip("/") + "/"):
            if best is None or len(mount) > len(best["mount"]):
                best = {"device": device, "mount": mount, "type": fstype}
    return best


@dataclass(frozen=True)
class Lineage:
    study: str
    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    spec_hash: str
    package_version: str
    server_flavor: str | None = None
    server_version: str | None = None
    variables_hash: str | None = None
    host_hash: str | None = None
    dataset_id: str | None = None

    def as_row(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_context(cls, context, *, study: str, spec: dict[str, Any], **server) -> "Lineage":
        ti = context["ti"]
        return cls(
            study=study, dag_id=ti.dag_id, run_id=ti.run_id, task_id=ti.task_id,
            map_index=ti.map_index if ti.map_index is not None else -1,
            try_number=ti.try_number or 1, spec_hash=stable_hash(spec),
            package_version=package_version(), **server,
        )
