"""Kafka's default-partitioner hash, so keyed placement matches Java clients and librdkafka.

Hand-written: confluent-kafka does not expose librdkafka's murmur2 to Python, and the
embedded log and offset-topic writers must place keys exactly as `murmur2_random` does.
"""

from __future__ import annotations

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """32-bit MurmurHash2 as in `org.apache.kafka.common.utils.Utils.murmur2` (signed result)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = length % 4
    base = n4 * 4
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """`Utils.toPositive(murmur2(key)) % numPartitions`."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
