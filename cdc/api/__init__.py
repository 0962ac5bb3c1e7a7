"""The plugin SPI. A plugin author reads only this package; it imports nothing else from cdc.

Mirrors Kafka Connect's `connect-api`: records, the Connect data model, connector and
task base classes, ConfigDef, converters, transformations and predicates.
"""

from cdc.api.config import (
    NO_DEFAULT_VALUE,
    AbstractConfig,
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Password,
    Range,
    ValidList,
    ValidRegex,
    ValidString,
    Width,
)
from cdc.api.connector import Connector, ConnectorContext, Task, group_partitions
from cdc.api.data import (
    Date,
    Decimal,
    Field,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)
from cdc.api.errors import (
    ConfigException,
    ConnectException,
    DataException,
    RetriableException,
)
from cdc.api.header import Header, Headers
from cdc.api.metrics import TaskMetrics
from cdc.api.records import WATERMARK_HEADER, ConnectRecord, SinkRecord, SourceRecord
from cdc.api.retention import PositionRetention
from cdc.api.sink import SinkConnector, SinkTask, SinkTaskContext, TopicPartition
from cdc.api.source import (
    ExactlyOnceSupport,
    RecordMetadata,
    SourceBacklog,
    SourceConnector,
    SourceTask,
    SourceTaskContext,
)
from cdc.api.storage import Converter, HeaderConverter, OffsetStorageReader
from cdc.api.transforms import Predicate, Transformation

__all__ = [
    "NO_DEFAULT_VALUE",
    "WATERMARK_HEADER",
    "AbstractConfig",
    "ConfigDef",
    "ConfigException",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "ConnectException",
    "ConnectRecord",
    "Connector",
    "ConnectorContext",
    "Converter",
    "DataException",
    "Date",
    "Decimal",
    "ExactlyOnceSupport",
    "Field",
    "Header",
    "HeaderConverter",
    "Headers",
    "Importance",
    "NonEmptyString",
    "OffsetStorageReader",
    "Password",
    "PositionRetention",
    "Predicate",
    "Range",
    "RecordMetadata",
    "RetriableException",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceBacklog",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Struct",
    "Task",
    "TaskMetrics",
    "Time",
    "Timestamp",
    "TopicPartition",
    "Transformation",
    "Type",
    "ValidList",
    "ValidRegex",
    "ValidString",
    "Width",
    "group_partitions",
]
