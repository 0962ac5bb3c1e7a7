"""Status traces and log lines that show neither the worker's secrets nor its install paths (issue 17).

Kafka Connect puts `ExceptionUtils.getStackTrace` into a failed connector's or task's
status `trace`, which anyone who can `GET /connectors/{name}/status` reads. Two things in
such a trace are the worker's own business:

- values config providers resolved (`${file:...}`, `${env:...}`): an exception message
  that quotes a config value would show the secret. Every provider value a connector's
  config resolved is replaced by `[hidden]` in its status traces, in the herders' log lines
  about it and in validation errors (`Invalid value <secret> for configuration ...`).
  Values shorter than MIN_SECRET_LENGTH are left alone: hiding `1` or `true` would
  garble every trace and hides nothing worth hiding.
- absolute paths of the worker's installation: `File "/opt/venv/lib/python3.12/
  site-packages/pymysql/connections.py"` becomes `File "pymysql/connections.py"`. Python's
  own library, site-packages, the virtualenv and each `sys.path` directory are cut from
  paths; other text is unchanged. With the `cdc` logger at DEBUG (`--log-level DEBUG`,
  `CDC_LOG_LEVEL=DEBUG`, or `PUT /admin/loggers/cdc`) traces keep their absolute paths.
"""

from __future__ import annotations

import contextlib
import logging
import os
import site
import sys
import sysconfig
import threading
import traceback
from collections.abc import Iterable
from typing import Any

HIDDEN = "[hidden]"
MIN_SECRET_LENGTH = 4
DEBUG_LOGGER = "cdc"

__all__ = [
    "HIDDEN",
    "MIN_SECRET_LENGTH",
    "ResolvedSecrets",
    "debug_traces",
    "redact",
    "redact_infos",
    "sanitize_trace",
    "status_trace",
    "strip_worker_paths",
]


class ResolvedSecrets:
    """Per connector, the values config providers resolved for it; shared by a worker and its herder."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_connector: dict[str, frozenset[str]] = {}

    def set(self, connector: str, values: Iterable[str]) -> None:
        with self._lock:
            self._by_connector[connector] = frozenset(values)

    def of(self, connector: str) -> frozenset[str]:
        with self._lock:
            return self._by_connector.get(connector, frozenset())

    def forget(self, connector: str) -> None:
        with self._lock:
            self._by_connector.pop(connector, None)


def _forms(secret: str) -> set[str]:
    """The ways a value shows up in text: as is, as `repr` escapes it, and each line of it."""
    forms = {secret, secret.strip(), repr(secret)[1:-1]}
    for sep in ("\x00", "\n"):
        forms.update(part.strip() for part in secret.split(sep))
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every form of every secret replaced by `[hidden]`, longest first."""
    forms: set[str] = set()
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_LENGTH:
            forms |= _forms(secret)
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, HIDDEN)
    return text


def redact_infos(infos: dict[str, Any], secrets: Iterable[str]) -> dict[str, Any]:
    """A validate body (`ConfigInfos`) whose error messages no longer quote resolved values."""
    values = list(secrets)
    if not values:
        return infos
    for info in infos.get("configs", []):
        value = info.get("value")
        if value and value.get("errors"):
            value["errors"] = [redact(e, values) for e in value["errors"]]
    return infos


def _worker_roots() -> list[str]:
    """Directories of the worker's installation, longest first, each ending with a separator."""
    candidates: set[str] = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            candidates.add(path)
    with contextlib.suppress(AttributeError):  # some embedded interpreters have no getsitepackages
        candidates.update(site.getsitepackages())
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if isinstance(user_site, str):
        candidates.add(user_site)
    candidates.update(p or os.getcwd() for p in sys.path)
    candidates.update(_package_parents())
    roots = set()
    for candidate in candidates:
        path = os.path.normpath(os.path.abspath(candidate))
        if os.path.dirname(path) != path and os.path.isdir(path):  # never the filesystem root itself
            roots.add(path.rstrip(os.sep) + os.sep)
    return sorted(roots, key=len, reverse=True)


def _package_parents() -> set[str]:
    """The directory holding each loaded top-level module or package: an editable install (a
    source checkout, `pip install -e`) is reached through an import hook, not a `sys.path` entry,
    so its checkout's path would otherwise show in traces."""
    out = set()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if "." in name or not isinstance(file, str):
            continue
        here = os.path.dirname(os.path.abspath(file))
        out.add(os.path.dirname(here) if os.path.basename(file).startswith("__init__.") else here)
    return out


def strip_worker_paths(text: str) -> str:
    """`text` with the worker's installation directories cut from the paths in it."""
    for root in _worker_roots():
        text = text.replace(root, "")
    return text


def debug_traces() -> bool:
    """Whether traces keep absolute paths: the `cdc` logger is at DEBUG."""
    return logging.getLogger(DEBUG_LOGGER).isEnabledFor(logging.DEBUG)


def sanitize_trace(trace: str | None, secrets: Iterable[str] = ()) -> str | None:
    """A trace fit for a status record: secrets hidden, install paths cut unless debug is on."""
    if trace is None:
        return None
    trace = redact(trace, secrets)
    return trace if debug_traces() else strip_worker_paths(trace)


def status_trace(e: BaseException, secrets: Iterable[str] = ()) -> str:
    """Kafka's status `trace` for `e`: the whole traceback, sanitized."""
    return sanitize_trace("".join(traceback.format_exception(e)).strip(), secrets) or ""
