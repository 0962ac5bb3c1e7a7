"""Worker configuration: Kafka Connect's WorkerConfig keys plus `transport` and `state.dir`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance, Range, ValidString
from cdc.api.errors import ConfigException
from cdc.api.kafka_clients import SECURITY_KEYS, librdkafka_config
from cdc.runtime.client_overrides import policy_name

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
SIMPLE_HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

TRANSPORTS = ("embedded", "kafka")


def inferred_transport(props: Mapping[str, str], *, distributed: bool) -> str | None:
    """The transport a worker file means without saying it, or None when it says it (or means the default).

    A Kafka Connect file (connect-distributed.properties, connect-standalone.properties) has
    no `transport` key: distributed mode can only mean Kafka (workers meet in its topics), and a
    standalone file naming `bootstrap.servers` means the Kafka cluster it names. The owner of
    this rule: every command that loads a worker file asks here.
    """
    if "transport" in props:
        return None
    if distributed or "bootstrap.servers" in props:
        return "kafka"
    return None


def _replication_factor(name: str, value: Any) -> None:
    """Kafka Connect's rule for the internal topics' `*.replication.factor`: -1 (the broker's
    default.replication.factor) or a positive count of replicas."""
    if value is not None and value != -1 and value < 1:
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: use -1 for the broker's "
            "default.replication.factor, or a count of replicas of at least 1",
            name,
        )


def _override_policy(name: str, value: Any) -> None:
    if value is not None and policy_name(value) is None:
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: use All, None or Principal "
            "(custom override policy classes are not supported)",
            name,
        )


WORKER_CONFIG_DEF = (
    ConfigDef()
    .define(
        "transport",
        ConfigType.STRING,
        "embedded",
        ValidString.in_(*TRANSPORTS),
        Importance.HIGH,
        "Where topics live: 'embedded' (a SQLite log under state.dir, no Kafka needed) or 'kafka'.",
    )
    .define(
        "state.dir",
        ConfigType.STRING,
        ".cdc",
        None,
        Importance.HIGH,
        "Directory of the embedded log (records, offsets, configs and status in one SQLite file).",
    )
    .define(
        "log.retention.check.interval.ms",
        ConfigType.LONG,
        300_000,
        Range.at_least(0),
        Importance.LOW,
        "Embedded transport: how often the worker deletes records older than their topic's retention.ms "
        "(7 days unless the topic sets it; -1 keeps a topic forever), as a Kafka broker's log cleaner. 0 never.",
    )
    .define(
        "embedded.synchronous",
        ConfigType.STRING,
        "FULL",
        ValidString.in_ignore_case("OFF", "NORMAL", "FULL", "EXTRA"),
        Importance.LOW,
        "SQLite synchronous mode of the embedded log: FULL survives power loss, NORMAL a process crash.",
    )
    .define(
        "num.partitions",
        ConfigType.INT,
        1,
        Range.at_least(1),
        Importance.LOW,
        "Partitions of topics the embedded log creates on first write (like the broker setting).",
    )
    .define(
        "bootstrap.servers",
        ConfigType.LIST,
        "localhost:9092",
        None,
        Importance.HIGH,
        "Kafka brokers (transport=kafka).",
    )
    .define("group.id", ConfigType.STRING, None, None, Importance.HIGH, "Distributed mode: the Connect cluster.")
    .define("key.converter", ConfigType.CLASS, JSON_CONVERTER, None, Importance.HIGH, "Default key converter.")
    .define("value.converter", ConfigType.CLASS, JSON_CONVERTER, None, Importance.HIGH, "Default value converter.")
    .define(
        "header.converter",
        ConfigType.CLASS,
        SIMPLE_HEADER_CONVERTER,
        None,
        Importance.LOW,
        "Default header converter.",
    )
    .define(
        "plugin.path",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Directories whose entries are plugins: `pip install --target` directories or wheels.",
    )
    .define(
        "offset.flush.interval.ms",
        ConfigType.LONG,
        60000,
        Range.at_least(0),
        Importance.LOW,
        "How often acknowledged source offsets are stored (Kafka transport).",
    )
    .define(
        "offset.flush.timeout.ms",
        ConfigType.LONG,
        5000,
        Range.at_least(0),
        Importance.LOW,
        "How long a flush waits for outstanding records before it gives up until the next interval.",
    )
    .define(
        "offset.storage.file.filename",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "Standalone with transport=kafka: keep source offsets in this file instead of offset.storage.topic.",
    )
    .define("offset.storage.topic", ConfigType.STRING, "connect-offsets", None, Importance.LOW, "Offsets topic.")
    .define("offset.storage.partitions", ConfigType.INT, 25, Range.at_least(1), Importance.LOW, "")
    .define(
        "offset.storage.replication.factor",
        ConfigType.SHORT,
        -1,
        _replication_factor,
        Importance.LOW,
        "Replication factor of the offsets topic when the worker creates it (-1: the broker's default).",
    )
    .define("status.storage.topic", ConfigType.STRING, "connect-status", None, Importance.LOW, "Status topic.")
    .define("status.storage.partitions", ConfigType.INT, 5, Range.at_least(1), Importance.LOW, "")
    .define(
        "status.storage.replication.factor",
        ConfigType.SHORT,
        -1,
        _replication_factor,
        Importance.LOW,
        "Replication factor of the status topic when the worker creates it (-1: the broker's default).",
    )
    .define("config.storage.topic", ConfigType.STRING, "connect-configs", None, Importance.LOW, "Configs topic.")
    .define(
        "config.storage.replication.factor",
        ConfigType.SHORT,
        -1,
        _replication_factor,
        Importance.LOW,
        "Replication factor of the config topic (always one partition) when the worker creates it "
        "(-1: the broker's default).",
    )
    .define(
        "worker.sync.timeout.ms",
        ConfigType.INT,
        3000,
        Range.at_least(0),
        Importance.MEDIUM,
        "Distributed mode: how long a worker waits, after each rebalance, to read the config topic to its "
        "end before it starts anything; until then it starts nothing.",
    )
    .define(
        "task.shutdown.graceful.timeout.ms",
        ConfigType.LONG,
        5000,
        Range.at_least(0),
        Importance.LOW,
        "How long a stopping task may take to flush before it is abandoned.",
    )
    .define(
        "topic.creation.enable", ConfigType.BOOLEAN, True, None, Importance.LOW, "Let source connectors create topics."
    )
    .define("config.providers", ConfigType.LIST, "", None, Importance.LOW, "Config providers (env, file, directory).")
    .define(
        "rest.config.providers",
        ConfigType.LIST,
        None,
        None,
        Importance.MEDIUM,
        "Config providers that connector configs submitted over the REST API may reference. Default: those "
        "config.providers declares, except env, file and directory (they read the worker's own environment and "
        "files; Kafka allows them). Configs from the operator's files (cdc standalone, cdc run) may use all.",
    )
    .define(
        "rest.allowed.paths",
        ConfigType.LIST,
        None,
        None,
        Importance.MEDIUM,
        "Directories under which file-valued keys (schema.history.internal.file.filename, file, *.filename, ...) "
        "of connector configs submitted over the REST API may name files. Default: state.dir only.",
    )
    .define(
        "listeners",
        ConfigType.LIST,
        "http://127.0.0.1:8083",
        None,
        Importance.LOW,
        "Where the REST API listens (Kafka's key): http:// and/or https:// (listeners.https.ssl.* keys). "
        "Loopback by default: expose it deliberately, with basic auth (rest.extension.classes) or "
        "ssl.client.auth=required, e.g. listeners=https://0.0.0.0:8443. Port 0 picks a free port.",
    )
    .define("rest.advertised.host.name", ConfigType.STRING, None, None, Importance.LOW, "Host other workers call.")
    .define("rest.advertised.port", ConfigType.INT, None, None, Importance.LOW, "Port other workers call.")
    .define(
        "rest.basic.auth.credentials.file",
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "Turn on HTTP basic auth for the REST API: a .properties file of `user=password` lines "
        "(what Kafka's BasicAuthSecurityRestExtension reads through its JAAS `file` option).",
    )
    # -- REST security (cdc/rest/settings.py reads these; Kafka's names unless noted) --------------
    .define(
        "rest.advertised.listener",
        ConfigType.STRING,
        None,
        ValidString.in_ignore_case("http", "https"),
        Importance.LOW,
        "Which listener's scheme other workers use to call this one (http when listeners has both).",
    )
    .define(
        "rest.extension.classes",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "REST extensions: org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension "
        "turns on basic auth from the JAAS file's PropertyFileLoginModule (java.security.auth.login.config).",
    )
    .define(
        "java.security.auth.login.config",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "The JAAS file of BasicAuthSecurityRestExtension (the JVM system property's name; "
        "-Djava.security.auth.login.config=... in KAFKA_OPTS is read too).",
    )
    .define(
        "ssl.client.auth",
        ConfigType.STRING,
        None,
        ValidString.in_ignore_case("required", "requested", "none"),
        Importance.LOW,
        "https listeners: client certificates signed by ssl.truststore.* are required, requested or not asked.",
    )
    .define(
        "ssl.client.authentication",
        ConfigType.STRING,
        None,
        ValidString.in_ignore_case("required", "requested", "none"),
        Importance.LOW,
        "Confluent's spelling of ssl.client.auth.",
    )
    .define(
        "access.control.allow.origin",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "CORS: origins (comma-separated, * for any) whose pages may call the REST API; empty allows none.",
    )
    .define(
        "access.control.allow.methods",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "CORS: methods allowed cross-origin (default GET,POST,HEAD, as Jetty's).",
    )
    .define(
        "rest.allowed.hosts",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "cdc: extra Host header names the REST API answers (*.example.com matches subdomains, * any); "
        "listener hosts, rest.advertised.host.name and localhost always are.",
    )
    .define(
        "rest.request.max.bytes",
        ConfigType.LONG,
        1_048_576,
        Range.at_least(1),
        Importance.LOW,
        "cdc: largest REST request body accepted; a larger one gets 413.",
    )
    # The embedded schema registry's bounds on one schema (cdc.log.schema_registry.RegistryLimits,
    # same defaults): it is untrusted input, posted by anyone with the REST API.
    .define(
        "schema.registry.schema.max.bytes",
        ConfigType.INT,
        1_048_576,
        Range.at_least(1),
        Importance.LOW,
        "cdc, transport=embedded: largest schema text (UTF-8 bytes) the embedded schema registry accepts; a "
        "larger one gets 413. 1 MiB, the size of one record of Confluent's _schemas topic at Kafka's defaults.",
    )
    .define(
        "schema.registry.schema.max.depth",
        ConfigType.INT,
        64,
        Range.between(1, 128),
        Importance.LOW,
        "cdc, transport=embedded: deepest nesting of JSON objects and arrays in a schema the embedded schema "
        "registry accepts (a nested optional record takes 4 levels); a deeper one gets 422. At most 128: "
        "Python's recursion in the Avro parser sets the ceiling.",
    )
    .define(
        "schema.registry.schema.max.fields",
        ConfigType.INT,
        10_000,
        Range.at_least(1),
        Importance.LOW,
        "cdc, transport=embedded: most record fields and enum symbols, in total, of a schema the embedded schema "
        "registry accepts; more get 422.",
    )
    .define(
        "schema.registry.compatibility.timeout.ms",
        ConfigType.LONG,
        5_000,
        Range.at_least(1),
        Importance.LOW,
        "cdc, transport=embedded: longest a compatibility check of the embedded schema registry may run (on "
        "register, and on POST /compatibility); past it the request gets 422 and the check stops.",
    )
    .define(
        "task.restart.on.failure.enable",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Restart FAILED tasks automatically with exponential backoff (Kafka Connect never does; off by default).",
    )
    .define(
        "task.restart.backoff.initial.ms",
        ConfigType.LONG,
        1000,
        Range.at_least(0),
        Importance.LOW,
        "Delay before the first automatic restart of a failed task; it doubles with each further failure.",
    )
    .define(
        "task.restart.backoff.max.ms",
        ConfigType.LONG,
        60000,
        Range.at_least(0),
        Importance.LOW,
        "Longest delay between automatic restarts; a task healthy for this long starts over at the initial delay.",
    )
    .define(
        "scheduled.rebalance.max.delay.ms",
        ConfigType.INT,
        300000,
        Range.at_least(1000),
        Importance.LOW,
        "Distributed mode: the longest a departed worker's connectors and tasks wait for it to come back "
        "before they move to other workers; it caps session.timeout.ms (the wait is min of the two).",
    )
    .define(
        "session.timeout.ms",
        ConfigType.INT,
        10000,
        Range.at_least(1000),
        Importance.HIGH,
        "Distributed mode: a worker that sends no heartbeat for this long (at most "
        "scheduled.rebalance.max.delay.ms) is dropped from the group and stops everything it ran; its "
        "connectors and tasks then move to the others.",
    )
    .define(
        "heartbeat.interval.ms",
        ConfigType.INT,
        3000,
        Range.at_least(1),
        Importance.HIGH,
        "Distributed mode: how often a worker heartbeats to the group coordinator (below a third of the "
        "session timeout; a larger value is lowered to that).",
    )
    .define(
        "rebalance.timeout.ms",
        ConfigType.INT,
        60000,
        Range.at_least(1),
        Importance.MEDIUM,
        "Distributed mode: how long each worker may take, once a rebalance starts, to stop what it gives up "
        "and rejoin (the group consumer's max.poll.interval.ms; at least the session timeout).",
    )
    .define(
        "exactly.once.source.support",
        ConfigType.STRING,
        "disabled",
        ValidString.in_("disabled", "preparing", "enabled"),
        Importance.MEDIUM,
        "Distributed mode, transport=kafka: 'enabled' writes each source poll batch and its offsets in one "
        "Kafka transaction with transactional.id ${group.id}-${connector}-${task}, so a zombie task is fenced.",
    )
    .define(
        "task.isolation",
        ConfigType.STRING,
        "thread",
        ValidString.in_("thread", "process"),
        Importance.MEDIUM,
        "'process' runs each task in its own Python process, supervised by the worker: separate plugin "
        "imports and GIL per task, and a crashing task cannot take the worker down. 'thread' shares the worker's.",
    )
    .define(
        "connector.client.config.override.policy",
        ConfigType.STRING,
        "All",
        _override_policy,
        Importance.MEDIUM,
        "Which producer.override.*, consumer.override.* and admin.override.* keys connectors may set: "
        "'All' (any), 'None' (no override) or 'Principal' (only sasl.jaas.config, sasl.mechanism and "
        "security.protocol). Kafka Connect's class names for the three are accepted too.",
    )
    .define("worker.id", ConfigType.STRING, None, None, Importance.LOW, "Name reported in status (default host:pid).")
    .define(
        "metrics.port",
        ConfigType.INT,
        None,
        Range.between(0, 65535),
        Importance.LOW,
        "cdc: also serve the Prometheus metrics (GET /metrics on the REST listener) on this port, without the "
        "REST API's auth, for scrapers and for `cdc run`, which has no REST API. Unset: not served. 0 picks a port.",
    )
    .define(
        "metrics.host",
        ConfigType.STRING,
        "127.0.0.1",
        None,
        Importance.LOW,
        "cdc: the address metrics.port listens on; 0.0.0.0 for every interface.",
    )
)


class WorkerConfig(AbstractConfig):
    def __init__(self, props: Mapping[str, Any]) -> None:
        super().__init__(WORKER_CONFIG_DEF, props)

    @property
    def transport(self) -> str:
        return self.get("transport")

    def client_configs(self, prefix: str) -> dict[str, str]:
        """`producer.X`, `consumer.X`, `admin.X` settings for the Kafka clients."""
        return {k: str(v) for k, v in self.originals_with_prefix(prefix).items()}

    def kafka_common(self) -> dict[str, str]:
        """Settings for every Kafka client: the worker's own security settings under Kafka Connect's
        names (security.protocol, sasl.jaas.config, ssl.truststore.location, ...), translated for
        librdkafka, then `kafka.X` (librdkafka's names) over them."""
        originals = self.originals()
        security = {k: str(originals[k]) for k in SECURITY_KEYS if k in originals}
        return {**librdkafka_config(security), **self.client_configs("kafka.")}

    def converter_configs(self, role: str) -> dict[str, Any]:
        return self.originals_with_prefix(f"{role}.")
