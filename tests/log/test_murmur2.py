from cdc.log.murmur2 import murmur2, partition_for_key


def test_murmur2_matches_kafka_utils_test_vectors() -> None:
    # org.apache.kafka.common.utils.UtilsTest#testMurmur2
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    for key, expected in cases.items():
        assert murmur2(key) == expected


def test_partition_is_positive_modulo() -> None:
    for key in (b"21", b"foobar", b"abc", b""):
        p = partition_for_key(key, 7)
        assert 0 <= p < 7
        assert p == (murmur2(key) & 0x7FFFFFFF) % 7
