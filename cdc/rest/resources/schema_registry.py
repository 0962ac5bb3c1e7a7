"""Confluent Schema Registry's REST API over the embedded log's registry (transport=embedded).

The paths, bodies, status codes and `{"error_code", "message"}` errors of Confluent's
`SubjectsResource`, `SubjectVersionsResource`, `SchemasResource`, `ConfigResource`,
`CompatibilityResource` and `ModeResource` (schema-registry `core/.../rest/resources/`), so any
Confluent-compatible client (confluent-kafka's `SchemaRegistryClient`, Kafka's AvroConverter,
kcat, Spark's `from_avro` with a registry) reads what a job wrote to the embedded log. Served
by the worker next to Kafka Connect's API, behind the same Host, cross-site, body-size, TLS and
basic-auth guards (cdc.rest.server.install_security wraps the whole app).

Media types: Confluent's clients send `application/vnd.schemaregistry.v1+json` (also
`application/vnd.schemaregistry+json`, `application/json`, `application/octet-stream`);
`SchemaRegistryMediaTypes` lets those through Connect's JSON-only check for these paths only,
and answers carry `application/vnd.schemaregistry.v1+json`, as Confluent's do. Not served:
schema references, JSON Schema / Protobuf, contexts, modes other than READWRITE, metadata and
rule sets (accepted in a body and ignored), exporters and associations.

Bounded (issue 33): the routes that parse and check a schema (register, lookup, the
compatibility tests) run it on a worker thread with a cancel event that is set when the client
disconnects or the route itself is cancelled (a server shutting down), so a hostile schema
never keeps a core busy for a client that left, nor a stopping worker waiting; the schema's
own bounds (size, depth, fields, check time) are the store's (cdc.log.schema_registry).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from cdc.log.schema_registry import (
    SCHEMA_TYPES,
    RegisteredVersion,
    SchemaRegistryError,
    SchemaRegistryStore,
    request_cancelled,
    schema_not_found,
)
from cdc.rest.requests import call, json_body, openapi_body

MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
_ACCEPTED = frozenset(
    {MEDIA_TYPE, "application/vnd.schemaregistry+json", "application/json", "application/octet-stream"}
)
PREFIXES = ("/subjects", "/schemas", "/config", "/compatibility", "/mode")

SCHEMA_BODY = openapi_body(
    {
        "type": "object",
        "required": ["schema"],
        "properties": {
            "schema": {"type": "string"},
            "schemaType": {"type": "string", "enum": list(SCHEMA_TYPES)},
            "references": {"type": "array"},
        },
    }
)
CONFIG_BODY = openapi_body({"type": "object", "properties": {"compatibility": {"type": "string"}}})
MODE_BODY = openapi_body({"type": "object", "properties": {"mode": {"type": "string"}}})


def is_registry_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in PREFIXES)


class SchemaRegistryMediaTypes:
    """On the registry's paths, Confluent's media types count as JSON (Content-Type and Accept),
    so Connect's JSON-only check (cdc.rest.http_compat) lets Confluent's clients through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_registry_path(scope.get("path", "")):
            headers = []
            for key, value in scope.get("headers", ()):
                if key == b"content-type":
                    media = value.decode("latin-1").split(";", 1)[0].strip().lower()
                    if media in _ACCEPTED:
                        value = b"application/json"
                elif key == b"accept":
                    text = value.decode("latin-1").lower()
                    if any(m in text for m in _ACCEPTED if m != "application/json"):
                        value += b", application/json"
                headers.append((key, value))
            scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)


def _answer(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE)


def _error(e: SchemaRegistryError) -> JSONResponse:
    return _answer({"error_code": e.error_code, "message": e.message}, e.status)


def _flag(request: Request, name: str) -> bool:
    """Confluent's boolean query parameters (Jersey: case-insensitive "true"; Python clients send "True")."""
    return (request.query_params.get(name) or "").strip().lower() == "true"


