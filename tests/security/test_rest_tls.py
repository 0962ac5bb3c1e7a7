"""HTTPS and mTLS listeners (issue 17): Kafka's `listeners=https://…` with `listeners.https.ssl.*`
or `ssl.*` keys, keystores as PEM files, PEM strings or PKCS12, `ssl.client.auth`, and requests
forwarded between https workers. Every TLS check uses a real client (httpx) and the test's CA.
On the old main an https listener was a traceback."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from cdc.api.errors import ConfigException
from cdc.rest.server import RestServer
from cdc.runtime.herder import ForwardRequired
from tests.security import rest_rig
from tests.security.rest_certs import Pki
from tests.security.rest_rig import Api, CdcProcess, free_port

api_factory = rest_rig.api_factory
pki = rest_rig.pki

PEM_KEYSTORE = "listeners.https.ssl.keystore.location"


def ca_context(pki: Pki, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    """A client context trusting only the test CA, presenting `cert` if given."""
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    return context


def https_props(pki: Pki, **extra: str) -> dict[str, str]:
    return {"listeners": "https://127.0.0.1:0", PEM_KEYSTORE: str(pki.server_keystore_pem), **extra}


def test_https_listener_with_a_pem_keystore(api_factory: Callable[..., Api], pki: Pki) -> None:
    api = api_factory(**https_props(pki, **{"listeners.https.ssl.keystore.type": "PEM"}))
    assert api.url.startswith("https://127.0.0.1:")
    with api.client(verify=ca_context(pki)) as http:
        r = http.get("/connectors")
        assert r.status_code == 200 and r.json() == []
        assert http.get("/").json()["kafka_cluster_id"] == "test-cluster"
    # The host name is checked too: the certificate names localhost, so https://localhost works.
    with httpx.Client(verify=ca_context(pki), timeout=10) as http:
        assert http.get(api.url.replace("127.0.0.1", "localhost") + "/connectors").status_code == 200
    # A client without the CA refuses the certificate; plain http gets no API.
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"), httpx.Client(timeout=10) as http:
        http.get(api.url + "/connectors")
    with pytest.raises(httpx.TransportError):
        httpx.get(api.url.replace("https://", "http://") + "/connectors", timeout=10)


def test_https_with_a_pkcs12_keystore_and_top_level_ssl_keys(api_factory: Callable[..., Api], pki: Pki) -> None:
    store = pki.server_pkcs12("store-secret")
    # No listeners.https.* key: Kafka takes the top-level ssl.* keys then.
    api = api_factory(
        listeners="https://127.0.0.1:0",
        **{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(store), "ssl.keystore.password": "store-secret"},
    )
    with api.client(verify=ca_context(pki)) as http:
        assert http.get("/connectors").status_code == 200


def test_https_with_pem_strings_and_an_encrypted_key(api_factory: Callable[..., Api], pki: Pki) -> None:
    api = api_factory(
        listeners="https://127.0.0.1:0",
        **{
            "listeners.https.ssl.keystore.type": "PEM",
            "listeners.https.ssl.keystore.key": pki.encrypted_server_key("key-secret"),
            "listeners.https.ssl.keystore.certificate.chain": pki.server_cert.read_text(),
            "listeners.https.ssl.key.password": "key-secret",
        },
    )
    with api.client(verify=ca_context(pki)) as http:
        assert http.get("/connectors").status_code == 200


def test_http_and_https_listeners_together(api_factory: Callable[..., Api], pki: Pki) -> None:
    api = api_factory(**https_props(pki, listeners="http://127.0.0.1:0,https://127.0.0.1:0"))
    http_url, https_url = api.server.urls
    assert http_url.startswith("http://") and https_url.startswith("https://")
    assert httpx.get(http_url + "/connectors", timeout=10).status_code == 200
    assert httpx.get(https_url + "/connectors", verify=ca_context(pki), timeout=10).status_code == 200
    # Kafka's determineAdvertisedProtocol: http when there is an http listener, else rest.advertised.listener.
    assert api.server.advertised_url.startswith("http://")


def test_mtls_required(api_factory: Callable[..., Api], pki: Pki) -> None:
    api = api_factory(
        **https_props(
            pki,
            **{
                "listeners.https.ssl.client.auth": "required",
                "listeners.https.ssl.truststore.location": str(pki.ca_cert),
                "listeners.https.ssl.truststore.type": "PEM",
            },
        )
    )
    good = ca_context(pki, pki.client_cert, pki.client_key)
    with api.client(verify=good) as http:
        assert http.get("/connectors").status_code == 200
    # No client certificate, or one from another CA: the handshake fails, no request is served.
    for context in (ca_context(pki), ca_context(pki, pki.other_client_cert, pki.other_client_key)):
        with pytest.raises(httpx.TransportError), api.client(verify=context) as http:
            http.get("/connectors")


def test_mtls_requested_and_a_pkcs12_truststore(api_factory: Callable[..., Api], pki: Pki) -> None:
    # Confluent's spelling, and a PKCS12 truststore as keytool makes it.
    api = api_factory(
        **https_props(
            pki,
            **{
                "listeners.https.ssl.client.authentication": "requested",
                "listeners.https.ssl.truststore.location": str(pki.ca_pkcs12("trust-secret")),
                "listeners.https.ssl.truststore.password": "trust-secret",
            },
        )
    )
    for context in (ca_context(pki), ca_context(pki, pki.client_cert, pki.client_key)):
        with api.client(verify=context) as http:
            assert http.get("/connectors").status_code == 200
    with (
        pytest.raises(httpx.TransportError),
        api.client(verify=ca_context(pki, pki.other_client_cert, pki.other_client_key)) as http,
    ):
        http.get("/connectors")


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        ({PEM_KEYSTORE: ""}, "listeners.https.ssl.keystore.location"),  # https without a keystore
        ({"listeners.https.ssl.keystore.password": "wrong", "listeners.https.ssl.keystore.type": "PKCS12"}, "password"),
        ({"listeners.https.ssl.client.auth": "required"}, "listeners.https.ssl.truststore.location"),
        ({"listeners.https.ssl.enabled.protocols": "TLSv1"}, "listeners.https.ssl.enabled.protocols"),
        ({"listeners.https.ssl.keystore.type": "JKS", "jks": "1"}, "keytool -importkeystore"),
    ],
)
def test_tls_config_errors_are_one_line_at_start(
    tmp_path: Path,
    pki: Pki,
    extra: dict[str, str],
    names: str,
) -> None:
    props = https_props(pki, **extra)
    if extra.get("listeners.https.ssl.keystore.password") == "wrong":
        props[PEM_KEYSTORE] = str(pki.server_pkcs12("right"))
    if props.pop("jks", None):
        jks = tmp_path / "server.jks"
        jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 64)
        props[PEM_KEYSTORE] = str(jks)
    if not props[PEM_KEYSTORE]:
        del props[PEM_KEYSTORE]
        props["listeners.https.ssl.keystore.type"] = "PEM"
    from tests.rest.conftest import make_worker

    worker = make_worker(tmp_path, **props)
    with pytest.raises(ConfigException) as raised:
        RestServer(worker.config, herder=_NoHerder(worker))
    message = str(raised.value)
    assert names in message and "\n" not in message


class _NoHerder:
    def __init__(self, worker: object) -> None:
        self.worker = worker


def test_forwarding_between_https_workers_with_mtls(api_factory: Callable[..., Api], pki: Pki) -> None:
    """A write this worker cannot serve goes to the leader over https, presenting the worker's own
    certificate to a leader that requires one (Kafka's RestClient with SSLUtils' client factory)."""
    mtls = {
        "listeners.https.ssl.client.auth": "required",
        "listeners.https.ssl.truststore.location": str(pki.ca_cert),
    }
    leader = api_factory(**https_props(pki, **mtls))
    follower = api_factory(**https_props(pki, **mtls))
    leader_url = leader.server.advertised_url
    assert leader_url.startswith("https://")

    def not_here(*args: object) -> object:
        raise ForwardRequired(leader_url)

    follower.herder.connector_names = not_here  # type: ignore[method-assign]
    follower.herder.pause_connector = not_here  # type: ignore[method-assign]
    client = ca_context(pki, pki.client_cert, pki.client_key)
    with follower.client(verify=client) as http:
        r = http.get("/connectors")
        assert r.status_code == 200 and r.json() == []  # the leader's answer
        r = http.put("/connectors/nope/pause")
        assert r.status_code == 404 and "nope" in r.json()["message"]  # the leader's 404, not a 409


@pytest.mark.e2e
def test_cdc_standalone_serves_https(tmp_path: Path, pki: Pki) -> None:
    """End to end: `cdc standalone` with an https listener (a traceback before)."""
    port = free_port()
    worker = tmp_path / "worker.properties"
    worker.write_text(
        f"transport=embedded\nstate.dir={tmp_path}/state\nlisteners=https://127.0.0.1:{port}\n"
        f"listeners.https.ssl.keystore.location={pki.server_keystore_pem}\n"
        "listeners.https.ssl.keystore.type=PEM\n"
    )
    cdc = CdcProcess("standalone", str(worker))
    try:
        url = f"https://localhost:{port}"
        cdc.wait_ready(url + "/", verify=ca_context(pki))
        r = httpx.get(url + "/connectors", verify=ca_context(pki), timeout=10)
        assert r.status_code == 200 and r.json() == []
    finally:
        _, err = cdc.stop()
    assert "Traceback" not in err
