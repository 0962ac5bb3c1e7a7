"""Kafka Connect's Single Message Transforms and predicates, plus the chain that runs them.

The SMTs keep Kafka's config names, defaults and semantics, and are registered under
Kafka's class names (pyproject entry points), so connector configs written for Kafka
Connect work unchanged.
"""

from cdc.transforms.chain import (
    ResolveClass,
    TransformationChain,
    TransformationStage,
    build_transformation_chain,
    transformation_config_def,
    validate_transformations,
)
from cdc.transforms.filter import Filter
from cdc.transforms.insert_field import InsertField, InsertFieldKey, InsertFieldValue
from cdc.transforms.mask_field import MaskField, MaskFieldKey, MaskFieldValue
from cdc.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from cdc.transforms.regex_router import RegexRouter
from cdc.transforms.replace_field import ReplaceField, ReplaceFieldKey, ReplaceFieldValue

__all__ = [
    "Filter",
    "HasHeaderKey",
    "InsertField",
    "InsertFieldKey",
    "InsertFieldValue",
    "MaskField",
    "MaskFieldKey",
    "MaskFieldValue",
    "RecordIsTombstone",
    "RegexRouter",
    "ReplaceField",
    "ReplaceFieldKey",
    "ReplaceFieldValue",
    "ResolveClass",
    "TopicNameMatches",
    "TransformationChain",
    "TransformationStage",
    "build_transformation_chain",
    "transformation_config_def",
    "validate_transformations",
]
