"""Our TPC-C-derived driver: N terminals, each a thread with its own connection, issuing the five
transactions by the run's protocol (``statements.py``): as stored procedures
(``include/sql/tpcc/procedures/``, the default), so each transaction is one round trip and the
server does the work it would do for any client, or statement by statement as tpcc-mysql issues
them, for a like-for-like comparison of drivers. The client's part per transaction is drawing its
inputs (NURand keys, items, remote warehouses), issuing it and timing it.

Every completed call is recorded with its type, its end time and latency and how it ended
(``ok``, ``rollback`` for the 1% New-Orders the specification rolls back, ``error``); a deadlock
or lock wait timeout is retried (up to :data:`MAX_RETRIES` times) and the retries are counted. The
results keep only calls that ended inside the measure window, after the rampup.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from mysqlbench.errors import InvalidInput, MysqlbenchError
from mysqlbench.workloads.tpcc import CUSTOMERS, ITEMS, last_name
from mysqlbench.workloads.tpcc.statements import DEFAULT_PROTOCOL, EXECUTORS, check_protocol

log = logging.getLogger(__name__)

TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
# the specification's minimums (clause 5.2.3), percent of all transactions; New-Order is the rest
MINIMUMS = {"payment": 43.0, "order_status": 4.0, "delivery": 4.0, "stock_level": 4.0}
# weights at exactly the minimums: a weighted draw this close to them falls below them in many windows
STANDARD_MIX = {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4}
# Named mixes are decks of cards, one per terminal, dealt in a shuffled order and shuffled again once
# dealt: every 22 (or 23) transactions of a terminal hold exactly its cards.
#   spec: 9 New-Order, 10 Payment, 1 each of the rest: Payment 45.5%, the others 4.5%, a margin of
#         2.5 and 0.5 points above the minimums; New-Order 40.9%. Any run of at least WINDOW_K_PER_TERMINAL
#         transactions per terminal keeps every minimum (tests/unit/test_tpcc_driver.py).
#   tpcc-mysql: the peers' 10/10/1/1/1 (tpcc-mysql deals it from one deck its threads share,
#         sysbench-tpcc draws with those weights): New-Order and Payment 43.5%, the others 4.3%.
DECKS = {
    "spec": {"new_order": 9, "payment": 10, "order_status": 1, "delivery": 1, "stock_level": 1},
    "tpcc-mysql": {"new_order": 10, "payment": 10, "order_status": 1, "delivery": 1, "stock_level": 1},
}
DEFAULT_MIX = "spec"
WINDOW_K_PER_TERMINAL = 250
# clause 5.2.5.7 (keying time, seconds) and 5.2.5.4 (mean think time, seconds)
KEYING_S = {"new_order": 18, "payment": 3, "order_status": 2, "delivery": 2, "stock_level": 2}
THINK_MEAN_S = {"new_order": 12, "payment": 12, "order_status": 10, "delivery": 5, "stock_level": 5}
RETRYABLE = {1213, 1205}   # deadlock, lock wait timeout
MAX_RETRIES = 3
PROCEDURES = TRANSACTIONS  # one stored procedure per transaction: tpcc_<name>


def check_mix(mix: str | dict[str, float]) -> str | dict[str, float]:
    """A deck's name, or percent weights per transaction (drawn at random each call)."""
    if isinstance(mix, str):
        if mix not in DECKS:
            raise InvalidInput(f"unknown mix {mix!r}: a deck ({', '.join(DECKS)}) or percent weights per transaction")
        return mix
    if not isinstance(mix, dict):
        raise InvalidInput(f"mix is a deck's name ({', '.join(DECKS)}) or percent weights per transaction, not {mix!r}")
    unknown = sorted(set(mix) - set(TRANSACTIONS))
    if unknown:
        raise InvalidInput(f"unknown transaction(s) in the mix: {unknown}; known: {list(TRANSACTIONS)}")
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 for v in mix.values()):
        raise InvalidInput(f"mix weights must be non-negative numbers: {mix}")
    total = sum(mix.values())
    if abs(total - 100) > 1e-9:
        raise InvalidInput(f"the mix must sum to 100 (percent), not {total:g}: {mix}")
    return {t: float(mix.get(t, 0)) for t in TRANSACTIONS}