def _version_body(v: RegisteredVersion) -> dict[str, Any]:
    out: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id}
    if v.schema_type != "AVRO":  # Confluent leaves schemaType out for AVRO, the default
        out["schemaType"] = v.schema_type
    out["schema"] = v.schema
    return out


def _schema_id(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise schema_not_found(f"Schema {value}") from None


async def _schema_request(request: Request) -> tuple[str, str | None, list[Any]]:
    body = await json_body(request)
    if not isinstance(body, Mapping):
        raise SchemaRegistryError(422, 42201, 'Invalid schema: the body must be a JSON object {"schema": "..."}')
    schema = body.get("schema")
    if not isinstance(schema, str) or not schema.strip():
        raise SchemaRegistryError(
            422, 42201, 'Invalid schema: empty or missing "schema" (the Avro schema as a JSON string)'
        )
    schema_type = body.get("schemaType")
    if schema_type is not None and not isinstance(schema_type, str):
        raise SchemaRegistryError(422, 42201, 'Invalid schema: "schemaType" must be a string such as "AVRO"')
    references = body.get("references") or []
    if not isinstance(references, list):
        raise SchemaRegistryError(422, 42201, 'Invalid schema: "references" must be a list')
    return schema, schema_type, references


async def _until_disconnected(request: Request) -> None:
    """Return when the client disconnects (the body has been read: nothing else may arrive)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def cancellable(request: Request, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args, cancel=event)` on a worker thread; the event is set, and the route returns at once,
    when the client disconnects or this route is cancelled (the server stopping), so `fn` (a
    compatibility check) stops at its next step instead of running on for nobody."""
    cancel = threading.Event()
    outcome: list[tuple[bool, Any]] = []

    def work() -> Any:
        return fn(*args, cancel=cancel)

    async def run(scope: anyio.CancelScope) -> None:
        try:
            outcome.append((True, await anyio.to_thread.run_sync(work, abandon_on_cancel=True)))
        except Exception as e:  # handed to the caller below, outside the task group
            outcome.append((False, e))
        scope.cancel()

    async def watch(scope: anyio.CancelScope) -> None:
        await _until_disconnected(request)
        cancel.set()
        scope.cancel()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run, group.cancel_scope)
            group.start_soon(watch, group.cancel_scope)
    finally:
        if not outcome:
            cancel.set()  # cancelled or disconnected: the thread gives up at its next check
    if not outcome:
        raise request_cancelled()
    ok, value = outcome[0]
    if ok:
        return value
    raise value


def install_schema_registry(app: FastAPI, store: SchemaRegistryStore) -> None:
    """Serve Confluent's Schema Registry API over `store` in `app` (after JerseyCompatMiddleware is added)."""

    async def registry_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SchemaRegistryError)
        return _error(exc)

    # Left out of /openapi.json: its errors are Confluent's (error_code 40401 with HTTP 404), not
    # Kafka Connect's (error_code = HTTP status), which the worker's API fuzzing (tests/security)
    # checks every documented path for. tests/rest/test_schema_registry_api.py fuzzes these paths.
    app.include_router(schema_registry_router(store), include_in_schema=False)
    app.add_exception_handler(SchemaRegistryError, registry_error)
    app.add_middleware(SchemaRegistryMediaTypes)


