"""SignalRecord: one signal as any channel delivers it (Debezium's io.debezium.pipeline.signal.SignalRecord).

A signal is `id`, `type` and `data` (a JSON document, or nothing). Every check here ends
in a `SignalError` whose message names the signal id and what is wrong, so the connector
logs one line and keeps running, as Debezium's SignalProcessor does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

LOG = "log"
EXECUTE_SNAPSHOT = "execute-snapshot"
STOP_SNAPSHOT = "stop-snapshot"
PAUSE_SNAPSHOT = "pause-snapshot"
RESUME_SNAPSHOT = "resume-snapshot"
WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"
TYPES = (LOG, EXECUTE_SNAPSHOT, STOP_SNAPSHOT, PAUSE_SNAPSHOT, RESUME_SNAPSHOT)


class SignalError(ValueError):
    """A signal that cannot be acted on; the message is the one line the connector logs."""


@dataclass(frozen=True)
class SignalRecord:
    id: str
    type: str
    data: str | None
    channel: str
    # Channel-specific context (e.g. the offset a `log` signal prints); not part of the signal.
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def document(self) -> dict[str, Any]:
        """`data` parsed as a JSON object ({} when empty); SignalError if it is not one."""
        if self.data is None or not str(self.data).strip():
            return {}
        try:
            parsed = json.loads(self.data)
        except ValueError as e:
            raise SignalError(f"{self.describe()}: data is not valid JSON ({e}); ignored") from None
        if parsed is None:
            return {}
        if not isinstance(parsed, dict):
            raise SignalError(f"{self.describe()}: data must be a JSON object, got {type(parsed).__name__}; ignored")
        return parsed

    def describe(self) -> str:
        return f"Signal {self.id!r} (type {self.type!r}, {self.channel} channel)"

    @classmethod
    def from_json(cls, text: str | bytes, channel: str) -> SignalRecord:
        """A `{"id", "type", "data"}` document (the file and kafka channels); `data` may be an object or text."""
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise SignalError(
                f"Signal on the {channel} channel is not valid JSON ({e}): {text!r:.200}; ignored"
            ) from None
        if not isinstance(doc, dict) or not doc.get("type"):
            raise SignalError(
                f"Signal on the {channel} channel needs a JSON object with 'type': {text!r:.200}; ignored"
            )
        data = doc.get("data")
        if data is not None and not isinstance(data, str):
            data = json.dumps(data)
        return cls(str(doc.get("id") or ""), str(doc["type"]), data, channel)
