"""The signal.* and incremental.snapshot.* settings: defaults, and every bad value refused on its own key."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cdc_debezium.signals.config import SignalConfig
from cdc_mysql.config import validate as mysql_validate
from cdc_postgres.config import validate as postgres_validate
from tests.mysql.test_config import BASE as MYSQL_BASE

POSTGRES_BASE = {
    "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "database.hostname": "localhost",
    "database.user": "u",
    "database.dbname": "d",
    "topic.prefix": "p",
}


def test_defaults_are_debeziums_and_signals_are_off_without_a_channel() -> None:
    c = SignalConfig.from_props({}, "shop")
    assert (c.channels, c.chunk_size, c.watermarking, c.kafka_topic, c.file, c.poll_interval_s) == (
        ("source",), 1024, "insert_insert", "shop-signal", "file-signals.txt", 5.0
    )  # fmt: skip
    assert not c.active  # the source channel needs signal.data.collection
    assert SignalConfig.from_props({"signal.data.collection": "db.s"}, "shop").active
    assert SignalConfig.from_props({"signal.enabled.channels": "file"}, "shop").active


@given(
    channels=st.lists(st.sampled_from(["source", "file", "kafka", "jmx", "pigeon"]), min_size=1, max_size=3),
    chunk=st.one_of(st.integers(-3, 5000).map(str), st.sampled_from(["x", "1.5", ""])),
    strategy=st.sampled_from(["insert_insert", "INSERT_DELETE", "insert_update", ""]),
)
def test_each_bad_value_is_an_error_on_its_key_in_both_connectors(
    channels: list[str], chunk: str, strategy: str
) -> None:
    props = {
        "signal.enabled.channels": ",".join(channels),
        "incremental.snapshot.chunk.size": chunk,
        "incremental.snapshot.watermarking.strategy": strategy,
    }
    for validate, base in ((mysql_validate, MYSQL_BASE), (postgres_validate, POSTGRES_BASE)):
        errors = {v.name: v.errors for v in validate({**base, **props}) if v.errors}
        bad_channel = any(c not in ("source", "file", "kafka") for c in channels)
        bad_chunk = chunk != "" and not (chunk.lstrip("-").isdigit() and int(chunk) >= 1)
        bad_strategy = strategy.lower() not in ("insert_insert", "insert_delete", "")
        # The first bad value (channels, then strategy, then chunk size) is reported on its key.
        expected = next(
            (key for key, bad in (("signal.enabled.channels", bad_channel),
                                  ("incremental.snapshot.watermarking.strategy", bad_strategy),
                                  ("incremental.snapshot.chunk.size", bad_chunk)) if bad),
            None,
        )  # fmt: skip
        assert set(errors) == ({expected} if expected else set()), (props, errors)
