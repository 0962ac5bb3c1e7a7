"""io.debezium.transforms.Filter / ContentBasedRouter on the safe `cdc.expr` language: Debezium's
FilterTest and RouterTest cases re-expressed, plus the language's own cases (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import DataException, Headers, Schema, SourceRecord
from cdc_debezium.transforms._expression import Expression, ExpressionError
from cdc_debezium.transforms.scripting import ContentBasedRouter, ExpressionFilter
from tests.debezium_core.transforms.envelopes import (
    ENVELOPE,
    assert_one_line_config_error,
    chain,
    row,
    source,
)
from tests.support.examples import examples

CONDITION = "value.op != 'd' || value.before.id != 2"


def deleted(id: int, topic: str = "dummy2", headers: Headers | None = None) -> SourceRecord:
    value = ENVELOPE.make("d", row(id), None, source())
    return SourceRecord({}, {}, topic, None, None, None, ENVELOPE.schema, value, None, headers)


def filt(condition: str = CONDITION, **extra: str) -> ExpressionFilter[SourceRecord]:
    smt: ExpressionFilter[SourceRecord] = ExpressionFilter()
    smt.configure({"language": "cdc.expr", "condition": condition, **extra})
    return smt


def router(expression: str, **extra: str) -> ContentBasedRouter[SourceRecord]:
    smt: ContentBasedRouter[SourceRecord] = ContentBasedRouter()
    smt.configure({"language": "cdc.expr", "topic.expression": expression, **extra})
    return smt


# -- Filter (FilterTest) ----------------------------------------------------------------------
def test_filter_by_value() -> None:
    smt = filt()
    assert smt.apply(deleted(2)) is None
    kept = deleted(1)
    assert smt.apply(kept) is kept


def test_filter_by_topic_and_header() -> None:
    smt = filt("topic == 'dummy1'")
    assert smt.apply(deleted(2)) is None
    kept = deleted(2, "dummy1")
    assert smt.apply(kept) is kept
    smt = filt("header.idh.value == 1 && topic.startsWith('dummy')")
    assert smt.apply(deleted(2, headers=Headers().add("idh", 2, Schema.INT32_SCHEMA))) is None
    kept = deleted(2, headers=Headers().add("idh", 1, Schema.INT32_SCHEMA))
    assert smt.apply(kept) is kept


def test_topic_regex_limits_the_filter() -> None:
    smt = filt(**{"topic.regex": "dum.*"})
    other = deleted(2, "other")
    assert smt.apply(other) is other
    assert smt.apply(deleted(2)) is None


def test_tombstones_by_null_handling_mode() -> None:
    tomb = SourceRecord({}, {}, "dummy2", None, None, None, None, None)
    assert filt().apply(tomb) is tomb
    assert filt(**{"null.handling.mode": "drop"}).apply(tomb) is None
    with pytest.raises(DataException, match="null"):
        filt(**{"null.handling.mode": "evaluate"}).apply(tomb)
    assert filt("value?.op != 'd'", **{"null.handling.mode": "evaluate"}).apply(tomb) is tomb


def test_filter_needs_true_or_false() -> None:
    with pytest.raises(DataException, match="not true or false"):
        filt("value.op").apply(deleted(1))
    assert filt("value.after").apply(deleted(1)) is None  # null counts as false


# -- ContentBasedRouter (RouterTest) ----------------------------------------------------------
def test_route_by_value() -> None:
    smt = router("value.before.id == 1 ? 'trash' : null")
    assert smt.apply(deleted(1)).topic == "trash"  # type: ignore[union-attr]
    kept = deleted(2)
    assert smt.apply(kept) is kept


def test_route_by_topic_and_header_and_key() -> None:
    smt = router("topic == 'dummy2' ? 'routed.' + topic : null")
    assert smt.apply(deleted(1)).topic == "routed.dummy2"  # type: ignore[union-attr]
    smt = router("header.region?.value")
    out = smt.apply(deleted(1, headers=Headers().add("region", "eu")))
    assert out is not None and out.topic == "eu" and [h.key for h in out.headers] == ["region"]


def test_router_must_give_a_string_or_null() -> None:
    with pytest.raises(DataException, match="not a topic name"):
        router("value.before.id").apply(deleted(1))


# -- the language -----------------------------------------------------------------------------
ENV = {
    "value": {"op": "u", "after": {"id": 5, "name": "Anne", "tags": ["a", "b"]}, "before": None},
    "topic": "db.inventory.customers",
    "key": None,
    "keySchema": None,
    "valueSchema": Schema.STRING_SCHEMA,
    "header": {},
    "partition": 3,
    "timestamp": 1700000000000,
}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("value.op == 'u' && value.after.id > 2", True),
        ("value.op == 'u' and not value.after.id > 2", False),
        ("value.op in ['c', 'r']", False),
        ("value.op not in ['c', 'r']", True),
        ("!(value.op == 'u') || value.after.name.toLowerCase() == 'anne'", True),
        ("value.after.name.matches('A.*e')", True),
        ("value.after.tags.size() == 2 && 'b' in value.after.tags", True),
        ("value.after.tags[1]", "b"),
        ("value.get('op')", "u"),
        ("value.before?.id", None),
        ("value.before?.id == null", True),
        ("topic.endsWith('.customers') ? topic.trim() + '.v2' : null", "db.inventory.customers.v2"),
        ("valueSchema.type", "STRING"),
        ("partition % 2 == 1 && timestamp / 1000 == 1700000000", True),
        ("-value.after.id + 10", 5),
        ("'x' + null + true", "xnulltrue"),
        ("\"double\" == 'double'", True),
        ("1.5 * 2 == 3", True),
        ("value.after.name.length() >= 4", True),
    ],
)
def test_expressions(source: str, expected: Any) -> None:
    assert Expression.parse(source).evaluate(ENV) == expected


@pytest.mark.parametrize(
    "source",
    [
        "__import__('os').system('true')",
        "topic.__class__",
        "().__class__.__bases__",
        "topic.__len__()",
        "open('/etc/passwd')",
        "lambda: 1",
        "value.op = 'd'",
        "exec",
        "value.op == 'd",
        "",
        "a; b",
    ],
)
def test_anything_but_reading_the_record_is_refused(source: str) -> None:
    with pytest.raises(ExpressionError):
        Expression.parse(source).evaluate(ENV)


def test_python_dict_internals_are_not_reachable() -> None:
    assert Expression.parse("value.__class__").evaluate({"value": {"a": 1}}) is None  # a map lookup, not getattr
    with pytest.raises(ExpressionError, match="no field"):
        Expression.parse("topic.upper").evaluate(ENV)


@settings(max_examples=examples(100), deadline=None)
@given(a=st.integers(-1000, 1000), b=st.integers(-1000, 1000), s=st.text("abc' ", max_size=6))
def test_arithmetic_and_strings_follow_java(a: int, b: int, s: str) -> None:
    env = {"value": {"a": a, "b": b, "s": s}}
    assert Expression.parse("value.a + value.b * 2").evaluate(env) == a + b * 2
    assert Expression.parse("value.a < value.b || value.a >= value.b").evaluate(env) is True
    if b:
        q = Expression.parse("value.a / value.b").evaluate(env)
        assert q == int(a / b)  # Java truncates toward zero
        assert Expression.parse("value.a % value.b").evaluate(env) == a - int(a / b) * b
    assert Expression.parse('value.s.contains("\'")').evaluate(env) == ("'" in s)


# -- config -----------------------------------------------------------------------------------
def test_registered_under_debeziums_class_names() -> None:
    c = chain(
        {
            "transforms": "f,r",
            "transforms.f.type": "io.debezium.transforms.Filter",
            "transforms.f.language": "cdc.expr",
            "transforms.f.condition": CONDITION,
            "transforms.r.type": "io.debezium.transforms.ContentBasedRouter",
            "transforms.r.language": "cdc.expr",
            "transforms.r.topic.expression": "'deleted.' + value.before.id",
        }
    )
    assert c.apply(deleted(2)) is None
    assert c.apply(deleted(1)).topic == "deleted.1"
    # the short name Filter keeps meaning Kafka's Filter
    kafka = chain({"transforms": "f", "transforms.f.type": "Filter"})
    assert type(kafka.stages[0].transformation).__module__.startswith("cdc.transforms")


@pytest.mark.parametrize("language", ["jsr223.groovy", "jsr223.graal.js", "jsr223.jython", "wasm.chicory"])
def test_scripting_languages_are_refused_with_what_to_use(language: str) -> None:
    message = assert_one_line_config_error(
        {
            "transforms": "filter",
            "transforms.filter.type": "io.debezium.transforms.Filter",
            "transforms.filter.language": language,
            "transforms.filter.condition": CONDITION,
        },
        "transforms.filter.language",
    )
    assert "cdc.expr" in message


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"condition": CONDITION}, "language"),
        ({"language": "cdc.expr"}, "condition"),
        ({"language": "cdc.expr", "condition": "value.op == 'd"}, "condition"),
        ({"language": "cdc.expr", "condition": "os.system('x')"}, "condition"),
        ({"language": "cdc.expr", "condition": CONDITION, "topic.regex": "(unclosed"}, "topic.regex"),
        ({"language": "cdc.expr", "condition": CONDITION, "null.handling.mode": "sometimes"}, "null.handling.mode"),
        ({"language": "lua", "condition": CONDITION}, "language"),
    ],
)
def test_bad_config_is_one_line_naming_alias_and_key(props: dict[str, str], key: str) -> None:
    config = {"transforms": "filter", "transforms.filter.type": "io.debezium.transforms.Filter"}
    config |= {f"transforms.filter.{k}": v for k, v in props.items()}
    assert_one_line_config_error(config, f"transforms.filter.{key}")
