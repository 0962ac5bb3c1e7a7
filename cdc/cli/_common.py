"""What every command shares: loading a worker config, opening its transport, one-line errors."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import click

from cdc.api.errors import ConfigException, ConnectException
from cdc.config.files import load_worker_config
from cdc.config.providers import ConfigTransformer, TransformResult
from cdc.log.base import LogError
from cdc.runtime.logging_context import LOG_FORMATS, configure, current_format
from cdc.runtime.unknown_keys import log_unknown_keys, unknown_worker_keys
from cdc.runtime.worker_config import WorkerConfig, inferred_transport
from cdc.storage.offsets import OffsetStoreError

EXIT_CONFIG = 2
EXIT_RUNTIME = 1


def fail(message: str, code: int = EXIT_CONFIG) -> NoReturn:
    """Print one line, as advice, and exit non-zero (no traceback)."""
    click.echo("error: " + " ".join(str(message).split()), err=True)
    sys.exit(code)


@contextmanager
def friendly_errors() -> Iterator[None]:
    try:
        yield
    except ConfigException as e:
        fail(str(e), EXIT_CONFIG)
    except (LogError, OffsetStoreError, ConnectException) as e:
        fail(str(e), EXIT_RUNTIME)


def setup_logging(level: str | None, fmt: str | None = None) -> None:
    """stderr logging in Kafka Connect's pattern with its `connector.context` (`[name|task-0] `),
    or as JSON lines (`fmt` json); a second call (a worker file's `log.format`) switches format."""
    configure(getattr(logging, level.upper(), logging.INFO) if level else None, fmt or current_format())
    # librdkafka and friends, and py4j's gateway (every callback into the Spark sink), are
    # chatty at INFO; keep their warnings.
    for name in ("kafka", "py4j"):
        logging.getLogger(name).setLevel(logging.WARNING)


def load_worker(path: str, *, distributed: bool = False) -> tuple[WorkerConfig, ConfigTransformer]:
    """The worker file's config; each key no worker ConfigDef knows is logged with a did-you-mean.

    A Kafka Connect worker file without `transport` runs unchanged: the transport it means is
    inferred (worker_config.inferred_transport) and said once in the log.
    """
    props = load_worker_config(path)
    log_format = props.pop("log.format", None)  # the CLI's, not the worker's: applied here, at once
    if log_format is not None:
        if log_format.strip().lower() not in LOG_FORMATS:
            raise ConfigException(f"{path}: log.format={log_format}: use text or json", "log.format")
        setup_logging(None, log_format.strip().lower())
    transport = inferred_transport(props, distributed=distributed)
    if transport is not None:
        why = "distributed mode" if distributed else "bootstrap.servers is set"
        logging.getLogger("cdc.runtime.worker_config").info(
            "%s has no transport: using transport=%s (%s); set transport= to choose", path, transport, why
        )
        props = {**props, "transport": transport}
    log_unknown_keys(logging.getLogger("cdc.runtime.worker_config"), unknown_worker_keys(props), path)
    transformer = ConfigTransformer.from_worker_config(props)
    resolved = transformer.transform(props)
    return WorkerConfig(resolved.data), transformer


def resolve(transformer: ConfigTransformer, props: dict[str, str]) -> TransformResult:
    return transformer.transform(props)


def decode_bytes(data: bytes | None) -> Any:
    """JSON where the bytes are JSON, else text, else {"base64": …} (for `topics read`)."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        import base64

        return {"base64": base64.b64encode(data).decode()}
    try:
        return json.loads(text)
    except ValueError:
        return text


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, default=str))


def env_default(name: str, default: str) -> Callable[[], str]:
    return lambda: os.environ.get(name, default)
