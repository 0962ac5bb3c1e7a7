"""The parsed job: typed access plus the Kafka Connect configs a job turns into."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc.jobs.formats import converter_props

# Short aliases users may write as source.connector.class.
CONNECTOR_ALIASES = {
    "mysql": "io.debezium.connector.mysql.MySqlConnector",
    "mariadb": "io.debezium.connector.mariadb.MariaDbConnector",
    "postgres": "io.debezium.connector.postgresql.PostgresConnector",
    "postgresql": "io.debezium.connector.postgresql.PostgresConnector",
}


def source_family(connector_class: str) -> str | None:
    """ "mysql" (MySQL/MariaDB), "postgres", or None for a connector the job tools cannot query."""
    c = connector_class.lower()
    if "mysql" in c or "mariadb" in c:
        return "mysql"
    if "postgres" in c:
        return "postgres"
    return None


# Kafka client security settings a job's transport takes under Kafka Connect's (Java) names.
KAFKA_SECURITY_KEYS = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.oauthbearer.token.endpoint.url",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
)
_KAFKA_HISTORY = "io.debezium.storage.kafka.history.KafkaSchemaHistory"
_HISTORY = "schema.history.internal"


def _str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_str(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class TableSpec:
    source: str
    target: str | None = None
    keys: tuple[str, ...] = ()
    mode: str = "scd1"
    delete_mode: str = "hard"
    partition_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobSpec:
    name: str
    source: dict[str, Any]
    transforms: list[dict[str, Any]] = field(default_factory=list)
    transport: dict[str, Any] = field(default_factory=dict)
    sink: dict[str, Any] = field(default_factory=dict)
    spark: dict[str, Any] = field(default_factory=dict)
    log_format: str | None = None  # `log.format`: text or json (cdc.runtime.logging_context)
    verify: dict[str, Any] = field(default_factory=dict)  # `verify`: scheduled online verify (verify/periodic.py)

    @property
    def transport_type(self) -> str:
        return str(self.transport.get("type", "embedded"))

    @property
    def tables(self) -> list[TableSpec]:
        return [
            TableSpec(
                name,
                opts.get("target"),
                tuple(opts.get("keys", ())),
                opts.get("mode", self.sink.get("mode", "scd1")),  # a table's own, else the job's
                opts.get("delete.mode", self.sink.get("delete.mode", "hard")),
                tuple(opts.get("partition.by", ())),
            )
            for name, opts in (self.sink.get("tables") or {}).items()
        ]

    def connector_config(self) -> dict[str, str]:
        """The source as a Kafka Connect connector config (name, class alias resolved, SMTs)."""
        config = {k: _str(v) for k, v in self.source.items()}
        config["name"] = self.name
        cls = config["connector.class"]
        config["connector.class"] = CONNECTOR_ALIASES.get(cls.lower(), cls)
        if self.transport_type == "kafka" and "topic.creation.default.partitions" not in config:
            config["topic.creation.default.partitions"] = _str(self.transport.get("topic.partitions", 1))
            config["topic.creation.default.replication.factor"] = _str(
                self.transport.get("topic.replication.factor", -1)
            )
        self._secure_history(config)
        aliases: list[str] = []
        predicates: list[str] = []
        for t in self.transforms:
            alias = str(t["name"])
            aliases.append(alias)
            for k, v in t.items():
                if k in ("name", "predicate"):
                    continue
                config[f"transforms.{alias}.{k}"] = _str(v)
            predicate = t.get("predicate")
            if predicate:
                p_alias = f"{alias}-predicate"
                predicates.append(p_alias)
                config[f"transforms.{alias}.predicate"] = p_alias
                if predicate.get("negate"):
                    config[f"transforms.{alias}.negate"] = "true"
                for k, v in predicate.items():
                    if k != "negate":
                        config[f"predicates.{p_alias}.{k}"] = _str(v)
        if aliases:
            config["transforms"] = ",".join(aliases)
        if predicates:
            config["predicates"] = ",".join(predicates)
        return config

    def kafka_security(self) -> dict[str, str]:
        """The transport's Kafka security settings (Java names), for every client of the job."""
        if self.transport_type != "kafka":
            return {}
        return {k: _str(self.transport[k]) for k in KAFKA_SECURITY_KEYS if k in self.transport}

    def _secure_history(self, config: dict[str, str]) -> None:
        """Debezium's Kafka schema history opens its own clients; on the transport's brokers they
        need the transport's security settings, which Debezium would make the user repeat."""
        security = self.kafka_security()
        brokers = _str(self.transport.get("bootstrap.servers"))
        same_brokers = config.get(f"{_HISTORY}.kafka.bootstrap.servers") == brokers
        if not security or config.get(_HISTORY) != _KAFKA_HISTORY or not same_brokers:
            return
        for role in ("producer", "consumer"):
            if not any(k.startswith(f"{_HISTORY}.{role}.") for k in config):
                config.update({f"{_HISTORY}.{role}.{k}": v for k, v in security.items()})

    def worker_config(self) -> dict[str, str]:
        """Worker properties for the job's transport."""
        t = self.transport
        props = {
            "transport": self.transport_type,
            "state.dir": _str(t.get("state.dir", ".cdc")),
            # Kafka's JsonConverter writes a column's DEFAULT in place of a NULL unless told not to
            # (KIP-581); a lake must get the NULL the database holds.
            "key.converter.replace.null.with.default": "false",
            "value.converter.replace.null.with.default": "false",
        }
        if self.transport_type == "kafka":
            props["bootstrap.servers"] = _str(t["bootstrap.servers"])
            props["offset.storage.topic"] = f"{self.name}-offsets"
            props["status.storage.topic"] = f"{self.name}-status"
        for key in ("offset.flush.interval.ms", "metrics.port", "metrics.host"):  # the worker keys of those names
            if key in t:
                props[key] = _str(t[key])
        props.update(self.kafka_security())
        props.update(converter_props(t, self.source))  # format: avro (cdc/jobs/formats.py)
        for k, v in (t.get("kafka") or {}).items():
            props[f"kafka.{k}"] = _str(v)
        for prefix in ("producer", "consumer"):
            for k, v in (t.get(prefix) or {}).items():
                props[f"{prefix}.{k}"] = _str(v)
        return props
