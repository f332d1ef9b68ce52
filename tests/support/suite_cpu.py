"""Where the suite's CPU goes (issue 25): sample every process's CPU once a second while the suite
runs, then sum it by kind of process (servers, Airflow services, airflow CLI calls, pytest workers)
and by the test or clone that started it. A development tool, not a test:

    python tests/support/suite_cpu.py sample /tmp/cpu.json 3000 &   # stops at the time or when /tmp/cpu.json.stop exists
    .venv/bin/pytest -n 2 --dist loadscope --no-loadscope-reorder -m "not serial and not open_acceptance"
    touch /tmp/cpu.json.stop; python tests/support/suite_cpu.py report /tmp/cpu.json

A process is seen from its first sample to its last, so one that lives under a second is missed
(its CPU still counts in its parent's children time, which this does not read): the sums are a
lower bound. The test that started a process is its PYTEST_CURRENT_TEST at start; the README
clones' commands run without it and are named by their clone."""

from __future__ import annotations

import collections
import json
import os
import re
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
KINDS = ("airflow scheduler", "airflow api-server", "airflow dag-processor", "airflow triggerer", "airflow standalone",
         "airflow celery", "airflow dags test", "airflow dags", "airflow db", "airflow backfill", "airflow worker",
         "airflow", "sysbench", "mariadb-slap", "tpchgen", "tpcc_start", "sshd", "postgres", "redis", "chromium",
         "bin/mysqlbench", "apt", "dpkg", "bench/")


def _read(pid: int, seen: dict) -> None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        fields = stat[stat.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        if pid not in seen:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")[:400]
            try:
                env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
                test = next((e[20:].decode(errors="replace") for e in env if e.startswith(b"PYTEST_CURRENT_TEST=")), "")
            except OSError:
                test = ""
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                cwd = ""
            seen[pid] = {"cmd": cmd, "test": test, "cwd": cwd}
        seen[pid]["cpu"] = cpu
    except (OSError, ValueError):
        pass  # gone between the listing and the read


def sample(out: str, seconds: float) -> None:
    seen: dict[int, dict] = {}
    stop = time.time() + seconds
    n = 0
    while time.time() < stop and not os.path.exists(out + ".stop"):
        for name in os.listdir("/proc"):
            if name.isdigit():
                _read(int(name), seen)
        n += 1
        if n % 30 == 0:
            with open(out, "w") as f:
                json.dump(seen, f)
        time.sleep(1)
    with open(out, "w") as f:
        json.dump(seen, f)


def kind(cmd: str) -> str:
    # a fetched server runs through its suite's dynamic loader (a long command line: mysqld may be cut off)
    if re.search(r"\b(mariadbd|mysqld)\b", cmd) or ("ld-linux" in cmd and "/servers/" in cmd):
        found = re.search(r"servers/([\w.-]+)/", cmd)
        return "server " + (found.group(1) if found else "system MariaDB")
    if "xdist" in cmd or "exec(eval(sys.stdin" in cmd:
        return "pytest worker"
    return next((k for k in KINDS if k in cmd), "other")


def origin(p: dict) -> str:
    where = p["cwd"] + " " + p["cmd"]
    if "airflow-clone" in where:
        return "tests/test_readme_airflow.py (its clone)"
    if "readme-clone" in where or "/clone/" in where:
        return "tests/test_readme_commands.py (its clone)"
    return p["test"].split(" ")[0] or "(no test: session fixtures, pytest itself)"


def report(path: str, top: int = 25) -> None:
    seen = json.load(open(path))
    by_kind, by_origin = collections.Counter(), collections.Counter()
    for p in seen.values():
        by_kind[kind(p["cmd"])] += p["cpu"]
        by_origin[origin(p)] += p["cpu"]
    print(f"CPU seconds seen: {sum(by_kind.values()):.0f} (a lower bound)\n\nby kind of process:")
    for k, v in by_kind.most_common(top):
        print(f"  {v:8.0f}  {k}")
    print("\nby the test (or clone) that started it:")
    for k, v in by_origin.most_common(top):
        print(f"  {v:8.0f}  {k}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["sample"]:
        sample(sys.argv[2], float(sys.argv[3]))
    elif sys.argv[1:2] == ["report"]:
        report(sys.argv[2])
    else:
        sys.exit(__doc__)
