"""Confluent Avro records (AvroConverter's wire format) fed into the JSON path's decoding.

Each key and value is magic byte 0, a 4-byte big-endian schema id and an Avro body. Per raw
batch the ids are read in Arrow, the unknown ones resolved once (`SchemaLookup`: the embedded
log's own registry file, or a Schema Registry URL through confluent-kafka's
`SchemaRegistryClient`), and the bodies of each id are decoded in one fastavro call: they are
framed as one block of an Avro object container file, which fastavro's compiled reader walks
in a single loop (neither fastavro nor pyarrow has a bulk reader of bare schemaless bodies;
pyarrow reads no Avro at all). Measured on a 12-column update envelope: one container-file
loop reads 1.05-1.4x the bodies per second of `fastavro.schemaless_reader` called per body.

The records are then written as Kafka's JsonConverter writes them (`{"schema":…,"payload":…}`:
by orjson where the datum is its own payload, avro_json.py, else through
`cdc.converters.json.JsonConverter` from the Connect value `cdc.converters.avro` reads),
the intermediate the JSON path decodes: `__seq`, keys, guards, `latestPerKey` and flattening
are `events.py`'s, `fast.py`'s and `columns.py`'s, unchanged. Two schema ids of one topic in
one batch (an ALTER TABLE mid-batch) become two envelope prefixes, which that path already
reads as two runs. A record that is not Confluent Avro, or whose schema id the registry does
not know, becomes an error row naming the topic, partition and offset (the sink stops on it,
or dead-letters it under errors.tolerance=all).

That transcoding of every record is the reference path. A batch that avro_columns.py can read
goes columnar instead (issue 20): its ordering columns come from polars' Avro reader and each
key's canonical text is built in Arrow, so only the rows that are emitted (with latestPerKey,
each key's latest of the partition) are transcoded, by the same code, to the same bytes.
tests/spark/test_avro_columns.py holds the two paths equal on random schemas. One difference
remains, by design: a record that polars reads but the transcoding refuses (its Connect value
breaks its own schema) becomes an error row only if it is emitted; the reference path also
made it an error row when a later event of its key would have replaced it.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.decode import avro_columns
from cdc_spark.decode.avro_columns import (
    AVRO_MARK,
    HEAD,
    EnvelopeLayout,
    KeyText,
    body_bytes,
    container,
    schema_ids,
)
from cdc_spark.decode.avro_json import PlainPayloads, payloads
from cdc_spark.decode.avro_text import JsonText
from cdc_spark.decode.deserializer import JsonDeserializer
from cdc_spark.decode.events import DECODED_ARROW, _decode_each, keep_latest
from cdc_spark.decode.schemas import mark_first, schema_id, schema_of
from cdc_spark.decode.unavailable import Placeholder

_HEAD = HEAD


class SchemaLookup(Protocol):
    """Schema texts by registry id; ids the registry does not know are left out of the answer."""

    def texts(self, ids: set[int]) -> dict[int, str]: ...

    @property
    def location(self) -> str: ...


class EmbeddedSchemas:
    """The embedded log's registry (cdc.log.schema_registry), read straight from its file.

    The store is opened per lookup and closed again: the Arrow reads of the same file in this
    process must not overlap a `sqlite3` connection for long (cdc.log.sqlite_copies)."""

    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir

    @property
    def location(self) -> str:
        return f"of the embedded log in {self.state_dir}"

    def texts(self, ids: set[int]) -> dict[int, str]:
        from cdc.log.embedded import EmbeddedLog
        from cdc.log.schema_registry import SchemaRegistryError, SchemaRegistryStore

        log_ = EmbeddedLog(self.state_dir, auto_create_topics=False)
        try:
            store = SchemaRegistryStore(log_)
            try:
                out = {}
                for i in ids:
                    with contextlib.suppress(SchemaRegistryError):  # unknown: left out
                        out[i] = store.schema(i).schema
                return out
            finally:
                store.close()
        finally:
            log_.close()


class UrlSchemas:
    """A Schema Registry at `schema.registry.url`, through confluent-kafka's SchemaRegistryClient
    (client settings as AvroConverter takes them: basic auth, schema.registry.ssl.*)."""

    def __init__(self, conf: dict[str, str]) -> None:
        self.conf = dict(conf)
        self._client: Any = None

    @property
    def location(self) -> str:
        return f"at {self.conf.get('schema.registry.url', '')}"

    def texts(self, ids: set[int]) -> dict[int, str]:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        from cdc.converters.avro import config as cfg
        from cdc.converters.avro.registry import client_config, new_client

        if self._client is None:
            urls = [u.strip() for u in self.conf["schema.registry.url"].split(",") if u.strip()]
            source = self.conf.get(cfg.BASIC_AUTH_CREDENTIALS_SOURCE, "URL")
            user_info = self.conf.get(cfg.BASIC_AUTH_USER_INFO) or self.conf.get(cfg.BASIC_AUTH_USER_INFO_OLD)
            self._client = new_client(client_config(urls, source, user_info, self.conf))
        out = {}
        for i in ids:
            try:
                out[i] = self._client.get_schema(i).schema_str
            except SchemaRegistryError as e:
                if getattr(e, "http_status_code", None) != 404:
                    raise RuntimeError(f"the Schema Registry {self.location} refused schema id {i}: {e}") from None
            except Exception as e:
                cause = " ".join(str(e).split())
                raise RuntimeError(
                    f"the Schema Registry {self.location} is unreachable ({type(e).__name__}: {cause}); check the"
                    " sink's schema.registry.url and that the registry is running"
                ) from None
        return out


def schema_lookup(transport: str, state_dir: str | None, registry: dict[str, str]) -> SchemaLookup:
    """The registry the records' schema ids refer to: `schema.registry.url` when set, else the
    embedded log's own (the embedded transport's worker registers there)."""
    if registry.get("schema.registry.url"):
        return UrlSchemas(registry)
    if transport != "embedded" or not state_dir:
        raise ValueError(
            "decode=debezium-avro on Kafka needs the option schema.registry.url (the registry the"
            " connector's AvroConverter writes to)"
        )
    return EmbeddedSchemas(state_dir)


def read_bodies(codec_text: str, bodies: pa.Array) -> list[Any]:
    """fastavro's datum of every body (bare Avro binary of schema `codec_text`), in one reader loop.

    The bodies are laid out as the single block of an in-memory object container file (header,
    record count, byte size, the bodies back to back, sync marker)."""
    import fastavro

    if len(bodies) == 0:
        return []
    return list(fastavro.reader(io.BytesIO(container(codec_text, body_bytes(bodies), len(bodies)))))


class _Schema:
    """One registry id: its codec (structure only, for fastavro), Connect schema and datum reader, and
    whether its datums are their JsonConverter payloads (avro_json.py)."""

    def __init__(self, text: str) -> None:
        from cdc.converters.avro.avro_data import AvroData, codec_schema

        avro = json.loads(text)
        self.reader = AvroData().reader(text)
        self.codec_text = json.dumps(codec_schema(avro))
        self.plain = PlainPayloads(avro)
        self.prefixes: dict[bool, bytes] = {}
        self._layout: EnvelopeLayout | None = None
        self._key_text: KeyText | None = None
        self._json_text: JsonText | None = None

    def layout(self) -> EnvelopeLayout:
        """How avro_columns.py reads the value columns of this schema (or that it cannot)."""
        if self._layout is None:
            self._layout = EnvelopeLayout(json.loads(self.codec_text))
        return self._layout

    def json_text(self) -> JsonText:
        """How avro_text.py writes the payloads of this schema in Arrow (or that it cannot)."""
        if self._json_text is None:
            self._json_text = JsonText(json.loads(self.codec_text), self.plain.plain and not self.plain.floats)
        return self._json_text

    def key_text(self) -> KeyText:
        """How avro_columns.py builds the canonical text of keys of this schema (or that it cannot)."""
        if self._key_text is None:
            self._key_text = KeyText(json.loads(self.codec_text))
        return self._key_text

    def prefix(self, conv: Any, is_key: bool) -> bytes:
        """`{"schema":<the Connect schema as JsonConverter writes it>,"payload":`."""
        if is_key not in self.prefixes:
            self.prefixes[is_key] = f'{{"schema":{conv.as_json_schema(self.reader.schema)},"payload":'.encode()
        return self.prefixes[is_key]


class AvroToJson:
    """Raw batches of Confluent Avro records → the same batches with JsonConverter keys and values,
    plus error rows (events.DECODED_ARROW) for the records that cannot be read."""

    def __init__(self, schemas: SchemaLookup) -> None:
        from cdc.converters.json import JsonConverter

        self.schemas = schemas
        self._known: dict[int, _Schema] = {}
        self._missing: set[int] = set()
        self._json = {}
        for is_key in (True, False):
            conv = JsonConverter()
            conv.configure({"schemas.enable": "true", "replace.null.with.default": "false"}, is_key)
            self._json[is_key] = conv

    def transcode(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.RecordBatch | None]:
        errors: dict[int, str] = {}
        n = batch.num_rows
        columns = {}
        for name, is_key in (("key", True), ("value", False)):
            columns[name] = self._column(batch, batch.column(name), is_key, errors)
        good = batch.set_column(batch.schema.get_field_index("key"), "key", columns["key"])
        good = good.set_column(good.schema.get_field_index("value"), "value", columns["value"])
        if not errors:
            return good, None
        bad = np.zeros(n, np.bool_)
        bad[list(errors)] = True
        return good.filter(pa.array(~bad)), _error_rows(batch, bad, errors)

    def _column(self, batch: pa.RecordBatch, col: pa.Array, is_key: bool, errors: dict[int, str]) -> pa.Array:
        n = len(col)
        ids, ok_np = schema_ids(col)
        valid_np = np.asarray(pc.is_valid(col))
        what = "key" if is_key else "value"
        for i in np.flatnonzero(valid_np & ~ok_np):
            if int(i) not in errors:
                data = col[int(i)].as_py()
                errors[int(i)] = (
                    f"{_where(batch, int(i))}: the record {what} is not Confluent Avro (expected magic byte 0x00 and a"
                    f" 4-byte schema id; first bytes: {data[:16].hex(' ') or 'none'}, {len(data)} bytes in all);"
                    " the topic holds other data, or its converter is not AvroConverter"
                )
        readable = valid_np & ok_np
        wanted = {int(i) for i in np.unique(ids[readable])}
        self._resolve(wanted)
        out: list[bytes | None] = [None] * n
        topics = batch.column("topic")
        for sid in sorted(wanted):
            rows = np.flatnonzero(readable & (ids == sid))
            schema = self._known.get(sid)
            if schema is None:
                for i in rows:
                    errors.setdefault(
                        int(i),
                        f"{_where(batch, int(i))}: schema id {sid} of the record {what} is unknown to the Schema"
                        f" Registry {self.schemas.location}; the record was written against another registry, or"
                        " its schema was deleted",
                    )
                continue
            idx = pa.array(rows, pa.int64())
            bodies = pc.binary_slice(col.take(idx), _HEAD, 2**31 - 1)
            try:
                datums = read_bodies(schema.codec_text, bodies)
            except Exception:
                datums = None
            if datums is None or len(datums) != len(rows):
                datums = self._one_by_one(batch, schema, bodies, rows, sid, what, errors)
            conv = self._json[is_key]
            if schema.plain.plain and not any(int(i) in errors for i in rows) and schema.plain.finite(datums):
                for i, text in zip(rows, payloads(schema.prefix(conv, is_key), datums), strict=True):
                    out[int(i)] = text
                continue
            read = schema.reader.read
            connect = schema.reader.schema
            topic_list = topics.take(idx).to_pylist()
            for i, topic, datum in zip(rows, topic_list, datums, strict=True):
                if int(i) in errors:
                    continue
                try:
                    out[int(i)] = conv.from_connect_data(topic, connect, datum if read is None else read(datum))
                except Exception as e:
                    errors[int(i)] = f"{_where(batch, int(i))}: the record {what} (schema id {sid}) cannot be read: {e}"
        return pa.array(out, pa.binary())

    def _one_by_one(
        self,
        batch: pa.RecordBatch,
        schema: _Schema,
        bodies: pa.Array,
        rows: np.ndarray,
        sid: int,
        what: str,
        errors: dict[int, str],
    ) -> list[Any]:
        """The bodies read singly, to name the one that does not decode."""
        import fastavro

        parsed = fastavro.parse_schema(json.loads(schema.codec_text))
        out: list[Any] = []
        for i, body in zip(rows, bodies.to_pylist(), strict=True):
            try:
                buf = io.BytesIO(body)
                out.append(fastavro.schemaless_reader(buf, parsed, None))
                if buf.tell() != len(body):
                    raise ValueError(f"{len(body) - buf.tell()} bytes left over after the record")
            except Exception as e:
                out.append(None)
                errors[int(i)] = (
                    f"{_where(batch, int(i))}: the record {what} does not decode with its schema id {sid}:"
                    f" {type(e).__name__}: {' '.join(str(e).split())} (first bytes: {body[:16].hex(' ')})"
                )
        return out

    def _resolve(self, ids: set[int]) -> None:
        """Fetch the ids not seen yet in one registry round (ids never change meaning: cached for good)."""
        new = {i for i in ids if i not in self._known and i not in self._missing}
        if not new:
            return
        found = self.schemas.texts(new)
        for i in new:
            text = found.get(i)
            if text is None:
                self._missing.add(i)
                continue
            self._known[i] = _Schema(text)


def _where(batch: pa.RecordBatch, i: int) -> str:
    return (
        f"{batch.column('topic')[i].as_py()}-{batch.column('partition')[i].as_py()}@{batch.column('offset')[i].as_py()}"
    )


def _error_rows(batch: pa.RecordBatch, bad: np.ndarray, errors: dict[int, str]) -> pa.RecordBatch:
    """DECODED_ARROW rows (keyless, with `__error`) for the records that could not be read."""
    rows = np.flatnonzero(bad)
    idx = pa.array(rows, pa.int64())
    m = len(rows)
    arrays = [
        batch.column("topic").take(idx),
        batch.column("partition").take(idx),
        batch.column("offset").take(idx),
        batch.column("key").take(idx),
        pa.nulls(m, pa.string()),
        batch.column("value").take(idx),
        pa.nulls(m, pa.string()),
        pa.nulls(m, pa.binary()),
        pa.nulls(m, pa.int64()),
        pa.nulls(m, pa.bool_()),
        pa.array([errors[int(i)] for i in rows], pa.string()),
        pa.nulls(m, pa.int64()),
        pa.nulls(m, pa.string()),
    ]
    schema = DECODED_ARROW
    if "headers" in batch.schema.names:
        arrays.append(batch.column("headers").take(idx))
        schema = schema.append(batch.schema.field("headers"))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_avro_batches(
    batches: Iterator[pa.RecordBatch],
    schemas: SchemaLookup,
    combine: bool = False,
    placeholder: Placeholder | None = None,
) -> Iterator[pa.RecordBatch]:
    """events.decode_batches for Avro records, the same rows as transcoding them to JsonConverter
    text and decoding that (the reference path, still taken by a batch avro_columns.py cannot read):
    ordering columns read in Arrow, values transcoded only for the rows that are emitted. The
    records that could not be read follow as error rows."""
    transcoder = AvroToJson(schemas)
    errors: list[pa.RecordBatch] = []
    des = JsonDeserializer(True)
    columnar = _columnar_available()

    def decoded(batch: pa.RecordBatch, texts: dict[int, str] | None) -> list[pa.RecordBatch]:
        if columnar:
            fast = avro_columns.decode_events(batch, transcoder)
            if fast is not None and texts is None:  # every row is emitted: its value written now
                done = [_to_json(b, transcoder, None) for b in fast]
                if all(b is not None for b in done):
                    return [b.drop_columns([AVRO_MARK]) for b in done if b is not None]
            elif fast is not None:
                return fast
        good, bad = transcoder.transcode(batch)
        if bad is not None:
            errors.append(bad)
        out = list(_decode_each(iter([good]), des, texts))
        return out if texts is None else [_unmarked(b) for b in out]

    if not combine:
        for batch in batches:
            yield from decoded(batch, None)
        yield from errors
        return
    texts: dict[int, str] = {}  # schema id → text, for the schemas cut off the values
    kept = [b for batch in batches for b in decoded(batch, texts) if b.num_rows]
    if kept:
        table = pa.Table.from_batches(kept, schema=kept[0].schema)
        latest = _to_json(keep_latest(table), transcoder, texts)
        if placeholder is not None and latest is not None:
            live = pc.is_valid(latest.column("key"))
            if pc.any(pc.and_(live, placeholder.suspects(latest.column("value")))).as_py():
                latest = None  # earlier events may be needed (keep_latest): every value written
        if latest is None:
            whole = _to_json(table, transcoder, texts, errors_out=True)
            latest = keep_latest(whole, placeholder)
        yield from mark_first(latest.drop_columns([AVRO_MARK]), texts).to_batches()
    yield from errors


def _columnar_available() -> bool:
    try:
        import polars  # noqa: F401
    except ImportError:  # the reference path reads every batch
        return False
    return True


def _unmarked(batch: pa.RecordBatch) -> pa.RecordBatch:
    return batch.append_column(AVRO_MARK, pa.array(np.zeros(batch.num_rows, np.bool_)))


def _to_json(table: Any, transcoder: AvroToJson, texts: dict[int, str] | None, errors_out: bool = False) -> Any:
    """`table` (DECODED_ARROW + AVRO_MARK) with the marked rows' Avro values written as JsonConverter
    text: the whole record (`texts` None), or its payload with `schema_id` (the schema text put in
    `texts`, schemas.py). A value that cannot be written makes None, or with `errors_out` an error
    row naming it."""
    mark = table.column(AVRO_MARK)
    if isinstance(mark, pa.ChunkedArray):
        mark = mark.combine_chunks()
    if not pc.any(mark).as_py():
        return table
    rows = pc.indices_nonzero(mark)
    sub = table.select(["topic", "partition", "offset", "raw_key", "value"]).take(rows)
    if isinstance(sub, pa.Table):
        sub = sub.combine_chunks().to_batches()[0]
    avro = sub.column("value")
    errors: dict[int, str] = {}
    bare: dict[int, np.ndarray] | None = None if texts is None else {}
    full = _records(transcoder, sub, avro, False, errors, bare)
    raw_key = _distinct_keys(sub, transcoder, errors)
    if errors and not errors_out:
        return None
    n = len(full)
    value, sid = full, pa.nulls(n, pa.int64())
    if texts is not None and bare is not None:
        value, sid = _payloads(full, schema_ids(avro)[0], transcoder, texts, bare)
    failed = np.zeros(n, np.bool_)
    failed[list(errors)] = True
    columns = {
        "raw_key": raw_key,
        "value": value,
        "schema_id": sid,
        AVRO_MARK: pa.array(np.zeros(n, np.bool_)),
    }
    if errors:
        bad = pa.array(failed)
        message = pa.array([errors.get(i) for i in range(n)], pa.string())
        columns["value"] = pc.if_else(bad, avro, value)
        columns["raw_key"] = pc.if_else(bad, sub.column("raw_key"), raw_key)
        columns["schema_id"] = pc.if_else(bad, pa.scalar(None, pa.int64()), sid)
        columns["__error"] = message
        for name in ("key", "__op", "__seq", "__source_ts_ms", "__deleted"):
            col = table.column(name).take(rows)
            col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            columns[name] = pc.if_else(bad, pa.scalar(None, col.type), col)
    for name, new in columns.items():
        at = table.schema.get_field_index(name)
        old = table.column(at)
        old = old.combine_chunks() if isinstance(old, pa.ChunkedArray) else old
        table = table.set_column(at, table.schema.field(at), pc.replace_with_mask(old, mark, new.cast(old.type)))
    return table


def _records(
    transcoder: AvroToJson,
    batch: pa.RecordBatch,
    col: pa.Array,
    is_key: bool,
    errors: dict[int, str],
    bare: dict[int, np.ndarray] | None = None,
) -> pa.Array:
    """AvroToJson._column's JsonConverter records, the payloads of the schemas avro_text.py takes
    written in Arrow (the same bytes). With `bare`, those rows hold only the payload, and `bare`
    says which they are per registry id (what _payloads would cut them to)."""
    ids, ok = schema_ids(col)
    conv = transcoder._json[is_key]
    done = []
    for sid in np.unique(ids[ok]).tolist():
        schema = transcoder._known.get(int(sid))
        if schema is None or schema.json_text().codec_text is None:
            continue
        rows = pa.array(np.flatnonzero(ok & (ids == sid)), pa.int64())
        text = schema.json_text().payloads(pc.binary_slice(col.take(rows), HEAD, 2**31 - 1))
        if text is not None and bare is not None:
            bare[int(sid)] = rows.to_numpy()
            done.append((rows, text.cast(pa.binary())))
        elif text is not None:
            head = schema.prefix(conv, is_key).decode()
            done.append((rows, pc.binary_join_element_wise(head, text, "}", "").cast(pa.binary())))
    if not done:
        return transcoder._column(batch, col, is_key, errors)
    written = np.zeros(len(col), np.bool_)
    for rows, _ in done:
        written[rows.to_numpy()] = True
    if not written.all():  # the other schemas, the per-record way
        rest = pa.array(np.flatnonzero(~written), pa.int64())
        found: dict[int, str] = {}
        part = transcoder._column(batch.take(rest), col.take(rest), is_key, found)
        back = rest.to_numpy()
        for i, message in found.items():
            errors[int(back[i])] = message
        done.append((rest, part))
    order = pa.concat_arrays([rows for rows, _ in done])
    values = pa.concat_arrays([text for _, text in done])
    return values.take(pc.sort_indices(order))


def _distinct_keys(sub: pa.RecordBatch, transcoder: AvroToJson, errors: dict[int, str]) -> pa.Array:
    """The JsonConverter text of every row's Avro key, each distinct key written once."""
    keys = sub.column("raw_key")
    encoded = keys.dictionary_encode()
    firsts = pc.index_in(encoded.dictionary, keys)
    found: dict[int, str] = {}
    texts = _records(transcoder, sub.take(firsts), encoded.dictionary, True, found)
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    for at, message in found.items():  # every row of a key that cannot be written
        for i in np.flatnonzero(indices == at):
            errors.setdefault(int(i), message)
    return texts.take(encoded.indices)


