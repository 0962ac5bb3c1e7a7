"""A sink that cannot apply a batch stops with one line naming the table, the key and the cause
(issue 16): the row PostgreSQL or the lake refuses is named by its key, a poison event by its
table and record key, and another library's error inside a table's apply is wrapped with the
table and the batch's keys. The error stops the query; once the cause is fixed, the next run
applies the batch again from the checkpoint and nothing is lost.

Seeded: which row is bad and the key shapes' values (int, string, composite) come from
CDC_TEST_SEED, random unless set; every assertion names the seed.
"""

from __future__ import annotations

import decimal
import os
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdc.api.data import Decimal, Schema, SchemaBuilder, Struct
from cdc.converters.json import JsonConverter
from cdc.jobs.run import sink_failure, sink_failure_message
from cdc.log.embedded import EmbeddedLog
from cdc_spark.apply import ChangeApplier, PoisonEventError, ValueOutOfRangeError
from cdc_spark.pipeline import start_query
from tests.spark.events import SOURCE, produce
from tests.spark.helpers import delta_rows, postgres_rows, raw_frame, run_available_now

SEED = int(os.environ.get("CDC_TEST_SEED") or random.randrange(2**32))
WHERE = f"seed {SEED} (CDC_TEST_SEED={SEED} replays it)"
RUN_AGAIN = "then run `cdc run` again (or restart the query)"
NOTHING_LOST = f"Fix: fix the cause, {RUN_AGAIN}: the batch is applied again from the checkpoint, nothing is lost."
# The way out for rows a target refuses: park them in the dead letters (tests/spark/test_refused_rows.py).
PARK = (
    "set errors.tolerance=all with a dead-letter table (errors.deadletterqueue.path; in a cdc job "
    "errors.deadletter.table) or topic (errors.deadletterqueue.topic.name) and run `cdc run` again"
)
DATE = SchemaBuilder.int32().name("io.debezium.time.Date").version(1).optional().build()
MILLIS = SchemaBuilder.int64().name("io.debezium.time.Timestamp").version(1).optional().build()
WIDE = Decimal.builder(2).optional().parameter("connect.decimal.precision", "40").build()  # numeric(40,2)
MINUS_INFINITY_MS = -9223372036832400000  # PostgreSQL's '-infinity' timestamp as Debezium sends it
ALPHABET = "abcXYZ019 -_.'\"é日\n\r\t"


def _text(rng: random.Random) -> str:
    """Key and value texts: quotes, newlines, multi-byte; now and then longer than an error shows."""
    n = rng.choice([rng.randint(0, 10), rng.randint(41, 70)])
    return "".join(rng.choices(ALPHABET, k=n))


KEY_SHAPES: dict[str, tuple[tuple[str, Schema], ...]] = {
    "int": (("id", Schema.INT64_SCHEMA),),
    "str": (("code", Schema.STRING_SCHEMA),),
    "composite": (("order_id", Schema.INT32_SCHEMA), ("line", Schema.STRING_SCHEMA)),
}


def _draw(rng: random.Random, shape: str) -> tuple:
    gen = {Schema.INT64_SCHEMA: lambda: rng.randint(-(2**40), 2**40), Schema.INT32_SCHEMA: lambda: rng.randint(-3, 3)}
    return tuple(gen.get(s, lambda: _text(rng))() for _, s in KEY_SHAPES[shape])


def _keys(rng: random.Random, shape: str, n: int) -> list[tuple]:
    found: dict[tuple, None] = {}
    while len(found) < n:
        found.setdefault(_draw(rng, shape))
    return list(found)


def _value(v: object) -> str:
    """A key value as the sink's errors show it: strings quoted (repr), cut after 40 characters."""
    text = repr(v) if isinstance(v, str) else str(v)
    return text if len(text) <= 40 else text[:39].rstrip("\\") + "…" + text[-1]


def expected_key(shape: str, key: tuple) -> str:
    parts = [f"{name}={_value(v)}" for (name, _), v in zip(KEY_SHAPES[shape], key, strict=True)]
    return parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"


