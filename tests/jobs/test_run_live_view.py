"""`cdc run` on a terminal (issue 24): the live per-table view during a 1M-row snapshot shows the
table's rows done / estimate, a rate and an ETA, and moves; on a pipe the run prints its plain
lines and no view.

The terminal is a real pseudo-terminal (Python's `pty`/`os.openpty`, 160x40) that `cdc run`
has as its stdin, stdout and stderr, as in a shell; what it draws is read from the master side
with rich's cursor and colour sequences stripped. The run is killed once the view was seen,
mid-snapshot (a graceful stop waits for Spark's start-up, which other tests cover, and the
test should not).
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props
from tests.support.proc import REPO, cdc_argv

ROWS = 1_000_000
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")
# `│ db.big │ 412,034 / 998,872 (41%) │ 81,234 rows/s │ 7s │` (any box characters)
VIEW_ROW = re.compile(
    r"\.big\W+(?P<rows>[\d,]+) / (?P<estimate>[\d,]+) \((?P<pct>\d+)%\)\W+(?P<rate>[\d,]+) rows/s\W+"
    r"(?P<eta>(?:(?P<h>\d+)h(?P<hm>\d\d)m)|(?:(?P<m>\d+)m(?P<s>\d\d)s)|(?:(?P<sec>\d+)s))"
)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _eta_s(match: re.Match[str]) -> int:
    if match["h"]:
        return int(match["h"]) * 3600 + int(match["hm"]) * 60
    if match["m"]:
        return int(match["m"]) * 60 + int(match["s"])
    return int(match["sec"])


def _big_table(db) -> str:
    """`big` with ROWS rows, generated server-side from MariaDB's Sequence engine."""
    with db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE big (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2))")
        cur.execute(f"INSERT INTO big SELECT seq, CONCAT('row-', seq), seq % 10000 / 100 FROM seq_1_to_{ROWS}")
        cur.execute("ANALYZE TABLE big")  # InnoDB's row estimate, which the snapshot reports
        cur.fetchall()
    return f"{db.database}.big"


class Terminal:
    """A process on a pseudo-terminal of `cols`x`rows`; `read()` collects what it drew."""

    def __init__(self, argv: list[str], cols: int = 160, rows: int = 40) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS")}
        env.update(TERM="xterm-256color", LANG="C.UTF-8", PYTHONIOENCODING="utf-8")
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO, start_new_session=True, close_fds=True
        )
        os.close(slave)
        self.raw = b""

    def read(self, wait_s: float = 0.5) -> str:
        ready, _, _ = select.select([self.master], [], [], wait_s)
        while ready:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            self.raw += chunk
            ready, _, _ = select.select([self.master], [], [], 0)
        return self.text()

    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", errors="replace"))

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        os.close(self.master)


@pytest.mark.slow
def test_live_view_shows_the_snapshot_rows_rate_and_eta_on_a_terminal(tmp_path: Path, mariadb_db) -> None:
    table = _big_table(mariadb_db)
    job = mysql_delta_job(tmp_path, "live", connector_props(mariadb_db), {table: "keys: [id]"})
    term = Terminal(cdc_argv("run", str(job)))
    try:
        seen: list[re.Match[str]] = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and len({m["rows"] for m in seen}) < 2:
            text = term.read()
            seen = list(VIEW_ROW.finditer(text))
            assert term.proc.poll() is None, f"cdc run exited ({term.proc.returncode}):\n{text[-4000:]}"
        text = term.text()
        assert len({m["rows"] for m in seen}) >= 2, f"no moving live view within 90 s:\n{text[-4000:]}"
        assert "cdc run live" in text and "snapshot running" in text, text[-3000:]
        for m in seen:
            rows, estimate, rate = _number(m["rows"]), _number(m["estimate"]), _number(m["rate"])
            assert 0 < rows < ROWS, m.group(0)
            assert ROWS // 2 <= estimate <= ROWS * 2, m.group(0)  # InnoDB's estimate, after ANALYZE
            assert int(m["pct"]) == min(99, rows * 100 // estimate), m.group(0)
            assert rate > 0, m.group(0)
            if estimate > rows:  # the ETA is what is left at the shown rate
                expected = (estimate - rows) / rate
                assert abs(_eta_s(m) - expected) <= 1 + 0.02 * expected + (60 if m["h"] else 0), m.group(0)
        done = [_number(m["rows"]) for m in seen]
        assert done == sorted(done), done  # frames in order: rows done only grow

    finally:
        term.close()
