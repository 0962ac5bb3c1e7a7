"""A bad SMT config is refused when the connector is created, with one line naming the
transform's alias and the key (issue 23), for every SMT and predicate, Kafka's and Debezium's.

The cases go through the runtime's own paths: `POST /connectors` of a standalone herder (Kafka
Connect's 400 body: a header line, one line per error, a footer) and the validate endpoint
(`PUT /connector-plugins/{type}/config/validate`, the error on the key itself), and a few through
`cdc standalone` as a process, whose refusal is one line on stderr. Each case's valid config is
accepted first, so the refusal is the bad key's and nothing else's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rest.conftest import Rest
from tests.support.proc import run_cdc, write_props

K = "org.apache.kafka.connect.transforms."
D = "io.debezium.transforms."
P = "org.apache.kafka.connect.transforms.predicates."
REGEX = ("(.*)", "x$1")
ROUTER = {"topic.regex": "(.*)", "topic.replacement": "$1.all"}
HEADER_TO_VALUE = {"headers": "h", "fields": "f", "operation": "copy"}
HEADER_FROM = {"fields": "a", "headers": "h", "operation": "copy"}
PARTITIONS = {"partition.payload.fields": "change.id", "partition.topic.num": "4"}
FILTER = {"language": "cdc.expr", "condition": "value != null"}
CBR = {"language": "cdc.expr", "topic.expression": "topic + '.x'"}
MISSING = None  # the bad value that removes the key

# (class, a valid config, the key made bad, its bad value or MISSING)
CASES: list[tuple[str, dict[str, str], str, str | None]] = [
    (K + "RegexRouter", {"regex": REGEX[0], "replacement": REGEX[1]}, "regex", "(("),
    (K + "RegexRouter", {"regex": REGEX[0], "replacement": REGEX[1]}, "regex", MISSING),
    (K + "RegexRouter", {"regex": REGEX[0], "replacement": REGEX[1]}, "replacement", MISSING),
    (K + "RegexRouter", {"regex": REGEX[0], "replacement": REGEX[1]}, "replacement", "x$7"),
    (K + "InsertField$Value", {"static.field": "s", "static.value": "v"}, "static.value", MISSING),
    (K + "InsertField$Key", {"topic.field": "t"}, "topic.field", ""),
    (K + "ReplaceField$Value", {"renames": "a:b"}, "renames", "a"),
    (K + "ReplaceField$Key", {"exclude": "a"}, "replace.null.with.default", "maybe"),
    (K + "MaskField$Value", {"fields": "a"}, "fields", MISSING),
    (K + "MaskField$Key", {"fields": "a"}, "replacement", ""),
    (K + "HoistField$Value", {"field": "a"}, "field", MISSING),
    (K + "HoistField$Key", {"field": "a"}, "field", MISSING),
    (K + "TimestampRouter", {}, "timestamp.format", "yyyy'MM"),
    (K + "InsertHeader", {"header": "h", "value.literal": "v"}, "header", MISSING),
    (K + "InsertHeader", {"header": "h", "value.literal": "v"}, "value.literal", MISSING),
    (K + "DropHeaders", {"headers": "h"}, "headers", MISSING),
    (K + "DropHeaders", {"headers": "h"}, "headers", ""),
    (K + "ExtractField$Value", {"field": "a"}, "field", MISSING),
    (K + "ExtractField$Key", {"field": "a"}, "field.syntax.version", "V9"),
    (K + "SetSchemaMetadata$Value", {"schema.name": "n"}, "schema.name", MISSING),
    (K + "SetSchemaMetadata$Key", {"schema.name": "n"}, "schema.version", "x"),
    (K + "ValueToKey", {"fields": "a"}, "fields", MISSING),
    (K + "HeaderFrom$Value", HEADER_FROM, "operation", "swap"),
    (K + "HeaderFrom$Key", HEADER_FROM, "operation", MISSING),
    (K + "HeaderFrom$Value", HEADER_FROM, "headers", "h,i"),
    (K + "HeaderFrom$Value", HEADER_FROM, "fields", MISSING),
    (K + "Flatten$Value", {}, "delimiter", "."),  # valid: Flatten has no required key; see below
    (K + "Cast$Value", {"spec": "a:int8"}, "spec", MISSING),
    (K + "Cast$Value", {"spec": "a:int8"}, "spec", "a:nope"),
    (K + "Cast$Key", {"spec": "int8"}, "spec", "a"),
    (K + "Cast$Value", {"spec": "a:int8"}, "replace.null.with.default", "maybe"),
    (K + "TimestampConverter$Value", {"target.type": "Date"}, "target.type", MISSING),
    (K + "TimestampConverter$Value", {"target.type": "Date"}, "target.type", "Nope"),
    (K + "TimestampConverter$Key", {"target.type": "string", "format": "yyyy"}, "format", MISSING),
    (K + "TimestampConverter$Value", {"target.type": "string", "format": "yyyy"}, "format", "yyyy'MM"),
    (K + "TimestampConverter$Value", {"target.type": "Date"}, "unix.precision", "weeks"),
    (K + "Filter", {}, "predicate", "nope"),
    (K + "Filter", {}, "negate", "true"),  # negate without a predicate
    (D + "ExtractNewRecordState", {}, "delete.tombstone.handling.mode", "keep"),
    (D + "ExtractNewRecordState", {}, "delete.handling.mode", "keep"),
    (D + "ExtractNewRecordState", {}, "drop.tombstones", "maybe"),
    (D + "ExtractNewRecordState", {}, "add.fields", "source."),
    (D + "ExtractNewRecordState", {}, "add.headers", "a:b:c"),
    (D + "ExtractNewRecordState", {}, "drop.fields.from.key", "x"),
    (D + "outbox.EventRouter", {}, "route.topic.regex", "(("),
    (D + "outbox.EventRouter", {}, "route.topic.replacement", "x-${nope}"),
    (D + "outbox.EventRouter", {}, "table.op.invalid.behavior", "nope"),
    (D + "outbox.EventRouter", {}, "table.fields.additional.placement", "type"),
    (D + "outbox.EventRouter", {}, "table.fields.additional.placement", "type:body"),
    (D + "outbox.EventRouter", {}, "table.json.payload.null.behavior", "nope"),
    (D + "outbox.EventRouter", {}, "table.field.additional.missing", "maybe"),
    (D + "ByLogicalTableRouter", ROUTER, "topic.regex", MISSING),
    (D + "ByLogicalTableRouter", ROUTER, "topic.replacement", MISSING),
    (D + "ByLogicalTableRouter", ROUTER, "topic.regex", "(("),
    (D + "ByLogicalTableRouter", {**ROUTER, "key.field.replacement": "$1"}, "key.field.regex", "(("),
    (D + "ByLogicalTableRouter", {**ROUTER, "key.field.regex": "(.*)", "key.field.replacement": "$1"},
     "key.field.replacement", MISSING),
    (D + "ByLogicalTableRouter", ROUTER, "key.enforce.uniqueness", "maybe"),
    (D + "ByLogicalTableRouter", ROUTER, "schema.name.adjustment.mode", "nope"),
    (D + "ToLogicalTopicRouter", ROUTER, "topic.regex", "[a-"),
    (D + "HeaderToValue", HEADER_TO_VALUE, "headers", MISSING),
    (D + "HeaderToValue", HEADER_TO_VALUE, "fields", MISSING),
    (D + "HeaderToValue", HEADER_TO_VALUE, "operation", MISSING),
    (D + "HeaderToValue", HEADER_TO_VALUE, "operation", "swap"),
    (D + "HeaderToValue", HEADER_TO_VALUE, "fields", "f,g"),
    (D + "partitions.PartitionRouting", PARTITIONS, "partition.payload.fields", MISSING),
    (D + "partitions.PartitionRouting", PARTITIONS, "partition.topic.num", MISSING),
    (D + "partitions.PartitionRouting", PARTITIONS, "partition.topic.num", "0"),
    (D + "partitions.PartitionRouting", PARTITIONS, "partition.hash.function", "md5"),
    (D + "TimezoneConverter", {"converted.timezone": "UTC"}, "converted.timezone", MISSING),
    (D + "TimezoneConverter", {"converted.timezone": "UTC"}, "converted.timezone", "Nowhere/X"),
    (D + "TimezoneConverter", {"converted.timezone": "UTC"}, "include.list", "a:b:c:d"),
    (D + "TimezoneConverter", {"converted.timezone": "UTC", "include.list": "topic:t:f"}, "exclude.list", "topic:u:f"),
    (D + "ExtractChangedRecordState", {"header.changed.name": "c"}, "header.unchanged.name", ""),
    (D + "Filter", FILTER, "language", MISSING),
    (D + "Filter", FILTER, "language", "jsr223.groovy"),
    (D + "Filter", FILTER, "condition", MISSING),
    (D + "Filter", FILTER, "condition", "value !="),
    (D + "Filter", FILTER, "null.handling.mode", "nope"),
    (D + "ContentBasedRouter", CBR, "topic.expression", MISSING),
    (D + "ContentBasedRouter", CBR, "topic.regex", "(("),
    (D + "ContentBasedRouter", CBR, "language", "javascript"),
]  # fmt: skip
# Keys with no refusal in Kafka or Debezium either (any value, or none, is a working config).
ACCEPTED = {
    (K + "Flatten$Value", "delimiter"),
    (D + "ExtractChangedRecordState", "header.unchanged.name"),
}
PREDICATE_CASES: list[tuple[str, dict[str, str], str, str | None]] = [
    (P + "TopicNameMatches", {"pattern": "a.*"}, "pattern", MISSING),
    (P + "TopicNameMatches", {"pattern": "a.*"}, "pattern", "(("),
    (P + "HasHeaderKey", {"name": "h"}, "name", MISSING),
]

_aliases = itertools.count()


def _alias(cls: str) -> str:
    """A distinct alias per case, shaped like users' (dots, dashes): the message must name this one."""
    return f"{cls.rsplit('.', 1)[-1].replace('$', '-').lower()}.{next(_aliases)}"


def _transform_configs(
    cls: str, good: dict[str, str], key: str, bad: str | None
) -> tuple[dict[str, str], dict[str, str], str]:
    """The valid config, its broken copy, and the bad key's full name (`transforms.<alias>.<key>`)."""
    alias = _alias(cls)
    config = {"transforms": alias, f"transforms.{alias}.type": cls}
    config |= {f"transforms.{alias}.{k}": v for k, v in good.items()}
    return config, _broken(config, f"transforms.{alias}.{key}", bad), f"transforms.{alias}.{key}"


def _predicate_configs(
    cls: str, good: dict[str, str], key: str, bad: str | None
) -> tuple[dict[str, str], dict[str, str], str]:
    alias = _alias(cls)
    config = {"transforms": "f", "transforms.f.type": K + "Filter", "transforms.f.predicate": alias}
    config |= {"predicates": alias, f"predicates.{alias}.type": cls}
    config |= {f"predicates.{alias}.{k}": v for k, v in good.items()}
    return config, _broken(config, f"predicates.{alias}.{key}", bad), f"predicates.{alias}.{key}"


def _broken(config: dict[str, str], name: str, bad: str | None) -> dict[str, str]:
    broken = dict(config)
    if bad is None:
        broken.pop(name, None)
    else:
        broken[name] = bad
    return broken


