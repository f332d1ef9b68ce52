"""Where the repository's files and the ignored work directory are."""

from __future__ import annotations

import os
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
    path = Path(os.environ.get("MYSQLBENCH_WORK_DIR") or REPO_ROOT / "work")
    path.mkdir(parents=True, exist_ok=True)
    return path


def sql_text(relative: str) -> str:
    return (SQL_DIR / relative).read_text()
