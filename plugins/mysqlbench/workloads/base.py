"""The one interface every workload implements, and the registry that finds them by name.

The study engine (``mysqlbench.studies``) knows no table, query or tool: it holds the target,
applies the point's settings, prepares the cache, opens a measuring :class:`Session`, and asks the
workload to measure one *unit* (a query for TPC-H, a timed window for a driver) inside the
engine's :class:`~mysqlbench.measure.MeasuredWindow`. A workload declares:

- ``dataset_model`` / ``params_model``: pydantic models of its ``dataset`` and ``workload_params``;
- ``check_units``: the units a spec may name;
- ``ensure_dataset``: make sure its data is loaded and verified on the target;
- ``prepare`` / ``warm_run`` / ``measure`` / ``after_unit``: one unit's life in a point;
- ``expectations``: its own Great Expectations over the run's executions frame;
- ``primary``: the metric a study compares, with its better direction;
- ``label``: what the numbers may be called ("TPC-H-derived ...").
"""

from __future__ import annotations

import enum
import importlib
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from mysqlbench.counters import with_derived
from mysqlbench.errors import InvalidInput

if TYPE_CHECKING:
    from mysqlbench.flavor import ServerInfo
    from mysqlbench.measure import MeasuredWindow
    from mysqlbench.results.store import Sample, TimeSeries


class Better(str, enum.Enum):
    LOWER = "lower"    # time
    HIGHER = "higher"  # throughput


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    better: Better
    title: str

    def change_words(self) -> tuple[str, str]:
        """How a decrease and an increase read ("less time" / "more time")."""
        return (f"less {self.title}", f"more {self.title}")


@dataclass
class Answer:
    """What a unit returned, as far as validation and the report need it: never the whole answer
    (a power run's Q16 has 18,314 rows at SF 1); the comparison with an oracle is made in the
    task, on the whole answer, and only its verdict is kept."""

    rows: int
    checksum: str
    oracle: str | None = None          # "match", why not, or None when no oracle was asked
    sample: list[list[Any]] = field(default_factory=list)


@dataclass
class UnitResult:
    """One measured execution of a unit. ``status`` is ok | timeout; a killed execution never
    returns (the window raises)."""

    status: str
    primary: float | None
    metrics: dict[str, tuple[float | None, str]] = field(default_factory=dict)  # name -> (value, unit)
    counters: dict[str, int | None] = field(default_factory=dict)              # None: absent
    os: dict[str, Any] = field(default_factory=dict)
    os_samples: list[dict[str, Any]] = field(default_factory=list)
    series: dict[str, tuple["TimeSeries", str]] = field(default_factory=dict)  # name -> (series, unit)
    answer: Answer | None = None
    facts: dict[str, Any] = field(default_factory=dict)                        # recorded in metadata


@dataclass
class Session:
    """The measuring session a point opened for the workload: the point's session settings are in
    force on ``conn``; ``window`` is the engine's measured window."""

    conn: Any
    target: Any
    server: "ServerInfo"
    schema: str
    window: "MeasuredWindow"
    timeout_s: float
    slow_log: bool
    kill_query: Any            # callable(connection_id)
    server_pid: int | None
    state: dict[str, Any] = field(default_factory=dict)  # the workload's own per-session objects


