"""Issue 39, item 8: a transactional logical decoding message is an event of its transaction.

Re-expresses LogicalDecodingMessageIT.shouldConsumeTransactionalLogicalDecodingMessagesThatContainTransactionData
on a real server. Debezium's LogicalDecodingMessageMonitor hands every message to the TransactionMonitor
under the data collection LOGICAL_DECODING_MESSAGE (one for all prefixes): a transactional message gets the
`transaction` block and counts in the END record; a non-transactional one has no xid (pgoutput sends none),
so it gets no block and opens no transaction.
"""

from __future__ import annotations

from typing import Any

from cdc.api import SourceRecord
from tests.postgres.harness import TaskRunner, connector_props

MESSAGES = "test_server.message"
TRANSACTIONS = "test_server.transaction"


def _tx_records(runner: TaskRunner) -> list[dict[str, Any]]:
    """BEGIN/END values as dicts, the END's data_collections too."""
    out = []
    for record in (r for r in runner.records if r.topic == TRANSACTIONS):
        value = record.value.to_dict()
        if value.get("data_collections") is not None:
            value["data_collections"] = [dc.to_dict() for dc in value["data_collections"]]
        out.append(value)
    return out


def _messages(runner: TaskRunner) -> list[SourceRecord]:
    return [r for r in runner.records if r.topic == MESSAGES]


def test_transactional_message_carries_its_transaction_block(postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t (id int PRIMARY KEY)")
    props = connector_props(postgres_db, **{"provide.transaction.metadata": "true"})
    with TaskRunner(props) as runner:
        runner.wait_streaming(sql)
        sql.execute("SELECT pg_logical_emit_message(true, 'txn_foo', 'txn_bar')")
        runner.poll_until(lambda _: len(_tx_records(runner)) >= 2, what="BEGIN, the message and END")
    (record,) = _messages(runner)
    value = record.value
    source = value.get("source")
    assert value.get("op") == "m"
    assert source.get("txId") is not None and source.get("lsn") is not None and source.get("ts_ms") is not None
    assert source.get("schema") == "" and source.get("table") == ""
    message = value.get("message")
    assert message.get("prefix") == "txn_foo" and message.get("content") == b"txn_bar"
    block = value.get("transaction")
    assert block is not None
    assert block.get("id") and block.get("id").split(":")[0] == str(source.get("txId"))
    assert block.get("total_order") == 1 and block.get("data_collection_order") == 1
    begin, end = _tx_records(runner)
    assert begin["status"] == "BEGIN" and end["status"] == "END"
    assert begin["status"] == "BEGIN" and begin["id"] == block.get("id")
    assert end["status"] == "END" and end["event_count"] == 1
    assert end["data_collections"] == [{"data_collection": "LOGICAL_DECODING_MESSAGE", "event_count": 1}]
    assert value.schema.field("transaction").schema.optional


def test_message_counts_with_the_rows_of_its_transaction(postgres_db) -> None:
    """A message among row changes: the total order runs over both, each data collection has its own."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t (id int PRIMARY KEY)")
    props = connector_props(postgres_db, **{"provide.transaction.metadata": "true"})
    with TaskRunner(props) as runner:
        runner.wait_streaming(sql)
        with sql.transaction():
            sql.execute("INSERT INTO t VALUES (1)")
            sql.execute("SELECT pg_logical_emit_message(true, 'a', 'x')")
            sql.execute("SELECT pg_logical_emit_message(true, 'b', 'y')")
            sql.execute("INSERT INTO t VALUES (2)")
        runner.poll_until(lambda _: len(_tx_records(runner)) >= 2, what="BEGIN and END")
    rows = runner.data("public.t")
    messages = _messages(runner)
    assert [m.value.get("message").get("prefix") for m in messages] == ["a", "b"]
    orders = [(r.value.get("transaction").get("total_order"), r.value.get("transaction").get("data_collection_order"))
              for r in (rows[0], *messages, rows[1])]  # fmt: skip
    assert orders == [(1, 1), (2, 1), (3, 2), (4, 2)]  # prefixes share LOGICAL_DECODING_MESSAGE
    _, end = _tx_records(runner)
    assert end["event_count"] == 4
    assert end["data_collections"] == [
        {"data_collection": "public.t", "event_count": 2},
        {"data_collection": "LOGICAL_DECODING_MESSAGE", "event_count": 2},
    ]


def test_non_transactional_message_has_no_transaction(postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t (id int PRIMARY KEY)")
    props = connector_props(postgres_db, **{"provide.transaction.metadata": "true"})
    with TaskRunner(props) as runner:
        runner.wait_streaming(sql)
        sql.execute("SELECT pg_logical_emit_message(false, 'foo', 'bar')")
        sql.execute("INSERT INTO t VALUES (1)")  # a transaction after it, to know the stream got past it
        runner.wait_data(1, "public.t")
        runner.poll_until(lambda _: len(_tx_records(runner)) >= 2, what="the insert's BEGIN and END")
    (record,) = _messages(runner)
    assert record.value.get("transaction") is None and record.value.get("source").get("txId") is None
    begin, end = _tx_records(runner)
    assert begin["status"] == "BEGIN" and end["status"] == "END"
    assert end["event_count"] == 1
    assert end["data_collections"] == [{"data_collection": "public.t", "event_count": 1}]
