from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.plugins import FILE_PLUGIN, pip_install_target


@pytest.fixture(scope="session")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plugin.path directory holding the file connector, installed with `pip install --target`."""
    root = tmp_path_factory.mktemp("plugins")
    pip_install_target(FILE_PLUGIN, root / "cdc-connector-file")
    return root
