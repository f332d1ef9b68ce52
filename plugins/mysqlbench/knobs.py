"""Logical knobs -> concrete server variables for the detected flavor and version, and applying
them: session or global scope, restart or not (asked of the server), read back in the session that
will use them. Unknown names and bad values are rejected before anything is sent."""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from typing import Any

import yaml

from mysqlbench import paths
from mysqlbench.errors import InvalidInput, MysqlbenchError, NotApplicable
from mysqlbench.flavor import ServerInfo
from mysqlbench.identifiers import check_variable

log = logging.getLogger(__name__)

_SIZE = re.compile(r"(\d{1,15})([KMGT]?)B?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# values of raw variables: numbers, ON/OFF, enum names and optimizer_switch-style lists
_RAW_VALUE = re.compile(r"[A-Za-z0-9_.,=+\-]{1,512}")

# Variables the engine itself sets through the restore journal (the slow log that times statements
# server-side, and a cold start's buffer pool dump/load), besides every knob's variables.
ENGINE_VARIABLES = frozenset({"slow_query_log", "log_output", "long_query_time",
                              "innodb_buffer_pool_dump_at_shutdown", "innodb_buffer_pool_load_at_startup"})
FLAVORS = ("mariadb", "mysql")


@functools.lru_cache(maxsize=1)
def variable_policy() -> dict[str, Any]:
    """include/configs/variables.yaml: the per-flavor allow-list and the refused categories."""
    return yaml.safe_load((paths.CONFIG_DIR / "variables.yaml").read_text())


def refusal(variable: str) -> str | None:
    """Why ``variable`` is never set (its refused category's reason), or None."""
    for category, rule in variable_policy()["refused"].items():
        if (variable in (rule.get("names") or ()) or variable.endswith(tuple(rule.get("suffixes") or ()))
                or any(part in variable for part in rule.get("parts") or ())):
            return f"{category.replace('_', ' ')} variable: {' '.join(rule['reason'].split())}"
    return None


def allowed_flavors(variable: str) -> tuple[str, ...]:
    """The flavors on whose allow-list ``variable`` is (empty: on none)."""
    allowed = variable_policy()["allowed"]
    if variable in allowed["common"]:
        return FLAVORS
    return tuple(flavor for flavor in FLAVORS if variable in allowed[flavor])


def check_settable_variable(name: object, flavor: str | None = None) -> str:
    """A variable a user may set (a study's ``variables``, a managed target's overrides): on the
    allow-list of include/configs/variables.yaml (of ``flavor`` when it is known), and not in a
    refused category, whose reason the error gives. my.cnf spelling (dashes) is normalised."""
    if isinstance(name, str):
        name = name.replace("-", "_")
    variable = check_variable(name)
    why = refusal(variable)
    if why:
        raise InvalidInput(f"server variable {variable!r} is refused, {why}; mysqlbench never sets it")
    flavors = allowed_flavors(variable)
    if not flavors:
        raise InvalidInput(f"server variable {variable!r} is not on the allow-list "
                           f"({paths.CONFIG_DIR / 'variables.yaml'}): only variables that shape performance "
                           "may be set; add it there, under the flavors that have it, if it does")
    if flavor is not None and flavor not in flavors:
        raise NotApplicable(f"server variable {variable!r} is on the allow-list for {', '.join(flavors)} only, "
                            f"not for {flavor}")
    return variable


def check_engine_variable(name: object) -> str:
    """A variable the engine may set or restore (a knob's, its own slow-log and cache settings, or
    a user-settable one): what a restore journal or a restart override may name, so a tampered
    journal file cannot make the engine set anything else."""
    variable = check_variable(name.replace("-", "_") if isinstance(name, str) else name)
    if variable in ENGINE_VARIABLES or variable in knob_variables():
        return variable
    return check_settable_variable(variable)


def parse_size(value: object, what: str = "size") -> int:
    """Bytes from an int or a string like ``128K``, ``6M``, ``2G``."""
    if isinstance(value, bool):
        raise InvalidInput(f"{what}: {value!r} is not a size")
    size = None
    if isinstance(value, int):
        if value < 0:
            raise InvalidInput(f"{what}: {value} is negative")
        size = value
    elif isinstance(value, str):
        match = _SIZE.fullmatch(value.strip())
        if match:
            size = int(match.group(1)) * _UNITS[match.group(2).upper()]
    if size is None:
        raise InvalidInput(f"{what}: {value!r} is not a size (use bytes or a number with K, M, G)")
    if size > MAX_SIZE:
        raise InvalidInput(f"{what}: {value!r} is more than 1 PiB, beyond any server's memory or disk")
    return size


MAX_SIZE = 1 << 50  # no size a server takes is larger; a typo (999999999999999T) stops here, not at the server


def check_host_bounds(knob_values: dict[str, list[object]], memory: int | None, free_disk: int | None,
                      host: str) -> None:
    """Sizes a point would ask for against the host the server runs on, before anything starts:
    a buffer pool larger than the host's memory, or a redo log larger than the datadir's free
    disk, is refused up front (the server would refuse it at a restart, or a load would fail
    half way and leave an empty schema behind)."""
    bounds = {"buffer_pool_size": (memory, "memory"), "redo_log_size": (free_disk, "free disk under the datadir"),
              "load_redo_log_size": (free_disk, "free disk under the datadir")}
    for knob, values in knob_values.items():
        limit, what = bounds.get(knob, (None, ""))
        for value in values:
            if limit is not None and value not in (None, "keep") and parse_size(value, knob) > limit:
                raise InvalidInput(f"{knob} {value} is more than the {what} of {host} ({limit / 2**30:.1f} GiB)")


def parse_raw_value(value: object, what: str) -> int | str:
    """Value of a raw server variable: bound as an int or a string, never spliced into SQL."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        if _SIZE.fullmatch(text):
            return parse_size(text, what)
        if _RAW_VALUE.fullmatch(text):
            return text
    raise InvalidInput(f"{what}: value {value!r} is not allowed (numbers, sizes, ON/OFF, or names "
                       "and comma lists of letters, digits, '_', '.', '=', '+', '-')")


SERVER_CONFIG_DIR = paths.CONFIG_DIR / "server_configs"


def server_config(name: object) -> dict[str, int | str]:
    """The variables of ``include/configs/server_configs/NAME.cnf`` (a seed's my.cnf, trimmed to
    what shapes performance), in file order, each allow-listed and its value checked."""
    from mysqlbench.identifiers import check_name

    name = check_name(name, "server config")
    path = SERVER_CONFIG_DIR / f"{name}.cnf"
    if not path.is_file():
        known = sorted(p.stem for p in SERVER_CONFIG_DIR.glob("*.cnf"))
        raise InvalidInput(f"unknown server config {name!r}; known: {known} (in {SERVER_CONFIG_DIR})")
    out: dict[str, int | str] = {}
    section = None
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            section = line.strip("[]").strip()
            continue
        if section != "mysqld" or "=" not in line:
            raise InvalidInput(f"{path}:{number}: only `name = value` lines under [mysqld] are read")
        variable, value = (part.strip() for part in line.split("=", 1))
        variable = check_settable_variable(variable)
        out[variable] = parse_raw_value(value, f"{path.name}: {variable}")
    return out


def server_config_settings(name: str, server: ServerInfo) -> list[Setting]:
    """A server config as global settings for ``server``; a variable its flavor lacks makes the
    point not applicable, with the reason."""
    flavor = "mariadb" if server.is_mariadb else "mysql"
    settings = []
    for variable, value in server_config(name).items():
        check_settable_variable(variable, flavor)
        settings.append(Setting(f"server_config.{name}", variable, value, "global"))
    return settings


def render_cnf_value(value: object) -> str:
    """A value for a my.cnf line: same allow-list as raw variables, so no line can be injected."""
    return str(parse_raw_value(value, "my.cnf value"))


@dataclass(frozen=True)
class Setting:
    """One concrete variable to set. ``at_least`` settings never lower the current value."""

    knob: str
    variable: str
    value: int | str
    scope: str  # "session" | "global"
    at_least: bool = False


@dataclass(frozen=True)
class Applied:
    knob: str
    variable: str
    scope: str
    requested: int | str
    effective: int | str


@functools.lru_cache(maxsize=1)
def knob_table() -> dict[str, dict[str, Any]]:
    return yaml.safe_load((paths.CONFIG_DIR / "knobs.yaml").read_text())


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in str(text).split("."))


def _rule_for(knob: str, server: ServerInfo) -> dict[str, Any]:
    for rule in knob_table()[knob]["rules"]:
        if server.flavor not in rule["flavors"]:
            continue
        if "since" in rule and server.version < _version(rule["since"]):
            continue
        if "until" in rule and server.version >= _version(rule["until"]):
            continue
        return rule
    raise NotApplicable(f"{knob} is not applicable on {server.label}: no variable is known for it")


def variable_for(knob: str, server: ServerInfo) -> str | None:
    """The server variable a logical knob sets on ``server``; None when the knob does not apply
    there (or is unknown)."""
    if knob not in knob_table():
        return None
    try:
        return _rule_for(knob, server).get("variable")
    except NotApplicable:
        return None


def translate(knobs: dict[str, Any], server: ServerInfo, *, raw_variables: dict[str, Any] | None = None,
              server_variables: dict[str, Any] | None = None) -> list[Setting]:
    """Concrete settings for ``knobs`` (logical names) and ``raw_variables`` (server variable
    names, set in session scope where the server has one, else globally).

    ``server_variables`` supplies values some rules depend on (``innodb_log_files_in_group``).
    Raises :class:`InvalidInput` for unknown knobs or bad values and :class:`NotApplicable` for a
    knob the server cannot take, naming the flavor and version.
    """
    table = knob_table()
    settings: list[Setting] = []
    switches: dict[str, tuple[str, str]] = {}  # flag -> (on|off, knob that asked for it)

    def add_switch(flag: str, state: str, knob: str) -> None:
        earlier = switches.get(flag)
        if earlier and earlier[0] != state:
            raise InvalidInput(f"{knob} needs optimizer_switch {flag}={state}, but {earlier[1]} sets {flag}={earlier[0]}")
        switches[flag] = (state, knob)

    for knob, value in knobs.items():
        if knob not in table:
            raise InvalidInput(f"unknown knob {knob!r}; known knobs: {', '.join(sorted(table))}")
        spec = table[knob]
        concrete = _typed(value, spec["type"], knob, spec.get("choices"))
        rule = _rule_for(knob, server)
        if "not_applicable" in rule:
            raise NotApplicable(f"{knob} is not applicable on {server.label}: {rule['not_applicable']}")
        if spec["type"] == "bool":
            state = "on" if concrete == "ON" else "off"
            if rule.get("switch"):
                add_switch(rule["switch"], state, knob)
            extra = rule.get(f"when_{state}") or {}
            for flag, flag_state in (extra.get("switches") or {}).items():
                add_switch(flag, str(flag_state), knob)
            for variable, var_value in (extra.get("variables") or {}).items():
                settings.append(Setting(knob, variable, var_value, spec["scope"]))
            continue
        if "per_file_of" in rule:
            files = int((server_variables or {}).get(rule["per_file_of"], 2))
            concrete = int(concrete) // files
        value_setting = Setting(knob, rule["variable"], concrete, spec["scope"])
        if "raise_cap" in rule:
            cap = rule["raise_cap"]
            cap_setting = Setting(knob, cap["variable"], int(concrete) * int(cap["factor"]), spec["scope"],
                                  at_least=True)
            # a cap the server enforces on SET (not only at use) must be raised before the value
            settings += [cap_setting, value_setting] if cap.get("first") else [value_setting, cap_setting]
        else:
            settings.append(value_setting)
    if switches:
        value = ",".join(f"{flag}={state}" for flag, (state, _) in sorted(switches.items()))
        knobs_used = "+".join(sorted({knob for _, knob in switches.values()}))
        settings.insert(0, Setting(knobs_used, "optimizer_switch", value, "session"))
    for name, value in (raw_variables or {}).items():
        variable = check_settable_variable(name, "mariadb" if server.is_mariadb else "mysql")
        settings.append(Setting(f"variables.{variable}", variable,
                                parse_raw_value(value, f"variable {variable}"), "session"))
    return settings


@functools.lru_cache(maxsize=1)
def knob_variables() -> dict[str, str]:
    """Every server variable some knob sets, on any flavor or version -> the knob. A raw variable
    among them would silently override (or be overridden by) that knob's setting."""
    out: dict[str, str] = {}
    for knob, spec in knob_table().items():
        for rule in spec["rules"]:
            names = [rule.get("variable"), (rule.get("raise_cap") or {}).get("variable")]
            if rule.get("switch"):
                names.append("optimizer_switch")
            for state in ("when_on", "when_off"):
                extra = rule.get(state) or {}
                names += list(extra.get("variables") or {})
                if extra.get("switches"):
                    names.append("optimizer_switch")
            for name in filter(None, names):
                out.setdefault(name, knob)
    return out


def check_raw_variables_against_knobs(variables: dict[str, Any]) -> None:
    """Refuse a raw variable that a knob sets: with ``mrr`` swept and ``optimizer_switch`` raw, a
    point labelled mrr=on could run with MRR off. Use the knob."""
    clash = {name: knob_variables()[name] for name in variables
             if name.replace("-", "_") in knob_variables()}
    if clash:
        raise InvalidInput("raw variables that a knob sets (use the knob instead): "
                           + ", ".join(f"{name} (knob {knob})" for name, knob in sorted(clash.items())))


def check_knob(knob: object, value: Any) -> int | str:
    """Validate a logical knob's name and value without a server (for specs and params)."""
    table = knob_table()
    if not isinstance(knob, str) or knob not in table:
        raise InvalidInput(f"unknown knob {knob!r}; known knobs: {', '.join(sorted(table))}")
    typed = _typed(value, table[knob]["type"], knob, table[knob].get("choices"))
    minimum = table[knob].get("min")
    if minimum is not None and int(typed) < parse_size(minimum):
        raise InvalidInput(f"{knob}: {value!r} is below {minimum}, the least any supported server starts with")
    return typed


def _typed(value: Any, kind: str, knob: str, choices: list[Any] | None = None) -> int | str:
    if kind == "choice":  # one of the listed values (case-insensitive), as the table spells it
        for choice in choices or []:
            if not isinstance(value, bool) and str(value).lower() == str(choice).lower():
                return choice
        raise InvalidInput(f"{knob}: {value!r} is not one of {choices}")
    if kind == "size":
        return parse_size(value, knob)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInput(f"{knob}: {value!r} is not a positive integer")
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return "ON" if value else "OFF"
        if isinstance(value, str) and value.upper() in ("ON", "OFF", "TRUE", "FALSE"):
            return "ON" if value.upper() in ("ON", "TRUE") else "OFF"
        raise InvalidInput(f"{knob}: {value!r} is not on/off")
    raise InvalidInput(f"{knob}: unknown knob type {kind!r}")


_BOOL_TEXT = {"ON": "1", "TRUE": "1", "YES": "1", "OFF": "0", "FALSE": "0", "NO": "0"}


def same_value(asked: object, effective: object) -> bool:
    """Is ``effective`` (as the server reads it back) the value ``asked``? Boolean variables read
    back as 1/0 whether set as ON/OFF or 1/0; other text compares without case."""
    def norm(value: object) -> str:
        text = value.decode() if isinstance(value, bytes) else str(value)
        return _BOOL_TEXT.get(text.strip().upper(), text.strip().upper())

    return norm(asked) == norm(effective)


# -- what the server says about a variable --------------------------------------------------------

ER_UNKNOWN_SYSTEM_VARIABLE = 1193
ER_INCORRECT_GLOBAL_LOCAL_VAR = 1238
ER_SPECIFIC_ACCESS_DENIED = 1227


@dataclass(frozen=True)
class VariableInfo:
    name: str
    has_session: bool
    has_global: bool
    dynamic: bool | None  # None: could not be told (no privilege to probe, or probe not allowed)
    source: str           # where the answer came from


def describe_variable(conn, server: ServerInfo, variable: str, *, may_probe_global: bool) -> VariableInfo:
    """Scope and restart need of ``variable``: from MariaDB's SYSTEM_VARIABLES, or on MySQL from
    probes. The global probe (``SET GLOBAL v = @@GLOBAL.v``, a no-op) runs only when allowed,
    i.e. on a marked benchmark target, and tells "read-only" from "no privilege"."""
    import MySQLdb

    check_variable(variable)
    with conn.cursor() as cur:
        if server.is_mariadb:
            cur.execute("SELECT VARIABLE_SCOPE, READ_ONLY FROM information_schema.SYSTEM_VARIABLES "
                        "WHERE VARIABLE_NAME = %s", (variable.upper(),))
            row = cur.fetchone()
            if row is None:
                raise NotApplicable(f"{variable} does not exist on {server.label}")
            scope, read_only = row
            return VariableInfo(variable, has_session=scope in ("SESSION", "SESSION ONLY"),
                                has_global=scope != "SESSION ONLY", dynamic=read_only == "NO",
                                source="information_schema.SYSTEM_VARIABLES")
        try:  # identifiers cannot be bound; the name passed check_variable above
            cur.execute(f"SELECT @@SESSION.{variable}")
            cur.fetchall()
            has_session = True
        except MySQLdb.OperationalError as exc:
            if exc.args[0] == ER_UNKNOWN_SYSTEM_VARIABLE:
                raise NotApplicable(f"{variable} does not exist on {server.label}") from exc
            if exc.args[0] != ER_INCORRECT_GLOBAL_LOCAL_VAR:
                raise
            has_session = False
        if not may_probe_global:
            return VariableInfo(variable, has_session, True, None, "probe not allowed on this target")
        try:
            cur.execute(f"SET GLOBAL {variable} = @@GLOBAL.{variable}")
            return VariableInfo(variable, has_session, True, True, "SET GLOBAL probe")
        except MySQLdb.OperationalError as exc:
            if exc.args[0] == ER_INCORRECT_GLOBAL_LOCAL_VAR:
                if "read only" in str(exc.args[-1]).lower():
                    return VariableInfo(variable, has_session, True, False, "SET GLOBAL probe: read-only")
                return VariableInfo(variable, True, False, None, "SET GLOBAL probe: session only")
            if exc.args[0] == ER_SPECIFIC_ACCESS_DENIED:
                return VariableInfo(variable, has_session, True, None, "SET GLOBAL probe: no privilege")
            raise


def read_variable(conn, variable: str, scope: str) -> int | str:
    check_variable(variable)
    with conn.cursor() as cur:
        cur.execute(f"SELECT @@{'SESSION' if scope == 'session' else 'GLOBAL'}.{variable}")
        value = cur.fetchone()[0]
    return value.decode() if isinstance(value, bytes) else value


def apply_settings(conn, target, server: ServerInfo, settings: list[Setting], journal=None) -> list[Applied]:
    """Apply ``settings`` on ``conn`` and read each back in that same session.

    Session settings are allowed on any target; a global one needs a marked benchmark target and a
    restore journal (:mod:`mysqlbench.targets.journal`), which records the value found before the
    ``SET GLOBAL`` is sent, so the target can always be put back (``target`` None: session settings
    only). A
    variable that needs a restart raises :class:`NotApplicable` here: restarting is the target
    control's job (a managed target restarts with the globals in its my.cnf). A value the server
    silently shrinks (a cap, a maximum) raises too, so no run is recorded with a setting it did
    not have.
    """
    applied = []
    for setting in settings:
        info = describe_variable(conn, server, setting.variable,
                                 may_probe_global=target is not None and target.benchmark_target)
        scope = "session" if setting.scope == "session" and info.has_session else "global"
        if scope == "global":
            if target is None:
                raise MysqlbenchError(f"SET GLOBAL {setting.variable} needs a target that can be checked")
            target.require_benchmark_target(f"SET GLOBAL {setting.variable}")
            if info.dynamic is False:
                raise NotApplicable(f"{setting.variable} needs a server restart on {server.label}")
            if journal is None:
                raise MysqlbenchError(f"SET GLOBAL {setting.variable} without a restore journal")
            journal.record_global(setting.variable, read_variable(conn, setting.variable, "global"))
        value = setting.value
        if setting.at_least:
            current = read_variable(conn, setting.variable, scope)
            if isinstance(current, int) and isinstance(value, int) and current >= value:
                value = current
        with conn.cursor() as cur:
            cur.execute(f"SET {scope.upper()} {setting.variable} = %s", (value,))
        effective = read_variable(conn, setting.variable, scope)
        check_effective(setting, value, effective, server)
        applied.append(Applied(setting.knob, setting.variable, scope, value, effective))
        log.info("%s: %s %s = %s (asked %s)", setting.knob, scope, setting.variable, effective, value)
    return applied


ROUND_UP_SIZE = 2.0   # a size (1 MiB or more) may be rounded up to the next chunk: at most double
ROUND_UP_COUNT = 1.1  # a count (connections, threads, entries) is not rounded: 10% above is already a clamp


def check_effective(setting: Setting, asked: int | str, effective: int | str, server: ServerInfo) -> None:
    if isinstance(asked, int):
        try:
            got = int(effective)
        except (TypeError, ValueError):
            got = None
        # servers round sizes to a block or chunk (down a little, or up to the next chunk: a 129M
        # buffer pool is 256M with 128M chunks); beyond that, either way, the server clamped the
        # value to its range, and the point would measure another setting than its label says
        # (max_connections 1 becomes 10)
        ceiling = asked * (ROUND_UP_SIZE if asked >= 1 << 20 else ROUND_UP_COUNT)
        if got is None or got < asked * 0.9 or got > ceiling:
            raise NotApplicable(f"{setting.variable}: asked for {asked}, {server.label} took {effective} "
                                f"(capped or out of range: {'raised' if got and got > ceiling else 'lowered'} "
                                "to its limit)")
    elif "=" in str(asked):  # flag lists (optimizer_switch): every asked flag must be in force
        got = dict(flag.split("=", 1) for flag in str(effective).split(",") if "=" in flag)
        wrong = [flag for flag in str(asked).split(",") if got.get(flag.split("=", 1)[0]) != flag.split("=", 1)[1]]
        if wrong:
            raise NotApplicable(f"{setting.variable}: {', '.join(wrong)} not in force on {server.label}")
    elif not same_value(asked, effective):
        raise NotApplicable(f"{setting.variable}: asked for {asked!r}, {server.label} took {effective!r}")
