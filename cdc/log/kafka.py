"""The Kafka transport, through confluent-kafka (librdkafka).

Producers are idempotent and use `murmur2_random`, so keyed placement matches Java
clients and the embedded log. Readers use assign/seek; sinks use real consumer groups.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka import TopicPartition as KTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from cdc.api.kafka_clients import librdkafka_config
from cdc.log.base import (
    DeliveryCallback,
    ErrorCallback,
    GroupConsumer,
    LogError,
    LogProducer,
    LogReader,
    LogRecord,
    OutgoingRecord,
    RebalanceListener,
    SuccessCallback,
    TopicDescription,
    TopicLog,
    TopicPartition,
    TopicSpec,
)

log = logging.getLogger(__name__)
_rdkafka_log = logging.getLogger("cdc.log.kafka.librdkafka")

# Settings a user may not override: without them ordering and placement guarantees break.
_PRODUCER_ENFORCED = {"enable.idempotence": True, "partitioner": "murmur2_random", "acks": "all"}


# How long inspection commands keep trying once librdkafka reports every broker down.
_ALL_DOWN_GRACE = 2.0


def _error_text(err: Any) -> str:
    return err.str() if hasattr(err, "str") else str(err)


class KafkaLog(TopicLog):
    """`bootstrap.servers` plus optional `producer.`/`consumer.`/`admin.` client settings."""

    name = "kafka"

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        common: Mapping[str, Any] | None = None,
        producer: Mapping[str, Any] | None = None,
        consumer: Mapping[str, Any] | None = None,
        admin: Mapping[str, Any] | None = None,
        request_timeout: float = 30.0,
    ) -> None:
        if not bootstrap_servers:
            raise LogError("bootstrap.servers is required with transport=kafka; set it to host:port of a broker")
        self.bootstrap_servers = bootstrap_servers
        # librdkafka's own log lines go through Python logging (format, level, capture)
        # instead of raw "%3|…" lines on stderr.
        # Settings may use the Java client's names (worker.properties, Debezium configs): translated.
        common_conf = librdkafka_config(common or {}, "kafka.")
        self._common = {"bootstrap.servers": bootstrap_servers, "logger": _rdkafka_log, **common_conf}
        self._producer_conf = librdkafka_config(producer or {}, "producer.")
        self._consumer_conf = librdkafka_config(consumer or {}, "consumer.")
        self._timeout = request_timeout
        self._admin_conf = librdkafka_config(admin or {}, "admin.")
        self._admin = AdminClient({**self._common, **self._admin_conf})

    # -- admin -------------------------------------------------------------------------------
    def probe(self, within: float) -> None:
        # librdkafka retries an unreachable broker until the request times out (30 s), and the
        # timeout names no cause; its error callback says "connection refused" at once.
        errors: list[KafkaError] = []
        # Its causes go into the error message, so librdkafka's own log lines stay quiet.
        admin = AdminClient({**self._common, **self._admin_conf, "error_cb": errors.append, "log_level": 0})
        start = time.monotonic()
        while True:
            try:
                admin.list_topics(timeout=min(1.0, within))
                return
            except KafkaException as e:
                last = e.args[0]
            admin.poll(0)  # serves error_cb
            elapsed = time.monotonic() - start
            all_down = any(err.code() == KafkaError._ALL_BROKERS_DOWN for err in errors)
            if elapsed >= within or (all_down and elapsed >= min(_ALL_DOWN_GRACE, within)):
                causes = [err for err in errors if err.code() != KafkaError._ALL_BROKERS_DOWN]
                # "host:port/bootstrap: Connect to … failed: Connection refused …" → from "Connect".
                cause = re.sub(r"^\S+/\S+: ", "", _error_text(causes[-1] if causes else last))
                protocol = str(self._common.get("security.protocol", "plaintext")).upper()
                raise LogError(
                    f"cannot reach Kafka at {self.bootstrap_servers} over {protocol} within {elapsed:.0f} s: "
                    f"{cause}; check bootstrap.servers, that a broker is up and listens for {protocol} there, "
                    "and the security.protocol, sasl.* and ssl.* settings"
                )

    def create_topics(self, specs: Sequence[TopicSpec]) -> list[str]:
        existing = self.list_topics()
        new = [s for s in specs if s.name not in existing]
        if not new:
            return []
        futures = self._admin.create_topics(
            [NewTopic(s.name, s.partitions, s.replication_factor, config=dict(s.config)) for s in new],
            request_timeout=self._timeout,
        )
        created: list[str] = []
        for name, fut in futures.items():
            try:
                fut.result()
                created.append(name)
            except KafkaException as e:
                err = e.args[0]
                if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    continue
                raise LogError(f"cannot create topic {name!r}: {_error_text(err)}") from e
        return created

    def list_topics(self) -> dict[str, TopicDescription]:
        try:
            md = self._admin.list_topics(timeout=self._timeout)
        except KafkaException as e:
            raise LogError(
                f"cannot reach Kafka at {self.bootstrap_servers}: {_error_text(e.args[0])}; "
                "check bootstrap.servers and that the broker is up"
            ) from e
        return {
            name: TopicDescription(name, len(t.partitions), internal=name.startswith("__"))
            for name, t in md.topics.items()
            if t.error is None or t.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART
        }

    def describe_topic(self, name: str) -> TopicDescription | None:
        # Full metadata, not a per-topic request: brokers with auto-creation (Tansu, or
        # auto.create.topics.enable) would create the topic just because we asked about it.
        try:
            md = self._admin.list_topics(timeout=self._timeout)
        except KafkaException as e:
            raise LogError(f"cannot describe topic {name!r}: {_error_text(e.args[0])}") from e
        t = md.topics.get(name)
        if t is None or t.error is not None or not t.partitions:
            return None
        return TopicDescription(name, len(t.partitions))

    def _list_offsets(self, tps: Iterable[TopicPartition], spec: OffsetSpec) -> dict[TopicPartition, int]:
        tps = list(tps)
        if not tps:
            return {}
        futures = self._admin.list_offsets(
            {KTopicPartition(tp.topic, tp.partition): spec for tp in tps}, request_timeout=self._timeout
        )
        out: dict[TopicPartition, int] = {}
        for ktp, fut in futures.items():
            try:
                out[TopicPartition(ktp.topic, ktp.partition)] = fut.result().offset
            except KafkaException as e:
                raise LogError(f"cannot list offsets of {ktp.topic}-{ktp.partition}: {_error_text(e.args[0])}") from e
        return out

    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list_offsets(tps, OffsetSpec.latest())

    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list_offsets(tps, OffsetSpec.earliest())

    def delete_records(self, before: Mapping[TopicPartition, int]) -> None:
        futures = self._admin.delete_records(
            [KTopicPartition(tp.topic, tp.partition, off) for tp, off in before.items()],
            request_timeout=self._timeout,
        )
        for ktp, fut in futures.items():
            try:
                fut.result()
            except KafkaException as e:
                raise LogError(f"cannot delete records of {ktp.topic}-{ktp.partition}: {_error_text(e.args[0])}") from e

    # -- clients -----------------------------------------------------------------------------
    def producer(self, transactional_id: str | None = None, **overrides: str) -> KafkaProducer:
        overrides = librdkafka_config(overrides, "producer.override.")
        conf: dict[str, Any] = {**self._common, **self._producer_conf, **overrides, **_PRODUCER_ENFORCED}
        if transactional_id:
            conf["transactional.id"] = transactional_id
        return KafkaProducer(conf, self._timeout)

    def _consumer_config(self, group_id: str, overrides: Mapping[str, str]) -> dict[str, Any]:
        return {
            **self._common,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            **self._consumer_conf,
            **librdkafka_config(overrides, "consumer.override."),
            "group.id": group_id,
        }

    def reader(self, **overrides: str) -> KafkaReader:
        # librdkafka wants a group.id even for assign(); it is never joined or committed.
        return KafkaReader(Consumer(self._consumer_config(f"cdc-reader-{uuid.uuid4().hex[:12]}", overrides)))

    def group_consumer(
        self,
        group_id: str,
        topics: Sequence[str] = (),
        pattern: str | None = None,
        on_rebalance: RebalanceListener | None = None,
        member: tuple[int, int] = (0, 1),
        **overrides: str,
    ) -> KafkaGroupConsumer:
        conf = self._consumer_config(group_id, overrides)
        return KafkaGroupConsumer(Consumer(conf), topics, pattern, on_rebalance, self._timeout)

    def close(self) -> None:
        pass


class KafkaProducer(LogProducer):
    def __init__(self, conf: dict[str, Any], timeout: float) -> None:
        self._timeout = timeout
        self._transactional = "transactional.id" in conf
        try:
            self._p = Producer(conf)
            if self._transactional:
                self._p.init_transactions(timeout)
        except KafkaException as e:
            raise LogError(f"cannot create a Kafka producer: {_error_text(e.args[0])}") from e

    @property
    def transactional(self) -> bool:
        return self._transactional

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
        partition: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {"value": value, "key": key}
        if headers:
            kwargs["headers"] = list(headers)
        if timestamp is not None:
            kwargs["timestamp"] = timestamp
        if partition is not None:
            kwargs["partition"] = partition
        if on_delivery is not None:
            kwargs["on_delivery"] = _delivery_adapter(on_delivery, key, value, tuple(headers))
        while True:
            try:
                self._p.produce(topic, **kwargs)
                return
            except BufferError:
                # Bounded in-flight memory: wait for acks to free the local queue.
                self._p.poll(0.1)
            except KafkaException as e:
                raise LogError(f"cannot produce to {topic!r}: {_error_text(e.args[0])}") from e

    def send_many(
        self,
        records: Sequence[OutgoingRecord],
        on_error: ErrorCallback | None = None,
        on_success: SuccessCallback | None = None,
    ) -> None:
        callback = None if on_error is None and on_success is None else _outcome_adapter(on_error, on_success)
        produce = self._p.produce
        for topic, value, key, headers, timestamp, partition in records:
            while True:
                try:
                    produce(
                        topic,
                        value,
                        key,
                        partition=-1 if partition is None else partition,  # -1: librdkafka's partitioner
                        on_delivery=callback,
                        timestamp=timestamp or 0,  # 0: now
                        headers=list(headers) if headers else None,
                    )
                    break
                except BufferError:
                    self._p.poll(0.1)  # bounded in-flight memory, as in send()
                except KafkaException as e:
                    raise LogError(f"cannot produce to {topic!r}: {_error_text(e.args[0])}") from e

    def poll(self, timeout: float = 0.0) -> None:
        self._p.poll(timeout)

    def flush(self, timeout: float | None = None) -> int:
        return self._p.flush(self._timeout if timeout is None else timeout)

    def begin_transaction(self) -> None:
        self._p.begin_transaction()

    def commit_transaction(self, timeout: float | None = None) -> None:
        try:
            self._p.commit_transaction(self._timeout if timeout is None else timeout)
        except KafkaException as e:
            raise LogError(f"transaction commit failed: {_error_text(e.args[0])}") from e

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._p.abort_transaction(self._timeout if timeout is None else timeout)

    def close(self) -> None:
        self._p.flush(self._timeout)


def _delivery_adapter(
    cb: DeliveryCallback, key: bytes | None, value: bytes | None, headers: tuple[tuple[str, bytes | None], ...]
) -> Any:
    # Key, value and headers come from the send call: reading them back from the Message
    # would copy every payload a second time.
    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            cb(None, LogError(f"delivery to {msg.topic()} failed: {_error_text(err)}"))
            return
        cb(LogRecord(msg.topic(), msg.partition(), msg.offset(), key, value, headers, msg.timestamp()[1]), None)

    return on_delivery


def _outcome_adapter(on_error: ErrorCallback | None, on_success: SuccessCallback | None) -> Any:
    # One callback for a whole send_many: a delivered message costs no LogRecord.
    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            if on_error is not None:
                on_error(LogError(f"delivery to {msg.topic()} failed: {_error_text(err)}"))
        elif on_success is not None:
            on_success()

    return on_delivery


def _to_records(msgs: list[Any]) -> list[LogRecord]:
    out: list[LogRecord] = []
    for m in msgs:
        err = m.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                continue
            if err.retriable() or err.code() == KafkaError._TRANSPORT:
                log.warning("transient Kafka read error: %s", _error_text(err))
                continue
            raise LogError(f"Kafka read error on {m.topic()}-{m.partition()}: {_error_text(err)}")
        out.append(
            LogRecord(
                m.topic(), m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1]
            )
        )
    return out


class KafkaReader(LogReader):
    def __init__(self, consumer: Consumer) -> None:
        self._c = consumer
        self._positions: dict[TopicPartition, int] = {}

    def assign(self, positions: Mapping[TopicPartition, int]) -> None:
        self._positions = dict(positions)
        self._c.assign([KTopicPartition(tp.topic, tp.partition, _koffset(off)) for tp, off in positions.items()])

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._positions[tp] = offset
        # assign() again rather than seek(): seek() fails on a partition not yet fetched.
        self.assign(self._positions)

    def position(self, tp: TopicPartition) -> int:
        return self._positions[tp]

    def assignment(self) -> list[TopicPartition]:
        return list(self._positions)

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        records = _to_records(self._c.consume(max_records, timeout))
        for r in records:
            self._positions[TopicPartition(r.topic, r.partition)] = r.offset + 1
        # librdkafka's position also moves past transaction markers, which are never
        # delivered; without it a reader would stop one short of a transactional topic's end.
        if self._positions:
            for p in self._c.position([KTopicPartition(tp.topic, tp.partition) for tp in self._positions]):
                tp = TopicPartition(p.topic, p.partition)
                if p.offset >= 0 and p.offset > self._positions.get(tp, -1):
                    self._positions[tp] = p.offset
        return records

    def close(self) -> None:
        self._c.close()


def _koffset(offset: int) -> int:
    # Negative sentinels keep Kafka's meaning (-2 earliest, -1 latest).
    return {-2: OFFSET_BEGINNING, -1: OFFSET_END}.get(offset, offset)


class KafkaGroupConsumer(GroupConsumer):
    def __init__(
        self,
        consumer: Consumer,
        topics: Sequence[str],
        pattern: str | None,
        on_rebalance: RebalanceListener | None,
        timeout: float,
    ) -> None:
        self._c = consumer
        self._timeout = timeout
        self._assigned: set[TopicPartition] = set()
        self._on_rebalance = on_rebalance
        subscription = list(topics) if not pattern else ["^" + pattern.removeprefix("^")]
        self._c.subscribe(subscription, on_assign=self._assign_cb, on_revoke=self._revoke_cb)

    def _assign_cb(self, consumer: Consumer, parts: list[KTopicPartition]) -> None:
        added = [TopicPartition(p.topic, p.partition) for p in parts]
        self._assigned |= set(added)
        # confluent-kafka applies the assignment itself once this callback returns.
        if self._on_rebalance is not None:
            self._on_rebalance(added, [])

    def _revoke_cb(self, consumer: Consumer, parts: list[KTopicPartition]) -> None:
        revoked = [TopicPartition(p.topic, p.partition) for p in parts]
        self._assigned -= set(revoked)
        if self._on_rebalance is not None:
            self._on_rebalance([], revoked)

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        return _to_records(self._c.consume(max_records, timeout))

    def assignment(self) -> list[TopicPartition]:
        return sorted(self._assigned)

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        if not offsets:
            return
        try:
            self._c.commit(
                offsets=[KTopicPartition(tp.topic, tp.partition, off) for tp, off in offsets.items()],
                asynchronous=False,
            )
        except KafkaException as e:
            raise LogError(f"offset commit failed: {_error_text(e.args[0])}") from e

    def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        parts = self._c.committed([KTopicPartition(tp.topic, tp.partition) for tp in tps], timeout=self._timeout)
        return {TopicPartition(p.topic, p.partition): (p.offset if p.offset >= 0 else None) for p in parts}

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._c.seek(KTopicPartition(tp.topic, tp.partition, offset))

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        self._c.pause([KTopicPartition(tp.topic, tp.partition) for tp in tps])

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        self._c.resume([KTopicPartition(tp.topic, tp.partition) for tp in tps])

    def close(self) -> None:
        self._c.close()
