"""`cdc validate` against what the Spark sink needs, for every SMT (issue 23, deliverable 3).

ExtractNewRecordState is accepted when its rows carry the operation and the source position and its
deletes arrive as rows (rewrite); the validator and the sink at run time must agree on that, which a
seeded property checks by running the real transform and the sink's decoder on the same config.
Every other Kafka and Debezium SMT is accepted, warned about or refused, naming its alias and key.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.jobs.load import validate_job_text
from cdc_spark.decode import JsonDeserializer, decode_one
from tests.jobs.test_transforms_with_sink import BASE
from tests.spark.unwrap_events import UnwrappedTable
from tests.support.examples import examples

UNWRAP = (
    "  - {name: unwrap, type: io.debezium.transforms.ExtractNewRecordState, "
    "'add.fields': 'op,source.file,source.pos,source.row,source.sequence,source.snapshot,source.ts_ms', "
    "'delete.tombstone.handling.mode': rewrite}"
)
K = "org.apache.kafka.connect.transforms."
D = "io.debezium.transforms."


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def check(transforms: str, connector: str = "mysql") -> tuple[list[str], list[str]]:
    text = BASE.format(transforms=transforms).replace("connector.class: mysql", f"connector.class: {connector}")
    if connector == "postgres":
        text = text.replace("  topic.prefix: shop\n", "  topic.prefix: shop\n  database.dbname: shop\n")
    _job, problems = validate_job_text(text, check_connectivity=False)
    errors = [p.render("job.yaml") for p in problems if not p.warning]
    warnings = [p.render("job.yaml") for p in problems if p.warning and "TRUNCATE" not in p.message]
    return errors, warnings


# -- ExtractNewRecordState ----------------------------------------------------------------------------
def test_unwrap_with_op_and_position_is_accepted_and_warns_about_truncates() -> None:
    _job, problems = validate_job_text(BASE.format(transforms=UNWRAP), check_connectivity=False)
    assert [p for p in problems if not p.warning] == []
    assert [p.message for p in problems if p.warning and "drops TRUNCATE" in p.message]


@pytest.mark.parametrize(
    ("keys", "connector", "where", "needles"),
    [
        ("'delete.tombstone.handling.mode': rewrite", "mysql", "add.fields", ["missing op, source.file"]),
        (
            "'add.fields': 'op,source.file,source.pos', 'delete.tombstone.handling.mode': rewrite",
            "mysql",
            "add.fields",
            ["missing source.row, source.sequence", "set add.fields=op,source.file,source.pos,source.row"],
        ),
        (
            "'add.fields': 'op,source.file,source.pos:p,source.row,source.sequence', "
            "'delete.tombstone.handling.mode': rewrite",
            "mysql",
            "add.fields",
            ["renamed: source.pos:p"],
        ),
        (
            "'add.fields': 'op,source.file,source.pos,source.row,source.sequence', "
            "'delete.tombstone.handling.mode': rewrite",
            "postgres",
            "add.fields",
            ["missing source.lsn", "set add.fields=op,source.lsn,source.sequence"],
        ),
        (
            "'add.fields': 'op,source.file,source.pos,source.row,source.sequence,source.snapshot'",
            "mysql",
            "delete.tombstone.handling.mode",
            ["null value without its source position", "delete.tombstone.handling.mode=rewrite"],
        ),
        (
            "'add.fields': 'op,source.file,source.pos,source.row,source.sequence,source.snapshot', "
            "'delete.tombstone.handling.mode': delete-to-tombstone",
            "mysql",
            "delete.tombstone.handling.mode",
            ["delete handling: delete-to-tombstone"],
        ),
        (
            "'add.fields': 'op,source.file,source.pos,source.row,source.sequence,source.snapshot', "
            "'delete.handling.mode': none",
            "mysql",
            "delete.handling.mode",
            ["delete handling: none"],
        ),
        (
            "'add.fields': 'op,source.file,source.pos,source.row,source.sequence,source.snapshot', "
            "'delete.tombstone.handling.mode': rewrite, 'route.by.field': kind",
            "mysql",
            "route.by.field",
            ["reads <prefix>.<db>.<table> topics only"],
        ),
        (
            "'add.fields': 'op,source.file,source.pos,source.row,source.sequence,source.snapshot', "
            "'delete.tombstone.handling.mode': rewrite, 'drop.fields.header.name': h, 'drop.fields.from.key': 'true'",
            "mysql",
            "drop.fields.from.key",
            ["merges rows by that key"],
        ),
    ],
)
def test_unwrap_without_what_the_sink_needs_is_refused(
    keys: str, connector: str, where: str, needles: list[str]
) -> None:
    errors, _ = check(f"  - {{name: unwrap, type: io.debezium.transforms.ExtractNewRecordState, {keys}}}", connector)
    assert len(errors) == 1, errors
    assert f"transforms[0]['{where}']" in errors[0] or f"transforms[0].{where}" in errors[0], errors[0]
    assert "transform 'unwrap' (ExtractNewRecordState)" in errors[0]
    for needle in needles:
        assert needle in errors[0], errors[0]


@pytest.mark.parametrize(
    ("keys", "connector"),
    [
        ("'add.fields': 'op,source.lsn,source.sequence,source.snapshot'", "postgres"),
        ("'add.fields': 'op,file,pos,row,sequence,snapshot', 'add.fields.prefix': cdc_", "mysql"),
        ("'add.fields': 'op,table,source.file,source.pos,source.row,source.sequence,source.snapshot'", "mariadb"),
    ],
)
def test_unwrap_variants_the_sink_reads_are_accepted(keys: str, connector: str) -> None:
    errors, warnings = check(
        f"  - {{name: unwrap, type: io.debezium.transforms.ExtractNewRecordState, {keys}, "
        "'delete.tombstone.handling.mode': rewrite-with-tombstone}",
        connector,
    )
    assert errors == [] and warnings == []


def test_unwrap_without_snapshot_marker_warns() -> None:
    errors, warnings = check(
        "  - {name: unwrap, type: io.debezium.transforms.ExtractNewRecordState, "
        "'add.fields': 'op,source.file,source.pos,source.row,source.sequence', "
        "'delete.tombstone.handling.mode': rewrite}"
    )
    assert errors == [] and len(warnings) == 1 and "source.snapshot" in warnings[0]


_POOL = [
    "op",
    "source.file",
    "file",
    "source.pos",
    "pos",
    "source.row",
    "row",
    "source.sequence",
    "sequence",
    "source.snapshot",
    "source.ts_ms",
    "ts_ms",
    "table",
    "source.db",
    "transaction.id",
    "source.pos:position",
    "op:operation",
]


@settings(max_examples=examples(40), deadline=None)
@given(
    entries=st.lists(st.sampled_from(_POOL), unique=True, max_size=9),
    prefix=st.sampled_from(["__", "cdc_", "_"]),
    mode=st.sampled_from(["rewrite", "rewrite-with-tombstone", "tombstone"]),
)
def test_validate_and_the_sink_agree_on_every_add_fields(entries: list[str], prefix: str, mode: str) -> None:
    """Seeded: the validator refuses a config exactly when the sink cannot order what the real
    ExtractNewRecordState writes with it (an update, and a delete)."""
    fields = ",".join(entries)
    errors, _ = check(
        "  - {name: unwrap, type: io.debezium.transforms.ExtractNewRecordState, "
        f"'add.fields': '{fields}', 'add.fields.prefix': '{prefix}', 'delete.tombstone.handling.mode': {mode}}}"
    )
    smt = {"add.fields": fields, "add.fields.prefix": prefix, "delete.tombstone.handling.mode": mode}
    t = UnwrappedTable("shop.shop.orders", smt=smt)
    refused = []
    for op in ("u", "d"):
        record = t.unwrapped(op, 1, {"name": "a", "qty": 1}, 50)
        out = None if record is None else decode_one(JsonDeserializer(), t.topic, *record)
        refused.append(out is None or out[-1] is not None)
    assert bool(errors) == any(refused), (errors, refused)


# -- every other SMT ----------------------------------------------------------------------------------
OK, WARN, ERROR = "ok", "warn", "error"
CASES = [
    # the record key
    (f"{{name: x, type: {K}ExtractField$Key, field: id}}", ERROR, ".field", "key struct"),
    (f"{{name: x, type: {K}HoistField$Key, field: k}}", ERROR, ".field", "key struct"),
    (f"{{name: x, type: {K}Cast$Key, spec: 'id:string'}}", WARN, ".spec", "merge into one row"),
    (
        f"{{name: x, type: {K}TimestampConverter$Key, field: id, target.type: string, format: yyyy}}",
        WARN,
        "target.type",
        "merge into one row",
    ),
    (f"{{name: x, type: {K}SetSchemaMetadata$Key, schema.name: k}}", OK, "", ""),
    (f"{{name: x, type: {K}HeaderFrom$Key, fields: id, headers: h, operation: move}}", ERROR, "", "merges rows"),
    (f"{{name: x, type: {K}HeaderFrom$Key, fields: id, headers: h, operation: copy}}", OK, "", ""),
    (f"{{name: x, type: {K}Flatten$Key}}", OK, "", ""),
    # the envelope
    (f"{{name: x, type: {K}SetSchemaMetadata$Value, schema.version: 3}}", OK, "", ""),
    (f"{{name: x, type: {K}HeaderFrom$Value, fields: op, headers: h, operation: copy}}", OK, "", ""),
    (f"{{name: x, type: {K}HeaderFrom$Value, fields: op, headers: h, operation: move}}", ERROR, ".fields", "copy"),
    (f"{{name: x, type: {K}HeaderFrom$Value, fields: price, headers: h, operation: copy}}", ERROR, ".fields", "fails"),
    (f"{{name: x, type: {K}TimestampConverter$Value, field: ts_ms, target.type: Timestamp}}", OK, "", ""),
    (f"{{name: x, type: {K}TimestampConverter$Value, target.type: Timestamp}}", ERROR, ".field", "whole value"),
    (f"{{name: x, type: {K}TimestampRouter}}", ERROR, "topic.format", "per time period"),
    (f"{{name: x, type: {K}Flatten$Value}}", ERROR, ".type", "reshapes"),
    (f"{{name: x, type: {K}Cast$Value, spec: 'ts_ms:string'}}", ERROR, ".type", "reshapes"),
    (f"{{name: x, type: {K}ValueToKey, fields: op}}", ERROR, ".type", "reshapes"),
    (f"{{name: x, type: {K}ExtractField$Value, field: after}}", ERROR, ".type", "reshapes"),
    (f"{{name: x, type: {K}InsertHeader, header: h, value.literal: v}}", OK, "", ""),
    (f"{{name: x, type: {K}DropHeaders, headers: h}}", OK, "", ""),
    (
        f"{{name: x, type: {D}ByLogicalTableRouter, topic.regex: 'shop\\\\.shop\\\\.(.*)', "
        "topic.replacement: shop.shop.all, key.enforce.uniqueness: 'false'}",
        ERROR,
        "key.enforce.uniqueness",
        "overwrite",
    ),
    (
        f"{{name: x, type: {D}ByLogicalTableRouter, topic.regex: 'shop\\\\.shop\\\\.(.*)', "
        "topic.replacement: shop.shop.all}",
        WARN,
        "",
        "__dbz__physicalTableIdentifier",
    ),
    (f"{{name: x, type: {D}ExtractChangedRecordState, header.changed.name: c}}", OK, "", ""),
    (f"{{name: x, type: {D}HeaderToValue, headers: h, fields: f, operation: copy}}", WARN, "", "never writes it"),
    (
        f"{{name: x, type: {D}partitions.PartitionRouting, partition.payload.fields: source.table, "
        "partition.topic.num: 2}",
        OK,
        "",
        "",
    ),
    (f"{{name: x, type: {D}TimezoneConverter, converted.timezone: Europe/Berlin}}", OK, "", ""),
    (
        f"{{name: x, type: {D}ContentBasedRouter, language: cdc.expr, topic.expression: \"'shop.shop.orders'\"}}",
        WARN,
        "",
        "routes events by their content",
    ),
]
# after an ExtractNewRecordState: the row's columns are fair game, the added op and position are not
FLAT_CASES = [
    (f"{{name: x, type: {K}ReplaceField$Value, exclude: __op}}", ERROR, "", "__op"),
    (f"{{name: x, type: {K}ReplaceField$Value, exclude: price}}", OK, "", ""),
    (f"{{name: x, type: {K}ReplaceField$Value, include: 'id,name'}}", ERROR, "", "__source_pos"),
    (f"{{name: x, type: {K}MaskField$Value, fields: __source_pos}}", ERROR, "", "__source_pos"),
    (f"{{name: x, type: {K}MaskField$Value, fields: name}}", OK, "", ""),
    (f"{{name: x, type: {K}Cast$Value, spec: 'qty:string'}}", OK, "", ""),
    (f"{{name: x, type: {K}Cast$Value, spec: int64}}", ERROR, ".spec", "whole value"),
    (f"{{name: x, type: {K}TimestampConverter$Value, field: created, target.type: string, format: yyyy}}", OK, "", ""),
    (f"{{name: x, type: {K}ValueToKey, fields: id}}", WARN, ".fields", "instead of the table's primary key"),
    (f"{{name: x, type: {K}ValueToKey, fields: __op}}", ERROR, "", "__op"),
    (f"{{name: x, type: {K}Flatten$Value}}", OK, "", ""),
    (f"{{name: x, type: {K}InsertField$Value, static.field: region, static.value: eu}}", OK, "", ""),
    (f"{{name: x, type: {D}HeaderToValue, headers: h, fields: origin, operation: copy}}", OK, "", ""),
    (f"{{name: x, type: {K}HeaderFrom$Value, fields: note, headers: h, operation: move}}", WARN, ".fields", "move"),
    (f"{{name: x, type: {K}ExtractField$Value, field: id}}", ERROR, ".type", "replaces the flattened row"),
    (f"{{name: x, type: {K}TimestampRouter}}", ERROR, "topic.format", "per time period"),
]


def _assert_case(errors: list[str], warnings: list[str], index: int, kind: str, where: str, needle: str) -> None:
    label = f"transforms[{index}]"
    if kind == OK:
        assert errors == [] and warnings == [], (errors, warnings)
        return
    lines = errors if kind == ERROR else warnings
    other = warnings if kind == ERROR else errors
    assert len(lines) == 1 and other == [], (errors, warnings)
    assert label in lines[0] and "transform 'x'" in lines[0], lines[0]
    assert where in lines[0].split(": ", 2)[1] and needle in lines[0], lines[0]


@pytest.mark.parametrize(("smt", "kind", "where", "needle"), CASES)
def test_each_smt_on_the_envelope(smt: str, kind: str, where: str, needle: str) -> None:
    errors, warnings = check(f"  - {smt}")
    _assert_case(errors, warnings, 0, kind, where, needle)


@pytest.mark.parametrize(("smt", "kind", "where", "needle"), FLAT_CASES)
def test_each_smt_after_the_unwrap(smt: str, kind: str, where: str, needle: str) -> None:
    errors, warnings = check(f"{UNWRAP}\n  - {smt}")
    _assert_case(errors, warnings, 1, kind, where, needle)


def test_schema_rename_before_the_unwrap_is_refused() -> None:
    errors, _ = check(f"  - {{name: x, type: {K}SetSchemaMetadata$Value, schema.name: renamed}}\n{UNWRAP}")
    assert len(errors) == 1 and "transforms[0]" in errors[0] and "schema.name" in errors[0], errors
