"""The control protocol (targets/control.py) on real targets, through the library as a point uses
it: which control a connection gets, what each may do beyond SQL, and the journal entry a managed
restart with a point's settings leaves first (issue 25 item 4: these were reached only by whole
Airflow runs, and a sample of their mutants survived the unit and server tiers)."""

import pytest

from mysqlbench import knobs
from mysqlbench.errors import NotApplicable
from mysqlbench.results.store import ResultsStore
from mysqlbench.targets.connection import TargetConnection
from mysqlbench.targets.control import ConnectionOnly, ManagedControl, ensure_running, take_control
from mysqlbench.targets.journal import RestoreJournal


class _NoLock:
    """take_control's hold, for a server already running: never used to start it."""

    token = None

    def renew(self):  # pragma: no cover - the managed server is up, nothing is started
        raise AssertionError("take_control started a server that was running")


def test_our_managed_instance_gets_the_managed_control_and_anything_else_connection_only(target):
    """A connection proven to reach our managed instance is controlled as it (restarts, its pid,
    its directories' free space); an external connection to the very same server gets SQL only, and
    asking it for a restart is not applicable, naming the connection."""
    from conftest import EXTERNAL_MARKED_CONN

    control = take_control(target, _NoLock())
    assert isinstance(control, ManagedControl) and control.restarts and control.globals_by_restart
    server = control.server
    with target.session() as conn:
        assert control.server_process(conn) == (server.pid(), False)  # its pid, and it is known
    assert set(control.host_state()["free_bytes"]) == {str(server.datadir), str(server.tmpdir)}
    dropped = control.drop_os_cache("target_files")  # the instance's own files, here
    assert dropped["method"] == "posix_fadvise(DONTNEED)" and int(dropped["scope"].split()[0]) > 0
    assert dropped["o_direct_note"].startswith("innodb_flush_method=O_DIRECT")
    # the scope asked for is the one done (root here: drop_caches is allowed), not the default
    whole = control.drop_os_cache("host")
    assert (whole["method"], whole["scope"]) == ("drop_caches", "whole page cache"), whole

    external = TargetConnection.from_airflow(EXTERNAL_MARKED_CONN)
    assert ensure_running(external) is None  # not ours to start: nothing is looked up
    only = take_control(external, _NoLock())
    assert type(only) is ConnectionOnly and not only.restarts and only.snapshots is None
    with pytest.raises(NotApplicable, match=f"{EXTERNAL_MARKED_CONN} is external .*cannot be restarted"):
        only.restart()
    with pytest.raises(NotApplicable, match=f"{EXTERNAL_MARKED_CONN} is external .*cannot be dropped"):
        only.drop_os_cache("files")


def test_a_managed_restart_with_settings_is_journaled_before_the_server_is_touched(target, managed, tmp_path):
    """A point's globals go on the managed restart's command line, and the journal records the
    restart first (the instance's name and the settings), so a killed point's successor puts the
    base configuration back; replaying it does."""
    control = take_control(target, _NoLock())
    journal = RestoreJournal("control-test", ResultsStore(f"sqlite:///{tmp_path / 'journal.db'}"))
    try:
        control.restart({"innodb_old_blocks_time": 777}, journal=journal)
        assert journal.entries() == [{"kind": "restart", "managed_target": managed.spec.name,
                                      "overrides": {"innodb_old_blocks_time": 777}}]
        with managed.admin_connect() as conn:
            assert knobs.read_variable(conn, "innodb_old_blocks_time", "global") == 777
        assert [e["kind"] for e in journal.replay(target)] == ["restart"] and journal.entries() == []
        with managed.admin_connect() as conn:
            assert knobs.read_variable(conn, "innodb_old_blocks_time", "global") == 1000  # the server's default
    finally:
        managed.restart()  # the base configuration, whatever happened above
    control.restart(journal=journal)  # no settings: nothing to undo, nothing journaled
    assert journal.entries() == []


def test_os_samples_of_a_target_whose_tools_run_over_ssh_come_from_that_host(sshd, target):
    """A target naming an SSH connection has its OS samples read there, over that connection."""
    from mysqlbench.targets.control import Control

    from conftest import SSH_CONN

    over_ssh = TargetConnection.from_fields("ssh_tools", host="127.0.0.1", port=target.port, login="x",
                                            password="y", extra={"ssh_conn_id": SSH_CONN})
    source = Control(over_ssh).os_source()
    assert source.local is False and source.host.ssh_conn_id == SSH_CONN
    assert source.name == f"127.0.0.1:{sshd.port}"
    assert Control(target).os_source() is None  # no SSH connection: sampled here


