"""Moved to `cdc.api.data.values` (Kafka's `Values` belongs to the Connect data API, where the SMTs
can use it too); these names stay importable from here for the converters."""

from cdc.api.data.values import (
    _escape,
    _format_temporal,
    _millis,
    _Parser,
    convert_to_string,
    java_to_string,
    parse_string,
)

__all__ = ["_Parser", "_escape", "_format_temporal", "_millis", "convert_to_string", "java_to_string", "parse_string"]
