"""The managed MariaDB: start, health, restart with new settings, the benchmark user, knobs
applied and read back, restart detection and caps, on a real server."""

import json
import os

import pytest
from services import free_port

from mysqlbench import knobs
from mysqlbench.errors import InvalidInput, NotApplicable, TargetUnavailable, UnsafeOperation
from mysqlbench.results.store import ResultsStore
from mysqlbench.targets.connection import TargetConnection, server_info
from mysqlbench.targets.journal import RestoreJournal


def test_runs_as_unprivileged_user_on_its_own_port(managed):
    import os
    import pwd

    health = managed.health()
    assert health["port"] == managed.spec.port and "MariaDB" in health["version"]
    assert health["datadir"] == str(managed.datadir) and 0 <= health["uptime_s"] < 24 * 3600  # `target status`
    pid = int(managed.pid_file.read_text())
    owner = pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
    assert owner == (managed.spec.os_user if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name)
    cnf = managed.cnf.read_text()
    assert "query_cache_type                    = OFF" in cnf
    assert "innodb_buffer_pool_load_at_startup  = OFF" in cnf


def test_benchmark_user_logs_in_and_detects_flavor(target):
    conn = target.connect()
    info = server_info(conn)
    with conn.cursor() as cur:  # every connection speaks utf8mb4 (data and plans with any text)
        cur.execute("SELECT @@character_set_client, @@character_set_results")
        assert cur.fetchone() == ("utf8mb4", "utf8mb4")
    conn.close()
    assert info.is_mariadb and info.at_least(10, 6)


def test_restart_applies_new_settings_and_resets_to_base(managed):
    managed.restart({"innodb_buffer_pool_size": "384M"})
    conn = managed.admin_connect()
    assert knobs.read_variable(conn, "innodb_buffer_pool_size", "global") == 384 << 20
    conn.close()
    managed.restart()
    conn = managed.admin_connect()
    assert knobs.read_variable(conn, "innodb_buffer_pool_size", "global") == 256 << 20  # test.yaml's override
    conn.close()


def test_config_overrides_are_allow_listed(managed):
    with pytest.raises(InvalidInput, match="is refused, path variable"):
        managed.render_config({"init_file": "/tmp/evil.sql"})
    with pytest.raises(InvalidInput):
        managed.render_config({"innodb_buffer_pool_size": "1G\ninit-file=/tmp/evil.sql"})


def test_session_knobs_are_set_and_read_back_in_the_same_session(target):
    conn = target.connect()
    info = server_info(conn)
    applied = knobs.apply_settings(conn, target, info, knobs.translate(
        {"join_buffer_size": "6M", "mrr_buffer_size": "256K", "sort_buffer_size": "4M"}, info))
    effective = {a.variable: (a.scope, a.effective) for a in applied}
    assert effective == {
        "join_buffer_size": ("session", 6 << 20),
        "join_buffer_space_limit": ("session", 48 << 20),  # raised so 6M is real, not capped at 2M
        "mrr_buffer_size": ("session", 256 << 10),
        "sort_buffer_size": ("session", 4 << 20),
    }
    assert knobs.read_variable(conn, "join_buffer_size", "session") == 6 << 20
    conn.close()
    fresh = target.connect()  # session scope: nobody else's session changed
    assert knobs.read_variable(fresh, "join_buffer_size", "session") == 256 << 10
    fresh.close()


def test_restart_need_is_read_from_the_server(target):
    conn = target.connect()
    info = server_info(conn)
    assert knobs.describe_variable(conn, info, "innodb_buffer_pool_size", may_probe_global=True).dynamic is True
    page = knobs.describe_variable(conn, info, "innodb_page_size", may_probe_global=True)
    assert page.dynamic is False and page.source == "information_schema.SYSTEM_VARIABLES"
    with pytest.raises(NotApplicable, match="needs a server restart"):
        knobs.apply_settings(conn, target, info, [knobs.Setting("raw", "innodb_log_buffer_size", 32 << 20, "global")])
    with pytest.raises(NotApplicable, match="does not exist"):
        knobs.describe_variable(conn, info, "no_such_variable", may_probe_global=True)
    conn.close()


def test_a_value_the_server_shrinks_is_an_error(target):
    conn = target.connect()
    info = server_info(conn)
    # max_sort_length's maximum is 8M: a bigger ask is silently clamped by the server
    with pytest.raises(NotApplicable, match="capped or out of range"):
        knobs.apply_settings(conn, target, info, knobs.translate({}, info, raw_variables={"max_sort_length": "64M"}))
    conn.close()


def test_global_settings_need_a_marked_target(target, managed):
    from conftest import EXTERNAL_CONN

    external = TargetConnection.from_airflow(EXTERNAL_CONN)
    assert not external.benchmark_target
    conn = external.connect()
    info = server_info(conn)
    before = knobs.read_variable(conn, "innodb_buffer_pool_size", "global")
    with pytest.raises(UnsafeOperation, match="not marked as a benchmark target") as refused:
        knobs.apply_settings(conn, external, info, knobs.translate({"buffer_pool_size": "512M"}, info),
                             journal=RestoreJournal(external.conn_id))
    # it never claimed to be ours: no word of a claim, only how to mark it
    assert 'not marked as a benchmark target (set "benchmark_target": true' in str(refused.value)
    # session settings are fine on any target
    knobs.apply_settings(conn, external, info, knobs.translate({"join_buffer_size": "1M"}, info))
    assert knobs.read_variable(conn, "innodb_buffer_pool_size", "global") == before
    conn.close()


def test_load_profile_raises_the_redo_log_and_reverts_it(target, admin):
    """The opt-in redo log profile: 2G during the load, the earlier size restored afterwards."""
    from mysqlbench.workloads.tpch import dataset

    conn = target.connect()
    before = knobs.read_variable(conn, "innodb_log_file_size", "global")
    journal = RestoreJournal.of(target)
    profile = dataset._raise_redo_log(conn, target, server_info(conn), 2 << 30, journal)
    assert profile[0]["variable"] == "innodb_log_file_size" and profile[0]["during"] == 2 << 30
    assert knobs.read_variable(conn, "innodb_log_file_size", "global") == 2 << 30
    # the old value was journaled before the change
    assert journal.entries() == [{"kind": "global", "variable": "innodb_log_file_size", "old": before}]
    reverted = dataset._revert_profile(conn, profile, journal, target)
    assert journal.entries() == []
    assert reverted[0]["after"] == before == knobs.read_variable(conn, "innodb_log_file_size", "global")
    conn.close()


def test_a_global_change_without_a_journal_is_refused(target):
    from mysqlbench.errors import MysqlbenchError

    conn = target.connect()
    info = server_info(conn)
    try:
        with pytest.raises(MysqlbenchError, match="without a restore journal"):
            knobs.apply_settings(conn, target, info, knobs.translate({"buffer_pool_size": "128M"}, info))
    finally:
        conn.close()


def test_the_journal_undoes_global_changes_with_boolean_values(target, tmp_path):
    """SET GLOBAL through the journal, then replay: back to the values found (ON/OFF read back as 1/0)."""
    from conftest import EXTERNAL_MARKED_CONN

    marked = TargetConnection.from_airflow(EXTERNAL_MARKED_CONN)
    journal = RestoreJournal(marked.conn_id, ResultsStore(f"sqlite:///{tmp_path / 'journal.db'}"))
    conn = marked.connect()
    info = server_info(conn)
    before = {v: knobs.read_variable(conn, v, "global") for v in ("innodb_adaptive_hash_index", "innodb_old_blocks_time")}
    settings = knobs.translate({}, info, raw_variables={"innodb_old_blocks_time": 777})
    applied = knobs.apply_settings(conn, marked, info, settings, journal=journal)
    assert applied[0].scope == "global" and knobs.read_variable(conn, "innodb_old_blocks_time", "global") == 777
    journal.record_global("innodb_adaptive_hash_index", before["innodb_adaptive_hash_index"])
    with conn.cursor() as cur:
        cur.execute("SET GLOBAL innodb_adaptive_hash_index = %s", ("OFF" if before["innodb_adaptive_hash_index"] else "ON",))
    undone = journal.replay(marked)
    assert {e["variable"] for e in undone} == {"innodb_old_blocks_time", "innodb_adaptive_hash_index"}
    assert journal.entries() == []
    assert {v: knobs.read_variable(conn, v, "global") for v in before} == before
    conn.close()