@pytest.fixture(scope="module")
def herder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    r = Rest(tmp_path_factory.mktemp("herder"))
    yield r
    r.close()


_names = itertools.count()


def _refusal(herder: Rest, config: dict[str, str]) -> str | None:
    """The error line of `POST /connectors`, or None when the connector was created (then deleted)."""
    name = f"c{next(_names)}"
    body = {"name": name, "config": {"connector.class": "GeneratorSource", "topic": "t", "count": "1", **config}}
    r = herder.http.post("/connectors", json=body)
    if r.status_code == 201:
        assert herder.http.delete(f"/connectors/{name}").status_code == 204
        return None
    assert r.status_code == 400, r.text
    header, *errors, footer = r.json()["message"].split("\n")
    assert header == f"Connector configuration is invalid and contains the following {len(errors)} error(s):"
    assert footer.startswith("You can also find the above list of errors at the endpoint")
    assert len(errors) == 1, errors  # one problem, one line
    assert name not in herder.http.get("/connectors").json()
    return errors[0]


def _validate_errors(herder: Rest, config: dict[str, str]) -> dict[str, list[str]]:
    body = {"name": "v", "connector.class": "GeneratorSource", "topic": "t", **config}
    r = herder.http.put("/connector-plugins/GeneratorSource/config/validate", json=body)
    assert r.status_code == 200, r.text
    return {c["value"]["name"]: c["value"]["errors"] for c in r.json()["configs"] if c["value"]["errors"]}


