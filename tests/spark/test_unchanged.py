"""Values the source did not send (Debezium's unavailable-value placeholder) are kept, not stored.

PostgreSQL leaves unchanged TOASTed values out of an update under REPLICA IDENTITY DEFAULT,
and the connector puts `__debezium_unavailable_value` there. Every target must keep the
value: from the key's earlier events in the micro-batch, else from the stored row.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from cdc.api.data import Schema
from cdc.log.embedded import EmbeddedLog
from cdc_spark.apply import ChangeApplier, SinkConfigError
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.latest import latest_and_earlier
from cdc_spark.apply.unchanged import fill_forward
from cdc_spark.decode.events import DECODED_ARROW, keep_latest
from cdc_spark.decode.unavailable import DEFAULT, Placeholder
from cdc_spark.source.options import SourceOptionError, SourceOptions
from tests.spark.events import Table, produce
from tests.spark.helpers import delta_rows, iceberg_rows, postgres_rows, raw_frame, run_available_now

TOPIC = "pg.public.docs"
P = DEFAULT
COLUMNS = {
    "id": Schema.INT32_SCHEMA,
    "body": Schema.OPTIONAL_STRING_SCHEMA,
    "blob": Schema.OPTIONAL_BYTES_SCHEMA,
    "qty": Schema.OPTIONAL_INT64_SCHEMA,
}
UNSENT = {"body": P, "blob": P.encode()}


def _docs() -> Table:
    return Table(TOPIC, COLUMNS)


def _big(i: int, v: int = 0) -> dict[str, Any]:
    return {"body": f"body-{i}-{v}-" + "x" * 3000, "blob": f"blob-{i}-{v}".encode() * 200}


def _current(rows: list[dict[str, Any]]) -> dict[int, tuple]:
    """id → (body, blob, qty) of the rows a reader sees (soft deletes and closed versions left out)."""
    out = {}
    for r in rows:
        if r.get("__deleted") or r.get("__valid_to") is not None:
            continue
        blob = r["blob"]
        out[r["id"]] = (r["body"], None if blob is None else bytes(blob), r["qty"])
    return out


def _row(i: int, v: int, qty: int) -> tuple:
    big = _big(i, v)
    return (big["body"], big["blob"], qty)


TARGETS = ["delta", "delta-soft", "scd2", "postgres", "iceberg"]


def _sink(kind: str, tmp_path: Path, postgres: Any) -> dict[str, Any]:
    lake = str(tmp_path / "lake")
    if kind == "delta":
        return {"target": "delta", "path": lake}
    if kind == "delta-soft":
        return {"target": "delta", "path": lake, "delete.mode": "soft"}
    if kind == "scd2":
        return {"target": "delta", "path": lake, "mode": "scd2"}
    if kind == "postgres":
        return {"target": "postgres", "dsn": postgres.dsn}
    (tmp_path / "wh").mkdir()
    catalog = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    return {"target": "iceberg", "catalog": catalog, "namespace": "lake"}


def _read(kind: str, sink: dict[str, Any], table: str) -> list[dict[str, Any]]:
    if kind == "postgres":
        return postgres_rows(sink["dsn"], table)
    if kind == "iceberg":
        return iceberg_rows(sink["catalog"], "lake", table)
    return delta_rows(f"{sink['path']}/{table}")


@pytest.mark.parametrize("kind", TARGETS)
def test_every_target_keeps_values_the_source_did_not_send(
    spark: Any, tmp_path: Path, postgres_db: Any, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    t = _docs()
    sink = _sink(kind, tmp_path, postgres_db)
    applier = ChangeApplier(sink)
    first = [
        t.event("c", 1, {**_big(1), "qty": 1}, 1),
        t.event("u", 1, {**UNSENT, "qty": 2}, 2),  # the same batch inserted the value
        t.event("c", 2, {**_big(2), "qty": 1}, 3),
        t.event("c", 3, {**_big(3), "qty": 1}, 4),
        t.event("u", 3, {**_big(3, 1), "qty": 2}, 5),
        t.event("u", 3, {**UNSENT, "qty": 3}, 6),  # two events back: the newer value
    ]
    applier(raw_frame(spark, TOPIC, first), 0)
    second = [
        t.event("u", 2, {**UNSENT, "qty": 5}, 10),  # the stored row has the value
        t.event("u", 2, {"body": P, "blob": None, "qty": 6}, 11),  # blob really became NULL
        t.event("c", 5, {**_big(5), "qty": 1}, 12),
        t.event("d", 5, None, 13),
        t.event("c", 5, {**_big(5, 2), "qty": 2}, 14),  # re-created: the delete's older row is not it
        t.event("u", 5, {**UNSENT, "qty": 3}, 15),
        t.event("u", 4, {**UNSENT, "qty": 1}, 16),  # nothing to keep: the placeholder stays, loudly
    ]
    with caplog.at_level(logging.WARNING, logger="cdc_spark.apply.unchanged"):
        applier(raw_frame(spark, TOPIC, second), 1)
        applier(raw_frame(spark, TOPIC, second), 1)  # a replay changes nothing
    expected = {
        1: _row(1, 0, 2),
        2: (_big(2)["body"], None, 6),
        3: _row(3, 1, 3),
        4: (P, P.encode(), 1),
        5: _row(5, 2, 3),
    }
    assert _current(_read(kind, sink, "pg_public_docs")) == expected
    if kind != "postgres":  # PostgreSQL upserts in Spark's executors: their log is not captured here
        # This logger's lines only: another module's INFO lines (the batch line) are captured too
        # when an earlier test in the worker left the cdc_spark loggers at INFO.
        warned = [r.getMessage() for r in caplog.records if r.name == "cdc_spark.apply.unchanged"]
        assert warned and all("pg_public_docs: 1 row(s)" in w and "column(s) blob, body" in w for w in warned)
    if kind == "scd2":  # every version holds its real values
        history = sorted((r["id"], r["qty"], r["body"]) for r in _read(kind, sink, "pg_public_docs") if r["id"] == 1)
        assert history == [(1, 1, _big(1)["body"]), (1, 2, _big(1)["body"])]


def test_the_source_keeps_the_earlier_events_of_such_keys(spark: Any, tmp_path: Path) -> None:
    """With latestPerKey the source forwards one event per key: not for a key whose latest
    event lacks values, or the batch's own insert of them would be lost."""
    t = _docs()
    state = str(tmp_path / "state")
    events = [
        t.event("c", 1, {**_big(1), "qty": 1}, 1),
        t.event("u", 1, {**UNSENT, "qty": 2}, 2),
        t.event("u", 1, {**UNSENT, "qty": 3}, 3),
        t.event("c", 2, {**_big(2), "qty": 1}, 4),
        t.event("u", 2, {**_big(2, 1), "qty": 2}, 5),
    ]
    with EmbeddedLog(state) as log:
        produce(log, TOPIC, events, partitions=2)
    sink = {"target": "delta", "path": str(tmp_path / "lake")}
    run_available_now(spark, {"state.dir": state, "topics": TOPIC}, sink, str(tmp_path / "ck"))
    assert _current(delta_rows(f"{tmp_path}/lake/pg_public_docs")) == {1: _row(1, 0, 3), 2: _row(2, 1, 2)}


