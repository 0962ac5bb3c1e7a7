"""`POST /connectors/{name}/signals`: send a Debezium signal to a source connector over REST.

cdc extension. Kafka Connect and Debezium Server have no REST signal endpoint; the nearest is
Debezium's JMX signal channel (io.debezium.pipeline.signal.channels.jmx.JmxSignalChannel, the
MBean operation `signal(id, type, data)`). The body takes the same three fields, as Debezium's
signal table has them:

    {"id": "optional, a new UUID when absent", "type": "execute-snapshot",
     "data": {"data-collections": ["shop.orders"], "type": "incremental"}, "channel": "optional"}

`data` is a JSON object or null (a JSON text is parsed). The signal is delivered the way
`cdc signal` does (cdc.runtime.signal_delivery): a row of the connector's signal table, else a
line of `signal.file`, else a record on `signal.kafka.topic` in this worker's log; `channel`
(source, file, kafka) overrides that choice, among the channels the connector reads
(`signal.enabled.channels`). Answers 202 with `{"id", "type", "data", "channel", "destination"}`:
the connector acts on it when it reads it. A bad body is a 400 naming the field (an `id` over 42
characters, a `data` whose JSON text is over 2048: Debezium's signal table columns); a channel
the connector does not read, or a file channel without an absolute `signal.file`, a 400 that
names the connector's channels or the key to set; an unknown connector a 404.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from cdc.rest.errors import RestError
from cdc.rest.requests import call, json_body, openapi_body
from cdc.runtime.herder import Herder
from cdc.runtime.signal_delivery import (
    CHANNELS,
    SIGNAL_COLUMN_LIMITS,
    SIGNAL_TYPES,
    SNAPSHOT_TYPES,
    Signal,
    deliver_to_connector,
)

SIGNAL_BODY = openapi_body(
    {
        "type": "object",
        "required": ["type"],
        "properties": {
            "id": {"type": "string", "maxLength": SIGNAL_COLUMN_LIMITS["id"]},
            "type": {"type": "string", "enum": list(SIGNAL_TYPES)},
            "data": {"type": ["object", "null"]},
            "channel": {"type": "string", "enum": list(CHANNELS)},
        },
    }
)
_FIELDS = frozenset({"id", "type", "data", "channel"})


def parse_signal(body: Any) -> tuple[Signal, str | None]:
    """The signal and the channel override of a request body; RestError(400) naming the bad field."""
    if not isinstance(body, Mapping):
        raise RestError(400, 'Send a JSON object: {"type": "execute-snapshot", "data": {...}, "id": "..."}')
    extra = sorted(set(body) - _FIELDS)
    if extra:
        raise RestError(400, f"Unknown field {extra[0]!r}: a signal has id, type, data and channel")
    kind = body.get("type")
    if not isinstance(kind, str) or kind not in SIGNAL_TYPES:
        raise RestError(400, f"Field 'type' is {kind!r}: use one of {', '.join(SIGNAL_TYPES)}")
    signal_id = body.get("id")
    if signal_id is None:
        signal_id = str(uuid.uuid4())
    if not isinstance(signal_id, str) or not signal_id.strip():
        raise RestError(400, "Field 'id' must be a non-empty string (or left out for a new UUID)")
    data = body.get("data")
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            raise RestError(
                400, "Field 'data' is not JSON: send an object such as {\"data-collections\": [...]}"
            ) from None
    if data is not None and not isinstance(data, Mapping):
        raise RestError(400, f"Field 'data' must be a JSON object or null, not {type(data).__name__}")
    _check_data(kind, data)
    channel = body.get("channel")
    if channel is not None and channel not in CHANNELS:
        raise RestError(400, f"Field 'channel' is {channel!r}: use source, file or kafka (or leave it out)")
    signal = Signal(signal_id, kind, dict(data) if data is not None else None)
    problem = signal.problem()
    if problem is not None:
        raise RestError(400, f"Field '{problem[0]}': {problem[1]}")
    return signal, channel


def _check_data(kind: str, data: Mapping[str, Any] | None) -> None:
    if kind == "execute-snapshot":
        tables = (data or {}).get("data-collections")
        if not isinstance(tables, list) or not tables or not all(isinstance(t, str) and t.strip() for t in tables):
            raise RestError(
                400, "Field 'data.data-collections' must be a non-empty list of table names (db.table or schema.table)"
            )
    if kind in ("execute-snapshot", "stop-snapshot") and data is not None and "type" in data:
        snapshot_type = data["type"]
        if not isinstance(snapshot_type, str) or snapshot_type.lower() not in SNAPSHOT_TYPES:
            raise RestError(400, f"Field 'data.type' is {snapshot_type!r}: use incremental or blocking")
    if kind == "execute-snapshot" and data is not None and "additional-conditions" in data:
        conditions = data["additional-conditions"]
        if not isinstance(conditions, list) or not all(
            isinstance(c, Mapping) and isinstance(c.get("data-collection"), str) and isinstance(c.get("filter"), str)
            for c in conditions
        ):
            raise RestError(
                400,
                'Field \'data.additional-conditions\' must be a list of {"data-collection": ..., "filter": ...}',
            )
    if kind == "log" and not isinstance((data or {}).get("message"), str):
        raise RestError(400, "Field 'data.message' must be a string for a log signal")


def signals_router(herder: Herder) -> APIRouter:
    router = APIRouter()

    @router.post(
        "/connectors/{name:segment}/signals",
        status_code=202,
        summary="Send a Debezium signal (execute-snapshot, stop-snapshot, ...) to a source connector",
        openapi_extra=SIGNAL_BODY,
    )
    async def send_signal(name: str, request: Request) -> JSONResponse:
        signal, channel = parse_signal(await json_body(request))
        chosen, where = await call(deliver_to_connector, herder, name, signal, channel)
        body = {"id": signal.id, "type": signal.type, "data": signal.data, "channel": chosen, "destination": where}
        return JSONResponse(body, status_code=202)

    return router
