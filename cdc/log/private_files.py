"""The worker's state files are its own: `state.dir` 0700, its files 0600, whatever the umask (issue 17).

`cdc.db` holds every record, offset, connector config and status, so a local user who can
read it reads the data the connectors captured. Kafka Connect keeps its state in topics and
its standalone offsets file with the JVM's default modes; here a directory the worker
creates is 0700 and a file 0600, set explicitly (`chmod` after creation) so a permissive
umask such as 000 does not widen them. An existing `state.dir` keeps the modes its owner
gave it; the worker's own state files in it (`cdc.db`, `-wal`, `-shm`, job locks) are
tightened to 0600 when the worker opens them, when it owns them.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

__all__ = ["PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "make_private_dir", "open_private_file", "tighten"]


def make_private_dir(path: str | os.PathLike[str]) -> Path:
    """Create `path` and any missing parents with mode 0700; an existing directory is left as it is.

    Raises OSError as `os.mkdir` does (FileExistsError when a file is in the way).
    """
    target = Path(path)
    missing: list[Path] = []
    current = target
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR_MODE)
        except FileExistsError:
            if directory.is_dir():
                continue  # created by another process meanwhile: its modes are its creator's
            raise
        os.chmod(directory, PRIVATE_DIR_MODE)  # the umask may have removed bits, never added: set them all
    if not target.is_dir():
        raise NotADirectoryError(f"{target} is not a directory")
    return target


def open_private_file(path: str | os.PathLike[str], flags: int = os.O_RDWR) -> int:
    """`os.open(path, flags | O_CREAT)` with mode 0600, tightened to 0600 if the file existed; a file descriptor."""
    fd = os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE)
    with contextlib.suppress(PermissionError):  # not ours: its owner decides
        os.fchmod(fd, PRIVATE_FILE_MODE)
    return fd


def tighten(path: str | os.PathLike[str]) -> None:
    """Mode 0600 for an existing file the worker owns; nothing for a missing file or another user's."""
    with contextlib.suppress(FileNotFoundError, PermissionError):
        os.chmod(path, PRIVATE_FILE_MODE)
