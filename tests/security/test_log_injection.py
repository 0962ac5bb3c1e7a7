"""Issue 33, item 4: no log line can be forged or broken by what a caller sends.

Before the fix a connector config key holding a newline forged a whole
`[time] ERROR [shop|task-0] Task shop-0 failed` line in the worker's log (through the unknown-key
warning), a key holding NUL wrote a raw NUL into it, and a lone surrogate in a value gave a 500
UnicodeEncodeError. Now every field of a text line is escaped after formatting (an exception's
message too; only the traceback module's own line breaks remain), JSON lines escape what
json.dumps leaves raw, and a lone surrogate anywhere in a REST body is a 400 naming its key.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cdc.runtime import logging_context
from cdc.runtime.unknown_keys import log_unknown_keys, unknown_worker_keys
from tests.rest.conftest import controlled
from tests.security import rest_rig
from tests.security.rest_rig import Api, error
from tests.support.proc import CdcProcess, wait_for, write_props

api_factory = rest_rig.api_factory

FORGED = "[2024-01-01 00:00:00,000] ERROR [shop|task-0] Task shop-0 failed (cdc.runtime.task)"
# A line the text format starts (TEXT_FORMAT): `[2024-05-01 10:00:00,123] LEVEL `.
LINE_START = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] [A-Z]+ ")
HOSTILE = ["k\n" + FORGED, "nul\x00key", "esc\x1b[2Jkey", "cr\rkey", "sep\u2028key", "nel\x85key", "bidi\u202ekey"]


@pytest.fixture
def text_log() -> Iterator[io.StringIO]:
    """The root logger's cdc handler, text format, into a buffer (the real `configure`)."""
    buf = io.StringIO()
    before = logging.getLogger().level
    logging_context.configure("INFO", "text", buf)
    yield buf
    _restore(before)


def _restore(level: int) -> None:
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_cdc_handler", False)]:
        root.removeHandler(h)
    root.setLevel(level)


def _cdc_handler_only(name: str) -> logging.Logger:
    """A logger that writes through the handler `configure` installed and nowhere else: a record
    holding a lone surrogate must not reach pytest's own log capture, which cannot send it
    between xdist workers (the cdc handler is what is under test)."""
    (handler,) = [h for h in logging.getLogger().handlers if getattr(h, "_cdc_handler", False)]
    log = logging.getLogger(name)
    log.handlers = [handler]
    log.propagate = False
    return log


def _records(text: str) -> list[str]:
    """The lines of a text log that start a record."""
    return [line for line in text.split("\n") if LINE_START.match(line)]


def test_unknown_key_warning_cannot_forge_a_line(text_log: io.StringIO) -> None:
    props = {key: "1" for key in HOSTILE}
    log_unknown_keys(logging.getLogger("cdc.runtime.worker_config"), unknown_worker_keys(props), "worker.properties")
    out = text_log.getvalue()
    assert len(_records(out)) == len(HOSTILE) == len(out.rstrip("\n").split("\n")), out
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202e]", out), repr(out)
    assert "'k\\n[2024-01-01 00:00:00,000] ERROR [shop|task-0] Task shop-0 failed" in out
    assert "nul\\x00key" in out and "esc\\x1b[2Jkey" in out and "cr\\rkey" in out and "sep\\u2028key" in out
    out.encode("utf-8")  # writable as it is


def test_a_lone_surrogate_is_escaped_not_a_logging_error(text_log: io.StringIO) -> None:
    log = _cdc_handler_only("lone.surrogate")
    try:
        log.warning("value %s", "a\ud800b")
    finally:
        log.handlers = []
    out = text_log.getvalue()
    assert "value a\\ud800b" in out
    out.encode("utf-8")


def test_an_exception_message_cannot_forge_a_line(text_log: io.StringIO) -> None:
    log = logging.getLogger("cdc.runtime.worker")
    try:
        try:
            raise ValueError("inner\n" + FORGED)
        except ValueError as inner:
            raise RuntimeError("outer\r\n" + FORGED + "\x00") from inner
    except RuntimeError as e:
        log.exception("Could not start connector %s: %s", "shop\n" + FORGED, e)
    out = text_log.getvalue()
    (first,) = _records(out)  # one record: the traceback's lines start none
    assert first.startswith("[") and "ERROR Could not start connector shop\\n[2024-01-01" in first
    lines = out.rstrip("\n").split("\n")
    assert not any(line.startswith(FORGED[:26]) for line in lines), out
    assert "ValueError: inner\\n[2024-01-01 00:00:00,000] ERROR" in out  # the traceback is still there
    assert "RuntimeError: outer\\r\\n[2024-01-01" in out and "\x00" not in out
    assert "The above exception was the direct cause of the following exception:" in out


