"""Row images of binlog rows events, decoded by functions compiled per table map.

python-mysql-replication decodes every column of every row through a chain of type
checks, bitmap helpers and one `read()` call per value: that dispatch, not the byte
unpacking, is most of a streaming connector's CPU time. The library stays in charge of
the protocol, event framing, table maps and rows-event headers; only the row images are
read here, by a function generated once per table structure that unpacks the common
types straight from the event's buffer. Every other type (DECIMAL, JSON, BIT, ENUM,
GEOMETRY, the pre-5.6 temporal formats) is read by the library's own per-value reader, so
values are the library's, byte for byte (tests/mysql/test_row_decoder.py compares both on
every type), except where the library is wrong: TIME (negative with 5-6 fractional digits),
an empty SET (None) and YEAR 0000 (1900) are read here as the server stores them.
Anything unusual (MySQL's partial JSON updates, a column without a name, a rows event left
half-read) goes through the library's `rows` untouched.
"""

from __future__ import annotations

import codecs
import datetime
import logging
from collections.abc import Callable
from struct import unpack_from
from typing import Any

from pymysql.protocol import MysqlPacket
from pymysqlreplication.constants import BINLOG, FIELD_TYPE
from pymysqlreplication.row_event import RowsEvent, UpdateRowsEvent

log = logging.getLogger(__name__)

# A compiled decoder: (data, pos, end, slow) -> rows, in the library's row-dict shape.
Decoder = Callable[[bytes, int, int, Callable[[Any, int], Any]], list[dict[str, Any]]]

_INTS = {
    FIELD_TYPE.TINY: (1, "<b", "<B"),
    FIELD_TYPE.SHORT: (2, "<h", "<H"),
    FIELD_TYPE.LONG: (4, "<i", "<I"),
    FIELD_TYPE.LONGLONG: (8, "<q", "<Q"),
}
_FSP_BYTES = {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3}
_BUFFER_ATTR = "_BinLogPacketWrapper__data_buffer"
_TABLE_ATTR = "_cdc_row_decoders"


def _fsp(data: bytes, pos: int, fsp: int) -> tuple[int, int]:
    """Microseconds of a fractional part (big-endian, signed as the library reads it) and the next position."""
    n = _FSP_BYTES.get(fsp, 0)
    if n == 0:
        return 0, pos
    value = int.from_bytes(data[pos : pos + n], "big", signed=True)
    if fsp % 2:
        value = int(value / 10)
    return value * 10 ** (6 - fsp), pos + n


def datetime2(data: bytes, pos: int, fsp: int) -> tuple[datetime.datetime | None, int]:
    """DATETIME(fsp) in the 5.6+ format; an invalid (zero) date is None, as the library returns it."""
    packed = int.from_bytes(data[pos : pos + 5], "big")
    year_month = (packed >> 22) & 0x1FFFF
    try:
        value = datetime.datetime(
            int(year_month / 13),
            year_month % 13,
            (packed >> 17) & 0x1F,
            (packed >> 12) & 0x1F,
            (packed >> 6) & 0x3F,
            packed & 0x3F,
        )
    except ValueError:
        return None, _fsp(data, pos + 5, fsp)[1]
    micro, pos = _fsp(data, pos + 5, fsp)
    return (value.replace(microsecond=micro) if micro > 0 else value), pos


def timestamp2(data: bytes, pos: int, fsp: int) -> tuple[datetime.datetime, int]:
    """TIMESTAMP(fsp): seconds since the epoch (big-endian) as the library's naive UTC datetime."""
    value = datetime.datetime.utcfromtimestamp(unpack_from(">i", data, pos)[0])
    micro, pos = _fsp(data, pos + 4, fsp)
    return (value.replace(microsecond=micro) if micro > 0 else value), pos


_TIMEF_INT_OFS = 0x800000
_TIMEF_OFS = 0x800000000000


