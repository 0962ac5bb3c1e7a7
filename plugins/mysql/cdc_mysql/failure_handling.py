"""Debezium's `*.failure.handling.mode` decisions for one binlog event: fail, warn or skip (ignore).

`event.processing.failure.handling.mode` covers a row event whose rows cannot be turned into records,
`event.deserialization.failure.handling.mode` one whose bytes cannot be decoded, and
`inconsistent.schema.handling.mode` a captured table whose table map gives no usable schema. Under
fail the task stops with the cause and the key to change; warn logs the binlog position and skips
the event (or the table's events until its next table map); skip and ignore log at DEBUG.
"""

from __future__ import annotations

import logging

from cdc.api import ConnectException, DataException

log = logging.getLogger(__name__)

# What a broken event raises while it is decoded or turned into records (not a lost connection).
EVENT_ERRORS = (DataException, ValueError, TypeError, ArithmeticError, LookupError, UnicodeError)


def handle(mode: str, key: str, error: BaseException, what: str) -> None:
    """Raises under `fail`; otherwise logs that `what` (an event and its binlog position) is skipped."""
    if mode == "fail":
        raise ConnectException(
            f"{what}: {error}; set {key}=warn to skip such events with a warning (they are then not emitted)"
        ) from error
    level = logging.WARNING if mode == "warn" else logging.DEBUG
    log.log(level, "%s skipped (%s=%s): %s", what, key, mode, error)