def _decoded(rows: list[tuple[str, int, int, bytes | None]]) -> pa.Table:
    """Decoded rows (key, __seq, offset, value) of one topic partition."""
    return pa.Table.from_pylist(
        [
            {
                "topic": TOPIC,
                "partition": 0,
                "offset": off,
                "key": key,
                "value": value,
                "__op": "u",
                "__seq": seq.to_bytes(32, "big"),
                "__deleted": False,
            }
            for key, seq, off, value in rows
        ],
        schema=DECODED_ARROW,
    )


def _after(**row: Any) -> bytes:
    return json.dumps({"before": None, "after": row, "op": "u"}, separators=(",", ":")).encode()


def test_the_reductions_keep_the_earlier_events_that_may_hold_missing_values() -> None:
    rows = _decoded(
        [
            ('{"id":1}', 1, 0, _after(id=1, a="a0", b="b0")),  # full, but older than the next full one
            ('{"id":1}', 2, 1, _after(id=1, a="a1", b="b1")),  # the latest full event: needed
            ('{"id":1}', 3, 2, _after(id=1, a=P, b="b2")),  # lacks a only: it has b
            ('{"id":1}', 4, 3, _after(id=1, a=P, b=P)),  # lacks what the winner lacks: no use
            ('{"id":1}', 5, 4, _after(id=1, a=P, b=P)),  # the winner
            ('{"id":2}', 1, 5, _after(id=2, a="a")),
            ('{"id":2}', 2, 6, _after(id=2, a="b")),  # a winner without placeholder: nothing else
            ('{"id":3}', 1, 7, _after(id=3, a=P)),  # no full event in the batch: the target has it
            ('{"id":3}', 2, 8, _after(id=3, a=P)),
        ]
    )
    placeholder = Placeholder.parse(P)
    assert keep_latest(rows)["offset"].to_pylist() == [4, 6, 8]
    assert keep_latest(rows, placeholder)["offset"].to_pylist() == [1, 2, 4, 6, 8]
    winners, earlier = latest_and_earlier(rows, {}, placeholder)
    assert sorted(winners["offset"].to_pylist()) == [4, 6, 8]
    assert sorted(earlier["offset"].to_pylist()) == [1, 2]
    # A `before` image could hold the missing columns' names: such an event is kept.
    imaged = rows.set_column(
        rows.schema.get_field_index("value"),
        "value",
        pa.array([v.replace(b'"before":null', b'"before":{"id":1}') for v in rows["value"].to_pylist()], pa.binary()),
    )
    assert keep_latest(imaged, placeholder)["offset"].to_pylist() == [1, 2, 3, 4, 6, 7, 8]
    assert latest_and_earlier(rows.slice(5), {}, placeholder)[1].num_rows == 0


