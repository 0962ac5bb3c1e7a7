"""Skips python-mysql-replication's parse of a TABLE_MAP event that repeats its table's last one.

The server writes a TABLE_MAP before every rows event of every transaction, so with small
transactions (one row each, at full speed) the library parses the same table map again and
again: its column definitions, optional metadata and charsets, in Python. On single-row
transactions that was about half of the binlog reader's time (profiled for issue 22).

The library's own shortcut, `freeze_schema=True`, keeps the first table map of a table id
forever, which is wrong once a DDL changes the table under the same id. Here the shortcut is
taken per event and only when it cannot change anything: the event's body (everything after
the common header, without the checksum) is byte for byte the body the library's current
table map for that id was parsed from (stamped on the library's `Table` when the reader saw
the parsed event). The library then keeps that table map and does not yield the event; the
reader (streaming.py) keeps what it built from the same bytes. Any difference, a table id the
library holds no map for (a new reader, a binlog rotation clears its maps), and the event is
parsed as before.

python-mysql-replication has no hook for this (its event classes come from a private
class-level map), so the flag is set on the reader, per packet, from the connection class the
reader accepts (`pymysql_wrapper`). tests/mysql/test_table_map_reuse.py streams seeded
workloads with DDL, rotations and restarts with and without it and compares every record.
"""

from __future__ import annotations

from typing import Any

from pymysqlreplication.constants.BINLOG import TABLE_MAP_EVENT

# The reader's private attributes read and set here (python-mysql-replication 1.x names them so).
_FREEZE_ATTR = "_BinLogStreamReader__freeze_schema"
_CHECKSUM_ATTR = "_BinLogStreamReader__use_checksum"
_BODY_ATTR = "_cdc_table_map_body"  # on the library's Table: the body it was parsed from
_HEADER = 20  # the OK byte and the 19-byte event header: timestamp, type, server id, size, next position, flags
_TYPE_AT = 5
_TABLE_ID = 6  # bytes of the table id that starts the body


class TableMapReuse:
    """Decides, per TABLE_MAP packet of one binlog reader, whether the library may skip its parse."""

    def __init__(self) -> None:
        self.reader: Any | None = None
        self.reused = 0  # table maps not parsed again

    def attach(self, reader: Any) -> None:
        if not hasattr(reader, _FREEZE_ATTR) or not hasattr(reader, _CHECKSUM_ATTR):
            raise RuntimeError(
                "python-mysql-replication changed: BinLogStreamReader has no freeze_schema/use_checksum attributes "
                "(needed by cdc_mysql/table_map_reuse.py)"
            )
        self.reader = reader

    def packet_read(self, conn: Any, data: bytes) -> None:
        """Called with every packet `conn` reads; acts on the reader's binlog stream only."""
        reader = self.reader
        if reader is None or conn is not getattr(reader, "_stream_connection", None):
            return
        if len(data) <= _HEADER + _TABLE_ID or data[0] != 0 or data[_TYPE_AT] != TABLE_MAP_EVENT:
            return
        body = _body(data, getattr(reader, _CHECKSUM_ATTR))
        table = reader.table_map.get(int.from_bytes(body[:_TABLE_ID], "little"))
        same = table is not None and table.__dict__.get(_BODY_ATTR) == body
        if same:
            self.reused += 1
        setattr(reader, _FREEZE_ATTR, same)

    def parsed(self, event: Any) -> None:
        """The library parsed and yielded this TableMapEvent: stamp its table map with the bytes."""
        reader = self.reader
        table = getattr(event, "table_obj", None)
        if reader is None or table is None:
            return
        table.__dict__[_BODY_ATTR] = _body(event.packet.packet._data, getattr(reader, _CHECKSUM_ATTR))


def _body(data: bytes, checksum: bool) -> bytes:
    return data[_HEADER : len(data) - 4 if checksum else len(data)]
