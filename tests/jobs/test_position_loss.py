"""Time until a job's source position is lost (issue 37), as the job layer and /metrics show it:
`cdc validate`'s verdict against warn.position.loss.seconds, the `cdc status` line, and the
`cdc_source_seconds_until_position_lost` gauge. The servers' side: test_position_loss_live.py."""

from __future__ import annotations

import math
from typing import Any

from cdc.api import metrics as m
from cdc.api.retention import KEPT, LOST, UNKNOWN, UNLIMITED, PositionRetention
from cdc.jobs.status import JobStatus, render
from cdc.jobs.validation.position_loss import verdict
from cdc.jobs.validation.problems import Collector
from cdc.jobs.validation.schema import check_schema
from cdc.runtime.prometheus.debezium import debezium_metrics
from cdc.runtime.prometheus.view import TaskView, WorkerView

T0 = 1_800_000_000_000


def _kept(seconds: float | None, **kw: Any) -> PositionRetention:
    fields: dict[str, Any] = {
        "state": KEPT,
        "seconds_left": seconds,
        "subject": "binlog mysql-bin.000004",
        "removal": "purged",
        "limit": "binlog_expire_logs_seconds=86400",
        "measured_at_ms": T0,
    }
    return PositionRetention(**{**fields, **kw})


def test_validate_warns_under_the_threshold_and_fails_once_lost() -> None:
    assert verdict(_kept(3601.0), 3600, T0) is None
    is_error, message = verdict(_kept(3599.0), 3600, T0) or (None, "")
    assert is_error is False
    assert message == (
        "position kept: ~59 min until binlog mysql-bin.000004 is purged (binlog_expire_logs_seconds=86400): under "
        "warn.position.loss.seconds=3600; run the job before then, or make the server keep its log longer "
        "(binlog_expire_logs_seconds=86400)"
    )
    assert verdict(_kept(3601.0), 3600, T0 + 2000) is not None  # counted down since the measurement
    assert verdict(_kept(0.0), 0, T0) is None  # 0 turns the warning off
    assert verdict(_kept(None), 3600, T0) is None  # nothing written: never lost at that rate
    assert verdict(PositionRetention(UNLIMITED, limit="binlog_expire_logs_seconds=0"), 3600, T0) is None
    assert verdict(PositionRetention(UNKNOWN, note="no offset is stored"), 3600, T0) is None
    lost = PositionRetention(LOST, note="binlog mysql-bin.000001 of the stored offset (pos 4) was purged: fix it")
    assert verdict(lost, 3600, T0) == (
        True,
        "position lost: binlog mysql-bin.000001 of the stored offset (pos 4) was purged: fix it",
    )
    recovers = PositionRetention(LOST, note="…: the next start takes a new snapshot", snapshot_on_loss=True)
    assert verdict(recovers, 3600, T0) == (False, "position lost: …: the next start takes a new snapshot")


def test_the_threshold_key_takes_a_non_negative_whole_number() -> None:
    base = {"name": "j", "source": {"connector.class": "mysql"}, "sink": {"type": "delta", "path": "/tmp/x"}}
    where = "job.yaml: ['warn.position.loss.seconds']: "
    for bad, expected in (
        (-1, "invalid value -1: use a whole number of seconds, 0 or more (0 turns the warning off), e.g. 3600"),
        ("1h", "expected integer, got str '1h'"),
        (1.5, "expected integer, got float 1.5"),
    ):
        out = Collector({})
        check_schema({**base, "warn.position.loss.seconds": bad}, out)
        assert [p.render("job.yaml") for p in out.problems] == [where + expected], bad
    out = Collector({})
    check_schema({**base, "warn.position.loss.seconds": 0}, out)
    assert out.problems == []


def test_status_shows_the_position_line_and_its_json_field() -> None:
    status = JobStatus("j", "embedded", running=False, source_offset={"file": "mysql-bin.000004", "pos": 4})
    status.source_backlog = {"unread_bytes": 0, "position": "mysql-bin.000004:4", "note": None}
    status.position_retention = _kept(11_520.0, measured_at_ms=None).to_json()
    lines = render(status)
    assert (
        "position kept: ~3 h 12 min until binlog mysql-bin.000004 is purged (binlog_expire_logs_seconds=86400)" in lines
    )
    assert status.to_json()["position_retention"]["seconds_left"] == 11_520.0
    status.position_retention, status.position_retention_error = None, "Can't connect to MySQL server on 'db'"
    assert "position: cannot read how long the database keeps it (Can't connect to MySQL server on 'db')" in render(
        status
    )
    status.position_retention_error = None
    assert not any(line.startswith("position") for line in render(status))  # a connector that cannot say


def _scrape(retention: dict[str, Any] | None, now_ms: int) -> dict[str, float]:
    metrics = {m.POSITION_RETENTION: retention} if retention is not None else {}
    task = TaskView("shop", 0, "source", "running", "io.debezium.connector.mysql.MySqlConnector", "shop", None, metrics)  # type: ignore[arg-type]
    view = WorkerView("w", now_ms, [], [task])
    return {
        f"{s.name}{s.labels}": s.value
        for family in debezium_metrics(view)
        for s in family.samples
        if s.name == "cdc_source_seconds_until_position_lost"
    }


def test_the_gauge_counts_down_to_the_scrape() -> None:
    key = "cdc_source_seconds_until_position_lost{'plugin': 'mysql', 'name': 'shop'}"
    assert _scrape(_kept(600.0).to_json(), T0 + 100_000) == {key: 500.0}
    assert _scrape(PositionRetention(UNLIMITED).to_json(), T0) == {key: math.inf}
    assert _scrape(PositionRetention(LOST).to_json(), T0) == {key: 0.0}
    assert _scrape(PositionRetention(UNKNOWN).to_json(), T0) == {}  # nothing to say: no sample
    assert _scrape(None, T0) == {}
    assert _scrape({"state": "from a newer cdc"}, T0) == {}