def c_run(c_load: int, rng: random.Random) -> int:
    """The run's C for NURand(255, ...): |C_run - C_load| in 65..119, not 96 or 112 (2.1.6.1)."""
    while True:
        value = rng.randrange(256)
        delta = abs(value - c_load)
        if 65 <= delta <= 119 and delta not in (96, 112):
            return value


@dataclass(frozen=True)
class Constants:
    c_last: int      # NURand(255, 0, 999)
    c_id: int        # NURand(1023, 1, 3000)
    ol_i_id: int     # NURand(8191, 1, 100000)

    @classmethod
    def for_run(cls, c_load: int, seed: int | None) -> "Constants":
        rng = random.Random(seed)
        return cls(c_run(c_load, rng), rng.randrange(1024), rng.randrange(8192))


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


@dataclass
class DriverConfig:
    warehouses: int
    connections: int
    rampup_s: float
    measure_s: float
    interval_s: float = 10.0
    mix: str | dict[str, float] = DEFAULT_MIX
    think_time: bool = False
    seed: int | None = None
    protocol: str = DEFAULT_PROTOCOL
    processes: int = 1  # the terminals spread over this many processes, threads within each

    def __post_init__(self) -> None:
        check_protocol(self.protocol)
        if self.connections < 1:
            raise InvalidInput(f"connections must be at least 1, not {self.connections}")
        if not 1 <= self.processes <= self.connections:
            raise InvalidInput(f"processes must be between 1 and connections ({self.connections}), not {self.processes}")
        if self.measure_s <= 0 or self.rampup_s < 0 or self.interval_s <= 0:
            raise InvalidInput("measure_s and interval_s must be positive and rampup_s not negative")
        self.mix = check_mix(self.mix)


class Dealer:
    """One terminal's next transaction type: from its own shuffled deck when the mix names one,
    else a weighted draw."""

    def __init__(self, mix: str | dict[str, float], rng: random.Random):
        self.rng = rng
        self.weights = None if isinstance(mix, str) else [mix[t] for t in TRANSACTIONS]
        self.cards = [t for t in TRANSACTIONS for _ in range(DECKS[mix][t])] if isinstance(mix, str) else []
        self.left: list[str] = []

    def next(self) -> str:
        if self.weights is not None:
            return self.rng.choices(TRANSACTIONS, self.weights)[0]
        if not self.left:
            self.left = list(self.cards)
            self.rng.shuffle(self.left)
        return self.left.pop()


