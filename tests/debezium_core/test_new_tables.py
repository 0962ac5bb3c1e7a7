"""snapshot.new.tables: which tables a restart finds new, from the filters its stored offset carries.

Generated filters name tables exactly (escaped), as include or as exclude lists, so the expected
answer is plain set arithmetic, computed here without regexes: captured now and not captured under
the stored filters. The offset goes through JSON on the way, as every offset store writes it.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import ConfigException, SourceRecord
from cdc_debezium.signals.new_tables import CapturedFilters, NewTables, parse_mode
from tests.support.examples import examples

CONTAINER = ("database.include.list", "database.exclude.list")
NAMES = st.text(alphabet="abz09_.$-", min_size=1, max_size=5)
TABLES = st.lists(st.tuples(NAMES, NAMES), min_size=1, max_size=12, unique=True)


@st.composite
def _filters(draw: st.DrawFn, tables: list[tuple[str, str]]) -> tuple[dict[str, list[str]], set[tuple[str, str]]]:
    """Config values (lists of patterns) and, independently, the tables they capture."""
    style = draw(st.sampled_from(["none", "table_include", "table_exclude", "db_include", "db_exclude"]))
    if style == "none":
        return {}, set(tables)
    if style.startswith("table"):
        chosen = set(draw(st.lists(st.sampled_from(tables), unique=True)))
        names = [re.escape(f"{c}.{t}") for c, t in sorted(chosen)]
        if style == "table_include":
            return ({"table.include.list": names} if names else {}), (chosen if names else set(tables))
        return ({"table.exclude.list": names} if names else {}), set(tables) - chosen
    dbs = sorted({c for c, _ in tables})
    chosen_dbs = set(draw(st.lists(st.sampled_from(dbs), unique=True)))
    names = [re.escape(d) for d in sorted(chosen_dbs)]
    if not names:
        return {}, set(tables)
    if style == "db_include":
        return {"database.include.list": names}, {(c, t) for c, t in tables if c in chosen_dbs}
    return {"database.exclude.list": names}, {(c, t) for c, t in tables if c not in chosen_dbs}


def _lower_unique(tables: list[tuple[str, str]]) -> bool:
    """The lists match case-insensitively: keep names distinct without case (the alphabet has none anyway)."""
    return len({(c.lower(), t.lower()) for c, t in tables}) == len(tables)


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data(), tables=TABLES.filter(_lower_unique))
def test_new_tables_are_those_the_stored_filters_did_not_capture(data: st.DataObject, tables: list) -> None:
    old_values, old_captured = data.draw(_filters(tables), "stored filters")
    new_values, new_captured = data.draw(_filters(tables), "current filters")
    before = NewTables(True, CapturedFilters.from_values(old_values, CONTAINER))
    record = SourceRecord({"server": "s"}, {"file": "f", "pos": 4}, "t", None, None, None, None, None)
    before.stamp([record])
    stored = json.loads(json.dumps(record.source_offset))
    now = NewTables(True, CapturedFilters.from_values(new_values, CONTAINER))
    captured = [t for t in tables if t in new_captured]
    expected = [f"{c}.{t}" for c, t in captured if (c, t) not in old_captured]
    assert now.newly_captured(stored, captured) == expected
    # The current run's offsets replace the stored filters, keys no longer set included.
    now.stamp([SourceRecord({"server": "s"}, stored, "t", None, None, None, None, None)])
    assert now.newly_captured(stored, captured) == []
    assert {k for k in stored if k not in ("file", "pos")} == {k.replace(".", "_") for k in new_values}


def test_an_offset_without_filter_keys_and_a_disabled_setting_find_nothing() -> None:
    tables = [("db", "a"), ("db", "b")]
    on = NewTables.of({"snapshot.new.tables": "PARALLEL"}, {"table.include.list": ["db\\.a", "db\\.b"]}, CONTAINER)
    assert on.enabled
    assert on.newly_captured({"file": "f", "pos": 4}, tables) == []  # written without the setting: unknown
    assert on.newly_captured(None, tables) == []  # no offset: the initial snapshot reads everything
    assert on.newly_captured({"table_include_list": ["db\\.a"]}, tables) == ["db.b"]
    off = NewTables.of({}, {"table.include.list": ["db\\.a"]}, CONTAINER)
    offset = {"file": "f", "pos": 4}
    off.stamp([SourceRecord({"server": "s"}, offset, "t", None, None, None, None, None)])
    assert offset == {"file": "f", "pos": 4}
    assert off.newly_captured({"table_include_list": ["nothing"]}, tables) == []


def test_a_bad_pattern_in_an_edited_offset_queues_nothing_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    on = NewTables.of({"snapshot.new.tables": "parallel"}, {}, CONTAINER)
    assert on.newly_captured({"table_include_list": ["db\\.(a"]}, [("db", "a")]) == []
    assert "cannot be read" in caplog.text


@pytest.mark.parametrize("value", ["yes", "true", "initial"])
def test_an_unknown_mode_names_the_key_and_the_values(value: str) -> None:
    with pytest.raises(ConfigException, match=rf"snapshot\.new\.tables={value}: use off .* or parallel"):
        parse_mode({"snapshot.new.tables": value})
    assert parse_mode({"snapshot.new.tables": " "}) is False