def test_a_server_on_a_benchmark_host_is_restarted_measured_and_evicted_over_ssh(sshd, managed, target,
                                                                                   bench_password, tmp_path):
    """``control: ssh``: the restart is the connection's own command, run over SSH with the caller's
    hold token, and the point waits until the server takes connections; settings that need a
    restart are not applicable (they belong in the host's config); the datadir's filesystem, free
    space and page cache are read and dropped on that host. (Here the host is this machine over
    the test sshd and the server is the session's managed MariaDB.)"""
    import os
    import subprocess

    from mysqlbench.targets.control import SshControl

    from conftest import SSH_CONN

    restarted = tmp_path / "restarted"
    remote = TargetConnection.from_fields(
        "ssh_controlled", host="127.0.0.1", port=managed.spec.port, login=target.login, password=bench_password,
        extra={"control": "ssh", "benchmark_target": True, "ssh_conn_id": SSH_CONN,
               "restart_command": ["touch", str(restarted)], "datadir": str(managed.datadir)})
    control = take_control(remote, _NoLock())
    assert type(control) is SshControl and control.restarts and not control.globals_by_restart
    with pytest.raises(NotApplicable, match=r"\['innodb_old_blocks_time'\] need a server restart .*set them there"):
        control.restart({"innodb_old_blocks_time": 1})
    assert not restarted.exists()
    control.restart(holder="0123abcd")
    assert restarted.exists() and "MYSQLBENCH_HOLDER=0123abcd" in sshd.commands()[-1]

    host = f"127.0.0.1:{sshd.port}"
    local_fs = subprocess.run(["stat", "-f", "-c", "%T", str(managed.datadir)], capture_output=True, text=True,
                              check=True).stdout.strip()
    assert control.filesystem() == {"type": local_fs, "host": host}
    state = control.host_state()
    free = os.statvfs(managed.datadir).f_bavail * os.statvfs(managed.datadir).f_frsize
    assert state["host"] == host and abs(state["free_bytes"][str(managed.datadir)] - free) < 1 << 30
    files = control.drop_os_cache("target_files")
    assert files["method"] == "posix_fadvise(DONTNEED) over SSH" and files["host"] == host
    assert int(files["scope"].split()[0]) > 10 and files["scope"].endswith("files of the target's datadir")
    whole = control.drop_os_cache("host")  # root here: drop_caches is allowed
    assert whole == {"method": "drop_caches over SSH", "scope": "whole page cache", "host": host}


def test_a_host_query_that_hangs_leaves_the_answer_unknown_not_the_task_stuck(sshd, managed, target,
                                                                            bench_password, monkeypatch):
    """Issue 25 item 4: dropping the timeout of SshControl.host_state's df survived (every test's
    host answered). A df that hangs on the benchmark host (a stale network mount, say): the host's
    free space reads as unknown once the query's timeout has passed, and the caller goes on."""
    import threading
    import time

    from mysqlbench.targets import control as control_module

    from conftest import SSH_CONN

    monkeypatch.setattr(control_module, "HOST_QUERY_TIMEOUT_S", 2)
    remote = TargetConnection.from_fields(
        "ssh_hanging_df", host="127.0.0.1", port=managed.spec.port, login=target.login, password=bench_password,
        extra={"control": "ssh", "benchmark_target": True, "ssh_conn_id": SSH_CONN,
               "restart_command": ["true"], "datadir": str(managed.datadir)})
    control = take_control(remote, _NoLock())
    shim = sshd.shim("df", "exec sleep 97")
    try:
        answered: dict = {}
        asking = threading.Thread(target=lambda: answered.update(control.host_state()), daemon=True)
        started = time.monotonic()
        asking.start()
        asking.join(40)
        assert not asking.is_alive(), "host_state is still waiting on the hanging df"
        assert answered["free_bytes"] == {str(managed.datadir): None} and time.monotonic() - started < 30
        assert any("df -B1" in line for line in sshd.commands())
    finally:
        shim.unlink()


def test_a_managed_instance_found_down_is_started_by_the_next_task(target, managed):
    """After a reboot (or `target down`), the first task that names the managed target starts its
    instance again, under the target's hold, before anything connects."""
    managed.stop()
    try:
        assert not managed.is_running()
        ensure_running(target)
        assert managed.is_running()
        with target.session() as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
    finally:
        if not managed.is_running():
            managed.start()


def test_a_connection_that_only_claims_our_instance_gets_sql_only(managed, session_dir):
    """A connection whose extras name our managed instance but which reaches another server (here
    a second instance on its own port) is not proven: it gets the connection-only control, on that
    connection, and a restart asked of it is refused naming it; our instance is not touched."""
    from services import free_port

    from mysqlbench.targets.managed import BENCH_USER, ManagedServer, ManagedSpec

    other = ManagedServer(ManagedSpec(name="impostor", conn_id="mysqlbench_impostor", port=free_port()),
                          root=session_dir / "work" / "targets" / "impostor")  # where the mysql OS user reaches
    other.start()
    try:
        claim = TargetConnection.from_fields(
            "mysqlbench_claims_test", host="127.0.0.1", port=other.spec.port, login=BENCH_USER,
            password=other.ensure_benchmark_user(), extra={"control": "managed", "managed_target": managed.spec.name})
        started = managed.pid()
        only = take_control(claim, _NoLock())
        assert type(only) is ConnectionOnly and only.target is claim and not claim.managed_proven
        with pytest.raises(NotApplicable, match="mysqlbench_claims_test is managed .*cannot be restarted"):
            only.restart()
        with only.admin_connect() as conn, conn.cursor() as cur:  # SQL, on the server it reaches
            cur.execute("SELECT @@port")
            assert cur.fetchone()[0] == other.spec.port
        assert managed.pid() == started
    finally:
        other.stop()
