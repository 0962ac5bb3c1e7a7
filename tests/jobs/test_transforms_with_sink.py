"""SMTs in a job against what the Spark sink needs: the record key it merges rows by, the
Debezium envelope it applies, and the `<prefix>.<db>.<table>` topics it reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc.jobs.load import validate_job_text
from cdc.jobs.run import JobRunner, data_topic_pattern, sink_config

BASE = """\
name: shop
source:
  connector.class: mysql
  database.hostname: localhost
  database.port: 3306
  database.user: cdc
  database.password: secret
  database.server.id: 5401
  topic.prefix: shop
  database.include.list: shop
transforms:
{transforms}
transport:
  type: embedded
  state.dir: .cdc
sink:
  type: delta
  path: ./lake
  tables:
    shop.orders: {{keys: [id], target: orders_t, partition.by: [kind]}}
    shop.items: {{keys: [id]}}
"""


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def check(transforms: str) -> tuple[list[str], list[str]]:
    job, problems = validate_job_text(BASE.format(transforms=transforms), check_connectivity=False)
    errors = [p.render("job.yaml") for p in problems if not p.warning]
    warnings = [p.render("job.yaml") for p in problems if p.warning]
    assert (job is None) == bool(errors)
    return errors, warnings


def one_error(transforms: str) -> str:
    errors, _ = check(transforms)
    assert len(errors) == 1, errors
    return errors[0]


# -- RegexRouter -----------------------------------------------------------------------------
def test_router_out_of_the_sinks_topics_is_refused() -> None:
    """`(.*)\\.(.*)\\.(.*)` → `$3` was silently never read: the sink subscribes to <prefix>.<db>.<table>."""
    line = one_error(
        '  - {name: short, type: org.apache.kafka.connect.transforms.RegexRouter, regex: "[^.]+\\\\.[^.]+\\\\.(.*)", '
        "replacement: $1}"
    )
    assert "transforms[0]" in line and "'short' (RegexRouter)" in line
    assert "'shop.shop.orders' to 'orders'" in line and "never reads" in line
    assert "sink.tables.shop.orders.target" in line


def test_router_inside_the_sinks_topics_keys_table_options_by_the_routed_topic() -> None:
    transforms = (
        '  - {name: ren, type: org.apache.kafka.connect.transforms.RegexRouter, regex: "shop\\\\.shop\\\\.(.*)", '
        "replacement: shop.lake.$1}"
    )
    errors, warnings = check(transforms)
    assert errors == [] and warnings == []
    job, _ = validate_job_text(BASE.format(transforms=transforms), check_connectivity=False)
    assert job is not None
    conf = sink_config(job)
    # The sink sees `shop.lake.orders`: options keyed by the unrouted topic never applied.
    assert conf["table.names"] == {"shop.lake.orders": "orders_t"}
    assert conf["partition.by"] == {"shop.lake.orders": ["kind"]}
    assert JobRunner(job)._source()["topic.pattern"] == data_topic_pattern("shop")


def test_router_merging_two_tables_warns() -> None:
    errors, warnings = check(
        '  - {name: one, type: org.apache.kafka.connect.transforms.RegexRouter, regex: "shop\\\\.shop\\\\..*", '
        "replacement: shop.shop.all}"
    )
    assert errors == []
    assert len(warnings) == 1 and "one topic 'shop.shop.all'" in warnings[0]


# -- the record key ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "smt",
    [
        "{name: drop, type: org.apache.kafka.connect.transforms.ReplaceField$Key, exclude: id}",
        "{name: drop, type: org.apache.kafka.connect.transforms.ReplaceField$Key, renames: 'id:pk'}",
        "{name: drop, type: org.apache.kafka.connect.transforms.MaskField$Key, fields: id}",
    ],
)
def test_key_changing_smts_are_refused(smt: str) -> None:
    line = one_error(f"  - {smt}")
    assert "transforms[0]" in line and "'drop'" in line
    assert "merges rows by that key" in line and "sink.tables.<db>.<table>.keys" in line


def test_insert_field_key_per_event_is_refused_static_warns() -> None:
    line = one_error("  - {name: ins, type: org.apache.kafka.connect.transforms.InsertField$Key, offset.field: o}")
    assert "transforms[0]['offset.field']" in line and "never merges" in line
    errors, warnings = check(
        "  - {name: ins, type: org.apache.kafka.connect.transforms.InsertField$Key, static.field: s, static.value: v}"
    )
    assert errors == [] and len(warnings) == 1 and "extra key column" in warnings[0]


# -- the envelope -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("smt", "where"),
    [
        ("{name: v, type: org.apache.kafka.connect.transforms.ReplaceField$Value, exclude: source}", ".exclude"),
        ("{name: v, type: org.apache.kafka.connect.transforms.ReplaceField$Value, include: 'after,op'}", ".include"),
        ("{name: v, type: org.apache.kafka.connect.transforms.ReplaceField$Value, renames: 'after:row'}", ".renames"),
        ("{name: v, type: org.apache.kafka.connect.transforms.MaskField$Value, fields: after}", ".fields"),
        ("{name: v, type: org.apache.kafka.connect.transforms.MaskField$Value, fields: price}", ".fields"),
    ],
)
def test_envelope_breaking_smts_are_refused(smt: str, where: str) -> None:
    errors, _ = check(f"  - {smt}")
    mine = [e for e in errors if "Debezium" in e]
    assert len(mine) == 1, errors
    assert f"transforms[0]{where}" in mine[0] and "'v'" in mine[0]


def test_replace_field_value_on_a_column_warns_that_it_does_nothing() -> None:
    errors, warnings = check(
        "  - {name: v, type: org.apache.kafka.connect.transforms.ReplaceField$Value, exclude: price}"
    )
    assert errors == [] and len(warnings) == 1
    assert "changes nothing" in warnings[0] and "column.exclude.list" in warnings[0]


def test_insert_field_value_warns_that_the_sink_ignores_it() -> None:
    errors, warnings = check(
        "  - {name: v, type: org.apache.kafka.connect.transforms.InsertField$Value, static.field: s, static.value: x}"
    )
    assert errors == [] and len(warnings) == 1 and "never writes it" in warnings[0]


# -- Filter -----------------------------------------------------------------------------------
def test_filter_dropping_a_configured_table_is_refused() -> None:
    line = one_error(
        "  - {name: f, type: org.apache.kafka.connect.transforms.Filter, predicate: "
        "{type: org.apache.kafka.connect.transforms.predicates.TopicNameMatches, pattern: '.*items'}}"
    )
    assert "transforms[0]" in line and "'shop.shop.items'" in line and "table.exclude.list" in line


def test_filter_tombstones_is_fine_negated_is_refused() -> None:
    smt = (
        "  - {{name: f, type: org.apache.kafka.connect.transforms.Filter, predicate: "
        "{{type: org.apache.kafka.connect.transforms.predicates.RecordIsTombstone{neg}}}}}"
    )
    assert check(smt.format(neg="")) == ([], [])
    line = one_error(smt.format(neg=", negate: true"))
    assert "transforms[0].predicate.negate" in line and "keeps only tombstones" in line


def test_filter_without_predicate_is_refused() -> None:
    line = one_error("  - {name: f, type: org.apache.kafka.connect.transforms.Filter}")
    assert "drops every event" in line


def test_filter_by_header_warns() -> None:
    errors, warnings = check(
        "  - {name: f, type: org.apache.kafka.connect.transforms.Filter, predicate: "
        "{type: org.apache.kafka.connect.transforms.predicates.HasHeaderKey, name: h}}"
    )
    assert errors == [] and len(warnings) == 1 and "deletes and truncates" in warnings[0]
