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
  FileStream connectors' file) name paths in the connector's own directory,
  `state.dir/connectors/<name>/` (created when the config is stored), or, when the
  operator sets it, under the worker's `rest.allowed.paths`. Either way a path may not be
  one of the worker's own files (`state.dir` outside the connector's directory: the
  embedded log, offsets, locks, other connectors' files), a symbolic link, or a file with
  other hard links. A value is judged as the path `open()` would use, relative ones from
  the worker's working directory, with `..` and symbolic links followed; a URL-looking
  value (`s3://../x`) is a relative local path to a connector that opens it, so it gets no
  exception.

Configs from the operator's own files (`cdc standalone worker.properties conn.properties`,
a `cdc run` job) are trusted and skip both checks. A key whose value is unchanged from the
stored config passes too: a PUT of what GET returned keeps working.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import quote

from cdc.api.errors import ConfigException
from cdc.config.providers import check_submitted_references, is_under, rest_config_providers

log = logging.getLogger(__name__)

REST_ALLOWED_PATHS = "rest.allowed.paths"

FILE_KEY_NAMES = frozenset({"file", "filename"})
FILE_KEY_SUFFIXES = (".file", ".filename", ".dir", ".directory")

__all__ = ["CONNECTORS_DIR", "REST_ALLOWED_PATHS", "SubmittedConfigPolicy", "connector_dir", "is_file_key"]


def is_file_key(key: str) -> bool:
    """Whether a connector key names a local file or directory, judged by its name."""
    return key in FILE_KEY_NAMES or key.endswith(FILE_KEY_SUFFIXES)


CONNECTORS_DIR = "connectors"


def connector_dir(state_dir: str | os.PathLike[str], name: str) -> Path:
    """`state.dir/connectors/<name>`: the one directory a REST-created connector's files live in.
    A name that is not a plain file name (`/`, `..`, control characters, ...) is percent-encoded,
    so no connector name leads out of `connectors/` or onto another connector's directory."""
    plain = name and name not in (".", "..") and all(c.isalnum() or c in "._-" for c in name) and name.isascii()
    safe = name if plain else "%" + quote(name, safe="").replace(".", "%2E")
    return Path(os.path.abspath(state_dir)) / CONNECTORS_DIR / safe


@dataclass(frozen=True)
class SubmittedConfigPolicy:
    """The checks a REST-submitted connector config passes before it is validated or stored."""

    providers: frozenset[str]
    roots: tuple[PurePath, ...]  # rest.allowed.paths; empty: the connector's own directory only
    roots_key: str  # the worker key the roots come from, for the advice in errors
    state_dir: PurePath

    @classmethod
    def from_worker_config(cls, config: Any) -> SubmittedConfigPolicy:
        """From a WorkerConfig (or a plain mapping of worker keys)."""
        setting = config.get(REST_ALLOWED_PATHS)
        state_dir = PurePath(os.path.normpath(os.path.abspath(str(config.get("state.dir") or ".cdc"))))
        if setting is None:
            entries, key = [], "state.dir"
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
        policy = cls(rest_config_providers(config), roots, key, state_dir)
        for warning in _unguarded(policy.providers, config):
            log.warning(warning)
        return policy

    def own_dir(self, name: str | None) -> PurePath:
        """The connector's directory; with no name (a validate call may omit it), `connectors/`."""
        base = PurePath(self.state_dir) / CONNECTORS_DIR
        return PurePath(connector_dir(self.state_dir, name)) if name else base

    def prepare(self, config: Mapping[str, Any]) -> None:
        """Create the connector's directory (owner-only) once a REST config naming files there is
        stored; a config with no file-valued key creates nothing (a Kafka worker may have no
        state.dir at all)."""
        name = str(config.get("name") or "")
        if self.roots or not name or not any(str(config[k] or "").strip() for k in _file_keys(config)):
            return
        own = connector_dir(self.state_dir, name)
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        for directory in (own.parent, own):  # owner-only whatever the umask (makedirs masks it)
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, 0o700)
                os.chmod(directory, 0o700)

    def check_references(self, config: Mapping[str, Any], previous: Mapping[str, str] | None = None) -> None:
        """Refuse references to providers REST configs may not use (one line naming the key)."""
        check_submitted_references(config, self.providers, previous)

    def check_paths(
        self,
        raw: Mapping[str, Any],
        resolved: Mapping[str, Any] | None = None,
        previous: Mapping[str, str] | None = None,
    ) -> None:
        """Refuse file-valued keys naming paths outside the connector's directory (or the roots).

        `resolved` holds the values after provider references were substituted (what the
        connector will use); errors quote the raw value only, never a resolved one.
        """
        values = raw if resolved is None else resolved
        name = str(raw.get("name") or "") or None
        own = self.own_dir(name)
        for key in _file_keys(values):
            given = raw.get(key)
            if previous is not None and given is not None and previous.get(key) == given:
                continue
            path = str(values[key] or "")
            if not path.strip():
                continue
            if not self._allowed(path, own):
                where = (
                    f"{REST_ALLOWED_PATHS}: {', '.join(str(r) for r in self.roots)}, and never state.dir's own files"
                    if self.roots
                    else f"the connector's own directory: {own}"
                )
                raise ConfigException(
                    f"{key}: {given} is outside the directories connector configs submitted over the REST API may "
                    f"name ({where}); name a path under {self.roots[0] if self.roots else own}, give the connector "
                    f"config to `cdc standalone` as a file, or add the directory to the worker's {REST_ALLOWED_PATHS}",
                    key,
                    given,
                )
            if link := _linked(path):
                raise ConfigException(
                    f"{key}: {given} is {link}; name a file of the connector's own, not another name for one",
                    key,
                    given,
                )

    def _allowed(self, path: str, own: PurePath) -> bool:
        # Relative paths count from the worker's working directory, as the connector opens them.
        written = PurePath(os.path.normpath(os.path.abspath(path)))
        # Resolved from the path as written, not the normalised one: the OS follows `link/..`
        # through the link first, so `root/link-out/../f` lands beside the link's target.
        actual = PurePath(os.path.realpath(os.path.join(os.getcwd(), path)))  # abspath would normalise
        real_state = PurePath(os.path.realpath(self.state_dir))
        real_own = real_state / own.relative_to(self.state_dir)
        # The worker's own files are never a connector's, whatever rest.allowed.paths says.
        if is_under(written, self.state_dir) and not is_under(written, own):
            return False
        if is_under(actual, real_state) and not is_under(actual, real_own):
            return False
        roots = self.roots or (own,)
        return any(is_under(written, r) for r in roots) and any(
            is_under(actual, PurePath(os.path.realpath(r))) for r in roots
        )


def _linked(path: str) -> str | None:
    """Why an existing `path` is another name for a file (a symbolic link, a file with other hard
    links), else None: writing through it would change a file the connector did not create."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link"
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return f"a file with {info.st_nlink} hard links"
    return None


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
