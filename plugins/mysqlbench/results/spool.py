"""Measurements kept until they are stored: when the results store cannot be written after a point
measured (a full disk, a locked or unreachable database), the point's samples are written beside the
run instead, with everything their rows need (the measuring try's lineage, the server snapshot and
the host's facts as they were while measuring), and the task fails.

They are stored at the next chance: by the point's retry (which then does not measure again: that
would cost the time, and measure another moment), else by the study's teardown on the same worker
(retries spent, the store back), else by any later teardown there once they are ``STALE_S`` old,
or by ``bin/mysqlbench spool store``. Rows stored from a spool carry the try that measured them."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from mysqlbench import paths
from mysqlbench.flavor import ServerInfo
from mysqlbench.results.lineage import Lineage
from mysqlbench.results.store import Sample, TimeSeries

log = logging.getLogger(__name__)

STALE_S = 6 * 3600  # a spool this old belongs to a run long over: any teardown on its worker stores it


def spool_root() -> Path:
    return paths.work_dir() / "spool"


class Spool:
    def __init__(self, dag_id: str, run_id: str, task_id: str, map_index: int, root: Path | None = None):
        # ids may hold ':' and '+' (Airflow's generated run ids): one folder per run, never shared
        self.path = ((root or spool_root()) / paths.run_dir_name(dag_id) / paths.run_dir_name(run_id)
                     / f"{paths.run_dir_name(task_id)}.{map_index}.json")

    @classmethod
    def at(cls, path: Path) -> "Spool":
        spool = cls.__new__(cls)
        spool.path = path
        return spool

    def exists(self) -> bool:
        return self.path.exists()

    def write(self, samples: list[Sample], snapshot: tuple[ServerInfo, dict[str, str]] | None,
              lineage: Lineage | None = None, facts: dict[str, Any] | None = None) -> None:
        """``lineage``: the measuring try's (its server fields are filled when stored); ``facts``:
        the host's, read now."""
        data = {"samples": [{**dataclasses.asdict(s), "series": dataclasses.asdict(s.series) if s.series else None}
                            for s in samples],
                "snapshot": None if snapshot is None else {"info": dataclasses.asdict(snapshot[0]),
                                                           "variables": snapshot[1]},
                "lineage": None if lineage is None else lineage.as_row(), "facts": facts,
                "spooled_at": time.time()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        with open(partial, "w") as handle:
            json.dump(data, handle, default=str)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, self.path)
        log.error("results store not writable: %d samples spooled to %s; the retry, the study's teardown or "
                  "`bin/mysqlbench spool store` stores them", len(samples), self.path)

    def _data(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    def read(self) -> tuple[list[Sample], tuple[ServerInfo, dict[str, str]] | None]:
        data = self._data()
        samples = [Sample(**{**s, "series": TimeSeries(**s["series"]) if s["series"] else None}) for s in data["samples"]]
        snapshot = None
        if data["snapshot"]:
            info = data["snapshot"]["info"]
            snapshot = (ServerInfo(**{**info, "version": tuple(info["version"])}), data["snapshot"]["variables"])
        return samples, snapshot

    def describe(self) -> dict[str, Any]:
        data = self._data()
        lineage = data.get("lineage") or {}
        return {"file": str(self.path), "samples": len(data["samples"]), "spooled_at": data.get("spooled_at"),
                **{k: lineage.get(k) for k in ("dag_id", "run_id", "task_id", "map_index", "try_number")}}

    def store(self, store, recorder=None, **record_kwargs: Any) -> int:
        """Store the spooled samples under the lineage of the try that measured them, then forget
        them; returns how many. A spool an older release wrote (no lineage in it) needs the
        ``recorder`` of a retry of its task, and is stored under that try."""
        from mysqlbench.recording import keep_server_facts, server_facts

        data = self._data()
        samples, snapshot = self.read()
        if data.get("lineage"):
            info, variables = snapshot if snapshot is not None else (None, None)
            facts = data.get("facts") or server_facts(None, snapshot)[2]  # host facts unread at spool time: now
            lineage = Lineage(**{**data["lineage"], **keep_server_facts(store, info, variables, facts)})
            store.record(lineage, samples, [])
        elif recorder is not None:
            recorder.record(samples, snapshot=snapshot, **record_kwargs)
        else:
            raise ValueError(f"{self.path} has no lineage (an older release spooled it); its task's retry stores it")
        self.clear()
        log.warning("stored %d spooled samples from %s", len(samples), self.path)
        return len(samples)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def spooled(root: Path | None = None) -> list[Spool]:
    """Every spool on this worker, oldest first."""
    files = (root or spool_root()).glob("*/*/*.json")
    return [Spool.at(p) for p in sorted(files, key=lambda p: p.stat().st_mtime)]


def store_spooled(store, *, dag_id: str | None = None, run_id: str | None = None, older_than_s: float | None = None,
                  root: Path | None = None) -> list[dict[str, Any]]:
    """Store the spools of one run (``dag_id`` and ``run_id``), and any older than ``older_than_s``;
    every spool when neither is given. Returns what was stored, and what could not be (with why:
    the store still refusing leaves the file for the next chance)."""
    done = []
    for spool in spooled(root):
        try:
            about = spool.describe()
        except (OSError, ValueError) as exc:
            done.append({"file": str(spool.path), "error": f"unreadable: {exc}"})
            continue
        mine = dag_id is not None and (about["dag_id"], about["run_id"]) == (dag_id, run_id)
        stale = older_than_s is not None and time.time() - spool.path.stat().st_mtime > older_than_s
        if (dag_id is not None or older_than_s is not None) and not (mine or stale):
            continue
        try:
            about["stored"] = spool.store(store)
        except Exception as exc:  # noqa: BLE001 - one refused spool must not keep the others unstored
            log.error("could not store %s: %s", spool.path, exc)
            about["error"] = f"{type(exc).__name__}: {exc}"
        done.append(about)
    return done


def record_or_spool(recorder, spool: Spool, samples: list[Sample], snapshot: Any, **kwargs: Any) -> None:
    """Record; if the store refuses, spool (with the try's lineage and the host's facts now) and
    re-raise so Airflow retries the task."""
    try:
        recorder.record(samples, snapshot=snapshot, **kwargs)
    except Exception:
        from mysqlbench.recording import server_facts

        try:
            facts = server_facts(kwargs.get("target"), snapshot)[2]
        except Exception:  # noqa: BLE001 - the samples matter more; facts are read when stored
            log.exception("host facts unread while spooling")
            facts = None
        spool.write(samples, snapshot, recorder.task_lineage(kwargs.get("dataset_id")), facts)
        raise
    spool.clear()
