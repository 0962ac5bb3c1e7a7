"""The job commands on inputs that once ended in a Python traceback or were silently accepted:
each now stops with one `error:` line that says what to fix (no server, no Spark needed)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from cdc.api.errors import ConfigException, ConnectException
from cdc.cli.main import cli
from cdc.jobs import run as job_run
from cdc.runtime.state_lock import StateDirLock


def _job(tmp_path: Path, state_dir: Path) -> Path:
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: shop
source:
  connector.class: mysql
  database.hostname: 127.0.0.1
  database.user: cdc
  database.server.id: 5401
  topic.prefix: shop
transport:
  state.dir: {state_dir}
sink:
  type: delta
  path: {tmp_path / "lake"}
"""
    )
    return job


def _cdc(*args: str) -> tuple[int, list[str]]:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return res.exit_code, [line for line in res.output.splitlines() if line.strip()]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


def test_unknown_log_level_is_refused() -> None:
    code, lines = _cdc("--log-level", "LOUD", "plugins", "list")
    assert code == 2 and "Invalid value for '--log-level': 'LOUD' is not one of" in lines[-1]


def test_status_with_a_state_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("")
    code, lines = _cdc("status", str(_job(tmp_path, tmp_path / "state")))
    assert code == 2, lines
    assert lines == [  # status only reads: it names the setting to fix, and creates no lock
        f"error: transport.state.dir {tmp_path}/state is a file, not a directory; set transport.state.dir to a "
        "directory"
    ]


def test_job_lock_in_a_directory_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigException, match=r"cannot create the lock .*; set transport.state.dir") as e:
        StateDirLock.for_job(tmp_path / "file" / "state", "shop").acquire()
    assert e.value.name == "transport.state.dir"


def test_status_of_a_job_that_never_ran_creates_nothing(tmp_path: Path) -> None:
    code, lines = _cdc("status", str(_job(tmp_path, tmp_path / "state")))
    assert code == 0 and lines[0].startswith("job shop: stopped"), lines
    assert not (tmp_path / "state").exists()


def test_until_caught_up_with_an_unreachable_database(tmp_path: Path) -> None:
    port = _closed_port()
    source = {"database.hostname": "127.0.0.1", "database.port": str(port), "database.user": "cdc"}
    with pytest.raises(ConnectException) as e:
        job_run.source_position("mysql", source)
    message = str(e.value)
    assert message.startswith(f"--until-caught-up cannot read the source position at 127.0.0.1:{port} (Can't connect")
    assert "check database.hostname, database.port" in message and "(2003" not in message


def test_spark_that_cannot_start_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cdc.jobs.load import load_job

    def fail(job: object) -> None:
        raise ValueError("Could not parse Master URL: 'nowhere'")

    monkeypatch.setattr(job_run, "_spark_session", fail)
    starter = job_run._SparkStarter(load_job(_job(tmp_path, tmp_path / "state")))
    with pytest.raises(
        ConnectException, match=r"^cannot start Spark \(spark.master=local\[2\]\): Could not parse Master URL"
    ):
        starter.get()


@pytest.mark.parametrize("command", [("topics", "list"), ("status",), ("offsets", "show")])
def test_inspection_commands_name_an_unreachable_broker(tmp_path: Path, command: tuple[str, ...]) -> None:
    # librdkafka's own timeout said only "Broker transport failure", after 30 s.
    job = _job(tmp_path, tmp_path / "state")
    port = _closed_port()
    job.write_text(
        job.read_text().replace("transport:\n", f"transport:\n  type: kafka\n  bootstrap.servers: 127.0.0.1:{port}\n")
    )
    code, lines = _cdc(*command, str(job))
    assert code == 1
    assert lines[-1].startswith(f"error: cannot reach Kafka at 127.0.0.1:{port} over PLAINTEXT within ")
    assert "Connection refused" in lines[-1] and "check bootstrap.servers" in lines[-1]
