"""Kafka Connect's Single Message Transforms and predicates, plus the chain that runs them.

The SMTs keep Kafka's config names, defaults and semantics, and are registered under
Kafka's class names (pyproject entry points), so connector configs written for Kafka
Connect work unchanged.
"""

from cdc.transforms.cast import Cast, CastKey, CastValue
from cdc.transforms.chain import (
    ResolveClass,
    TransformationChain,
    TransformationStage,
    build_transformation_chain,
    transformation_config_def,
    validate_transformations,
)
from cdc.transforms.drop_headers import DropHeaders
from cdc.transforms.extract_field import ExtractField, ExtractFieldKey, ExtractFieldValue
from cdc.transforms.filter import Filter
from cdc.transforms.flatten import Flatten, FlattenKey, FlattenValue
from cdc.transforms.header_from import HeaderFrom, HeaderFromKey, HeaderFromValue
from cdc.transforms.hoist_field import HoistField, HoistFieldKey, HoistFieldValue
from cdc.transforms.insert_field import InsertField, InsertFieldKey, InsertFieldValue
from cdc.transforms.insert_header import InsertHeader
from cdc.transforms.mask_field import MaskField, MaskFieldKey, MaskFieldValue
from cdc.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from cdc.transforms.regex_router import RegexRouter
from cdc.transforms.replace_field import ReplaceField, ReplaceFieldKey, ReplaceFieldValue
from cdc.transforms.set_schema_metadata import SetSchemaMetadata, SetSchemaMetadataKey, SetSchemaMetadataValue
from cdc.transforms.timestamp_converter import TimestampConverter, TimestampConverterKey, TimestampConverterValue
from cdc.transforms.timestamp_router import TimestampRouter
from cdc.transforms.value_to_key import ValueToKey

__all__ = [
    "Cast",
    "CastKey",
    "CastValue",
    "DropHeaders",
    "ExtractField",
    "ExtractFieldKey",
    "ExtractFieldValue",
    "Filter",
    "Flatten",
    "FlattenKey",
    "FlattenValue",
    "HasHeaderKey",
    "HeaderFrom",
    "HeaderFromKey",
    "HeaderFromValue",
    "HoistField",
    "HoistFieldKey",
    "HoistFieldValue",
    "InsertField",
    "InsertFieldKey",
    "InsertFieldValue",
    "InsertHeader",
    "MaskField",
    "MaskFieldKey",
    "MaskFieldValue",
    "RecordIsTombstone",
    "RegexRouter",
    "ReplaceField",
    "ReplaceFieldKey",
    "ReplaceFieldValue",
    "ResolveClass",
    "SetSchemaMetadata",
    "SetSchemaMetadataKey",
    "SetSchemaMetadataValue",
    "TimestampConverter",
    "TimestampConverterKey",
    "TimestampConverterValue",
    "TimestampRouter",
    "TopicNameMatches",
    "TransformationChain",
    "TransformationStage",
    "ValueToKey",
    "build_transformation_chain",
    "transformation_config_def",
    "validate_transformations",
]
