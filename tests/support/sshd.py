"""A real OpenSSH server on 127.0.0.1 for the SSH tests: its own host key, key authentication only,
its own port, and an ``authorized_keys`` ``command=`` wrapper that logs every command a client
runs before running it (the proof that a step really went through SSH)."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

WRAPPER = """#!/bin/sh
# every command a client runs through this key, logged, then run as the client asked; a program a
# test drops into the shims directory stands in for the host's own (a df that hangs, say)
printf '%s\\n' "$SSH_ORIGINAL_COMMAND" >> {log}
PATH={shims}:$PATH
export PATH
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""


@dataclass
class Sshd:
    root: Path
    port: int
    process: subprocess.Popen
    client_key: Path
    host_key_line: str     # "ssh-ed25519 AAAA..." as an Airflow SSH connection's host_key extra
    command_log: Path

    def shim(self, program: str, script: str) -> Path:
        """``program`` on this host replaced by ``script`` (a shell script body) for every command
        run from now on, until the file is removed."""
        path = self.root / "shims" / program
        path.write_text("#!/bin/sh\n" + script + "\n")
        path.chmod(0o755)
        return path

    def commands(self) -> list[str]:
        return self.command_log.read_text().splitlines() if self.command_log.exists() else []

    def connection(self, **extra) -> dict:
        """An Airflow SSH connection to this server (JSON for AIRFLOW_CONN_*)."""
        return {"conn_type": "ssh", "host": "127.0.0.1", "port": self.port, "login": "root",
                "extra": {"key_file": str(self.client_key), "host_key": self.host_key_line, **extra}}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sshd(root: Path) -> Sshd:
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    root.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(root / name)], check=True)
    log = root / "commands.log"
    wrapper = root / "log-and-run.sh"
    (root / "shims").mkdir(exist_ok=True)
    wrapper.write_text(WRAPPER.format(log=shlex.quote(str(log)), shims=shlex.quote(str(root / "shims"))))
    wrapper.chmod(0o755)
    client_pub = (root / "client_key.pub").read_text().strip()
    (root / "authorized_keys").write_text(f'command="{wrapper}",no-port-forwarding,no-agent-forwarding,'
                                          f'no-X11-forwarding {client_pub}\n')
    (root / "authorized_keys").chmod(0o600)
    port = _free_port()
    config = root / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {root / 'host_key'}",
        f"AuthorizedKeysFile {root / 'authorized_keys'}", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "PermitRootLogin prohibit-password",
        "UsePAM no", "StrictModes no", f"PidFile {root / 'sshd.pid'}", "LogLevel VERBOSE", ""]))
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    process = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stdout=open(root / "sshd.log", "wb"),
                               stderr=subprocess.STDOUT, env={k: v for k, v in os.environ.items()
                                                              if not k.startswith("AIRFLOW")})
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not start: {(root / 'sshd.log').read_text()}") from None
            time.sleep(0.1)
    key_type, key_data = (root / "host_key.pub").read_text().split()[:2]
    return Sshd(root, port, process, root / "client_key", f"{key_type} {key_data}", log)