def time2(data: bytes, pos: int, fsp: int) -> tuple[datetime.timedelta, int]:
    """TIME(fsp) in the 5.6+ format, as the server unpacks it (my_time_packed_from_binary).

    Hand-written: python-mysql-replication misreads negative values with 5 or 6 fractional
    digits ('-12:34:56.000001' came out as -12:34:56.999999). Negative values keep their
    fraction in reverse order for binary sorting, so it is flipped back into the packed
    value, whose absolute value then holds hour, minute, second and microsecond.
    """
    n = 3 + _FSP_BYTES.get(fsp, 0)
    raw = int.from_bytes(data[pos : pos + n], "big")
    if fsp >= 5:
        packed = raw - _TIMEF_OFS
    else:
        width = 8 * (n - 3)
        intpart, frac = (raw >> width) - _TIMEF_INT_OFS, raw & ((1 << width) - 1)
        if intpart < 0 and frac:
            intpart, frac = intpart + 1, frac - (1 << width)
        packed = (intpart << 24) + frac * (10_000 if width == 8 else 100)
    magnitude = abs(packed)
    hms, micro = magnitude >> 24, magnitude & 0xFFFFFF
    total = (((hms >> 12) & 0x3FF) * 3600 + ((hms >> 6) & 0x3F) * 60 + (hms & 0x3F)) * 1_000_000 + micro
    return datetime.timedelta(microseconds=-total if packed < 0 else total), pos + n


def date(data: bytes, pos: int) -> datetime.date | None:
    packed = data[pos] | (data[pos + 1] << 8) | (data[pos + 2] << 16)
    if packed == 0:
        return None
    year, month, day = (packed >> 9) & 0x7FFF, (packed >> 5) & 0xF, packed & 0x1F
    if year == 0 or month == 0 or day == 0:
        return None
    return datetime.date(year, month, day)


def _encoding(charset: str | None) -> str | None:
    """The codec the library decodes a text column with; None when Python has none (bytes are kept)."""
    if charset is None:
        return "utf-8"
    encoding = RowsEvent.charset_to_encoding(charset)
    try:
        codecs.lookup(encoding)
    except LookupError:
        return None
    return encoding


def _column_code(column: Any, index: int, namespace: dict[str, Any], errors: str) -> list[str]:
    """Statements reading column `index` at `pos` into `v<index>` (the null check is the caller's)."""
    t, v = column.type, f"v{index}"
    if t in _INTS:
        size, signed, unsigned = _INTS[t]
        return [f"{v} = unpack_from({(unsigned if column.unsigned else signed)!r}, data, pos)[0]", f"pos += {size}"]
    if t == FIELD_TYPE.INT24:
        return [f"{v} = int.from_bytes(data[pos:pos + 3], 'little', signed={not column.unsigned})", "pos += 3"]
    if t == FIELD_TYPE.FLOAT:
        return [f"{v} = unpack_from('<f', data, pos)[0]", "pos += 4"]
    if t == FIELD_TYPE.DOUBLE:
        return [f"{v} = unpack_from('<d', data, pos)[0]", "pos += 8"]
    if t == FIELD_TYPE.YEAR:  # 0 is the year 0000, not 1900 as the library reads it
        return [f"{v} = data[pos] + 1900 if data[pos] else 0", "pos += 1"]
    if t == FIELD_TYPE.TIME2:
        return [f"{v}, pos = time2(data, pos, {int(column.fsp)})"]
    if t == FIELD_TYPE.SET and column.set_values and column.size in (1, 2, 3, 4, 8):
        # The library turns an empty set ('') into None, which reads as SQL NULL.
        namespace[f"s{index}"] = tuple(column.set_values)
        mask = f"m{index}"
        return [
            f"{mask} = int.from_bytes(data[pos:pos + {int(column.size)}], 'little')",
            f"pos += {int(column.size)}",
            f"{v} = {{x for j, x in enumerate(s{index}) if {mask} >> j & 1}}",
        ]
    if t == FIELD_TYPE.DATE:
        return [f"{v} = date(data, pos)", "pos += 3"]
    if t == FIELD_TYPE.DATETIME2:
        return [f"{v}, pos = datetime2(data, pos, {int(column.fsp)})"]
    if t == FIELD_TYPE.TIMESTAMP2:
        return [f"{v}, pos = timestamp2(data, pos, {int(column.fsp)})"]
    if t in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB):
        size = (2 if column.max_length > 255 else 1) if t != FIELD_TYPE.BLOB else int(column.length_size)
        if size not in (1, 2, 3, 4):
            return _slow_code(index, namespace, column)
        length = f"n{index}"
        read = (
            [f"{length} = data[pos]", "pos += 1"]
            if size == 1
            else [f"{length} = int.from_bytes(data[pos:pos + {size}], 'little')", f"pos += {size}"]
        )
        encoding = _encoding(column.character_set_name)
        raw = f"data[pos:pos + {length}]"
        value = raw if encoding is None else f"{raw}.decode({encoding!r}, {errors!r})"
        return [*read, f"{v} = {value}", f"pos += {length}"]
    return _slow_code(index, namespace, column)


