"""Java number formatting and Jackson string escaping (vectors from the Java/Jackson docs)."""

from __future__ import annotations

import decimal
import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.converters._javafmt import (
    bigdecimal_to_string,
    double_to_string,
    float_to_string,
    from_unscaled_bytes,
    quote,
    to_float32,
    unscaled_bytes,
)


@pytest.mark.parametrize(
    ("value", "java"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (1234567.0, "1234567.0"),
        (1e7, "1.0E7"),
        (12345678.0, "1.2345678E7"),
        (1e-5, "1.0E-5"),
        (-1.5e-7, "-1.5E-7"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e23, "1.0E23"),
        (123456789012.0, "1.23456789012E11"),
        (1.7976931348623157e308, "1.7976931348623157E308"),  # Double.MAX_VALUE
        (2.2250738585072014e-308, "2.2250738585072014E-308"),  # Double.MIN_NORMAL
        (5e-324, "4.9E-324"),  # Double.MIN_VALUE: the closer two-digit decimal wins (JDK 19+)
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
    ],
)
def test_double_to_string(value: float, java: str) -> None:
    assert double_to_string(value) == java


@pytest.mark.parametrize(
    ("value", "java"),
    [
        (1.0, "1.0"),
        (0.1, "0.1"),  # the double 0.1 becomes the float 0.1f first
        (12.34, "12.34"),
        (1e10, "1.0E10"),
        (3.14159265, "3.1415927"),
        (16777216.0, "1.6777216E7"),
        (1e-4, "1.0E-4"),
        (3.4028234663852886e38, "3.4028235E38"),  # Float.MAX_VALUE
        (1.401298464324817e-45, "1.4E-45"),  # Float.MIN_VALUE
        (1e39, "Infinity"),  # (float) of a too-large double
    ],
)
def test_float_to_string(value: float, java: str) -> None:
    assert float_to_string(value) == java


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_to_string_reads_back_exactly(v: float) -> None:
    assert float(double_to_string(v)) == v


@given(st.integers(0, 0x7F7FFFFF))
def test_float_to_string_is_shortest_and_reads_back(bits: int) -> None:
    f = struct.unpack(">f", struct.pack(">I", bits))[0]
    text = float_to_string(f)
    assert to_float32(float(text)) == f
    mantissa = text.split("E")[0].replace(".", "").replace("-", "").lstrip("0").rstrip("0")
    if len(mantissa) > 2:  # no shorter decimal (dropping the last digit, rounded) also reads back
        shorter = float(f"{float(text):.{len(mantissa) - 2}e}")
        assert to_float32(shorter) != f


@pytest.mark.parametrize(
    ("unscaled", "scale", "java"),
    [  # the table in BigDecimal.toString()'s javadoc
        (123, 0, "123"),
        (-123, 0, "-123"),
        (123, -1, "1.23E+3"),
        (123, -3, "1.23E+5"),
        (123, 1, "12.3"),
        (123, 5, "0.00123"),
        (123, 10, "1.23E-8"),
        (-123, 12, "-1.23E-10"),
        (0, 7, "0E-7"),
    ],
)
def test_bigdecimal_to_string(unscaled: int, scale: int, java: str) -> None:
    assert bigdecimal_to_string(decimal.Decimal(unscaled).scaleb(-scale)) == java


def test_bigdecimal_has_no_negative_zero() -> None:
    assert bigdecimal_to_string(decimal.Decimal("-0.00")) == "0.00"


@pytest.mark.parametrize(
    ("value", "scale", "data"),
    [
        (decimal.Decimal("1.56"), 2, b"\x00\x9c"),  # JsonConverterTest.decimalToJson: {0, -100}
        (decimal.Decimal("-1.56"), 2, b"\xff\x64"),
        (decimal.Decimal("0"), 0, b"\x00"),
        (decimal.Decimal("-1"), 0, b"\xff"),
        (decimal.Decimal("127"), 0, b"\x7f"),
        (decimal.Decimal("128"), 0, b"\x00\x80"),
    ],
)
def test_unscaled_bytes_are_minimal_twos_complement(value: decimal.Decimal, scale: int, data: bytes) -> None:
    assert unscaled_bytes(value, scale) == data
    assert from_unscaled_bytes(data, scale) == value


def test_wide_decimals_are_exact() -> None:
    wide = decimal.Decimal("9" * 60 + ".99")
    assert from_unscaled_bytes(unscaled_bytes(wide, 2), 2) == wide


def test_quote_matches_jackson_escaping() -> None:
    # Jackson: \" \\ \b \f \n \r \t short escapes, other controls as upper-case \u00XX, rest raw.
    assert quote('a"\\\b\f\n\r\t\x00\x0b\x1f\x7fé😀') == '"a\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u000B\\u001F\x7fé😀"'
    # A literal backslash followed by "u001f" stays literal.
    assert quote("\\u001f") == '"\\\\u001f"'
