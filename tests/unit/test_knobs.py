"""Knob translation per flavor and version, and the value and name allow-lists."""

import pytest

from mysqlbench import knobs as knob_module
from mysqlbench.errors import InvalidInput, NotApplicable
from mysqlbench.flavor import parse_server_info
from mysqlbench.knobs import check_settable_variable, parse_size, render_cnf_value, translate

MARIADB_1011 = parse_server_info("10.11.19-MariaDB-0+deb12u1", "Debian 12")
MARIADB_105 = parse_server_info("10.5.23-MariaDB", "")
MYSQL_8029 = parse_server_info("8.0.29", "MySQL Community Server - GPL")
MYSQL_8036 = parse_server_info("8.0.36", "MySQL Community Server - GPL")
MYSQL_57 = parse_server_info("5.7.44", "MySQL Community Server (GPL)")
PERCONA_80 = parse_server_info("8.0.35-27", "Percona Server (GPL), Release 27")


def concrete(knobs, server, **kw):
    return [(s.variable, s.value, s.scope, s.at_least) for s in translate(knobs, server, **kw)]


@pytest.mark.parametrize("text,size", [("128K", 131072), ("6M", 6291456), ("2G", 2147483648), ("2g", 2147483648),
                                       (4096, 4096), ("4096", 4096), ("512MB", 536870912)])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("bad", ["1; DROP DATABASE x", "6M'", "-1", "6 M", "", "1e9", True, -5, 1.5])
def test_bad_sizes_are_rejected(bad):
    with pytest.raises(InvalidInput):
        parse_size(bad, "join_buffer_size")


def test_redo_log_size_per_flavor_and_version():
    assert concrete({"redo_log_size": "2G"}, MARIADB_1011) == [("innodb_log_file_size", 2 << 30, "global", False)]
    assert concrete({"redo_log_size": "2G"}, MYSQL_8036) == [("innodb_redo_log_capacity", 2 << 30, "global", False)]
    # before 8.0.30 the size is per file: the logical total is split over innodb_log_files_in_group
    assert concrete({"redo_log_size": "2G"}, MYSQL_8029, server_variables={"innodb_log_files_in_group": 2}) == [
        ("innodb_log_file_size", 1 << 30, "global", False)]
    assert concrete({"redo_log_size": "2G"}, PERCONA_80) == [("innodb_redo_log_capacity", 2 << 30, "global", False)]


def test_buffer_pool_instances_not_applicable_on_mariadb_1051_and_later():
    with pytest.raises(NotApplicable, match=r"not applicable on mariadb 10\.11\.19: .*removed in MariaDB 10\.6"):
        translate({"buffer_pool_instances": 8}, MARIADB_1011)
    with pytest.raises(NotApplicable, match="ignored from MariaDB 10.5.1 .*MDEV-15058"):
        translate({"buffer_pool_instances": 8}, MARIADB_105)
    assert concrete({"buffer_pool_instances": 8}, parse_server_info("10.5.0-MariaDB", "")) == [
        ("innodb_buffer_pool_instances", 8, "global", False)]
    assert concrete({"buffer_pool_instances": 4}, MYSQL_57) == [("innodb_buffer_pool_instances", 4, "global", False)]


def test_mrr_buffer_is_flavor_specific():
    assert concrete({"mrr_buffer_size": "4M"}, MARIADB_1011) == [("mrr_buffer_size", 4 << 20, "session", False)]
    assert concrete({"mrr_buffer_size": "4M"}, MYSQL_8036) == [("read_rnd_buffer_size", 4 << 20, "session", False)]


def test_mariadb_join_buffer_raises_its_cap():
    assert concrete({"join_buffer_size": "6M"}, MARIADB_1011) == [
        ("join_buffer_size", 6 << 20, "session", False),
        ("join_buffer_space_limit", 48 << 20, "session", True),
    ]
    assert concrete({"join_buffer_size": "6M"}, MYSQL_8036) == [("join_buffer_size", 6 << 20, "session", False)]


def test_unknown_knob_lists_the_known_ones():
    with pytest.raises(InvalidInput, match=r"unknown knob 'join_bufer_size'; known knobs: .*join_buffer_size"):
        translate({"join_bufer_size": "1M"}, MARIADB_1011)


@pytest.mark.parametrize("value", ["1; DROP DATABASE x", "6M'", "a b", "x\ninit_file=/tmp/x", "'", ""])
def test_raw_values_are_allow_listed(value):
    with pytest.raises(InvalidInput, match="not allowed"):
        translate({}, MARIADB_1011, raw_variables={"optimizer_switch": value})


