"""Compact JSON as Kafka Connect's JsonConverter (schemas.enable=false) writes it for maps and lists."""

from __future__ import annotations

import json
from typing import Any


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def loads(data: bytes | str) -> Any:
    return json.loads(data)
