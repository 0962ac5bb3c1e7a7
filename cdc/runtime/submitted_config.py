"""What a connector config submitted over the REST API may do (issue 17).

Kafka Connect trusts every REST caller with the worker's files: a connector config may
reference `${file:/etc/passwd:...}` (CVE-2024-31141, fixed there with `allowed.paths`) and
name any path for a connector to write, such as Debezium's
`schema.history.internal.file.filename`. Here a config that arrives over the REST API
(`POST /connectors`, `PUT`/`PATCH /connectors/{name}/config`, the validate endpoint) is
admitted only when

- its `${provider:...}` references use providers the worker's `rest.config.providers`
  allows (default: those `config.providers` declares, except `env`, `file` and
  `directory`; see `cdc.config.providers`), and
- its file-valued keys (`file`, `filename`, `*.file`, `*.filename`, `*.dir`,
  `*.directory`: the schema history file, Debezium's signal and offsets files, the
  FileStream connectors' file) name paths under the worker's `rest.allowed.paths`
  (default: the worker's `state.dir`). A value is judged as the path `open()` would use,
  relative ones from the worker's working directory, with `..` and symbolic links
  followed; a URL-looking value (`s3://../x`) is a relative local path to a connector
  that opens it, so it gets no exception.

Configs from the operator's own files (`cdc standalone worker.properties conn.properties`,
a `cdc run` job) are trusted and skip both checks. A key whose value is unchanged from the
stored config passes too: a PUT of what GET returned keeps working.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from cdc.api.errors import ConfigException
from cdc.config.providers import check_submitted_references, is_under, rest_config_providers

log = logging.getLogger(__name__)

REST_ALLOWED_PATHS = "rest.allowed.paths"

FILE_KEY_NAMES = frozenset({"file", "filename"})
FILE_KEY_SUFFIXES = (".file", ".filename", ".dir", ".directory")

__all__ = ["REST_ALLOWED_PATHS", "SubmittedConfigPolicy", "is_file_key"]


def is_file_key(key: str) -> bool:
    """Whether a connector key names a local file or directory, judged by its name."""
    return key in FILE_KEY_NAMES or key.endswith(FILE_KEY_SUFFIXES)


@dataclass(frozen=True)
class SubmittedConfigPolicy:
    """The checks a REST-submitted connector config passes before it is validated or stored."""

    providers: frozenset[str]
    roots: tuple[PurePath, ...]
    roots_key: str  # the worker key the roots come from, for the advice in errors

    @classmethod
    def from_worker_config(cls, config: Any) -> SubmittedConfigPolicy:
        """From a WorkerConfig (or a plain mapping of worker keys)."""
        setting = config.get(REST_ALLOWED_PATHS)
        if setting is None:
            entries, key = [str(config.get("state.dir") or ".cdc")], "state.dir"
        else:
            entries = [e.strip() for e in (setting if isinstance(setting, list) else str(setting).split(","))]
            key = REST_ALLOWED_PATHS
            for entry in entries:
                if not entry or not os.path.isabs(entry):
                    raise ConfigException(
                        f"{REST_ALLOWED_PATHS} entry {entry!r} is not valid; each entry must be an absolute directory",
                        REST_ALLOWED_PATHS,
                        ",".join(entries),
                    )
        roots = tuple(PurePath(os.path.normpath(os.path.abspath(e))) for e in entries if e)
        policy = cls(rest_config_providers(config), roots, key)
        for warning in _unguarded(policy.providers, config):
            log.warning(warning)
        return policy

    def check_references(self, config: Mapping[str, Any], previous: Mapping[str, str] | None = None) -> None:
        """Refuse references to providers REST configs may not use (one line naming the key)."""
        check_submitted_references(config, self.providers, previous)

    def check_paths(
        self,
        raw: Mapping[str, Any],
        resolved: Mapping[str, Any] | None = None,
        previous: Mapping[str, str] | None = None,
    ) -> None:
        """Refuse file-valued keys naming paths outside the roots.

        `resolved` holds the values after provider references were substituted (what the
        connector will use); errors quote the raw value only, never a resolved one.
        """
        values = raw if resolved is None else resolved
        for key in _file_keys(values):
            given = raw.get(key)
            if previous is not None and given is not None and previous.get(key) == given:
                continue
            path = str(values[key] or "")
            if not path.strip() or self._allowed(path):
                continue
            shown = ", ".join(str(r) for r in self.roots)
            raise ConfigException(
                f"{key}: {given} is outside the directories connector configs submitted over the REST API may name "
                f"({self.roots_key}: {shown}); name a path under {self.roots[0]}, give the connector config to "
                f"`cdc standalone` as a file, or add the directory to the worker's {REST_ALLOWED_PATHS}",
                key,
                given,
            )

    def _allowed(self, path: str) -> bool:
        # Relative paths count from the worker's working directory, as the connector opens them.
        normalised = PurePath(os.path.normpath(os.path.abspath(path)))
        if not any(is_under(normalised, root) for root in self.roots):
            return False
        # Resolved from the path as written, not the normalised one: the OS follows `link/..`
        # through the link first, so `root/link-out/../f` lands beside the link's target.
        real = PurePath(os.path.realpath(os.path.join(os.getcwd(), path)))  # abspath would normalise
        return any(is_under(real, PurePath(os.path.realpath(root))) for root in self.roots)


def _unguarded(providers: frozenset[str], config: Any) -> list[str]:
    """Local providers REST configs may use with nothing limiting what they read."""
    originals = config.originals() if callable(getattr(config, "originals", None)) else config
    out = []
    for name, guard in (("file", "allowed.paths"), ("directory", "allowed.paths"), ("env", "allowlist.pattern")):
        if name in providers and not originals.get(f"config.providers.{name}.param.{guard}"):
            out.append(
                f"rest.config.providers lets REST-submitted connector configs use the {name!r} provider without "
                f"config.providers.{name}.param.{guard}: any REST caller can read every "
                f"{'environment variable' if name == 'env' else 'file'} this worker can; set it"
            )
    return out


def _file_keys(config: Mapping[str, Any]) -> Iterable[str]:
    return [k for k in config if is_file_key(k)]
