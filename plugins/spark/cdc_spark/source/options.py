"""The `cdc` source's options, parsed once on the driver and shipped to executors as a dict.

Names and meanings follow Spark's Kafka source where they overlap (`subscribe`,
`subscribePattern`, `startingOffsets`, `maxOffsetsPerTrigger`, `failOnDataLoss`,
`includeHeaders`, `kafka.*`). Every option is checked: an unknown, misspelled or unsupported
one is refused with the fix, never ignored.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cdc.log import TopicLog
from cdc_spark.decode import unavailable


class SourceOptionError(ValueError):
    """An option of `readStream.format("cdc")` is missing or wrong; the message says which."""


# Every option this source reads (lower-cased, as Spark hands them over), spelled for messages.
_KNOWN = {
    name.lower(): name
    for name in (
        "transport",
        "state.dir",
        "bootstrap.servers",
        "topics",
        "subscribe",
        "topic.pattern",
        "subscribePattern",
        "watermark.topic",
        "startingOffsets",
        "maxEventsPerTrigger",
        "maxOffsetsPerTrigger",
        "pollTimeoutMs",
        "kafkaConsumer.pollTimeoutMs",
        "idleTimeoutMs",
        "probeEndOffsets",
        "decode",
        "latestPerKey",
        "unavailable.value.placeholder",
        "schemas.enable",
        "includeHeaders",
        "failOnDataLoss",
        "schema.registry.url",
        "basic.auth.credentials.source",
        "basic.auth.user.info",
    )
}
# schema.registry.<setting> (ssl.*, basic.auth.user.info…): the Avro decoding's registry client (AvroConverter's keys).
_REGISTRY_PREFIX = "schema.registry."
DECODINGS = ("none", "debezium-json", "debezium-avro")
_NO_GROUP = (
    "is not supported: this source reads with assign() and no consumer group (no group is joined and no offset "
    "is committed; the query's offsets live in its checkpoint only). Drop it"
)
# Options of Spark's Kafka source (or Kafka clients) that this source does not take, and what to do instead.
_UNSUPPORTED = {
    "path": "the cdc source takes no path: call load() without one and name the topics with the option topics",
    "assign": "assign is not supported: name whole topics with topics (every partition is read)",
    "endingoffsets": (
        "endingOffsets is for batch queries (Spark's Kafka source refuses it for streams too); "
        "to read up to the current end and stop, start the query with Trigger.AvailableNow"
    ),
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp is not supported; stop at the end with Trigger.AvailableNow",
    "endingtimestamp": "endingTimestamp is not supported; use Trigger.AvailableNow to stop at the current end",
    "startingtimestamp": "startingTimestamp is not supported: use startingOffsets=earliest or latest",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp is not supported: use startingOffsets=earliest or latest",
    "startingoffsetsbytimestampstrategy": "startingOffsetsByTimestampStrategy is not supported",
    "minoffsetspertrigger": "minOffsetsPerTrigger is not supported: every trigger reads what is there (up to "
    "maxEventsPerTrigger); use a processingTime trigger to batch up more",
    "maxtriggerdelay": "maxTriggerDelay is not supported (it belongs to minOffsetsPerTrigger)",
    "groupidprefix": f"groupIdPrefix {_NO_GROUP}",
    "kafka.group.id": f"kafka.group.id {_NO_GROUP}",
    "kafka.auto.offset.reset": "kafka.auto.offset.reset is not supported: set the source option startingOffsets "
    "to earliest or latest (as with Spark's Kafka source)",
    "kafka.enable.auto.commit": "kafka.enable.auto.commit is not supported: no offset is committed to Kafka; "
    "the query's progress is in its checkpoint",
    "kafka.key.deserializer": "kafka.key.deserializer is not supported: keys are read as binary; decode them "
    "with DataFrame operations (or decode=debezium-json)",
    "kafka.value.deserializer": "kafka.value.deserializer is not supported: values are read as binary; decode "
    "them with DataFrame operations (or decode=debezium-json)",
    "kafka.interceptor.classes": "kafka.interceptor.classes is not supported (a Java client setting)",
}
# kafka.<name>: a librdkafka setting, given to every client (the refused ones above aside).
_KAFKA_PREFIX = "kafka."


@dataclass(frozen=True)
class SourceOptions:
    transport: str = "embedded"
    state_dir: str | None = None
    bootstrap_servers: str | None = None
    kafka: Mapping[str, str] = field(default_factory=dict)
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    # a topic of watermark records (cdc.api.WATERMARK_HEADER: Debezium's heartbeats): planned with the
    # data topics so that each batch's checkpoint says which watermark the batch covers, but not read
    watermark_topic: str | None = None
    starting: str = "earliest"
    max_events: int | None = None
    poll_timeout: float = 10.0  # first fetch of a partition (a broker may be slow to answer)
    idle_timeout: float = 1.0  # then: an empty poll this long ends a partition below its end mark
    # correct the reported ends by one bounded read (brokers with a wrong high watermark, e.g. Tansu 0.6; not Kafka)
    probe_end_offsets: bool = False
    decode: str = "none"  # "debezium-json"/"debezium-avro": emit decoded change rows (DECODED_SCHEMA), not raw records
    latest_per_key: bool = False  # with decode: only each key's latest event per partition and batch
    # with latestPerKey: a key whose latest event carries it keeps its earlier events (they hold the value)
    unavailable_value_placeholder: str = unavailable.DEFAULT
    schemas_enable: bool | None = None
    include_headers: bool = False  # a `headers` column, as Spark's Kafka source with includeHeaders=true
    fail_on_data_loss: bool = True  # records deleted before they were read stop the query (Spark's Kafka source)
    # decode=debezium-avro: schema.registry.url and the registry client's settings (none: the embedded log's registry)
    registry: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        opts = _lowered(options)  # Spark hands options over lower-cased; a plain dict may not be
        _check_names(opts)
        transport = _choice(opts, "transport", "embedded", ("embedded", "kafka"))
        bootstrap = _alias(opts, "bootstrap.servers", "kafka.bootstrap.servers")
        _check_transport(opts, transport, bootstrap)
        topics = tuple(t.strip() for t in (_alias(opts, "topics", "subscribe") or "").split(",") if t.strip())
        pattern = (_alias(opts, "topic.pattern", "subscribePattern") or "").strip() or None
        if bool(topics) == bool(pattern):
            raise SourceOptionError(
                "set exactly one of the options topics (a comma list; Spark's name: subscribe) or topic.pattern "
                "(a regex; Spark's name: subscribePattern)"
            )
        if pattern:
            try:
                re.compile(pattern)
            except re.error as e:
                raise SourceOptionError(f"option topic.pattern={pattern!r} is not a valid regex: {e}") from e
        watermark = (opts.get("watermark.topic") or "").strip() or None
        if watermark is not None and (watermark in topics or (pattern and re.fullmatch(pattern, watermark))):
            raise SourceOptionError(
                f"option watermark.topic={watermark!r} is also one of the topics the stream reads: its records are "
                "positions, not changes; leave it out of topics / topic.pattern"
            )
        decode = _choice(opts, "decode", "none", DECODINGS)
        latest = _flag(opts, "latestPerKey", False)
        if latest and decode == "none":
            raise SourceOptionError("option latestPerKey=true needs decode=debezium-json or decode=debezium-avro")
        registry = {k: v for k, v in opts.items() if k.startswith(_REGISTRY_PREFIX) or k.startswith("basic.auth.")}
        if decode == "debezium-avro" and transport == "kafka" and not registry.get("schema.registry.url"):
            raise SourceOptionError(
                "decode=debezium-avro with transport=kafka needs the option schema.registry.url (the Schema Registry "
                "the connector's AvroConverter writes to)"
            )
        max_events = _alias(opts, "maxEventsPerTrigger", "maxOffsetsPerTrigger")
        placeholder = opts.get("unavailable.value.placeholder", unavailable.DEFAULT)
        try:
            unavailable.Placeholder.parse(placeholder)
        except ValueError as e:
            raise SourceOptionError(f"option unavailable.value.placeholder: {e}") from None
        return cls(
            transport=transport,
            state_dir=opts.get("state.dir"),
            bootstrap_servers=bootstrap,
            kafka={
                k[len(_KAFKA_PREFIX) :]: v
                for k, v in opts.items()
                if k.startswith(_KAFKA_PREFIX) and k != "kafka.bootstrap.servers"
            },
            topics=topics,
            pattern=pattern,
            watermark_topic=watermark,
            starting=_starting(opts),
            max_events=None
            if max_events is None
            else _positive_int(opts, "maxEventsPerTrigger", "maxOffsetsPerTrigger"),
            poll_timeout=_positive_ms(opts, 10_000, "pollTimeoutMs", "kafkaConsumer.pollTimeoutMs"),
            idle_timeout=_positive_ms(opts, 1_000 if transport == "kafka" else 200, "idleTimeoutMs"),
            probe_end_offsets=_flag(opts, "probeEndOffsets", False),
            decode=decode,
            latest_per_key=latest,
            unavailable_value_placeholder=placeholder,
            schemas_enable=_flag(opts, "schemas.enable", None),
            include_headers=_flag(opts, "includeHeaders", False),
            fail_on_data_loss=_flag(opts, "failOnDataLoss", True),
            registry=registry,
        )

    def open_log(self) -> TopicLog:
        """A topic log for this process (driver or executor): clients never cross processes."""
        if self.transport == "kafka":
            return self._open_kafka()
        from cdc.log.embedded import DB_FILE, EmbeddedLog

        # Opening would create an empty log under a mistyped path, and the query would wait forever.
        if not (Path(self.state_dir or "") / DB_FILE).exists():
            raise SourceOptionError(
                f"option state.dir={self.state_dir!r} holds no topic log (no {DB_FILE}): check the path; it is the "
                "state.dir of the worker or job whose connector writes the topics (it creates the log)"
            )
        return EmbeddedLog(self.state_dir or "", auto_create_topics=False)

    def _open_kafka(self) -> TopicLog:
        from confluent_kafka import KafkaException

        from cdc.log.kafka import KafkaLog

        # The reader's consumer gets them too: its defaults (isolation.level) would override them otherwise.
        try:
            return KafkaLog(self.bootstrap_servers or "", common=dict(self.kafka), consumer=dict(self.kafka))
        except KafkaException as e:
            text = e.args[0].str()
            quoted = re.findall(r'"([^"]+)"', text)  # librdkafka quotes the setting it refuses last
            which = f"option kafka.{quoted[-1]}" if quoted else "a kafka.* option"
            raise SourceOptionError(
                f"{which} was refused by the Kafka client (librdkafka): {text}. Options kafka.<name> pass <name> "
                "to librdkafka, which takes librdkafka's settings (CONFIGURATION.md), not the Java client's; "
                "fix or drop it"
            ) from None

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics


def _lowered(options: Mapping[str, str]) -> dict[str, str]:
    """The options with lower-cased names; one name set twice with different values is refused."""
    out: dict[str, str] = {}
    for key, value in options.items():
        k, v = str(key).lower(), str(value)
        if k in out and out[k] != v:
            raise SourceOptionError(f"option {k} is set twice ({out[k]!r} and {v!r}); option names ignore case")
        out[k] = v
    return out


def _check_names(opts: Mapping[str, str]) -> None:
    for name in opts:
        if name in _UNSUPPORTED:
            raise SourceOptionError(f"option {_UNSUPPORTED[name]}")
        if name in _KNOWN or name.startswith((_KAFKA_PREFIX, _REGISTRY_PREFIX)):
            continue
        close = difflib.get_close_matches(name, _KNOWN, n=1, cutoff=0.8)
        hint = f"did you mean {_KNOWN[close[0]]}? " if close else ""
        raise SourceOptionError(
            f"unknown option {name} of the cdc source: {hint}The options are {', '.join(sorted(_KNOWN.values()))} "
            "and kafka.<librdkafka setting>"
        )


def _check_transport(opts: Mapping[str, str], transport: str, bootstrap: str | None) -> None:
    """Each transport needs its own location and takes no option of the other one."""
    kafka_opts = sorted(k for k in opts if k == "bootstrap.servers" or k.startswith(_KAFKA_PREFIX))
    if transport == "embedded":
        if kafka_opts:
            raise SourceOptionError(
                f"option {kafka_opts[0]} is for transport=kafka, but transport is embedded "
                f"({'as set' if 'transport' in opts else 'the default'}): set transport=kafka to read from Kafka, "
                "or drop the kafka options to read the embedded log in state.dir"
            )
        if not opts.get("state.dir"):
            raise SourceOptionError("transport=embedded needs the option state.dir (the directory holding cdc.db)")
    else:
        if "state.dir" in opts:
            raise SourceOptionError("option state.dir is for transport=embedded; drop it with transport=kafka")
        if not bootstrap:
            raise SourceOptionError("transport=kafka needs the option bootstrap.servers (host:port,...)")


def _alias(opts: Mapping[str, str], name: str, alias: str) -> str | None:
    """The value of an option that has a second (Spark's) name; both set must agree."""
    a, b = opts.get(name.lower()), opts.get(alias.lower())
    if a is not None and b is not None and a.strip() != b.strip():
        raise SourceOptionError(
            f"options {name} and {alias} are the same option, set to {a!r} and {b!r}: set only one of them"
        )
    return a if a is not None else b


def _choice(opts: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = opts.get(name.lower(), default).strip().lower()
    if value not in allowed:
        raise SourceOptionError(f"option {name}={value!r}: use {' or '.join(allowed)}")
    return value


def _starting(opts: Mapping[str, str]) -> str:
    value = opts.get("startingoffsets", "earliest").strip().lower()
    if value in ("earliest", "latest"):
        return value
    if value.startswith("{"):
        raise SourceOptionError(
            f"option startingOffsets={value!r}: per-partition JSON offsets are not supported; use earliest or latest "
            "(a query started once resumes from its checkpoint, whatever startingOffsets says)"
        )
    raise SourceOptionError(f"option startingOffsets={value!r}: use 'earliest' or 'latest'")


def _flag(opts: Mapping[str, str], name: str, default: bool | None) -> bool | None:
    """A boolean option: true or false (any case); anything else is refused, not taken as false."""
    raw = opts.get(name.lower())
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise SourceOptionError(f"option {name}={raw!r}: use true or false")
    return value == "true"


def _given(opts: Mapping[str, str], *names: str) -> tuple[str, str]:
    """The name the user set (for the message) and its value."""
    for name in names:
        if name.lower() in opts:
            return name, opts[name.lower()]
    raise KeyError(names[0])


def _positive_int(opts: Mapping[str, str], *names: str) -> int:
    name, raw = _given(opts, *names)
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise SourceOptionError(f"option {name}={raw!r} must be a positive integer (records per micro-batch)")
    return value


def _positive_ms(opts: Mapping[str, str], default_ms: int, *names: str) -> float:
    """A timeout in milliseconds, returned in seconds."""
    try:
        name, raw = _given(opts, *names)
    except KeyError:
        return default_ms / 1000
    try:
        value = float(raw.strip())
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise SourceOptionError(f"option {name}={raw!r} must be a positive number of milliseconds")
    return value / 1000