def test_each_managed_instance_has_its_own_tmpdir_beside_its_datadir(managed, admin):
    from mysqlbench.results.lineage import filesystem_of, host_facts

    assert knobs.read_variable(admin, "tmpdir", "global").rstrip("/") == str(managed.tmpdir)
    assert managed.tmpdir.parent == managed.root and managed.tmpdir.is_dir()
    assert filesystem_of(managed.tmpdir) == filesystem_of(managed.datadir)
    facts = host_facts(managed.datadir, managed.tmpdir)  # what lineage records with every run
    assert facts["tmpdir"] == str(managed.tmpdir) and facts["tmpdir_fs"] == facts["datadir_fs"]


def test_setting_the_benchmark_password_leaves_it_in_no_log(managed, admin, bench_password):
    """With the general log on (as a table and as a file), `target up`'s password statements are
    never logged."""
    log_file = managed.root / "general.log"
    with admin.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.general_log, @@GLOBAL.log_output, @@GLOBAL.general_log_file")
        before = cur.fetchone()
        cur.execute("TRUNCATE TABLE mysql.general_log")
        cur.execute("SET GLOBAL general_log_file = %s", (str(log_file),))
        cur.execute("SET GLOBAL log_output = 'TABLE,FILE'")
        cur.execute("SET GLOBAL general_log = ON")
    try:
        managed.set_benchmark_password(bench_password)  # the same password: the fixtures keep working
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL general_log = OFF")  # or this check's own query would be logged
            cur.execute("SELECT COUNT(*), COALESCE(SUM(argument LIKE %s), 0) FROM mysql.general_log",
                        (f"%{bench_password}%",))
            logged, leaked = cur.fetchone()
    finally:
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL general_log = %s", (before[0],))
            cur.execute("SET GLOBAL log_output = %s", (before[1],))
            cur.execute("SET GLOBAL general_log_file = %s", (before[2],))
            cur.execute("TRUNCATE TABLE mysql.general_log")
    assert logged > 0  # the log was on and saw this test's own statements
    assert not leaked and bench_password not in log_file.read_text()


def test_every_allow_listed_mariadb_variable_exists_on_mariadb_10_11(admin):
    """A typo in include/configs/variables.yaml would allow nothing and say nothing: each variable
    allowed for MariaDB exists on the real server, except those that only older or newer releases have."""
    with admin.cursor() as cur:
        cur.execute("SELECT LOWER(VARIABLE_NAME) FROM information_schema.SYSTEM_VARIABLES")
        present = {row[0] for row in cur.fetchall()}
    allowed = knobs.variable_policy()["allowed"]
    only_in_other_releases = {"innodb_buffer_pool_instances", "innodb_thread_concurrency",  # removed in 10.6
                              "innodb_concurrency_tickets", "innodb_commit_concurrency",
                              "transaction_isolation"}  # 11.1+ (tx_isolation before)
    assert sorted(set(allowed["common"] + allowed["mariadb"]) - present - only_in_other_releases) == []


def _no_datadir(server) -> bool:
    return not server.datadir.exists() and not server.server_record.exists()


def test_an_unknown_server_id_fails_before_anything_is_made(tmp_path):
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    server = ManagedServer(ManagedSpec(name="nope", conn_id="x", port=free_port(), server="mysql-1.0"), root=tmp_path / "nope")
    with pytest.raises(InvalidInput, match="unknown server 'mysql-1.0'; the catalog .* has: .*mysql-9.7"):
        server.start()
    assert _no_datadir(server)


