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


def restart_left_warm(load_at_startup) -> str | None:
    """Why a restart would not empty the buffer pool, from the server's
    ``innodb_buffer_pool_load_at_startup`` (ON by default on MySQL and MariaDB: the pages it dumped
    at shutdown are read back at startup, in the background), or None. Our managed instances run
    with it OFF (include/configs/*/base.cnf); a server we only restart (``control: ssh``) runs
    with its own configuration, and a cold point there is cold only if it is OFF too."""
    if str(load_at_startup).strip().upper() in ("0", "OFF", "FALSE"):
        return None
    return (f"a restart does not empty the buffer pool: innodb_buffer_pool_load_at_startup is "
            f"{load_at_startup} on this server (it reads back the pages it dumped at shutdown); set it OFF "
            "in the server's configuration for cold points")


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


# a run that reads at least this share of the run before's pages has stopped warming the cache
STEADY_SHARE = 0.9
STEADY_AFTER = 3  # runs before a steady count can be called steady: the first load, then two alike
# below this many pages a run, reads may be the server's own (purge, statistics), not the working
# set missing: such runs go on to ``max_runs`` as they always did
STEADY_MIN_PAGES = 64


def warm_up(run_once, max_runs: int) -> dict[str, Any]:
    """Run the query untimed until one run does no physical reads, at most ``max_runs`` times; a
    working set that does not fit stops earlier, once a run (the third or later) reads nearly as
    many pages as the one before (``STEADY_SHARE``): more runs would read the same again, and every
    warm repetition pays for its warm-up (one repetition a round, each with its own restart).

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
        if len(reads_per_run) >= STEADY_AFTER and reads >= max(STEADY_MIN_PAGES, STEADY_SHARE * reads_per_run[-2]):
            return {"warm": False, "runs": len(reads_per_run), "reads_per_run": reads_per_run,
                    "why": f"the working set does not fit the buffer pool: {reads} pages read from disk per run, "
                           f"steady ({reads - reads_per_run[-2]:+d} from the run before)"}
    # the cap, not the working set: reads still falling (or too few runs to tell) prove nothing about
    # the buffer pool; only the steady rule above says a set does not fit
    return {"warm": False, "runs": len(reads_per_run), "reads_per_run": reads_per_run,
            "why": f"not proven warm: physical reads not yet zero after {max_runs} warm-up "
                   f"run{'s' * (max_runs != 1)} ({reads_per_run[-1]} in the last; warmup_max_runs); more runs "
                   "would tell whether the working set fits the buffer pool"}
