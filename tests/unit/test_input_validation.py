"""Bad names and params are rejected up front, with a message naming the problem."""

from pathlib import Path

import pytest

from mysqlbench.errors import InvalidInput
from mysqlbench.identifiers import check_name, check_schema, quote
from mysqlbench.params import validate_params
from mysqlbench.workloads.tpch.models import TpchLoadParams

REPO = Path(__file__).resolve().parents[2]

GOOD = {"scale_factor": 0.1, "target_conn_id": "mysqlbench_demo", "schema": "tpch"}


@pytest.mark.parametrize("name", ["tpch", "TPCH_1", "_x", "a" * 64])
def test_plain_identifiers_pass(name):
    assert check_name(name) == name
    assert quote(name) == f"`{name}`"


@pytest.mark.parametrize("name", ["a`b", "a;b", "tpch; DROP DATABASE x", "1abc", "", "a b", "a" * 65, "ä", None, 5])
def test_unsafe_identifiers_are_rejected(name):
    with pytest.raises(InvalidInput, match="not allowed"):
        check_name(name)


@pytest.mark.parametrize("schema", ["mysql", "information_schema", "SYS"])
def test_system_schemas_are_rejected(schema):
    with pytest.raises(InvalidInput, match="system schema"):
        check_schema(schema)


def test_good_params_validate():
    params = validate_params(TpchLoadParams, GOOD)
    assert params.model_dump(by_alias=True) == {**GOOD, "load_streams": 2, "load_redo_log_size": "keep"}
    assert params.redo_log_bytes() is None
    assert validate_params(TpchLoadParams, {**GOOD, "load_redo_log_size": "2G"}).redo_log_bytes() == 2 << 30


@pytest.mark.parametrize("field,value,message", [
    ("scale_factor", 0, "scale_factor: Input should be greater than or equal to 0.01"),
    ("scale_factor", -1, "scale_factor: Input should be greater than or equal to 0.01"),
    ("scale_factor", 1e-300, "scale_factor: Input should be greater than or equal to 0.01"),
    ("scale_factor", float("nan"), "scale_factor: Value error, must be a finite number"),
    ("scale_factor", "abc", "scale_factor: Value error, must be a number, not 'abc'"),
    ("scale_factor", True, "scale_factor: Value error, must be a number"),
    ("schema", "a`b", "schema: Value error, schema name 'a`b' is not allowed"),
    ("schema", "tpch;", "schema: Value error, schema name 'tpch;' is not allowed"),
    ("target_conn_id", "x y", "target_conn_id: String should match pattern"),
    ("load_streams", 0, "load_streams: Input should be greater than or equal to 1"),
    ("load_redo_log_size", "2G; SET GLOBAL x=1", "load_redo_log_size: Value error, load_redo_log_size"),
])
def test_bad_params_name_the_problem(field, value, message):
    with pytest.raises(InvalidInput) as caught:
        validate_params(TpchLoadParams, {**GOOD, field: value})
    assert message in str(caught.value)


def test_unknown_params_are_rejected():
    with pytest.raises(InvalidInput, match="scale_factr: Extra inputs are not permitted"):
        validate_params(TpchLoadParams, {**GOOD, "scale_factr": 1})


def test_nan_is_refused_by_the_trigger_form_and_the_spec():
    """Issue 27: NaN passes every bound a JSON schema states (each comparison with it is false), so
    a conf holding NaN made a run whose task saw null ("None"). The form's params refuse it when
    the run is triggered (form, REST API and CLI all validate there), and the spec says "finite"."""
    from airflow.sdk.definitions.param import ParamsDict
    from airflow.sdk.exceptions import ParamValidationError

    from mysqlbench.studies.form import form_params
    from mysqlbench.studies.spec import load_spec

    spec = load_spec("tpch_bka_study")
    numbers = [k for k, p in form_params(spec).items() if "number" in str(p.schema.get("type"))]
    assert {"scale_factor", "min_effect", "noise_cv_max", "timeout_s"} <= set(numbers)
    for key in numbers:
        params = ParamsDict(form_params(spec))
        params[key] = params[key] if params[key] is not None else 1  # a finite value passes
        params.validate()
        with pytest.raises(ParamValidationError, match=f"param {key}: nan "):
            params[key] = float("nan")
        for infinite in (float("inf"), float("-inf")):  # the params state no bounds that would refuse them
            with pytest.raises(ParamValidationError, match=f"param {key}: -?inf "):
                params[key] = infinite
    with pytest.raises(InvalidInput, match="min_effect: Input should be a finite number"):
        load_spec("tpch_bka_study", {"min_effect": float("nan")})


