"""Moved to `cdc.api.data._javafmt` (the Connect data API's `Values` needs Java's number text too);
these names stay importable from here for the converters."""

from cdc.api.data._javafmt import (
    bigdecimal_to_string,
    double_to_string,
    float_to_string,
    from_unscaled_bytes,
    jackson_fixup,
    quantum,
    quote,
    quote_fast,
    to_float32,
    unscaled_bytes,
)

__all__ = [
    "bigdecimal_to_string",
    "double_to_string",
    "float_to_string",
    "from_unscaled_bytes",
    "jackson_fixup",
    "quantum",
    "quote",
    "quote_fast",
    "to_float32",
    "unscaled_bytes",
]
