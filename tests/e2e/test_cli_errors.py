"""Bad input exits non-zero with one line that names the field: one test per case."""

from __future__ import annotations

from pathlib import Path

from tests.support.proc import run_cdc


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def one_line_error(res) -> str:
    assert res.returncode != 0
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in res.stderr
    return lines[0]


def worker_file(tmp_path: Path, plugin_path: Path, extra: str = "") -> Path:
    return write(
        tmp_path / "worker.properties",
        f"transport=embedded\nstate.dir={tmp_path / 'state'}\nplugin.path={plugin_path}\n{extra}",
    )


GOOD_CONNECTOR = "name=src\nconnector.class=FileStreamSource\ntopic=t\nfile=/dev/null\n"


def test_malformed_properties(tmp_path: Path, plugin_path: Path) -> None:
    w = worker_file(tmp_path, plugin_path)
    c = write(tmp_path / "c.properties", "name=src\nconnector.class=FileStreamSource\ntopic=bad\\u12zz\n")
    line = one_line_error(run_cdc("standalone", str(w), str(c)))
    assert "c.properties:3" in line


def test_unknown_connector_class(tmp_path: Path, plugin_path: Path) -> None:
    w = worker_file(tmp_path, plugin_path)
    c = write(tmp_path / "c.properties", "name=src\nconnector.class=NoSuchConnector\n")
    line = one_line_error(run_cdc("standalone", str(w), str(c)))
    assert "connector.class" in line and "NoSuchConnector" in line and "plugin.path" in line


def test_missing_required_field(tmp_path: Path, plugin_path: Path) -> None:
    w = worker_file(tmp_path, plugin_path)
    c = write(tmp_path / "c.properties", "name=src\nconnector.class=FileStreamSource\nfile=/dev/null\n")
    line = one_line_error(run_cdc("standalone", str(w), str(c)))
    assert '"topic"' in line


def test_wrong_type(tmp_path: Path, plugin_path: Path) -> None:
    w = worker_file(tmp_path, plugin_path)
    c = write(tmp_path / "c.properties", GOOD_CONNECTOR + "tasks.max=abc\n")
    line = one_line_error(run_cdc("standalone", str(w), str(c)))
    assert "tasks.max" in line and "abc" in line and "integer" in line


def test_unresolvable_env_reference(tmp_path: Path, plugin_path: Path) -> None:
    w = worker_file(tmp_path, plugin_path)
    c = write(
        tmp_path / "c.properties", "name=src\nconnector.class=FileStreamSource\ntopic=t\nfile=${env:CDC_NO_SUCH_VAR}\n"
    )
    line = one_line_error(run_cdc("standalone", str(w), str(c), env=None))
    assert "file" in line and "CDC_NO_SUCH_VAR" in line


def test_unknown_transport(tmp_path: Path, plugin_path: Path) -> None:
    w = worker_file(tmp_path, plugin_path, "transport=rabbitmq\n")
    c = write(tmp_path / "c.properties", GOOD_CONNECTOR)
    line = one_line_error(run_cdc("standalone", str(w), str(c)))
    assert "transport" in line and "rabbitmq" in line and "embedded" in line and "kafka" in line


def test_bad_transform_config_names_the_key(tmp_path: Path, plugin_path: Path) -> None:
    w = worker_file(tmp_path, plugin_path)
    c = write(tmp_path / "c.properties", GOOD_CONNECTOR + "transforms=route\ntransforms.route.type=NoSuchSmt\n")
    line = one_line_error(run_cdc("standalone", str(w), str(c)))
    assert "transforms.route.type" in line


def test_missing_connector_file(tmp_path: Path, plugin_path: Path) -> None:
    w = worker_file(tmp_path, plugin_path)
    line = one_line_error(run_cdc("standalone", str(w), str(tmp_path / "nope.properties")))
    assert "nope.properties" in line
