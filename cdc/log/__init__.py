"""Topic logs: the Kafka transport and the embedded SQLite transport behind one interface."""

from cdc.log._headers import decode_headers, encode_headers
from cdc.log.base import (
    GroupConsumer,
    LogError,
    LogProducer,
    LogReader,
    LogRecord,
    TopicDescription,
    TopicLog,
    TopicPartition,
    TopicSpec,
    UnknownTopicError,
)

__all__ = [
    "GroupConsumer",
    "LogError",
    "LogProducer",
    "LogReader",
    "LogRecord",
    "TopicDescription",
    "TopicLog",
    "TopicPartition",
    "TopicSpec",
    "UnknownTopicError",
    "decode_headers",
    "encode_headers",
]
