r"""The connector, task and table a log line was written for, and the JSON log format.

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

Both formats are structured against log injection (issue 33): much of what is logged comes from
outside (config keys and values, connector names, REST paths, a driver's error text), and a key
such as `"x\n[2024-01-01 00:00:00,000] ERROR [shop|task-0] Task shop-0 failed"` would otherwise
forge a whole line. So every field of a text line, after `%` formatting, has its control
characters escaped (`escape_controls`): `\n` `\r` `\t` as those two characters, the others as
`\xNN` / `\uNNNN`, with lone surrogates (which cannot be written as UTF-8 at all) and the
Unicode line separators and bidi overrides too. A traceback appended for `exc_info` keeps its own
line breaks, the ones the traceback module writes; the parts of it a caller controls (each
exception's message and notes, a SyntaxError's text) are escaped first, so they cannot start a
line. A JSON line escapes what `json.dumps` leaves raw the same way, as `\uNNNN`.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "[%(asctime)s] %(levelname)s %(connector_context)s%(message)s (%(name)s)"

# What a log line must not carry raw: C0 controls and DEL (line breaks, NUL, terminal escapes), C1
# controls (NEL, CSI), the Unicode line and paragraph separators, the bidi embeddings, overrides
# and isolates (text shown in another order than it is written: "Trojan Source"), and UTF-16
# surrogates (never valid in UTF-8: the write would fail).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    r"""`text` with every character a log line must not carry raw written as an escape (`\n`,
    `\x00`, `\x1b`, `\u2028`, `\udc80`): one line, printable, encodable as UTF-8. Text without
    such characters comes back unchanged (the common case costs one regex search)."""
    return _UNSAFE.sub(_escape_one, text) if _UNSAFE.search(text) else text


def _escape_lines(text: str) -> str:
    """Each line of `text` escaped, its line breaks kept: for a block the formatter builds itself."""
    return "\n".join(escape_controls(line) for line in text.split("\n"))


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


def _escape_traceback(te: traceback.TracebackException) -> None:
    """Escapes, in place, what the raiser controls in `te` and the exceptions chained to it: each
    message, its notes, a SyntaxError's text and message. The frames come from source files."""
    seen: set[int] = set()
    pending = [te]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        message = getattr(node, "_str", None)  # what str(exception) gave (CPython 3.10 to 3.13)
        if isinstance(message, str):
            node._str = escape_controls(message)
        notes = getattr(node, "__notes__", None)
        if isinstance(notes, list):
            node.__notes__ = [escape_controls(n) if isinstance(n, str) else n for n in notes]
        for attr in ("msg", "text", "filename"):
            value = getattr(node, attr, None)
            if isinstance(value, str):
                setattr(node, attr, escape_controls(value))
        pending += [n for n in (node.__cause__, node.__context__) if n is not None]
        pending += list(getattr(node, "exceptions", None) or ())


def format_exception_safely(exc_info: Any) -> str:
    """The traceback of `exc_info` as the traceback module writes it, without a line that the
    exception's message (or anything else its raiser chose) started."""
    te = traceback.TracebackException(*exc_info)
    _escape_traceback(te)
    return _escape_lines("".join(te.format()).rstrip("\n"))


class TextFormatter(logging.Formatter):
    """Kafka Connect's text pattern (TEXT_FORMAT), one line per record: every field escaped
    (`escape_controls`) after the message's `%` formatting; an `exc_info` traceback follows on
    lines of its own that the exception cannot forge (`format_exception_safely`)."""

    def __init__(self, fmt: str = TEXT_FORMAT, datefmt: str | None = None) -> None:
        super().__init__(fmt, datefmt)

    def formatMessage(self, record: logging.LogRecord) -> str:
        # A copy, so that other handlers of the same record see its fields as they were.
        escaped = logging.makeLogRecord(
            {k: escape_controls(v) if isinstance(v, str) else v for k, v in record.__dict__.items()}
        )
        return super().formatMessage(escaped)

    def formatException(self, ei: Any) -> str:
        return format_exception_safely(ei)

    def formatStack(self, stack_info: str) -> str:
        return _escape_lines(stack_info)

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        out = self.formatMessage(record)
        # Never the cached `record.exc_text`: another handler's formatter may have left it raw.
        if record.exc_info:
            out += "\n" + self.formatException(record.exc_info)
        elif record.exc_text:
            out += "\n" + _escape_lines(record.exc_text)
        if record.stack_info:
            out += "\n" + self.formatStack(record.stack_info)
        return out


def _escape_json(line: str) -> str:
    r"""A `json.dumps` line with what it leaves raw (DEL, C1, U+2028, bidi controls, surrogates) as
    `\uNNNN`: the same value to a JSON reader, one safe line to everyone else. C0 controls are
    already escaped by json.dumps; outside strings a JSON line is ASCII."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", line) if _UNSAFE.search(line) else line


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
            out["exception"] = format_exception_safely(record.exc_info)
        elif record.stack_info:
            out["stack"] = record.stack_info
        return _escape_json(json.dumps(out, ensure_ascii=False, default=str))


def configure(level: str | int | None, fmt: str = "text", stream: Any = None) -> None:
    """The root logger's one handler on stderr, in `fmt` (text or json), with the context filter."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log.format={fmt!r}: use text or json")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(ConnectorContextFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
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