def test_raw_values_keep_their_type():
    settings = translate({}, MARIADB_1011, raw_variables={
        "optimizer_switch": "mrr=on,mrr_sort_keys=on", "join_cache_level": 6, "tmp_table_size": "64M",
        "innodb_adaptive_hash_index": False})
    assert [(s.variable, s.value) for s in settings] == [
        ("optimizer_switch", "mrr=on,mrr_sort_keys=on"), ("join_cache_level", 6),
        ("tmp_table_size", 64 << 20), ("innodb_adaptive_hash_index", "OFF")]


@pytest.mark.parametrize("name", ["secure_file_priv", "plugin_dir", "init_file", "general_log_file",
                                  "slow_query_log_file", "log_error", "datadir", "tmpdir", "init_connect",
                                  "innodb_data_home_dir", "ssl_cert", "sql_log_bin", "log-bin", "local_infile",
                                  "default_password_lifetime", "Join_Buffer", "x;y"])
def test_path_and_security_variables_are_never_set(name):
    with pytest.raises(InvalidInput):
        check_settable_variable(name)


@pytest.mark.parametrize(("name", "category"), [
    ("innodb_tmpdir", "path"), ("debug_dbug", "debugging"), ("secure_timestamp", "security"),
    ("general_log", "logging"), ("log_output", "logging"), ("event_scheduler", "server state"),
    ("read_only", "server state"), ("innodb_buffer_pool_load_at_startup", "engine"), ("gtid_domain_id", "replication")])
def test_refused_variables_say_why(name, category):
    """The leaks of a name pattern (issue 7 #13): each is refused with its category's reason."""
    with pytest.raises(InvalidInput, match=f"refused, {category} variable: "):
        check_settable_variable(name)


@pytest.mark.parametrize("name", ["div_precision_increment", "sql_select_limit", "innodb_ft_aux_table",
                                  "wait_timeout", "optimizer_trace_max_mem_size"])
def test_a_variable_off_the_allow_list_is_refused_with_a_pointer_to_it(name):
    with pytest.raises(InvalidInput, match="not on the allow-list .*variables.yaml"):
        check_settable_variable(name)


def test_the_allow_list_is_per_flavor():
    assert check_settable_variable("innodb_redo_log_capacity", "mysql") == "innodb_redo_log_capacity"
    with pytest.raises(NotApplicable, match="allow-list for mysql only"):
        check_settable_variable("innodb_redo_log_capacity", "mariadb")
    with pytest.raises(NotApplicable, match="for mariadb only"):
        translate({}, MYSQL_8036, raw_variables={"join_cache_level": 6})
    assert check_settable_variable("innodb-io-capacity", "mariadb") == "innodb_io_capacity"


def test_allow_list_and_refusals_do_not_overlap_and_cover_the_knobs():
    allowed = {name for names in knob_module.variable_policy()["allowed"].values() for name in names}
    assert sorted(name for name in allowed if knob_module.refusal(name)) == []
    # what the engine sets (knob variables, its slow log) may be journaled and replayed, nothing else
    for name in [*knob_module.knob_variables(), *knob_module.ENGINE_VARIABLES]:
        assert knob_module.check_engine_variable(name) == name
    with pytest.raises(InvalidInput):
        knob_module.check_engine_variable("general_log")


def test_cnf_values_cannot_inject_lines():
    assert render_cnf_value("256M") == str(256 << 20)
    with pytest.raises(InvalidInput):
        render_cnf_value("1\ninit-file=/etc/shadow")


def test_optimizer_switch_knobs_merge_into_one_setting():
    settings = translate({"icp": "off", "mrr": "on", "mrr_cost_based": "off"}, MARIADB_1011)
    assert [(s.variable, s.value) for s in settings] == [
        ("optimizer_switch", "index_condition_pushdown=off,mrr=on,mrr_cost_based=off,mrr_sort_keys=on")]
    mysql = translate({"icp": "off", "mrr": "on", "mrr_cost_based": "off"}, MYSQL_8036)
    assert mysql[0].value == "index_condition_pushdown=off,mrr=on,mrr_cost_based=off"


def test_bka_per_flavor():
    on = translate({"bka": "on"}, MARIADB_1011)
    assert [(s.variable, s.value) for s in on] == [
        ("optimizer_switch", "join_cache_bka=on,mrr=on,mrr_sort_keys=on"), ("join_cache_level", 6)]
    off = translate({"bka": "off"}, MARIADB_1011)
    assert [(s.variable, s.value) for s in off] == [("join_cache_level", 2)]
    mysql = translate({"bka": True}, MYSQL_8036)
    assert [(s.variable, s.value) for s in mysql] == [
        ("optimizer_switch", "batched_key_access=on,mrr=on,mrr_cost_based=off")]


def test_contradicting_switches_are_rejected():
    with pytest.raises(InvalidInput, match="bka needs optimizer_switch mrr=on, but mrr sets mrr=off"):
        translate({"mrr": "off", "bka": "on"}, MARIADB_1011)


