"""Rows a target refuses for their values (issue 16): Kafka Connect's ErrantRecordReporter here.

A value PostgreSQL cannot store (a NUL character, a number COPY refuses) or that Delta and
Iceberg cannot hold (a date of the year 10000 or -1, PostgreSQL's -infinity timestamp) stops
the query under `errors.tolerance=none` (the default): the batch is replayed from the
checkpoint as it is, so a fix at the source does not help it. Under `errors.tolerance=all`
the same replayed batch is applied without those rows: each key's refused event goes to the
dead-letter table and topic (with Kafka Connect's context headers, stage TASK_PUT), the
target keeps the key's previous row, a WARNING names the table, key, column and cause, and
every other row is applied. A delete whose old row image holds such a value is still applied.

Seeded (CDC_TEST_SEED replays a run): the key shape, the rows, which keys get a refused value
in which column, and the events that supersede or delete them. Each target is read with its
own library and compared with a model of the source.
"""

from __future__ import annotations

import datetime
import decimal
import logging
import os
import random
from pathlib import Path
from typing import Any

import pytest

from cdc.api.data import Schema, Struct
from cdc.jobs.run import sink_failure
from cdc.log import TopicPartition
from cdc.log.embedded import EmbeddedLog
from cdc_spark.apply import ChangeApplier
from tests.spark.events import SOURCE, produce
from tests.spark.helpers import delta_rows, iceberg_rows, postgres_rows, raw_frame, run_available_now
from tests.spark.test_error_keys import (
    DATE,
    KEY_SHAPES,
    MILLIS,
    MINUS_INFINITY_MS,
    WIDE,
    Encoder,
    _keys,
    _text,
    expected_key,
)

SEED = int(os.environ.get("CDC_TEST_SEED") or random.randrange(2**32))
WHERE = f"seed {SEED} (CDC_TEST_SEED={SEED} replays it)"
TARGETS = ("postgres", "delta", "iceberg", "scd2")
PARK = "errors.tolerance=all"
_EPOCH = datetime.datetime(1970, 1, 1)
_DAY0 = datetime.date(1970, 1, 1)
_YEAR_10000_MS = 253_402_300_800_000  # 10000-01-01T00:00:00 in milliseconds since 1970
_YEAR_1_MS = -62_135_596_800_000  # 0001-01-01T00:00:00


def _event(enc: Encoder, op: str, key: tuple, row: dict[str, Any], seq: int) -> tuple[bytes, bytes]:
    """`enc.event`, and for a delete Debezium's shape: the old row in `before`, no `after`."""
    if op != "d":
        return enc.event(op, key, row, seq)
    source = {"connector": "mysql", "ts_ms": 1_700_000_000_000 + seq, "db": "db", "table": enc.shape}
    source.update({"file": "mysql-bin.000001", "pos": seq, "row": 0, "snapshot": "false"})
    old = Struct(enc.row_schema)
    for f in enc.row_schema.fields:
        old.put(f.name, {**dict(zip(enc.names, key, strict=True)), **row}.get(f.name))
    env = Struct(enc.envelope)
    env.put("before", old)
    env.put("source", Encoder._struct(SOURCE, source))
    env.put("op", "d")
    env.put("ts_ms", 1_700_000_000_000 + seq)
    value = enc.values.from_connect_data(enc.topic, enc.envelope, env)
    assert value is not None
    return enc.key(key), value


