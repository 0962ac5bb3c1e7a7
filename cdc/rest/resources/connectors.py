"""Kafka Connect's ConnectorsResource: connectors, their configs, states, tasks, topics (KIP-558) and
offsets (KIP-875).

cdc extension: `GET /connectors/{name}/tasks/{id}/metrics` returns the task's latest published
metrics (Debezium's names: snapshot progress, source position, lag; see cdc.api.metrics) as
`{"id": {"connector", "task"}, "worker_id", "timestamp", "metrics": {...}}`; `timestamp` is when
they were published (epoch ms, null and `metrics` empty until the task reports any). Kafka
Connect has no such path; its status bodies stay exactly Kafka's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from cdc.config.validation import invalid_config_message
from cdc.rest.errors import RestError
from cdc.rest.requests import (
    BOOL,
    CONFIG_BODY,
    CREATE_BODY,
    OFFSETS_BODY,
    PATCH_BODY,
    call,
    flag,
    json_body,
    openapi_params,
    openapi_query,
    string_map,
    task_id,
)
from cdc.runtime.herder import Herder, NotFoundError, RestartRequest, TargetState
from cdc.runtime.validation import name_error


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


def connectors_router(herder: Herder) -> APIRouter:
    """`/connectors…` over the herder (standalone or distributed)."""
    router = APIRouter()

    @router.get(
        "/connectors",
        summary="Connector names, or ?expand=status&expand=info details",
        openapi_extra=openapi_params(
            openapi_query(
                "expand", {"type": "array", "items": {"type": "string", "enum": ["status", "info"]}}, "details"
            )
        ),
    )
    async def list_connectors(request: Request) -> Any:
        names = await call(herder.connector_names)
        expand = request.query_params.getlist("expand")
        if not expand:
            return names
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            entry: dict[str, Any] = {}
            try:
                if "status" in expand:
                    entry["status"] = await call(herder.connector_status, name)
                if "info" in expand:
                    entry["info"] = await call(herder.connector_info, name)
            except NotFoundError:
                continue  # deleted since it was listed (or no status yet): left out, as Kafka does
            out[name] = entry
        return out

    @router.post("/connectors", status_code=201, summary="Create a connector", openapi_extra=CREATE_BODY)
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
        config = string_map(body["config"], "config")
        _check_name(name, config)
        initial = TargetState.from_initial_state(body.get("initial_state"))
        info = await call(herder.create_connector, name, config, initial)
        return JSONResponse(info, status_code=201, headers={"Location": _location(name)})

    @router.get("/connectors/{name:segment}", summary="Name, config, tasks and type")
    async def get_connector(name: str) -> dict[str, Any]:
        return await call(herder.connector_info, name)

    @router.get("/connectors/{name:segment}/config", summary="The connector's config (PASSWORD values hidden)")
    async def get_config(name: str) -> dict[str, str]:
        return await call(herder.connector_config, name)

    @router.put(
        "/connectors/{name:segment}/config",
        summary="Create or replace a connector's config",
        openapi_extra=CONFIG_BODY,
    )
    async def put_config(name: str, request: Request) -> JSONResponse:
        config = string_map(await json_body(request), "The config")
        _check_name(name, config)
        _check_new_name(name)
        created = await call(herder.put_connector_config, {**config, "name": name})
        info = await call(herder.connector_info, name)
        if created:
            return JSONResponse(info, status_code=201, headers={"Location": _location(name)})
        return JSONResponse(info)

    @router.patch(
        "/connectors/{name:segment}/config",
        summary="Merge keys into the config; null deletes",
        openapi_extra=PATCH_BODY,
    )
    async def patch_config(name: str, request: Request) -> dict[str, Any]:
        patch = string_map(await json_body(request), "The config patch", allow_null=True)
        return await call(herder.patch_connector_config, name, patch)

    @router.get("/connectors/{name:segment}/status", summary="Connector and task states")
    async def connector_status(name: str) -> dict[str, Any]:
        return await call(herder.connector_status, name)

    @router.get("/connectors/{name:segment}/tasks", summary="Task ids and configs")
    async def task_configs(name: str) -> list[dict[str, Any]]:
        return await call(herder.task_configs, name)

    @router.get(
        "/connectors/{name:segment}/tasks-config", summary="Task configs by task id (deprecated in Kafka 3.7, KIP-970)"
    )
    async def tasks_config(name: str) -> dict[str, dict[str, str]]:
        tasks = await call(herder.task_configs, name)
        return {f"{t['id']['connector']}-{t['id']['task']}": t["config"] for t in tasks}

    @router.get("/connectors/{name:segment}/tasks/{task}/status", summary="One task's state")
    async def task_status(name: str, task: str) -> dict[str, Any]:
        return await call(herder.task_status, task_id(name, task))

    @router.get("/connectors/{name:segment}/tasks/{task}/metrics", summary="One task's latest metrics (cdc extension)")
    async def task_metrics(name: str, task: str) -> dict[str, Any]:
        id = task_id(name, task)
        await call(herder.task_status, id)  # 404 for an unknown connector or task, as the status path
        report = herder.worker.status_store.get_task_metrics(id.connector, id.task)
        return {
            "id": {"connector": id.connector, "task": id.task},
            "worker_id": report.worker_id if report is not None else None,
            "timestamp": report.timestamp if report is not None else None,
            "metrics": report.metrics if report is not None else {},
        }

    @router.post("/connectors/{name:segment}/tasks/{task}/restart", status_code=204, summary="Restart one task")
    async def restart_task(name: str, task: str) -> Response:
        await call(herder.restart_task, task_id(name, task))
        return Response(status_code=204)

    @router.post(
        "/connectors/{name:segment}/restart",
        summary="KIP-745: the Connector only (204), or with ?includeTasks=&onlyFailed= (202 and the plan)",
        openapi_extra=openapi_params(
            openapi_query("includeTasks", BOOL, "restart the tasks too"),
            openapi_query("onlyFailed", BOOL, "only FAILED instances"),
        ),
    )
    async def restart_connector(name: str, request: Request) -> Response:
        restart = RestartRequest(name, flag(request, "onlyFailed"), flag(request, "includeTasks"))
        if restart.connector_only:
            await call(herder.restart_connector, name)
            return Response(status_code=204)
        plan = await call(herder.restart_connector_and_tasks, restart)
        return JSONResponse(plan, status_code=202)

    @router.put("/connectors/{name:segment}/pause", status_code=202, summary="Pause the connector and its tasks")
    async def pause(name: str) -> Response:
        await call(herder.pause_connector, name)
        return Response(status_code=202)

    @router.put("/connectors/{name:segment}/resume", status_code=202, summary="Resume a paused or stopped connector")
    async def resume(name: str) -> Response:
        await call(herder.resume_connector, name)
        return Response(status_code=202)

    @router.put(
        "/connectors/{name:segment}/stop", status_code=204, summary="KIP-875: shut down the connector and its tasks"
    )
    async def stop(name: str) -> Response:
        await call(herder.stop_connector, name)
        return Response(status_code=204)

    @router.delete("/connectors/{name:segment}", status_code=204, summary="Delete the connector (its offsets stay)")
    async def delete(name: str) -> Response:
        await call(herder.delete_connector, name)
        return Response(status_code=204)

    # -- topics (KIP-558) ----------------------------------------------------------------------
    @router.get("/connectors/{name:segment}/topics", summary="Topics the connector has used")
    async def topics(name: str) -> dict[str, Any]:
        return {name: {"topics": await call(herder.connector_topics, name)}}

    @router.put(
        "/connectors/{name:segment}/topics/reset", status_code=202, summary="Forget the connector's active topics"
    )
    async def reset_topics(name: str) -> Response:
        await call(herder.reset_connector_topics, name)
        return Response(status_code=202)

    # -- offsets (KIP-875) --------------------------------------------------------------------
    @router.get("/connectors/{name:segment}/offsets", summary="The connector's offsets")
    async def get_offsets(name: str) -> dict[str, Any]:
        return await call(herder.connector_offsets, name)

    @router.patch(
        "/connectors/{name:segment}/offsets",
        summary="Alter offsets (STOPPED connectors only)",
        openapi_extra=OFFSETS_BODY,
    )
    async def alter_offsets(name: str, request: Request) -> dict[str, str]:
        body = await json_body(request)
        offsets = body.get("offsets") if isinstance(body, Mapping) else ()
        if offsets is not None and not isinstance(offsets, list):
            raise RestError(400, 'Send {"offsets": [{"partition": {...}, "offset": {...} or null}, ...]}')
        if not offsets:
            # Kafka checks this before the connector's state or existence.
            raise RestError(400, "Partitions / offsets need to be provided for an alter offsets request")
        return await call(herder.alter_connector_offsets, name, offsets)

    @router.delete("/connectors/{name:segment}/offsets", summary="Reset offsets (STOPPED connectors only)")
    async def reset_offsets(name: str) -> dict[str, str]:
        return await call(herder.reset_connector_offsets, name)

    return router