class StudyWorkload(ABC):
    name: ClassVar[str]
    label: ClassVar[str]
    unit_title: ClassVar[str]
    primary: ClassVar[Metric]
    dataset_model: ClassVar[type[BaseModel]]
    params_model: ClassVar[type[BaseModel]]
    # a driver warms the cache in its own rampup, inside the window; a query is warmed by untimed runs
    warms_in_window: ClassVar[bool] = False
    # its cold and warm caches are InnoDB's buffer pool, so a cold execution reads pages from disk
    # and a warm one almost none (validated); a CPU or file test's cache is not
    buffer_pool_cache: ClassVar[bool] = True
    # measuring changes the data (a driver's transactions): every repetition starts from the
    # verified dataset again (``reset_dataset``), then a (re)start of a managed server
    changes_dataset: ClassVar[bool] = False
    # workload params a spec's matrix may sweep like knobs (threads, concurrency): a point runs the
    # workload with its own value, and its label names it
    sweep_params: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec, point_params: dict[str, Any] | None = None) -> None:
        self.spec = spec
        self.params = self.params_model.model_validate({**spec.workload_params, **(point_params or {})})

    @classmethod
    @abstractmethod
    def check_units(cls, units: list[str], dataset: BaseModel) -> None:
        """Raise :class:`InvalidInput` for a unit this workload does not know."""

    @classmethod
    def check_spec(cls, spec) -> None:
        """Raise ``ValueError`` for workload params that contradict the spec's own limits (checked
        when the spec is built, before anything runs)."""
        return None

    def check_runnable(self) -> None:
        """Raise :class:`InvalidInput` when this machine lacks what the run needs (a tool, a built
        peer); called by the study's first task, before any server is touched."""
        return None

    @abstractmethod
    def ensure_dataset(self, target, recorder) -> dict[str, Any]:
        """Make sure the dataset is on the target, loaded and verified; returns at least
        ``dataset_id`` (small, secret-free: it goes to XCom)."""

    def check_dataset(self, target, dataset_id: str) -> None:
        """Inside a point's hold: raise if the dataset is no longer the verified ``dataset_id``
        (rebuilt or changed between points). A workload without a lasting dataset checks nothing."""
        return None

    def reset_dataset(self, target, control, holder: str) -> dict[str, Any]:
        """Inside a point's hold, before each repetition of a workload that ``changes_dataset``:
        put the verified dataset back (``control``: the managed instance, stopped here, started
        by the engine with the point's settings; None for a connection-only target). Returns the
        evidence recorded with the execution."""
        raise NotImplementedError(f"{self.name} changes its dataset but cannot reset it")

    @abstractmethod
    def prepare(self, unit: str) -> Any:
        """What ``measure`` needs for ``unit`` (parsed, validated), made once per point."""

    def warm_run(self, session: Session, prepared: Any) -> int | None:
        """One untimed run for warming the cache; returns the pages it read from disk
        (``counters.PHYSICAL_READS``; None where the server does not count them)."""
        return None

    def warm(self, session: Session, prepared: Any) -> dict[str, Any] | None:
        """A workload whose cache is not the buffer pool warms it here and returns the evidence
        (a file test reads its files once; a CPU test has nothing to warm and says so); None lets
        the engine repeat ``warm_run`` until physical reads stop."""
        return None

    def evict_cold(self, target) -> dict[str, int]:
        """A cold repetition: this workload's own files (beyond the server's datadir) out of the
        benchmark host's page cache; returns files evicted per directory."""
        return {}

    def release_dataset(self, target) -> dict[str, Any] | None:
        """The study's teardown: remove what only this run needed (a file test's files, unless the
        spec keeps them). Returns what was done, or None."""
        return None

    @abstractmethod
    def measure(self, session: Session, prepared: Any, repetition: int) -> UnitResult:
        """Measure ``prepared`` once, inside ``session.window`` and nothing else."""

    def after_unit(self, session: Session, prepared: Any, meta: dict[str, Any]) -> list["Sample"]:
        """Point-level samples after the measured runs (plans); never inside a window."""
        return []

    def expectations(self, frame) -> list[Any]:
        """This workload's Great Expectations over the run's executions frame."""
        return []

    def report_tables(self, rows: list[dict[str, Any]], frame) -> list[tuple[str, Any]]:
        """This workload's own report tables (title, pandas DataFrame) from the run's recorded rows
        and executions frame."""
        return []

    def summary_counters(self) -> tuple[str, ...]:
        """Counters the report tabulates per point."""
        return with_derived(self.spec.counters)


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# -- the registry -------------------------------------------------------------------------------

# Built-in workloads by name -> "module:class". A deployment adds its own with
# MYSQLBENCH_WORKLOADS="name=module:Class,other=module:Class" (the module must be importable where
# the DAGs are parsed and where tasks run).
BUILTIN = {"tpch": "mysqlbench.workloads.tpch.workload:TpchWorkload",
           "tpcc": "mysqlbench.workloads.tpcc.workload:TpccWorkload",
           "sysbench_cpu": "mysqlbench.workloads.sysbench.workload:SysbenchCpuWorkload",
           "sysbench_fileio": "mysqlbench.workloads.sysbench.workload:SysbenchFileioWorkload",
           "sysbench_oltp": "mysqlbench.workloads.sysbench.workload:SysbenchOltpWorkload",
           "slap": "mysqlbench.workloads.slap.workload:SlapWorkload"}


def registry() -> dict[str, str]:
    extra = {}
    for item in filter(None, (os.environ.get("MYSQLBENCH_WORKLOADS") or "").split(",")):
        name, _, path = item.partition("=")
        if not name.strip() or ":" not in path:
            raise InvalidInput(f"MYSQLBENCH_WORKLOADS entry {item!r} is not name=module:Class")
        extra[name.strip()] = path.strip()
    return {**BUILTIN, **extra}


def workload_class(name: str) -> type[StudyWorkload]:
    known = registry()
    if name not in known:
        raise InvalidInput(f"unknown workload {name!r}; known: {', '.join(sorted(known))}")
    module, _, attr = known[name].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, StudyWorkload)):
        raise InvalidInput(f"workload {name!r} ({known[name]}) is not a StudyWorkload")
    return cls