class Case:
    """One target's columns, good and refused values, and how its rows read back."""

    def __init__(self, target: str, rng: random.Random) -> None:
        self.target, self.rng = target, rng
        if target == "postgres":
            self.columns: dict[str, Schema] = {"name": Schema.OPTIONAL_STRING_SCHEMA, "amount": WIDE}
        else:
            self.columns = {"name": Schema.OPTIONAL_STRING_SCHEMA, "at": MILLIS, "day": DATE}

    def good(self) -> dict[str, Any]:
        rng = self.rng
        if self.target == "postgres":
            return {"name": _text(rng), "amount": decimal.Decimal(rng.randint(-99_999, 99_999)).scaleb(-2)}
        return {"name": _text(rng), "at": rng.randint(-(2**40), 2**41), "day": rng.randint(-700_000, 2_900_000)}

    def refused(self, row: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
        """`row` with one value the target refuses: (row, column, what the error says of it)."""
        rng, row = self.rng, dict(row)
        if self.target == "postgres":
            if rng.random() < 0.5:
                name = row["name"]
                row["name"] = name[: rng.randint(0, len(name))] + "\x00" + name
                return row, "name", "holds a NUL character (U+0000)"
            row["amount"] = decimal.Decimal("9" * rng.randint(39, 45) + ".25")  # more than numeric(40,2) holds
            return row, "amount", "numeric field overflow"
        kind = rng.choice(["infinity", "ms after 9999", "ms before 1", "year 10000", "year -1"])
        if kind == "infinity":  # the cast to microseconds overflows (arrowutil.for_lake)
            row["at"] = MINUS_INFINITY_MS
            return row, "at", "-9223372036832400000"
        if kind.startswith("ms"):
            row["at"] = (
                _YEAR_10000_MS + rng.randint(0, 10**12) if "after" in kind else _YEAR_1_MS - rng.randint(1, 10**12)
            )
            return row, "at", "since 1970-01-01 is outside 0001-9999"
        row["day"] = 2_932_897 + rng.randint(0, 400) if kind == "year 10000" else -719_163 - rng.randint(365, 700)
        return row, "day", "days since 1970-01-01 is outside 0001-9999"

    def sink(self, tmp_path: Path, dsn: str | None) -> dict[str, Any]:
        if self.target == "postgres":
            return {"target": "postgres", "dsn": dsn, "schema": "wh"}
        if self.target == "iceberg":
            (tmp_path / "wh").mkdir(exist_ok=True)
            catalog = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
            return {"target": "iceberg", "catalog": catalog, "namespace": "lake"}
        sink: dict[str, Any] = {"target": "delta", "path": str(tmp_path / "lake")}
        if self.target == "scd2":
            sink["mode"] = "scd2"
        return sink

    def table_name(self, enc: Encoder) -> str:
        return f"wh.{enc.table}" if self.target == "postgres" else enc.table

    def read(self, sink: dict[str, Any], enc: Encoder) -> dict[tuple, tuple]:
        """key → the row's values, as the target's own library reads them."""
        if self.target == "postgres":
            rows = postgres_rows(sink["dsn"], enc.table, "wh")
        elif self.target == "iceberg":
            rows = iceberg_rows(sink["catalog"], "lake", enc.table)
        else:
            rows = delta_rows(str(Path(sink["path"]) / enc.table))
            if self.target == "scd2":
                rows = [r for r in rows if r["__valid_to"] is None]
        rows = [r for r in rows if not r.get("__deleted")]
        return {tuple(r[n] for n in enc.names): self.values(r) for r in rows}

    def values(self, row: dict[str, Any]) -> tuple:
        if self.target == "postgres":
            return (row["name"], row["amount"])
        at, day = row["at"], row["day"]
        ms = None if at is None else (at.replace(tzinfo=None) - _EPOCH) // datetime.timedelta(milliseconds=1)
        return (row["name"], ms, None if day is None else (day - _DAY0).days)

    def expected(self, row: dict[str, Any]) -> tuple:
        return tuple(row[c] for c in self.columns)


class Batch:
    """A batch's events over `keys`, in log order: (key, op, row, refused), `refused` the (column,
    cause) of a value the target refuses in the row, else None. Inserts, updates and deletes,
    some superseded within the batch; for a few keys (`refused_keys`) the last event carries a
    refused value, as do some superseded events and the old row images of some deletes."""

    def __init__(self, rng: random.Random, case: Case, keys: list[tuple], model: dict[tuple, dict[str, Any]]) -> None:
        touched = rng.sample(keys, rng.randint(len(keys) // 2, len(keys)))
        self.refused_keys = set(rng.sample(touched, rng.randint(1, min(3, len(touched)))))
        per_key: dict[tuple, list[tuple[str, dict[str, Any], tuple[str, str] | None]]] = {}
        for k in touched:
            evs: list[tuple[str, dict[str, Any], tuple[str, str] | None]] = []
            image, bad = model.get(k), None  # the key's row before its last event, and what is refused in it
            for _ in range(rng.randint(0, 2)):  # earlier events of the key, superseded by its last
                row, bad = (case.good(), None) if rng.random() < 0.7 else self._refused(case, case.good())
                evs.append(("c" if image is None else "u", row, bad))
                image = row
            if k in self.refused_keys:
                evs.append(("c" if image is None else "u", *self._refused(case, case.good())))
            elif image is not None and rng.random() < 0.3:  # a delete: its old row image is the row
                if bad is None and rng.random() < 0.5:
                    image, bad = self._refused(case, image)
                evs.append(("d", image, bad))
            else:
                evs.append(("c" if image is None else "u", case.good(), None))
            per_key[k] = evs
        slots = [k for k in touched for _ in per_key[k]]
        rng.shuffle(slots)  # the keys' events interleave, each key's in its own order
        self.events = [(k, *per_key[k].pop(0)) for k in slots]

    @staticmethod
    def _refused(case: Case, row: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, str]]:
        bad, column, cause = case.refused(row)
        return bad, (column, cause)

    def seen(self, every_event: bool) -> list[int]:
        """The events the sink applies (indexes): each key's last, or all of them (SCD2 history)."""
        if every_event:
            return list(range(len(self.events)))
        last = {k: i for i, (k, *_) in enumerate(self.events)}
        return sorted(last.values())


def _dead_letters(spark: Any, path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = [r.asDict() for r in spark.read.parquet(str(path)).collect()]
    return sorted(rows, key=lambda r: (r["partition"], r["offset"]))


def _dlq_topic(state: str, topic: str) -> list[Any]:
    with EmbeddedLog(state) as log:
        reader = log.reader()
        found = []
        for p in range(2):
            reader.assign({TopicPartition(topic, p): 0})
            found += reader.poll(1000, 1.0)
        reader.close()
    return found


@pytest.mark.parametrize("target", TARGETS)
def test_refused_rows_stop_the_query_or_are_dead_lettered_and_the_rest_applied(
    spark: Any, postgres_db: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, target: str
) -> None:
    rng = random.Random(f"{SEED}-{target}")
    shape = rng.choice(list(KEY_SHAPES))
    case = Case(target, rng)
    enc = Encoder(shape, case.columns)
    where = f"{WHERE}, {target}, {shape} keys"
    state, checkpoint = str(tmp_path / "state"), str(tmp_path / "ckpt")
    source = {"state.dir": state, "topics": enc.topic}
    sink = case.sink(tmp_path, postgres_db.dsn)
    table = case.table_name(enc)

    # Batch 0: good rows only.
    keys = _keys(rng, shape, rng.randint(8, 40))
    model: dict[tuple, dict[str, Any]] = {k: case.good() for k in keys[: len(keys) // 2]}
    seq = 0
    first = []
    for k in model:
        seq += 1
        first.append(_event(enc, "c", k, model[k], seq))
    with EmbeddedLog(state) as log:
        produce(log, enc.topic, first, partitions=2)
    run_available_now(spark, source, sink, checkpoint)
    before = {k: case.expected(v) for k, v in model.items()}
    assert case.read(sink, enc) == before, where

    # Batch 1: inserts, updates and deletes, some superseded within the batch; some keys' last event
    # carries a value the target refuses, as do some superseded events and deletes' old row images.
    batch = Batch(rng, case, keys, model)
    records = []
    for k, op, row, _ in batch.events:
        seq += 1
        records.append(_event(enc, op, k, row, seq))
    with EmbeddedLog(state) as log:
        produce(log, enc.topic, records, partitions=2)

    # The sink sees each key's last event (SCD2: every event). A refused one is left out (the key
    # keeps its previous row); a delete is applied even when its old row image holds a refused value.
    seen = batch.seen(every_event=target == "scd2")
    refused = [i for i in seen if batch.events[i][3] is not None and batch.events[i][1] != "d"]
    final = {k: case.expected(v) for k, v in model.items()}
    for i in seen:
        k, op, row, _ = batch.events[i]
        if i in refused:
            continue
        if op == "d":
            final.pop(k, None)
        else:
            final[k] = case.expected(row)

    # errors.tolerance=none: the query stops with one line that names the table, a refused key,
    # its column and cause, and says both ways out; refused keys are untouched.
    with pytest.raises(Exception) as info:
        run_available_now(spark, source, sink, checkpoint)
    message = sink_failure(info.value)
    assert message.startswith(f"table {table}: "), f"{where}: {message}"
    bad = [batch.events[i] for i in seen if batch.events[i][3] is not None]
    named = [(k, refusal) for k, _, _, refusal in bad if f"key {expected_key(shape, k)}" in message]
    assert named, f"{where}: no refused key in {message}"
    # SCD2 keeps every event, so one key may hold several refused values: the error names one of them.
    assert any(repr(column) in message and cause in message for _, (column, cause) in named), f"{where}: {message}"
    assert PARK in message and "errors.deadletter" in message and "\n" not in message, f"{where}: {message}"
    after_stop = case.read(sink, enc)
    for k, *_ in bad:
        assert after_stop.get(k) == before.get(k), f"{where}: refused key {k} changed under tolerance none"
    if target != "postgres":  # PostgreSQL partitions commit on their own; the lakes commit per table
        assert after_stop == before, where

    # errors.tolerance=all with a dead-letter table and topic: the same (replayed) batch applies
    # without the refused rows, which are parked with their key, value, position and error.
    dlq = tmp_path / "dlq"
    tolerant = {
        **sink,
        "errors.tolerance": "all",
        "errors.deadletterqueue.path": str(dlq),
        "errors.deadletterqueue.topic.name": "dlq.refused",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    with caplog.at_level(logging.WARNING):
        run_available_now(spark, source, tolerant, checkpoint)
    assert case.read(sink, enc) == final, where

    position: dict[tuple[bytes, bytes], tuple[int, int]] = {}  # (key, value) → (partition, offset)
    with EmbeddedLog(state) as log:
        reader = log.reader()
        for partition in range(2):
            reader.assign({TopicPartition(enc.topic, partition): 0})
            for r in reader.poll(10_000, 1.0):
                position[(r.key, r.value)] = (partition, r.offset)
        reader.close()
    wanted = {position[records[i]]: i for i in refused}  # (partition, offset) → event
    dead = _dead_letters(spark, dlq)
    assert [(r["partition"], r["offset"]) for r in dead] == sorted(wanted), f"{where}: {dead}"
    for r in dead:
        i = wanted[(r["partition"], r["offset"])]
        k, column, cause = batch.events[i][0], *batch.events[i][3]
        assert r["topic"] == enc.topic and r["batch_id"] == 1, f"{where}: {r}"
        assert (r["key"].encode(), r["value"].encode()) == records[i], f"{where}: {r}"
        error = r["error"]
        assert error.startswith(f"table {table}: ") and f"key {expected_key(shape, k)}" in error, f"{where}: {error}"
        assert repr(column) in error and cause in error and "\n" not in error, f"{where}: {error}"
    sent = _dlq_topic(state, "dlq.refused")
    assert sorted((r.key, r.value) for r in sent) == sorted(records[i] for i in refused), where
    for r in sent:
        headers = dict(r.headers)
        at = position[(r.key, r.value)]
        k = batch.events[wanted[at]][0]
        assert headers["__connect.errors.stage"] == b"TASK_PUT", f"{where}: {headers}"
        assert headers["__connect.errors.topic"] == enc.topic.encode(), where
        assert headers["__connect.errors.partition"] == str(at[0]).encode(), where
        assert headers["__connect.errors.offset"] == str(at[1]).encode(), where
        assert headers["__connect.errors.connector.name"] == b"cdc-spark-sink", where
        error_class = headers["__connect.errors.exception.class.name"].decode()
        expected_class = "postgres.WarehouseValueError" if target == "postgres" else "errors.ValueOutOfRangeError"
        assert error_class.endswith(expected_class), f"{where}: {error_class}"
        assert expected_key(shape, k).encode() in headers["__connect.errors.exception.message"], where

    # Each refused row has a WARNING naming the table, the key, the column and the cause.
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for i in refused:
        k, column, cause = batch.events[i][0], *batch.events[i][3]
        said = [w for w in warnings if f"table {table}: " in w and f"key {expected_key(shape, k)}" in w]
        assert any(repr(column) in w and cause in w for w in said), f"{where}: {k} in {warnings}"

    # A replay of the batch (its commit lost, as when the query dies before committing it)
    # changes nothing and parks nothing twice in the dead-letter table.
    for lost in (Path(checkpoint) / "commits").glob("*1*"):
        lost.unlink()
    run_available_now(spark, source, tolerant, checkpoint)
    assert case.read(sink, enc) == final, where
    assert len(_dead_letters(spark, dlq)) == len(wanted), where

    # The value fixed at the source afterwards: the next change of the key applies as usual.
    fixes = []
    for k in sorted({batch.events[i][0] for i in refused}, key=keys.index):
        seq += 1
        row = case.good()
        fixes.append(_event(enc, "u", k, row, seq))
        final[k] = case.expected(row)
    with EmbeddedLog(state) as log:
        produce(log, enc.topic, fixes, partitions=2)
    run_available_now(spark, source, tolerant, checkpoint)
    assert case.read(sink, enc) == final, where


def test_poison_events_and_refused_rows_of_one_batch_share_its_dead_letters(spark: Any, tmp_path: Path) -> None:
    """One write per batch: a batch with both keeps both, and its replay keeps them once."""
    rng = random.Random(f"{SEED}-both")
    case = Case("delta", rng)
    enc = Encoder("int", case.columns)
    keys = _keys(rng, "int", rng.randint(3, 30))
    rows = {k: case.good() for k in keys}
    poison, refused = rng.sample(range(len(keys)), 2)
    rows[keys[refused]], (column, cause) = Batch._refused(case, rows[keys[refused]])
    records: list[tuple[bytes | None, bytes | None]] = [_event(enc, "c", k, rows[k], i + 1) for i, k in enumerate(keys)]
    record_key, value = records[poison]
    records[poison] = (record_key, value[: rng.randint(1, len(value) - 1)])  # malformed JSON
    dlq = tmp_path / "dlq"
    sink = case.sink(tmp_path, None)
    applier = ChangeApplier({**sink, "errors.tolerance": "all", "errors.deadletterqueue.path": str(dlq)})
    for _ in range(2):  # the batch, then its replay
        applier(raw_frame(spark, enc.topic, records), 0)
        dead = _dead_letters(spark, dlq)
        where = f"{WHERE}: {dead}"
        assert [r["offset"] for r in dead] == sorted([poison, refused]), where
        errors = {r["offset"]: r["error"] for r in dead}
        assert "malformed JSON" in errors[poison], where
        assert f"key {expected_key('int', keys[refused])}" in errors[refused] and cause in errors[refused], where
        assert repr(column) in errors[refused], where
        expected = {k: case.expected(v) for i, k in enumerate(keys) if i not in (poison, refused) for v in [rows[k]]}
        assert case.read(sink, enc) == expected, WHERE
