"""What the Debezium SMTs emit survives the JsonConverter (schemas enabled) and the SimpleHeaderConverter
round trip, as it must on its way into the log (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest

from cdc.api import Schema, SourceRecord, Struct
from cdc.converters.header import SimpleHeaderConverter
from cdc.converters.json import JsonConverter
from tests.debezium_core.transforms.envelopes import chain, create, delete, update
from tests.debezium_core.transforms.test_outbox_event_router import outbox_record


def converter(is_key: bool) -> JsonConverter:
    c = JsonConverter()
    c.configure({"schemas.enable": "true"}, is_key=is_key)
    return c


def round_trip(rec: SourceRecord) -> None:
    for is_key, schema, value in ((True, rec.key_schema, rec.key), (False, rec.value_schema, rec.value)):
        c = converter(is_key)
        data = c.from_connect_data(rec.topic, schema, value)
        back = c.to_connect_data(rec.topic, data)
        if isinstance(value, Struct):
            assert isinstance(back.value, Struct) and back.value.to_dict() == value.to_dict()
        else:
            assert back.value == value
    headers = SimpleHeaderConverter()
    headers.configure({})
    for h in rec.headers:
        headers.to_connect_header(rec.topic, h.key, headers.from_connect_header(rec.topic, h.key, h.schema, h.value))


CASES: list[tuple[dict[str, str], Any]] = [
    (
        {
            "transforms.t.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.t.delete.tombstone.handling.mode": "rewrite",
            "transforms.t.add.fields": "op,source.file,source.pos,transaction.id",
            "transforms.t.add.headers": "op,source.ts_ms",
        },
        [create, update, delete],
    ),
    (
        {
            "transforms.t.type": "io.debezium.transforms.outbox.EventRouter",
            "transforms.t.table.expand.json.payload": "true",
            "transforms.t.table.fields.additional.placement": "type:envelope:eventType,aggregateid:header",
        },
        [lambda: outbox_record(payload='{"id": 1, "items": [{"n": 2.5}], "none": null}')],
    ),
    (
        {
            "transforms.t.type": "io.debezium.transforms.ExtractChangedRecordState",
            "transforms.t.header.changed.name": "c",
        },
        [update],
    ),
    (
        {
            "transforms.t.type": "io.debezium.transforms.ByLogicalTableRouter",
            "transforms.t.topic.regex": "(.*)",
            "transforms.t.topic.replacement": "all",
        },
        [update],
    ),
]


@pytest.mark.parametrize(
    ("config", "makes"), CASES, ids=lambda c: c["transforms.t.type"].rsplit(".", 1)[-1] if isinstance(c, dict) else ""
)
def test_outputs_serialize(config: dict[str, str], makes: list[Any]) -> None:
    c = chain({"transforms": "t", **config})
    for make in makes:
        out = c.apply(make())
        assert out is not None
        round_trip(out)


def test_header_schema_round_trip_keeps_lists() -> None:
    c = chain(
        {
            "transforms": "t",
            "transforms.t.type": "io.debezium.transforms.ExtractChangedRecordState",
            "transforms.t.header.changed.name": "c",
        }
    )
    out = c.apply(update())
    h = out.headers.last_with_name("c")
    conv = SimpleHeaderConverter()
    conv.configure({})
    back = conv.to_connect_header(out.topic, "c", conv.from_connect_header(out.topic, "c", h.schema, h.value))
    assert back.value == ["name"]
    assert h.schema.value_schema == Schema.OPTIONAL_STRING_SCHEMA
