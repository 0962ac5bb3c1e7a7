"""Exceptions shared by the runtime and plugins (Kafka Connect's `errors` package)."""


class ConnectException(Exception):
    """Base class for every error raised through the plugin SPI."""


class RetriableException(ConnectException):
    """A transient failure: the runtime retries the call instead of failing the task."""


class DataException(ConnectException):
    """A value does not fit its schema, or bytes cannot be converted."""


class SchemaBuilderException(DataException):
    """A schema was built inconsistently (for example a default that does not fit)."""


class SchemaProjectorException(DataException):
    """A value cannot be projected onto another schema version."""


class ConfigException(ConnectException):
    """A configuration value is missing or invalid.

    `name` is the offending key, so callers can report it as a per-field error.
    """

    def __init__(self, message: str, name: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.name = name
        self.value = value


class AlreadyExistsException(ConnectException):
    """A connector or topic with that name already exists."""


class NotFoundException(ConnectException):
    """A connector, task or topic does not exist."""


class IllegalWorkerStateException(ConnectException):
    """A call arrived in a lifecycle state that does not allow it."""