def _slow_code(index: int, namespace: dict[str, Any], column: Any) -> list[str]:
    namespace[f"c{index}"] = column
    return ["raw._position = pos", f"v{index} = slow(c{index}, {index})", "pos = raw._position"]


def _image_code(columns: list[Any], bitmap: bytes, namespace: dict[str, Any], errors: str, out: str) -> list[str]:
    """Statements reading one row image (null bitmap, then the present columns) into the dict `out`."""
    present = [i for i in range(len(columns)) if bitmap[i // 8] & (1 << (i % 8))]
    null_bytes = (len(present) + 7) // 8
    lines = ["nulls = pos", f"pos += {null_bytes}"]
    for bit, i in enumerate(present):
        lines.append(f"if data[nulls + {bit // 8}] & {1 << (bit % 8)}:")
        lines.append(f"    v{i} = None")
        lines.append("else:")
        lines.extend(f"    {s}" for s in _column_code(columns[i], i, namespace, errors))
    # Columns missing from the image (binlog_row_image=MINIMAL) are None, as in the library.
    values = ", ".join(f"{columns[i].name!r}: {f'v{i}' if i in present else 'None'}" for i in range(len(columns)))
    lines.append(f"{out} = {{{values}}}")
    return lines


def compile_decoder(columns: list[Any], bitmaps: tuple[bytes, ...], errors: str) -> Decoder:
    """A function decoding all rows of an event; one bitmap for writes/deletes, two for updates."""
    namespace: dict[str, Any] = {"unpack_from": unpack_from, "date": date, "datetime2": datetime2,
                                 "timestamp2": timestamp2, "time2": time2}  # fmt: skip
    body = ["rows = []", "while pos < end:"]
    if len(bitmaps) == 1:
        body += [f"    {s}" for s in _image_code(columns, bitmaps[0], namespace, errors, "values")]
        body.append("    rows.append({'values': values})")
    else:
        body += [f"    {s}" for s in _image_code(columns, bitmaps[0], namespace, errors, "before")]
        body += [f"    {s}" for s in _image_code(columns, bitmaps[1], namespace, errors, "after")]
        body.append("    rows.append({'before_values': before, 'after_values': after})")
    body.append("return rows, pos")
    source = "def decode(data, pos, end, slow, raw):\n" + "\n".join(f"    {s}" for s in body) + "\n"
    exec(compile(source, "<binlog row decoder>", "exec"), namespace)
    decoder: Decoder = namespace["decode"]
    return decoder


class RowDecoders:
    """Compiled decoders by table structure, for one binlog reader."""

    def __init__(self) -> None:
        self._decoders: dict[tuple[Any, ...], Decoder] = {}
        self.fallbacks = 0
        # The library internals this relies on (pinned to mysql-replication 1.0.x): without them,
        # every event goes through the library's `rows`.
        self.enabled = hasattr(RowsEvent, "_RowsEvent__read_values_name") and hasattr(
            MysqlPacket(b"", "utf8"), "_position"
        )
        if not self.enabled:
            log.warning("this python-mysql-replication version is not the 1.0.x this was built for: rows are "
                        "decoded by the library alone (correct, but slower)")  # fmt: skip

    def rows(self, ev: RowsEvent) -> list[dict[str, Any]]:
        """`ev.rows`, decoded by a compiled function where it can be."""
        decoder = self._decoder(ev) if self.enabled else None
        if decoder is None:
            return ev.rows
        wrapper = ev.packet
        raw = wrapper.packet
        if getattr(wrapper, _BUFFER_ATTR, b""):
            return ev.rows
        start, read_bytes = raw._position, wrapper.read_bytes
        end = start + (ev.event_size - read_bytes)
        table_id = ev.table_id
        columns = ev.table_map[table_id].columns

        def slow(column: Any, index: int) -> Any:
            # The library's own reader for one present, non-null value.
            value = ev._RowsEvent__read_values_name(column, b"\x00", 0, False, b"\xff" * (len(columns) // 8 + 1),
                                                    column.unsigned, index)  # fmt: skip
            if getattr(wrapper, _BUFFER_ATTR, b""):
                raise ValueError("the library left unread bytes behind")
            return value

        try:
            rows, pos = decoder(raw._data, start, end, slow, raw)
        except (IndexError, ValueError, UnicodeDecodeError) as e:
            rows, pos = None, -1
            failure: BaseException | None = e
        else:
            failure = None
        if pos == end:
            return rows  # type: ignore[return-value]
        # Not where the event ends: let the library decode it from the start (and raise its own errors).
        self.fallbacks += 1
        log.debug("rows event of table id %s decoded by the library (%s)", table_id, failure or f"{pos} != {end}")
        raw._position = start
        wrapper.read_bytes = read_bytes
        setattr(wrapper, _BUFFER_ATTR, b"")
        return ev.rows

    def _decoder(self, ev: RowsEvent) -> Decoder | None:
        if not ev.complete or ev.event_type == BINLOG.PARTIAL_UPDATE_ROWS_EVENT:
            return None
        table = ev.table_map.get(ev.table_id)
        if table is None:
            return None
        bitmaps = (
            (ev.columns_present_bitmap, ev.columns_present_bitmap2)
            if isinstance(ev, UpdateRowsEvent)
            else (ev.columns_present_bitmap,)
        )
        errors = "ignore" if ev._ignore_decode_errors else "strict"
        # The library makes a new Table per TABLE_MAP event (one per transaction): remember the
        # decoder on it, so the structure's signature is computed once per transaction.
        cached: dict[tuple[Any, ...], Decoder | None] | None = table.__dict__.get(_TABLE_ATTR)
        if cached is None:
            cached = {}
            setattr(table, _TABLE_ATTR, cached)
        local = (bitmaps, errors)
        if local in cached:
            return cached[local]
        columns = table.columns
        decoder: Decoder | None = None
        if all(c.name for c in columns) and len(columns) == ev.number_of_columns:
            key = (bitmaps, errors, *(_signature(c) for c in columns))
            decoder = self._decoders.get(key)
            if decoder is None:
                if len(self._decoders) > 4096:
                    self._decoders.clear()  # bounded: tables that change shape forever must not leak
                decoder = self._decoders[key] = compile_decoder(list(columns), bitmaps, errors)
        cached[local] = decoder
        return decoder


def _signature(c: Any) -> tuple[Any, ...]:
    """What a column's decoding depends on; slow columns carry their own column object's decoding state."""
    return (
        c.name, c.type, c.unsigned, getattr(c, "max_length", None), getattr(c, "length_size", None),
        getattr(c, "fsp", None), c.character_set_name, getattr(c, "precision", None), getattr(c, "decimals", None),
        getattr(c, "bits", None), getattr(c, "size", None),
        tuple(c.enum_values) if c.enum_values else None, tuple(c.set_values) if c.set_values else None,
    )  # fmt: skip