def _check(herder: Rest, good: dict[str, str], bad: dict[str, str], name: str, accepted: bool) -> None:
    assert _refusal(herder, good) is None and _validate_errors(herder, good) == {}
    line = _refusal(herder, bad)
    if accepted:
        assert line is None, line
        return
    assert line is not None, f"{name} accepted"
    assert name in line, line  # the alias and the key, as one name: transforms.<alias>.<key>
    errors = _validate_errors(herder, bad)
    assert list(errors) == [name] and all("\n" not in e for e in errors[name]), errors


@pytest.mark.parametrize(("cls", "good", "key", "bad"), CASES, ids=[f"{c[0].rsplit('.', 1)[-1]}-{c[2]}" for c in CASES])
def test_bad_transform_config_is_one_line_naming_alias_and_key(
    herder: Rest, cls: str, good: dict[str, str], key: str, bad: str | None
) -> None:
    _check(herder, *_transform_configs(cls, good, key, bad), (cls, key) in ACCEPTED)


@pytest.mark.parametrize(("cls", "good", "key", "bad"), PREDICATE_CASES)
def test_bad_predicate_config_is_one_line_naming_alias_and_key(
    herder: Rest, cls: str, good: dict[str, str], key: str, bad: str | None
) -> None:
    _check(herder, *_predicate_configs(cls, good, key, bad), False)


# `cdc standalone` refuses the connector before anything starts: one line on stderr, exit 2.
STANDALONE_CASES = [
    (D + "ExtractNewRecordState", {}, "delete.tombstone.handling.mode", "keep"),  # an unknown mode
    (D + "ByLogicalTableRouter", ROUTER, "topic.regex", MISSING),  # a missing required key
    (K + "RegexRouter", {"regex": REGEX[0], "replacement": REGEX[1]}, "regex", "(("),  # a regex that does not compile
    (D + "outbox.EventRouter", {}, "route.topic.regex", "(?<routedByValue>"),
    (K + "Cast$Value", {"spec": "a:int8"}, "spec", "a:nope"),
]


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("cls", "good", "key", "bad"),
    STANDALONE_CASES,
    ids=[c[0].rsplit(".", 1)[-1] for c in STANDALONE_CASES],
)
def test_standalone_refuses_a_bad_transform_in_one_line(
    tmp_path: Path, cls: str, good: dict[str, str], key: str, bad: str | None
) -> None:
    _, broken, name = _transform_configs(cls, good, key, bad)
    worker = write_props(
        tmp_path / "worker.properties", {"state.dir": tmp_path / "state", "listeners": "http://127.0.0.1:0"}
    )
    connector = {
        "name": "bad",
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "database.hostname": "127.0.0.1",
        "database.port": "1",  # never reached: the config is refused first
        "database.user": "u",
        "database.password": "p",
        "database.server.id": "5",
        "topic.prefix": "x",
        **broken,
    }
    res = run_cdc("standalone", str(worker), str(write_props(tmp_path / "bad.properties", connector)))
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and name in lines[0], res.stderr