def test_the_form_draws_fixed_choices_as_a_multi_select_and_titles_read_right():
    """Issue 24 item 3: "Cache modes" was a free-text box (Airflow's form draws a multi-select for
    a top-level `examples` list, not for `items.enum`), and TPC-H's units were titled "Querys"."""
    from airflow.sdk.definitions.param import ParamsDict

    from mysqlbench.studies.form import form_params, plural
    from mysqlbench.studies.spec import load_spec

    params = form_params(load_spec("tpch_bka_study"))
    cache = params["cache"].schema
    assert cache["type"] == "array" and cache["examples"] == ["warm", "cold"]
    assert params["units"].schema["title"] == "Queries"
    assert [plural(w) for w in ("query", "test", "run", "operation", "mix", "day")] == \
        ["queries", "tests", "runs", "operations", "mixes", "days"]
    checked = ParamsDict(params)
    checked["cache"] = ["cold"]
    checked["cache"] = ["lukewarm"]  # the examples offer; the spec decides, with its reason
    with pytest.raises(InvalidInput, match="cache.0: Input should be 'warm' or 'cold'"):
        load_spec("tpch_bka_study", {"cache": ["lukewarm"]})
    assert "workload_params" not in params  # its fields are params of their own (Oracle): no second editor
    assert {p.schema["section"] for p in params.values()} >= {"Target", "Dataset"}


def test_the_form_states_no_refusal_it_cannot_show():
    """Issue 24 item 3, checked in Chromium against Airflow 3.3.2: the trigger form shows no reason
    for a refusal of the REST API ("Failed to Trigger Dag / Bad Request"), and its number input
    clamps silently to a schema's bounds (5000 typed became scale factor 1000). So no study's or
    load's Param carries a bound, pattern, length or item rule: a value beyond one reaches the run,
    whose check_spec refuses it with the field's reason (the run's Benchmark tab shows it)."""
    import importlib.util

    from airflow.sdk.definitions.param import ParamsDict

    from mysqlbench.studies.form import form_params
    from mysqlbench.studies.spec import load_spec, study_files

    drawn = {"type", "enum", "examples", "items", "not", "title", "description", "section"}
    forms = {path.stem: form_params(load_spec(path.stem)) for path in study_files()}
    for load in ("tpch_load", "tpcc_load"):  # the load DAGs' forms, as their DAG files build them
        module = importlib.util.spec_from_file_location(load, REPO / "dags" / f"{load}.py")
        code = importlib.util.module_from_spec(module)
        module.loader.exec_module(code)
        forms[load] = next(v for v in vars(code).values() if getattr(v, "dag_id", None) == load).params
    for form, params in forms.items():
        for key in params:
            schema = params.get_param(key).schema if hasattr(params, "get_param") else params[key].schema
            assert set(schema) <= drawn, (form, key, set(schema) - drawn)
            assert set(schema.get("items") or {}) <= {"type"}, (form, key)
            assert "integer" not in str(schema.get("type", "")), (form, key)
    assert {"tpch_load", "tpcc_load", "tpch_bka_study", "tpcc_bp_sweep_study"} <= set(forms)
    params = ParamsDict(form_params(load_spec("tpch_power")))
    for key, typed, reason in (("scale_factor", 5000, "scale_factor: Input should be less than or equal to 1000"),
                               ("repetitions", "fiv", "repetitions: Value error, a number of repetitions"),
                               ("noise_cv_max", 0, "noise_cv_max: Input should be greater than 0"),
                               ("load_streams", 2.5, "load_streams: Input should be a valid integer")):
        params[key] = typed  # the form's params take it: the run is made, and its check refuses it
        with pytest.raises(InvalidInput, match=reason):
            load_spec("tpch_power", {"dataset": {key: typed}} if key in ("scale_factor", "load_streams")
                      else {key: typed})


