from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cdc.rest.server import RestServer
from cdc.runtime.standalone import StandaloneHerder
from tests.rest.conftest import make_worker
from tests.security.rest_certs import Pki

REPO = Path(__file__).resolve().parents[2]


class Api:
    """A standalone herder serving its REST API with the given worker properties."""

    def __init__(self, tmp_path: Path, **props: str) -> None:
        self.worker = make_worker(tmp_path, **props)
        self.herder = StandaloneHerder(self.worker, tick_interval=0.05)
        self.server = RestServer(self.worker.config, self.herder, cluster_id="test-cluster")
        self.herder.start()
        try:
            self.server.start()
        except BaseException:
            self.herder.stop()
            raise
        self.url = self.server.url

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kwargs)

    def close(self) -> None:
        self.server.stop()
        self.herder.stop()


@pytest.fixture
def api_factory(tmp_path: Path) -> Iterator[Callable[..., Api]]:
    started: list[Api] = []

    def start(**props: str) -> Api:
        api = Api(tmp_path / f"w{len(started)}", **props)
        started.append(api)
        return api

    yield start
    for api in started:
        api.close()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.make(tmp_path_factory.mktemp("pki"))


def error(r: httpx.Response) -> str:
    """Kafka's one-line error body."""
    body = r.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == r.status_code, body
    assert "\n" not in body["message"]
    return str(body["message"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class CdcProcess:
    """`cdc standalone|worker` in a subprocess (the real CLI, as a user starts it)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cdc.cli.main", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd or REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        )

    def wait_ready(self, url: str, timeout: float = 60, **client: Any) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                _, err = self.proc.communicate()
                raise AssertionError(f"cdc exited with {self.proc.returncode}: {err}")
            try:
                httpx.get(url, timeout=2, **client)
                return
            except httpx.TransportError:
                time.sleep(0.2)
        raise AssertionError(f"cdc did not serve {url} within {timeout}s")

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        return self.proc.returncode, out, err

    def stop(self) -> tuple[str, str]:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            out, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return out, err
