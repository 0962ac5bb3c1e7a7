"""The binlog lineage epoch (cdc_mysql/lineage.py): when the connector bumps it, and that the
events and offsets carry it. Issue 16, defect 3: positions restart lower after a failover or a
RESET MASTER, so sinks need an epoch to keep ranking new changes above old ones."""

from __future__ import annotations

import random

import pytest

from cdc_mysql.lineage import BinlogLineage, position, sequence_text
from cdc_mysql.offset_context import MySqlOffsetContext


def test_a_first_start_is_epoch_zero() -> None:
    assert BinlogLineage.decide(0, None, None, "server_id=1", (3, 400), False) == BinlogLineage(0, "server_id=1")


@pytest.mark.parametrize("seed", range(20))
def test_the_epoch_is_bumped_exactly_when_the_lineage_may_have_changed(seed: int) -> None:
    rnd = random.Random(seed)
    stored_epoch = rnd.randint(0, 5)
    stored_identity = rnd.choice([None, "server_id=1", "uuid=a"])
    identity = rnd.choice(["server_id=1", "server_id=2", "uuid=a"])
    stored = (rnd.randint(1, 5), rnd.randint(4, 1000))
    current = (rnd.randint(1, 5), rnd.randint(4, 1000))
    by_gtid = rnd.random() < 0.3
    got = BinlogLineage.decide(stored_epoch, stored_identity, stored, identity, current, by_gtid)
    changed = (stored_identity is not None and stored_identity != identity) or by_gtid or current < stored
    assert got == BinlogLineage(stored_epoch + (1 if changed else 0), identity), f"seed {seed}"


def test_offsets_round_trip_the_lineage() -> None:
    off = MySqlOffsetContext("mysql-bin.000002", 900, "0-1-5", epoch=2, server_identity="server_id=7")
    stored = off.offset()
    assert stored["epoch"] == 2 and stored["server_identity"] == "server_id=7"
    back = MySqlOffsetContext.load(stored)
    assert (back.epoch, back.server_identity) == (2, "server_id=7")
    assert "epoch" not in MySqlOffsetContext("f.1", 4).offset()  # Debezium's keys only at epoch 0
    assert off.completed().offset() == {k: v for k, v in stored.items() if k != "snapshot"}


def test_events_carry_the_epoch_as_debezium_sequence_text() -> None:
    assert sequence_text(0) is None
    assert sequence_text(3) == '["3"]'
    assert position("mariadb-bin.000012", 77) == (12, 77)
