"""The connector, task and table a log line was written for, and the JSON log format.

Kafka Connect's `LoggingContext` puts `connector.context` in log4j's MDC while a connector
or task runs (`[name|worker] `, `[name|task-0] `, `[name|task-0|offsets] `), and its default
pattern prints it before each message. Python's counterpart of the MDC is a `contextvars`
variable: set on the thread that runs the connector or task, it is seen by every line that
thread logs, whichever library logs it. `ConnectorContextFilter` copies it onto each record
(`connector`, `task`, `table`, `connector_context`), so both formats can print it:

- text (default): `[time] LEVEL [name|task-0] message (logger)`, Kafka Connect's pattern;
- json (`--log-format json`, `log.format=json`): one object per line with the same fields.

A table is added with `table_context` (or `extra={"table": …}` on a single call). python-json-logger
was looked at for the JSON lines; a 20-line formatter over `json.dumps` needs no dependency.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "[%(asctime)s] %(levelname)s %(connector_context)s%(message)s (%(name)s)"


@dataclass(frozen=True)
class _Context:
    connector: str
    task: int | None = None
    scope: str | None = None  # "worker" for a connector, "offsets" for a task's offset commits

    def text(self) -> str:
        parts = [self.connector, "worker" if self.task is None else f"task-{self.task}"]
        if self.scope:
            parts.append(self.scope)
        return "[" + "|".join(parts) + "] "


_context: contextvars.ContextVar[_Context | None] = contextvars.ContextVar("connector_context", default=None)
_table: contextvars.ContextVar[str | None] = contextvars.ContextVar("log_table", default=None)


@contextmanager
def _set(var: contextvars.ContextVar[Any], value: Any) -> Iterator[None]:
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def for_connector(name: str) -> Any:
    """While a connector's own code runs (start, task_configs, stop): `[name|worker] `."""
    return _set(_context, _Context(name))


def for_task(connector: str, task: int) -> Any:
    """While a task runs, on its thread: `[name|task-0] `."""
    return _set(_context, _Context(connector, task))


def for_offsets(connector: str, task: int) -> Any:
    """While a task's offsets are committed: `[name|task-0|offsets] `."""
    return _set(_context, _Context(connector, task, "offsets"))


def table_context(table: str | None) -> Any:
    """While one table is worked on (its snapshot, its apply): the `table` field of each line."""
    return _set(_table, table)


class ConnectorContextFilter(logging.Filter):
    """Adds `connector`, `task`, `table` and `connector_context` to every record (a handler filter,
    so records of every logger get them). Fields given with `extra=` win."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = _context.get()
        if not hasattr(record, "connector"):
            record.connector = ctx.connector if ctx else None
        if not hasattr(record, "task"):
            record.task = ctx.task if ctx else None
        if not hasattr(record, "table"):
            record.table = _table.get()
        if not hasattr(record, "connector_context"):
            record.connector_context = ctx.text() if ctx else ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (ISO 8601, UTC), level, logger, thread, message, the
    connector context fields that are set, and the exception's trace when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "thread": record.threadName,
            "message": record.getMessage(),
        }
        for key in ("connector", "task", "table"):
            value = getattr(record, key, None)
            if value is not None:
                out[key] = value
        context = getattr(record, "connector_context", "")
        if context:
            out["connector.context"] = context.strip()
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.stack_info:
            out["stack"] = record.stack_info
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str | int | None, fmt: str = "text", stream: Any = None) -> None:
    """The root logger's one handler on stderr, in `fmt` (text or json), with the context filter."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log.format={fmt!r}: use text or json")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(ConnectorContextFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_cdc_handler", False)]:
        root.removeHandler(old)
    handler._cdc_handler = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    if level is not None:
        root.setLevel(level if isinstance(level, int) else getattr(logging, str(level).upper(), logging.INFO))


def current_format() -> str:
    """The format of the handler `configure` installed ("text" when none)."""
    for h in logging.getLogger().handlers:
        if getattr(h, "_cdc_handler", False):
            return "json" if isinstance(h.formatter, JsonFormatter) else "text"
    return "text"
