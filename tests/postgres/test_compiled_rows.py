"""The streaming hot path's compiled builders against their general counterparts, on random rows.

- TableSchema's compiled key/value builders (one function per table, columns unrolled) give the
  same Structs as the column loop (`key_slow`/`value_slow`) for rows of every type the connector
  maps, with nulls, unchanged TOAST values, binary values and short rows mixed in, under each
  decimal/time/binary/hstore/interval mode;
- the emitter's compiled record builder gives the record `_record` of Envelope.make gives;
- `insert_values` reads the same values as `PgOutputDecoder.decode`, and refuses the same
  truncated messages.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.api import Headers, Struct
from cdc_debezium.naming import TopicNamingStrategy
from cdc_postgres.change_records import PostgresChangeRecordEmitter
from cdc_postgres.pgoutput import UNCHANGED_TOAST, PgOutputDecoder, PgOutputError, insert_values
from cdc_postgres.schema import PostgresSchema, TableSchema
from cdc_postgres.source_info import SourceInfo
from cdc_postgres.value_converters import ConverterSettings, PostgresValueConverters
from tests.postgres.test_value_converters import COLUMNS, VALUES
from tests.support.examples import examples

# NOT NULL columns: their nulls and unchanged TOAST values become Debezium's fallbacks ([] and {} fresh per row).
REQUIRED = """
    r_int int NOT NULL DEFAULT 7, r_text text NOT NULL DEFAULT 'x', r_num numeric(8,2) NOT NULL,
    r_arr int4[] NOT NULL, r_hstore hstore NOT NULL, r_bytea bytea NOT NULL, r_tstz timestamptz NOT NULL
"""
REQUIRED_VALUES = {
    "r_int": "5",
    "r_text": "'t'",
    "r_num": "-1.5",
    "r_arr": "'{4,5}'",
    "r_hstore": "'k=>v'",
    "r_bytea": "'\\x0102'::bytea",
    "r_tstz": "'2020-02-29 23:59:59.5+00'",
}
MODES = [
    ConverterSettings(),
    ConverterSettings(
        decimal_handling_mode="string",
        time_precision_mode="connect",
        binary_handling_mode="base64",
        hstore_handling_mode="map",
        interval_handling_mode="string",
    ),
    ConverterSettings(decimal_handling_mode="double", time_precision_mode="adaptive_time_microseconds"),
]


@pytest.fixture(scope="module")
def tables(postgres) -> Any:
    """The all-types table's schema under each mode (composite key), and each column's server text."""
    with postgres.fresh_database() as db:
        conn = db.connect()
        conn.execute("SET DateStyle = ISO; SET IntervalStyle = postgres; SET TimeZone = 'UTC'; SET lc_monetary = 'C'")
        conn.execute("CREATE EXTENSION IF NOT EXISTS hstore")
        conn.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
        conn.execute(f"CREATE TABLE all_types(id int, {COLUMNS}, {REQUIRED}, PRIMARY KEY (c_text, id))")
        values = {"id": "1", **VALUES, **REQUIRED_VALUES}
        conn.execute(f"INSERT INTO all_types({', '.join(values)}) VALUES ({', '.join(values.values())})")
        # The text-format result is each type's output function: what pgoutput sends.
        raw = conn.execute(f"SELECT {', '.join(values)} FROM all_types").pgresult
        text = [raw.get_value(0, i).decode() for i in range(len(values))]
        oid = conn.execute("SELECT 'all_types'::regclass::oid").fetchone()[0]
        schemas = []
        for mode in MODES:
            schema = PostgresSchema(conn, TopicNamingStrategy("srv"), PostgresValueConverters(mode), "__unavail")
            schemas.append(schema.for_table(oid, "public", "all_types"))
        yield schemas, text, db.dbname
        conn.close()


def _plain(value: Any) -> Any:
    """Structs (nested too) as comparable (schema name, values) pairs."""
    if isinstance(value, Struct):
        return (value.schema, [_plain(v) for v in value._values])
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "NaN"  # NaN != NaN
    return value


def _outcome(build: Any, row: tuple[object, ...]) -> Any:
    try:
        return _plain(build(row))
    except Exception as e:  # the same refusal on both paths
        return type(e)


def _rows(width: int, text: list[str]) -> st.SearchStrategy[tuple[object, ...]]:
    """Rows of the server's text per column, nulls, unchanged TOAST, the text as binary; sometimes short."""

    def column(i: int) -> st.SearchStrategy[object]:
        return st.sampled_from([text[i], text[i], None, UNCHANGED_TOAST, text[i].encode()])

    full = st.tuples(*(column(i) for i in range(width)))
    return st.one_of(full, full.flatmap(lambda row: st.integers(0, width).map(lambda n: row[:n])))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), mode=st.integers(0, len(MODES) - 1))
