"""Basic auth turned on as in Kafka Connect (issue 17): `rest.extension.classes` with
BasicAuthSecurityRestExtension and the JAAS file's PropertyFileLoginModule, the file named by
the worker key `java.security.auth.login.config` or by `-Djava.security.auth.login.config=`
in KAFKA_OPTS. The old main ignored both and served every caller."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api.errors import ConfigException
from tests.security import rest_rig
from tests.security.rest_rig import Api, CdcProcess, error, free_port
from tests.support.examples import examples

api_factory = rest_rig.api_factory

# Kafka's class names, as a Kafka Connect worker file and JAAS file spell them.
EXTENSION_CLASS = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"


def jaas_file(tmp_path: Path, users: str = "admin=s3cret\nops=0ps\n", name: str = "connect_jaas.conf") -> Path:
    creds = tmp_path / "connect.password"
    creds.write_text(users)
    jaas = tmp_path / name
    # Comments and a second entry, as real JAAS files for a whole Kafka host have them.
    jaas.write_text(
        "// the broker's entry is not ours\n"
        "KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  username="broker" password="x";\n};\n'
        "/* Connect's REST API */\n"
        f'KafkaConnect {{\n  {LOGIN_MODULE} required\n  file="{creds}";\n}};\n'
    )
    return jaas


def assert_basic_auth(api: Api) -> None:
    with api.client() as http:
        denied = http.get("/connectors")
        assert denied.status_code == 401 and denied.headers["www-authenticate"].startswith("Basic")
        assert "JAAS file" in error(denied)
        assert "/" not in error(denied), "the 401 names the setting, never the file's path (issue 33 item 11)"
        assert http.get("/connectors", auth=("admin", "wrong")).status_code == 401
        assert http.get("/connectors", auth=("nobody", "s3cret")).status_code == 401
        assert http.post("/connectors/x/restart").status_code == 401
        assert http.get("/connectors", auth=("admin", "s3cret")).json() == []
        assert http.get("/connectors", auth=("ops", "0ps")).status_code == 200


def test_jaas_file_from_the_worker_key(api_factory: Callable[..., Api], tmp_path: Path) -> None:
    api = api_factory(
        **{"rest.extension.classes": EXTENSION_CLASS, "java.security.auth.login.config": str(jaas_file(tmp_path))}
    )
    assert_basic_auth(api)


def test_jaas_file_from_kafka_opts(
    api_factory: Callable[..., Api], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jaas = jaas_file(tmp_path)
    monkeypatch.setenv("KAFKA_OPTS", f"-Xmx1g -Djava.security.auth.login.config={jaas} -Dother=1")
    assert_basic_auth(api_factory(**{"rest.extension.classes": EXTENSION_CLASS}))


def test_jaas_file_without_the_extension_turns_nothing_on(
    api_factory: Callable[..., Api], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Kafka: KAFKA_OPTS's JAAS file also configures the Kafka clients; only the extension uses it for REST."""
    monkeypatch.setenv("KAFKA_OPTS", f"-Djava.security.auth.login.config={jaas_file(tmp_path)}")
    with api_factory().client() as http:
        assert http.get("/connectors").status_code == 200


def test_credentials_file_key_still_works_with_the_jaas_file(api_factory: Callable[..., Api], tmp_path: Path) -> None:
    extra = tmp_path / "extra.properties"
    extra.write_text("ci=token\n")
    api = api_factory(
        **{
            "rest.extension.classes": "BasicAuthSecurityRestExtension",  # the short name is accepted too
            "java.security.auth.login.config": str(jaas_file(tmp_path)),
            "rest.basic.auth.credentials.file": str(extra),
        }
    )
    with api.client() as http:
        assert http.get("/connectors", auth=("ci", "token")).status_code == 200
        assert http.get("/connectors", auth=("admin", "s3cret")).status_code == 200
        assert http.get("/connectors").status_code == 401


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("no-jaas", "java.security.auth.login.config="),
        ("missing-jaas", "does not exist"),
        ("no-entry", "no KafkaConnect entry"),
        ("no-file-option", 'file="/path/to/credentials.properties"'),
        ("other-module", "is not supported"),
        ("empty-credentials", "no `user=password` line"),
        ("unknown-extension", "com.example.MyExtension is not supported"),
    ],
)
def test_auth_config_errors_are_one_line(tmp_path: Path, case: str, expected: str) -> None:
    jaas = tmp_path / "jaas.conf"
    creds = tmp_path / "creds"
    creds.write_text("a=b\n")
    classes = [EXTENSION_CLASS]
    if case == "no-entry":
        jaas.write_text('KafkaServer { x.Y required file="a"; };')
    elif case == "no-file-option":
        jaas.write_text(f"KafkaConnect {{ {LOGIN_MODULE} required; }};")
    elif case == "other-module":
        jaas.write_text(f'KafkaConnect {{ com.sun.security.auth.module.LdapLoginModule required file="{creds}"; }};')
    elif case == "empty-credentials":
        creds.write_text("# nobody yet\n")
        jaas.write_text(f'KafkaConnect {{ {LOGIN_MODULE} required file="{creds}"; }};')
    elif case == "unknown-extension":
        classes = ["com.example.MyExtension"]
    path = None if case == "no-jaas" else str(jaas)
    from cdc.rest.auth import resolve_credentials

    with pytest.raises(ConfigException) as raised:
        resolve_credentials(classes, path, None, {})
    assert expected in str(raised.value) and "\n" not in str(raised.value)


@settings(max_examples=examples(60), deadline=None, derandomize=True)
@given(
    path=st.text(st.characters(codec="utf-8", exclude_characters='"\\\n\r\x00'), min_size=1, max_size=40),
    flag=st.sampled_from(["required", "REQUIRED", "optional", "sufficient", "requisite"]),
    quoted=st.booleans(),
    spacing=st.sampled_from([" ", "\n", "\t", "\n    "]),
)
def test_jaas_parser_reads_any_file_value(path: str, flag: str, quoted: bool, spacing: str) -> None:
    from cdc.rest.jaas import parse_jaas

    bare_ok = all(c > " " and c not in '{};="#/' for c in path)
    value = f'"{path}"' if quoted or not bare_ok else path
    text = f"KafkaConnect{spacing}{{{spacing}{LOGIN_MODULE}{spacing}{flag}{spacing}file={value};{spacing}}};"
    [module] = parse_jaas(text)["KafkaConnect"]
    assert module.class_name == LOGIN_MODULE and module.flag == flag.lower() and module.options == {"file": path}


@pytest.mark.e2e
def test_cdc_standalone_with_kafka_opts_jaas(tmp_path: Path) -> None:
    """End to end, as a Kafka Connect user starts it: the extension in the worker file, the JAAS
    file in KAFKA_OPTS."""
    port = free_port()
    worker = tmp_path / "worker.properties"
    worker.write_text(
        f"transport=embedded\nstate.dir={tmp_path}/state\nlisteners=http://127.0.0.1:{port}\n"
        f"rest.extension.classes={EXTENSION_CLASS}\n"
    )
    env = {"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas_file(tmp_path)}"}
    cdc = CdcProcess("standalone", str(worker), env=env)
    try:
        url = f"http://127.0.0.1:{port}"
        cdc.wait_ready(url + "/")
        assert httpx.get(url + "/connectors", timeout=10).status_code == 401
        assert httpx.get(url + "/connectors", auth=("admin", "s3cret"), timeout=10).json() == []
    finally:
        _, err = cdc.stop()
    assert "Traceback" not in err
