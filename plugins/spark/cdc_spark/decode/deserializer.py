"""Turning record bytes into the key and the Debezium envelope: pluggable per format (JSON, Avro)."""

from __future__ import annotations

from typing import Any, Protocol

from cdc_spark.decode.envelope import EnvelopeReader


class DeserializeError(ValueError):
    """The bytes are not a readable record; the message is what goes to the dead-letter table."""


class Deserializer(Protocol):
    """Decodes one record. Must be picklable: it runs in Spark's Python workers."""

    def key(self, topic: str, data: bytes | None) -> Any: ...

    def value(self, topic: str, data: bytes) -> Any: ...


class JsonDeserializer:
    """Kafka JsonConverter output, with or without schemas.

    `schemas_enable=None` detects the `{"schema":…,"payload":…}` envelope per record, so a
    job can read topics written either way.
    """

    def __init__(self, schemas_enable: bool | None = None) -> None:
        self.schemas_enable = schemas_enable
        self._readers: dict[str, EnvelopeReader] = {}

    def _payload(self, topic: str, data: bytes, what: str) -> Any:
        reader = self._readers.get(what)
        if reader is None:
            reader = self._readers[what] = EnvelopeReader()
        try:
            enveloped, _, payload = reader.read(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise DeserializeError(f"malformed JSON in the record {what} of topic {topic}: {e}") from e
        if self.schemas_enable and not enveloped:
            raise DeserializeError(
                f"the record {what} of topic {topic} has no schema/payload envelope; "
                "set schemas.enable=false (or leave it unset to detect) for plain JSON"
            )
        if enveloped and self.schemas_enable is False:  # plain JSON that merely looks enveloped
            return {"schema": reader.read(data)[1], "payload": payload}
        return payload

    def key(self, topic: str, data: bytes | None) -> Any:
        return None if data is None else self._payload(topic, data, "key")

    def value(self, topic: str, data: bytes) -> Any:
        return self._payload(topic, data, "value")
