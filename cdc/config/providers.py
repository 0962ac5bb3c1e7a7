"""Kafka's ConfigProvider mechanism: `${provider:path:key}` references in config values.

Providers are declared in the worker config exactly as in Kafka::

    config.providers=vault
    config.providers.vault.class=com.example.VaultConfigProvider
    config.providers.vault.param.address=https://vault:8200

and are referenced from worker or connector configs as `${vault:secret/db:password}`.

Deviations from Kafka, each deliberate:

- `env`, `file` and `directory` are available even when `config.providers` does not
  declare them, because `${env:DB_PASSWORD}` is the common case in CDC job files and
  a worker file should not need three lines of boilerplate for it. Their
  `config.providers.<name>.param.*` settings (such as `allowed.paths`) still apply, and
  declaring a provider under one of these names replaces the built-in.
- A reference that cannot be resolved is an error naming the config key, instead of
  Kafka's silent pass-through of the literal `${...}` text, which otherwise surfaces
  much later as a failed login with the password "${env:DB_PASS}".
- Connector configs submitted over the REST API may reference only the providers named by
  the worker's `rest.config.providers` (issue 17). By default that is every provider
  `config.providers` declares *except* `env`, `file` and `directory`, which read the
  worker's own environment and files: a REST caller could otherwise read
  `${file:/proc/self/environ:...}` or any file the worker can (Kafka's CVE-2024-31141).
  Kafka resolves every configured provider whatever the config's origin and relies on
  `allowed.paths` alone. Configs from the operator's own files (`cdc standalone`'s
  arguments, a `cdc run` job) keep every provider. A value a stored config already held
  may be submitted again unchanged (a PUT of the config GET returned).
- `allowed.paths` also resolves symbolic links: a path must lie under an allowed root both
  as written (normalised, as in Kafka) and once its links are followed, so a link inside an
  allowed directory cannot lead to `/etc/passwd`. Kafka checks the written path only.
  Kubernetes secret mounts still work: their links point inside the mount.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from cdc.api.config import Password
from cdc.api.errors import ConfigException
from cdc.config.files import read_config_text
from cdc.config.properties import parse_properties

__all__ = [
    "BUILTIN_PROVIDERS",
    "DEFAULT_PROVIDERS",
    "LOCAL_PROVIDERS",
    "REFERENCE_PATTERN",
    "REST_CONFIG_PROVIDERS",
    "AllowedPaths",
    "ConfigProvider",
    "ConfigTransformer",
    "DirectoryConfigProvider",
    "EnvVarConfigProvider",
    "FileConfigProvider",
    "TransformResult",
    "check_submitted_references",
    "has_references",
    "instantiate_providers",
    "is_under",
    "resolve_provider_class",
    "rest_config_providers",
    "reverse_transform",
]

CONFIG_PROVIDERS = "config.providers"
ALLOWED_PATHS = "allowed.paths"
ALLOWLIST_PATTERN = "allowlist.pattern"
REST_CONFIG_PROVIDERS = "rest.config.providers"

LOCAL_PROVIDERS = frozenset({"env", "file", "directory"})
"""Providers that read the worker's own environment or files: not for REST-submitted configs by default."""

REFERENCE_PATTERN = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")
"""Kafka's ConfigTransformer.DEFAULT_PATTERN: group 1 provider, group 3 path, group 4 key."""


class ConfigProvider:
    """Base class of config providers (Kafka's `org.apache.kafka.common.config.provider.ConfigProvider`).

    A provider is built with no arguments, then `configure()`d with its
    `config.providers.<name>.param.*` settings (prefix stripped).
    Runtime-loaded providers need not subclass this; they need `configure`, `get` and `close`.
    """

    def configure(self, configs: Mapping[str, str]) -> None:
        """Receive the provider's params. The default accepts and ignores them."""

    def get(self, path: str, keys: Iterable[str] | None = None) -> dict[str, str]:
        """The values of `keys` at `path` (all of them if `keys` is None).

        Keys that do not exist are simply absent from the result. Raise ConfigException
        for a path that cannot be read; its message should say how to fix it.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release resources. The default does nothing."""

    def describe_missing(self, path: str, key: str) -> str:
        """Why `key` at `path` was absent and how to fix it; follows the reference text in errors."""
        where = f" at {path}" if path else ""
        return f"has no value for {key!r}{where}; check the reference"


