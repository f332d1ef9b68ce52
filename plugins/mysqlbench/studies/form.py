"""The trigger form, generated from the one spec model: every field marked for the form becomes a
``Param`` with the field's JSON schema (types, bounds, enums as drop-downs), its title, description
and section, and the spec file's value as default; the workload's dataset fields become their own
params. ``overrides`` maps a trigger's params back onto spec fields and refuses keys it does not
know, so a typo in a conf is an error, not a silently ignored setting."""

from __future__ import annotations

import functools
from typing import Any

from mysqlbench.errors import InvalidInput
from mysqlbench.studies.spec import DATASET, EXECUTE, MAY_BE_EMPTY, MEASURE, StudySpec
from mysqlbench.workloads.base import workload_class

RERUN = "Reproduce"  # the form section of a run's own settings (which run it reproduces)
# a run's own settings beside the spec (``studies.rerun`` acts on them)
RERUN_OF, ALLOW_DIFFERENCES = "rerun_of", "rerun_allow_differences"
RERUN_KEYS = frozenset({RERUN_OF, ALLOW_DIFFERENCES})
_SCHEMA_KEYS = ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "items", "enum", "minItems",
                "maxItems", "pattern", "minLength", "maxLength")
# What Airflow's trigger form draws its widgets from: the type (a number input, a text field, a list
# box, a switch), ``enum`` (a drop-down, so no bad choice can be made) and ``examples`` (a
# multi-select). Checked in Chromium against Airflow 3.3.2 (issue 24 item 3), the form itself only
# says "This field is required" for an emptied field, and does not let a number field take letters.
# Every other refusal of the REST API reads "Failed to Trigger Dag / Bad Request", its reason never
# shown; and a number input clamps to the schema's minimum and maximum as it loses focus (5000 typed
# in Scale Factor became 1000, unseen). So the form's params carry no bounds, patterns, lengths,
# item counts or item choices: the spec model has them all, and check_spec applies them before
# anything touches a server, its reason shown on the run's Benchmark report tab.
_FORM_KEYS = ("type", "enum", "examples")


# NaN passes every bound a JSON schema can state (each comparison with it is false), and a NaN
# that got into a run's conf reached the task as null ("None" in its error, issue 27). The first
# clause is met by NaN alone (a finite number fails one of its two bounds), the other two by the
# infinities (the form's params state no bounds of their own), so "not" refuses a number that is not
# finite when the run is triggered, by the REST API or the CLI, before a run exists. (The form's
# number input cannot type one.)
NOT_FINITE = {"not": {"anyOf": [{"type": "number", "minimum": 1.7e308, "maximum": -1.7e308},
                                {"type": "number", "minimum": 1.7e308}, {"type": "number", "maximum": -1.7e308}]}}


def _json_schema(prop: dict[str, Any]) -> dict[str, Any]:
    """The Param schema the form draws a spec field with: its widget's keys only (``_FORM_KEYS``),
    an integer typed as a number (so 2.5 reaches the spec's "should be a valid integer" rather than
    the form's bare "Bad Request"), a list's items by type alone, and a number that is not finite
    refused. A list of fixed choices gets them as ``examples``: Airflow's form draws a multi-select
    for a top-level ``examples`` list, and a free-text box for ``items.enum`` alone."""
    full = _param_schema(prop)
    schema = {k: v for k, v in full.items() if k in _FORM_KEYS}
    items = full.get("items")
    if isinstance(items, dict):
        if items.get("enum") and full.get("type") in ("array", ["array", "null"]):
            schema["examples"] = list(items["enum"])
        if "type" in items:
            schema["items"] = {"type": _as_number(items["type"])}
    if "type" not in schema:  # a mapping or a value of any kind: Airflow's JSON editor
        return schema
    types = schema["type"] = _as_number(schema["type"])
    return {**schema, **NOT_FINITE} if "number" in (types if isinstance(types, list) else [types]) else schema


def _as_number(types: str | list[str]) -> str | list[str]:
    """A JSON schema type with "integer" read as "number" (the spec model still wants an integer)."""
    if isinstance(types, list):
        return list(dict.fromkeys("number" if t == "integer" else t for t in types))
    return "number" if types == "integer" else types


