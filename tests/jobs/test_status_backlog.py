"""`cdc status` says "caught up" only when the database holds nothing past the stored offset (issue 31)."""

from __future__ import annotations

from cdc.jobs.status import JobStatus, TableStatus, render


def _status(**backlog) -> JobStatus:
    status = JobStatus("j", "embedded", running=False, source_offset={"file": "mysql-bin.000001", "pos": 4})
    status.tables = [TableStatus("shop.items", "srv.shop.items", 3, 3, 0, "mysql-bin.000001:4", lag_ms=0)]
    status.source_backlog = backlog or None
    return status


def test_a_table_with_its_log_applied_is_not_caught_up_while_the_database_has_unread_changes() -> None:
    text = "\n".join(render(_status(unread_bytes=2400, position="mysql-bin.000001:2404", note=None)))
    assert "database: not caught up: 2400 bytes" in text and "(caught up)" not in text
    assert "0 in the log; not caught up with the database" in text


def test_caught_up_needs_the_database_too() -> None:
    text = "\n".join(render(_status(unread_bytes=0, position="mysql-bin.000001:4", note=None)))
    assert "database: caught up" in text and "0 (caught up)" in text


def test_an_unknown_or_unreadable_database_position_is_never_called_caught_up() -> None:
    unknown = _status(unread_bytes=None, position="mysql-bin.000001:9", note="the server's binlog ends below it")
    assert "(caught up)" not in "\n".join(render(unknown))
    unreadable = _status()
    unreadable.source_backlog_error = "Can't connect to MySQL server on 'db'"
    text = "\n".join(render(unreadable))
    assert "cannot read its position (Can't connect" in text and "(caught up)" not in text