def test_json_lines_stay_one_object_a_line_and_writable() -> None:
    buf = io.StringIO()
    before = logging.getLogger().level
    logging_context.configure("INFO", "json", buf)
    log = _cdc_handler_only("json.lines")
    try:
        for key in [*HOSTILE, "lone\udc80"]:
            log.warning("The configuration '%s' was supplied but isn't a known config.", key)
        try:
            raise ValueError("boom\n" + FORGED)
        except ValueError:
            log.exception("failed")
    finally:
        log.handlers = []
        _restore(before)
    out = buf.getvalue()
    out.encode("utf-8")
    lines = out.rstrip("\n").split("\n")
    assert len(lines) == len(HOSTILE) + 2, out
    assert not any(re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u202e]", line) for line in lines), repr(out)
    parsed = [json.loads(line) for line in lines]
    # A JSON reader gets the value as it was (C0, C1, U+2028 are only escaped, not changed).
    assert [p["message"].split("'")[1] for p in parsed[: len(HOSTILE)]] == HOSTILE
    assert "ValueError: boom\\n[2024" in parsed[-1]["exception"]  # the exception's own text, escaped


def test_a_child_task_processs_lines_are_escaped_too() -> None:
    """A task process logs with the same formatter (cdc.runtime.task_child), in its own pattern."""
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(logging_context.TextFormatter("%(levelname)s %(message)s (%(name)s)"))
    log = logging.getLogger("child.test")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("key %s", "x\n" + FORGED)
    finally:
        log.removeHandler(handler)
        log.propagate = True
    assert buf.getvalue().count("\n") == 1 and "x\\n[2024" in buf.getvalue()


# -- the worker, over REST -------------------------------------------------------------------------


def test_rest_config_keys_cannot_forge_worker_log_lines(api_factory: Callable[..., Api], text_log: io.StringIO) -> None:
    api = api_factory()
    config = controlled("shop")["config"]
    config.update({key: "v" for key in HOSTILE})
    with api.client() as http:
        created = http.post("/connectors", json={"name": "shop", "config": config})
        assert created.status_code == 201, created.text
    out = text_log.getvalue()
    warned = [line for line in _records(out) if "isn't a known config" in line]
    assert len(warned) == len(HOSTILE), out
    assert not any(line.startswith(FORGED[:26]) for line in out.split("\n")), out
    assert "\x00" not in out and "\x1b" not in out and "\r" not in out


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"name": "s", "config": {"connector.class": "ControlledSource", "topic": "t", "k": "a\\ud800"}}', "'k'"),
        (b'{"name": "s", "config": {"connector.class": "ControlledSource", "\\udc80x": "v"}}', "'\\udc80x'"),
        (b'{"name": "s\\ud83d", "config": {"connector.class": "ControlledSource"}}', "'name'"),
    ],
)
def test_a_lone_surrogate_in_a_rest_body_is_a_400_naming_the_key(
    api_factory: Callable[..., Api], text_log: io.StringIO, body: bytes, named: str
) -> None:
    api = api_factory()
    with api.client() as http:
        r = http.post("/connectors", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 400, r.text
        message = error(r)
        assert "surrogate" in message and named in message, message
        put = http.put("/connectors/s/config", content=body.split(b'"config": ', 1)[1][:-1],
                       headers={"Content-Type": "application/json"})  # fmt: skip
        assert put.status_code == 400 or "'name'" in named, put.text
        # A pair is a character: accepted.
        ok = http.post("/connectors", json={"name": "pair\U0001f600", "config": controlled("x")["config"]})
        assert ok.status_code == 201, ok.text
    assert "Traceback" not in text_log.getvalue() and "UnicodeEncodeError" not in text_log.getvalue()


# -- the real worker process ----------------------------------------------------------------------------


@pytest.mark.e2e
def test_the_worker_log_of_cdc_standalone_has_no_forged_line(tmp_path: Path) -> None:
    """A worker file's key (`\\n` and `\\u0000` are .properties escapes) through the real CLI's log."""
    worker = tmp_path / "worker.properties"
    write_props(worker, {"transport": "embedded", "state.dir": tmp_path / "state", "listeners": "http://127.0.0.1:0"})
    with worker.open("a") as f:
        f.write("forged\\n" + FORGED.replace(" ", "\\ ").replace(":", "\\:") + "=1\n")
        f.write("nul\\u0000key=1\nesc\\u001b[31mkey=1\n")
    proc = CdcProcess("standalone", str(worker), log_path=tmp_path / "worker.log")
    try:
        wait_for(lambda: "REST API listening on" in proc.output(), 60, "the REST API", proc)
    finally:
        proc.terminate()
    out = (tmp_path / "worker.log").read_text(errors="replace")
    assert not any(line.startswith(FORGED[:26]) for line in out.split("\n")), out
    assert "forged\\n[2024-01-01 00:00:00,000] ERROR [shop|task-0] Task shop-0 failed" in out, out
    assert "nul\\x00key" in out and "esc\\x1b[31mkey" in out and "\x00" not in out and "\x1b" not in out
