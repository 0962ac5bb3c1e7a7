"""${provider:path:key} references in a job, resolved as Kafka Connect's ConfigTransformer does
for a connector config (FileConfigProvider, EnvVarConfigProvider, DirectoryConfigProvider)."""

from __future__ import annotations

from typing import Any

from cdc.api.errors import ConfigException
from cdc.config.providers import ConfigTransformer
from cdc.jobs.validation.problems import Collector


def resolve_references(data: Any, out: Collector, lenient: bool = False) -> Any:
    """The job with every reference resolved; a reference that cannot be is a problem at its
    path, except under `source` when `lenient` (commands that never connect to the database)."""
    with ConfigTransformer.from_worker_config({}) as transformer:
        return _resolve_providers(data, (), transformer, out, lenient)


def _resolve_providers(
    data: Any, path: tuple[str | int, ...], transformer: ConfigTransformer, out: Collector, lenient: bool = False
) -> Any:
    if isinstance(data, dict):
        return {k: _resolve_providers(v, (*path, k), transformer, out, lenient) for k, v in data.items()}
    if isinstance(data, list):
        return [_resolve_providers(v, (*path, i), transformer, out, lenient) for i, v in enumerate(data)]
    if isinstance(data, str) and "${" in data:
        try:
            return transformer.transform({"value": data}).data["value"]
        except ConfigException as e:
            if not (lenient and path[:1] == ("source",)):
                out.add(path, str(e).removeprefix("value: "))
    return data