def schema_registry_router(store: SchemaRegistryStore) -> APIRouter:
    """Confluent's Schema Registry API over `store`."""
    router = APIRouter(tags=["schema registry"])

    async def run(fn: Callable[..., Any], *args: Any) -> Any:
        return await call(fn, *args)

    # -- subjects ----------------------------------------------------------------------------
    @router.get("/subjects", summary="Subjects with a live version")
    async def subjects(request: Request) -> Response:
        prefix = request.query_params.get("subjectPrefix") or ""
        names = await run(store.subjects, prefix, _flag(request, "deleted"), _flag(request, "deletedOnly"))
        return _answer(names)

    @router.get("/subjects/{subject:segment}/versions", summary="A subject's versions")
    async def versions(subject: str, request: Request) -> Response:
        numbers = await run(store.versions, subject, _flag(request, "deleted"), _flag(request, "deletedOnly"))
        if not numbers:
            raise SchemaRegistryError(404, 40401, f"Subject '{subject}' not found.")
        return _answer(numbers)

    @router.post(
        "/subjects/{subject:segment}/versions", summary="Register a schema under a subject", openapi_extra=SCHEMA_BODY
    )
    async def register(subject: str, request: Request) -> Response:
        schema, schema_type, references = await _schema_request(request)
        registered = await cancellable(
            request, store.register_version, subject, schema, schema_type, _flag(request, "normalize"), references
        )
        return _answer({"id": registered.id})

    @router.post(
        "/subjects/{subject:segment}", summary="The version of a subject holding a schema", openapi_extra=SCHEMA_BODY
    )
    async def lookup(subject: str, request: Request) -> Response:
        schema, schema_type, references = await _schema_request(request)
        found = await run(
            store.lookup,
            subject,
            schema,
            schema_type,
            _flag(request, "normalize"),
            _flag(request, "deleted"),
            references,
        )
        return _answer(_version_body(found))

    @router.delete("/subjects/{subject:segment}", summary="Delete a subject (soft, then permanent=true)")
    async def delete_subject(subject: str, request: Request) -> Response:
        return _answer(await run(store.delete_subject, subject, _flag(request, "permanent")))

    @router.get("/subjects/{subject:segment}/versions/{version}", summary="One version of a subject")
    async def version(subject: str, version: str, request: Request) -> Response:
        found = await run(store.version, subject, version, _flag(request, "deleted"))
        return _answer(_version_body(found))

    @router.get("/subjects/{subject:segment}/versions/{version}/schema", summary="The schema of a version, bare")
    async def version_schema(subject: str, version: str, request: Request) -> Response:
        found = await run(store.version, subject, version, _flag(request, "deleted"))
        return Response(found.schema, media_type=MEDIA_TYPE)

    @router.get("/subjects/{subject:segment}/versions/{version}/referencedby", summary="Schemas referencing it")
    async def referenced_by(subject: str, version: str) -> Response:
        await run(store.version, subject, version, False)
        return _answer([])  # references are not supported: nothing refers to anything

    @router.delete("/subjects/{subject:segment}/versions/{version}", summary="Delete a version (soft, then permanent)")
    async def delete_version(subject: str, version: str, request: Request) -> Response:
        return _answer(await run(store.delete_version, subject, version, _flag(request, "permanent")))

    # -- schemas by id -----------------------------------------------------------------------
    @router.get("/schemas/types", summary="Schema types this registry accepts")
    async def schema_types() -> Response:
        return _answer(list(SCHEMA_TYPES))

    @router.get("/schemas/ids/{schema_id}", summary="A schema by its global id")
    async def schema_by_id(schema_id: str) -> Response:
        found = await run(store.schema, _schema_id(schema_id))
        body: dict[str, Any] = {"schema": found.schema}
        if found.schema_type != "AVRO":
            body["schemaType"] = found.schema_type
        return _answer(body)

    @router.get("/schemas/ids/{schema_id}/schema", summary="A schema by its global id, bare")
    async def bare_schema_by_id(schema_id: str) -> Response:
        found = await run(store.schema, _schema_id(schema_id))
        return Response(found.schema, media_type=MEDIA_TYPE)

    @router.get("/schemas/ids/{schema_id}/subjects", summary="Subjects holding a schema")
    async def schema_subjects(schema_id: str, request: Request) -> Response:
        return _answer(await run(store.schema_subjects, _schema_id(schema_id), _flag(request, "deleted")))

    @router.get("/schemas/ids/{schema_id}/versions", summary="Subject versions holding a schema")
    async def schema_versions(schema_id: str, request: Request) -> Response:
        pairs = await run(store.schema_versions, _schema_id(schema_id), _flag(request, "deleted"))
        return _answer([{"subject": s, "version": v} for s, v in pairs])

    # -- compatibility -----------------------------------------------------------------------
    async def _compatibility(subject: str, version: str | None, request: Request) -> Response:
        schema, schema_type, references = await _schema_request(request)
        if references:
            raise SchemaRegistryError(422, 42201, "Invalid schema: schema references are not supported")
        messages = await cancellable(
            request, store.test_compatibility, subject, schema, version, schema_type, _flag(request, "normalize")
        )
        body: dict[str, Any] = {"is_compatible": not messages}
        if _flag(request, "verbose"):
            body["messages"] = messages
        return _answer(body)

    @router.post(
        "/compatibility/subjects/{subject:segment}/versions/{version}",
        summary="Whether a schema is compatible with a version",
        openapi_extra=SCHEMA_BODY,
    )
    async def compatible_with_version(subject: str, version: str, request: Request) -> Response:
        return await _compatibility(subject, version, request)

    @router.post(
        "/compatibility/subjects/{subject:segment}/versions",
        summary="Whether a schema is compatible with the versions the level names",
        openapi_extra=SCHEMA_BODY,
    )
    async def compatible_with_versions(subject: str, request: Request) -> Response:
        return await _compatibility(subject, None, request)

    # -- config and mode ---------------------------------------------------------------------
    async def _set_level(subject: str | None, request: Request) -> Response:
        body = await json_body(request)
        level = body.get("compatibility") if isinstance(body, Mapping) else None
        if level is None and isinstance(body, Mapping):
            level = body.get("compatibilityLevel")
        if not isinstance(level, str):
            raise SchemaRegistryError(422, 42203, 'Invalid compatibility level: send {"compatibility": "BACKWARD"}')
        return _answer({"compatibility": await run(store.set_compatibility, level, subject)})

    @router.get("/config", summary="The global compatibility level")
    async def global_config() -> Response:
        return _answer({"compatibilityLevel": await run(store.compatibility, None, True)})

    @router.put("/config", summary="Set the global compatibility level", openapi_extra=CONFIG_BODY)
    async def set_global_config(request: Request) -> Response:
        return await _set_level(None, request)

    @router.delete("/config", summary="Reset the global compatibility level")
    async def delete_global_config() -> Response:
        return _answer({"compatibilityLevel": await run(store.delete_compatibility, None)})

    @router.get("/config/{subject:segment}", summary="A subject's compatibility level")
    async def subject_config(subject: str, request: Request) -> Response:
        level = await run(store.compatibility, subject, _flag(request, "defaultToGlobal"))
        return _answer({"compatibilityLevel": level})

    @router.put("/config/{subject:segment}", summary="Set a subject's compatibility level", openapi_extra=CONFIG_BODY)
    async def set_subject_config(subject: str, request: Request) -> Response:
        return await _set_level(subject, request)

    @router.delete("/config/{subject:segment}", summary="Remove a subject's compatibility level")
    async def delete_subject_config(subject: str) -> Response:
        return _answer({"compatibilityLevel": await run(store.delete_compatibility, subject)})

    @router.get("/mode", summary="The registry's mode (always READWRITE)")
    async def mode() -> Response:
        return _answer({"mode": store.mode()})

    @router.get("/mode/{subject:segment}", summary="A subject's mode (always READWRITE)")
    async def subject_mode(subject: str) -> Response:
        return _answer({"mode": store.mode(subject)})

    @router.put("/mode", summary="Set the mode: only READWRITE is accepted", openapi_extra=MODE_BODY)
    async def set_mode(request: Request) -> Response:
        body = await json_body(request)
        wanted = body.get("mode") if isinstance(body, Mapping) else None
        if not isinstance(wanted, str) or wanted.strip().upper() != store.mode():
            raise SchemaRegistryError(
                422, 42204, f"Invalid mode {wanted!r}: the embedded registry only runs in READWRITE mode"
            )
        return _answer({"mode": store.mode()})

    return router