def test_a_basedir_without_a_server_binary_is_refused(tmp_path):
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    (tmp_path / "mysql-8.4" / "bin").mkdir(parents=True)
    spec = ManagedSpec(name="tarball", conn_id="x", port=free_port(), server="mysql-8.4", basedir=str(tmp_path / "mysql-8.4"))
    server = ManagedServer(spec, root=tmp_path / "tarball")
    with pytest.raises(InvalidInput, match="has no bin/mysqld: point it at the unpacked tarball"):
        server.start()
    assert _no_datadir(server)


def test_a_port_in_use_is_refused_before_the_datadir_is_made(tmp_path):
    import socket

    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = ManagedServer(ManagedSpec(name="busy", conn_id="x", port=taken.getsockname()[1]),
                               root=tmp_path / "busy")
        with pytest.raises(TargetUnavailable, match="is in use by another process"):
            server.start()
    assert _no_datadir(server)


def test_a_failed_first_start_leaves_no_half_made_datadir(session_dir):
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    root = session_dir / "work" / "targets" / "broken"  # where the mysql OS user reaches
    server = ManagedServer(ManagedSpec(name="broken", conn_id="x", port=free_port(),
                                       overrides={"innodb_flush_method": "no_such_method"}), root=root)
    try:
        with pytest.raises(TargetUnavailable, match="exited"):
            server.start()
    finally:
        server.stop()  # if it did start, stop it rather than orphan it
    assert _no_datadir(server)


def test_io_capacity_above_its_cap_raises_the_cap_first_and_the_journal_puts_both_back(target, tmp_path):
    """SET GLOBAL innodb_io_capacity above innodb_io_capacity_max is clamped by the server (2000
    by default): the knob raises the cap first, to twice the value, and the journal undoes both."""
    from conftest import EXTERNAL_MARKED_CONN

    marked = TargetConnection.from_airflow(EXTERNAL_MARKED_CONN)
    journal = RestoreJournal(marked.conn_id, ResultsStore(f"sqlite:///{tmp_path / 'journal.db'}"))
    conn = marked.connect()
    try:
        info = server_info(conn)
        names = ("innodb_io_capacity", "innodb_io_capacity_max")
        before = {v: knobs.read_variable(conn, v, "global") for v in names}
        wanted = before["innodb_io_capacity_max"] * 2  # above the cap in force
        settings = knobs.translate({"io_capacity": wanted}, info)
        assert [s.variable for s in settings] == ["innodb_io_capacity_max", "innodb_io_capacity"]
        knobs.apply_settings(conn, marked, info, settings, journal=journal)
        assert knobs.read_variable(conn, "innodb_io_capacity", "global") == wanted
        assert knobs.read_variable(conn, "innodb_io_capacity_max", "global") == 2 * wanted
        journal.replay(marked)
        assert {v: knobs.read_variable(conn, v, "global") for v in names} == before
    finally:
        conn.close()


