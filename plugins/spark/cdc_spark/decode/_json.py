"""JSON for the per-event hot path: orjson when installed (5x faster), else the stdlib.

orjson refuses what Kafka's JsonConverter may write (integers beyond 64 bits, NaN), so
a refusal falls back to `json.loads`, which also produces the error message users see.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - the plugin depends on orjson; this keeps it optional
    orjson = None  # type: ignore[assignment]


def loads(data: bytes | str) -> Any:
    if orjson is not None:
        try:
            return orjson.loads(data)
        except ValueError:
            pass
    return json.loads(data)


def canonical(value: Any) -> str:
    """One text per value whatever the field order: the grouping key of a batch."""
    if orjson is not None:
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        except TypeError:
            pass
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
