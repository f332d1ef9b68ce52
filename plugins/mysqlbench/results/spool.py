"""Measurements kept until they are stored: when the results store cannot be written after a point
measured (a full disk, a locked or unreachable database), the point's samples and its server
snapshot are written beside the run instead, the task fails, and its retry stores the spooled
samples rather than measuring again (which would cost the time, and measure another moment)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any

from mysqlbench import paths
from mysqlbench.results.store import Sample, TimeSeries
from mysqlbench.targets.flavor import ServerInfo

log = logging.getLogger(__name__)


class Spool:
    def __init__(self, dag_id: str, run_id: str, task_id: str, map_index: int, root: Path | None = None):
        # ids may hold ':' and '+' (Airflow's generated run ids): one folder per run, never shared
        self.path = ((root or paths.work_dir() / "spool") / paths.run_dir_name(dag_id) / paths.run_dir_name(run_id)
                     / f"{paths.run_dir_name(task_id)}.{map_index}.json")

    def exists(self) -> bool:
        return self.path.exists()

    def write(self, samples: list[Sample], snapshot: tuple[ServerInfo, dict[str, str]] | None) -> None:
        data = {"samples": [{**dataclasses.asdict(s), "series": dataclasses.asdict(s.series) if s.series else None}
                            for s in samples],
                "snapshot": None if snapshot is None else {"info": dataclasses.asdict(snapshot[0]),
                                                           "variables": snapshot[1]}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        with open(partial, "w") as handle:
            json.dump(data, handle, default=str)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, self.path)
        log.error("results store not writable: %d samples spooled to %s; a retry stores them", len(samples), self.path)

    def read(self) -> tuple[list[Sample], tuple[ServerInfo, dict[str, str]] | None]:
        data = json.loads(self.path.read_text())
        samples = [Sample(**{**s, "series": TimeSeries(**s["series"]) if s["series"] else None}) for s in data["samples"]]
        snapshot = None
        if data["snapshot"]:
            info = data["snapshot"]["info"]
            snapshot = (ServerInfo(**{**info, "version": tuple(info["version"])}), data["snapshot"]["variables"])
        return samples, snapshot

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def record_or_spool(recorder, spool: Spool, samples: list[Sample], snapshot: Any, **kwargs: Any) -> None:
    """Record; if the store refuses, spool and re-raise so Airflow retries the task."""
    try:
        recorder.record(samples, snapshot=snapshot, **kwargs)
    except Exception:
        spool.write(samples, snapshot)
        raise
    spool.clear()
