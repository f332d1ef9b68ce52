"""A fresh clone of this repository as a user has it, and running commands in it as that user:
shared by the README's command tests (tests/test_readme_commands.py, tests/test_readme_airflow.py)
and the distributed-execution test (tests/test_celery_executor.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def fresh_clone(root: Path) -> Path:
    """A fresh copy of the working tree at ``root``, as `git clone` would give (plus uncommitted
    files), where the managed servers' OS user can reach it."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    (root / ".venv").symlink_to(REPO / ".venv")
    return root


def move_demo_port(clone: Path, port: int) -> None:
    """The clone's `demo` target on ``port`` (edited in its YAML, as a user whose 3317 is taken
    would): two clones' demo servers can then run side by side."""
    path = clone / "include" / "configs" / "targets" / "demo.yaml"
    data = yaml.safe_load(path.read_text())
    path.write_text(path.read_text().replace(f"port: {data['port']}\n", f"port: {port}\n"))
    assert yaml.safe_load(path.read_text())["port"] == port


def user_env(root: Path) -> dict[str, str]:
    """The environment a user has: none of this test session's Airflow or mysqlbench settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "MYSQLBENCH_", "PYTEST")) and k != "PYTHONPATH"}
    env["PATH"] = os.environ["PATH"]
    return env


def run(root: Path, command: str, timeout: int = 900, **env) -> subprocess.CompletedProcess:
    done = subprocess.run(command, shell=True, cwd=root, env={**user_env(root), **env}, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def wait(predicate, timeout: float, what: str, proc=None, explain=lambda: ""):
    """``predicate()``'s first truthy value, polled each second; fails when ``proc`` exits first or
    after ``timeout`` seconds, with ``explain()`` appended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {proc.returncode}\n{explain()}")
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}\n{explain()}")


def rest(base: str, method: str, path: str, body: dict | None = None, token: str | None = None):
    """A JSON call to Airflow's REST API (or the plugin's), its decoded answer."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None,
                                     headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())
