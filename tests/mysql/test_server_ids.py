"""The reader's server id without a server (issue 37 item 4): the choice, the ranges, the offset key, the clash error.

The live side (a connector without database.server.id streaming, restarting, two at once, a
clash, `cdc validate`'s warning) is in test_server_id_choice.py.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator

import pymysql
import pytest

from cdc.api import ConnectException, SourceRecord
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.connection import MySqlConnection, Replica
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_mysql.server_ids import (
    CHOSEN,
    CHOSEN_SERVER_IDS,
    FROM_CONFIG,
    FROM_OFFSET,
    OFFSET_KEY,
    SERVER_ID_MAX,
    THROWAWAY_SERVER_IDS,
    ServerIdChoice,
    draw_unused,
    is_same_id_clash,
    resolve,
    same_id_advice,
    stamp,
    stored_server_id,
)
from cdc_mysql.streaming import MySqlStreamingChangeEventSource

PROPS = {"database.hostname": "db", "database.user": "u", "topic.prefix": "p"}
MARIADB_CLASH = (
    "A slave with the same server_uuid/server_id is already connected; the first event 'mysql-bin.000001' at 4, "
    "the last event read from 'mysql-bin.000001' at 530, the last byte read from 'mysql-bin.000001' at 756."
)
MYSQL_CLASH = (
    "A slave with the same server_uuid/server_id as this slave has connected to the master; the first event "
    "'binlog.000001' at 4, the last event read from 'binlog.000001' at 126"
)


class Scripted(random.Random):
    """A Random whose randint returns the given values in turn (within the asked bounds, checked)."""

    def __init__(self, *values: int) -> None:
        super().__init__(0)
        self.values = list(values)
        self.asked: list[tuple[int, int]] = []

    def randint(self, a: int, b: int) -> int:
        self.asked.append((a, b))
        value = self.values.pop(0)
        assert a <= value <= b
        return value


def test_the_ranges_are_apart_and_far_above_hand_given_ids() -> None:
    (chosen_low, chosen_high), (throwaway_low, throwaway_high) = CHOSEN_SERVER_IDS, THROWAWAY_SERVER_IDS
    assert 6400 < chosen_low <= chosen_high < throwaway_low <= throwaway_high == SERVER_ID_MAX == 2**32 - 1
    assert chosen_high - chosen_low > 2 * 10**9  # two connectors that cannot see each other rarely meet


def test_draw_skips_taken_ids_and_stays_in_range() -> None:
    low, high = CHOSEN_SERVER_IDS
    rng = Scripted(low, high, low + 7)
    assert draw_unused(CHOSEN_SERVER_IDS, {low, high}.__contains__, rng) == low + 7
    assert rng.asked == [CHOSEN_SERVER_IDS] * 3
    seeded = random.Random(37)
    drawn = {draw_unused((10, 20), lambda c: c % 2 == 0, seeded) for _ in range(200)}
    assert drawn == {11, 13, 15, 17, 19}


def test_draw_gives_up_with_advice_when_every_id_is_taken() -> None:
    with pytest.raises(ConnectException, match=r"set database\.server\.id to an id no replica"):
        draw_unused((1, 3), lambda _: True, random.Random(1))


def test_choose_avoids_the_servers_own_id_and_every_listed_replica() -> None:
    connection = MySqlConnection(MySqlConnectorConfig(PROPS))
    low = CHOSEN_SERVER_IDS[0]
    connection.variable = lambda name: str(low) if name == "server_id" else None  # type: ignore[method-assign]
    connection.replicas = lambda: {low + 1: Replica("r1", 3306), low + 2: Replica("cdc-x", 0)}  # type: ignore[method-assign]
    assert connection.choose_server_id(Scripted(low, low + 1, low + 2, low + 3)) == low + 3
    # A user who may not list replicas: only the server's own id is known to be taken.
    connection.replicas = lambda: None  # type: ignore[method-assign]
    assert connection.choose_server_id(Scripted(low, low + 2)) == low + 2


def test_throwaway_ids_avoid_the_tasks_own_id_given_or_chosen() -> None:
    connection = MySqlConnection(MySqlConnectorConfig(PROPS), server_id=THROWAWAY_SERVER_IDS[0])
    assert connection.server_id == THROWAWAY_SERVER_IDS[0]
    connection.variable = lambda name: "1"  # type: ignore[method-assign]
    connection.replicas = lambda: {}  # type: ignore[method-assign]
    drawn = [connection.throwaway_server_id() for _ in range(50)]
    assert all(THROWAWAY_SERVER_IDS[0] < i <= THROWAWAY_SERVER_IDS[1] for i in drawn)
    assert MySqlConnection(MySqlConnectorConfig({**PROPS, "database.server.id": "9"})).server_id == 9
    assert MySqlConnection(MySqlConnectorConfig(PROPS)).server_id is None


def test_a_given_id_wins_over_a_stored_one_with_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    def never() -> int:
        raise AssertionError("nothing is chosen when an id is given or stored")

    with caplog.at_level(logging.INFO, logger="cdc_mysql.server_ids"):
        assert resolve(5401, 1_500_000_000, never) == ServerIdChoice(5401, FROM_CONFIG)
    lines = [r for r in caplog.records if r.name == "cdc_mysql.server_ids"]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO
    assert "database.server.id=5401 is used; the stored offset names 1500000000" in lines[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="cdc_mysql.server_ids"):
        assert resolve(5401, 5401, never) == ServerIdChoice(5401, FROM_CONFIG)
        assert resolve(5401, None, never) == ServerIdChoice(5401, FROM_CONFIG)
    assert not [r for r in caplog.records if "stored offset names" in r.getMessage()]


def test_a_stored_id_is_reused_and_only_a_first_start_chooses() -> None:
    chosen: list[int] = []

    def choose() -> int:
        chosen.append(1_234_567_890)
        return chosen[-1]

    assert resolve(None, 1_500_000_000, choose) == ServerIdChoice(1_500_000_000, FROM_OFFSET)
    assert chosen == []
    assert resolve(None, None, choose) == ServerIdChoice(1_234_567_890, CHOSEN)
    assert chosen == [1_234_567_890]


def test_the_stored_id_of_old_and_edited_offsets(caplog: pytest.LogCaptureFixture) -> None:
    old = {"file": "mysql-bin.000003", "pos": 154, "gtids": "0-1-5", "ts_sec": 10, "server_id": 1}
    assert stored_server_id(None) is None and stored_server_id({}) is None
    assert stored_server_id(old) is None, "Debezium's server_id is the event's server, never the reader's id"
    assert stored_server_id({**old, OFFSET_KEY: 1_500_000_000}) == 1_500_000_000
    assert stored_server_id({**old, OFFSET_KEY: "77"}) == 77  # edited by hand through the offsets API
    with caplog.at_level(logging.WARNING, logger="cdc_mysql.server_ids"):
        for bad in (0, -3, 2**32, "x", True, [5]):
            assert stored_server_id({**old, OFFSET_KEY: bad}) is None, bad
    assert sum("is not a server id" in r.getMessage() for r in caplog.records) == 6


def test_offsets_round_trip_with_and_without_the_reader_id() -> None:
    """The offset class leaves the key alone: old offsets load as before, and a stamped one loads
    the same position (the task stamps the id back into every record's offset)."""
    old = {"file": "mysql-bin.000003", "pos": 154, "gtids": "0-1-5", "event": 2, "row": 7, "ts_sec": 10}
    ctx = MySqlOffsetContext.load(old)
    assert ctx.offset() == old
    assert MySqlOffsetContext.load({**old, OFFSET_KEY: 1_500_000_000}) == ctx
    records = [SourceRecord({"server": "p"}, ctx.offset(), "t", None, None), SourceRecord(None, None, "t", None, None)]
    stamp(records, 1_500_000_000)
    assert records[0].source_offset == {**old, OFFSET_KEY: 1_500_000_000} and records[1].source_offset is None
    assert stored_server_id(records[0].source_offset) == 1_500_000_000


def test_the_clash_errors_of_both_servers_are_recognised_and_a_purged_binlog_is_not() -> None:
    assert is_same_id_clash(4052, MARIADB_CLASH)
    assert is_same_id_clash(1236, MYSQL_CLASH)
    assert is_same_id_clash(1236, MYSQL_CLASH.replace("slave", "replica").replace("master", "source"))
    assert not is_same_id_clash(1236, "Could not find first log file name in binary log index file")
    assert not is_same_id_clash(2013, "Lost connection to server during query")


def test_the_clash_advice_is_one_line_naming_the_id_and_the_fix() -> None:
    given = same_id_advice(ServerIdChoice(5401, FROM_CONFIG), 4052, MARIADB_CLASH)
    assert "\n" not in given and "database.server.id=5401" in given and "(MySQL error 4052: A slave with" in given
    assert given.endswith(
        "set database.server.id to an id no other replica uses, or omit it to let the connector choose one"
    )
    assert "the last event read" not in given  # the positions after the ';' say nothing to the user
    stored = same_id_advice(ServerIdChoice(1_500_000_000, FROM_OFFSET), 1236, MYSQL_CLASH)
    assert "server id 1500000000 (chosen by the connector" in stored and f"as {OFFSET_KEY})" in stored
    assert "a second copy of this connector" in stored and "set database.server.id to an id no other" in stored


@pytest.mark.parametrize(("code", "message"), [(4052, MARIADB_CLASH), (1236, MYSQL_CLASH)])
def test_a_clash_while_streaming_stops_the_task_with_the_advice_and_marks_no_lineage_break(
    code: int, message: str
) -> None:
    """MySQL says it with 1236, which mid-stream otherwise means the binlog history changed: the
    stored offset must not be marked (that would force a new snapshot at the restart), and the
    stream must not reconnect (it would disconnect the other reader in turn)."""
    source = MySqlStreamingChangeEventSource.__new__(MySqlStreamingChangeEventSource)
    source.config = MySqlConnectorConfig({**PROPS, "database.server.id": "5401"})
    source.reader_id = ServerIdChoice(5401, FROM_CONFIG)
    source.stop = threading.Event()
    source.reconnects = 0

    def stream() -> Iterator[None]:
        yield  # an event streamed, then the server ends the dump
        raise pymysql.err.OperationalError(code, message)

    def marked(error: Exception) -> Exception:
        raise AssertionError("a server id clash is no lineage break")

    source._stream = stream  # type: ignore[method-assign]
    source._marked = marked  # type: ignore[method-assign,assignment]
    events = source.execute()
    next(events)
    with pytest.raises(ConnectException) as e:
        next(events)
    assert str(e.value).startswith("The server disconnected the binlog reader: another replica or binlog reader")
    assert "database.server.id=5401" in str(e.value) and source.reconnects == 0