def test_compiled_builders_equal_the_column_loop(tables, data, mode: int) -> None:
    schemas, text, _ = tables
    table: TableSchema = schemas[mode]
    row = data.draw(_rows(len(text), text))
    assert _outcome(table.value, row) == _outcome(table.value_slow, row)
    assert _outcome(table.key, row) == _outcome(table.key_slow, row)
    fresh = table.value(row)
    if fresh is not None and not isinstance(fresh, type):
        again = table.value(row)  # a fallback [] or {} is never shared between rows
        for a, b in zip(fresh._values, again._values, strict=True):
            assert not (isinstance(a, (list, dict)) and a is b)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    op=st.sampled_from(["c", "u", "d"]),
    lsn=st.integers(0, 2**63 - 1),
    lsn_commit=st.one_of(st.none(), st.integers(0, 2**63 - 1)),
    tx_id=st.one_of(st.none(), st.integers(0, 2**32 - 1)),
    ts_us=st.integers(0, 2**50),
    with_headers=st.booleans(),
)
def test_compiled_record_equals_the_general_record(tables, op, lsn, lsn_commit, tx_id, ts_us, with_headers) -> None:
    schemas, text, dbname = tables
    table = schemas[0]
    emitter = PostgresChangeRecordEmitter("srv", SourceInfo("srv", dbname), lambda _r: None, set(), True)
    row = tuple(text)
    after = table.value(row) if op != "d" else None
    before = table.value(row) if op != "c" else None
    key = table.key(row)
    pos = {"lsn": lsn, "lsn_commit": lsn_commit, "tx_id": tx_id, "ts_us": ts_us}
    offset = {"lsn": lsn}
    headers = Headers().add("h", "v", None) if with_headers else None
    fast = emitter._change(table, op, before, after, key, pos, offset, None, headers)
    value = table.envelope.make(op, before, after, emitter._source(table, pos), None)
    slow = emitter._record(table, offset, key, value, headers)
    for record in (fast, slow):
        record.value._values[5:8] = [0, 0, 0]  # ts_ms, ts_us, ts_ns: processing time
        record.timestamp = 0
    assert fast == slow
    assert _plain(fast.value) == _plain(slow.value)
    assert list(fast.headers) == list(slow.headers)


def _tuple_bytes(values: list[object]) -> bytes:
    out = [struct.pack(">h", len(values))]
    for v in values:
        if v is None:
            out.append(b"n")
        elif v is UNCHANGED_TOAST:
            out.append(b"u")
        else:
            data = v.encode() if isinstance(v, str) else v
            out.append((b"t" if isinstance(v, str) else b"b") + struct.pack(">i", len(data)) + data)
    return b"".join(out)


@settings(max_examples=examples(300), deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.just(UNCHANGED_TOAST), st.text(), st.binary()), max_size=40),
    relation=st.integers(0, 2**32 - 1),
    cut=st.one_of(st.none(), st.integers(0, 400)),
)
def test_insert_values_equals_decode(values, relation, cut) -> None:
    message = b"I" + struct.pack(">I", relation) + b"N" + _tuple_bytes(values)
    if cut is not None:
        message = message[: min(cut, len(message) - 1)]
    try:
        decoded: Any = PgOutputDecoder().decode(message)
        expected: Any = (decoded.relation_id, decoded.new.values)
    except PgOutputError:
        expected = PgOutputError
    try:
        got: Any = insert_values(message)
    except PgOutputError:
        got = PgOutputError
    assert got == expected
    if cut is None:
        assert got == (relation, tuple(values))


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), mode=st.integers(0, len(MODES) - 1), lsn=st.integers(0, 2**63 - 1), tx=st.booleans())
def test_compiled_create_equals_the_general_create(tables, data, mode: int, lsn: int, tx: bool) -> None:
    schemas, text, dbname = tables
    table = schemas[mode]
    row = data.draw(_rows(len(text), text))
    out: dict[str, list[Any]] = {"fast": [], "slow": []}
    for path in out:
        emitter = PostgresChangeRecordEmitter("srv", SourceInfo("srv", dbname), out[path].append, set(), True)
        if path == "slow":
            emitter._compiled = lambda _table: None  # type: ignore[method-assign]
        if tx:  # the transaction block is taken once per event, after the row converted
            emitter.tx_block = lambda table_id, path=path: out[path].append(("tx", table_id))  # type: ignore[misc]
        pos = {"lsn": lsn, "lsn_commit": lsn + 1, "tx_id": 5, "ts_us": 1_700_000_000_000_000}
        try:
            emitter.create(table, row, pos, {"lsn": lsn})
        except Exception as e:
            out[path].append(type(e))
    fast, slow = out["fast"], out["slow"]
    for record in (r for r in (*fast, *slow) if hasattr(r, "value")):
        record.value._values[5:8] = [0, 0, 0]  # processing time
        record.timestamp = 0
    assert [_record(r) for r in fast] == [_record(r) for r in slow]


def _record(r: Any) -> Any:
    """A record's parts, comparable (NaN included); anything else as it is."""
    if not hasattr(r, "value"):
        return r
    parts = (r.topic, r.kafka_partition, r.key_schema, r.key, r.value_schema, r.value, r.timestamp)
    return (*(_plain(p) for p in parts), list(r.headers), r.source_partition, r.source_offset)
