"""The `signal.*` and `incremental.snapshot.*` settings (Debezium's CommonConnectorConfig names and defaults)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api import ConfigDef, ConfigException, ConfigType, ConfigValue, Importance

ENABLED_CHANNELS = "signal.enabled.channels"
DATA_COLLECTION = "signal.data.collection"
SIGNAL_FILE = "signal.file"
KAFKA_TOPIC = "signal.kafka.topic"
POLL_INTERVAL_MS = "signal.poll.interval.ms"
CHUNK_SIZE = "incremental.snapshot.chunk.size"
WATERMARKING = "incremental.snapshot.watermarking.strategy"
CHANNELS = ("source", "kafka", "file")
NOTIFICATION_CHANNELS = "notification.enabled.channels"  # cdc_debezium.notifications
NOTIFICATION_TOPIC = "notification.sink.topic.name"
NEW_TABLES = "snapshot.new.tables"  # cdc_debezium.signals.new_tables
NEW_TABLES_MODES = ("off", "parallel")
KEYS = (ENABLED_CHANNELS, DATA_COLLECTION, SIGNAL_FILE, KAFKA_TOPIC, POLL_INTERVAL_MS, CHUNK_SIZE, WATERMARKING,
        NOTIFICATION_CHANNELS, NOTIFICATION_TOPIC, NEW_TABLES)  # fmt: skip
STRATEGIES = ("insert_insert", "insert_delete")


@dataclass(frozen=True)
class SignalConfig:
    channels: tuple[str, ...]
    data_collection: str | None
    file: str
    kafka_topic: str
    poll_interval_s: float
    chunk_size: int
    watermarking: str

    @property
    def active(self) -> bool:
        """Whether any channel is on: `source` needs signal.data.collection, as in Debezium."""
        return bool(self.source or "file" in self.channels or "kafka" in self.channels)

    @property
    def source(self) -> bool:
        return "source" in self.channels and bool(self.data_collection)

    @classmethod
    def from_props(cls, props: Mapping[str, Any], topic_prefix: str) -> SignalConfig:
        def get(key: str, default: str) -> str:
            value = props.get(key)
            return default if value is None or str(value).strip() == "" else str(value).strip()

        channels = tuple(c.strip().lower() for c in get(ENABLED_CHANNELS, "source").split(",") if c.strip())
        unknown = [c for c in channels if c not in CHANNELS]
        if unknown:
            raise ConfigException(
                f"{ENABLED_CHANNELS}: unknown channel {unknown[0]!r}; use a comma-separated list of "
                + ", ".join(CHANNELS),
                ENABLED_CHANNELS,
                props.get(ENABLED_CHANNELS),
            )
        strategy = get(WATERMARKING, "insert_insert").lower()
        if strategy not in STRATEGIES:
            raise ConfigException(
                f"{WATERMARKING}={strategy} is not one of {', '.join(STRATEGIES)}", WATERMARKING, strategy
            )
        numbers = {}
        for key, default in ((CHUNK_SIZE, "1024"), (POLL_INTERVAL_MS, "5000")):
            try:
                numbers[key] = int(get(key, default))
            except ValueError:
                raise ConfigException(
                    f"{key}={get(key, default)}: must be an integer", key, get(key, default)
                ) from None
        chunk, poll_ms = numbers[CHUNK_SIZE], numbers[POLL_INTERVAL_MS]
        if chunk < 1:
            raise ConfigException(f"{CHUNK_SIZE}={chunk}: must be at least 1", CHUNK_SIZE, chunk)
        return cls(
            channels=channels,
            data_collection=props.get(DATA_COLLECTION) or None,
            file=get(SIGNAL_FILE, "file-signals.txt"),
            kafka_topic=get(KAFKA_TOPIC, f"{topic_prefix}-signal"),
            poll_interval_s=max(poll_ms, 0) / 1000,
            chunk_size=chunk,
            watermarking=strategy,
        )


def define(d: ConfigDef) -> ConfigDef:
    """Adds the signal and incremental snapshot keys to a connector's ConfigDef (values checked in from_props)."""
    docs = {
        ENABLED_CHANNELS: ("source", "Signal channels: source (the signal.data.collection table), kafka, file."),
        DATA_COLLECTION: (None, "The signal table (<db>.<table> or <schema>.<table>): columns id, type, data."),
        SIGNAL_FILE: ("file-signals.txt", "The file channel's file: one JSON signal per line; emptied once read."),
        KAFKA_TOPIC: (None, "The kafka channel's topic (default <topic.prefix>-signal), keyed by topic.prefix."),
        POLL_INTERVAL_MS: ("5000", "How often the file and kafka channels are read."),
        CHUNK_SIZE: ("1024", "Rows per incremental snapshot chunk."),
        WATERMARKING: ("insert_insert", "Incremental snapshot watermarks: insert_insert or insert_delete."),
        NOTIFICATION_CHANNELS: (None, "Notification channels: log, sink (Debezium's snapshot notifications)."),
        NOTIFICATION_TOPIC: (None, "The sink notification channel's topic."),
        NEW_TABLES: ("off", "parallel: a restart whose filters capture more tables snapshots those incrementally."),
    }
    known = set(d.names())
    for key, (default, doc) in docs.items():
        if key not in known:
            d.define(key, ConfigType.STRING, default, None, Importance.LOW, doc)
    return d


def parse_new_tables_mode(props: Mapping[str, Any]) -> bool:
    """`snapshot.new.tables`: True for `parallel`; an unknown value is refused with the values there are
    (owned here, beside the key, so cdc_debezium.signals.new_tables imports it and not the reverse)."""
    raw = props.get(NEW_TABLES)
    value = "off" if raw is None or str(raw).strip() == "" else str(raw).strip().lower()
    if value not in NEW_TABLES_MODES:
        raise ConfigException(
            f"{NEW_TABLES}={raw}: use off (tables added to the include lists are streamed from the restart "
            "on) or parallel (an incremental snapshot reads their existing rows while streaming goes on)",
            NEW_TABLES,
            raw,
        )
    return value == "parallel"


def add_errors(props: Mapping[str, Any], by_name: Mapping[str, ConfigValue]) -> None:
    """A connector's `validate`: a bad signal or incremental snapshot value is an error on its key."""
    from cdc_debezium.notifications import NotificationConfig

    try:
        SignalConfig.from_props(props, "")
        NotificationConfig.from_props(props)
        parse_new_tables_mode(props)
    except ConfigException as e:
        cv = by_name.get(e.name or "")
        if cv is not None:
            cv.add_error_message(str(e))
