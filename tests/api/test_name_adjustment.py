"""One rule for adjusted names (cdc.api.name_adjustment), shared by both connectors and the Avro converter.

Issue 31, item 5: under `field.name.adjustment.mode=avro_unicode` MySQL named `a_b` `a_b`,
`ā_x` `_u0101_x` and `😀x` `_u1f600x`, while PostgreSQL and the Avro converter gave `a_u005fb`,
`_u101_u005fx` and `_ud83d_ude00x`, as Debezium does: its `UnicodeReplacementFunction` escapes
`_` (the escape character itself), writes `Integer.toHexString` of the UTF-16 code unit padded
with `00` only for one or two digits, and reads a string as Java does, a unit at a time.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import name_adjustment
from cdc.converters.avro.names import debezium_adjust
from cdc_mysql.schema_options import adjust_field_name, adjust_schema_name
from cdc_postgres.names import adjuster
from tests.support.examples import examples

AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
AVRO_FULL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


@pytest.mark.parametrize(
    "name,mode,expected",
    [
        # the three names, as Debezium writes them
        ("a_b", "avro_unicode", "a_u005fb"),
        ("ā_x", "avro_unicode", "_u101_u005fx"),
        ("😀x", "avro_unicode", "_ud83d_ude00x"),
        # Debezium's avro rule: `_` stays, a leading digit keeps its digit after the `_`
        ("a_b", "avro", "a_b"),
        ("1a", "avro", "_1a"),
        ("a-b c", "avro", "a_b_c"),
        ("😀x", "avro", "__x"),  # two UTF-16 units, two replacements
        # avro_unicode: letters first, then letters and digits; everything else escaped
        ("1a", "avro_unicode", "_u0031a"),
        ("_", "avro_unicode", "_u005f"),
        ("žluť", "avro_unicode", "_u17elu_u165"),
        ("a.b", "avro_unicode", "a_u002eb"),  # a field name has no dots
        ("ok", "avro_unicode", "ok"),
        ("a-b", "none", "a-b"),
        ("", "avro_unicode", ""),
    ],
)
def test_field_names_as_debezium_adjusts_them_from_every_source(name: str, mode: str, expected: str) -> None:
    assert name_adjustment.adjust(name, mode) == expected
    assert adjust_field_name(name, mode) == expected  # MySQL
    assert adjuster(mode)(name) == expected  # PostgreSQL
    assert debezium_adjust(name, mode, False) == expected  # the Avro converter


@pytest.mark.parametrize(
    "name,mode,expected",
    [
        ("srv.db.a-b.Value", "avro", "srv.db.a_b.Value"),
        ("srv.db.a_b.Value", "avro_unicode", "srv.db.a_u005fb.Value"),
        ("1.x", "avro_unicode", "_u0031.x"),
    ],
)
def test_full_names_keep_their_dots(name: str, mode: str, expected: str) -> None:
    assert name_adjustment.adjust(name, mode, full_name=True) == expected
    assert adjust_schema_name(name, mode) == adjuster(mode, full_names=True)(name) == expected
    assert debezium_adjust(name, mode, True) == expected


@settings(max_examples=examples(500), deadline=None)
@given(name=st.text(min_size=1, max_size=12), mode=st.sampled_from(name_adjustment.MODES), full=st.booleans())
def test_the_connectors_and_the_converter_agree_on_any_name(name: str, mode: str, full: bool) -> None:
    expected = name_adjustment.adjust(name, mode, full_name=full)
    mysql = adjust_schema_name(name, mode) if full else adjust_field_name(name, mode)
    assert mysql == adjuster(mode, full_names=full)(name) == debezium_adjust(name, mode, full) == expected
    if mode != "none":
        assert (AVRO_FULL_NAME if full else AVRO_NAME).match(expected), expected
        if (AVRO_FULL_NAME if full else AVRO_NAME).match(name) and (mode == "avro" or "_" not in name):
            assert expected == name  # a valid name is kept as it is
