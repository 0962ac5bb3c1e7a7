"""route.tombstone.on.empty.payload decides "empty" as Debezium's EventRouterDelegate does:
`payload.toString().trim().isEmpty()`, where Java's trim() strips only chars up to U+0020.
A payload of a no-break or ideographic space is content, not a tombstone (issue 23; Python's
str.strip() had made it one)."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tests.debezium_core.transforms.test_outbox_event_router import outbox_record, routed, router


def java_trim_is_empty(text: str) -> bool:
    return all(ord(c) <= 0x20 for c in text)


@given(st.text(alphabet=st.sampled_from(" \t\n\r\x00\x01\x1f\x7f\u00a0\u2003\u3000\u200bx"), max_size=6))
@example("\u00a0")
@example(" \u3000 ")
@example("\x01\x1f")
@example("")
def test_empty_is_javas_trim_then_is_empty(payload: str) -> None:
    out = routed(router(**{"route.tombstone.on.empty.payload": "true"}), outbox_record(payload=payload))
    if java_trim_is_empty(payload):
        assert (out.value_schema, out.value) == (None, None)
    else:
        assert out.value == payload
    # Without the flag the payload is always the value, blank or not.
    assert routed(router(), outbox_record(payload=payload)).value == payload
