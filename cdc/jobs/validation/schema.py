"""The job's structure against cdc/jobs/job.schema.json (JSON Schema 2020-12), in plain words.

jsonschema's messages are rewritten to name the key and the fix (an unknown key with a
did-you-mean, a missing one, the expected type), and a secret's value is never quoted.
"""

from __future__ import annotations

import datetime
import json
from importlib import resources
from typing import Any

import jsonschema

from cdc.api.sensitive import HIDDEN, is_sensitive
from cdc.jobs.validation.problems import Collector, did_you_mean


def job_schema() -> dict[str, Any]:
    return json.loads(resources.files("cdc.jobs").joinpath("job.schema.json").read_text())


def check_schema(data: Any, out: Collector) -> None:
    """Every schema violation of the job, one problem per unknown key."""
    validator = jsonschema.Draft202012Validator(job_schema())
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        if error.validator in ("if", "allOf"):
            continue
        for path, message in _schema_messages(error):
            out.add(path, message)


def _schema_messages(error: jsonschema.ValidationError) -> list[tuple[tuple[str | int, ...], str]]:
    """One message per unknown key (jsonschema lists them all in one error), else one."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return [_hide_secret(*_schema_message(error), error.instance)]
    known = sorted((error.schema.get("properties") or {}).keys())
    return [
        ((*error.absolute_path, key), f"unknown key {key!r}{did_you_mean(key, known)} (known: {', '.join(known)})")
        for key in error.instance
        if key not in known
    ]


def _hide_secret(path: tuple[str | int, ...], message: str, value: Any) -> tuple[tuple[str | int, ...], str]:
    """The message without the value it quotes when the key is a secret (cdc.api.sensitive):
    `transport['ssl.keystore.password']: expected string, got int [hidden]`."""
    if any(isinstance(p, str) and is_sensitive(p) for p in path) and not isinstance(value, (dict, list)):
        for form in sorted({repr(value), str(value)}, key=len, reverse=True):
            message = message.replace(form, HIDDEN)
    return path, message


def _schema_message(error: jsonschema.ValidationError) -> tuple[tuple[str | int, ...], str]:
    path = tuple(error.absolute_path)
    v = error.validator
    expected = error.schema.get("x-expected") if isinstance(error.schema, dict) else None
    if "propertyNames" in error.schema_path:  # a key of the mapping, not a value, is wrong
        return (*path, error.instance), f"invalid key {error.instance!r}: {expected or error.message}"
    if expected and v != "type":
        return path, f"invalid value {error.instance!r}: {expected}"
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return (*path, missing), f"missing required key {missing!r}"
    if v == "type":
        types = error.validator_value
        got = f"{type(error.instance).__name__} {error.instance!r}"
        if isinstance(error.instance, (datetime.date, datetime.time)):
            got = f"a date/time {str(error.instance)!r} (quote it to keep it as text)"
        return path, f"expected {' or '.join(types) if isinstance(types, list) else types}, got {got}"
    if v == "enum":
        return path, f"{error.instance!r} is not one of {', '.join(map(str, error.validator_value))}"
    if v in ("minimum", "maximum", "minItems", "minLength", "pattern", "const", "oneOf"):
        return path, f"invalid value {error.instance!r}: {error.message}"
    return path, error.message
