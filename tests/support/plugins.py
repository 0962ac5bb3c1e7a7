"""Build the reference plugin the way a user installs a drop-in: pip --target, or a wheel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.proc import REPO

FILE_PLUGIN = REPO / "plugins" / "file"


def pip_install_target(project: Path, target: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(project),
        ],
        check=True,
        capture_output=True,
    )
    return target


def build_wheel(project: Path, out_dir: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out_dir),
            str(project),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = out_dir.glob("*.whl")
    return wheel
