"""Config providers and `${provider:path:key}` substitution."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from cdc.api.errors import ConfigException
from cdc.config import (
    REFERENCE_PATTERN,
    ConfigProvider,
    ConfigTransformer,
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
    has_references,
    instantiate_providers,
    resolve_provider_class,
)


@pytest.fixture
def transformer() -> ConfigTransformer:
    return ConfigTransformer.from_worker_config({})


# -- the reference pattern ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("${env:VAR}", ("env", None, "VAR")),
        ("${file:/etc/secrets.properties:db.password}", ("file", "/etc/secrets.properties", "db.password")),
        ("${directory:/run/secrets:pw}", ("directory", "/run/secrets", "pw")),
        ("${vault:secret/a:b:c}", ("vault", "secret/a", "b:c")),  # the path stops at the first colon
        ("${x:}", ("x", None, "")),
    ],
)
def test_kafka_pattern(text: str, groups: tuple[str, str | None, str]) -> None:
    m = REFERENCE_PATTERN.fullmatch(text)
    assert m is not None
    assert (m.group(1), m.group(3), m.group(4)) == groups


@pytest.mark.parametrize("text", ["${topic}", "$env:X", "{env:X}", "${env:X", "plain"])
def test_not_a_reference(text: str) -> None:
    assert not has_references(text)


# -- env ----------------------------------------------------------------------------------
def test_env_set(monkeypatch: pytest.MonkeyPatch, transformer: ConfigTransformer) -> None:
    monkeypatch.setenv("DB_PASS", "s3cr3t")
    result = transformer.transform({"database.password": "${env:DB_PASS}", "database.user": "cdc"})
    assert result.data == {"database.password": "s3cr3t", "database.user": "cdc"}
    assert result.resolved_keys == {"database.password"}
    assert result.masked() == {"database.password": "[hidden]", "database.user": "cdc"}


def test_env_unset_names_key_and_fix(monkeypatch: pytest.MonkeyPatch, transformer: ConfigTransformer) -> None:
    monkeypatch.delenv("DB_PASS", raising=False)
    with pytest.raises(ConfigException) as info:
        transformer.transform({"database.user": "cdc", "database.password": "${env:DB_PASS}"})
    assert info.value.name == "database.password"
    assert str(info.value) == "database.password: ${env:DB_PASS} is not set; export DB_PASS or remove the reference"


def test_env_read_at_get_time(monkeypatch: pytest.MonkeyPatch, transformer: ConfigTransformer) -> None:
    monkeypatch.setenv("LATE", "1")
    assert transformer.transform({"a": "${env:LATE}"}).data == {"a": "1"}
    monkeypatch.setenv("LATE", "2")
    assert transformer.transform({"a": "${env:LATE}"}).data == {"a": "2"}


def test_env_allowlist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDC_SECRET", "ok")
    monkeypatch.setenv("HOME_SECRET", "hush-hush")
    t = ConfigTransformer.from_worker_config({"config.providers.env.param.allowlist.pattern": "CDC_.*"})
    assert t.transform({"a": "${env:CDC_SECRET}"}).data == {"a": "ok"}
    with pytest.raises(ConfigException) as info:
        t.transform({"b": "${env:HOME_SECRET}"})
    assert info.value.name == "b"
    assert "allowlist.pattern" in str(info.value)
    assert "hush-hush" not in str(info.value)


def test_env_allowlist_must_match_whole_name() -> None:
    provider = EnvVarConfigProvider(environ={"CDC_X": "1", "XCDC_X": "2"})
    provider.configure({"allowlist.pattern": "CDC_.*"})
    assert provider.get("", None) == {"CDC_X": "1"}


def test_env_bad_allowlist_names_the_param() -> None:
    with pytest.raises(ConfigException) as info:
        instantiate_providers({"config.providers.env.param.allowlist.pattern": "("})
    assert info.value.name == "config.providers.env.param.allowlist.pattern"


def test_env_with_path_is_an_error(transformer: ConfigTransformer) -> None:
    with pytest.raises(ConfigException, match=r"a: cannot resolve \$\{env:/x:Y\}: takes no path"):
        transformer.transform({"a": "${env:/x:Y}"})


# -- several references, and no recursion -------------------------------------------------
def test_multiple_refs_in_one_value(monkeypatch: pytest.MonkeyPatch, transformer: ConfigTransformer) -> None:
    monkeypatch.setenv("DB_HOST", "db")
    monkeypatch.setenv("DB_PORT", "3306")
    result = transformer.transform({"url": "jdbc:mysql://${env:DB_HOST}:${env:DB_PORT}/${env:DB_HOST}?x=1"})
    assert result.data == {"url": "jdbc:mysql://db:3306/db?x=1"}
    assert result.resolved_keys == {"url"}


def test_provider_values_are_not_rescanned(monkeypatch: pytest.MonkeyPatch, transformer: ConfigTransformer) -> None:
    monkeypatch.setenv("OUTER", "${env:INNER}")
    monkeypatch.setenv("INNER", "leaked")
    assert transformer.transform({"a": "${env:OUTER}"}).data == {"a": "${env:INNER}"}


def test_nested_reference_is_not_resolved_inside_out(
    monkeypatch: pytest.MonkeyPatch, transformer: ConfigTransformer
) -> None:
    # Kafka's pattern reads "${env:${env:X}}" as provider "env", path "${env", key "X";
    # the env provider takes no path, so this is an error rather than a two-level lookup.
    monkeypatch.setenv("X", "Y")
    monkeypatch.setenv("Y", "value")
    with pytest.raises(ConfigException) as info:
        transformer.transform({"a": "${env:${env:X}}"})
    assert info.value.name == "a"
    assert "takes no path" in str(info.value)


def test_values_without_references_are_untouched(transformer: ConfigTransformer) -> None:
    configs = {"a": "$", "b": "${notaref}", "c": "", "d": "x}{"}
    result = transformer.transform(configs)
    assert result.data == configs
    assert result.resolved_keys == frozenset()


def test_first_failing_key_in_order_is_reported(
    monkeypatch: pytest.MonkeyPatch, transformer: ConfigTransformer
) -> None:
    monkeypatch.delenv("MISSING_1", raising=False)
    monkeypatch.delenv("MISSING_2", raising=False)
    with pytest.raises(ConfigException) as info:
        transformer.transform({"first": "${env:MISSING_1}", "second": "${env:MISSING_2}"})
    assert info.value.name == "first"


# -- unknown provider ---------------------------------------------------------------------
def test_unknown_provider(transformer: ConfigTransformer) -> None:
    with pytest.raises(ConfigException) as info:
        transformer.transform({"database.password": "${vault:secret/db:password}"})
    e = info.value
    assert e.name == "database.password"
    assert str(e).startswith("database.password: ${vault:secret/db:password} uses unknown config provider 'vault'")
    assert "config.providers=vault" in str(e)
    assert "config.providers.vault.class=" in str(e)


# -- file ---------------------------------------------------------------------------------
def test_file_provider(tmp_path: Path, transformer: ConfigTransformer) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("db.user=cdc\ndb.password=p\\u00e4ss\n", encoding="utf-8")
    result = transformer.transform(
        {"database.user": f"${{file:{secrets}:db.user}}", "database.password": f"${{file:{secrets}:db.password}}"}
    )
    assert result.data == {"database.user": "cdc", "database.password": "p\u00e4ss"}
    assert result.resolved_keys == {"database.user", "database.password"}


def test_file_provider_reads_each_path_once(tmp_path: Path) -> None:
    calls: list[tuple[str, set[str]]] = []

    class Counting(FileConfigProvider):
        def get(self, path: str, keys: Iterable[str] | None = None) -> dict[str, str]:
            calls.append((path, set(keys or ())))
            return super().get(path, keys)

    secrets = tmp_path / "s.properties"
    secrets.write_text("a=1\nb=2\n")
    t = ConfigTransformer({"file": Counting()})
    t.transform({"x": f"${{file:{secrets}:a}}", "y": f"${{file:{secrets}:b}}-${{file:{secrets}:a}}"})
    assert calls == [(str(secrets), {"a", "b"})]


def test_file_missing_key(tmp_path: Path, transformer: ConfigTransformer) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("a=1\n")
    ref = f"${{file:{secrets}:nope}}"
    with pytest.raises(ConfigException) as info:
        transformer.transform({"k": ref})
    assert info.value.name == "k"
    assert str(info.value) == (
        f"k: {ref} names a key that {secrets} does not define; add nope=... to it or fix the reference"
    )


def test_file_missing_file(tmp_path: Path, transformer: ConfigTransformer) -> None:
    ref = f"${{file:{tmp_path}/absent.properties:a}}"
    with pytest.raises(ConfigException) as info:
        transformer.transform({"k": ref})
    assert info.value.name == "k"
    assert str(info.value).startswith(f"k: cannot resolve {ref}: ")
    assert "no such file" in str(info.value)


def test_file_without_path(transformer: ConfigTransformer) -> None:
    with pytest.raises(ConfigException, match="needs a file path"):
        transformer.transform({"k": "${file:key}"})


# -- allowed.paths ------------------------------------------------------------------------
def test_allowed_paths(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "s.properties").write_text("a=in\n")
    outside = tmp_path / "allowed-not" / "s.properties"  # a sibling sharing the name prefix
    outside.parent.mkdir()
    outside.write_text("a=OUTSIDE-VALUE\n")
    t = ConfigTransformer.from_worker_config({"config.providers.file.param.allowed.paths": str(allowed)})
    assert t.transform({"k": f"${{file:{allowed}/s.properties:a}}"}).data == {"k": "in"}
    for sneaky in (str(outside), f"{allowed}/../allowed-not/s.properties"):
        with pytest.raises(ConfigException) as info:
            t.transform({"k": f"${{file:{sneaky}:a}}"})
        assert info.value.name == "k"
        assert "is outside allowed.paths" in str(info.value)
        assert "OUTSIDE-VALUE" not in str(info.value)


def test_allowed_paths_directory_provider(tmp_path: Path) -> None:
    (tmp_path / "ok").mkdir()
    t = ConfigTransformer.from_worker_config(
        {
            "config.providers": "directory",
            "config.providers.directory.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
            "config.providers.directory.param.allowed.paths": str(tmp_path / "ok"),
        }
    )
    with pytest.raises(ConfigException, match=r"outside allowed\.paths"):
        t.transform({"k": "${directory:/etc:passwd}"})


@pytest.mark.parametrize("setting", ["relative/dir", "/does/not/exist/anywhere"])
def test_allowed_paths_must_be_absolute_and_exist(setting: str) -> None:
    with pytest.raises(ConfigException) as info:
        instantiate_providers({"config.providers.file.param.allowed.paths": setting})
    assert info.value.name == "config.providers.file.param.allowed.paths"
    assert "absolute path that exists" in str(info.value)


# -- directory ----------------------------------------------------------------------------
def test_directory_provider(tmp_path: Path, transformer: ConfigTransformer) -> None:
    (tmp_path / "password").write_bytes(b"hunter2\n")
    (tmp_path / "sub").mkdir()
    result = transformer.transform({"database.password": f"${{directory:{tmp_path}:password}}"})
    assert result.data == {"database.password": "hunter2\n"}  # contents as-is, like Kafka
    provider = DirectoryConfigProvider()
    assert provider.get(str(tmp_path), None) == {"password": "hunter2\n"}  # regular files only


def test_directory_follows_symlinks_like_kubernetes_secret_mounts(tmp_path: Path) -> None:
    data = tmp_path / "..data"
    data.mkdir()
    (data / "pw").write_text("k8s")
    os.symlink(data / "pw", tmp_path / "pw")
    t = ConfigTransformer.from_worker_config({"config.providers.directory.param.allowed.paths": str(tmp_path)})
    assert t.transform({"k": f"${{directory:{tmp_path}:pw}}"}).data == {"k": "k8s"}


def test_directory_missing_file(tmp_path: Path, transformer: ConfigTransformer) -> None:
    with pytest.raises(ConfigException) as info:
        transformer.transform({"k": f"${{directory:{tmp_path}:absent}}"})
    assert info.value.name == "k"
    assert f"create {tmp_path}/absent" in str(info.value)


def test_directory_key_cannot_escape(tmp_path: Path, transformer: ConfigTransformer) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "secret").write_text("x")
    with pytest.raises(ConfigException, match="names no file"):
        transformer.transform({"k": f"${{directory:{tmp_path}/d:../secret}}"})


def test_directory_not_a_directory(tmp_path: Path, transformer: ConfigTransformer) -> None:
    with pytest.raises(ConfigException, match="is not a directory"):
        transformer.transform({"k": f"${{directory:{tmp_path}/nope:a}}"})


# -- declaring providers in the worker config ---------------------------------------------
class StaticProvider(ConfigProvider):
    """A third-party provider as the runtime's plugin registry would load it."""

    closed = False

    def configure(self, configs: Mapping[str, str]) -> None:
        self.values = {k[len("value.") :]: v for k, v in configs.items() if k.startswith("value.")}

    def get(self, path: str, keys: Iterable[str] | None = None) -> dict[str, str]:
        return {k: f"{path}/{v}" for k, v in self.values.items() if keys is None or k in keys}

    def close(self) -> None:
        StaticProvider.closed = True


