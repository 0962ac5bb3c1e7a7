"""Rows of a streaming (SSCursor) result read off the wire by a parser compiled per result (the snapshot's hot path).

PyMySQL reads a row as a MysqlPacket object and each value with a method call
(`read_length_coded_string`), then decodes and converts it: about three quarters of a bare
streaming SELECT's time. `fetch_rows` reads the same packets from the connection's buffered
socket file and splits each row with code generated for the result's columns (one slice per
value, no per-value calls but the decode and the converter), then applies PyMySQL's own
(encoding, converter) pairs of the result (`MySQLResult.converters`), so every value is the one
PyMySQL returns. Integer and floating-point columns, which PyMySQL decodes as ASCII and passes
to `int`/`float`, go to `int`/`float` as bytes (the same values; both read bytes as text).

What the compiled parser does not expect (a NULL, a value of 251 bytes or more, a row shorter
than the column count) goes through the generic loop, the exact steps of PyMySQL's
`_read_row_from_packet`. The end of the result (EOF packet), an error packet and a lost
connection are handled as PyMySQL's unbuffered result does, so the cursor and connection are left
as after `fetchmany`. A cursor that is not PyMySQL's SSCursor over a plain result set falls back
to `fetchmany`.

A reader process asks for the columns of the DEFERRED types (snapshot_decoders.py) as text
(`deferred_columns`, then `fetch(..., deferred)`), and sends its batch column by column
(`columns_of`); the task's process decodes those columns (snapshot_decoders.decode_column).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pymysql import err
from pymysql.constants import CR
from pymysql.converters import through
from pymysql.cursors import SSCursor
from pymysql.protocol import MysqlPacket

from cdc_mysql.snapshot_decoders import CONVERSIONS, DEFERRED

MAX_PACKET_LEN = 2**24 - 1
_NULL = 251

Converters = Sequence[tuple[str | None, Callable[[Any], Any] | None]]
RowParser = Callable[[bytes], tuple[Any, ...]]


def _value(data: bytes, pos: int, encoding: str | None, converter: Any) -> tuple[Any, int]:
    """The value at `pos` and the position after it, as PyMySQL's read_length_coded_string + decode + convert."""
    first = data[pos]
    if first < _NULL:
        end = pos + 1 + first
        raw = data[pos + 1 : end]
    elif first == _NULL:
        return None, pos + 1
    else:
        width = {252: 2, 253: 3, 254: 8}[first]
        size = int.from_bytes(data[pos + 1 : pos + 1 + width], "little")
        start = pos + 1 + width
        end = start + size
        raw = data[start:end]
    if end > len(data):  # PyMySQL's MysqlPacket.read refuses a short read the same way
        raise AssertionError(f"Result length not requested length: {len(raw)} of {end - pos}")
    value: Any = raw
    if encoding is not None:
        value = value.decode(encoding)
    if converter is not None:
        value = converter(value)
    return value, end


def generic_row(data: bytes, converters: Converters) -> tuple[Any, ...]:
    """One row the way PyMySQL's `_read_row_from_packet` reads it (a row that ends early ends there)."""
    row: list[Any] = []
    pos = 0
    for encoding, converter in converters:
        if pos >= len(data):
            break  # no more columns in this row (PyMySQL #434)
        value, pos = _value(data, pos, encoding, converter)
        row.append(value)
    return tuple(row)


def compile_parser(converters: Converters) -> RowParser:
    """A function splitting one row packet of a result with these (encoding, converter) columns."""
    ns: dict[str, Any] = {"generic": generic_row, "converters": list(converters)}
    lines = ["def parse(data):", "    try:", "        p = 0"]
    names = []
    for i, (encoding, converter) in enumerate(converters):
        raw = "data[p + 1 : e]"
        if converter is through:
            converter = None
        if encoding == "ascii" and converter in (int, float):
            expr = f"{converter.__name__}({raw})"
        else:
            expr = raw
            if encoding is not None:
                ns[f"e{i}"] = encoding
                expr = f"{expr}.decode(e{i})"
            if converter is not None:
                ns[f"c{i}"] = converter
                expr = f"c{i}({expr})"
        lines += [
            "        n = data[p]",
            "        if n >= 251:",
            "            return generic(data, converters)",
            "        e = p + 1 + n",
            f"        v{i} = {expr}",
            "        p = e",
        ]
        names.append(f"v{i}")
    lines += [
        "        if p != len(data):",  # a longer or shorter row than the columns: PyMySQL's own reading
        "            return generic(data, converters)",
        f"        return ({', '.join(names)}{',' if len(names) == 1 else ''})",
        "    except IndexError:",
        "        return generic(data, converters)",
    ]
    exec(compile("\n".join(lines) + "\n", "<snapshot row parser>", "exec"), ns)
    parse: RowParser = ns["parse"]
    return parse


