"""JsonConverter throughput on Debezium-like change events, against the stdlib json module.

Run: `python benchmarks/json_converter.py` (about half a minute). Prints one JSON line per
figure (see benchmarks/_common.py); progress goes to stderr.

Each record is an update envelope (before and after: 12 fields incl. a Decimal and two
Timestamps; source: 15 fields; op; ts_ms), 100k records cycling through 1000 distinct ones.

- serialize: `JsonConverter.from_connect_data` with schemas.enable true and false. Baseline:
  `json.dumps(payload, separators=(",", ":"))` of the equivalent already-plain dict (decimals
  already base64 text, timestamps already epoch millis) encoded to UTF-8; with schemas the
  baseline glues a pre-rendered schema text around it, as a hand-written serializer would.
  The script checks the two produce identical bytes before timing.
- deserialize: `JsonConverter.to_connect_data` of those bytes vs `json.loads` of the same bytes.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import time

from _common import best_of_pair, emit_throughput, help_or_run, note, timed

from cdc.api import Decimal, Schema, SchemaBuilder, Struct, Timestamp
from cdc.converters.json import JsonConverter

N = 100_000
DISTINCT = 1000
TOPIC = "dbserver1.inventory.customers"
UTC = datetime.UTC
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
T0 = datetime.datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def _row_schema() -> Schema:
    return (
        SchemaBuilder.struct()
        .name("dbserver1.inventory.customers.Value")
        .optional()
        .field("id", Schema.INT32_SCHEMA)
        .field("first_name", Schema.STRING_SCHEMA)
        .field("last_name", Schema.STRING_SCHEMA)
        .field("email", Schema.STRING_SCHEMA)
        .field("age", Schema.OPTIONAL_INT16_SCHEMA)
        .field("balance", Decimal.builder(2).build())
        .field("created_at", Timestamp.builder().build())
        .field("updated_at", Timestamp.builder().optional().build())
        .field("active", Schema.BOOLEAN_SCHEMA)
        .field("score", Schema.OPTIONAL_FLOAT64_SCHEMA)
        .field("country", Schema.OPTIONAL_STRING_SCHEMA)
        .field("notes", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )


def _source_schema() -> Schema:
    return (
        SchemaBuilder.struct()
        .name("io.debezium.connector.mysql.Source")
        .field("version", Schema.STRING_SCHEMA)
        .field("connector", Schema.STRING_SCHEMA)
        .field("name", Schema.STRING_SCHEMA)
        .field("ts_ms", Schema.INT64_SCHEMA)
        .field("snapshot", SchemaBuilder.string().optional().default_value("false").build())
        .field("db", Schema.STRING_SCHEMA)
        .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
        .field("table", Schema.OPTIONAL_STRING_SCHEMA)
        .field("server_id", Schema.INT64_SCHEMA)
        .field("gtid", Schema.OPTIONAL_STRING_SCHEMA)
        .field("file", Schema.STRING_SCHEMA)
        .field("pos", Schema.INT64_SCHEMA)
        .field("row", Schema.INT32_SCHEMA)
        .field("thread", Schema.OPTIONAL_INT64_SCHEMA)
        .field("query", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )


ROW = _row_schema()
SOURCE = _source_schema()
ENVELOPE = (
    SchemaBuilder.struct()
    .name("dbserver1.inventory.customers.Envelope")
    .version(1)
    .field("before", ROW)
    .field("after", ROW)
    .field("source", SOURCE)
    .field("op", Schema.STRING_SCHEMA)
    .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)


def _millis(ts: datetime.datetime) -> int:
    delta = ts - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _row(i: int, version: int) -> tuple[Struct, dict[str, object]]:
    """The row as a Connect Struct and as the plain dict a hand-written serializer would dump."""
    balance = decimal.Decimal(f"{(i * 7919 + version * 13) % 10_000_000}.{(i + version) % 100:02d}")
    created = T0 + datetime.timedelta(seconds=i, milliseconds=i % 1000)
    updated = created + datetime.timedelta(minutes=version) if version else None
    values = {
        "id": i,
        "first_name": f"First{i}",
        "last_name": f"Last{i % 97}",
        "email": f"user{i}@example.com",
        "age": 18 + i % 70 if i % 11 else None,
        "balance": balance,
        "created_at": created,
        "updated_at": updated,
        "active": i % 3 != 0,
        "score": (i % 1000) / 8 + version,
        "country": ("SE", "DE", "US", "BR", "JP")[i % 5],
        "notes": None if i % 4 else f"note for customer {i} (v{version})",
    }
    struct = Struct(ROW)
    for k, v in values.items():
        struct.put(k, v)
    plain = dict(values)
    plain["balance"] = base64.b64encode(Decimal.from_logical(ROW.field("balance").schema, balance)).decode()
    plain["created_at"] = _millis(created)
    plain["updated_at"] = _millis(updated) if updated else None
    return struct, plain


def _event(i: int) -> tuple[Struct, dict[str, object]]:
    before, before_plain = _row(i, 0)
    after, after_plain = _row(i, 1)
    ts = 1_714_564_800_000 + i
    source_values = {
        "version": "2.7.0.Final",
        "connector": "mysql",
        "name": "dbserver1",
        "ts_ms": ts,
        "snapshot": "false",
        "db": "inventory",
        "sequence": None,
        "table": "customers",
        "server_id": 223344,
        "gtid": None,
        "file": "mysql-bin.000003",
        "pos": 154 + i * 311,
        "row": 0,
        "thread": 7 if i % 2 else None,
        "query": None,
    }
    source = Struct(SOURCE)
    for k, v in source_values.items():
        source.put(k, v)
    env = Struct(ENVELOPE).put("before", before).put("after", after).put("source", source)
    env.put("op", "u").put("ts_ms", ts + 5)
    plain = {"before": before_plain, "after": after_plain, "source": source_values, "op": "u", "ts_ms": ts + 5}
    return env, plain


def main() -> None:
    t0 = time.monotonic()
    events = [_event(i) for i in range(DISTINCT)]
    structs = [e[0] for e in events] * (N // DISTINCT)
    plains = [e[1] for e in events] * (N // DISTINCT)
    # The baseline serializer builds its encoder once (json.dumps with separators= would
    # construct a new JSONEncoder per call, which is not the least a serializer must do).
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    loads = json.loads

    for schemas in ("true", "false"):
        conv = JsonConverter()
        conv.configure({"schemas.enable": schemas}, False)
        convert = conv.from_connect_data
        read = conv.to_connect_data
        prefix = '{"schema":' + conv.as_json_schema(ENVELOPE) + ',"payload":'

        if schemas == "true":

            def bare_one(p: dict[str, object], prefix: str = prefix) -> bytes:
                return (prefix + dumps(p) + "}").encode()
        else:

            def bare_one(p: dict[str, object], prefix: str = prefix) -> bytes:
                return dumps(p).encode()

        # Same work: identical bytes out, and the bytes read back to the same values.
        distinct = [convert(TOPIC, ENVELOPE, s) for s in structs[:DISTINCT]]
        for s, p, b in zip(structs[:DISTINCT], plains[:DISTINCT], distinct, strict=True):
            if b != bare_one(p):
                raise RuntimeError(f"outputs differ (schemas.enable={schemas}):\n{b!r}\n{bare_one(p)!r}")
            back = read(TOPIC, b).value
            if (back.to_dict() if schemas == "true" else back) != (s.to_dict() if schemas == "true" else loads(b)):
                raise RuntimeError(f"to_connect_data did not round-trip (schemas.enable={schemas})")
        encoded = distinct * (N // DISTINCT)

        note(f"serialize, schemas.enable={schemas} ...")

        def ours_ser(convert=convert) -> float:  # type: ignore[no-untyped-def]
            def run() -> None:
                for s in structs:
                    convert(TOPIC, ENVELOPE, s)

            return timed(run)

        def bare_ser(bare_one=bare_one) -> float:  # type: ignore[no-untyped-def]
            def run() -> None:
                for p in plains:
                    bare_one(p)

            return timed(run)

        ours, bare = best_of_pair(ours_ser, bare_ser)
        emit_throughput(f"json_converter.serialize.schemas_{schemas}", N, ours, bare)

        # Results are dropped as they come, as in a pipeline: keeping 100k parsed envelopes
        # alive would make the run measure the garbage collector's full passes instead.
        note(f"deserialize, schemas.enable={schemas} ...")

        def ours_de(read=read, encoded=encoded) -> float:  # type: ignore[no-untyped-def]
            def run() -> None:
                for b in encoded:
                    read(TOPIC, b)

            return timed(run)

        def bare_de(encoded=encoded) -> float:  # type: ignore[no-untyped-def]
            def run() -> None:
                for b in encoded:
                    loads(b)

            return timed(run)

        ours, bare = best_of_pair(ours_de, bare_de)
        emit_throughput(f"json_converter.deserialize.schemas_{schemas}", N, ours, bare)
    note(f"done in {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    help_or_run(__doc__)
    main()
