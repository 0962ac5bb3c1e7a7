"""Java HashMap iteration order, for values Debezium builds from a HashMap (hstore).

pgjdbc parses an hstore into a `HashMap<String, String>`, and Debezium writes it, as JSON or as a
Connect map, in that map's iteration order: by bucket (the key's `String.hashCode()`, spread
`h ^ (h >>> 16)`, masked by the table size: 16, doubled while more than 3/4 full), and by insertion
order within a bucket. So `"key4"=>"val4", "key5"=>NULL` is written `{"key5":null,"key4":"val4"}`.
"""

from __future__ import annotations

from collections.abc import Iterable


def string_hash(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as an unsigned 32-bit int."""
    data = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return h


def iteration_order(keys: Iterable[str]) -> list[str]:
    """The keys in the order a HashMap filled with them in this order iterates them."""
    keys = list(keys)
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # stable: insertion order within a bucket
