"""`cdc validate`: each malformed job gets one clear line with its YAML path (one test per case)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from cdc.api.errors import ConfigException
from cdc.cli.jobs import validate
from cdc.jobs.load import JobError, load_job
from cdc.runtime.plugins import PluginRegistry
from tests.runtime.connectors import GeneratorSource

GOOD = """\
name: shop
source:
  connector.class: tests.runtime.connectors.GeneratorSource
  topic: shop.orders
  count: 10
transforms:
  - name: route
    type: org.apache.kafka.connect.transforms.RegexRouter
    regex: "shop\\\\.(.*)"
    replacement: "lake.$1"
transport:
  type: embedded
  state.dir: .cdc
sink:
  type: delta
  path: ./lake
  tables:
    shop.orders:
      keys: [id]
      mode: scd1
spark:
  master: local[2]
  trigger: availableNow
"""


def run(tmp_path: Path, text: str, *args: str) -> tuple[int, list[str]]:
    f = tmp_path / "job.yaml"
    f.write_text(text)
    res = CliRunner().invoke(validate, [str(f), *args], catch_exceptions=False)
    return res.exit_code, [line for line in res.output.splitlines() if line.strip()]


def one_error(tmp_path: Path, text: str, *args: str) -> str:
    code, lines = run(tmp_path, text, *args)
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ") and "Traceback" not in lines[0]
    return lines[0]


def test_good_job_is_ok(tmp_path: Path) -> None:
    code, lines = run(tmp_path, GOOD, "--offline")
    assert code == 0 and lines == [f"{tmp_path / 'job.yaml'}: OK"]


def test_good_job_converts_to_connect_configs(tmp_path: Path) -> None:
    f = tmp_path / "job.yaml"
    f.write_text(GOOD)
    job = load_job(f)
    c = job.connector_config()
    assert c["name"] == "shop" and c["transforms"] == "route"
    assert c["transforms.route.replacement"] == "lake.$1" and c["count"] == "10"
    assert job.worker_config() == {
        "transport": "embedded",
        "state.dir": ".cdc",
        "key.converter.replace.null.with.default": "false",
        "value.converter.replace.null.with.default": "false",
    }
    assert job.tables[0].keys == ("id",)


def test_sink_batches_are_bounded_unless_the_job_says_otherwise(tmp_path: Path) -> None:
    from cdc.jobs.run import DEFAULT_MAX_EVENTS_PER_TRIGGER, JobRunner

    f = tmp_path / "job.yaml"
    f.write_text(GOOD)
    assert JobRunner(load_job(f))._source()["maxEventsPerTrigger"] == str(DEFAULT_MAX_EVENTS_PER_TRIGGER)
    f.write_text(GOOD + "  maxEventsPerTrigger: 5000\n")
    assert JobRunner(load_job(f))._source()["maxEventsPerTrigger"] == "5000"


def test_unknown_top_level_key_suggests(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("spark:", "sprak:"), "--offline")
    assert "job.yaml:21: sprak: unknown key 'sprak'; did you mean 'spark'?" in line


def test_unknown_sink_key_suggests(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("  path: ./lake", "  pth: ./lake\n  path: ./lake"), "--offline")
    assert "job.yaml:16: sink.pth: unknown key 'pth'; did you mean 'path'?" in line


def test_unknown_table_option(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("      mode: scd1", "      mod: scd1"), "--offline")
    assert "sink.tables['shop.orders'].mod: unknown key 'mod'; did you mean 'mode'?" in line


def test_misspelled_source_key_suggests(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("  count: 10", "  cont: 10"), "--offline")
    assert "source.cont: unknown key 'cont'; did you mean 'count'?" in line


def test_wrong_type_in_source(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("  count: 10", "  count: many"), "--offline")
    assert "source.count:" in line and "many" in line and "integer" in line


def test_wrong_type_in_schema(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("      keys: [id]", "      keys: id"), "--offline")
    assert "sink.tables['shop.orders'].keys: expected array, got str 'id'" in line


def test_missing_required_top_level(tmp_path: Path) -> None:
    text = GOOD[: GOOD.index("sink:")]
    line = one_error(tmp_path, text, "--offline")
    assert "sink: missing required key 'sink'" in line


def test_missing_required_source_field(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("  topic: shop.orders\n", ""), "--offline")
    assert "source.topic:" in line and "Missing required configuration" in line


def test_missing_sink_path(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("  path: ./lake\n", ""), "--offline")
    assert "sink.path: missing required key 'path'" in line


def test_unknown_target_type(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("type: delta", "type: hudi"), "--offline")
    assert "sink.type: 'hudi' is not one of delta, postgres, iceberg, parquet" in line


def test_unknown_transport(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("type: embedded", "type: rabbitmq"), "--offline")
    assert "transport.type: 'rabbitmq' is not one of embedded, kafka" in line


def test_kafka_transport_needs_bootstrap(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("type: embedded", "type: kafka"), "--offline")
    assert "transport['bootstrap.servers']: missing required key 'bootstrap.servers'" in line


def test_bad_dsn(tmp_path: Path) -> None:
    text = GOOD.replace("  type: delta\n  path: ./lake", "  type: postgres\n  dsn: 'host=a port'")
    line = one_error(tmp_path, text, "--offline")
    assert "sink.dsn: not a valid PostgreSQL DSN" in line


def test_unreachable_database(tmp_path: Path) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    text = GOOD.replace("  count: 10", f"  count: 10\n  database.hostname: 127.0.0.1\n  database.port: {port}")
    registry = PluginRegistry.discover()
    registry.add(GeneratorSource)
    # GeneratorSource has no database keys: validate the connectivity step directly.
    from cdc.jobs.load import validate_job_text

    _, problems = validate_job_text(text, "job.yaml", check_connectivity=True, registry=registry)
    messages = [p.render("job.yaml") for p in problems]
    assert any(f"cannot reach the database at 127.0.0.1:{port}" in m for m in messages), messages


def test_unknown_connector_class(tmp_path: Path) -> None:
    text = GOOD.replace("tests.runtime.connectors.GeneratorSource", "mysqll")
    line = one_error(tmp_path, text, "--offline")
    assert "source['connector.class']: unknown connector 'mysqll'; did you mean 'mysql'?" in line


def test_unresolvable_env_reference(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("./lake", "${env:CDC_TEST_NO_SUCH_LAKE}"), "--offline")
    assert "sink.path:" in line and "CDC_TEST_NO_SUCH_LAKE" in line


def test_invalid_yaml(tmp_path: Path) -> None:
    line = one_error(tmp_path, "name: [unclosed\nsource: {}\n", "--offline")
    assert "invalid YAML" in line and "job.yaml:" in line


def test_bad_smt_config(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace('    regex: "shop\\\\.(.*)"\n', ""), "--offline")
    assert "transforms:" in line and "transforms.route.regex" in line


def test_bad_trigger(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("trigger: availableNow", "trigger: {processingTime: soon}"), "--offline")
    assert "spark.trigger:" in line


def test_bad_job_name(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("name: shop", "name: 'shop orders!'"), "--offline")
    assert "name: invalid value 'shop orders!'" in line


def test_not_a_mapping(tmp_path: Path) -> None:
    line = one_error(tmp_path, "- just\n- a list\n", "--offline")
    assert "a job must be a YAML mapping" in line


def test_load_job_raises_first_problem_with_count(tmp_path: Path) -> None:
    f = tmp_path / "job.yaml"
    f.write_text(GOOD.replace("type: delta", "type: hudi").replace("spark:", "sprak:"))
    with pytest.raises(JobError, match="and 1 more"):
        load_job(f)


def test_partitioning_a_target_that_cannot_be_partitioned(tmp_path: Path) -> None:
    text = GOOD.replace("type: delta\n  path: ./lake", "type: parquet\n  path: ./lake").replace(
        "      mode: scd1\n", "      mode: scd1\n      partition.by: [day]\n"
    )
    line = one_error(tmp_path, text, "--offline")
    # At the YAML path the user wrote, in the job's own words (type, not the sink's target=).
    assert "job.yaml:21: sink.tables['shop.orders']['partition.by']:" in line and "for type delta" in line


def test_tolerating_errors_without_a_dead_letter_target(tmp_path: Path) -> None:
    text = GOOD.replace("  path: ./lake\n", "  path: ./lake\n  errors.tolerance: all\n")
    line = one_error(tmp_path, text, "--offline")
    assert "sink['errors.tolerance']: errors.tolerance=all needs" in line
    assert "errors.deadletterqueue.topic.name" in line


def test_dead_letter_topic_and_per_table_options_reach_the_sink(tmp_path: Path) -> None:
    from cdc.jobs.run import sink_config

    text = GOOD.replace(
        "  path: ./lake\n",
        "  path: ./lake\n  errors.tolerance: all\n  errors.deadletterqueue.topic.name: shop-dlq\n"
        "  errors.deadletterqueue.context.headers.enable: true\n",
    ).replace("      mode: scd1\n", "      mode: scd1\n      target: orders\n      partition.by: [day]\n")
    code, lines = run(tmp_path, text, "--offline")
    assert code == 0, lines
    conf = sink_config(load_job(tmp_path / "job.yaml"))
    assert conf["errors.deadletterqueue.topic.name"] == "shop-dlq"
    assert conf["errors.deadletterqueue.context.headers.enable"] == "true"
    # The source's topic prefix is the job name here (the generator has no topic.prefix).
    assert conf["table.names"] == {"shop.shop.orders": "orders"}
    assert conf["partition.by"] == {"shop.shop.orders": ["day"]}


def test_the_sources_unavailable_value_placeholder_reaches_the_sink(tmp_path: Path) -> None:
    """The sink keeps the stored value where the connector put its placeholder: the same one."""
    from cdc.jobs.run import sink_config

    text = GOOD.replace("  count: 10\n", "  count: 10\n  unavailable.value.placeholder: 'hex:00ff'\n")
    code, lines = run(tmp_path, text, "--offline")
    assert code == 0, lines
    assert sink_config(load_job(tmp_path / "job.yaml"))["unavailable.value.placeholder"] == "hex:00ff"
    (tmp_path / "job.yaml").write_text(GOOD)
    assert "unavailable.value.placeholder" not in sink_config(load_job(tmp_path / "job.yaml"))
    line = one_error(tmp_path, text.replace("hex:00ff", "hex:zz"), "--offline")
    assert "unavailable.value.placeholder: 'hex:zz': after 'hex:'" in line


# -- adversarial inputs: each once gave a traceback, a vague message or silent acceptance ------
def test_non_utf8_file_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "job.yaml"
    f.write_bytes(GOOD.encode().replace(b"shop.orders:\n", b"shop.\xe9orders:\n"))
    res = CliRunner().invoke(validate, [str(f), "--offline"], catch_exceptions=False)
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"error: {f}:18: the job file is not valid UTF-8 (byte 0xe9); save it as UTF-8" in res.output
    with pytest.raises(ConfigException, match="not valid UTF-8"):
        load_job(f)  # what run, status, verify, topics and offsets use


def test_utf16_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    f = tmp_path / "job.yaml"
    f.write_bytes(GOOD.encode("utf-16"))
    assert load_job(f).name == "shop"


def test_sink_given_as_a_list(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD[: GOOD.index("sink:")] + "sink: [delta]\n", "--offline")
    assert "sink: expected object, got list ['delta']" in line


@pytest.mark.parametrize(("key", "reads_as"), [("yes", "bool"), ("5", "int"), ("~", "null")])
def test_key_that_is_not_a_string(tmp_path: Path, key: str, reads_as: str) -> None:
    line = one_error(tmp_path, GOOD.replace("  master: local[2]", f"  master: local[2]\n  {key}: 1"), "--offline")
    assert f"job.yaml:23: spark: key '{key}' is not a string (YAML reads it as {reads_as}); quote it" in line


def test_repeated_key_is_not_silently_overridden(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("sink:\n", "sink:\n  type: parquet\n"), "--offline")
    assert "job.yaml:16: sink.type: key 'type' is given twice (lines 15 and 16); keep one" in line


def test_table_not_qualified_by_its_database(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("    shop.orders:", "    orders:"), "--offline")
    assert "sink.tables.orders: invalid key 'orders': name a source table as db.table" in line


def test_misspelled_sink_type_reports_only_what_is_wrong(tmp_path: Path) -> None:
    code, lines = run(tmp_path, GOOD.replace("  type: delta", "  tpye: delta"), "--offline")
    assert code == 2 and len(lines) == 2, lines  # not also "missing dsn", which only postgres needs
    assert "sink.tpye: unknown key 'tpye'; did you mean 'type'?" in lines[0]
    assert "sink.type: missing required key 'type'" in lines[1]


def test_every_unknown_key_is_reported(tmp_path: Path) -> None:
    code, lines = run(tmp_path, GOOD.replace("  master: local[2]", "  master: local[2]\n  a: 1\n  b: 2"), "--offline")
    assert code == 2 and [line.split(": ")[2] for line in lines] == ["spark.a", "spark.b"], lines


def test_state_dir_that_cannot_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    text = GOOD.replace("state.dir: .cdc", f"state.dir: {tmp_path}/file/state")
    line = one_error(tmp_path, text, "--offline")
    assert f"transport['state.dir']: cannot use '{tmp_path}/file/state' as state.dir: {tmp_path}/file is a file" in line


def test_source_name_other_than_the_job_name(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("  count: 10", "  count: 10\n  name: orders"), "--offline")
    assert "source.name: the source connector takes the job's name ('shop'), not 'orders'" in line


def test_bad_trigger_says_what_is_expected(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("trigger: availableNow", "trigger: once"), "--offline")
    assert "spark.trigger: invalid value 'once': use availableNow, or {processingTime:" in line
    assert "not valid under any" not in line


def test_bad_job_name_says_what_is_allowed(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("name: shop", "name: 'shop orders!'"), "--offline")
    assert "starts with a letter or digit and has only letters, digits" in line and "^[" not in line


def test_duplicate_transform_alias_points_at_transforms(tmp_path: Path) -> None:
    route = GOOD[GOOD.index("  - name: route") : GOOD.index("transport:")]
    line = one_error(tmp_path, GOOD.replace(route, route + route), "--offline")
    assert "job.yaml:6: transforms: " in line and "Duplicate alias" in line


def test_replication_factor_zero(tmp_path: Path) -> None:
    line = one_error(
        tmp_path, GOOD.replace("state.dir: .cdc", "state.dir: .cdc\n  topic.replication.factor: 0"), "--offline"
    )
    assert "transport['topic.replication.factor']: invalid value 0: use -1" in line


def test_unquoted_date_suggests_quoting(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("  count: 10", "  count: 10\n  since: 2024-01-01"), "--offline")
    assert "got a date/time '2024-01-01' (quote it to keep it as text)" in line


def test_unknown_source_key_without_a_close_match_is_a_warning(tmp_path: Path) -> None:
    code, lines = run(tmp_path, GOOD.replace("  count: 10", "  count: 10\n  zzz.qqq: 1"), "--offline")
    assert code == 0, lines
    assert lines[0].startswith("warning: ") and "source['zzz.qqq']: unknown key 'zzz.qqq'" in lines[0]
    assert lines[1].endswith(": OK")


def test_spark_master_spark_cannot_use(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("master: local[2]", "master: locale[2]"), "--offline")
    assert "spark.master: invalid value 'locale[2]': use local, local[N], local[*], spark://host:port" in line
    on_kafka = GOOD.replace("type: embedded", "type: kafka\n  bootstrap.servers: kafka:9092")
    for master in ("local", "local[*]", "local[4, 2]", "spark://h:7077", "yarn", "k8s://https://h:443"):
        assert run(tmp_path, on_kafka.replace("master: local[2]", f"master: '{master}'"), "--offline")[0] == 0, master


def test_a_cluster_cannot_read_the_embedded_transport(tmp_path: Path) -> None:
    line = one_error(tmp_path, GOOD.replace("master: local[2]", "master: spark://h:7077"), "--offline")
    assert "spark.master: spark.master 'spark://h:7077' runs executors on other machines" in line
    assert "set transport.type: kafka" in line


def test_a_cluster_writing_to_a_local_postgres_is_warned(tmp_path: Path) -> None:
    text = (
        GOOD.replace("type: embedded", "type: kafka\n  bootstrap.servers: kafka:9092")
        .replace("master: local[2]", "master: spark://h:7077")
        .replace("  type: delta\n  path: ./lake", "  type: postgres\n  dsn: postgresql://cdc@localhost/lake")
    )
    code, lines = run(tmp_path, text, "--offline")
    assert code == 0, lines
    assert lines[0].startswith("warning: ") and "sink.dsn: host 'localhost' is this machine" in lines[0]
