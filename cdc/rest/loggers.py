"""KIP-495 `/admin/loggers`: read and change log levels at runtime, with Kafka's level names."""

from __future__ import annotations

import logging
import time
from typing import Any

from cdc.rest.errors import RestError

# Kafka (log4j) level names -> Python levels; Python has no TRACE, so it maps to DEBUG.
_TO_PY = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "OFF": logging.CRITICAL + 10,
}
_FROM_PY = {logging.DEBUG: "DEBUG", logging.INFO: "INFO", logging.WARNING: "WARN", logging.ERROR: "ERROR"}
_FROM_PY[logging.CRITICAL] = "FATAL"
_FROM_PY[logging.CRITICAL + 10] = "OFF"


def _name(level: int) -> str:
    return _FROM_PY.get(level, logging.getLevelName(level))


class Loggers:
    """Which levels were set, and when (`last_modified`, ms since the epoch; null if never)."""

    def __init__(self) -> None:
        self._modified: dict[str, int] = {}

    def all(self) -> dict[str, dict[str, Any]]:
        """Loggers with an explicit level, plus `root`, as Kafka lists them."""
        out = {"root": self._level("root")}
        for name in sorted(logging.root.manager.loggerDict):
            logger = logging.root.manager.loggerDict[name]
            if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET:
                out[name] = self._level(name)
        return out

    def level(self, name: str) -> dict[str, Any]:
        if name != "root" and name not in logging.root.manager.loggerDict:
            raise RestError(404, f"Logger {name} not found.")
        return self._level(name)

    def _level(self, name: str) -> dict[str, Any]:
        logger = logging.root if name == "root" else logging.getLogger(name)
        return {"level": _name(logger.getEffectiveLevel()), "last_modified": self._modified.get(name)}

    def set_level(self, name: str, level: str | None) -> list[str]:
        """Set `name` and its descendants; returns the affected logger names (Kafka's 200 body)."""
        if not level:
            raise RestError(
                400,
                "Desired 'level' parameter was not specified in request. "
                'Send {"level": "DEBUG"} (or INFO, WARN, ...)',
            )
        py_level = _TO_PY.get(str(level).upper())
        if py_level is None:
            # 404, not 400: Kafka's LoggingResource throws NotFoundException for an unknown level.
            raise RestError(404, f"invalid log level '{level}'. Use one of {', '.join(_TO_PY)}")
        now = int(time.time() * 1000)
        if name == "root":
            affected = ["root", *sorted(logging.root.manager.loggerDict)]
        else:
            affected = [
                n for n in sorted({name, *logging.root.manager.loggerDict}) if n == name or n.startswith(name + ".")
            ]
        for n in affected:
            logger = logging.root if n == "root" else logging.getLogger(n)
            logger.setLevel(py_level)
            self._modified[n] = now
        return affected