@dataclass
class Encoder:
    """Debezium-shaped MySQL change events of one table: the key shape's columns, then `columns`."""

    shape: str
    columns: Mapping[str, Schema]

    def __post_init__(self) -> None:
        self.topic = f"ek.db.{self.shape}"
        self.table = f"ek_db_{self.shape}"
        kb = SchemaBuilder.struct().name(f"{self.topic}.Key")
        rb = SchemaBuilder.struct().name(f"{self.topic}.Value").optional()
        for name, schema in KEY_SHAPES[self.shape]:
            kb.field(name, schema)
            rb.field(name, schema)
        for name, schema in self.columns.items():
            rb.field(name, schema)
        self.key_schema, self.row_schema = kb.build(), rb.build()
        self.envelope = (
            SchemaBuilder.struct()
            .name(f"{self.topic}.Envelope")
            .field("before", self.row_schema)
            .field("after", self.row_schema)
            .field("source", SOURCE)
            .field("op", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .build()
        )
        self.keys, self.values = JsonConverter(), JsonConverter()
        self.keys.configure({"schemas.enable": True}, is_key=True)
        self.values.configure({"schemas.enable": True}, is_key=False)

    @staticmethod
    def _struct(schema: Schema, data: Mapping[str, Any]) -> Struct:
        s = Struct(schema)
        for f in schema.fields:
            s.put(f.name, data.get(f.name))
        return s

    def key(self, key: tuple) -> bytes:
        data = dict(zip(self.names, key, strict=True))
        encoded = self.keys.from_connect_data(self.topic, self.key_schema, self._struct(self.key_schema, data))
        assert encoded is not None
        return encoded

    @property
    def names(self) -> list[str]:
        return [n for n, _ in KEY_SHAPES[self.shape]]

    def event(self, op: str, key: tuple, row: Mapping[str, Any], seq: int) -> tuple[bytes, bytes]:
        source = {"connector": "mysql", "ts_ms": 1_700_000_000_000 + seq, "db": "db", "table": self.shape}
        source.update({"file": "mysql-bin.000001", "pos": seq, "row": 0, "snapshot": "false"})
        full = self._struct(self.row_schema, {**dict(zip(self.names, key, strict=True)), **row})
        env = self._struct(
            self.envelope,
            {"after": full, "source": self._struct(SOURCE, source), "op": op, "ts_ms": 1_700_000_000_000 + seq},
        )
        value = self.values.from_connect_data(self.topic, self.envelope, env)
        assert value is not None
        return self.key(key), value


def _one_line(message: str) -> None:
    assert "\n" not in message and "\r" not in message, f"{WHERE}: not one line: {message!r}"


def _as_cdc_run_says(error: BaseException, message: str) -> None:
    """`cdc run` ends with exactly this message (its extraction finds the sink's own error)."""
    assert sink_failure(error) == message, f"{WHERE}: cdc run would say {sink_failure(error)!r}"
    assert sink_failure_message(error) == f"the sink failed: {message}", WHERE


def _own_line(error: BaseException, cls: str) -> str:
    """The message of the sink's own error `cls` in an exception's text (a Spark task's trace holds it)."""
    lines = [line for line in str(error).splitlines() if line.startswith(f"{cls}: ")]
    assert lines, f"{WHERE}: no {cls} in\n{str(error)[-3000:]}"
    return lines[-1].split(": ", 1)[1]


# -- values PostgreSQL refuses ---------------------------------------------------------------


@pytest.mark.parametrize("shape", list(KEY_SHAPES))
def test_postgres_names_the_key_of_a_nul_and_of_a_value_copy_refuses(spark: Any, postgres_db: Any, shape: str) -> None:
    rng = random.Random(f"{SEED}-{shape}")
    enc = Encoder(shape, {"name": Schema.OPTIONAL_STRING_SCHEMA, "amount": WIDE})
    applier = ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn})
    table = f"public.{enc.table}"
    for case, batch_id in (("nul", 0), ("copy", 1)):
        keys = _keys(rng, shape, rng.randint(2, 30))
        bad = rng.randrange(len(keys))
        events = []
        for i, key in enumerate(keys):
            name, amount = _text(rng), decimal.Decimal(rng.randint(-999, 999)).scaleb(-2)
            if i == bad and case == "nul":
                name = name[: rng.randint(0, len(name))] + "\x00" + name
            if i == bad and case == "copy":
                amount = decimal.Decimal("9" * rng.randint(39, 45) + ".25")  # more than numeric(40,2) holds
            events.append(enc.event("c", key, {"name": name, "amount": amount}, 10 * batch_id + i + 1))
        with pytest.raises(Exception) as info:
            applier(raw_frame(spark, enc.topic, events), batch_id)
        message = _own_line(info.value, "cdc_spark.apply.postgres.WarehouseValueError")
        key = expected_key(shape, keys[bad])
        if case == "nul":
            assert message.startswith(f"table {table}: column 'name' holds a NUL character"), f"{WHERE}: {message}"
            assert f" in the row with key {key}, which PostgreSQL text cannot store" in message, f"{WHERE}: {message}"
        else:
            head = f"table {table}: PostgreSQL refused the value of column 'amount' in the row with key {key}: "
            assert message.startswith(head + "numeric field overflow"), f"{WHERE}: {message}"
        # The two ways out: a wider column (not for a NUL, which no text type holds), or parking the row.
        assert ("widen the target column (ALTER TABLE" in message) == (case == "copy"), f"{WHERE}: {message}"
        assert PARK in message and "a fix at the source does not help this batch" in message, f"{WHERE}: {message}"
        _one_line(message)
        _as_cdc_run_says(info.value, message)


