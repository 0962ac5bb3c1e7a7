"""The reference FileStream source task, driven directly as the runtime drives it."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from tests.support.proc import REPO


def test_stop_before_start_ends_polling(tmp_path: Path) -> None:
    """The runtime may stop a task whose start() has not returned yet: that stop still counts."""
    sys.path.insert(0, str(REPO / "plugins" / "file"))  # a drop-in plugin, not installed in the test env
    from cdc_file.source import FileStreamSourceTask

    source = tmp_path / "in.txt"
    source.write_text("a\nb\n")
    task = FileStreamSourceTask()
    task.stop()
    task.start({"file": str(source), "topic": "t"})
    done: list[object] = []
    poller = threading.Thread(target=lambda: done.append(task.poll()))
    poller.start()
    poller.join(10)
    assert not poller.is_alive(), "poll() kept waiting after stop()"
    assert done == [None]
