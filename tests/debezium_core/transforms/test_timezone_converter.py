"""io.debezium.transforms.TimezoneConverter: Debezium's TimezoneConverterTest cases re-expressed (issue 23)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import Schema, SchemaBuilder, SourceRecord, Struct, Timestamp
from cdc_debezium.envelope import Envelope
from cdc_debezium.transforms.timezone_converter import TimezoneConverter
from tests.debezium_core.transforms.envelopes import assert_one_line_config_error, chain, heartbeat, tombstone
from tests.support.examples import examples


def named(type_builder: SchemaBuilder, name: str) -> Schema:
    return type_builder.name(name).optional().build()


SOURCE = (
    SchemaBuilder.struct()
    .optional()
    .field("table", Schema.STRING_SCHEMA)
    .field("lsn", Schema.INT32_SCHEMA)
    .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
    .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
    .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
    .field("random", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)
ROW = (
    SchemaBuilder.struct()
    .optional()
    .field("id", Schema.INT8_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("order_date", named(SchemaBuilder.int32(), "io.debezium.time.Date"))
    .field("ship_date", named(SchemaBuilder.int32(), "io.debezium.time.Date"))
    .field("order_date_micros", named(SchemaBuilder.int64(), "io.debezium.time.MicroTimestamp"))
    .field("order_date_nanos", named(SchemaBuilder.int64(), "io.debezium.time.NanoTimestamp"))
    .field("order_date_timestamp", named(SchemaBuilder.int64(), "io.debezium.time.Timestamp"))
    .field("order_date_zoned_timestamp", named(SchemaBuilder.string(), "io.debezium.time.ZonedTimestamp"))
    .field("shipping_date_zoned_timestamp", named(SchemaBuilder.string(), "io.debezium.time.ZonedTimestamp"))
    .field("order_date_zoned_time", named(SchemaBuilder.string(), "io.debezium.time.ZonedTime"))
    .field("order_date_kc_timestamp", Timestamp.builder().optional().build())
    .build()
)
ENVELOPE = Envelope.define("dummy.Envelope", ROW, SOURCE)


def converter(**props: str) -> TimezoneConverter[SourceRecord]:
    smt: TimezoneConverter[SourceRecord] = TimezoneConverter()
    smt.configure({k.replace("_", "."): v for k, v in props.items()})
    return smt


def record(
    table: str = "orders", topic: str = "db.server1.table1", source_values: dict[str, Any] | None = None, **row: Any
) -> SourceRecord:
    after = Struct(ROW).put("id", 1).put("name", "Srikanth")
    for k, v in row.items():
        after.put(k, v)
    source = Struct(SOURCE).put("table", table).put("lsn", 1).put("ts_ms", 123456789)
    for k, v in (source_values or {}).items():
        source.put(k, v)
    return SourceRecord({}, {}, topic, None, None, None, ENVELOPE.schema, ENVELOPE.make("c", None, after, source))


def after_of(out: SourceRecord | None) -> Struct:
    assert out is not None and isinstance(out.value, Struct)
    out.value.validate()
    return out.value.get("after")


def test_multiple_debezium_timestamps() -> None:
    rec = record(
        order_date_micros=1529507596945104,
        order_date_nanos=1531481025340000104,
        order_date_timestamp=1514908810123,
        order_date_zoned_timestamp="2018-01-02T11:15:30.123456789+00:00",
        order_date_zoned_time="11:15:30.123456789+00:00",
    )
    out = converter(converted_timezone="+05:30").apply(rec)
    after = after_of(out)
    assert after.get("order_date_micros") == 1529487796945104
    assert after.get("order_date_nanos") == 1531461225340000104
    assert after.get("order_date_timestamp") == 1514889010123
    assert after.get("order_date_zoned_timestamp") == "2018-01-02T16:45:30.123456789+05:30"
    assert after.get("order_date_zoned_time") == "16:45:30.123456789+05:30"
    assert out.value.get("source").get("ts_ms") == 123456789  # type: ignore[union-attr]
    # the input record is not modified
    assert rec.value.get("after").get("order_date_micros") == 1529507596945104  # type: ignore[union-attr]


def test_region_with_summer_time() -> None:
    rec = record(
        order_date_zoned_timestamp="2011-01-11T16:40:30.123456789+00:00",
        shipping_date_zoned_timestamp="2011-02-02T11:04:30.123456789+00:00",
    )
    after = after_of(converter(converted_timezone="Pacific/Easter").apply(rec))
    assert after.get("order_date_zoned_timestamp") == "2011-01-11T11:40:30.123456789-05:00"
    assert after.get("shipping_date_zoned_timestamp") == "2011-02-02T06:04:30.123456789-05:00"


def test_kafka_connect_timestamp() -> None:
    rec = record(order_date_kc_timestamp=datetime.datetime(2018, 3, 27, 2, 0, 0))
    after = after_of(converter(converted_timezone="Africa/Cairo").apply(rec))
    assert after.get("order_date_kc_timestamp") == datetime.datetime(2018, 3, 27, 0, 0, 0)


def test_include_list_with_source_prefix_and_field() -> None:
    rec = record(
        table="customers",
        order_date_zoned_timestamp="2020-01-01T11:55:30+00:00",
        shipping_date_zoned_timestamp="2020-05-01T11:55:30+00:00",
    )
    smt = converter(
        converted_timezone="Atlantic/Azores", include_list="source:customers:after.order_date_zoned_timestamp"
    )
    after = after_of(smt.apply(rec))
    assert after.get("order_date_zoned_timestamp") == "2020-01-01T10:55:30-01:00"
    assert after.get("shipping_date_zoned_timestamp") == "2020-05-01T11:55:30+00:00"


@pytest.mark.parametrize(
    ("tz", "include"),
    [
        ("+05:30", "topic:db.server1.table1:order_date_zoned_time"),
        ("Asia/Kolkata", "db.server1.table1:order_date_zoned_time"),
    ],
)
def test_include_list_by_topic(tz: str, include: str) -> None:
    rec = record(order_date_zoned_time="11:55:30+00:00", order_date_zoned_timestamp="2020-01-01T11:55:30+00:00")
    after = after_of(converter(converted_timezone=tz, include_list=include).apply(rec))
    assert after.get("order_date_zoned_time") == "17:25:30+05:30"
    assert after.get("order_date_zoned_timestamp") == "2020-01-01T11:55:30+00:00"


def test_exclude_lists() -> None:
    rec = record(
        table="customers",
        order_date_zoned_time="11:55:30+00:00",
        order_date_zoned_timestamp="2020-01-01T11:55:30+00:00",
    )
    after = after_of(
        converter(converted_timezone="+05:30", exclude_list="source:customers:order_date_zoned_timestamp").apply(rec)
    )
    assert after.get("order_date_zoned_time") == "17:25:30+05:30"
    assert after.get("order_date_zoned_timestamp") == "2020-01-01T11:55:30+00:00"
    rec = record(order_date_zoned_time="11:55:30+00:00", order_date=17109)
    after = after_of(
        converter(
            converted_timezone="America/Chicago", exclude_list="topic:db.server1.table1:order_date_zoned_time"
        ).apply(rec)
    )
    assert after.get("order_date_zoned_time") == "11:55:30+00:00" and after.get("order_date") == 17109
    after = after_of(
        converter(converted_timezone="+08:00:00", exclude_list="db.server1.table1:ship_date").apply(
            record(order_date_zoned_time="11:55:30+00:00")
        )
    )
    assert after.get("order_date_zoned_time") == "19:55:30+08:00"


def test_include_multiple_tables_share_the_prefix() -> None:
    smt = converter(converted_timezone="+03:00", include_list="source:customers1,orders1,public1")
    for table, converted in (("customers1", True), ("orders1", True), ("other", False)):
        after = after_of(smt.apply(record(table=table, order_date_zoned_timestamp="2023-08-01T11:50:45+00:00")))
        want = "2023-08-01T14:50:45+03:00" if converted else "2023-08-01T11:50:45+00:00"
        assert after.get("order_date_zoned_timestamp") == want


def test_exclude_multiple_topics_and_fields() -> None:
    smt = converter(converted_timezone="-06:00", exclude_list="topic:db.server1.customers,db.server1.public")
    kept = after_of(
        smt.apply(record(topic="db.server1.customers", order_date_zoned_timestamp="2020-01-01T11:55:30+00:00"))
    )
    assert kept.get("order_date_zoned_timestamp") == "2020-01-01T11:55:30+00:00"
    moved = after_of(
        smt.apply(record(topic="db.server1.orders", order_date_zoned_timestamp="2023-08-01T11:50:45+00:00"))
    )
    assert moved.get("order_date_zoned_timestamp") == "2023-08-01T05:50:45-06:00"
    smt = converter(
        converted_timezone="Europe/Moscow",
        exclude_list="topic:db.server1.customers:order_date_zoned_time,db.server1.inventory:order_date",
    )
    kept = after_of(smt.apply(record(topic="db.server1.customers", order_date_zoned_time="10:19:25+00:00")))
    assert kept.get("order_date_zoned_time") == "10:19:25+00:00" and kept.get("name") == "Srikanth"
    moved = after_of(smt.apply(record(topic="db.server1.inventory", order_date_zoned_time="19:19:25+00:00")))
    assert moved.get("order_date_zoned_time") == "22:19:25+03:00"


def test_daylight_saving_time() -> None:
    rec = record(
        order_date_zoned_timestamp="2014-06-22T10:15:30+00:00",
        shipping_date_zoned_timestamp="2014-12-22T10:15:30+00:00",
    )
    after = after_of(converter(converted_timezone="Europe/Paris").apply(rec))
    assert after.get("order_date_zoned_timestamp") == "2014-06-22T12:15:30+02:00"
    assert after.get("shipping_date_zoned_timestamp") == "2014-12-22T11:15:30+01:00"


def test_dates_are_never_converted() -> None:
    rec = record(table="customers", order_date=17109)
    out = converter(converted_timezone="Europe/Moscow", include_list="source:customers:order_date").apply(rec)
    assert after_of(out).get("order_date") == 17109


def test_source_epoch_fields_when_included() -> None:
    smt = converter(
        converted_timezone="Asia/Kolkata",
        include_list="source:customers:source.ts_ms,customers:source.ts_ns,customers:source.ts_us,customers:source.random,"
        "customers:order_date_zoned_time",
    )
    rec = record(
        table="customers",
        source_values={"ts_ms": 1762652621071, "ts_us": 1762652621071088, "ts_ns": 1762652621071088000, "random": 125},
        order_date_zoned_time="11:00:00.123456789+00:00",
    )
    out = smt.apply(rec)
    source = out.value.get("source")  # type: ignore[union-attr]
    assert source.get("ts_ms") == 1762672421071
    assert source.get("ts_us") == 1762672421071088
    assert source.get("ts_ns") == 1762672421071088000
    assert source.get("random") == 125
    assert after_of(out).get("order_date_zoned_time") == "16:30:00.123456789+05:30"


def test_non_change_events_pass_through() -> None:
    smt = converter(converted_timezone="+05:30")
    for rec in (tombstone(), heartbeat()):
        assert smt.apply(rec) is rec


@settings(max_examples=examples(80), deadline=None)
@given(
    micros=st.integers(0, 4_000_000_000_000_000),
    tz=st.sampled_from(["+05:30", "-08:00", "Europe/Paris", "America/New_York", "Asia/Kolkata", "UTC"]),
)
def test_zoned_timestamp_keeps_the_instant(micros: int, tz: str) -> None:
    instant = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(microseconds=micros)
    text = instant.strftime("%Y-%m-%dT%H:%M:%S") + f".{instant.microsecond:06d}+00:00"
    after = after_of(converter(converted_timezone=tz).apply(record(order_date_zoned_timestamp=text)))
    got = after.get("order_date_zoned_timestamp")
    parsed = datetime.datetime.fromisoformat(got.replace("Z", "+00:00"))
    assert parsed == instant


def test_registered_name() -> None:
    c = chain(
        {
            "transforms": "tz",
            "transforms.tz.type": "io.debezium.transforms.TimezoneConverter",
            "transforms.tz.converted.timezone": "+01:00",
        }
    )
    assert (
        after_of(c.apply(record(order_date_zoned_time="10:00:00+00:00"))).get("order_date_zoned_time")
        == "11:00:00+01:00"
    )


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"include.list": "topic:db.server1.customers"}, "converted.timezone"),
        ({"converted.timezone": "Asia", "include.list": "topic:db.server1.customers"}, "converted.timezone"),
        ({"converted.timezone": "Mars/Olympus"}, "converted.timezone"),
        ({"converted.timezone": "+05:30", "include.list": "topic:a", "exclude.list": "topic:a"}, "exclude.list"),
        ({"converted.timezone": "+05:30", "include.list": "a:b:c:d"}, "include.list"),
    ],
)
def test_bad_config_is_one_line_naming_alias_and_key(props: dict[str, str], key: str) -> None:
    config = {"transforms": "tz", "transforms.tz.type": "TimezoneConverter"}
    config |= {f"transforms.tz.{k}": v for k, v in props.items()}
    assert_one_line_config_error(config, f"transforms.tz.{key}")
