"""Kafka Connect's ConnectorPluginsResource: installed plugins, their config definitions, validation."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from cdc.api.errors import ConfigException
from cdc.config.validation import config_key_info
from cdc.rest.errors import RestError
from cdc.rest.requests import BOOL, CONFIG_BODY, call, flag, json_body, openapi_params, openapi_query, string_map
from cdc.runtime.herder import Herder
from cdc.runtime.plugins import CONNECTOR_KINDS, PluginKind


def connector_plugins_router(herder: Herder) -> APIRouter:
    """`/connector-plugins…` over the herder's worker's plugin registry."""
    router = APIRouter()
    registry = herder.worker.registry

    @router.get(
        "/connector-plugins",
        summary="Installed plugins (connectors only unless connectorsOnly=false)",
        openapi_extra=openapi_params(
            openapi_query("connectorsOnly", BOOL, "false: transformations, converters, ... too")
        ),
    )
    async def list_plugins(request: Request) -> list[dict[str, str]]:
        connectors_only = flag(request, "connectorsOnly", default=True)
        kinds = CONNECTOR_KINDS if connectors_only else list(PluginKind)
        return [p.as_json() for p in registry.of_kind(*kinds)]

    def _plugin(plugin_type: str) -> Any:
        try:
            return registry.resolve(plugin_type, list(PluginKind))
        except ConfigException as e:
            raise RestError(404, f"Unknown plugin {plugin_type}. {e}") from None

    @router.get("/connector-plugins/{plugin_type}/config", summary="A plugin's config definition")
    async def plugin_config(plugin_type: str) -> list[dict[str, Any]]:
        desc = _plugin(plugin_type)
        instance = desc.cls()
        config_def = instance.config() if callable(getattr(instance, "config", None)) else None
        if config_def is None:
            return []
        return [config_key_info(k) for k in config_def.config_keys.values()]

    @router.put(
        "/connector-plugins/{plugin_type}/config/validate",
        summary="Validate a connector config (Kafka's ConfigInfos body)",
        openapi_extra=CONFIG_BODY,
    )
    async def validate(plugin_type: str, request: Request) -> dict[str, Any]:
        config = string_map(await json_body(request), "The config")
        given = config.get("connector.class")
        if given and given.rsplit(".", 1)[-1] != plugin_type.rsplit(".", 1)[-1] and given != plugin_type:
            raise RestError(400, f"Included connector type {given} does not match request type {plugin_type}")
        config.setdefault("connector.class", plugin_type)
        return await call(herder.validate_connector_config, config)

    return router
