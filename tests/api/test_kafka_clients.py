"""Java client settings (worker.properties, Debezium configs) translated for librdkafka."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from cdc.api.errors import ConfigException
from cdc.api.kafka_clients import librdkafka_config

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.mark.parametrize("module", ["plain.PlainLoginModule", "scram.ScramLoginModule"])
def test_jaas_username_and_password(module: str) -> None:
    jaas = f'org.apache.kafka.common.security.{module} required username="app" password="s\\"3;t";'
    out = librdkafka_config({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas})
    assert out == {
        "security.protocol": "sasl_ssl",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "app",
        "sasl.password": 's"3;t',
    }
    Producer(out)  # librdkafka takes every translated name


def test_oauthbearer_client_credentials_become_oidc() -> None:
    out = librdkafka_config(
        {
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'clientId="c" clientSecret="s" scope="kafka";',
        }
    )
    assert out["sasl.oauthbearer.method"] == "oidc" and out["sasl.oauthbearer.client.id"] == "c"
    assert out["sasl.oauthbearer.client.secret"] == "s" and out["sasl.oauthbearer.scope"] == "kafka"


def test_pem_truststore_is_the_ca_location(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text(PEM)
    out = librdkafka_config({"ssl.truststore.location": str(ca), "ssl.truststore.password": "x"})
    assert out == {"ssl.ca.location": str(ca)}  # the type is sniffed; a PEM file has no password


def test_jks_truststore_says_how_to_convert(tmp_path: Path) -> None:
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")  # a JKS file's magic number
    with pytest.raises(ConfigException, match=r"librdkafka reads CA certificates as PEM only.*keytool") as e:
        librdkafka_config({"ssl.truststore.location": str(jks)}, "producer.")
    assert e.value.name == "producer.ssl.truststore.location"


def test_keystores_pkcs12_and_pem(tmp_path: Path) -> None:
    out = librdkafka_config(
        {"ssl.keystore.location": "/k.p12", "ssl.keystore.type": "PKCS12", "ssl.keystore.password": "p"}
    )
    assert out == {"ssl.keystore.location": "/k.p12", "ssl.keystore.password": "p"}
    pem = tmp_path / "client.pem"
    pem.write_text(PEM)
    assert librdkafka_config({"ssl.keystore.location": str(pem)}) == {
        "ssl.certificate.location": str(pem),
        "ssl.key.location": str(pem),
    }


def test_java_spellings_and_no_ops() -> None:
    out = librdkafka_config(
        {
            "ssl.endpoint.identification.algorithm": "",
            "max.request.size": "2000000",
            "ssl.enabled.protocols": "TLSv1.3",
            "key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
            "linger.ms": "5",
        }
    )
    assert out == {"ssl.endpoint.identification.algorithm": "none", "message.max.bytes": "2000000", "linger.ms": "5"}


@pytest.mark.parametrize(
    ("props", "needle"),
    [
        ({"sasl.login.callback.handler.class": "com.x.Handler"}, "a Java class cannot run"),
        ({"sasl.jaas.config": "com.acme.CustomLoginModule required a=b;"}, "has no librdkafka equivalent"),
        ({"sasl.jaas.config": "not jaas"}, "expected `<LoginModule class> required"),
        ({"sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;"}, "needs username"),
    ],
)
def test_what_cannot_be_translated_is_named(props: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigException, match=needle) as e:
        librdkafka_config(props, "consumer.")
    assert e.value.name == "consumer." + next(iter(props))
