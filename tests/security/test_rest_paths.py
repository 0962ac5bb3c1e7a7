"""Issue 17, deliverable 6, and issue 33 item 2: file-valued keys of REST-submitted configs stay in
the connector's own directory, state.dir/connectors/<name>/ (or under rest.allowed.paths when the
operator sets it), never the worker's own files or another connector's, never through a symbolic
or hard link; so a REST caller cannot make a connector write, or read, anywhere the worker can.
Before issue 17 each REST create here was accepted; before issue 33 a connector could name
another connector's schema history as its signal.file (the channel emptied it) or the embedded
log's cdc.db as its history file.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.api.errors import ConfigException
from cdc.runtime.submitted_config import SubmittedConfigPolicy, is_file_key
from cdc.runtime.worker_config import WorkerConfig
from tests.rest.conftest import wait_until
from tests.security.provider_rig import quoting, secure_rest
from tests.support.examples import examples

MYSQL = "io.debezium.connector.mysql.MySqlConnector"


def _mysql(name: str, **extra: str) -> dict[str, object]:
    config = {
        "connector.class": MYSQL,
        "database.hostname": "127.0.0.1",
        "database.port": "1",
        "database.user": "cdc",
        "database.password": "x",
        "database.server.id": "5401",
        "topic.prefix": "shop",
        **extra,
    }
    return {"name": name, "config": config}


@pytest.mark.integration
def test_schema_history_file_outside_state_dir_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    outside = Path("/tmp") / f"cdc-outside-{uuid.uuid4().hex}"
    target = outside / "history.jsonl"
    with secure_rest(tmp_path) as rest:
        for method, path, body in [
            ("POST", "/connectors", _mysql("m", **{"schema.history.internal.file.filename": str(target)})),
            ("PUT", "/connectors/m/config", _mysql("m", **{"database.history.file.filename": str(target)})["config"]),
            (
                "PUT",
                f"/connector-plugins/{MYSQL}/config/validate",
                _mysql("m", **{"schema.history.internal.file.filename": str(target)})["config"],
            ),
        ]:
            r = rest.http.request(method, path, json=body)
            assert r.status_code == 400, (path, r.text)
            message = r.json()["message"]
            assert "\n" not in message
            assert f"filename: {target} is outside the directories" in message, message
            own = tmp_path / "state" / "connectors"  # .../m; the validate call names no connector
            assert f"the connector's own directory: {own}" in message and "rest.allowed.paths" in message
        assert rest.http.get("/connectors").json() == []
    assert not outside.exists()


@pytest.mark.integration
@pytest.mark.parametrize(
    "where",
    [
        "{t}/elsewhere/h.jsonl",
        "{t}/state/../elsewhere/h.jsonl",
        "{t}/state/link-out/h.jsonl",
        "{t}/state/./link-out/../link-out/h.jsonl",
        "relative/h.jsonl",
        "file:///{t}/state/h.jsonl",
        "s3://../../h.jsonl",
    ],
)
def test_paths_out_of_state_dir_are_refused(tmp_path: Path, where: str) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "state" / "link-out")
    path = where.replace("{t}", str(tmp_path).lstrip("/") if where.startswith("file:") else str(tmp_path))
    with secure_rest(tmp_path) as rest:
        r = rest.http.post("/connectors", json=quoting("q", **{"history.file": path}))
        assert r.status_code == 400, r.text
        assert r.json()["message"].startswith(f"history.file: {path} is outside the directories")
    assert not (tmp_path / "elsewhere" / "h.jsonl").exists()


@pytest.mark.integration
def test_paths_under_state_dir_or_rest_allowed_paths_are_accepted(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    with secure_rest(tmp_path) as rest:
        inside = tmp_path / "state" / "connectors" / "q" / "." / "h.jsonl"
        assert rest.http.post("/connectors", json=quoting("q", **{"history.file": str(inside)})).status_code == 201
        wait_until(lambda: (tmp_path / "state" / "connectors" / "q" / "h.jsonl").exists(), what="the task's file")
        for elsewhere in (tmp_path / "state" / "h.jsonl", tmp_path / "state" / "connectors" / "x" / "h.jsonl"):
            r = rest.http.post("/connectors", json=quoting("x2", **{"history.file": str(elsewhere)}))
            assert r.status_code == 400, r.text  # state.dir itself, another connector's directory
        r = rest.http.post("/connectors", json=quoting("a", **{"history.file": str(allowed / "h.jsonl")}))
        assert r.status_code == 400  # not allowed until the worker says so
    with secure_rest(tmp_path, **{"rest.allowed.paths": f"{allowed}, {tmp_path}/other"}) as rest:
        r = rest.http.post("/connectors", json=quoting("a", **{"history.file": str(allowed / "h.jsonl")}))
        assert r.status_code == 201, r.text
        wait_until(lambda: (allowed / "h.jsonl").exists(), what="the task wrote its file")
        r = rest.http.post("/connectors", json=quoting("s", **{"history.file": str(tmp_path / "state" / "x")}))
        assert r.status_code == 400 and f"rest.allowed.paths: {allowed}, {tmp_path}/other" in r.json()["message"]


@pytest.mark.integration
def test_an_operator_config_keeps_its_path_and_rest_may_resend_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    with secure_rest(tmp_path) as rest:
        rest.herder.put_connector_config(
            {**quoting("op")["config"], "name": "op", "history.file": str(elsewhere)}, trusted=True
        )
        wait_until(elsewhere.exists, what="the operator's connector wrote its file")
        current = rest.http.get("/connectors/op/config").json()
        assert rest.http.put("/connectors/op/config", json=current).status_code == 200
        assert rest.http.patch("/connectors/op/config", json={"topic": "op.2"}).status_code == 200
        r = rest.http.patch("/connectors/op/config", json={"history.file": str(tmp_path / "other.jsonl")})
        assert r.status_code == 400 and "is outside the directories" in r.json()["message"]


def test_rest_allowed_paths_must_be_absolute() -> None:
    with pytest.raises(ConfigException) as info:
        SubmittedConfigPolicy.from_worker_config(WorkerConfig({"rest.allowed.paths": "relative/dir"}))
    assert info.value.name == "rest.allowed.paths" and "absolute" in str(info.value)


@pytest.mark.parametrize(
    ("key", "is_file"),
    [
        ("schema.history.internal.file.filename", True),
        ("database.history.file.filename", True),
        ("offset.storage.file.filename", True),
        ("signal.file", True),
        ("file", True),
        ("errors.log.dir", True),
        ("topic", False),
        ("database.hostname", False),
        ("transforms.route.regex", False),
    ],
)
def test_file_valued_keys_are_known_by_their_name(key: str, is_file: bool) -> None:
    assert is_file_key(key) is is_file


_PARTS = st.sampled_from(["state", "..", ".", "sub", "link-out", "link-in", "elsewhere"])


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_PARTS, min_size=1, max_size=6))
def test_an_admitted_path_never_leads_out_of_the_root(tmp_path: Path, parts: list[str]) -> None:
    root = tmp_path / "state"
    (root / "sub").mkdir(parents=True, exist_ok=True)
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    for name, target in (("link-out", tmp_path / "elsewhere"), ("link-in", root / "sub")):
        if not (root / name).is_symlink():
            os.symlink(target, root / name)
    policy = SubmittedConfigPolicy.from_worker_config(
        {"rest.allowed.paths": str(root), "state.dir": str(tmp_path / "w")}
    )
    path = os.path.join(str(tmp_path), *parts, "f")
    real_inside = os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)
    written_inside = os.path.normpath(path).startswith(str(root) + os.sep)
    try:
        policy.check_paths({"x.file": path, "name": "n"})
        admitted = True
    except ConfigException:
        admitted = False
    assert admitted == (real_inside and written_inside), path
