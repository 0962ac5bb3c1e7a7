"""The `cdc` source's options, parsed once on the driver and shipped to executors as a dict."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from cdc.log import TopicLog


class SourceOptionError(ValueError):
    """An option of `readStream.format("cdc")` is missing or wrong; the message says which."""


@dataclass(frozen=True)
class SourceOptions:
    transport: str = "embedded"
    state_dir: str | None = None
    bootstrap_servers: str | None = None
    kafka: Mapping[str, str] = field(default_factory=dict)
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    starting: str = "earliest"
    max_events: int | None = None
    poll_timeout: float = 10.0  # first fetch of a partition (a broker may be slow to answer)
    idle_timeout: float = 1.0  # then: an empty poll this long ends a partition below its end mark
    probe_end_offsets: bool = False  # read past the reported end (brokers with a wrong high watermark)
    decode: str = "none"  # "debezium-json": emit decoded change rows (DECODED_SCHEMA) instead of raw records
    latest_per_key: bool = False  # with decode: only each key's latest event per partition and batch
    schemas_enable: bool | None = None
    include_headers: bool = False  # a `headers` column, as Spark's Kafka source with includeHeaders=true
    fail_on_data_loss: bool = True  # records deleted before they were read stop the query (Spark's Kafka source)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        opts = {k.lower(): v for k, v in options.items()}  # Spark hands options over lower-cased
        transport = opts.get("transport", "embedded").lower()
        if transport not in ("embedded", "kafka"):
            raise SourceOptionError(f"option transport={transport!r}: use 'embedded' (with state.dir) or 'kafka'")
        topics = tuple(t.strip() for t in opts.get("topics", opts.get("subscribe", "")).split(",") if t.strip())
        pattern = opts.get("topic.pattern", opts.get("subscribepattern")) or None
        if bool(topics) == bool(pattern):
            raise SourceOptionError("set exactly one of the options 'topics' (comma list) or 'topic.pattern' (regex)")
        if pattern:
            try:
                re.compile(pattern)
            except re.error as e:
                raise SourceOptionError(f"option topic.pattern={pattern!r} is not a valid regex: {e}") from e
        if transport == "embedded" and not opts.get("state.dir"):
            raise SourceOptionError("transport=embedded needs the option state.dir (the directory holding cdc.db)")
        if transport == "kafka" and not opts.get("bootstrap.servers", opts.get("kafka.bootstrap.servers")):
            raise SourceOptionError("transport=kafka needs the option bootstrap.servers (host:port,...)")
        starting = opts.get("startingoffsets", "earliest").lower()
        if starting not in ("earliest", "latest"):
            raise SourceOptionError(f"option startingOffsets={starting!r}: use 'earliest' or 'latest'")
        max_events = opts.get("maxeventspertrigger")
        if max_events is not None and int(max_events) <= 0:
            raise SourceOptionError(f"option maxEventsPerTrigger={max_events!r} must be a positive integer")
        decode = str(opts.get("decode", "none")).lower()
        if decode not in ("none", "debezium-json"):
            raise SourceOptionError(f"option decode={decode!r}: use none (raw records) or debezium-json")
        latest = str(opts.get("latestperkey", "false")).lower() == "true"
        if latest and decode == "none":
            raise SourceOptionError("option latestPerKey=true needs decode=debezium-json")
        schemas = opts.get("schemas.enable")
        fail_on_loss = str(opts.get("failondataloss", "true")).lower()
        if fail_on_loss not in ("true", "false"):
            raise SourceOptionError(f"option failOnDataLoss={fail_on_loss!r}: use true (the default) or false")
        return cls(
            transport=transport,
            state_dir=opts.get("state.dir"),
            bootstrap_servers=opts.get("bootstrap.servers", opts.get("kafka.bootstrap.servers")),
            kafka={
                k[len("kafka.") :]: v
                for k, v in opts.items()
                if k.startswith("kafka.") and k != "kafka.bootstrap.servers"
            },
            topics=topics,
            pattern=pattern,
            starting=starting,
            max_events=int(max_events) if max_events is not None else None,
            poll_timeout=float(opts.get("polltimeoutms", 10_000)) / 1000,
            idle_timeout=float(opts.get("idletimeoutms", 1_000 if transport == "kafka" else 200)) / 1000,
            probe_end_offsets=str(opts.get("probeendoffsets", "false")).lower() == "true",
            decode=decode,
            latest_per_key=latest,
            schemas_enable=None if schemas is None else str(schemas).lower() == "true",
            include_headers=str(opts.get("includeheaders", "false")).lower() == "true",
            fail_on_data_loss=fail_on_loss == "true",
        )

    def open_log(self) -> TopicLog:
        """A topic log for this process (driver or executor): clients never cross processes."""
        if self.transport == "kafka":
            from cdc.log.kafka import KafkaLog

            return KafkaLog(self.bootstrap_servers or "", common=dict(self.kafka))
        from cdc.log.embedded import EmbeddedLog

        return EmbeddedLog(self.state_dir or "", auto_create_topics=False)

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics
