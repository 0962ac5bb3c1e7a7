"""The Kafka Connect REST API over a herder: same paths, JSON shapes and status codes.

Bodies are parsed by hand rather than by pydantic models so that malformed JSON, wrong
types and missing fields all come back as Kafka's `{"error_code", "message"}` with advice.
Herder calls block (stopping a task waits for it), so they run on the thread pool.

cdc extension: `GET /connectors/{name}/tasks/{id}/metrics` returns the task's latest published
metrics (Debezium's names: snapshot progress, source position, lag; see cdc.api.metrics) as
`{"id": {"connector", "task"}, "worker_id", "timestamp", "metrics": {...}}`; `timestamp` is when
they were published (epoch ms, null and `metrics` empty until the task reports any). Kafka
Connect has no such path; its status bodies stay exactly Kafka's.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from cdc import __version__
from cdc.api.errors import ConfigException
from cdc.config.validation import config_key_info, invalid_config_message
from cdc.rest.errors import RestError, install_error_handlers
from cdc.rest.forward import install_forwarding
from cdc.rest.http_compat import JerseyCompatMiddleware, check_json_content_type
from cdc.rest.loggers import Loggers
from cdc.runtime.herder import NotFoundError, RestartRequest, TargetState
from cdc.runtime.plugins import CONNECTOR_KINDS, PluginKind
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.validation import name_error

T = TypeVar("T")

_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}


def _body(schema: dict[str, Any], *query: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI for a JSON body (and query parameters) the route reads by hand."""
    extra: dict[str, Any] = {"requestBody": {"content": {"application/json": {"schema": schema}}, "required": True}}
    if query:
        extra["parameters"] = list(query)
    return extra


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _params(*query: dict[str, Any]) -> dict[str, Any]:
    return {"parameters": list(query)}


