"""Keys and values as `cdc topics read` prints them: Confluent Avro decoded, anything else as before.

A record in Confluent's wire format (magic byte 0, a 4-byte schema id, the Avro body) is read
with `io.confluent.connect.avro.AvroConverter` against the registry its worker writes to: the
converters' `schema.registry.url`, else, on the embedded transport, the log's own registry in
the same file. It is printed as the Connect value in Kafka's JsonConverter form without schema
(the JSON job's payload: what a JSON job would have written), like Confluent's
kafka-avro-console-consumer prints a record as JSON. Other records print as `decode_bytes`
shows them. When the worker's converter for the role is AvroConverter, a record that is not in
the wire format is an error naming the topic, partition, offset and its first bytes; so is a
schema id the registry does not know.
"""

from __future__ import annotations

import json
from typing import Any

from cdc.api.errors import ConnectException
from cdc.cli._common import decode_bytes
from cdc.log.base import TopicLog
from cdc.runtime.worker_config import WorkerConfig

_AVRO = {"io.confluent.connect.avro.avroconverter", "avro", "avroconverter"}


class RecordTextError(Exception):
    """A record `topics read` cannot show; the message names where it is."""


def _class_name(value: Any) -> str:
    """A converter setting's class name (the worker config holds a name or the class itself)."""
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return str(value or "")


def _is_avro(value: Any) -> bool:
    name = _class_name(value).lower()
    return name in _AVRO or name.endswith(".avroconverter")


class RecordText:
    """Per role (key, value): the converter's Avro reading, when the record or the worker needs it."""

    def __init__(self, config: WorkerConfig, log_: TopicLog) -> None:
        self.config = config
        self.log = log_
        self.declared = {role: _is_avro(config.get(f"{role}.converter")) for role in ("key", "value")}
        self._avro: dict[str, Any] = {}
        self._json: dict[str, Any] = {}
        self._store: Any = None

    def _converters(self, role: str) -> tuple[Any, Any]:
        if role not in self._avro:
            from cdc.converters.avro import AvroConverter
            from cdc.converters.json import JsonConverter

            avro = AvroConverter()
            configs = self.config.converter_configs(f"{role}.converter") if self.declared[role] else {}
            if not configs.get("schema.registry.url"):
                configs = {k: v for k, v in configs.items() if k != "schema.registry.url"}
                from cdc.log.schema_registry import open_schema_registry

                if self._store is None:
                    self._store = open_schema_registry(self.log)
                if self._store is not None:
                    from cdc.log.schema_registry_client import EmbeddedSchemaRegistryClient

                    avro.use_registry(EmbeddedSchemaRegistryClient(self._store))
            avro.configure(configs, role == "key")
            plain = JsonConverter()
            plain.configure({"schemas.enable": "false", "replace.null.with.default": "false"}, role == "key")
            self._avro[role], self._json[role] = avro, plain
        return self._avro[role], self._json[role]

    def show(self, topic: str, partition: int, offset: int, role: str, data: bytes | None) -> Any:
        """The record's key or value (`role`) as printable JSON data."""
        if data is None:
            return None
        wire = len(data) >= 5 and data[0] == 0
        if not wire and not self.declared[role]:
            return decode_bytes(data)
        where = f"{topic}-{partition}@{offset}"
        if not wire:
            raise RecordTextError(
                f"{where}: the record {role} is not Confluent Avro although the {role}.converter is AvroConverter"
                f" (expected magic byte 0x00 and a 4-byte schema id; first bytes: {data[:16].hex(' ')},"
                f" {len(data)} bytes in all)"
            )
        avro, plain = self._converters(role)
        try:
            connect = avro.to_connect_data(topic, data)
            text = plain.from_connect_data(topic, connect.schema, connect.value)
        except ConnectException as e:
            if not self.declared[role] and "schema.registry.url is not set" in str(e):
                return decode_bytes(data)  # Avro-looking bytes and no registry to read them: as they are
            raise RecordTextError(f"{where}: the record {role}: {e}") from None
        return None if text is None else json.loads(text)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