def test_a_field_that_takes_a_name_or_a_mapping_takes_both_in_the_form():
    """TPC-C's mix is a deck's name or percent weights: the form's schema lets both through (it
    was typed string-or-null, so weights from a conf were refused at trigger time), and the spec
    model still decides which names and weights are good."""
    from airflow.sdk.definitions.param import ParamsDict

    from mysqlbench.studies.form import form_params
    from mysqlbench.studies.spec import load_spec

    params = ParamsDict(form_params(load_spec("tpcc_bp_sweep_study")))
    assert params["mix"] == "spec"
    params["mix"] = {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4}
    params["mix"] = "tpcc-mysql"
    with pytest.raises(InvalidInput, match="unknown mix 'cards'"):
        load_spec("tpcc_bp_sweep_study", {"workload_params": {"mix": "cards"}})


def test_a_managed_instances_config_overrides_are_allow_listed_without_a_server(tmp_path):
    """Issue 25: dropping the allow-list check in ManagedServer.render_config survived the unit
    tier (only a server test held it). Rendering the my.cnf needs no server."""
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    server = ManagedServer(ManagedSpec.load("demo"), root=tmp_path / "demo")
    assert "innodb_buffer_pool_size = 1073741824" in server.render_config({"innodb_buffer_pool_size": 1 << 30})
    with pytest.raises(InvalidInput, match="is refused, path variable"):
        server.render_config({"init_file": "/tmp/evil.sql"})
    with pytest.raises(InvalidInput):
        server.render_config({"innodb_buffer_pool_size": "1G\ninit-file=/tmp/evil.sql"})


def test_a_target_made_on_the_command_line_is_found_again_as_it_was_saved(tmp_path, monkeypatch):
    """`target up NAME --server ID` saves its spec beside the datadir and every later task loads it
    by name: the settings it starts with (its my.cnf overrides, still allow-listed on the way back
    in), its base file and OS user come back as saved; a spec file that leaves them out gets the
    defaults (the flavor's base.cnf, no overrides, the mysql user). (Issue 25 item 4: reading the
    overrides back was dropped by a mutant of targets/instance.py that no unit or server test saw.)"""
    import yaml

    from mysqlbench.targets.instance import ManagedSpec

    monkeypatch.setenv("MYSQLBENCH_WORK_DIR", str(tmp_path))
    saved = ManagedSpec(name="cli_made", conn_id="mysqlbench_cli_made", port=3399, base_cnf="mariadb/base.cnf",
                        overrides={"innodb_buffer_pool_size": "512M"}, os_user="benchuser", server="mariadb-10.11")
    assert saved.save() == tmp_path / "targets" / "cli_made" / "target.yaml" == ManagedSpec.path_of("cli_made")
    assert ManagedSpec.load("cli_made") == saved
    # saved again over itself (its directory there by now), with a server of the user's own basedir
    again = ManagedSpec(name="cli_made", conn_id="mysqlbench_cli_made", port=3399, basedir="/opt/mysql-8.0.36")
    assert again.save() == ManagedSpec.path_of("cli_made")
    assert ManagedSpec.load("cli_made") == again and ManagedSpec.load("cli_made").basedir == "/opt/mysql-8.0.36"
    (tmp_path / "targets" / "bare").mkdir()
    (tmp_path / "targets" / "bare" / "target.yaml").write_text(yaml.safe_dump({"conn_id": "c", "port": 3398}))
    assert ManagedSpec.load("bare") == ManagedSpec(name="bare", conn_id="c", port=3398)
    assert ManagedSpec.load("bare").os_user == "mysql" and ManagedSpec.load("bare").overrides == {}
    (tmp_path / "targets" / "bad").mkdir()
    (tmp_path / "targets" / "bad" / "target.yaml").write_text(yaml.safe_dump(
        {"conn_id": "c", "port": 3397, "config": {"overrides": {"init_file": "/tmp/evil.sql"}}}))
    with pytest.raises(InvalidInput, match="init_file"):
        ManagedSpec.load("bad")


