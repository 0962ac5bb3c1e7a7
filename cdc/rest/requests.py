"""Reading REST requests by hand, as Kafka Connect's resources do: JSON bodies with limits, string
maps, Jersey-style flags and task ids, all failing as Kafka's `{"error_code", "message"}` with
advice; plus the OpenAPI descriptions of the bodies the routes read this way."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from cdc.rest.errors import RestError
from cdc.rest.http_compat import check_json_content_type
from cdc.runtime.logging_context import escape_controls
from cdc.runtime.task import ConnectorTaskId

T = TypeVar("T")

STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}


def openapi_body(schema: dict[str, Any], *query: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI for a JSON body (and query parameters) the route reads by hand."""
    extra: dict[str, Any] = {"requestBody": {"content": {"application/json": {"schema": schema}}, "required": True}}
    if query:
        extra["parameters"] = list(query)
    return extra


def openapi_query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def openapi_params(*query: dict[str, Any]) -> dict[str, Any]:
    return {"parameters": list(query)}


JSON_BODY = openapi_body({"type": "object"})
CONFIG_BODY = openapi_body(STRINGS)
CREATE_BODY = openapi_body(
    {
        "type": "object",
        "required": ["name", "config"],
        "properties": {
            "name": {"type": "string"},
            "config": STRINGS,
            "initial_state": {"type": "string", "enum": ["RUNNING", "PAUSED", "STOPPED"]},
        },
    }
)
PATCH_BODY = openapi_body({"type": "object", "additionalProperties": {"type": ["string", "null"]}})
OFFSETS_BODY = openapi_body(
    {
        "type": "object",
        "required": ["offsets"],
        "properties": {
            "offsets": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"partition": {"type": "object"}, "offset": {"type": ["object", "null"]}},
                },
            }
        },
    }
)
LEVEL_BODY = openapi_body(
    {"type": "object", "properties": {"level": {"type": "string"}}},
    openapi_query("scope", {"type": "string", "enum": ["worker", "cluster"]}, "cluster: every worker (204)"),
)
BOOL = {"type": "string", "enum": ["true", "false"]}


async def call(fn: Callable[..., T], *args: Any) -> T:
    return await run_in_threadpool(fn, *args)


# Deeper than any Connect request body (configs are flat, offsets two levels); Jackson stops at 1000.
MAX_JSON_DEPTH = 64


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests containers more than `limit` deep (iterative: no recursion to run out of)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


async def json_body(request: Request) -> Any:
    check_json_content_type(request.headers.get("content-type"))
    raw = await request.body()
    request.state.raw_body = raw  # kept for forwarding to the leader
    if not raw.strip():
        raise RestError(400, "Request body is empty: send a JSON document")
    too_deep = f"The request body nests JSON deeper than {MAX_JSON_DEPTH} levels: send a flatter document"
    try:
        body = json.loads(raw)
    except RecursionError:
        raise RestError(400, too_deep) from None
    except ValueError as e:
        raise RestError(400, f"Malformed JSON in the request body: {e}") from e
    if depth_exceeds(body, MAX_JSON_DEPTH):
        raise RestError(400, too_deep)
    where = lone_surrogate_at(body)
    if where is not None:
        raise RestError(
            400,
            f"The request body has a lone UTF-16 surrogate in {where}: text must be valid Unicode "
            "(\\ud800-\\udfff escapes only as high-low pairs); fix that key or value",
        )
    return body


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in text)


def lone_surrogate_at(value: Any) -> str | None:
    """Where `value` (parsed JSON) holds a lone surrogate, as `the key 'a' > 'b\\udc80'` or `the value
    of 'config' > 'x'` (escaped, so the message can be sent and logged), or None.

    JSON's `\\ud800` escape decodes to a lone surrogate that no UTF-8 writer accepts: stored in a
    config, a log line or a signal table it fails far from here, as a 500. Refused on arrival."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _has_surrogate(item):
                return "the value " + (f"of {_path(path)}" if path else "(the whole body)")
        elif isinstance(item, dict):
            for key, child in item.items():
                if _has_surrogate(key):
                    return f"the key {_path((*path, key))}"
                stack.append((child, (*path, key)))
        elif isinstance(item, list):
            stack.extend((child, (*path, i)) for i, child in enumerate(item))
    return None


def _path(parts: tuple[str | int, ...]) -> str:
    return " > ".join(f"'{escape_controls(p)}'" if isinstance(p, str) else f"[{p}]" for p in parts)


def string_map(value: Any, what: str, allow_null: bool = False) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise RestError(400, f"{what} must be a JSON object of string keys and string values")
    out: dict[str, Any] = {}
    for k, v in value.items():
        if v is None and allow_null:
            out[k] = None
        elif isinstance(v, (str, int, float, bool)):
            out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
        else:
            raise RestError(400, f"{what}: the value of {k!r} must be a string, not {type(v).__name__}")
    return out


def flag(request: Request, name: str, default: bool = False) -> bool:
    """Jersey parses booleans case-insensitively; anything but "true" is false; absent is `default`."""
    value = request.query_params.get(name)
    if value is None:
        return default
    return value.strip().lower() == "true"


def task_id(connector: str, task: str) -> ConnectorTaskId:
    try:
        return ConnectorTaskId(connector, int(task))
    except ValueError:
        raise RestError(404, f"Task {connector}-{task} not found: task ids are integers") from None
