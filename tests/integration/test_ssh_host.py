"""A benchmark host over SSH, against a real OpenSSH server on 127.0.0.1 that the tests start:
commands run there (its log shows them), long quiet commands do not trip the SSH provider's
10 s silence timeout, a stopped command's whole process group goes, and a wrong host key or a
connection that turns key checking off is refused before anything runs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from mysqlbench.errors import InvalidInput
from mysqlbench.targets.host import HostError, SshHost

from conftest import SSH_CONN


def test_a_command_runs_on_the_host_and_the_server_logs_it(sshd):
    host = SshHost(SSH_CONN)
    out = host.run(["sysbench", "cpu", "--cpu-max-prime=500", "--time=1", "--threads=1", "run"], timeout=60)
    from mysqlbench.sysbench_output import parse_report

    assert parse_report(out, "cpu")["events_per_s"] > 0
    assert any("sysbench cpu --cpu-max-prime=500" in line for line in sshd.commands())
    # every argument quoted: a value with shell metacharacters is one argument, never shell syntax
    marker = sshd.root / "never-created"
    echoed = host.run(["echo", f"x; touch {marker}", "$(id)"], timeout=30)
    assert echoed.strip() == f"x; touch {marker} $(id)" and not marker.exists()


def test_a_quiet_command_longer_than_the_silence_timeout_finishes(sshd):
    started = time.monotonic()
    out = SshHost(SSH_CONN).run(["sh", "-c", "sleep 12; echo done"], timeout=60)
    assert out.strip() == "done" and time.monotonic() - started >= 12


def test_stop_ends_the_remote_process_group(sshd, tmp_path):
    host = SshHost(SSH_CONN)
    proc = host.start(["sh", "-c", "sleep 300 & sleep 301; wait"], None, [])
    deadline = time.monotonic() + 10
    while proc.pgid is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.pgid is not None
    proc.stop()
    time.sleep(0.5)
    # processes of the group still running (a killed child may linger as a zombie until its new
    # parent reaps it: not running)
    left = host.run(["sh", "-c", f"ps -o stat= -g {proc.pgid} | grep -v '^Z' || true"], timeout=30)
    assert left.strip() == ""


def test_stop_returns_when_a_child_outside_the_group_keeps_the_output_open(sshd):
    """Issue 25 item 4: RemoteProcess.stop waiting without a timeout for the output to close
    survived. A command that started a child in a session of its own (a daemon) leaves that child
    holding its output open after its process group is killed: stop still returns, and closes the
    channel."""
    import threading
    import uuid

    host = SshHost(SSH_CONN)
    orphan = f"sleep 611.{uuid.uuid4().int % 10**6:06d}"  # a duration nothing else sleeps: found and killed after
    proc = host.start(["sh", "-c", f"setsid {orphan} & sleep 601"], None, [])
    try:
        deadline = time.monotonic() + 10
        while proc.pgid is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.pgid is not None
        stopping = threading.Thread(target=proc.stop, daemon=True)
        started = time.monotonic()
        stopping.start()
        stopping.join(60)
        assert not stopping.is_alive(), "stop is still waiting for output the orphan holds open"
        assert time.monotonic() - started < 45 and proc._channel.closed
    finally:  # "[s]leep": the pattern does not match the shell that runs pkill
        host.run(["sh", "-c", f"pkill -f '[s]{orphan[1:]}' || true"], timeout=30)
    assert host.run(["sh", "-c", f"pgrep -f '[s]{orphan[1:]}' || true"], timeout=30).strip() == ""


def test_a_remote_tools_output_reaches_its_caller_line_by_line_secrets_redacted(sshd):
    """A tool's output over SSH, as a study reads it: every line, the last one too when it has no
    newline (sysbench's and slap's final lines are read from there), a secret on the command's
    output redacted, and its exit status. (Issue 25 item 4: a mutant that broke the unterminated
    last line survived.)"""
    host = SshHost(SSH_CONN)
    seen = []
    proc = host.start(["sh", "-c", "printf 'first\\nkey=s3cr3t here\\nlast, no newline'; exit 3"], None,
                      ["s3cr3t"], on_line=seen.append)
    assert proc.wait(30) == 3
    assert proc.lines == seen == ["first", "key=*** here", "last, no newline"]
    # a line that looks like the process-group line is the tool's output, not a new group
    proc = host.start(["sh", "-c", "echo mysqlbench-pgid 1"], None, [])
    assert proc.wait(30) == 0 and proc.lines == ["mysqlbench-pgid 1"] and proc.pgid not in (None, 1)
    # run: in the directory asked for; a failure names the tool, the host, its status and output
    assert host.run(["pwd"], timeout=30, cwd=Path("/tmp")).strip() == "/tmp"
    with pytest.raises(HostError, match=rf"^sh on 127.0.0.1:{sshd.port} exited with status 3: oops"):
        host.run(["sh", "-c", "echo oops; exit 3"], timeout=30)
    # a connection the host dropped is made again on the next command
    host.client().get_transport().close()
    assert host.run(["echo", "again"], timeout=30).strip() == "again"


def test_a_wrong_host_key_is_refused(sshd, tmp_path):
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = " ".join((tmp_path / "other.pub").read_text().split()[:2])
    os.environ["AIRFLOW_CONN_MYSQLBENCH_TEST_SSH_WRONG"] = json.dumps(sshd.connection(host_key=other))
    before = len(sshd.commands())
    with pytest.raises(HostError, match="host key of 127.0.0.1:.* does not match"):
        SshHost("mysqlbench_test_ssh_wrong").run(["true"], timeout=30)
    assert len(sshd.commands()) == before  # nothing ran


def test_turning_key_checking_off_is_refused(sshd):
    conn = sshd.connection(no_host_key_check=True)
    conn["extra"].pop("host_key")
    os.environ["AIRFLOW_CONN_MYSQLBENCH_TEST_SSH_NOCHECK"] = json.dumps(conn)
    with pytest.raises(InvalidInput, match="turns host key checking off"):
        SshHost("mysqlbench_test_ssh_nocheck")


def test_a_target_with_a_bad_host_or_ssh_connection_is_refused():
    from mysqlbench.targets.connection import TargetConnection

    base = {"port": 3306, "login": "x", "password": "y"}
    with pytest.raises(InvalidInput, match="is not a host name or address"):
        TargetConnection.from_fields("t", host="db1;reboot", extra={}, **base)
    with pytest.raises(InvalidInput, match="ssh_conn_id"):
        TargetConnection.from_fields("t", host="db1", extra={"ssh_conn_id": "a b"}, **base)
    target = TargetConnection.from_fields("t", host="db1", extra={"ssh_conn_id": "bench_host"}, **base)
    assert target.ssh_conn_id == "bench_host" and "ssh_conn_id" not in target.extra


def test_os_samples_and_host_facts_come_from_the_host_over_ssh(sshd):
    from mysqlbench.ossampler import OsSampler, RemoteProc
    from mysqlbench.results.lineage import host_facts, remote_host_facts

    host = SshHost(SSH_CONN)
    before = len(sshd.commands())
    with OsSampler(source=RemoteProc(host), interval_s=0.5) as sampler:
        time.sleep(1.6)
    assert len(sampler.samples) >= 3 and any("cat /proc/stat" in c for c in sshd.commands()[before:])
    for sample in sampler.samples:
        assert 0 <= sample["cpu_user_pct"] <= 100 and sample["mem_used_bytes"] > 0 and sample["page_cache_bytes"] > 0
        assert sample["other_cpu_pct"] is None  # a remote host's processes are not ours to read: absent, not 0
    remote = remote_host_facts(host, "/tmp")
    local = host_facts("/tmp")  # the same machine here: the same facts, read the other way
    for key in ("kernel", "machine", "cpu_count", "cpu_cores", "cpu_model", "mem_total_bytes", "swap_total_bytes",
                "cpu_governor"):
        assert remote[key] == local[key], key
    assert [d["name"] for d in remote["disks"]] == [d["name"] for d in local["disks"]]
    assert [d["scheduler"] for d in remote["disks"]] == [d["scheduler"] for d in local["disks"]]
    assert remote["datadir_fs"]["mount"] == local["datadir_fs"]["mount"] and remote["datadir_fs"]["type"]
    assert remote["reached_over"] == f"127.0.0.1:{sshd.port}"


def test_the_cache_drop_over_ssh_evicts_the_files_and_only_them(sshd, tmp_path):
    import subprocess

    from mysqlbench.targets.control import EVICT

    def resident(path) -> int:
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "PAGES", str(path)],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])

    data, other = tmp_path / "data", tmp_path / "other"
    data.mkdir()
    (data / "ibdata").write_bytes(os.urandom(4 << 20))
    other.write_bytes(os.urandom(4 << 20))
    (data / "ibdata").read_bytes(), other.read_bytes()
    assert resident(data / "ibdata") > 0 and resident(other) > 0
    count = SshHost(SSH_CONN).run([*EVICT, str(data)], timeout=60)
    assert count.strip() == "1"
    assert resident(data / "ibdata") == 0 and resident(other) > 0
    assert any("iflag=nocache" in c and str(data) in c for c in sshd.commands())


def test_a_private_file_on_the_host_is_ours_only_and_never_logged(sshd):
    host = SshHost(SSH_CONN)
    before = len(sshd.commands())
    with host.private_file("secret.cfg", "mysql-password=s3cr3t-value\n") as path:
        assert path.startswith("/tmp/mysqlbench-") and path.endswith("/secret.cfg")
        assert host.read_text(path).strip() == "mysql-password=s3cr3t-value"
        assert host.run(["stat", "-c", "%a", path], timeout=30).strip() == "600"
    assert host.run(["sh", "-c", f"test -e {path} && echo left || echo gone"], timeout=30).strip() == "gone"
    assert "s3cr3t-value" not in "\n".join(sshd.commands()[before:])


def test_a_target_whose_tools_run_over_ssh_holds_that_host_too(sshd):
    """One measurement per benchmark host, whichever worker starts it: the hold of a target whose
    tools run over SSH names the SSH host, and two targets sharing it exclude each other."""
    import socket

    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.targets.hold import target_resources

    base = {"port": 3306, "login": "x", "password": "y"}
    remote_db = TargetConnection.from_fields("a", host="db1.example", extra={"ssh_conn_id": SSH_CONN}, **base)
    other_db = TargetConnection.from_fields("b", host="db2.example", extra={"ssh_conn_id": SSH_CONN}, **base)
    host = f"host:{socket.gethostname()}"  # the SSH connection reaches 127.0.0.1: this machine
    assert host in target_resources(remote_db) and host in target_resources(other_db)
    plain = TargetConnection.from_fields("c", host="db1.example", extra={}, **base)
    assert host not in target_resources(plain) and "host:db1.example" in target_resources(plain)
    # an SSH connection to another machine holds that machine, by its name, not this one
    from mysqlbench.targets.hold import ssh_host

    os.environ["AIRFLOW_CONN_MYSQLBENCH_TEST_SSH_ELSEWHERE"] = json.dumps(
        {**sshd.connection(), "host": "Bench-1.Example"})
    assert ssh_host("mysqlbench_test_ssh_elsewhere") == "bench-1.example" != socket.gethostname()
    assert ssh_host(SSH_CONN) == socket.gethostname()


def test_a_targets_tools_run_where_its_connection_says(sshd, target):
    """``host_of``: a connection with an ``ssh_conn_id`` extra runs its tools on that benchmark host
    (a command there shows in its sshd's log); one without runs them here."""
    import dataclasses

    from mysqlbench.targets.host import LocalHost, host_of

    remote = host_of(dataclasses.replace(target, ssh_conn_id=SSH_CONN))
    assert isinstance(remote, SshHost) and remote.ssh_conn_id == SSH_CONN
    remote.run(["echo", "host_of-probe"], timeout=30)
    assert any("host_of-probe" in line for line in sshd.commands())
    assert isinstance(host_of(target), LocalHost) and target.ssh_conn_id is None