def _payloads(
    full: pa.Array, ids: np.ndarray, transcoder: AvroToJson, texts: dict[int, str], bare: dict[int, np.ndarray]
) -> tuple[pa.Array, pa.Array]:
    """(payload, schema id) of each JsonConverter record as fast_decode cuts them; a record that does
    not start with its schema's prefix stays whole, as the JSON path's per-record read leaves it.
    The rows in `bare` are payloads already."""
    conv = transcoder._json[False]
    n = len(full)
    value = full
    sid = pa.nulls(n, pa.int64())
    text_full: pa.Array | None = None
    for avro_id in np.unique(ids).tolist():
        schema = transcoder._known.get(int(avro_id))
        if schema is None:
            continue
        prefix = schema.prefix(conv, False)
        text = schema_of(prefix)
        if text is None:
            continue
        key = schema_id(text)
        if int(avro_id) in bare:  # every row of the id: written as payloads
            texts[key] = text
            sid = pc.if_else(pa.array(ids == avro_id), pa.scalar(key, pa.int64()), sid)
            continue
        if text_full is None:
            text_full = full.cast(pa.string())
        here = pa.array(ids == avro_id)
        fits = pc.and_(here, pc.and_(pc.starts_with(text_full, prefix.decode()), pc.ends_with(text_full, "}")))
        fits = pc.fill_null(fits, False)
        if not pc.any(fits).as_py():
            continue
        texts[key] = text
        value = pc.if_else(fits, pc.binary_slice(full, len(prefix), -1), value)
        sid = pc.if_else(fits, pa.scalar(key, pa.int64()), sid)
    return value, sid