def _param_schema(prop: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's property schema as Airflow's Param takes it (``anyOf`` of simple types becomes a
    type list, so ``int | None`` is ``["integer", "null"]``)."""
    words = [option["const"] for option in prop.get("anyOf", ()) if "const" in option]
    if words:  # a number or a word (repetitions: 5 or auto): a text field takes both
        number = next(o for o in prop["anyOf"] if o.get("type") in ("integer", "number"))
        return {"type": [number["type"], "string"], "pattern": f"^({'|'.join(words)}|[0-9]+)$",
                **{k: v for k, v in number.items() if k in ("minimum", "maximum")}}
    if "anyOf" in prop and all(set(option) <= {"type"} for option in prop["anyOf"]):
        return {"type": [option["type"] for option in prop["anyOf"]]}
    kinds = list(dict.fromkeys(o.get("type") for o in prop.get("anyOf", ()) if o.get("type") != "null"))
    if len(kinds) > 1:  # a name or a mapping (tpcc's mix: a deck's name or weights): any of those types
        nullable = any(o.get("type") == "null" for o in prop["anyOf"])
        return {"type": [*kinds, *(["null"] if nullable else [])]}
    if "anyOf" in prop:
        first = next(o for o in prop["anyOf"] if o.get("type") != "null")
        return {"type": [first.get("type", "string"), "null"], **{k: v for k, v in first.items()
                                                                   if k in _SCHEMA_KEYS and k != "type"}}
    return {k: v for k, v in prop.items() if k in _SCHEMA_KEYS}


@functools.cache
def _properties(model: type) -> dict[str, Any]:
    """A spec model's property schemas, built once a process: they depend on the class alone, and
    pydantic takes ~7 ms to build one, three times a spec, at every parse. Read only."""
    return model.model_json_schema(by_alias=True, mode="validation")["properties"]


def plural(noun: str) -> str:
    """English plural of a unit's name: query -> queries, test -> tests, mix -> mixes."""
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def form_fields() -> list[tuple[str, str, dict[str, Any]]]:
    """(spec field, param name, form metadata) for every field the form shows."""
    out = []
    for name, field in StudySpec.model_fields.items():
        form = (field.json_schema_extra or {}).get("form") if isinstance(field.json_schema_extra, dict) else None
        # retries and time limits are the tasks' own settings, fixed when the DAG is parsed
        if form and form["section"] not in (DATASET, EXECUTE):
            out.append((name, form.get("param", name), form))
    return out


def dataset_fields(spec: StudySpec) -> list[tuple[str, Any]]:
    model = workload_class(spec.workload).dataset_model
    return [(field.alias or name, field) for name, field in model.model_fields.items()]


def workload_fields(spec: StudySpec) -> list[str]:
    """The workload's own run parameters (connections, windows, ...), each its own param too."""
    reserved = {param for _, param, _ in form_fields()} | {key for key, _ in dataset_fields(spec)}
    return [name for name in workload_class(spec.workload).params_model.model_fields if name not in reserved]


def model_params(model, values: dict[str, Any], section: str) -> dict[str, Any]:
    """A Param per field of a pydantic ``model`` (keyed by alias), defaults from ``values``."""
    from airflow.sdk import Param

    schema = _properties(model)
    params = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        params[key] = Param(values.get(key, field.get_default(call_default_factory=True)), title=schema[key].get("title", key),
                            description=field.description or "", section=section, **_json_schema(schema[key]))
    return params


def form_params(spec: StudySpec) -> dict[str, Any]:
    from airflow.sdk import Param

    schema = _properties(StudySpec)
    data = spec.model_dump(mode="json", by_alias=True)
    params = model_params(workload_class(spec.workload).dataset_model, data["dataset"], DATASET)
    own = {k: v for k, v in model_params(workload_class(spec.workload).params_model, data["workload_params"],
                                         MEASURE).items() if k in workload_fields(spec)}
    params.update(own)
    for name, param, form in form_fields():
        if name == "workload_params":  # each of its fields is a param of its own above; a conf may still send it
            continue
        prop = schema.get(name) or schema.get(StudySpec.model_fields[name].alias or name)
        kwargs = _json_schema(prop)
        if name in MAY_BE_EMPTY:  # optional in the form (no "*"); the spec reads null as empty
            kwargs["type"] = [kwargs["type"], "null"]
        if name == "units":
            form = {**form, "title": plural(workload_class(spec.workload).unit_title).capitalize()}
        params[param] = Param(data.get(name), title=form["title"], description=StudySpec.model_fields[name].description
                              or "", section=form["section"], **kwargs)
    params.update(rerun_params())
    return params


def rerun_params() -> dict[str, Any]:
    """A run's own settings beside the spec: which past run it reproduces (``studies.rerun``)."""
    from airflow.sdk import Param

    return {RERUN_OF: Param(None, type=["null", "string"], title="Rerun of (run id)", section=RERUN,
                            description="a past run of this DAG to reproduce: set by `bin/mysqlbench rerun` or the "
                                        "report's Rerun action with the original's settings; its verdicts compare "
                                        "this run with it"),
            ALLOW_DIFFERENCES: Param(False, type="boolean", title="Run with differences stated", section=RERUN,
                                     description="run even where the server version, host or spec differ from the "
                                                 "original's (else refused), and say so with every verdict")}


def overrides(spec_file_data: StudySpec, params: dict[str, Any]) -> dict[str, Any]:
    """Spec overrides from a trigger's params (the form's keys, or a conf's)."""
    params = {k: v for k, v in params.items() if k not in RERUN_KEYS}  # the run's own, not the spec's
    by_param = {param: name for name, param, _ in form_fields()}
    dataset_keys = {key for key, _ in dataset_fields(spec_file_data)}
    workload_keys = set(workload_fields(spec_file_data))
    unknown = sorted(set(params) - set(by_param) - dataset_keys - workload_keys - {"queries"})
    if unknown:
        raise InvalidInput(f"unknown study conf key(s) {unknown}; the form's keys are "
                           f"{sorted(set(by_param) | dataset_keys | workload_keys)}")
    out: dict[str, Any] = {}
    dataset = {k: params[k] for k in dataset_keys if params.get(k) is not None}
    if dataset:
        out["dataset"] = dataset
    for param, value in params.items():
        if param in by_param:
            out[by_param[param]] = value
    if workload_keys & set(params):
        # the form sends every param, so a top-level key (connections=...) and the workload_params
        # mapping both arrive; each counts where it differs from the spec file's, and both
        # changing one key to different values is an error
        model = workload_class(spec_file_data.workload).params_model
        base = model.model_validate(spec_file_data.workload_params).model_dump()
        mapping = out.get("workload_params") or {}
        changed_in_map = {k: v for k, v in mapping.items() if base.get(k) != v}
        changed_top = {k: params[k] for k in workload_keys if params.get(k) is not None and base.get(k) != params[k]}
        clash = sorted(k for k in set(changed_in_map) & set(changed_top) if changed_in_map[k] != changed_top[k])
        if clash:
            raise InvalidInput(f"{clash} set both at the top level and in workload_params, to different values")
        out["workload_params"] = {**spec_file_data.workload_params, **changed_in_map, **changed_top}
    if params.get("queries") is not None:  # the TPC-H spelling of units
        out["units"] = params["queries"]
    return out