def test_datadirs_initialised_at_once_do_not_collide(session_dir):
    """Two instances' first starts at the same moment (two clones' demo targets in the suite, two
    users on one host): each bootstrap keeps its temporary tables in its own tmpdir. In the shared
    /tmp, one of two concurrent mariadb-install-db runs failed with "Unknown table
    'mysql.tmp_user_sys'" (in one of four runs of three rounds here); eight rounds must all succeed."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    base = session_dir / "work" / "targets" / "concurrent"  # where the mysql OS user reaches
    try:
        for round_ in range(8):
            servers = [ManagedServer(ManagedSpec(name=f"c{round_}{i}", conn_id="x", port=free_port()),
                                     root=base / f"r{round_}-{i}") for i in range(2)]
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(lambda s: s.initialize(), servers))  # raises TargetUnavailable on a failed init
            assert all((s.datadir / "mysql").is_dir() for s in servers)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_journal_left_through_one_connection_id_is_undone_through_another(target, managed, admin, monkeypatch):
    """Issue 27 item 1: a run through one connection id set globals and was killed (its journal
    left behind); a study through a second connection id to the same server, here through the
    server's socket rather than TCP on 127.0.0.1, must undo them when it takes the server, not
    measure on them and later "restore" them as the state it found. The journal is the server's
    (as the server names itself), kept in the results store."""
    from mysqlbench.targets.hold import server_identity, target_resources
    from mysqlbench.targets.lock import exclusive

    from conftest import EXTERNAL_MARKED_CONN, TEST_CONN

    marked = TargetConnection.from_airflow(EXTERNAL_MARKED_CONN)
    second = "mysqlbench_external_marked_socket"
    through_socket = json.loads(os.environ[f"AIRFLOW_CONN_{EXTERNAL_MARKED_CONN.upper()}"])
    through_socket.pop("port")
    through_socket["host"] = "localhost"
    through_socket["extra"] = {**through_socket["extra"], "unix_socket": str(managed.socket)}
    monkeypatch.setenv(f"AIRFLOW_CONN_{second.upper()}", json.dumps(through_socket))
    again = TargetConnection.from_airflow(second)
    # one server, one name: whether reached by TCP, by its socket, or as the managed instance it is
    assert server_identity(again) == server_identity(marked) == server_identity(TargetConnection.from_airflow(TEST_CONN))
    assert target_resources(again)[0] == managed.resource()
    found = knobs.read_variable(admin, "innodb_old_blocks_time", "global")
    conn = marked.connect()
    try:  # what the killed run did before SIGKILL: journal, then SET GLOBAL; no cleanup
        knobs.apply_settings(conn, marked, server_info(conn),
                             knobs.translate({}, server_info(conn), raw_variables={"innodb_old_blocks_time": 4321}),
                             journal=RestoreJournal.of(marked))
    finally:
        conn.close()
    assert knobs.read_variable(admin, "innodb_old_blocks_time", "global") == 4321
    left = RestoreJournal.of(again).record()
    assert left["target"] == marked.conn_id and left["entries"][0]["variable"] == "innodb_old_blocks_time"
    with exclusive(again, "a study through the second connection id"):
        assert knobs.read_variable(admin, "innodb_old_blocks_time", "global") == found  # undone before measuring
    assert RestoreJournal.of(again).entries() == []


def test_a_journal_file_an_earlier_release_left_is_taken_over(target, admin):
    """Journals used to be files in work/journal/, named by the server's address: a change left
    there by a killed run before an upgrade is still undone, from the store, and the file goes."""
    import hashlib

    from mysqlbench import paths
    from mysqlbench.targets.hold import address_identity

    from conftest import EXTERNAL_MARKED_CONN

    marked = TargetConnection.from_airflow(EXTERNAL_MARKED_CONN)
    found = knobs.read_variable(admin, "innodb_old_blocks_time", "global")
    legacy = paths.work_dir() / "journal" / f"{hashlib.sha256(address_identity(marked).encode()).hexdigest()[:24]}.json"
    legacy.parent.mkdir(parents=True, exist_ok=True)
    legacy.write_text(json.dumps({"server": address_identity(marked), "target": marked.conn_id, "owner": {"pid": 1},
                                  "entries": [{"kind": "global", "variable": "innodb_old_blocks_time", "old": found}]}))
    with admin.cursor() as cur:
        cur.execute("SET GLOBAL innodb_old_blocks_time = 4322")
    journal = RestoreJournal.of(marked)
    assert not legacy.exists() and journal.owner() == {"pid": 1}
    assert [e["variable"] for e in journal.replay(marked)] == ["innodb_old_blocks_time"]
    assert knobs.read_variable(admin, "innodb_old_blocks_time", "global") == found
    # the releases before those named the file by connection id: taken over as well
    legacy = legacy.with_name(f"{marked.conn_id}.json")
    legacy.write_text(json.dumps({"target": marked.conn_id, "owner": {"pid": 2},
                                  "entries": [{"kind": "global", "variable": "innodb_old_blocks_time", "old": found}]}))
    with admin.cursor() as cur:
        cur.execute("SET GLOBAL innodb_old_blocks_time = 4323")
    journal = RestoreJournal.of(marked)
    assert not legacy.exists() and journal.owner() == {"pid": 2}
    assert [e["variable"] for e in journal.replay(marked)] == ["innodb_old_blocks_time"]
    assert knobs.read_variable(admin, "innodb_old_blocks_time", "global") == found


def test_a_managed_target_that_is_down_is_unreachable_not_unmarked(target, managed):
    """Issue 27 item 2: a managed instance that is stopped (after make clean, or bin/mysqlbench
    target down) is told apart from a server that is not ours, with the next step in the message;
    one that another process holds while it is down (its cold point restarts it) is waited for,
    not refused."""
    import threading
    import time as _time

    from mysqlbench.results.store import ResultsStore
    from mysqlbench.targets import connection
    from mysqlbench.targets.hold import Hold, target_resources

    from conftest import TEST_CONN

    managed.stop()
    try:
        down = TargetConnection.from_airflow(TEST_CONN)
        started = _time.monotonic()
        with pytest.raises(TargetUnavailable, match=r"not reachable .*start it with: bin/mysqlbench target up test"):
            down.require_benchmark_target("run study x")
        assert _time.monotonic() - started < 10  # nobody restarting it: said at once
        # down, it is held by the name it has when up (its spec says it), not by its address
        assert target_resources(down)[0] == managed.resource()
        other = Hold(ResultsStore.from_airflow(), target_resources(down)[:1], "another study's cold point")
        other.owner = {**other.owner, "pid": os.getpid() + 1}  # another process's hold
        other.acquire(5)
        threading.Timer(3.0, managed.start, kwargs={"holder": other.token}).start()  # the holder restarts it
        started = _time.monotonic()
        try:
            TargetConnection.from_airflow(TEST_CONN).require_benchmark_target("run study x")  # proven once back
        finally:
            other.release()
        assert 2.5 < _time.monotonic() - started < connection.MANAGED_WAIT_S
    finally:
        if not managed.is_running():
            managed.start()


def test_a_value_the_server_raises_to_its_minimum_is_not_applicable(target, admin):
    """Issue 27: max_connections 1 is raised to 10 by MariaDB; the point would be labelled 1 and
    measure 10. A clamp upward is as much a clamp as one downward; a size rounded up to its
    chunk is not."""
    conn = target.connect()
    info = server_info(conn)
    journal = RestoreJournal.of(target)
    try:
        with pytest.raises(NotApplicable, match=r"max_connections: asked for 1, .* took 10 .*raised"):
            knobs.apply_settings(conn, target, info, knobs.translate({}, info, raw_variables={"max_connections": 1}),
                                 journal=journal)
        knobs.check_effective(knobs.translate({"buffer_pool_size": "129M"}, info)[0], 129 << 20, 256 << 20, info)
    finally:
        journal.replay(target)
        conn.close()


def test_a_file_test_directory_inside_the_datadir_is_refused(target, managed):
    """Issue 27: sysbench fileio files under the managed datadir showed up as an `sbfiles` schema
    and were left behind; the directory is refused before anything is written."""
    from mysqlbench.workloads.sysbench.workload import SysbenchFileioWorkload

    inside = managed.datadir / "sbfiles"
    with pytest.raises(InvalidInput, match="inside the server's datadir"):
        SysbenchFileioWorkload._outside_datadir(target, inside)
    assert not inside.exists()
    SysbenchFileioWorkload._outside_datadir(target, managed.root / "sysbench-fileio")  # the default: beside it


def test_a_buffer_pool_larger_than_the_host_is_refused_by_the_first_task(target, managed):
    """The study's first task (check_spec) bounds a managed target's sizes by this host's memory,
    before any server is touched."""
    from mysqlbench.studies.steps import check_spec

    from conftest import TEST_CONN

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    too_big = f"{(memory >> 30) + 8}G"
    with pytest.raises(InvalidInput, match=f"buffer_pool_size {too_big} is more than the memory"):
        check_spec("tpch_power", {"target_conn_id": TEST_CONN, "settings": {"buffer_pool_size": too_big}})
    check_spec("tpch_power", {"target_conn_id": TEST_CONN, "settings": {"buffer_pool_size": "256M"}})


def test_a_managed_restart_waits_for_another_clients_statement_and_refuses_to_cut_it_short(target, managed):
    """Issue 27: a managed restart ended another client's 53-second query ("Lost connection").
    A statement that ends within the wait is waited for; one that outlasts it makes the restart
    refuse, naming it, and the statement runs on."""
    import threading
    import time as _time

    from mysqlbench.targets.sessions import ServerBusy

    def client(seconds, out):
        conn = managed.admin_connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT SLEEP(%s)", (seconds,))
                out.append(cur.fetchone()[0])  # 0: it slept to the end; 1: it was interrupted
        except Exception as exc:  # noqa: BLE001 - what the client would have seen
            out.append(exc)
        finally:
            conn.close()

    def running(seconds):
        out = []
        thread = threading.Thread(target=client, args=(seconds, out))
        thread.start()
        admin = managed.admin_connect()
        try:
            with admin.cursor() as cur:
                for _ in range(50):
                    cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(%%'")
                    if cur.fetchone()[0]:
                        break
                    _time.sleep(0.1)
        finally:
            admin.close()
        return thread, out

    pid = managed.pid()
    thread, out = running(3)
    started = _time.monotonic()
    managed.restart(wait_s=30)
    thread.join()
    assert out == [0] and _time.monotonic() - started > 2 and managed.pid() != pid  # it ended, then the restart

    pid = managed.pid()
    thread, out = running(8)
    from mysqlbench.targets.sessions import busy_sessions

    with managed.admin_connect() as admin:  # what the refusal names: the other session, as the server lists it
        [busy] = busy_sessions(admin)
    assert busy["user"] == managed.admin_user and busy["command"] == "Query"
    assert busy["host"].split(":")[0] in ("localhost", "127.0.0.1")
    assert busy["statement"] == "SELECT SLEEP(8)" and isinstance(busy["seconds"], int) and 0 <= busy["seconds"] < 8
    assert isinstance(busy["id"], int) and busy["id"] > 0
    with pytest.raises(ServerBusy, match=r"still running after 1 s; not going on with restarting managed target "
                                         r"'test' over it: .*'statement': 'SELECT SLEEP\(8\)'"):
        managed.restart(wait_s=1)
    thread.join()
    assert out == [0] and managed.pid() == pid  # not cut short; the server was not restarted


def test_a_snapshot_puts_the_datadir_back_as_it_was(managed):
    """A workload that changes its data (TPC-C) starts every point from the same bytes: a snapshot
    is a copy of the stopped datadir, the server started again after it; a restore stops the server
    and puts the copy back for the caller to start. No half-made copy is left, a name that could
    leave the snapshots folder is refused, and restoring a snapshot never taken says so."""
    import shutil

    from mysqlbench.errors import MysqlbenchError

    def sql(*statements):
        with managed.admin_connect() as conn, conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
            return cur.fetchall()

    name = "snap_test-1.0"
    try:
        sql("CREATE DATABASE snap_test", "CREATE TABLE snap_test.t (v INT) ENGINE=InnoDB",
            "INSERT INTO snap_test.t VALUES (1)")
        taken = managed.snapshot(name)
        assert taken["snapshot"] == name and taken["bytes"] > 1 << 20 and managed.is_running()
        assert managed.has_snapshot(name) and (managed.snapshot_dir(name) / "snap_test").is_dir()
        sql("UPDATE snap_test.t SET v = 2", "CREATE TABLE snap_test.later (x INT)")
        assert managed.restore(name)["snapshot"] == name and not managed.is_running()
        managed.start()
        assert sql("SELECT v FROM snap_test.t") == ((1,),)
        assert sql("SHOW TABLES FROM snap_test") == (("t",),)  # what came after the snapshot is gone
        # a second dataset's snapshot beside the first (the snapshots folder there by now), then
        # the first put back again over the second's changes
        sql("UPDATE snap_test.t SET v = 3")
        assert managed.snapshot(f"{name}-b")["snapshot"] == f"{name}-b" and managed.has_snapshot(name)
        stale = managed.datadir.with_name(managed.datadir.name + ".restoring")  # an interrupted restore's
        stale.mkdir()
        (stale / "half-copied").write_text("x")
        managed.restore(name)
        assert not stale.exists() and not (managed.datadir / "half-copied").exists()
        managed.start()
        assert sql("SELECT v FROM snap_test.t") == ((1,),)
        left = [p.name for p in (managed.root / "snapshots").iterdir()] + [p.name for p in managed.root.iterdir()]
        assert not [n for n in left if n.endswith((".partial", ".restoring"))], left
        for bad in ("../data", ".hidden", "a/b", ""):
            with pytest.raises(InvalidInput, match="snapshot name"):
                managed.snapshot(bad)
        with pytest.raises(MysqlbenchError, match="has no snapshot 'never_taken'"):
            managed.restore("never_taken")
        assert managed.is_running()  # refused before the server was touched
    finally:
        if not managed.is_running():
            managed.start()
        sql("DROP DATABASE IF EXISTS snap_test")
        for taken_name in (name, f"{name}-b"):
            shutil.rmtree(managed.root / "snapshots" / taken_name, ignore_errors=True)


def test_a_server_whose_socket_is_gone_is_still_stopped(session_dir, monkeypatch):
    """The admin socket removed under a running server (a tmp cleaner does it): SHUTDOWN cannot be
    sent, so stop falls back to SIGTERM, which the server takes as a clean shutdown, and the
    process is gone well within the stop deadline (shortened here, so a stop that only waits
    fails in seconds, not in five minutes)."""
    from mysqlbench.targets import managed as managed_module
    from mysqlbench.targets.instance import _alive
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    monkeypatch.setattr(managed_module, "STOP_TIMEOUT_S", 20)
    root = session_dir / "work" / "targets" / "socketless"  # where the mysql OS user reaches
    server = ManagedServer(ManagedSpec(name="socketless", conn_id="x", port=free_port()), root=root)
    server.start()
    try:
        pid = server.pid()
        server.socket.unlink()
        with pytest.raises(TargetUnavailable, match="does not answer"):
            server.admin_connect()
        server.stop()
        assert server.pid() is None and not _alive(pid)  # (a zombie until this process reaps it)
        assert "Shutdown complete" in (root / "error.log").read_text()  # SIGTERM: a clean shutdown
    finally:
        if server.pid() is not None:
            os.kill(server.pid(), 9)


@pytest.mark.parametrize("server_id", [None, "mysql-9.7"])  # the session's MariaDB; MySQL's --initialize
def test_a_users_own_option_file_does_not_reach_a_new_datadir(server_id, session_dir, tmp_path, monkeypatch):
    """The datadir is made with no option file but ours: a DBA's ~/.my.cnf (here one asking for
    8 KB InnoDB pages) would otherwise shape the bootstrap, and the instance, started on its own
    config, would refuse that datadir or differ from every other target."""
    from mysqlbench import servers
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    if server_id:
        servers.fetch(server_id)  # instant when the session has it already
    (tmp_path / ".my.cnf").write_text("[mysqld]\ninnodb_page_size = 8192\n[mariadb]\ninnodb_page_size = 8192\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    name = f"own_options_{server_id or 'default'}".replace("-", "_").replace(".", "_")
    spec = ManagedSpec(name=name, conn_id="x", port=free_port(), **({"server": server_id} if server_id else {}))
    server = ManagedServer(spec, root=session_dir / "work" / "targets" / name)  # where the mysql OS user reaches
    try:
        server.start()
        conn = server.admin_connect()
        with conn.cursor() as cur:
            cur.execute("SELECT @@innodb_page_size")
            assert cur.fetchone()[0] == 16384
        conn.close()
    finally:
        server.stop()
