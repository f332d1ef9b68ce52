"""Reading the SQL under include/sql/: statements of a file, and the index hints queries carry."""

from __future__ import annotations

import re

from mysqlbench import paths

_HINT = re.compile(r"\b(?:force|use|ignore)\s+index\s*\(\s*([A-Za-z0-9_,\s]+)\)", re.IGNORECASE)


def sql_statements(text: str) -> list[str]:
    """Statements of an include/sql file: ``--`` comment lines dropped, split at ``;`` line ends."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    return [stmt.strip() for stmt in re.split(r";\s*(?:\n|$)", body) if stmt.strip()]


def index_hints() -> set[str]:
    """Every index name a FORCE/USE/IGNORE INDEX hint in include/sql/ names."""
    hints: set[str] = set()
    for path in paths.SQL_DIR.rglob("*.sql"):
        for match in _HINT.finditer(path.read_text()):
            hints.update(name.strip() for name in match.group(1).split(","))
    return hints
