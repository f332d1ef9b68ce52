"""Allow-listed SQL identifiers: schema, table, index and variable names are checked here and only
then quoted, so no user text reaches SQL except as a bound value."""

from __future__ import annotations

import re

from mysqlbench.errors import InvalidInput

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_VARIABLE = re.compile(r"[a-z_][a-z0-9_]{0,63}")

# Schemas a benchmark must never create, drop or fill.
RESERVED_SCHEMAS = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


def check_name(value: object, what: str = "name") -> str:
    """Return ``value`` if it is a plain identifier (letters, digits, underscore; not starting with
    a digit; at most 64 characters), else raise :class:`InvalidInput` naming the problem."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise InvalidInput(
            f"{what} {value!r} is not allowed: use 1-64 letters, digits or underscores, "
            "not starting with a digit (no quotes, backticks, spaces or semicolons)"
        )
    return value


def check_schema(value: object) -> str:
    name = check_name(value, "schema name")
    if name.lower() in RESERVED_SCHEMAS:
        raise InvalidInput(f"schema name {name!r} is a system schema; pick another")
    return name


def check_variable(value: object) -> str:
    """Server variable names are lower case identifiers (``innodb_buffer_pool_size``)."""
    if not isinstance(value, str) or not _VARIABLE.fullmatch(value):
        raise InvalidInput(f"server variable name {value!r} is not allowed: use lower-case letters, digits and "
                           "underscores, as SHOW VARIABLES spells them")
    return value


def quote(name: str, what: str = "name") -> str:
    """Backtick-quote an identifier that has passed the allow-list."""
    return f"`{check_name(name, what)}`"
