"""SignalProcessor: validates each signal and runs its action (Debezium's SignalProcessor and signal actions).

Actions (io.debezium.pipeline.signal.actions): `log`, `execute-snapshot`
(ExecuteSnapshot), `stop-snapshot` (StopSnapshot), `pause-snapshot`, `resume-snapshot`.
A signal that cannot be acted on (unknown type, malformed `data`, a data collection the
connector does not capture) is logged as one warning naming the signal id and what is wrong,
and changes nothing; the connector keeps running.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Protocol

from cdc_debezium.signals import record as r
from cdc_debezium.signals.incremental import Collection
from cdc_debezium.signals.record import SignalError, SignalRecord

log = logging.getLogger(__name__)


class SnapshotControl(Protocol):
    """What the connector's incremental snapshot offers the actions."""

    def captured_collections(self) -> list[str]:
        """Every data collection the connector captures now (`db.table` or `schema.table`)."""
        ...

    def add_collections(self, collections: list[Collection], signal_id: str) -> None: ...

    def stop_collections(self, ids: set[str] | None, signal_id: str) -> None: ...

    def pause(self, signal_id: str) -> None: ...

    def resume(self, signal_id: str) -> None: ...


class SignalProcessor:
    def __init__(self, control: SnapshotControl, offset: Callable[[], Any] = lambda: None) -> None:
        self.control = control
        self.offset = offset
        self.handled = 0
        self.rejected = 0

    def process(self, signal: SignalRecord) -> bool:
        """Runs `signal`; False (after one warning) when it is refused."""
        try:
            self._run(signal)
        except SignalError as e:
            self.rejected += 1
            log.warning("%s", e)
            return False
        self.handled += 1
        return True

    def _run(self, signal: SignalRecord) -> None:
        kind = signal.type.strip().lower()
        if kind in (r.WINDOW_OPEN, r.WINDOW_CLOSE):
            return  # watermarks are the connector's own; never actions
        if kind not in r.TYPES:
            raise SignalError(f"{signal.describe()}: unknown signal type; use one of {', '.join(r.TYPES)}; ignored")
        data = signal.document()
        if kind == r.LOG:
            message = data.get("message")
            if not isinstance(message, str):
                raise SignalError(f"{signal.describe()}: data needs a 'message' string; ignored")
            log.info("%s", message.replace("{}", str(self.offset())))
        elif kind == r.EXECUTE_SNAPSHOT:
            self._execute_snapshot(signal, data)
        elif kind == r.STOP_SNAPSHOT:
            names = data.get("data-collections")
            ids = set(self._resolve(signal, names)) if names else None
            self.control.stop_collections(ids, signal.id)
        elif kind == r.PAUSE_SNAPSHOT:
            self.control.pause(signal.id)
        else:
            self.control.resume(signal.id)

    def _execute_snapshot(self, signal: SignalRecord, data: dict[str, Any]) -> None:
        kind = str(data.get("type") or "incremental").lower()
        if kind not in ("incremental", "blocking"):
            raise SignalError(f"{signal.describe()}: snapshot type {kind!r} is not incremental or blocking; ignored")
        if kind == "blocking" and not callable(getattr(self.control, "blocking_snapshot", None)):
            raise SignalError(
                f"{signal.describe()}: blocking snapshots are not supported by this connector; send "
                '"type": "incremental" (it runs alongside streaming and yields the same rows); ignored'
            )
        names = data.get("data-collections")
        if not names:
            raise SignalError(f"{signal.describe()}: data needs a non-empty 'data-collections' list; ignored")
        ids = self._resolve(signal, names)
        conditions = data.get("additional-conditions") or []
        if not isinstance(conditions, list) or not all(
            isinstance(c, dict) and isinstance(c.get("filter"), str) for c in conditions
        ):
            raise SignalError(
                f"{signal.describe()}: 'additional-conditions' must be a list of "
                '{"data-collection": "<regex>", "filter": "<condition>"}; ignored'
            )
        surrogate = data.get("surrogate-key") or None
        if surrogate is not None and not isinstance(surrogate, str):
            raise SignalError(f"{signal.describe()}: 'surrogate-key' must be a column name; ignored")
        collections = []
        for table_id in ids:
            condition = None
            for c in conditions:
                pattern = str(c.get("data-collection") or "")
                if re.fullmatch(pattern, table_id, re.IGNORECASE):
                    condition = c["filter"]
            collections.append(Collection(table_id, condition, surrogate))
        if kind == "blocking":
            self.control.blocking_snapshot(collections, signal.id)  # type: ignore[attr-defined]
        else:
            self.control.add_collections(collections, signal.id)

    def _resolve(self, signal: SignalRecord, names: Any) -> list[str]:
        """The captured collections each regex of `data-collections` names; every regex must name one."""
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise SignalError(
                f"{signal.describe()}: 'data-collections' must be a list of table names or regexes; ignored"
            )
        captured = self.control.captured_collections()
        out: list[str] = []
        for name in names:
            try:
                pattern = re.compile(name, re.IGNORECASE)
            except re.error as e:
                raise SignalError(
                    f"{signal.describe()}: data-collection {name!r} is not a valid regex ({e}); ignored"
                ) from None
            matched = [t for t in captured if pattern.fullmatch(t)]
            if not matched:
                raise SignalError(
                    f"{signal.describe()}: data-collection {name!r} matches no table this connector captures "
                    "(check the name and table.include.list); ignored"
                )
            out.extend(t for t in matched if t not in out)
        return out
