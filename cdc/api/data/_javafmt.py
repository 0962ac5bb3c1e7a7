"""Java's text forms of numbers and Jackson's JSON string escaping.

Kafka writes numbers with `Double.toString`, `Float.toString` and `BigDecimal.toString`;
byte-identical output needs the same digits and the same notation switches. The double
and float rules are those of JDK 19+ (shortest decimal that round-trips, Raffaello
Giulietti's algorithm), which Python's `repr` also computes for doubles.
"""

from __future__ import annotations

import decimal
import math
import re
import struct
from fractions import Fraction
from json.encoder import encode_basestring as _py_quote  # type: ignore[attr-defined]

_F32 = struct.Struct(">f")
_U32 = struct.Struct(">I")
_MIN_NORMAL_DOUBLE = 2.2250738585072014e-308
_MIN_NORMAL_FLOAT = 1.1754943508222875e-38
_FLOAT_MAX_BITS = 0x7F7FFFFF


def to_float32(value: float) -> float:
    """Round a double to the nearest float32 (Java's `(float)` cast: overflow gives infinity)."""
    try:
        return float(_F32.unpack(_F32.pack(value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _java_layout(negative: bool, digits: str, exp: int) -> str:
    """Lay out `d.ddd * 10^exp` the way Double/Float.toString do.

    Plain notation for 10^-3 <= |v| < 10^7, otherwise computerized scientific notation;
    both always show at least one fractional digit.
    """
    sign = "-" if negative else ""
    if -3 <= exp < 7:
        if exp >= 0:
            whole = digits[: exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1 :] or "0"
        else:
            whole = "0"
            frac = "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _repr_digits(a: float) -> tuple[str, int]:
    """Shortest round-trip digits of a positive double and the exponent of the first digit."""
    r = repr(a)
    if "e" in r:
        mantissa, e = r.split("e")
        return mantissa.replace(".", "").rstrip("0") or "0", int(e)
    whole, _, frac = r.partition(".")
    if whole != "0":
        return (whole + frac).rstrip("0"), len(whole) - 1
    stripped = frac.lstrip("0")
    return stripped.rstrip("0"), -(len(frac) - len(stripped)) - 1


def _prefer_two_digits(a: float, digits: str, exp: int, rounds_to: object) -> tuple[str, int]:
    """JDK 19+: when the shortest decimal has one digit, a closer two-digit one wins.

    This only changes subnormals (e.g. Double.MIN_VALUE prints as 4.9E-324, not 5e-324),
    where the rounding interval is wide enough to hold several two-digit decimals.
    """
    exact = Fraction(a)
    unit = Fraction(10) ** (exp - 1)
    n = round(exact / unit)
    candidate = n * unit
    one_digit = int(digits) * unit * 10
    if n % 10 and rounds_to(candidate) and abs(candidate - exact) < abs(one_digit - exact):  # type: ignore[operator]
        return str(n), exp
    return digits, exp


def double_to_string(v: float) -> str:
    """Java `Double.toString(v)`."""
    a = abs(v)
    if 1e-3 <= a < 1e7:
        # Python's repr is plain in this range and has the same shortest digits.
        return repr(v)
    if v != v:
        return "NaN"
    if a == math.inf:
        return "Infinity" if v > 0 else "-Infinity"
    if a == 0.0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    digits, exp = _repr_digits(a)
    if len(digits) == 1 and a < _MIN_NORMAL_DOUBLE:
        digits, exp = _prefer_two_digits(a, digits, exp, lambda c: float(c) == a)
    return _java_layout(v < 0, digits, exp)


def _rounds_to_float32(candidate: Fraction, f: float) -> bool:
    """Whether the decimal `candidate` rounds (ties to even) to the positive float32 `f`."""
    bits = _U32.unpack(_F32.pack(f))[0]
    lo = Fraction(_F32.unpack(_U32.pack(bits - 1))[0]) if bits > 0 else Fraction(0)
    hi = Fraction(_F32.unpack(_U32.pack(bits + 1))[0]) if bits < _FLOAT_MAX_BITS else None
    exact = Fraction(f)
    low_mid = (lo + exact) / 2
    high_mid = (exact + hi) / 2 if hi is not None else exact + (exact - lo) / 2
    even = bits % 2 == 0
    above = candidate > low_mid or (even and candidate == low_mid)
    below = candidate < high_mid or (even and candidate == high_mid)
    return above and below


def float_to_string(v: float) -> str:
    """Java `Float.toString((float) v)`: the value is first rounded to float32."""
    f = to_float32(v)
    if f != f:
        return "NaN"
    a = abs(f)
    if a == math.inf:
        return "Infinity" if f > 0 else "-Infinity"
    if a == 0.0:
        return "-0.0" if math.copysign(1.0, f) < 0 else "0.0"
    # The closest n-digit decimal is the only n-digit candidate worth testing; exact
    # rational arithmetic avoids double-rounding through a double.
    for n in range(1, 10):
        text = f"{a:.{n - 1}e}"
        if _rounds_to_float32(Fraction(text), a):
            break
    mantissa, e = text.split("e")
    digits, exp = mantissa.replace(".", "").rstrip("0") or "0", int(e)
    if len(digits) == 1 and a < _MIN_NORMAL_FLOAT:
        digits, exp = _prefer_two_digits(a, digits, exp, lambda c: _rounds_to_float32(c, a))
    return _java_layout(f < 0, digits, exp)


def bigdecimal_to_string(d: decimal.Decimal) -> str:
    """Java `BigDecimal.toString()`; Python's Decimal uses the same scientific-notation rule."""
    if not d.is_finite():
        raise ValueError(f"{d} has no BigDecimal form")
    if d.is_zero() and d.is_signed():
        d = d.copy_abs()  # BigDecimal has no negative zero
    return str(d)


# -- JSON strings ---------------------------------------------------------------------------
_ESCAPES = re.compile(r"(\\\\)|\\u00([0-9a-f]{2})")


def _upper_hex(m: re.Match[str]) -> str:
    return m.group(0) if m.group(1) else "\\u00" + m.group(2).upper()


def jackson_fixup(text: str) -> str:
    """Make Python-JSON output match Jackson byte for byte.

    Both escape the same characters, but Jackson writes `\\u001F` where Python writes
    `\\u001f`. Escaped backslash pairs are matched first so `\\\\u001f` stays literal.
    """
    if "\\u00" not in text:
        return text
    return _ESCAPES.sub(_upper_hex, text)


def quote(s: str) -> str:
    """A JSON string literal as Jackson writes it (UTF-8, non-ASCII unescaped)."""
    return jackson_fixup(_py_quote(s))


quote_fast = _py_quote
"""Python's C quoting; callers run `jackson_fixup` once over the whole document."""


# -- BigDecimal <-> unscaled two's-complement bytes ------------------------------------------
# Exact arithmetic: the default decimal context (28 digits) would silently round wide
# values such as MySQL DECIMAL(65,2).
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def quantum(scale: int) -> decimal.Decimal:
    """A Decimal whose exponent is -scale, for `same_quantum` scale checks."""
    return decimal.Decimal(1).scaleb(-scale, _EXACT)


def unscaled_bytes(value: decimal.Decimal, scale: int) -> bytes:
    """Kafka's Decimal.fromLogical: the unscaled value as minimal big-endian two's complement."""
    n = int(value.scaleb(scale, _EXACT))
    return n.to_bytes((n + (n < 0)).bit_length() // 8 + 1, "big", signed=True)


def from_unscaled_bytes(data: bytes, scale: int) -> decimal.Decimal:
    """Kafka's Decimal.toLogical."""
    return decimal.Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-scale, _EXACT)