class Inputs:
    """One terminal's input generator (clause 2.x.1): home warehouse fixed, everything else drawn."""

    def __init__(self, home: int, warehouses: int, constants: Constants, rng: random.Random, district: int = 1):
        self.home, self.warehouses, self.k, self.rng = home, warehouses, constants, rng
        self.district = district  # the terminal's own district: Stock-Level's (clause 2.8.1.1)

    def _other_warehouse(self) -> int:
        other = self.rng.randint(1, self.warehouses - 1)
        return other + 1 if other >= self.home else other

    def _customer(self) -> tuple[int, str]:
        """By last name 60% of the time (id 0 tells the procedure to look the name up)."""
        if self.rng.random() < 0.60:
            return 0, last_name(nurand(self.rng, 255, 0, 999, self.k.c_last))
        return nurand(self.rng, 1023, 1, CUSTOMERS, self.k.c_id), ""

    def new_order(self) -> tuple[Any, ...]:
        """(w_id, d_id, c_id, lines, all_local); each line (supplying warehouse, item, quantity)."""
        rng = self.rng
        count = rng.randint(5, 15)
        rollback = rng.random() < 0.01
        lines = []
        for n in range(count):
            item = nurand(rng, 8191, 1, ITEMS, self.k.ol_i_id)
            if rollback and n == count - 1:
                item = ITEMS + 1  # unused: the transaction rolls back there
            supply = self.home if self.warehouses == 1 or rng.random() >= 0.01 else self._other_warehouse()
            lines.append((supply, item, rng.randint(1, 10)))
        if not rollback:  # one lock order for all terminals: no deadlocks on stock
            lines.sort()
        all_local = int(all(s == self.home for s, _, _ in lines))
        return self.home, rng.randint(1, 10), nurand(rng, 1023, 1, CUSTOMERS, self.k.c_id), tuple(lines), all_local

    def payment(self) -> tuple[Any, ...]:
        rng = self.rng
        d_id = rng.randint(1, 10)
        if self.warehouses == 1 or rng.random() >= 0.15:
            c_w_id, c_d_id = self.home, d_id
        else:
            c_w_id, c_d_id = self._other_warehouse(), rng.randint(1, 10)
        c_id, c_last = self._customer()
        return (self.home, d_id, c_w_id, c_d_id, c_id, c_last, rng.randint(100, 500_000) / 100)

    def order_status(self) -> tuple[Any, ...]:
        c_id, c_last = self._customer()
        return (self.home, self.rng.randint(1, 10), c_id, c_last)

    def delivery(self) -> tuple[Any, ...]:
        return (self.home, self.rng.randint(1, 10))

    def stock_level(self) -> tuple[Any, ...]:
        return (self.home, self.district, self.rng.randint(10, 20))



@dataclass
class Record:
    """Calls of one terminal, column-wise (cheap to append, cheap to merge)."""

    kind: list[int] = field(default_factory=list)
    end: list[float] = field(default_factory=list)      # seconds since the driver started
    latency: list[float] = field(default_factory=list)  # seconds
    status: list[int] = field(default_factory=list)     # 0 ok, 1 rollback, 2 error
    retries: list[int] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)