_JSON_BODY = _body({"type": "object"})
_CONFIG_BODY = _body(_STRINGS)
_CREATE_BODY = _body(
    {
        "type": "object",
        "required": ["name", "config"],
        "properties": {
            "name": {"type": "string"},
            "config": _STRINGS,
            "initial_state": {"type": "string", "enum": ["RUNNING", "PAUSED", "STOPPED"]},
        },
    }
)
_PATCH_BODY = _body({"type": "object", "additionalProperties": {"type": ["string", "null"]}})
_OFFSETS_BODY = _body(
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
_LEVEL_BODY = _body(
    {"type": "object", "properties": {"level": {"type": "string"}}},
    _query("scope", {"type": "string", "enum": ["worker", "cluster"]}, "cluster: every worker (204)"),
)
_BOOL = {"type": "string", "enum": ["true", "false"]}


async def _call(fn: Callable[..., T], *args: Any) -> T:
    return await run_in_threadpool(fn, *args)


# Deeper than any Connect request body (configs are flat, offsets two levels); Jackson stops at 1000.
MAX_JSON_DEPTH = 64


def _depth_exceeds(value: Any, limit: int) -> bool:
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
    if _depth_exceeds(body, MAX_JSON_DEPTH):
        raise RestError(400, too_deep)
    return body


def _string_map(value: Any, what: str, allow_null: bool = False) -> dict[str, Any]:
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


def _flag(request: Request, name: str, default: bool = False) -> bool:
    """Jersey parses booleans case-insensitively; anything but "true" is false; absent is `default`."""
    value = request.query_params.get(name)
    if value is None:
        return default
    return value.strip().lower() == "true"


def _task_id(connector: str, task: str) -> ConnectorTaskId:
    try:
        return ConnectorTaskId(connector, int(task))
    except ValueError:
        raise RestError(404, f"Task {connector}-{task} not found: task ids are integers") from None


def _location(name: str) -> str:
    """The new connector's URL, percent-encoded as JAX-RS's UriBuilder does (a raw name may not fit a header)."""
    return "/connectors/" + quote(name, safe="")


def _check_new_name(name: str) -> None:
    """Refused before anything else: such a name cannot even go into the Location header."""
    error = name_error(name)
    if error:
        raise RestError(400, invalid_config_message({"error_count": 1, "configs": [{"value": {"errors": [error]}}]}))


def _check_name(name: str, config: Mapping[str, Any]) -> None:
    if "name" in config and config["name"] != name:
        raise RestError(
            400, f"Connector name configuration ({config['name']}) doesn't match connector name in the URL ({name})"
        )


def create_app(
    herder: Any,
    *,
    cluster_id: str = "",
    title: str = "cdc Connect REST API",
    forward_ssl: ssl.SSLContext | None = None,
) -> FastAPI:
    """Build the app; `herder` is a StandaloneHerder or a DistributedHerder. `forward_ssl` is the
    TLS context for requests forwarded to https workers (cdc.rest.tls.client_context).
    The security guards are cdc.rest.server.install_security's."""
    app = FastAPI(title=title, version=__version__, docs_url="/docs", redoc_url=None)
    app.add_middleware(JerseyCompatMiddleware, exempt=frozenset({"/docs", "/docs/oauth2-redirect", "/openapi.json"}))
    install_error_handlers(app)
    install_forwarding(app, forward_ssl)
    loggers = Loggers()
    registry = herder.worker.registry

    # -- root ---------------------------------------------------------------------------------
    @app.get("/", summary="Worker version and Kafka cluster id")
    async def server_info() -> dict[str, Any]:
        return {"version": __version__, "commit": "", "kafka_cluster_id": cluster_id}

    @app.get("/health", summary="Whether the worker is ready to handle requests")
    async def health() -> dict[str, str]:
        return {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}

    # -- connector plugins --------------------------------------------------------------------
    @app.get(
        "/connector-plugins",
        summary="Installed plugins (connectors only unless connectorsOnly=false)",
        openapi_extra=_params(_query("connectorsOnly", _BOOL, "false: transformations, converters, ... too")),
    )
    async def list_plugins(request: Request) -> list[dict[str, str]]:
        connectors_only = _flag(request, "connectorsOnly", default=True)
        kinds = CONNECTOR_KINDS if connectors_only else list(PluginKind)
        return [p.as_json() for p in registry.of_kind(*kinds)]

    def _plugin(plugin_type: str) -> Any:
        try:
            return registry.resolve(plugin_type, list(PluginKind))
        except ConfigException as e:
            raise RestError(404, f"Unknown plugin {plugin_type}. {e}") from None

    @app.get("/connector-plugins/{plugin_type}/config", summary="A plugin's config definition")
    async def plugin_config(plugin_type: str) -> list[dict[str, Any]]:
        desc = _plugin(plugin_type)
        instance = desc.cls()
        config_def = instance.config() if callable(getattr(instance, "config", None)) else None
        if config_def is None:
            return []
        return [config_key_info(k) for k in config_def.config_keys.values()]

    @app.put(
        "/connector-plugins/{plugin_type}/config/validate",
        summary="Validate a connector config (Kafka's ConfigInfos body)",
        openapi_extra=_CONFIG_BODY,
    )
    async def validate(plugin_type: str, request: Request) -> dict[str, Any]:
        config = _string_map(await json_body(request), "The config")
        given = config.get("connector.class")
        if given and given.rsplit(".", 1)[-1] != plugin_type.rsplit(".", 1)[-1] and given != plugin_type:
            raise RestError(400, f"Included connector type {given} does not match request type {plugin_type}")
        config.setdefault("connector.class", plugin_type)
        return await _call(herder.validate_connector_config, config)

    # -- connectors ---------------------------------------------------------------------------
    @app.get(
        "/connectors",
        summary="Connector names, or ?expand=status&expand=info details",
        openapi_extra=_params(
            _query("expand", {"type": "array", "items": {"type": "string", "enum": ["status", "info"]}}, "details")
        ),
    )
    async def list_connectors(request: Request) -> Any:
        names = await _call(herder.connector_names)
        expand = request.query_params.getlist("expand")
        if not expand:
            return names
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            entry: dict[str, Any] = {}
            try:
                if "status" in expand:
                    entry["status"] = await _call(herder.connector_status, name)
                if "info" in expand:
                    entry["info"] = await _call(herder.connector_info, name)
            except NotFoundError:
                continue  # deleted since it was listed (or no status yet): left out, as Kafka does
            out[name] = entry
        return out

    @app.post("/connectors", status_code=201, summary="Create a connector", openapi_extra=_CREATE_BODY)
    async def create_connector(request: Request) -> JSONResponse:
        body = await json_body(request)
        if not isinstance(body, Mapping):
            raise RestError(400, 'Send {"name": "...", "config": {...}} to create a connector')
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise RestError(400, 'Connector name is required: send {"name": "...", "config": {...}}')
        if "config" not in body or body["config"] is None:
            raise RestError(400, f'Connector config is required: send {{"name": "{name}", "config": {{...}}}}')
        name = name.strip()
        _check_new_name(name)
        config = _string_map(body["config"], "config")
        _check_name(name, config)
        initial = TargetState.from_initial_state(body.get("initial_state"))
        info = await _call(herder.create_connector, name, config, initial)
        return JSONResponse(info, status_code=201, headers={"Location": _location(name)})

    @app.get("/connectors/{name:segment}", summary="Name, config, tasks and type")
    async def get_connector(name: str) -> dict[str, Any]:
        return await _call(herder.connector_info, name)

    @app.get("/connectors/{name:segment}/config", summary="The connector's config (PASSWORD values hidden)")
    async def get_config(name: str) -> dict[str, str]:
        return await _call(herder.connector_config, name)

    @app.put(
        "/connectors/{name:segment}/config",
        summary="Create or replace a connector's config",
        openapi_extra=_CONFIG_BODY,
    )
    async def put_config(name: str, request: Request) -> JSONResponse:
        config = _string_map(await json_body(request), "The config")
        _check_name(name, config)
        _check_new_name(name)
        created = await _call(herder.put_connector_config, {**config, "name": name})
        info = await _call(herder.connector_info, name)
        if created:
            return JSONResponse(info, status_code=201, headers={"Location": _location(name)})
        return JSONResponse(info)

    @app.patch(
        "/connectors/{name:segment}/config",
        summary="Merge keys into the config; null deletes",
        openapi_extra=_PATCH_BODY,
    )
    async def patch_config(name: str, request: Request) -> dict[str, Any]:
        patch = _string_map(await json_body(request), "The config patch", allow_null=True)
        return await _call(herder.patch_connector_config, name, patch)

    @app.get("/connectors/{name:segment}/status", summary="Connector and task states")
    async def connector_status(name: str) -> dict[str, Any]:
        return await _call(herder.connector_status, name)

    @app.get("/connectors/{name:segment}/tasks", summary="Task ids and configs")
    async def task_configs(name: str) -> list[dict[str, Any]]:
        return await _call(herder.task_configs, name)

    @app.get(
        "/connectors/{name:segment}/tasks-config", summary="Task configs by task id (deprecated in Kafka 3.7, KIP-970)"
    )
    async def tasks_config(name: str) -> dict[str, dict[str, str]]:
        tasks = await _call(herder.task_configs, name)
        return {f"{t['id']['connector']}-{t['id']['task']}": t["config"] for t in tasks}

    @app.get("/connectors/{name:segment}/tasks/{task}/status", summary="One task's state")
    async def task_status(name: str, task: str) -> dict[str, Any]:
        return await _call(herder.task_status, _task_id(name, task))

    @app.get("/connectors/{name:segment}/tasks/{task}/metrics", summary="One task's latest metrics (cdc extension)")
    async def task_metrics(name: str, task: str) -> dict[str, Any]:
        id = _task_id(name, task)
        await _call(herder.task_status, id)  # 404 for an unknown connector or task, as the status path
        report = herder.worker.status_store.get_task_metrics(id.connector, id.task)
        return {
            "id": {"connector": id.connector, "task": id.task},
            "worker_id": report.worker_id if report is not None else None,
            "timestamp": report.timestamp if report is not None else None,
            "metrics": report.metrics if report is not None else {},
        }

    @app.post("/connectors/{name:segment}/tasks/{task}/restart", status_code=204, summary="Restart one task")
    async def restart_task(name: str, task: str) -> Response:
        await _call(herder.restart_task, _task_id(name, task))
        return Response(status_code=204)

    @app.post(
        "/connectors/{name:segment}/restart",
        summary="KIP-745: the Connector only (204), or with ?includeTasks=&onlyFailed= (202 and the plan)",
        openapi_extra=_params(
            _query("includeTasks", _BOOL, "restart the tasks too"),
            _query("onlyFailed", _BOOL, "only FAILED instances"),
        ),
    )
    async def restart_connector(name: str, request: Request) -> Response:
        restart = RestartRequest(name, _flag(request, "onlyFailed"), _flag(request, "includeTasks"))
        if restart.connector_only:
            await _call(herder.restart_connector, name)
            return Response(status_code=204)
        plan = await _call(herder.restart_connector_and_tasks, restart)
        return JSONResponse(plan, status_code=202)

    @app.put("/connectors/{name:segment}/pause", status_code=202, summary="Pause the connector and its tasks")
    async def pause(name: str) -> Response:
        await _call(herder.pause_connector, name)
        return Response(status_code=202)

    @app.put("/connectors/{name:segment}/resume", status_code=202, summary="Resume a paused or stopped connector")
    async def resume(name: str) -> Response:
        await _call(herder.resume_connector, name)
        return Response(status_code=202)

    @app.put(
        "/connectors/{name:segment}/stop", status_code=204, summary="KIP-875: shut down the connector and its tasks"
    )
    async def stop(name: str) -> Response:
        await _call(herder.stop_connector, name)
        return Response(status_code=204)

    @app.delete("/connectors/{name:segment}", status_code=204, summary="Delete the connector (its offsets stay)")
    async def delete(name: str) -> Response:
        await _call(herder.delete_connector, name)
        return Response(status_code=204)

    # -- topics (KIP-558) ----------------------------------------------------------------------
    @app.get("/connectors/{name:segment}/topics", summary="Topics the connector has used")
    async def topics(name: str) -> dict[str, Any]:
        return {name: {"topics": await _call(herder.connector_topics, name)}}

    @app.put("/connectors/{name:segment}/topics/reset", status_code=202, summary="Forget the connector's active topics")
    async def reset_topics(name: str) -> Response:
        await _call(herder.reset_connector_topics, name)
        return Response(status_code=202)

    # -- offsets (KIP-875) --------------------------------------------------------------------
    @app.get("/connectors/{name:segment}/offsets", summary="The connector's offsets")
    async def get_offsets(name: str) -> dict[str, Any]:
        return await _call(herder.connector_offsets, name)

    @app.patch(
        "/connectors/{name:segment}/offsets",
        summary="Alter offsets (STOPPED connectors only)",
        openapi_extra=_OFFSETS_BODY,
    )
    async def alter_offsets(name: str, request: Request) -> dict[str, str]:
        body = await json_body(request)
        offsets = body.get("offsets") if isinstance(body, Mapping) else ()
        if offsets is not None and not isinstance(offsets, list):
            raise RestError(400, 'Send {"offsets": [{"partition": {...}, "offset": {...} or null}, ...]}')
        if not offsets:
            # Kafka checks this before the connector's state or existence.
            raise RestError(400, "Partitions / offsets need to be provided for an alter offsets request")
        return await _call(herder.alter_connector_offsets, name, offsets)

    @app.delete("/connectors/{name:segment}/offsets", summary="Reset offsets (STOPPED connectors only)")
    async def reset_offsets(name: str) -> dict[str, str]:
        return await _call(herder.reset_connector_offsets, name)

    # -- loggers (KIP-495) --------------------------------------------------------------------
    @app.get("/admin/loggers", summary="Loggers with an explicit level")
    async def list_loggers() -> dict[str, Any]:
        return loggers.all()

    @app.get("/admin/loggers/{logger}", summary="One logger's level")
    async def get_logger(logger: str) -> dict[str, Any]:
        return loggers.level(logger)

    @app.put("/admin/loggers/{logger}", summary="Set a logger's level (and its children's)", openapi_extra=_LEVEL_BODY)
    async def set_logger(logger: str, request: Request) -> Any:
        body = await json_body(request)
        level = body.get("level") if isinstance(body, Mapping) else None
        affected = loggers.set_level(logger, level)
        # Kafka: scope=cluster answers 204; any other scope falls back to worker (200, the loggers changed).
        # Only this worker's loggers change: the herders do not share levels across the cluster.
        if (request.query_params.get("scope") or "worker").lower() == "cluster":
            return Response(status_code=204)
        return affected

    return app