def test_fill_forward_stays_within_a_key_and_stops_at_deletes() -> None:
    rows = pa.table(
        {
            "id": [1, 1, 1, 2, 2, 3, 3, 3],
            "v": ["a", "P", "P", "P", "b", "c", "d", "P"],
            "__deleted": [False, False, False, False, False, False, True, False],
        }
    )
    mask = pa.array([v == "P" for v in rows["v"].to_pylist()])
    filled, left = fill_forward(rows, {"v": mask}, ["id"])
    assert filled["v"].to_pylist() == ["a", "a", "a", "P", "b", "c", "d", "P"]
    assert left["v"].to_pylist() == [False, False, False, True, False, False, False, True]


@pytest.mark.parametrize(
    ("schema", "value", "column"),
    [
        (Schema.OPTIONAL_STRING_SCHEMA, P, P),
        (Schema.OPTIONAL_BYTES_SCHEMA, P.encode(), P.encode()),
        ("text[]", [P], json.dumps([P])),
        ("int[]", list(P.encode()), json.dumps(list(P.encode()), separators=(",", ":"))),
        ("bytes[]", [P.encode()], json.dumps([base64.b64encode(P.encode()).decode()])),
        ("hstore", {P: P}, json.dumps({P: P}, separators=(",", ":"))),
    ],
)
def test_each_form_of_the_placeholder_is_recognised(schema: Any, value: Any, column: Any) -> None:
    """As the PostgreSQL connector writes it per column type (toast.py), raw and flattened."""
    from cdc.api.data import SchemaBuilder
    from cdc_spark.decode import flatten

    kinds = {
        "text[]": SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build(),
        "int[]": SchemaBuilder.array(Schema.INT32_SCHEMA).optional().build(),
        "bytes[]": SchemaBuilder.array(Schema.BYTES_SCHEMA).optional().build(),
        "hstore": SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).optional().build(),
    }
    t = Table(TOPIC, {"id": Schema.INT32_SCHEMA, "c": kinds.get(schema, schema)})
    _, value_bytes = t.event("u", 1, {"c": value}, 5)
    placeholder = Placeholder.parse(P)
    assert placeholder.suspects(pa.array([value_bytes], pa.binary())).to_pylist() == [True]
    winners = pa.table(
        {
            "key": ['{"id":1}'],
            "value": [value_bytes],
            "__op": ["u"],
            "__seq": [b"\x01"],
            "__source_ts_ms": pa.array([1], pa.int64()),
            "__deleted": [False],
        }
    )
    flat = flatten(TOPIC, winners).table
    assert flat["c"].to_pylist() == [column]
    assert list(placeholder.masks(flat, skip=frozenset({"id"}))) == ["c"]
    other = flat.set_column(1, "c", pa.array([column[:-2]], flat["c"].type))
    assert placeholder.masks(other) == {}


def test_a_configured_placeholder_is_the_one_recognised(spark: Any, tmp_path: Path) -> None:
    t = _docs()
    custom = "hex:00ff01"
    sink = {"target": "delta", "path": str(tmp_path / "lake"), "unavailable.value.placeholder": custom}
    applier = ChangeApplier(sink)
    applier(raw_frame(spark, TOPIC, [t.event("c", 1, {**_big(1), "qty": 1}, 1)]), 0)
    applier(raw_frame(spark, TOPIC, [t.event("u", 1, {"body": "\x00\ufffd\x01", "blob": b"\x00\xff\x01"}, 2)]), 1)
    assert _current(delta_rows(f"{tmp_path}/lake/pg_public_docs")) == {1: _row(1, 0, None)}


@pytest.mark.parametrize("bad", ["", "hex:", "hex:zz", "hex:abc"])
def test_a_bad_placeholder_setting_names_the_key(bad: str) -> None:
    with pytest.raises(SinkConfigError, match=r"^unavailable\.value\.placeholder: "):
        SinkConfig.parse({"target": "delta", "path": "/x", "unavailable.value.placeholder": bad})
    with pytest.raises(SourceOptionError, match=r"^option unavailable\.value\.placeholder: "):
        SourceOptions.parse({"state.dir": "/x", "topics": "t", "unavailable.value.placeholder": bad})
