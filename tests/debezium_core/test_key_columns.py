"""`message.key.columns`, parsed once for both connectors (cdc_debezium.key_columns)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import ConfigException
from cdc_debezium.key_columns import KeyColumns

names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@given(db=names, table=names, cols=st.lists(names, min_size=1, max_size=4, unique=True))
def test_an_entry_names_the_key_of_its_table(db: str, table: str, cols: list[str]) -> None:
    keys = KeyColumns.parse(f" {db}.{table} : {' , '.join(cols)} ;")
    assert keys.for_table(f"{db}.{table}") == tuple(cols)
    assert keys.for_table(f"{db}.{table}x") is None  # the regex matches the whole table id


def test_the_first_matching_entry_wins() -> None:
    keys = KeyColumns.parse(r"shop\.orders:id,line;shop\..*:code")
    assert keys.for_table("shop.orders") == ("id", "line")
    assert keys.for_table("shop.items") == ("code",)


def test_mysql_compares_table_names_case_insensitively_postgres_does_not() -> None:
    assert KeyColumns.parse("Shop.Orders:id", case_sensitive=False).for_table("shop.orders") == ("id",)
    assert KeyColumns.parse("Shop.Orders:id").for_table("shop.orders") is None


@pytest.mark.parametrize(("value", "says"), [("shop.orders", "expected"), ("shop.(orders:id", "regular expression")])
def test_a_malformed_entry_names_the_setting(value: str, says: str) -> None:
    with pytest.raises(ConfigException, match=r"message\.key\.columns") as info:
        KeyColumns.parse(value)
    assert says in str(info.value)
