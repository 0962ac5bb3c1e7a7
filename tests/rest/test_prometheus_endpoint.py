"""GET /metrics sits behind the REST API's guards: basic auth and the Host allow-list apply to it too."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc.runtime.prometheus.server import start_metrics_server
from cdc.runtime.worker_config import WorkerConfig
from tests.rest.conftest import Rest, wait_until
from tests.runtime.prometheus_scrape import parse, value


@pytest.mark.integration
def test_metrics_need_the_rest_credentials_and_an_allowed_host(tmp_path: Path) -> None:
    creds = tmp_path / "credentials.properties"
    creds.write_text("admin=s3cret-7Qx\n")
    r = Rest(tmp_path, **{"rest.basic.auth.credentials.file": str(creds)})
    try:
        auth = ("admin", "s3cret-7Qx")
        created = r.http.post(
            "/connectors",
            auth=auth,
            json={"name": "gen", "config": {"connector.class": "GeneratorSource", "topic": "t"}},
        )
        assert created.status_code == 201
        assert r.http.get("/metrics").status_code == 401
        assert r.http.get("/metrics", auth=("admin", "wrong")).status_code == 401
        assert r.http.get("/metrics", auth=auth, headers={"Host": "evil.example"}).status_code == 421
        answer = wait_until(
            lambda: (
                (a := r.http.get("/metrics", auth=auth, headers={"Accept": "text/plain"}))
                and value(
                    parse(a.text), "kafka_connect_source_task_source_record_write_total", connector="gen", task="0"
                )
                and a
            ),
            what="records written",
        )
        assert answer.status_code == 200 and "s3cret" not in answer.text
        # OpenMetrics when the scraper asks for it (Prometheus does), from prometheus_client's negotiation.
        om = r.http.get("/metrics", auth=auth, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        assert om.headers["content-type"].startswith("application/openmetrics-text") and om.text.endswith("# EOF\n")
    finally:
        r.close()


@pytest.mark.integration
def test_metrics_port_taken_is_one_line_naming_the_key(tmp_path: Path) -> None:
    r = Rest(tmp_path, **{"metrics.port": "0"})
    first = start_metrics_server(r.worker.config, r.herder)
    assert first is not None
    try:
        r2 = Rest(tmp_path / "other", **{"metrics.port": str(first.port)})
        try:
            try:
                start_metrics_server(r2.worker.config, r2.herder)
            except Exception as e:
                assert str(e).startswith(f"metrics.port: cannot listen on 127.0.0.1:{first.port}") and "\n" not in str(
                    e
                )
            else:
                raise AssertionError("a taken metrics.port was accepted")
        finally:
            r2.close()
        assert start_metrics_server(WorkerConfig({}), r.herder) is None  # unset: not served
    finally:
        first.stop()
        r.close()