@pytest.mark.parametrize("bad", ["maybe", 1, "on; DROP DATABASE x"])
def test_switch_values_are_on_or_off(bad):
    with pytest.raises(InvalidInput, match="is not on/off"):
        translate({"icp": bad}, MARIADB_1011)


@pytest.mark.parametrize("asked,effective,same", [
    ("ON", 1, True), ("OFF", 0, True), ("ON", "1", True), (True, 1, True), ("off", "OFF", True),
    ("ON", 0, False), ("OFF", 1, False), ("TABLE", "TABLE", True), ("TABLE", "FILE", False),
])
def test_boolean_variables_read_back_as_numbers_are_the_same_value(asked, effective, same):
    from mysqlbench.flavor import parse_server_info
    from mysqlbench.knobs import Setting, check_effective, parse_raw_value, same_value

    assert same_value(parse_raw_value(asked, "v"), effective) is same
    server = parse_server_info("10.11.14-MariaDB-0+deb12u2", "Debian 12")
    setting = Setting("variables.event_scheduler", "event_scheduler", parse_raw_value(asked, "v"), "session")
    if same:
        check_effective(setting, setting.value, effective, server)
    else:
        with pytest.raises(NotApplicable):
            check_effective(setting, setting.value, effective, server)


def test_choice_knobs_take_one_of_their_values():
    """The TPC-C seeds' durability and flush settings: 0 is a valid flush_log_at_trx_commit (an int
    knob would refuse it), names compare without case, anything else is refused up front."""
    assert concrete({"flush_log_at_trx_commit": 0}, MARIADB_1011) == [
        ("innodb_flush_log_at_trx_commit", 0, "global", False)]
    assert concrete({"flush_log_at_trx_commit": "2"}, MYSQL_8036) == [
        ("innodb_flush_log_at_trx_commit", 2, "global", False)]
    assert concrete({"flush_method": "o_direct"}, MYSQL_8036) == [("innodb_flush_method", "O_DIRECT", "global", False)]
    for bad in ({"flush_log_at_trx_commit": 3}, {"flush_log_at_trx_commit": True}, {"flush_method": "directio"},
                {"flush_method": "O_DIRECT\ninit_file=/tmp/x"}):
        with pytest.raises(InvalidInput, match="is not one of"):
            translate(bad, MARIADB_1011)
    assert knob_module.check_knob("flush_log_at_trx_commit", 0) == 0


def test_a_server_config_is_read_allow_listed_and_checked():
    config = knob_module.server_config("seed_002")
    assert config["innodb_io_capacity"] == 20000 and config["sort_buffer_size"] == 4 << 20
    # a cap before what it caps, so SET GLOBAL on a connection-only target is not clamped
    order = list(config)
    assert order.index("innodb_io_capacity_max") < order.index("innodb_io_capacity")
    assert "skip_grant_tables" not in config and "innodb_buffer_pool_size" not in config
    with pytest.raises(InvalidInput, match="unknown server config"):
        knob_module.server_config("seed_999")
    with pytest.raises(InvalidInput, match="not allowed"):
        knob_module.server_config("../secret")


def test_a_server_config_that_sets_a_refused_variable_is_refused(tmp_path, monkeypatch):
    (tmp_path / "bad.cnf").write_text("[mysqld]\ngeneral_log_file = /tmp/all.log\n")
    monkeypatch.setattr(knob_module, "SERVER_CONFIG_DIR", tmp_path)
    with pytest.raises(InvalidInput, match="general_log_file"):
        knob_module.server_config("bad")


def test_sizes_are_bounded_before_anything_reaches_a_server():
    """Issue 27: buffer_pool_size 999999999999999T was checked only by the server; a redo log
    larger than the free disk failed a load half way and left an empty schema. A size above 1 PiB
    is no size; against the host, memory bounds the buffer pool and free disk the redo log."""
    from mysqlbench.errors import InvalidInput
    from mysqlbench.knobs import check_host_bounds, parse_size

    with pytest.raises(InvalidInput, match="more than 1 PiB"):
        parse_size("999999999999999T", "buffer_pool_size")
    assert parse_size("1024T") == 1 << 50
    gib = 1 << 30
    check_host_bounds({"buffer_pool_size": ["4G"], "load_redo_log_size": ["keep", "2G"]}, 8 * gib, 10 * gib, "h")
    with pytest.raises(InvalidInput, match=r"buffer_pool_size 16G is more than the memory of h \(8.0 GiB\)"):
        check_host_bounds({"buffer_pool_size": ["1G", "16G"]}, 8 * gib, 10 * gib, "h")
    with pytest.raises(InvalidInput, match="load_redo_log_size 64G is more than the free disk"):
        check_host_bounds({"load_redo_log_size": ["64G"]}, 8 * gib, 10 * gib, "h")
    check_host_bounds({"buffer_pool_size": ["16G"]}, None, None, "h")  # bounds unknown: nothing refused
