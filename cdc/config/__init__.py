"""Config files and config-value plumbing shared by the runtime, the REST API and the CLI.

- `properties`: Java `.properties` parsing and writing, faithful to `java.util.Properties`.
- `files`: worker and connector files in Kafka Connect's standalone formats.
- `providers`: `${provider:path:key}` references (Kafka's ConfigProvider / ConfigTransformer).
- `validation`: the validate endpoint's JSON and one-line error summaries.
"""

from cdc.config.files import (
    ConnectorRequest,
    load_connector_config,
    load_connector_request,
    load_properties_file,
    load_worker_config,
    read_config_text,
)
from cdc.config.properties import ConfigFileError, dump_properties, parse_properties
from cdc.config.providers import (
    BUILTIN_PROVIDERS,
    DEFAULT_PROVIDERS,
    REFERENCE_PATTERN,
    AllowedPaths,
    ConfigProvider,
    ConfigTransformer,
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
    TransformResult,
    has_references,
    instantiate_providers,
    resolve_provider_class,
)
from cdc.config.validation import (
    config_groups,
    config_infos,
    config_key_info,
    config_value_info,
    error_lines,
    first_error_line,
    invalid_config_message,
    validate_config,
)

__all__ = [
    "BUILTIN_PROVIDERS",
    "DEFAULT_PROVIDERS",
    "REFERENCE_PATTERN",
    "AllowedPaths",
    "ConfigFileError",
    "ConfigProvider",
    "ConfigTransformer",
    "ConnectorRequest",
    "DirectoryConfigProvider",
    "EnvVarConfigProvider",
    "FileConfigProvider",
    "TransformResult",
    "config_groups",
    "config_infos",
    "config_key_info",
    "config_value_info",
    "dump_properties",
    "error_lines",
    "first_error_line",
    "has_references",
    "instantiate_providers",
    "invalid_config_message",
    "load_connector_config",
    "load_connector_request",
    "load_properties_file",
    "load_worker_config",
    "parse_properties",
    "read_config_text",
    "resolve_provider_class",
    "validate_config",
]