# -- values the lake cannot hold ---------------------------------------------------------------

_LAKE_SINKS = ("delta", "iceberg", "scd2")


@pytest.mark.parametrize("shape", list(KEY_SHAPES))
def test_lakes_name_the_key_of_a_value_out_of_range(spark: Any, tmp_path: Path, shape: str) -> None:
    """-infinity in a millisecond timestamp fails the cast to microseconds (arrowutil.for_lake); a date
    past 9999 is caught before delta-rs panics (evolution.check_lake_range)."""
    rng = random.Random(f"{SEED}-{shape}")
    enc = Encoder(shape, {"name": Schema.OPTIONAL_STRING_SCHEMA, "at": MILLIS, "day": DATE})
    (tmp_path / "wh").mkdir()
    sinks: dict[str, dict[str, Any]] = {
        "delta": {"target": "delta", "path": str(tmp_path / "lake")},
        "scd2": {"target": "delta", "mode": "scd2", "path": str(tmp_path / "history")},
        "iceberg": {
            "target": "iceberg",
            "catalog": {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"},
            "namespace": "lake",
        },
    }
    for n, column in enumerate(("at", "day")):
        sink = _LAKE_SINKS[(list(KEY_SHAPES).index(shape) + n) % len(_LAKE_SINKS)]  # each sink, each column
        keys = _keys(rng, shape, rng.randint(2, 30))
        bad = rng.randrange(len(keys))
        events = []
        for i, key in enumerate(keys):
            row = {"name": _text(rng), "at": rng.randint(0, 2**41), "day": rng.randint(-700_000, 2_900_000)}
            if i == bad:
                row[column] = MINUS_INFINITY_MS if column == "at" else rng.choice([2**31 - 1, 2_932_897, -719_163])
            events.append(enc.event("c", key, row, i + 1))
        with pytest.raises(ValueOutOfRangeError) as info:
            ChangeApplier(sinks[sink])(raw_frame(spark, enc.topic, events), 0)
        message = str(info.value)
        where = f"{WHERE}, {sink}: {message}"
        assert message.startswith(f"table {enc.table}: column {column!r} holds a value outside"), where
        assert f"(key {expected_key(shape, keys[bad])}: " in message, where
        assert ("-9223372036832400000" if column == "at" else "since 1970-01-01 is outside 0001-9999") in message, where
        assert PARK in message and "a fix at the source does not help this batch" in message, where
        _one_line(message)


# -- poison events -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", list(KEY_SHAPES))
def test_a_poison_event_names_its_table_and_record_key(
    spark: Any, postgres_db: Any, tmp_path: Path, shape: str
) -> None:
    """Through Delta's (collected) and PostgreSQL's (Spark jobs) ways of finding poison events."""
    rng = random.Random(f"{SEED}-{shape}")
    enc = Encoder(shape, {"name": Schema.OPTIONAL_STRING_SCHEMA})
    sinks = {"delta": {"target": "delta", "path": str(tmp_path / "lake")}, "postgres": {"target": "postgres"}}
    sinks["postgres"]["dsn"] = postgres_db.dsn
    target = list(sinks)[list(KEY_SHAPES).index(shape) % len(sinks)]
    keys = _keys(rng, shape, rng.randint(2, 20))
    bad = rng.randrange(len(keys))
    kind = rng.choice(["malformed", "unknown op", "no key"])
    events: list[tuple[bytes | None, bytes | None]] = [
        enc.event("c", key, {"name": _text(rng)}, i + 1) for i, key in enumerate(keys)
    ]
    record_key, value = events[bad]
    events[bad] = {
        "malformed": (record_key, value[: rng.randint(1, len(value) - 1)]),
        "unknown op": (record_key, value.replace(b'"op":"c"', b'"op":"z"')),
        "no key": (None, value),
    }[kind]
    with pytest.raises(PoisonEventError) as info:
        ChangeApplier(sinks[target])(raw_frame(spark, enc.topic, events), 0)
    message = str(info.value)
    where = f"{WHERE}, {target}, {kind} at offset {bad}: {message}"
    named = "no record key" if kind == "no key" else f"key {expected_key(shape, keys[bad])}"
    assert message.startswith(f"table {enc.table}, {named}: poison event at {enc.topic}-0@{bad}: "), where
    # A keyless event is the table's doing, not the producer's: its fix is a key for the table.
    fix = "message.key.columns" if kind == "no key" else "errors.tolerance=all"
    assert fix in message and message.endswith(f"{RUN_AGAIN}."), where
    _one_line(message)


# -- another library's error inside a table's apply ---------------------------------------------


def _named_ids(message: str, table: str, cause: str) -> list[int]:
    """The int keys a TargetApplyError names (the offending one, or the batch's first few)."""
    found = re.match(rf"table {re.escape(table)}: cannot apply (.+?): {cause}: ", message)
    assert found, f"{WHERE}: {message}"
    named = found.group(1)
    assert re.fullmatch(r"key id=-?\d+|the batch's \d+ keys \((first: )?id=-?\d+(, id=-?\d+)*(, …)?\)", named), (
        f"{WHERE}: {message}"
    )
    return [int(i) for i in re.findall(r"id=(-?\d+)", named)]


def test_a_delta_error_stops_the_query_names_the_table_and_keys_and_the_next_run_catches_up(
    spark: Any, tmp_path: Path
) -> None:
    """A damaged Delta log (deltalake's own error): the query stops with one line that `cdc run` shows;
    once the damage is repaired, the next run applies the failed batch from the checkpoint."""
    rng = random.Random(SEED)
    enc = Encoder("int", {"name": Schema.OPTIONAL_STRING_SCHEMA})
    state, lake, checkpoint = str(tmp_path / "state"), tmp_path / "lake", str(tmp_path / "ckpt")
    source = {"state.dir": state, "topics": enc.topic}
    sink = {"target": "delta", "path": str(lake)}
    keys = _keys(rng, "int", rng.randint(5, 40))
    model: dict[int, str] = {}
    first = []
    for i, key in enumerate(keys[: len(keys) // 2]):
        model[key[0]] = _text(rng)
        first.append(enc.event("c", key, {"name": model[key[0]]}, i + 1))
    with EmbeddedLog(state) as log:
        produce(log, enc.topic, first, partition=0)
    run_available_now(spark, source, sink, checkpoint)
    second, touched = [], set()
    for i in range(rng.randint(1, 30)):
        key = rng.choice(keys)
        model[key[0]] = _text(rng)
        touched.add(key[0])
        second.append(enc.event("c" if i % 2 else "u", key, {"name": model[key[0]]}, 1000 + i))
    with EmbeddedLog(state) as log:
        produce(log, enc.topic, second, partition=0)
    log_dir = lake / enc.table / "_delta_log"
    version = max(int(p.stem) for p in log_dir.glob("*.json"))
    damage = log_dir / f"{version + 1:020d}.json"
    damage.write_text('{"commitInfo": not json\n')

    query = start_query(spark, source, sink, checkpoint, available_now=True)
    with pytest.raises(Exception):  # noqa: B017 - PySpark's StreamingQueryException: the query stopped
        query.awaitTermination(180)
    error = query.exception()
    assert error is not None, WHERE
    message = sink_failure(error)
    _one_line(message)
    _as_cdc_run_says(error, message)
    named = _named_ids(message, enc.table, "DeltaError")
    assert set(named) <= touched and named, f"{WHERE}: {message}"
    if len(touched) == 1:
        assert f"cannot apply key id={named[0]}: " in message, f"{WHERE}: {message}"
    else:
        assert f"the batch's {len(touched)} keys (" in message, f"{WHERE}: {message}"
    assert message.endswith(NOTHING_LOST), f"{WHERE}: {message}"

    damage.unlink()  # the fix
    run_available_now(spark, source, sink, checkpoint)
    assert {r["id"]: r["name"] for r in delta_rows(str(lake / enc.table))} == model, WHERE


def test_a_postgres_error_names_the_table_and_keys_and_the_batch_applies_once_fixed(
    spark: Any, postgres_db: Any
) -> None:
    """A CHECK constraint added on the target (psycopg's CheckViolation inside a Spark task): wrapped
    with the table and the partition's keys; after the constraint is dropped the same batch applies."""
    rng = random.Random(SEED)
    enc = Encoder("int", {"name": Schema.OPTIONAL_STRING_SCHEMA, "qty": Schema.OPTIONAL_INT64_SCHEMA})
    applier = ChangeApplier({"target": "postgres", "dsn": postgres_db.dsn})
    keys = _keys(rng, "int", rng.randint(2, 30))
    first = [enc.event("c", k, {"name": "a", "qty": 1}, i + 1) for i, k in enumerate(keys)]
    applier(raw_frame(spark, enc.topic, first), 0)
    with psycopg.connect(postgres_db.dsn, autocommit=True) as conn:
        conn.execute(f"ALTER TABLE {enc.table} ADD CONSTRAINT qty_positive CHECK (qty > 0)")
    negative = {k[0] for k in rng.sample(keys, rng.randint(1, len(keys)))}
    second = [
        enc.event("u", k, {"name": "b", "qty": -5 if k[0] in negative else 7}, 100 + i) for i, k in enumerate(keys)
    ]
    with pytest.raises(Exception) as info:
        applier(raw_frame(spark, enc.topic, second), 1)
    message = _own_line(info.value, "cdc_spark.apply.errors.TargetApplyError")
    _one_line(message)
    _as_cdc_run_says(info.value, message)
    named = _named_ids(message, f"public.{enc.table}", "CheckViolation")
    assert set(named) <= {k[0] for k in keys}, f"{WHERE}: {message}"
    assert 'violates check constraint "qty_positive"' in message and message.endswith(NOTHING_LOST), WHERE

    with psycopg.connect(postgres_db.dsn, autocommit=True) as conn:
        conn.execute(f"ALTER TABLE {enc.table} DROP CONSTRAINT qty_positive")
    applier(raw_frame(spark, enc.topic, second), 1)  # the replay of the failed batch
    rows = {r["id"]: (r["name"], r["qty"]) for r in postgres_rows(postgres_db.dsn, enc.table)}
    assert rows == {k[0]: ("b", -5 if k[0] in negative else 7) for k in keys}, WHERE