class Driver:
    """Runs ``config`` against ``connect()`` (a callable opening a connection in the schema): the
    terminals ``terminals`` (all of them by default) as threads of this process."""

    def __init__(self, config: DriverConfig, connect, c_load: int, terminals: list[int] | None = None):
        self.config = config
        self.connect = connect
        self.terminals = list(range(config.connections)) if terminals is None else terminals
        self.constants = Constants.for_run(c_load, config.seed)
        self.records: list[Record] = []
        self.connection_ids: list[int] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._failures: list[BaseException] = []
        self.started: float | None = None
        self._ready = threading.Barrier(len(self.terminals) + 1)
        self._go = threading.Event()

    def start(self) -> None:
        """Connect every terminal, then let them all go at once."""
        self.connect_terminals()
        self.go()

    def connect_terminals(self) -> None:
        for n in self.terminals:
            record = Record()
            self.records.append(record)
            thread = threading.Thread(target=self._terminal, args=(n, record), name=f"tpcc-terminal-{n}", daemon=True)
            self._threads.append(thread)
            thread.start()
        try:
            self._ready.wait(timeout=60)
        except threading.BrokenBarrierError as exc:
            self.stop()
            raise MysqlbenchError(f"TPC-C terminals could not connect: {self._failures[:1]}") from exc

    def go(self, started: float | None = None) -> None:
        """``started``: the run's time origin (``time.perf_counter``, one clock for every process
        of the machine), when terminals in several processes share it."""
        self.started = time.perf_counter() if started is None else started
        self._go.set()

    def stop(self) -> None:
        self._stop.set()
        self._ready.abort()
        for thread in self._threads:
            thread.join(timeout=120)

    @property
    def failures(self) -> list[BaseException]:
        return list(self._failures)

    def cpu_seconds(self) -> float:
        """The driver's CPU so far: this process's."""
        return time.process_time()

    def _terminal(self, n: int, record: Record) -> None:
        import MySQLdb

        config = self.config
        rng = random.Random(None if config.seed is None else config.seed * 10_007 + n)
        # terminals spread over the warehouses, then their districts: the specification binds a
        # terminal to one warehouse and one district
        home, district = n % config.warehouses + 1, (n // config.warehouses) % 10 + 1
        inputs = Inputs(home, config.warehouses, self.constants, rng, district)
        kinds = list(TRANSACTIONS)
        dealer = Dealer(config.mix, rng)
        try:
            conn = self.connect()
            with conn.cursor() as cur:
                cur.execute("SELECT CONNECTION_ID()")
                self.connection_ids.append(cur.fetchone()[0])
            executor = EXECUTORS[config.protocol](conn)
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._failures.append(exc)
            self._ready.abort()
            return
        try:
            self._ready.wait(timeout=60)
        except threading.BrokenBarrierError:
            conn.close()
            return
        self._go.wait()
        t0 = self.started
        try:
            while not self._stop.is_set():
                kind = dealer.next()
                args = getattr(inputs, kind)()
                if config.think_time:
                    self._stop.wait(KEYING_S[kind])
                retries = 0
                begin = time.perf_counter()
                while True:
                    try:
                        status = executor.run(kind, args)  # 0 committed, 1 the intended rollback
                        break
                    except MySQLdb.OperationalError as exc:  # the transaction is rolled back
                        code = exc.args[0] if exc.args else None
                        if code in RETRYABLE and retries < MAX_RETRIES and not self._stop.is_set():
                            retries += 1
                            continue
                        status = 2
                        key = f"{kind}: {code}"
                        record.errors[key] = record.errors.get(key, 0) + 1
                        if code in (2006, 2013) or self._stop.is_set():  # gone or killed: this terminal is done
                            raise
                        break
                end = time.perf_counter()
                record.kind.append(kinds.index(kind))
                record.end.append(end - t0)
                record.latency.append(end - begin)
                record.status.append(status)
                record.retries.append(retries)
                if config.think_time:
                    self._stop.wait(min(rng.expovariate(1 / THINK_MEAN_S[kind]), 10 * THINK_MEAN_S[kind]))
        except BaseException as exc:  # noqa: BLE001
            if not self._stop.is_set():
                self._failures.append(exc)
        finally:
            executor.close()
            conn.close()


def _terminal_process(config: DriverConfig, target, schema: str, c_load: int, terminals: list[int], pipe) -> None:
    """A child process of :class:`ProcessDriver`: its terminals as threads, started on the parent's
    word at the parent's time origin, their records sent back once stopped."""
    driver = Driver(config, lambda: target.connect(database=schema), c_load, terminals)
    try:
        driver.connect_terminals()
    except MysqlbenchError as exc:
        pipe.send(("failed", str(exc)))
        return
    pipe.send(("ready", None))
    try:
        message, started = pipe.recv()
        if message == "go":
            driver.go(started)
            pipe.recv()  # "stop"
    except EOFError:  # the parent is gone: stop
        pass
    driver.stop()
    pipe.send(("done", (driver.records, driver.connection_ids, [repr(f) for f in driver.failures])))


class ProcessDriver:
    """The terminals spread over ``config.processes`` processes (terminal n in process n mod P),
    threads within each, so the driver's Python is not held to one core by the GIL. The same
    interface as :class:`Driver`; the children connect through ``target`` themselves."""

    def __init__(self, config: DriverConfig, target, schema: str, c_load: int):
        self.config, self.target, self.schema, self.c_load = config, target, schema, c_load
        self.records: list[Record] = []
        self.connection_ids: list[int] = []
        self._failures: list[str] = []
        self._children: list[tuple[Any, Any]] = []
        self.started: float | None = None
        self._stopped = False
        self._stopping = threading.Lock()  # a kill (the engine's window) and the caller's stop may race

    def start(self) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")  # no copy of the parent's threads and connections
        for i in range(self.config.processes):
            terminals = list(range(i, self.config.connections, self.config.processes))
            parent, child = context.Pipe()
            process = context.Process(target=_terminal_process, name=f"tpcc-terminals-{i}", daemon=True,
                                      args=(self.config, self.target, self.schema, self.c_load, terminals, child))
            process.start()
            child.close()
            self._children.append((process, parent))
        for process, pipe in self._children:
            message, why = pipe.recv() if pipe.poll(120) else ("failed", "no word in 120 s")
            if message != "ready":
                self.stop()
                raise MysqlbenchError(f"TPC-C terminals could not connect ({process.name}): {why}")
        self.started = time.perf_counter()
        for _, pipe in self._children:
            pipe.send(("go", self.started))

    def stop(self) -> None:
        with self._stopping:
            if self._stopped:
                return
            self._stopped = True
            for _, pipe in self._children:
                try:
                    pipe.send(("stop", None))
                except OSError:  # that child is gone already
                    pass
            for process, pipe in self._children:
                got = False
                try:
                    if pipe.poll(150):
                        message, payload = pipe.recv()
                        if message == "done":
                            records, ids, failures = payload
                            self.records += records
                            self.connection_ids += ids
                            self._failures += failures
                            got = True
                except (EOFError, OSError):
                    pass
                if not got and self.started is not None:  # its terminals ran: their calls are lost
                    self._failures.append(f"{process.name} ended without its records")
                process.join(30)
                if process.is_alive():
                    process.kill()
                    self._failures.append(f"{process.name} did not stop")

    @property
    def failures(self) -> list[str]:
        return list(self._failures)

    def cpu_seconds(self) -> float:
        """The driver's CPU so far: this process's and its children's (read while they run)."""
        from mysqlbench.ossampler import process_cpu_seconds

        return time.process_time() + sum(process_cpu_seconds(p.pid) or 0.0 for p, _ in self._children)


def driver_for(config: DriverConfig, target, schema: str, c_load: int) -> "Driver | ProcessDriver":
    """Threads in this process, or (``config.processes`` > 1) in several."""
    if config.processes > 1:
        return ProcessDriver(config, target, schema, c_load)
    return Driver(config, lambda: target.connect(database=schema), c_load)


def interval_edges(config: DriverConfig) -> list[float]:
    """The time series' interval edges, seconds since the terminals started, on the nominal grid
    (the window's read edges are a few ms off it) and aligned to the measure window's start: the
    rampup's intervals counted back from it (the first may be short), the window's from it (the last
    is short when measure_s is not a multiple of interval_s). So no interval straddles the rampup's
    end."""
    step, rampup, end = config.interval_s, config.rampup_s, config.rampup_s + config.measure_s
    back = [rampup - k * step for k in range(int(rampup // step) + 1) if rampup - k * step > 1e-9]
    forward = [rampup + k * step for k in range(1, int(config.measure_s // step) + 1)]
    edges = [0.0, *sorted(back), *forward]
    if end - edges[-1] > 1e-9:
        edges.append(end)
    return edges


def window_intervals(intervals: list[dict[str, Any]], config: DriverConfig) -> list[dict[str, Any]]:
    """The intervals the stability figure is judged over: inside the measure window and whole (a
    short last interval's rate is a few calls over a fraction of the width). A peer's intervals
    (its own report's, no start) count when they end an interval or more after the rampup."""
    eps = 1e-9

    def counts(i: dict[str, Any]) -> bool:
        if "start_s" not in i:
            return i["end_s"] - config.interval_s >= config.rampup_s - eps
        return i["start_s"] >= config.rampup_s - eps and i["end_s"] - i["start_s"] >= config.interval_s - eps

    return [i for i in intervals if counts(i)]


def results(records: list[Record], config: DriverConfig, window: tuple[float, float] | None = None, *,
            reads: list[tuple[float, float]] | None = None) -> dict[str, Any]:
    """What the measure window holds: calls that ended in [rampup, rampup + measure), or in
    ``window`` (seconds since the terminals started): the edges at which the database's own count
    was read, so the two counts cover the same span. ``reads``: those reads' round trips (sent,
    answered); the database's snapshot lies somewhere inside each, so a New-Order is counted on one
    side only if it was alive (begun, not yet seen ended) during one of them, and
    ``new_orders_alive_at_reads`` counts those: the most the two counts can honestly differ by."""
    import numpy as np

    kind = np.concatenate([np.asarray(r.kind, dtype=np.int8) for r in records]) if records else np.array([])
    end = np.concatenate([np.asarray(r.end) for r in records]) if records else np.array([])
    latency = np.concatenate([np.asarray(r.latency) for r in records]) if records else np.array([])
    status = np.concatenate([np.asarray(r.status, dtype=np.int8) for r in records]) if records else np.array([])
    retries = np.concatenate([np.asarray(r.retries) for r in records]) if records else np.array([])
    start, stop = window or (config.rampup_s, config.rampup_s + config.measure_s)
    inside = (end >= start) & (end < stop)
    per_type = {}
    for index, name in enumerate(TRANSACTIONS):
        mine = inside & (kind == index)
        ok = mine & (status == 0)
        lat = latency[ok] * 1000
        per_type[name] = {
            "count": int(mine.sum()), "ok": int(ok.sum()), "rollbacks": int((mine & (status == 1)).sum()),
            "errors": int((mine & (status == 2)).sum()), "retries": int(retries[mine].sum()),
            **{f"p{q}_ms": (float(np.percentile(lat, q)) if len(lat) else None) for q in (50, 90, 95, 99)},
            "max_ms": float(lat.max()) if len(lat) else None,
        }
    new_orders = per_type["new_order"]["ok"]
    alive = None
    if reads is not None:
        committed = (kind == 0) & (status == 0)
        began = end - latency
        alive = int(sum((committed & (began <= answered) & (end >= sent)).sum() for sent, answered in reads))
    # per interval of the whole run (rampup included, marked), from the calls' end times
    edges = interval_edges(config)
    bins = np.digitize(end, edges) - 1
    intervals = []
    for b in range(len(edges) - 1):
        here = bins == b
        width = edges[b + 1] - edges[b]
        no = here & (kind == 0) & (status == 0)
        lat = latency[here & (status == 0)] * 1000
        intervals.append({"start_s": float(edges[b]), "end_s": float(edges[b + 1]),
                          "new_orders_per_min": float(no.sum()) * 60 / width,
                          "transactions_per_s": float((here & (status == 0)).sum()) / width,
                          "p95_ms": float(np.percentile(lat, 95)) if len(lat) else None})
    errors: dict[str, int] = {}
    for record in records:
        for key, value in record.errors.items():
            errors[key] = errors.get(key, 0) + value
    return {"new_orders_per_min": new_orders * 60 / (stop - start), "new_orders": new_orders,
            "new_orders_alive_at_reads": alive,
            "new_orders_whole_run": int(((kind == 0) & (status == 0)).sum()),
            "transactions": int((inside & (status == 0)).sum()), "per_type": per_type, "intervals": intervals,
            "errors": errors, "measure_s": stop - start, "rampup_s": start}


def run(config: DriverConfig, target, schema: str, c_load: int, *, on_measure_start=None, on_measure_end=None,
        should_stop=None) -> dict[str, Any]:
    """Rampup, then the measure window (``on_measure_start``/``on_measure_end`` mark it, e.g. for
    counters), then stop; ``should_stop()`` ends it early (a kill)."""
    driver = driver_for(config, target, schema, c_load)
    driver.start()
    try:
        deadline = driver.started + config.rampup_s
        while time.perf_counter() < deadline and not (should_stop and should_stop()):
            time.sleep(0.05)
        if on_measure_start:
            on_measure_start()
        deadline = driver.started + config.rampup_s + config.measure_s
        while time.perf_counter() < deadline and not (should_stop and should_stop()):
            time.sleep(0.05)
        if on_measure_end:
            on_measure_end()
    finally:
        driver.stop()
    if driver.failures:
        raise MysqlbenchError(f"TPC-C terminal failed: {driver.failures[0]!r}")
    return results(driver.records, config)
