"""The AvroConverter's settings, under Confluent's names (AvroConverterConfig, AvroDataConfig,
AbstractKafkaSchemaSerDeConfig), plus Debezium's name adjustment modes."""

from __future__ import annotations

from cdc.api.config import ConfigDef, ConfigType, Importance, ValidString
from cdc.converters.avro.names import MODES

SCHEMA_REGISTRY_URL = "schema.registry.url"
AUTO_REGISTER_SCHEMAS = "auto.register.schemas"
USE_LATEST_VERSION = "use.latest.version"
LATEST_COMPATIBILITY_STRICT = "latest.compatibility.strict"
NORMALIZE_SCHEMAS = "normalize.schemas"
KEY_SUBJECT_NAME_STRATEGY = "key.subject.name.strategy"
VALUE_SUBJECT_NAME_STRATEGY = "value.subject.name.strategy"
BASIC_AUTH_CREDENTIALS_SOURCE = "basic.auth.credentials.source"
BASIC_AUTH_USER_INFO = "basic.auth.user.info"
BASIC_AUTH_USER_INFO_OLD = "schema.registry.basic.auth.user.info"
SCHEMAS_CACHE_CONFIG = "schemas.cache.config"
SCHEMAS_CACHE_SIZE = "schemas.cache.size"  # named in issue 20; Confluent's key is schemas.cache.config
ENHANCED_AVRO_SCHEMA_SUPPORT = "enhanced.avro.schema.support"
CONNECT_META_DATA = "connect.meta.data"
SCRUB_INVALID_NAMES = "scrub.invalid.names"
ALLOW_OPTIONAL_MAP_KEYS = "allow.optional.map.keys"
SCHEMA_NAME_ADJUSTMENT_MODE = "schema.name.adjustment.mode"
FIELD_NAME_ADJUSTMENT_MODE = "field.name.adjustment.mode"

TOPIC_NAME_STRATEGY = "io.confluent.kafka.serializers.subject.TopicNameStrategy"


def config_def() -> ConfigDef:
    d = ConfigDef()
    d.define(
        SCHEMA_REGISTRY_URL,
        ConfigType.LIST,
        [],
        importance=Importance.HIGH,
        documentation="Comma-separated list of Schema Registry URLs (mock://<scope> for confluent-kafka's"
        " in-memory mock). Unset with transport=embedded: the worker's own registry is used.",
    )
    d.define(
        AUTO_REGISTER_SCHEMAS,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Register the schema of each record written if the subject does not have it yet.",
    )
    d.define(
        USE_LATEST_VERSION,
        ConfigType.BOOLEAN,
        False,
        importance=Importance.LOW,
        documentation="With auto.register.schemas=false: write with the subject's latest schema.",
    )
    d.define(
        LATEST_COMPATIBILITY_STRICT,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="With use.latest.version: refuse a record whose schema is not the latest one.",
    )
    d.define(
        NORMALIZE_SCHEMAS,
        ConfigType.BOOLEAN,
        False,
        importance=Importance.LOW,
        documentation="Ask the registry to normalize schemas before registering or looking them up.",
    )
    for key in (KEY_SUBJECT_NAME_STRATEGY, VALUE_SUBJECT_NAME_STRATEGY):
        d.define(
            key,
            ConfigType.STRING,
            TOPIC_NAME_STRATEGY,
            importance=Importance.MEDIUM,
            documentation="How the subject is named: TopicNameStrategy (<topic>-key/-value), RecordNameStrategy"
            " (the record's full name) or TopicRecordNameStrategy (<topic>-<record full name>).",
        )
    d.define(
        BASIC_AUTH_CREDENTIALS_SOURCE,
        ConfigType.STRING,
        "URL",
        validator=ValidString.in_ignore_case("URL", "USER_INFO", "SASL_INHERIT"),
        importance=Importance.MEDIUM,
        documentation="Where the registry's basic-auth credentials come from: URL (user:pass@host) or USER_INFO.",
    )
    d.define(
        BASIC_AUTH_USER_INFO,
        ConfigType.PASSWORD,
        "",
        importance=Importance.MEDIUM,
        documentation="user:password for basic.auth.credentials.source=USER_INFO.",
    )
    d.define(
        SCHEMAS_CACHE_CONFIG,
        ConfigType.INT,
        1000,
        importance=Importance.LOW,
        documentation="How many converted schemas each converter keeps (schemas.cache.size is taken as well).",
    )
    for key, default, doc in (
        (ENHANCED_AVRO_SCHEMA_SUPPORT, False, "Write strings that came from Avro enums back as enums."),
        (CONNECT_META_DATA, True, "Carry Connect's name, version, doc, parameters and defaults as connect.* props."),
        (SCRUB_INVALID_NAMES, False, "Replace characters Avro refuses in names (Confluent's scrubbing)."),
        (ALLOW_OPTIONAL_MAP_KEYS, False, "Write maps with optional string keys as Avro maps."),
    ):
        d.define(key, ConfigType.BOOLEAN, default, importance=Importance.LOW, documentation=doc)
    for key, what in ((SCHEMA_NAME_ADJUSTMENT_MODE, "schema"), (FIELD_NAME_ADJUSTMENT_MODE, "field")):
        d.define(
            key,
            ConfigType.STRING,
            "none",
            validator=ValidString.in_ignore_case(*MODES),
            importance=Importance.LOW,
            documentation=f"Debezium's rule for {what} names Avro refuses: none (refuse them), avro (invalid"
            " characters become _) or avro_unicode (_uXXXX).",
        )
    return d


CONFIG_DEF = config_def()
