"""librdkafka's mock cluster with topics of any partition count, for workers in child processes.

The `kafka_mock` fixture (tests/rig/kafka.py) makes its cluster through confluent-kafka's
`test.mock.num.brokers`, which gives no handle on the cluster: its topics can only be
auto-created, always with 4 partitions, and a distributed worker refuses a config topic that
is not single-partitioned (as Kafka Connect does). The mock has no CreateTopics, but
librdkafka exports `rd_kafka_mock_topic_create`; this module calls it through ctypes on the
very librdkafka that confluent-kafka bundles, on a cluster it makes itself
(`rd_kafka_mock_cluster_new`). Group behaviour is the mock's: the first JoinGroup of a new
group waits `group.initial.rebalance.delay.ms`, 3 s, as Apache Kafka's broker does.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import confluent_kafka

_RD_KAFKA_PRODUCER = 0


def _librdkafka() -> ctypes.CDLL:
    libs = Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs"
    found = sorted(libs.glob("librdkafka*.so*"))
    if not found:
        raise RuntimeError(f"no bundled librdkafka under {libs}: confluent-kafka must be a binary wheel")
    lib = ctypes.CDLL(str(found[0]))
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    return lib


class MockCluster:
    def __init__(self, lib: ctypes.CDLL, cluster: int) -> None:
        self._lib, self._cluster = lib, cluster
        self.bootstrap: str = lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()

    def create_topic(self, name: str, partitions: int) -> None:
        err = self._lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions, 1)
        if err:
            raise RuntimeError(f"rd_kafka_mock_topic_create({name!r}, {partitions}) failed with error {err}")


@contextmanager
def mock_cluster(brokers: int = 3) -> Iterator[MockCluster]:
    lib = _librdkafka()
    errstr = ctypes.create_string_buffer(512)
    handle = lib.rd_kafka_new(_RD_KAFKA_PRODUCER, lib.rd_kafka_conf_new(), errstr, len(errstr))
    if not handle:
        raise RuntimeError(f"rd_kafka_new failed: {errstr.value.decode()}")
    cluster = lib.rd_kafka_mock_cluster_new(handle, brokers)
    try:
        if not cluster:
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        yield MockCluster(lib, cluster)
    finally:
        if cluster:
            lib.rd_kafka_mock_cluster_destroy(cluster)
        lib.rd_kafka_destroy(handle)
