"""Reading Kafka JsonConverter's `{"schema":…,"payload":…}` without re-parsing the schema.

A topic's records repeat the same schema text byte for byte, and the schema is most of
each record. Once one record has shown where its payload starts, later records with the
same leading bytes parse only their payload (several times faster).
"""

from __future__ import annotations

from typing import Any

from cdc_spark.decode._json import loads

_PAYLOAD = b',"payload":'


class EnvelopeReader:
    """Remembers the last schema prefix it saw (per instance: one per key/value role)."""

    def __init__(self) -> None:
        self._prefix: bytes | None = None
        self._schema: Any = None

    def read(self, data: bytes) -> tuple[bool, Any, Any]:
        """(enveloped, schema, payload); raises ValueError on malformed JSON."""
        prefix = self._prefix
        if prefix is not None and data.startswith(prefix) and data.endswith(b"}"):
            try:
                return True, self._schema, loads(data[len(prefix) : -1])
            except ValueError:
                pass  # not this shape after all: the full parse below decides
        node = loads(data)
        if not (isinstance(node, dict) and node.keys() == {"schema", "payload"}):
            return False, None, node
        self._learn(data, node)
        return True, node["schema"], node["payload"]

    def _learn(self, data: bytes, node: dict[str, Any]) -> None:
        if not data.startswith(b'{"schema":'):
            return
        at = data.find(_PAYLOAD)
        if at < 0:
            return
        prefix = data[: at + len(_PAYLOAD)]
        try:
            ok = data.endswith(b"}") and loads(data[len(prefix) : -1]) == node["payload"]
        except ValueError:
            ok = False
        if ok:
            self._prefix, self._schema = prefix, node["schema"]