def test_a_work_directory_the_servers_os_user_cannot_walk_into_is_refused_with_its_mode(tmp_path):
    """Run as root, the managed server runs as its OS user, who must be able to walk down to its
    datadir: a parent directory others cannot search is named, with its mode and the two ways out,
    before any datadir is made."""
    import os

    from mysqlbench.errors import TargetUnavailable
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    private = tmp_path / "private"
    private.mkdir()
    os.chmod(private, 0o700)
    server = ManagedServer(ManagedSpec.load("demo"), root=private / "demo")
    if not server.run_as_root:
        pytest.skip("as a user who is not root, the server runs as that user: nothing to reach")
    with pytest.raises(TargetUnavailable, match=r"the mysql OS user cannot reach .*: .*/private is not searchable by "
                                                r"others \(mode 0o700\); .*MYSQLBENCH_WORK_DIR.*chmod o\+x"):
        server.initialize()
    assert not (private / "demo" / "data").exists()


def test_an_ssh_control_without_its_parts_is_refused():
    """``control: ssh`` needs its SSH connection, a restart command given as a list of plain
    arguments (never a shell string, an empty argument, a newline or a NUL: the list is quoted
    onto the remote command line) and an absolute datadir, or the connection is refused before
    anything runs. (Moved from tests/dags: it calls the check and needs no Airflow run.)"""
    from mysqlbench.targets.connection import TargetConnection

    base = {"host": "db1", "port": 3306, "login": "x", "password": "y"}
    with pytest.raises(InvalidInput, match="needs ssh_conn_id"):
        TargetConnection.from_fields("t", extra={"control": "ssh"}, **base)
    with pytest.raises(InvalidInput, match="needs restart_command"):
        TargetConnection.from_fields("t", extra={"control": "ssh", "ssh_conn_id": "h", "restart_command": "reboot"},
                                     **base)
    for restart in ([], [""], ["sh", "-c\nreboot"], ["a\0b"], ["systemctl", 3]):
        with pytest.raises(InvalidInput, match="needs restart_command, a list of arguments"):
            TargetConnection.from_fields("t", extra={"control": "ssh", "ssh_conn_id": "h", "restart_command": restart,
                                                     "datadir": "/var/lib/mysql"}, **base)
    ok = TargetConnection.from_fields("t", extra={"control": "ssh", "ssh_conn_id": "h", "datadir": "/var/lib/mysql",
                                                  "restart_command": ["systemctl", "restart", "mariadb"]}, **base)
    assert ok.restart_command == ("systemctl", "restart", "mariadb") and ok.datadir == "/var/lib/mysql"
    # the restart command is an ssh control's only: another control keeps none
    other = TargetConnection.from_fields("t", extra={"control": "external", "restart_command": ["x"]}, **base)
    assert other.restart_command == ()
    with pytest.raises(InvalidInput, match="needs datadir"):
        TargetConnection.from_fields("t", extra={"control": "ssh", "ssh_conn_id": "h", "restart_command": ["x"],
                                                 "datadir": "/var/lib/mysql; rm -rf /"}, **base)


def test_a_field_that_may_be_empty_is_optional_in_the_form_and_emptied_by_null():
    """Issue 24 item 3: every field carried Airflow's "*" (required), also those a user may leave
    empty. Those are nullable in the form; a null for one empties it (never the spec file's value
    back), while a null for any other field keeps the file's value (the form's unset optional)."""
    from mysqlbench.studies.form import form_params
    from mysqlbench.studies.spec import MAY_BE_EMPTY, load_spec

    params = form_params(load_spec("tpch_bka_study"))
    assert {key: params[key].schema["type"] for key in MAY_BE_EMPTY} == {
        "targets": ["array", "null"], "settings": ["object", "null"], "variables": ["object", "null"],
        "matrix": ["object", "null"]}
    assert "null" not in params["units"].schema["type"] and "null" not in params["cache"].schema["type"]
    emptied = load_spec("tpch_bka_study", {"settings": None, "matrix": None, "targets": None, "seed": None})
    assert (emptied.settings, emptied.matrix, emptied.targets) == ({}, {}, [])
    kept = load_spec("tpch_bka_study", {"cache": None, "min_effect": None})
    assert kept.cache == load_spec("tpch_bka_study").cache and kept.min_effect == 0.03
