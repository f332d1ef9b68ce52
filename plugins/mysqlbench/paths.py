"""Where the repository's files and the ignored work directory are."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
INCLUDE_DIR = REPO_ROOT / "include"
SQL_DIR = INCLUDE_DIR / "sql"
CONFIG_DIR = INCLUDE_DIR / "configs"


def work_dir() -> Path:
    """The directory for generated data, managed servers and the default results store.

    ``MYSQLBENCH_WORK_DIR`` moves it (tests use a temporary one); by default it is ``work/`` in
    the repository, which git ignores.
    """
    path = work_dir_path()
    path.mkdir(parents=True, exist_ok=True)
    return path


def work_dir_path() -> Path:
    """Where the work directory is, without creating it: for readers (the API server's pages),
    which may run where there is none and may not make one (a container's read-only tree)."""
    return Path(os.environ.get("MYSQLBENCH_WORK_DIR") or REPO_ROOT / "work")


_KEPT = re.compile(r"[A-Za-z0-9_.-]")
RUN_DIR_MAX = 200  # a folder name stays well under the file systems' 255 bytes and the store's 250


def run_dir_name(run_id: str) -> str:
    """The folder of one run (its report, its spool), one path component for every run id Airflow
    makes or accepts (``manual__2026-12-04T16:49:28.045205+00:00``, ``backfill__...``, a user's own).

    One-to-one, so ``a:b``, ``a+b`` and ``a_b`` stay three folders: a character outside
    ``[A-Za-z0-9_.-]``, and a leading dot (no ``.`` or ``..``), becomes ``~`` and its UTF-8 bytes in
    hex (``:`` -> ``~3a``), and ``~`` never stands for itself. A name longer than ``RUN_DIR_MAX``
    keeps its start and ends in ``~~`` and a SHA-256 prefix of the whole run id."""
    out = "".join(c if _KEPT.fullmatch(c) and not (i == 0 and c == ".") else "".join(f"~{b:02x}" for b in c.encode())
                  for i, c in enumerate(run_id))
    if len(out) > RUN_DIR_MAX:
        out = out[:RUN_DIR_MAX - 18] + "~~" + hashlib.sha256(run_id.encode()).hexdigest()[:16]
    return out


def run_id_of_dir(name: str) -> str:
    """The run id a ``run_dir_name`` folder holds, for display (a shortened name decodes to its kept
    start, marked with an ellipsis; a legacy name is shown as it is)."""
    name, shortened = (name.split("~~", 1)[0], True) if "~~" in name else (name, False)
    raw = re.sub(rb"~([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), name.encode())
    return raw.decode(errors="replace") + ("..." if shortened else "")


def legacy_run_dir_name(run_id: str) -> str:
    """The folder name reports were written under before ``run_dir_name`` (every run of characters
    outside ``[A-Za-z0-9_.-]`` became one ``_``; not one-to-one): read only, to find older reports."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id)


def sql_text(relative: str) -> str:
    return (SQL_DIR / relative).read_text()
