"""Holds with a lease in the results store (a real SQLite file shared by threads here, by processes
and hosts in a deployment): one holder per resource, all resources or none, the host shared by two
targets, a dead holder's lease taken over, a live holder's lease renewed."""

import threading
import time

import pytest

from mysqlbench.results.store import ResultsStore
from mysqlbench.targets.hold import Hold, HoldTimeout, holder_of


@pytest.fixture()
def store(tmp_path):
    return ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")


def test_a_held_target_makes_the_next_taker_wait_until_it_is_released(store):
    first = Hold(store, ["target:a", "host:h"], "first").acquire()
    with pytest.raises(HoldTimeout, match="still held") as refused:
        Hold(store, ["target:a", "host:h"], "second").acquire(wait_s=1)
    # what a blocked user reads: which resource, whose hold, for what, and how long its lease has left
    said = str(refused.value)
    assert "'resource': 'host:h'" in said and "'purpose': 'first'" in said and f"'holder': '{first.token}'" in said
    left = float(said.split("'lease_left_s': ")[1].split("}")[0])
    assert 0 < left <= first.lease_s, said
    got = []
    waiter = threading.Thread(target=lambda: got.append(Hold(store, ["target:a", "host:h"], "third").acquire(5)))
    waiter.start()
    time.sleep(1)
    assert got == []  # still waiting
    first.release()
    waiter.join()
    assert got and holder_of(store, "target:a")["purpose"] == "third"
    got[0].release()


def test_two_targets_on_one_host_never_run_at_once(store):
    one = Hold(store, ["target:a", "host:h"], "a").acquire()
    with pytest.raises(HoldTimeout):
        Hold(store, ["target:b", "host:h"], "b").acquire(wait_s=1)
    # all or nothing: target b was not taken while its host was busy
    assert holder_of(store, "target:b") is None
    Hold(store, ["target:c", "host:other"], "c").acquire(wait_s=1).release()  # another host is free
    one.release()


def test_a_dead_holders_lease_runs_out(store):
    dead = Hold(store, ["target:a", "host:h"], "killed", lease_s=1.0).acquire()
    dead._stop.set()  # its process died: no more renewals, no release
    started = time.monotonic()
    taker = Hold(store, ["target:a", "host:h"], "next").acquire(wait_s=10)
    assert 0.5 < time.monotonic() - started < 5 and holder_of(store, "host:h")["purpose"] == "next"
    taker.release()


def test_a_live_holder_keeps_its_hold_past_the_lease(store):
    live = Hold(store, ["target:a"], "long point", lease_s=0.9).acquire()
    time.sleep(2.5)  # almost three leases: the heartbeat renewed it
    with pytest.raises(HoldTimeout):
        Hold(store, ["target:a"], "other").acquire(wait_s=0.5)
    assert not live.lost
    live.release()
    assert holder_of(store, "target:a") is None


def _hold_in_a_process(db: str, resources: list[str], detach: bool):
    """A real holder process: takes the hold (a 60 s lease), says so, then sleeps or detaches and exits."""
    import subprocess
    import sys

    code = ("import sys, time; sys.path.insert(0, 'plugins')\n"
            "from mysqlbench.results.store import ResultsStore\n"
            "from mysqlbench.targets.hold import Hold\n"
            f"h = Hold(ResultsStore('sqlite:///{db}'), {resources!r}, 'child').acquire()\n"
            f"if {detach}: h.detach(); print('held', flush=True); sys.exit(0)\n"
            "print('held', flush=True); time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_killed_holder_on_this_host_is_taken_over_at_once(store, tmp_path):
    """SIGKILL leaves the rows and a 60 s lease; its process is gone, so a retry on the same host
    need not wait the lease out (a dead holder on another host still must)."""
    child = _hold_in_a_process(str(tmp_path / "results.db"), ["target:a", "host:h"], detach=False)
    with pytest.raises(HoldTimeout):
        Hold(store, ["target:a"], "while alive").acquire(wait_s=1)
    child.kill()
    child.wait()
    started = time.monotonic()
    taker = Hold(store, ["target:a", "host:h"], "retry").acquire(wait_s=5)
    assert time.monotonic() - started < 2 and holder_of(store, "target:a")["purpose"] == "retry"
    taker.release()


def test_a_detached_build_hold_outlives_the_process_that_took_it(store, tmp_path):
    """Between a dataset build's tasks no process holds it: only its lease says when it is gone."""
    child = _hold_in_a_process(str(tmp_path / "results.db"), ["dataset:x"], detach=True)
    child.wait()
    with pytest.raises(HoldTimeout):
        Hold(store, ["dataset:x"], "a study point").acquire(wait_s=1)
    assert holder_of(store, "dataset:x")["purpose"] == "child"


def test_a_server_is_named_by_its_machine_and_port_when_it_cannot_be_asked():
    """The name holds and the restore journal use for a server that does not answer: its machine
    (this host for a loopback address or a socket; a host name in any case is one machine) and its
    port or socket, so two servers on one machine never share a hold, and one server reached by
    two spellings of its host does; a target's resources name that machine."""
    import socket

    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.targets.hold import address_identity, server_host

    def conn(host, port=3306, **extra):
        return TargetConnection.from_fields("t", host=host, port=port, login="x", password="y", extra=extra)

    assert server_host(conn("DB1.Example")) == "db1.example" == server_host(conn("db1.example"))
    assert server_host(conn("127.0.0.1")) == socket.gethostname() == server_host(conn("localhost"))
    assert address_identity(conn("DB1.example", 3307)) == "server:db1.example:3307"
    assert address_identity(conn("db1.example", 3307)) != address_identity(conn("db1.example", 3308))
    local = f"server:{socket.gethostname()}:3306"
    assert address_identity(conn("127.0.0.1")) == local == address_identity(conn("localhost"))


def test_a_holder_that_ends_without_releasing_still_exits_and_is_taken_over(store, tmp_path):
    """A task process that ends holding (an error past every handler, a forgotten release) exits
    all the same: the lease's heartbeat never keeps a process alive. Its rows stay until their
    lease runs out, but on this host the next taker sees the process gone and takes over at once.
    (Issue 25 item 4: a heartbeat that was not a daemon thread survived every test.)"""
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, 'plugins')\n"
            "from mysqlbench.results.store import ResultsStore\n"
            "from mysqlbench.targets.hold import Hold\n"
            f"Hold(ResultsStore('sqlite:///{tmp_path / 'results.db'}'), ['target:a'], 'child').acquire()\n"
            "print('held', flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    assert holder_of(store, "target:a")["purpose"] == "child"  # left behind
    started = time.monotonic()
    taker = Hold(store, ["target:a"], "next").acquire(wait_s=5)
    assert time.monotonic() - started < 2 and holder_of(store, "target:a")["purpose"] == "next"
    taker.release()
