"""Issue 33's fuzz suite, file side: random connector names and file paths sent over REST never
touch a file outside the connector's own directory, never give a 500, and the worker still
stops promptly afterwards.

Each example creates a connector over REST with a random name and a random file-valued key
whose path is built from pieces an attacker would try (`..`, links leading out or into another
connector's directory, the worker's own `cdc.db`, a hard link to a victim, absolute and relative
forms). Whatever the answer (201 or 400), every file that is not in a connector's own directory
keeps its bytes, and the connector is deleted again. Seeded through hypothesis; the example count
follows HYPOTHESIS_PROFILE (tests/support/examples).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cdc.runtime.submitted_config import CONNECTORS_DIR, connector_dir
from tests.security.provider_rig import SecureRest, quoting
from tests.support.examples import examples

pytestmark = pytest.mark.integration

PIECES = ["..", ".", "connectors", "victim", "link-out", "link-other", "cdc.db", "hard", "f.jsonl", "other", "sub"]
KEYS = ["history.file", "signal.file", "schema.history.internal.file.filename", "errors.log.dir"]
NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


def _fingerprints(root: Path, skip: set[Path]) -> dict[str, str]:
    """sha256 of every regular file under `root` not under a directory of `skip`."""
    out = {}
    for dirpath, _, files in os.walk(root, followlinks=False):
        here = Path(dirpath)
        if any(here == s or s in here.parents for s in skip):
            continue
        for name in files:
            path = here / name
            if path.is_symlink() or name.startswith("cdc.db") or name == "cdc.lock":
                continue  # links are checked through their targets; the worker's own log it writes itself
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("files-fuzz")
    rest = SecureRest(root)
    state = root / "state"
    other = state / CONNECTORS_DIR / "other"
    other.mkdir(parents=True, exist_ok=True)
    (other / "history.jsonl").write_text('{"ddl": "CREATE TABLE secret_table (a INT)"}\n' * 20)
    (root / "victim").mkdir()
    (root / "victim" / "f.jsonl").write_text("the victim's bytes\n")
    os.symlink(root / "victim", state / "link-out")
    os.symlink(other, state / "link-other")
    os.link(root / "victim" / "f.jsonl", state / "hard")
    yield root, rest
    started = time.monotonic()
    rest.close()
    # A hang check, not a speed assertion: a stuck REST handler or task would keep it far longer.
    assert time.monotonic() - started < 60, "the worker did not stop after the fuzz"


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=NAMES,
    key=st.sampled_from(KEYS),
    parts=st.lists(st.sampled_from(PIECES), min_size=1, max_size=4),
    base=st.sampled_from(["state", "own", "own", "own", "root", "relative"]),  # own: to reach the 201s too
)
def test_no_rest_config_touches_a_file_outside_its_connector_directory(world, name, key, parts, base) -> None:  # type: ignore[no-untyped-def]
    root, rest = world
    state = root / "state"
    own = connector_dir(state, name)
    start = {"state": str(state), "own": str(own), "root": str(root), "relative": "."}[base]
    path = os.path.join(start, *parts)
    before = _fingerprints(root, {state / CONNECTORS_DIR})
    before_other = _fingerprints(state / CONNECTORS_DIR / "other", set())
    r = rest.http.post("/connectors", json=quoting(name, **{key: path}))
    assert r.status_code in (201, 400, 409), (r.status_code, r.text)
    event(f"status {r.status_code}")
    assert "Traceback" not in r.text
    if r.status_code == 201:
        time.sleep(0.2)  # let the task run once and write its file
        assert rest.http.delete(f"/connectors/{_quote(name)}").status_code in (200, 204)
        written = Path(os.path.realpath(path))
        assert written == own or own in written.parents or name == "other", (name, path, written)
    elif r.status_code == 400 and r.json()["message"].startswith(key):
        assert "\n" not in r.json()["message"]  # the path refusal is one line (others are Kafka's list)
    assert _fingerprints(root, {state / CONNECTORS_DIR}) == before
    if name != "other":
        assert _fingerprints(state / CONNECTORS_DIR / "other", set()) == before_other


def _quote(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="")
