"""Unknown and unused config keys: Kafka's "The configuration 'x' was supplied but isn't a known
config." (`AbstractConfig.logUnused`), for worker and connector configs, with a did-you-mean.

Kafka logs that line for every key its `ConfigDef`s do not use, so a misspelled
`databse.hostname` runs silently with the default. Here a key is known when a ConfigDef
defines it (the worker's, or the connector's own plus the common connector keys and every
SMT's), when Kafka Connect itself defines it, or when it falls under a prefix that is passed
on to something else: client overrides (`producer.override.*`), converter settings
(`key.converter.*`), Debezium's JDBC pass-through (`database.*`, `driver.*`) and schema
history clients (`schema.history.internal.producer.*`), and the settings of the aliases
Debezium's `post.processors` names (when the connector defines it). `transforms.<alias>.*` and
`predicates.<alias>.*` keys are checked against the SMT's own ConfigDef (a key of an alias
the list does not name is unknown too), except for an alias whose class cannot be loaded:
that is an error of its own.

A key under a pass-through prefix is reported only when it is one letter or two away from a
known key of that prefix (`database.hostnmae`): `database.useSSL` is a JDBC property, not a
typo of `database.user`.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONNECTOR_PASS_THROUGH_PREFIXES",
    "KAFKA_CONNECTOR_KEYS",
    "KAFKA_WORKER_KEYS",
    "WORKER_PASS_THROUGH_PREFIXES",
    "UnknownKey",
    "closest",
    "find_unknown_keys",
    "log_unknown_keys",
    "unknown_connector_keys",
    "unknown_worker_keys",
]

# Settings handed to something else, so no ConfigDef of ours defines them.
CONNECTOR_PASS_THROUGH_PREFIXES = (
    "key.converter.",
    "value.converter.",
    "header.converter.",
    "producer.override.",
    "consumer.override.",
    "admin.override.",
    "topic.creation.",
    "errors.",
    "database.",  # Debezium passes database.* on to the JDBC driver
    "driver.",
    "schema.history.internal.",  # .producer.* / .consumer.* reach the history's Kafka clients
)
# Keys Kafka Connect's ConnectorConfig/SourceConnectorConfig define that no connector needs to.
KAFKA_CONNECTOR_KEYS = frozenset(
    {
        "config.action.reload",
        "exactly.once.support",
        "transaction.boundary",
        "transaction.boundary.interval.ms",
        "offsets.storage.topic",
        "topic.creation.groups",
        "connector.plugin.version",
        "key.converter.plugin.version",
        "value.converter.plugin.version",
        "header.converter.plugin.version",
    }
)
# List keys whose entries are aliases configured under `<alias>.` (Debezium's post processors):
# their settings pass through when the connector knows the list key.
ALIAS_LIST_KEYS = ("post.processors",)

WORKER_PASS_THROUGH_PREFIXES = (
    "producer.",
    "consumer.",
    "admin.",
    "kafka.",  # librdkafka's own names
    "key.converter.",
    "value.converter.",
    "header.converter.",
    "config.providers.",
    "listeners.https.",
    "listeners.http.",
    "ssl.",  # the Kafka clients' (and the REST listener's) TLS settings
    "sasl.",
)
# Kafka Connect worker settings (WorkerConfig, DistributedConfig, CommonClientConfigs) that this
# runtime does not read: said so, rather than "unknown", since they are right for Kafka.
KAFKA_WORKER_KEYS = frozenset(
    {
        "rest.host.name",
        "rest.port",
        "rest.advertised.listener",
        "admin.listeners",
        "response.http.headers.config",
        "internal.key.converter",
        "internal.value.converter",
        "metrics.sample.window.ms",
        "metrics.num.samples",
        "metrics.recording.level",
        "metric.reporters",
        "auto.include.jmx.reporter",
        "plugin.discovery",
        "topic.tracking.enable",
        "topic.tracking.allow.reset",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "rebalance.timeout.ms",
        "worker.unsync.backoff.ms",
        "connect.protocol",
        "inter.worker.key.generation.algorithm",
        "inter.worker.key.size",
        "inter.worker.key.ttl.ms",
        "inter.worker.signature.algorithm",
        "inter.worker.verification.algorithms",
        "client.id",
        "client.dns.lookup",
        "connections.max.idle.ms",
        "receive.buffer.bytes",
        "send.buffer.bytes",
        "request.timeout.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "retry.backoff.ms",
        "retry.backoff.max.ms",
        "metadata.max.age.ms",
        "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms",
        "config.storage.partitions",
        "exactly.once.source.support.timeout.ms",
    }
)

_CUTOFF = 0.6  # difflib's default: `tasks.maxx` → `tasks.max`, `topci` → `topic`
_PASS_THROUGH_CUTOFF = 0.8  # on the part after the prefix: `hostnmae` → `hostname`, not `useSSL` → `user`


@dataclass(frozen=True)
class UnknownKey:
    name: str
    suggestion: str | None = None
    kafka_only: bool = False  # a Kafka Connect setting this runtime ignores

    @property
    def message(self) -> str:
        if self.kafka_only:
            return (
                f"The configuration '{self.name}' is a Kafka Connect setting this runtime does not use; it is ignored."
            )
        hint = f" Did you mean '{self.suggestion}'?" if self.suggestion else ""
        return f"The configuration '{self.name}' was supplied but isn't a known config.{hint}"

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "message": self.message, "suggestion": self.suggestion}


def closest(word: str, candidates: Iterable[str], cutoff: float = _CUTOFF) -> str | None:
    """The candidate most like `word` (difflib's ratio at least `cutoff`), or None."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=cutoff)
    return close[0] if close else None


def find_unknown_keys(
    props: Mapping[str, Any],
    known: Collection[str],
    pass_through: Iterable[str] = (),
    kafka_keys: Collection[str] = (),
    scopes: Iterable[str] = (),
) -> list[UnknownKey]:
    """Every key of `props` that is not `known`, in `props` order.

    A key under a `pass_through` prefix is reported only when it is a near miss of a known key
    with the same prefix. Keys in `kafka_keys` are reported as Kafka settings this runtime
    ignores. Any other unknown key is reported with the closest known key as a suggestion; a
    key under one of `scopes` (`transforms.route.`) is compared with that scope's keys only,
    so `transforms.route.regx` gets `transforms.route.regex`, not another SMT's key.
    """
    prefixes = tuple(pass_through)
    scoped = sorted(scopes, key=len, reverse=True)
    candidates = sorted(set(known))
    out: list[UnknownKey] = []
    for key in props:
        if key in known:
            continue
        prefix = next((p for p in prefixes if key.startswith(p)), None)
        if prefix is not None:
            near = _near(key, prefix, candidates, _PASS_THROUGH_CUTOFF)
            if near is not None:
                out.append(UnknownKey(key, near))
        elif key in kafka_keys:
            out.append(UnknownKey(key, kafka_only=True))
        else:
            scope = next((s for s in scoped if key.startswith(s)), "")
            out.append(UnknownKey(key, _near(key, scope, candidates, _CUTOFF)))
    return out


def _near(key: str, prefix: str, candidates: Iterable[str], cutoff: float) -> str | None:
    """The known key under `prefix` whose rest is most like `key`'s rest."""
    siblings = {k[len(prefix) :]: k for k in candidates if k.startswith(prefix)}
    near = closest(key[len(prefix) :], siblings, cutoff)
    return siblings[near] if near is not None else None


def alias_prefixes(props: Mapping[str, Any], list_keys: Iterable[str] = ALIAS_LIST_KEYS) -> tuple[str, ...]:
    """`<alias>.` for every alias the given list keys name (`post.processors=reselector` → `reselector.`)."""
    out: list[str] = []
    for key in list_keys:
        out += [f"{a.strip()}." for a in str(props.get(key) or "").split(",") if a.strip()]
    return tuple(out)


def unknown_connector_keys(
    props: Mapping[str, Any], known: Collection[str], unchecked_prefixes: Iterable[str] = ()
) -> list[UnknownKey]:
    """The connector config's unknown keys. `known`: what the common, connector and SMT ConfigDefs
    define plus the keys the connector validated; `unchecked_prefixes`: `transforms.<alias>.` of
    SMTs whose class could not be loaded (their keys cannot be checked)."""
    lists = [k for k in ALIAS_LIST_KEYS if k in known]
    pass_through = (*CONNECTOR_PASS_THROUGH_PREFIXES, *alias_prefixes(props, lists), *unchecked_prefixes)
    scopes = [f"{k}.{p}" for k in ("transforms", "predicates") for p in alias_prefixes(props, [k])]
    return find_unknown_keys(props, set(known) | KAFKA_CONNECTOR_KEYS, pass_through, scopes=scopes)


def unknown_worker_keys(props: Mapping[str, Any]) -> list[UnknownKey]:
    """The worker config's unknown keys (WorkerConfig's ConfigDef, the Kafka client security keys
    and the pass-through prefixes are known)."""
    from cdc.api.kafka_clients import SECURITY_KEYS
    from cdc.runtime.worker_config import WORKER_CONFIG_DEF

    known = WORKER_CONFIG_DEF.names() | set(SECURITY_KEYS)
    return find_unknown_keys(props, known, WORKER_PASS_THROUGH_PREFIXES, KAFKA_WORKER_KEYS - known)


def log_unknown_keys(log: logging.Logger, unknown: Iterable[UnknownKey], where: str = "") -> None:
    """One WARN line per key, as Kafka's AbstractConfig.logUnused; `where` names the config."""
    for u in unknown:
        log.warning("%s%s", f"{where}: " if where else "", u.message)