class RowReader:
    """Reads the rows of one cursor's streaming result in batches (`fetch`), compiled once per result."""

    def __init__(self) -> None:
        self._parsers: dict[tuple[Any, ...], RowParser] = {}

    def fetch(self, cursor: Any, size: int, deferred: Sequence[int] = ()) -> list[tuple[Any, ...]]:
        """Up to `size` rows of `cursor`'s result (an empty list at its end), as `cursor.fetchmany(size)`;
        the columns at the `deferred` positions (of `deferred_columns`) as their text."""
        result = getattr(cursor, "_result", None)
        conn = cursor.connection
        rfile = getattr(conn, "_rfile", None)
        converters = getattr(result, "converters", None)
        if type(cursor) is not SSCursor or rfile is None or converters is None or result is not conn._result:
            return list(cursor.fetchmany(size))
        if not result.unbuffered_active:
            return []
        if deferred:
            converters = [(enc, None) if i in deferred else (enc, conv) for i, (enc, conv) in enumerate(converters)]
        key = tuple(converters)
        parse = self._parsers.get(key)
        if parse is None:
            parse = self._parsers[key] = compile_parser(converters)
        rows = read_rows(conn, result, rfile, parse, converters, size)
        cursor.rownumber += len(rows)
        if not result.unbuffered_active:
            cursor.warning_count = result.warning_count
        return rows


def deferred_columns(cursor: Any) -> list[tuple[int, int]]:
    """(position, field type) of the columns of `cursor`'s result that a reader sends as text: of a DEFERRED
    type, read with the snapshot's own decoder of it (snapshot_decoders.CONVERSIONS)."""
    result = getattr(cursor, "_result", None)
    fields, converters = getattr(result, "fields", None), getattr(result, "converters", None)
    if type(cursor) is not SSCursor or not fields or converters is None:
        return []
    return [
        (i, f.type_code)
        for i, (f, (encoding, converter)) in enumerate(zip(fields, converters, strict=True))
        if f.type_code in DEFERRED and encoding == "ascii" and converter is CONVERSIONS.get(f.type_code)
    ]


def columns_of(rows: list[tuple[Any, ...]], width: int) -> list[tuple[Any, ...]] | None:
    """`rows` as one tuple per column, or None when a row is not `width` values long (PyMySQL's short rows)."""
    if not rows or min(map(len, rows)) != width or max(map(len, rows)) != width:
        return None
    return list(zip(*rows, strict=True))


def read_rows(
    conn: Any, result: Any, rfile: Any, parse: RowParser, converters: Converters, size: int
) -> list[tuple[Any, ...]]:
    """Up to `size` rows read off `rfile`, the state of `conn` and `result` kept as PyMySQL keeps it
    (a value its decoder refuses raises, as in PyMySQL, with the packet read and the result still open)."""
    rows: list[tuple[Any, ...]] = []
    append = rows.append
    read = rfile.read
    seq = conn._next_seq_id
    try:
        while len(rows) < size:
            data = b""
            length = MAX_PACKET_LEN
            while length == MAX_PACKET_LEN:  # a row of 16 MB or more comes in several packets
                head = read(4)
                if len(head) < 4:
                    raise OSError("the connection closed")
                if head[3] != seq:
                    conn._force_close()
                    if head[3] == 0:
                        raise err.OperationalError(CR.CR_SERVER_LOST, "Lost connection to MySQL server during query")
                    raise err.InternalError(f"Packet sequence number wrong - got {head[3]} expected {seq}")
                seq = (seq + 1) & 255
                length = head[0] | head[1] << 8 | head[2] << 16
                part = read(length)
                if len(part) < length:
                    raise OSError("the connection closed")
                data = data + part if data else part
            first = data[0] if data else 0
            if first == 0xFE and len(data) < 9:  # EOF: the result's end
                result._check_packet_is_eof(MysqlPacket(data, conn.encoding))
                result.unbuffered_active = False
                result.connection = None
                result.rows = None
                break
            if first == 0xFF:  # an error packet ends the result
                result.unbuffered_active = False
                MysqlPacket(data, conn.encoding).raise_for_error()
            append(parse(data))
    except OSError as e:
        conn._force_close()
        raise err.OperationalError(CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query ({e})") from e
    finally:
        conn._next_seq_id = seq
    if rows:
        result.affected_rows = 1
        result.rows = (rows[-1],)
    return rows
