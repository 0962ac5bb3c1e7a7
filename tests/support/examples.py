"""Property-test sizes by profile: a few examples on every run, the written count in CI.

``HYPOTHESIS_PROFILE=ci`` (what ``make test`` and CI use) runs each property test with the
count written beside it; any other profile (``dev``, the default of ``make test-fast`` and of a
bare ``pytest``) runs a tenth of it, at least ``DEV_MINIMUM``. Both profiles print the
``@reproduce_failure`` blob of a failing example, so a CI failure can be replayed locally.
The profiles themselves are registered in tests/conftest.py.
"""

from __future__ import annotations

import os

PROFILE_ENV = "HYPOTHESIS_PROFILE"
FULL_PROFILES = frozenset({"ci"})
DEV_MINIMUM = 10
DEV_DEFAULT_EXAMPLES = 20  # hypothesis's own default is 100, kept by the ci profile


def profile() -> str:
    return os.environ.get(PROFILE_ENV, "dev")


def full() -> bool:
    return profile() in FULL_PROFILES


def examples(count: int) -> int:
    """The number of examples a property test written for `count` runs in this profile."""
    if full():
        return count
    return min(count, max(DEV_MINIMUM, count // 10))