# -- built-in providers -------------------------------------------------------------------
class EnvVarConfigProvider(ConfigProvider):
    """`${env:VAR}`: environment variables (Kafka 3.5, KIP-887).

    `allowlist.pattern` (default `.*`) must match the whole variable name.
    The environment is read at each `get`, not at `configure` as Kafka does, so a
    variable exported after start-up (by a test, or a wrapper script) is seen.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        self._allowlist = re.compile(".*")

    def configure(self, configs: Mapping[str, str]) -> None:
        pattern = configs.get(ALLOWLIST_PATTERN)
        if pattern is None:
            return
        try:
            self._allowlist = re.compile(str(pattern))
        except re.error as e:
            raise ConfigException(
                f"{ALLOWLIST_PATTERN} {pattern!r} is not a valid regular expression ({e})",
                ALLOWLIST_PATTERN,
                pattern,
            ) from e

    def _env(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    def get(self, path: str, keys: Iterable[str] | None = None) -> dict[str, str]:
        if path:
            raise ConfigException(f"takes no path (got {path!r}); write ${{env:VARIABLE}}")
        env = self._env()
        names = env.keys() if keys is None else keys
        return {k: env[k] for k in names if k in env and self._allowlist.fullmatch(k)}

    def describe_missing(self, path: str, key: str) -> str:
        if key in self._env():
            return (
                f"is not allowed by the env provider's {ALLOWLIST_PATTERN} {self._allowlist.pattern!r}; "
                f"widen config.providers.env.param.{ALLOWLIST_PATTERN} or use an allowed variable"
            )
        return f"is not set; export {key} or remove the reference"


class AllowedPaths:
    """KIP-993 `allowed.paths`: comma-separated absolute, existing directories or files.

    Like Kafka, a path is checked after lexical normalisation (`a/../b` → `b`), comparing
    whole path components. Unlike Kafka, the path with its symbolic links followed must lie
    under an allowed root too (also with its links followed), so a link in an allowed
    directory cannot lead out of it. Kubernetes secret mounts (`pw` → `..data/pw` →
    `..2024_01_01/pw`) stay inside their mount and pass. A relative path is refused: it
    would depend on the worker's working directory.
    """

    def __init__(self, setting: str | None) -> None:
        self.roots: list[PurePath] | None = None
        if not setting:
            return
        roots: list[PurePath] = []
        for part in setting.split(","):
            entry = part.strip()
            normalised = os.path.normpath(entry) if entry else entry
            if not entry or not os.path.isabs(normalised) or not os.path.exists(normalised):
                raise ConfigException(
                    f"{ALLOWED_PATHS} entry {entry!r} is not valid; each entry must be an absolute path that exists",
                    ALLOWED_PATHS,
                    setting,
                )
            roots.append(PurePath(normalised))
        self.roots = roots

    def check(self, path: str) -> str:
        """The normalised path if allowed; raise ConfigException otherwise."""
        if self.roots is None:
            return path
        allowed = ", ".join(str(r) for r in self.roots)
        if not os.path.isabs(path):
            raise ConfigException(
                f"path {path} is relative; with {ALLOWED_PATHS} ({allowed}) write the absolute path of a file under it"
            )
        normalised = PurePath(os.path.normpath(path))
        if not any(is_under(normalised, root) for root in self.roots):
            raise ConfigException(
                f"path {path} is outside {ALLOWED_PATHS} ({allowed}); move the file under an allowed path "
                f"or extend the provider's {ALLOWED_PATHS}"
            )
        real = PurePath(os.path.realpath(normalised))
        if not any(is_under(real, PurePath(os.path.realpath(root))) for root in self.roots):
            raise ConfigException(
                f"path {path} leads through a symbolic link outside {ALLOWED_PATHS} ({allowed}); "
                f"put the file itself under an allowed path or extend the provider's {ALLOWED_PATHS}"
            )
        return str(normalised)


def is_under(path: PurePath, root: PurePath) -> bool:
    """Whether `path` is `root` or inside it, by whole components (`/a/bc` is not under `/a/b`)."""
    return path.parts[: len(root.parts)] == root.parts


class FileConfigProvider(ConfigProvider):
    """`${file:/path/to/file.properties:key}`: a key of a `.properties` file. Supports `allowed.paths`."""

    def __init__(self) -> None:
        self._allowed = AllowedPaths(None)

    def configure(self, configs: Mapping[str, str]) -> None:
        self._allowed = AllowedPaths(configs.get(ALLOWED_PATHS))

    def get(self, path: str, keys: Iterable[str] | None = None) -> dict[str, str]:
        if not path:
            raise ConfigException("needs a file path; write ${file:/path/to/file.properties:key}")
        text = read_config_text(self._allowed.check(path))
        try:
            props = parse_properties(text, path)
        except ConfigException as e:
            # Its message may quote a line of the file, which is not necessarily a config file.
            line = getattr(e, "line_number", None)
            where = f" (line {line})" if line else ""
            raise ConfigException(f"{path} is not a valid .properties file{where}; fix the file") from None
        if keys is None:
            return props
        return {k: props[k] for k in keys if k in props}

    def describe_missing(self, path: str, key: str) -> str:
        return f"names a key that {path} does not define; add {key}=... to it or fix the reference"


class DirectoryConfigProvider(ConfigProvider):
    """`${directory:/dir:filename}`: a file's whole contents (KIP-632), e.g. a Kubernetes secret mount.

    Only regular files directly in the directory are read (a key with a `/` never
    matches, as in Kafka); contents are decoded as UTF-8 with invalid bytes replaced,
    as Kafka's `new String(bytes, UTF_8)` does, and are not stripped.
    """

    def __init__(self) -> None:
        self._allowed = AllowedPaths(None)

    def configure(self, configs: Mapping[str, str]) -> None:
        self._allowed = AllowedPaths(configs.get(ALLOWED_PATHS))

    def get(self, path: str, keys: Iterable[str] | None = None) -> dict[str, str]:
        if not path:
            raise ConfigException("needs a directory; write ${directory:/path/to/dir:filename}")
        directory = self._allowed.check(path)
        if not os.path.isdir(directory):
            raise ConfigException(f"{path} is not a directory; check the path")
        names = os.listdir(directory) if keys is None else keys
        out: dict[str, str] = {}
        for name in names:
            if not name or name in (".", "..") or "/" in name or os.sep in name:
                continue
            file = os.path.join(directory, name)
            if keys is None and os.path.islink(file):
                try:
                    self._allowed.check(file)
                except ConfigException:
                    continue  # listing everything: a link out of allowed.paths is skipped, not read
            else:
                self._allowed.check(file)  # a file in the directory may be a link out of allowed.paths
            if os.path.isfile(file):
                try:
                    with open(file, "rb") as f:
                        out[name] = f.read().decode("utf-8", errors="replace")
                except OSError as e:
                    raise ConfigException(f"cannot read {file}: {e.strerror or e}") from None
        return out

    def describe_missing(self, path: str, key: str) -> str:
        return f"names no file in {path}; create {os.path.join(path, key)} or fix the reference"


_KAFKA_PACKAGE = "org.apache.kafka.common.config.provider."
_BUILTINS: tuple[type[ConfigProvider], ...] = (EnvVarConfigProvider, FileConfigProvider, DirectoryConfigProvider)

BUILTIN_PROVIDERS: Mapping[str, type[ConfigProvider]] = {
    alias: cls
    for cls in _BUILTINS
    for alias in (_KAFKA_PACKAGE + cls.__name__, cls.__name__, f"{cls.__module__}.{cls.__name__}")
}
"""Built-in provider classes by Kafka class name, simple name and Python name."""

DEFAULT_PROVIDERS: Mapping[str, type[ConfigProvider]] = {
    "env": EnvVarConfigProvider,
    "file": FileConfigProvider,
    "directory": DirectoryConfigProvider,
}
"""Providers available without being declared in `config.providers` (a deviation from Kafka)."""


# -- instantiation from a worker config ---------------------------------------------------
def resolve_provider_class(class_name: str, resolve_class: Callable[[str], type] | None = None) -> type:
    """The class named by a `config.providers.<name>.class` value.

    `resolve_class` (the runtime's plugin registry) is asked first; the built-ins by Kafka
    class name, simple name or Python name are the fall-back.
    """
    name = class_name.strip()
    if resolve_class is not None:
        try:
            found = resolve_class(name)
        except Exception:  # the registry's own "not found" error; the built-ins may still know it
            found = None
        if found is not None:
            return found
    if name in BUILTIN_PROVIDERS:
        return BUILTIN_PROVIDERS[name]
    raise ConfigException(
        f"config provider class {name!r} was not found; install its plugin on plugin.path "
        f"or use a built-in ({', '.join(c.__name__ for c in _BUILTINS)})",
        None,
        name,
    )


def instantiate_providers(
    worker_config: Mapping[str, str],
    resolve_class: Callable[[str], type] | None = None,
    *,
    include_defaults: bool = True,
) -> dict[str, Any]:
    """Build and configure every provider the worker config declares, plus the defaults.

    Kafka's rules: `config.providers` lists names; each name's class is
    `config.providers.<name>.class`; `config.providers.<name>.param.<x>` is passed to
    `configure` as `<x>`. With `include_defaults`, `env`/`file`/`directory` exist even when
    not listed (see the module docstring), configured from their `param.*` settings.
    """
    listed = [n.strip() for n in (worker_config.get(CONFIG_PROVIDERS) or "").split(",") if n.strip()]
    names = list(dict.fromkeys([*listed, *(DEFAULT_PROVIDERS if include_defaults else ())]))
    providers: dict[str, Any] = {}
    try:
        for name in names:
            class_key = f"{CONFIG_PROVIDERS}.{name}.class"
            class_name = worker_config.get(class_key)
            cls: type
            if class_name:
                try:
                    cls = resolve_provider_class(class_name, resolve_class)
                except ConfigException as e:
                    raise ConfigException(f"{class_key}: {e}", class_key, class_name) from None
            elif name in DEFAULT_PROVIDERS and include_defaults:
                cls = DEFAULT_PROVIDERS[name]
            else:
                raise ConfigException(
                    f"{CONFIG_PROVIDERS} lists {name!r} but {class_key} is not set; set it to the provider's class",
                    class_key,
                )
            providers[name] = _configure(name, cls, worker_config)
    except BaseException:
        for provider in providers.values():
            _close_quietly(provider)
        raise
    return providers


def _configure(name: str, cls: type, worker_config: Mapping[str, str]) -> Any:
    class_key = f"{CONFIG_PROVIDERS}.{name}.class"
    prefix = f"{CONFIG_PROVIDERS}.{name}.param."
    try:
        provider = cls()
    except Exception as e:
        raise ConfigException(f"{class_key}: cannot create {cls.__name__}: {e}", class_key) from e
    if not callable(getattr(provider, "get", None)):
        raise ConfigException(f"{class_key}: {cls.__name__} is not a config provider (it has no get method)", class_key)
    params = {k[len(prefix) :]: v for k, v in worker_config.items() if k.startswith(prefix)}
    try:
        if callable(getattr(provider, "configure", None)):
            provider.configure(params)
    except ConfigException as e:
        key = prefix + e.name if e.name else class_key
        raise ConfigException(f"{key}: {e}", key, e.value) from None
    return provider


def _close_quietly(provider: Any) -> None:
    close = getattr(provider, "close", None)
    if callable(close):
        # Best effort: closing one provider must not stop the others from closing.
        with contextlib.suppress(Exception):
            close()


# -- transformation -----------------------------------------------------------------------
def has_references(value: str | None) -> bool:
    """Whether `value` holds a `${provider:...}` reference (Kafka's keysWithVariableValues test)."""
    return value is not None and REFERENCE_PATTERN.search(value) is not None


@dataclass(frozen=True)
class TransformResult:
    """Configs with references substituted, and which keys got values from providers.

    Callers must treat `resolved_keys` as secrets: log, print and return over REST the
    original `${...}` text (or `masked()`), never `data[key]`.
    """

    data: dict[str, str]
    resolved_keys: frozenset[str] = field(default_factory=frozenset)
    secrets: frozenset[str] = field(default_factory=frozenset)
    """The values providers returned: what error texts, traces and logs must never show."""

    def masked(self) -> dict[str, str]:
        """`data` with every provider-resolved value replaced by `[hidden]`."""
        return {k: Password.HIDDEN if k in self.resolved_keys else v for k, v in self.data.items()}


@dataclass(frozen=True)
class _Ref:
    config_key: str
    text: str
    provider: str
    path: str
    key: str


class ConfigTransformer:
    """Substitutes `${provider:path:key}` and `${provider:key}` references (Kafka's ConfigTransformer).

    Substitution is one pass: a provider's value is never scanned for further references.
    Each provider is asked once per distinct path, for all the keys referenced under it.
    """

    def __init__(self, providers: Mapping[str, Any]) -> None:
        self.providers = dict(providers)

    @classmethod
    def from_worker_config(
        cls,
        worker_config: Mapping[str, str],
        resolve_class: Callable[[str], type] | None = None,
        *,
        include_defaults: bool = True,
    ) -> ConfigTransformer:
        return cls(instantiate_providers(worker_config, resolve_class, include_defaults=include_defaults))

    def transform(self, configs: Mapping[str, str]) -> TransformResult:
        """Resolve every reference; raise ConfigException (named by the config key) on the first that fails."""
        refs = [
            _Ref(key, m.group(0), m.group(1), m.group(3) or "", m.group(4))
            for key, value in configs.items()
            if value is not None
            for m in REFERENCE_PATTERN.finditer(value)
        ]
        wanted: dict[tuple[str, str], set[str]] = {}
        for ref in refs:
            wanted.setdefault((ref.provider, ref.path), set()).add(ref.key)
        fetched: dict[tuple[str, str], dict[str, str]] = {}
        for ref in refs:  # in config order, so the first error reported is the first in the file
            provider = self.providers.get(ref.provider)
            if provider is None:
                known = ", ".join(sorted(self.providers)) or "none"
                raise ConfigException(
                    f"{ref.config_key}: {ref.text} uses unknown config provider {ref.provider!r} (known: {known}); "
                    f"declare it in the worker config with {CONFIG_PROVIDERS}={ref.provider} and "
                    f"{CONFIG_PROVIDERS}.{ref.provider}.class=...",
                    ref.config_key,
                    ref.text,
                )
            where = (ref.provider, ref.path)
            if where not in fetched:
                try:
                    fetched[where] = dict(provider.get(ref.path, set(wanted[where])) or {})
                except ConfigException as e:
                    raise ConfigException(
                        f"{ref.config_key}: cannot resolve {ref.text}: {e}", ref.config_key, ref.text
                    ) from None
                except Exception as e:  # a third-party provider's own failure still names the key
                    raise ConfigException(
                        f"{ref.config_key}: cannot resolve {ref.text}: {type(e).__name__}: {e}",
                        ref.config_key,
                        ref.text,
                    ) from e
            if ref.key not in fetched[where]:
                describe = getattr(provider, "describe_missing", None)
                why = describe(ref.path, ref.key) if callable(describe) else "has no value; check the reference"
                raise ConfigException(f"{ref.config_key}: {ref.text} {why}", ref.config_key, ref.text)

        def substitute(m: re.Match[str]) -> str:
            return fetched[(m.group(1), m.group(3) or "")][m.group(4)]

        data = {
            key: REFERENCE_PATTERN.sub(substitute, value) if value is not None else value
            for key, value in configs.items()
        }
        secrets = frozenset(fetched[(ref.provider, ref.path)][ref.key] for ref in refs)
        return TransformResult(data, frozenset(ref.config_key for ref in refs), secrets)

    def close(self) -> None:
        for provider in self.providers.values():
            _close_quietly(provider)

    def __enter__(self) -> ConfigTransformer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- configs submitted over the REST API (issue 17) ----------------------------------------
def _names(value: Any) -> list[str]:
    items = value if isinstance(value, (list, tuple)) else str(value or "").split(",")
    return [str(n).strip() for n in items if str(n).strip()]


def rest_config_providers(worker_config: Mapping[str, Any]) -> frozenset[str]:
    """The providers REST-submitted connector configs may reference (see the module docstring).

    `rest.config.providers` when the worker sets it; else every provider `config.providers`
    declares except env, file and directory.
    """
    setting = worker_config.get(REST_CONFIG_PROVIDERS)
    if setting is not None:
        return frozenset(_names(setting))
    return frozenset(_names(worker_config.get(CONFIG_PROVIDERS))) - LOCAL_PROVIDERS


_READS = {"env": "environment variables", "file": "files", "directory": "files"}


def check_submitted_references(
    config: Mapping[str, str | None], allowed: Iterable[str], previous: Mapping[str, str] | None = None
) -> None:
    """Refuse a REST-submitted config that references a provider outside `allowed`.

    A key whose value equals its value in `previous` (the stored config) passes: it was
    admitted before, and a PUT of what GET returned must keep working. Raises one line
    naming the key and the fix; the reference is never resolved.
    """
    permitted = frozenset(allowed)
    for key, value in config.items():
        if value is None or (previous is not None and previous.get(key) == value):
            continue
        for m in REFERENCE_PATTERN.finditer(value):
            provider = m.group(1)
            if provider in permitted:
                continue
            what = _READS.get(provider)
            why = f" (it reads the worker's own {what})" if what else ""
            listed = ",".join([*sorted(permitted), provider])
            guard = {"file": ALLOWED_PATHS, "directory": ALLOWED_PATHS, "env": ALLOWLIST_PATTERN}.get(provider)
            limit = f", limited by config.providers.{provider}.param.{guard}" if guard else ""
            raise ConfigException(
                f"{key}: {m.group(0)} uses the {provider!r} config provider, which connector configs submitted "
                f"over the REST API may not use{why}; write the value itself, give the connector config to "
                f"`cdc standalone` as a file, or set {REST_CONFIG_PROVIDERS}={listed} in the worker config{limit}",
                key,
                m.group(0),
            )


def reverse_transform(
    raw: Mapping[str, str], resolved_keys: Iterable[str], configs: Mapping[str, str]
) -> dict[str, str]:
    """Kafka's `AbstractHerder.reverseTransform`: task configs derived from a resolved connector
    config get back the raw `${...}` text for every key the connector config resolved, so the
    secrets are not stored in a config topic or returned by `GET /connectors/{name}/tasks`."""
    keys = frozenset(resolved_keys)
    return {k: raw[k] if k in keys and k in raw else v for k, v in configs.items()}
