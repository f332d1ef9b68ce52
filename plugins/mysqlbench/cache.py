"""Cache state before a measured run. Cold: restart the server (buffer-pool dump/load off in the
base config) and drop the OS page cache, or evict the datadir's pages where dropping is not
permitted. Warm: untimed runs until the buffer pool's physical reads stop growing."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def evict_files(directory: Path) -> int:
    """posix_fadvise(DONTNEED) on every file under ``directory`` (after a sync, so no dirty page
    stays resident): the page cache forgets these files and only these. Returns how many."""
    os.sync()
    evicted = 0
    for top, _, files in os.walk(directory):
        for name in files:
            try:
                fd = os.open(os.path.join(top, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                evicted += 1
            finally:
                os.close(fd)
    return evicted


def drop_os_cache(datadir: Path, scope: str = "target_files") -> dict[str, Any]:
    """Empty the page cache of the target's files (default: a shared host's other work keeps its
    cache, and a sweep does this before every cold repetition), or of the whole host when the spec
    asks for ``host`` and the kernel lets us. Says which method ran."""
    if scope == "host":
        os.sync()
        try:
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
            return {"method": "drop_caches", "scope": "whole page cache"}
        except OSError as exc:
            why = f"drop_caches not permitted: {exc.strerror}"
    else:
        why = None
    evicted = evict_files(datadir)
    out = {"method": "posix_fadvise(DONTNEED)", "scope": f"{evicted} files of the target's datadir"}
    if why:
        out["why"] = why
    return out


def warm_up(run_once, max_runs: int) -> dict[str, Any]:
    """Run the query untimed until one run does no physical reads, at most ``max_runs`` times.

    ``run_once`` returns the pages that run read from disk (``counters.physical_reads``; None where
    the server does not count them, in which case warmth cannot be proved and the result says so).
    """
    reads_per_run = []
    for _ in range(max_runs):
        reads = run_once()
        reads_per_run.append(reads)
        if reads is None:
            return {"warm": None, "runs": len(reads_per_run), "reads_per_run": reads_per_run,
                    "why": "physical reads are absent on this server (include/configs/counters.yaml)"}
        if reads == 0:
            return {"warm": True, "runs": len(reads_per_run), "reads_per_run": reads_per_run}
    return {"warm": False, "runs": len(reads_per_run), "reads_per_run": reads_per_run,
            "why": f"physical reads still growing after {max_runs} runs: the working set does not fit the buffer pool"}