def registry(name: str) -> type:
    if name == "com.example.StaticProvider":
        return StaticProvider
    raise LookupError(name)


def test_declared_provider_via_registry() -> None:
    worker = {
        "config.providers": "static",
        "config.providers.static.class": "com.example.StaticProvider",
        "config.providers.static.param.value.pw": "s3cr3t",
    }
    with ConfigTransformer.from_worker_config(worker, registry) as t:
        assert t.transform({"p": "${static:vault:pw}"}).data == {"p": "vault/s3cr3t"}
        assert set(t.providers) == {"static", "env", "file", "directory"}
    assert StaticProvider.closed


def test_kafka_class_names_resolve_without_registry() -> None:
    for name in ("EnvVarConfigProvider", "FileConfigProvider", "DirectoryConfigProvider"):
        assert resolve_provider_class(f"org.apache.kafka.common.config.provider.{name}").__name__ == name
        assert resolve_provider_class(name).__name__ == name
        assert resolve_provider_class(f"cdc.config.providers.{name}").__name__ == name


def test_registry_falls_back_to_builtins() -> None:
    cls = resolve_provider_class("org.apache.kafka.common.config.provider.EnvVarConfigProvider", registry)
    assert cls is EnvVarConfigProvider


def test_declared_name_replaces_default(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = {
        "config.providers": "env",
        "config.providers.env.class": "com.example.StaticProvider",
        "config.providers.env.param.value.X": "static",
    }
    monkeypatch.setenv("X", "from-env")
    t = ConfigTransformer.from_worker_config(worker, registry)
    assert t.transform({"a": "${env:X}"}).data == {"a": "/static"}


def test_defaults_can_be_switched_off() -> None:
    t = ConfigTransformer.from_worker_config({}, include_defaults=False)
    with pytest.raises(ConfigException, match="unknown config provider 'env'"):
        t.transform({"a": "${env:HOME}"})


def test_declared_provider_without_class() -> None:
    with pytest.raises(ConfigException) as info:
        instantiate_providers({"config.providers": "vault"})
    assert info.value.name == "config.providers.vault.class"
    assert "is not set" in str(info.value)


def test_unknown_provider_class() -> None:
    worker = {"config.providers": "vault", "config.providers.vault.class": "com.example.Vault"}
    with pytest.raises(ConfigException) as info:
        instantiate_providers(worker, registry)
    assert info.value.name == "config.providers.vault.class"
    assert "com.example.Vault" in str(info.value)
    assert "plugin.path" in str(info.value)


def test_class_that_is_not_a_provider() -> None:
    worker = {"config.providers": "x", "config.providers.x.class": "builtins.object"}
    with pytest.raises(ConfigException, match="not a config provider"):
        instantiate_providers(worker, lambda name: object)


def test_third_party_exception_still_names_the_key() -> None:
    class Broken(ConfigProvider):
        def get(self, path: str, keys: Iterable[str] | None = None) -> dict[str, str]:
            raise RuntimeError("vault sealed")

    with pytest.raises(ConfigException) as info:
        ConfigTransformer({"vault": Broken()}).transform({"pw": "${vault:db:pw}"})
    assert info.value.name == "pw"
    assert str(info.value) == "pw: cannot resolve ${vault:db:pw}: RuntimeError: vault sealed"
