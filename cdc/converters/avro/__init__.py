"""Confluent's AvroConverter and AvroData: Connect data as Avro with a Schema Registry.

- converter.py: `io.confluent.connect.avro.AvroConverter` (wire format, subjects, registry calls);
- avro_data.py: `AvroData`, the schema and value mapping with its caches;
- from_connect.py / to_connect.py: the mapping each way; avro_schema.py: the schema text;
- names.py: Avro names (Debezium's adjustment modes, Confluent's scrubbing);
- registry.py: the `SchemaRegistry` seam (confluent-kafka's client by default);
- config.py: the keys, under Confluent's names.
"""

from cdc.converters.avro.avro_data import AvroData
from cdc.converters.avro.converter import AvroConverter
from cdc.converters.avro.registry import SchemaRegistry

__all__ = ["AvroConverter", "AvroData", "SchemaRegistry"]
