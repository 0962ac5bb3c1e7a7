"""confluent-kafka's `SchemaRegistryClient`, in process, over the embedded log's registry.

`EmbeddedSchemaRegistryClient` has the methods of
`confluent_kafka.schema_registry.SchemaRegistryClient` that serializers and converters call,
with the same signatures and return types (`Schema`, `RegisteredSchema`) and the same errors
(`confluent_kafka.schema_registry.error.SchemaRegistryError` with Confluent's codes), but it
reads and writes `cdc.log.schema_registry.SchemaRegistryStore` directly: a worker on the
embedded transport registers its converters' schemas without an HTTP round trip to itself,
and an AvroConverter written for a `SchemaRegistryClient` works unchanged (duck typing: the
real client class opens an HTTP client in its constructor, so this one does not subclass it).

Like Confluent's client it caches: a schema by id for good (an id never changes meaning), a
subject's registration of a schema until this client deletes in that subject.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Literal, TypeVar

from confluent_kafka.schema_registry import RegisteredSchema, Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError as ClientError

from cdc.log.schema_registry import RegisteredVersion, SchemaRegistryError, SchemaRegistryStore

T = TypeVar("T")


def _client_error(fn: Callable[[], T]) -> T:
    """`fn()`, with the store's errors raised as confluent-kafka's `SchemaRegistryError`."""
    try:
        return fn()
    except SchemaRegistryError as e:
        raise ClientError(e.status, e.error_code, e.message) from None


def _schema_str(schema: Schema) -> str:
    if schema.schema_str is None:
        raise ClientError(422, 42201, "Invalid schema: Schema.schema_str is None")
    return schema.schema_str


def _registered(v: RegisteredVersion) -> RegisteredSchema:
    return RegisteredSchema(
        schema_id=v.id,
        guid=None,
        schema=Schema(v.schema, v.schema_type, []),
        subject=v.subject,
        version=v.version,
    )


def _page(items: list[T], offset: int, limit: int) -> list[T]:
    return items[offset:] if limit < 0 else items[offset : offset + limit]


class EmbeddedSchemaRegistryClient:
    """confluent-kafka's SchemaRegistryClient API over a SchemaRegistryStore (see the module docstring)."""

    def __init__(self, store: SchemaRegistryStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._ids: dict[tuple[str, str, str, bool], RegisteredSchema] = {}
        self._schemas: dict[int, Schema] = {}

    def __enter__(self) -> EmbeddedSchemaRegistryClient:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release: the store belongs to whoever opened it (the worker)."""

    def _forget(self, subject: str) -> None:
        with self._lock:
            for key in [k for k in self._ids if k[0] == subject]:
                del self._ids[key]

    # -- registering -------------------------------------------------------------------------
    def register_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False) -> int:
        """`POST /subjects/{subject}/versions`: the schema's global id."""
        registered = self.register_schema_full_response(subject_name, schema, normalize_schemas)
        assert registered.schema_id is not None
        return registered.schema_id

    def register_schema_full_response(
        self, subject_name: str, schema: Schema, normalize_schemas: bool = False
    ) -> RegisteredSchema:
        key = (subject_name, _schema_str(schema), schema.schema_type or "AVRO", normalize_schemas)
        with self._lock:
            cached = self._ids.get(key)
        if cached is not None:
            return cached
        version = _client_error(
            lambda: self.store.register_version(
                subject_name, key[1], key[2], normalize_schemas, list(schema.references or [])
            )
        )
        registered = _registered(version)
        with self._lock:
            self._ids[key] = registered
            self._schemas.setdefault(version.id, registered.schema)
        return registered

    def lookup_schema(
        self,
        subject_name: str,
        schema: Schema,
        normalize_schemas: bool = False,
        fmt: str | None = None,
        deleted: bool = False,
    ) -> RegisteredSchema:
        """`POST /subjects/{subject}`: the version of the subject that holds `schema`."""
        found = _client_error(
            lambda: self.store.lookup(
                subject_name,
                _schema_str(schema),
                schema.schema_type,
                normalize_schemas,
                deleted,
                list(schema.references or []),
            )
        )
        return RegisteredSchema(
            schema_id=found.id, guid=None, schema=schema, subject=found.subject, version=found.version
        )

    # -- reading -----------------------------------------------------------------------------
    def get_schema(
        self,
        schema_id: int,
        subject_name: str | None = None,
        fmt: str | None = None,
        reference_format: str | None = None,
    ) -> Schema:
        """`GET /schemas/ids/{id}`."""
        with self._lock:
            cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        found = _client_error(lambda: self.store.schema(schema_id))
        schema = Schema(found.schema, found.schema_type, [])
        with self._lock:
            self._schemas[schema_id] = schema
        return schema

    def get_latest_version(self, subject_name: str, fmt: str | None = None) -> RegisteredSchema:
        """`GET /subjects/{subject}/versions/latest`."""
        return self.get_version(subject_name, "latest")

    def get_version(
        self,
        subject_name: str,
        version: int | Literal["latest"] = "latest",
        deleted: bool = False,
        fmt: str | None = None,
    ) -> RegisteredSchema:
        """`GET /subjects/{subject}/versions/{version}`."""
        return _registered(_client_error(lambda: self.store.version(subject_name, version, deleted)))

    def get_subjects(
        self,
        subject_prefix: str | None = None,
        deleted: bool = False,
        deleted_only: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[str]:
        """`GET /subjects`."""
        names = _client_error(lambda: self.store.subjects(subject_prefix or "", deleted, deleted_only))
        return _page(names, offset, limit)

    def get_versions(
        self,
        subject_name: str,
        deleted: bool = False,
        deleted_only: bool = False,
        offset: int = 0,
        limit: int = -1,
    ) -> list[int]:
        """`GET /subjects/{subject}/versions`; 40401 for a subject without versions."""
        numbers = _client_error(lambda: self.store.versions(subject_name, deleted, deleted_only))
        if not numbers:
            raise ClientError(404, 40401, f"Subject '{subject_name}' not found.")
        return _page(numbers, offset, limit)

    def get_schema_types(self) -> list[str]:
        return ["AVRO"]

    # -- deleting ----------------------------------------------------------------------------
    def delete_subject(self, subject_name: str, permanent: bool = False) -> list[int]:
        self._forget(subject_name)
        return _client_error(lambda: self.store.delete_subject(subject_name, permanent))

    def delete_version(self, subject_name: str, version: int, permanent: bool = False) -> int:
        self._forget(subject_name)
        return _client_error(lambda: self.store.delete_version(subject_name, version, permanent))

    # -- compatibility -----------------------------------------------------------------------
    def get_compatibility(self, subject_name: str | None = None) -> str:
        """`GET /config[/{subject}]` (40408 for a subject without a level of its own, as Confluent)."""
        return _client_error(lambda: self.store.compatibility(subject_name))

    def set_compatibility(self, subject_name: str | None = None, level: str | None = None) -> dict[str, str]:
        """`PUT /config[/{subject}]`: Confluent's answer, `{"compatibility": level}`."""
        if level is None:
            raise ValueError("level must be set")
        return {"compatibility": _client_error(lambda: self.store.set_compatibility(level, subject_name))}

    def test_compatibility(
        self,
        subject_name: str,
        schema: Schema,
        version: int | str = "latest",
        normalize: bool = False,
        verbose: bool = False,
    ) -> bool:
        """`POST /compatibility/subjects/{subject}/versions/{version}`: whether `schema` may follow it."""
        messages = _client_error(
            lambda: self.store.test_compatibility(
                subject_name, _schema_str(schema), version, schema.schema_type, normalize
            )
        )
        return not messages
