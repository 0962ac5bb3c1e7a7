"""`connector.client.config.override.policy`: which `producer.override.*`, `consumer.override.*` and
`admin.override.*` keys a connector config may carry (Kafka Connect's KIP-458 policies).

- `All` (the default since Kafka 3.0): any client setting may be overridden.
- `None`: no override at all.
- `Principal`: only the client's identity: `sasl.jaas.config`, `sasl.mechanism`, `security.protocol`.

A refused key is a validation error on that key, so the connector is rejected before it starts,
with Kafka Connect's message.
"""

from __future__ import annotations

from collections.abc import Mapping

OVERRIDE_PREFIXES = ("producer.override.", "consumer.override.", "admin.override.")

_PACKAGE = "org.apache.kafka.connect.connector.policy."
POLICIES = ("All", "None", "Principal")
# The policy may also be named by its Java class, as in a Kafka Connect worker.properties.
_BY_CLASS = {f"{_PACKAGE}{name}ConnectorClientConfigOverridePolicy": name for name in POLICIES}
_PRINCIPAL_KEYS = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})


def policy_name(value: str) -> str | None:
    """The policy's short name for an alias or Java class name, or None if unknown."""
    value = value.strip()
    if value in POLICIES:
        return value
    return _BY_CLASS.get(value)


def override_errors(policy: str, props: Mapping[str, str]) -> dict[str, str]:
    """The connector's override keys the policy refuses, each with its error message."""
    name = policy_name(policy) or "All"
    errors: dict[str, str] = {}
    for key in props:
        prefix = next((p for p in OVERRIDE_PREFIXES if key.startswith(p)), None)
        if prefix is None or name == "All":
            continue
        if name == "Principal" and key.removeprefix(prefix) in _PRINCIPAL_KEYS:
            continue
        errors[key] = (
            f"The '{name}' policy does not allow '{key.removeprefix(prefix)}' to be overridden in the connector "
            f"configuration. Remove {key}, or change the worker's connector.client.config.override.policy"
        )
    return errors
