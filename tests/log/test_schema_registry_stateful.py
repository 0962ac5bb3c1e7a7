"""The embedded schema registry against a model: random sequences of register, lookup, soft and
permanent deletes and reopening the file (hypothesis stateful testing) keep ids and versions as
Confluent's registry assigns them; and several processes registering at once agree on every id."""

from __future__ import annotations

import json
import multiprocessing
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from cdc.log.embedded import EmbeddedLog
from cdc.log.schema_registry import SchemaRegistryError, SchemaRegistryStore
from tests.support.examples import examples

SCHEMAS = [
    json.dumps({"type": "record", "name": f"R{i}", "fields": [{"name": f"f{i}", "type": t}]})
    for i, t in enumerate(["int", "long", "string", "bytes", "double", "boolean"])
]
SUBJECTS = ["a-value", "b-value", "c-key"]


class Entry:
    def __init__(self, version: int, text: str) -> None:
        self.version = version
        self.text = text
        self.deleted = False


class RegistryModel(RuleBasedStateMachine):
    """Confluent's rules, restated as a model: global ids by schema, per-subject versions counting
    on from the highest one still stored (soft-deleted included), soft delete before permanent."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="sr-model-"))
        self._open()
        self.store.set_compatibility("NONE")
        self.ids: dict[str, int] = {}
        self.subjects: dict[str, list[Entry]] = {s: [] for s in SUBJECTS}

    def _open(self) -> None:
        self.log = EmbeddedLog(self.dir, synchronous="OFF")
        self.store = SchemaRegistryStore(self.log)

    def teardown(self) -> None:
        self.store.close()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _live(self, subject: str) -> list[Entry]:
        return [e for e in self.subjects[subject] if not e.deleted]

    def _code(self, call: object) -> int | None:
        try:
            call()  # type: ignore[operator]
        except SchemaRegistryError as e:
            return e.error_code
        return None

    @rule(subject=st.sampled_from(SUBJECTS), text=st.sampled_from(SCHEMAS))
    def register(self, subject: str, text: str) -> None:
        got = self.store.register(subject, text)
        live = next((e for e in self._live(subject) if e.text == text), None)
        if live is None:
            entries = self.subjects[subject]
            entries.append(Entry(max((e.version for e in entries), default=0) + 1, text))
            self.ids.setdefault(text, len(self.ids) + 1)
        assert got == self.ids[text]

    @rule(subject=st.sampled_from(SUBJECTS), text=st.sampled_from(SCHEMAS))
    def lookup(self, subject: str, text: str) -> None:
        live = next((e for e in self._live(subject) if e.text == text), None)
        if live is not None:
            found = self.store.lookup(subject, text)
            assert (found.version, found.id) == (live.version, self.ids[text])
        else:
            expected = 40403 if self.subjects[subject] else 40401
            assert self._code(lambda: self.store.lookup(subject, text)) == expected

    @rule(subject=st.sampled_from(SUBJECTS), pick=st.integers(0, 5), permanent=st.booleans())
    def delete_version(self, subject: str, pick: int, permanent: bool) -> None:
        entries = self.subjects[subject]
        if not entries:
            assert self._code(lambda: self.store.delete_version(subject, 1, permanent)) == 40401
            return
        entry = entries[pick % len(entries)]
        code = self._code(lambda: self.store.delete_version(subject, entry.version, permanent))
        if permanent and not entry.deleted:
            assert code == 40407
        elif not permanent and entry.deleted:
            assert code == 40406
        else:
            assert code is None
            if permanent:
                entries.remove(entry)
            else:
                entry.deleted = True

    @rule(subject=st.sampled_from(SUBJECTS), permanent=st.booleans())
    def delete_subject(self, subject: str, permanent: bool) -> None:
        entries = self.subjects[subject]
        code = self._code(lambda: self.store.delete_subject(subject, permanent))
        if not entries:
            assert code == 40401
        elif permanent and self._live(subject):
            assert code == 40405
        elif not permanent and not self._live(subject):
            assert code == 40404
        else:
            assert code is None
            if permanent:
                entries.clear()
            else:
                for e in entries:
                    e.deleted = True

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.log.close()
        self._open()

    @invariant()
    def agrees_with_the_model(self) -> None:
        assert self.store.subjects() == sorted(s for s in SUBJECTS if self._live(s))
        assert self.store.subjects(deleted=True) == sorted(s for s in SUBJECTS if self.subjects[s])
        for subject, entries in self.subjects.items():
            assert self.store.versions(subject, deleted=True) == [e.version for e in entries]
            assert self.store.versions(subject) == [e.version for e in entries if not e.deleted]
            for e in entries:
                stored = self.store.version(subject, e.version, deleted=True)
                assert (stored.id, stored.deleted) == (self.ids[e.text], e.deleted)
        for text, schema_id in self.ids.items():
            assert json.loads(self.store.schema(schema_id).schema) == json.loads(text)


TestRegistryModel = RegistryModel.TestCase
TestRegistryModel.settings = settings(max_examples=examples(40), stateful_step_count=30, deadline=None)


def _register_all(
    state_dir: str, seed: int, start: multiprocessing.synchronize.Event, out: multiprocessing.Queue
) -> None:
    """One process: every (subject, schema) pair in its own random order, as fast as it can."""
    log_ = EmbeddedLog(state_dir, synchronous="NORMAL")
    store = SchemaRegistryStore(log_)
    pairs = [(s, t) for s in SUBJECTS for t in SCHEMAS]
    random.Random(seed).shuffle(pairs)
    start.wait(30)
    out.put([(s, t, store.register(s, t)) for s, t in pairs])
    store.close()
    log_.close()


@pytest.mark.e2e
@pytest.mark.parametrize("seed", [3, 11])
def test_processes_registering_at_once_agree_on_every_id(tmp_path: Path, seed: int) -> None:
    state = tmp_path / "state"
    log_ = EmbeddedLog(state)
    store = SchemaRegistryStore(log_)
    store.set_compatibility("NONE")
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    out: multiprocessing.Queue = ctx.Queue()
    children = [ctx.Process(target=_register_all, args=(str(state), seed * 10 + i, start, out)) for i in range(3)]
    for child in children:
        child.start()
    start.set()
    results = [out.get(timeout=120) for _ in children]
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    try:
        by_text: dict[str, set[int]] = {}
        for result in results:
            for _subject, text, schema_id in result:
                by_text.setdefault(text, set()).add(schema_id)
        assert all(len(ids) == 1 for ids in by_text.values())  # one id per schema, in every process
        ids = sorted(next(iter(v)) for v in by_text.values())
        assert ids == list(range(1, len(SCHEMAS) + 1))  # dense, no id lost or doubled
        for subject in SUBJECTS:
            versions = [store.version(subject, v) for v in store.versions(subject)]
            assert [v.version for v in versions] == list(range(1, len(SCHEMAS) + 1))
            assert sorted(v.id for v in versions) == ids  # each schema once per subject
    finally:
        store.close()
        log_.close()
