"""A Docker engine of the tests' own, and the local stand-ins for the registry images the compose
stack pulls (no registry is reachable here; tests/compose/README.md says what they stand in for).

The engine listens on a socket of its own and keeps its images under the cache directory
(``MYSQLBENCH_DOCKER_CACHE``, default ``~/.cache/mysqlbench/docker``), so the base images stay
cached by their build inputs from one run to the next (a changed input rebuilds: the debootstrap
base is tagged by a hash of its inputs, the Dockerfile builds by Docker's own layer cache). It runs
only while a test needs it (facts.md): started by ``engine()``, stopped after, with the stack's
containers, networks and volumes removed by the test itself; one test run at a time holds the
cache (a file lock beside its socket)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from services import stop_groups

REPO = Path(__file__).resolve().parents[2]
SUITE, VARIANT, MIRROR = "bookworm", "minbase", "http://deb.debian.org/debian"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")  # this machine's trust store (its egress proxy's CA)
SOCKET_DIR = Path("/run/mysqlbench-docker")  # short: a unix socket path is limited to 107 bytes


def cache_dir() -> Path:
    return Path(os.environ.get("MYSQLBENCH_DOCKER_CACHE", Path.home() / ".cache" / "mysqlbench" / "docker"))


def missing_tools() -> list[str]:
    return [tool for tool in ("dockerd", "docker", "docker-compose", "debootstrap") if shutil.which(tool) is None]


@contextlib.contextmanager
def engine(log: Path):
    """A running engine: yields the environment (DOCKER_HOST) its clients need."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    SOCKET_DIR.mkdir(parents=True, exist_ok=True)
    with open(SOCKET_DIR / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one engine at a time: its socket and exec root are fixed
        sock = SOCKET_DIR / "docker.sock"
        _clear_stale_pidfile(SOCKET_DIR / "dockerd.pid")
        env = {**os.environ, "DOCKER_HOST": f"unix://{sock}"}
        with open(log, "ab") as out:
            daemon = subprocess.Popen(
                ["dockerd", "--data-root", str(root / "data"), "--exec-root", str(SOCKET_DIR / "exec"),
                 "--pidfile", str(SOCKET_DIR / "dockerd.pid"), "-H", f"unix://{sock}",
                 # no NAT on this machine's kernel set-up: builds use the host network (facts.md)
                 "--iptables=false", "--bridge=none"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while subprocess.run(["docker", "info"], env=env, capture_output=True).returncode != 0:
                if daemon.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"dockerd did not start: {log.read_text()[-2000:]}")
                time.sleep(0.5)
            yield env
        finally:
            stop_groups([daemon], grace=60)  # dockerd, its containerd and any shim left


def _clear_stale_pidfile(pidfile: Path) -> None:
    """An engine killed with its test run leaves its pid file, and dockerd refuses to start beside
    it; an engine still running there (holding the lock, so not another test run's) is stopped."""
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return
    try:
        ours = str(SOCKET_DIR) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except FileNotFoundError:
        ours = False  # gone: only the file is left
    with contextlib.suppress(ProcessLookupError):
        if not ours:
            raise ProcessLookupError  # another process has that pid now: not ours to signal
        os.kill(pid, 15)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.5)
    pidfile.unlink(missing_ok=True)


def docker(env, *args, timeout: float = 1800, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["docker", *args], env=env, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args[:3])} failed: {done.stderr[-3000:]}{done.stdout[-2000:]}")
    return done


def _has_image(env, tag: str) -> bool:
    return docker(env, "image", "inspect", tag, check=False).returncode == 0


def debian_base(env) -> str:
    """Debian bookworm (minbase) from debootstrap, imported as an image, with this machine's CA
    bundle for pip (PyPI is reached through an egress proxy whose CA only that bundle holds).
    Tagged by a hash of its inputs; built only when that tag is missing."""
    digest = hashlib.sha256(f"{SUITE} {VARIANT} {MIRROR}\n".encode() + HOST_CA.read_bytes()).hexdigest()[:12]
    tag = f"mysqlbench-local/debian:{SUITE}-{digest}"
    if _has_image(env, tag):
        return tag
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        rootfs = Path(tmp) / "rootfs"
        subprocess.run(["debootstrap", f"--variant={VARIANT}", SUITE, str(rootfs), MIRROR], check=True,
                       capture_output=True, timeout=900)
        (rootfs / "etc" / "ssl").mkdir(exist_ok=True)
        shutil.copy(HOST_CA, rootfs / "etc" / "ssl" / "mysqlbench-host-ca.crt")
        (rootfs / "etc" / "pip.conf").write_text("[global]\ncert = /etc/ssl/mysqlbench-host-ca.crt\n")
        # apt in a build: no recommends, no caches kept, as the official images' apt is set up
        (rootfs / "etc" / "apt" / "apt.conf.d" / "90mysqlbench-local").write_text(
            'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n')
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["docker", "import", "-", tag], stdin=tar.stdout, env=env, capture_output=True,
                                  text=True, timeout=600)
        tar.stdout.close()
        tar.wait()
        if imported.returncode != 0:
            raise RuntimeError(f"docker import failed: {imported.stderr}")
    return tag


def build(env, dockerfile: str, tag: str, **args: str) -> float:
    """``docker build`` of the repository with ``dockerfile`` on the host network; the seconds it took."""
    started = time.monotonic()
    argv = ["build", "--network", "host", "-f", str(REPO / dockerfile), "-t", tag]
    for key, value in args.items():
        argv += ["--build-arg", f"{key}={value}"]
    docker(env, *argv, str(REPO), timeout=2400)
    return time.monotonic() - started


LOCAL = {"postgres": "mysqlbench-local/postgres:16", "redis": "mysqlbench-local/redis:7",
         "airflow-base": "mysqlbench-local/airflow:3.3.2-python3.11"}
PROJECT = {"airflow": "mysqlbench-local/mysqlbench-airflow:test", "benchhost": "mysqlbench-local/benchhost:test"}


def images(env) -> dict[str, float]:
    """Every image the stack runs, built here: the stand-ins on the Debian base, then the project's
    own Dockerfiles on them through their base-image build arguments. Seconds per build."""
    base = debian_base(env)
    took = {name: build(env, f"tests/compose/{name}.Dockerfile", tag, BASE_IMAGE=base) for name, tag in LOCAL.items()}
    took["airflow"] = build(env, "docker/airflow.Dockerfile", PROJECT["airflow"], AIRFLOW_IMAGE=LOCAL["airflow-base"])
    took["benchhost"] = build(env, "docker/benchhost.Dockerfile", PROJECT["benchhost"], BASE_IMAGE=base)
    return took
